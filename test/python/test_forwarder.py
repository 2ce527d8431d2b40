"""The credential forwarder's checks (resources/proxy/credentials.py) that need no network."""
import importlib.util
import os
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SPEC = importlib.util.spec_from_file_location('forwarder', os.path.join(HERE, '..', '..', 'resources', 'proxy', 'credentials.py'))
forwarder = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(forwarder)


class Bytes:
    """A socket that hands out `data` in reads of at most `step` bytes, and records what is sent to it."""

    def __init__(self, data, step=65536):
        self.data, self.step, self.sent = data, step, []

    def recv(self, n):
        out, self.data = self.data[:min(n, self.step)], self.data[min(n, self.step):]
        return out


class PathProblem(unittest.TestCase):
    def test_passes_plain_and_encoded_paths(self):
        for path in ['/v1/models', '/wiki/Caf%C3%A9', '/a/b.c/d', '/v1/', '/', '/a;b']:
            self.assertIsNone(forwarder.path_problem(path, False), path)

    def test_refuses_what_a_lenient_server_reads_as_another_path(self):
        cases = {
            '/digest/../other': 'a path with a dot segment',
            '/digest/./other': 'a path with a dot segment',
            '/digest/.../other': 'a path with a dot segment',
            '/digest/..%20/other': 'a path with a dot segment',
            '/digest/.%2e/other': 'a path with an encoded slash, dot or percent sign',
            '/digest%2fx': 'a path with an encoded slash, dot or percent sign',
            '/digest/%252e%252e/other': 'a path with an encoded slash, dot or percent sign',
            '/digest\\..\\other': 'a path with an encoded slash, dot or percent sign',
            '/digest/%c0%ae%c0%ae/other': 'a path that is not UTF-8 once decoded (an overlong dot, say)',
            '/digest/..%00/other': 'a path with a control character',
            '/digest/..%09/other': 'a path with a control character',
            '/digest/..;/other': 'a path with a ";" parameter, on a host whose credential is limited to paths',
        }
        for path, why in cases.items():
            self.assertEqual(forwarder.path_problem(path, True), why, path)

    def test_a_parameter_only_matters_where_a_binding_has_paths(self):
        self.assertIsNone(forwarder.path_problem('/digest;x', False))
        self.assertEqual(forwarder.path_problem('/digest;x', True),
                         'a path with a ";" parameter, on a host whose credential is limited to paths')


class ChunkedRelay(unittest.TestCase):
    def relay(self, body, masker=None):
        sent = []
        session = forwarder.Session.__new__(forwarder.Session)
        total = session.relay_body(forwarder.Reader(Bytes(body, step=1000)), sent.append, 'chunked', None, masker)
        return b''.join(sent), total

    def test_passes_a_large_chunk_on_in_pieces_as_it_comes(self):
        out, total = self.relay(b'30000\r\n' + b'x' * 0x30000 + b'\r\n0\r\n\r\n')
        self.assertEqual(out, b'10000\r\n' + b'x' * 0x10000 + b'\r\n' + b'10000\r\n' + b'x' * 0x10000 + b'\r\n' + b'10000\r\n'
                         + b'x' * 0x10000 + b'\r\n0\r\n\r\n')
        self.assertEqual(total, len(out))

    def test_drops_a_request_s_trailers_and_keeps_a_response_s_masked(self):
        body = b'3\r\nabc\r\n0\r\nX: a\rGET /x HTTP/1.1\r\nSecret: s3cret\r\n\r\n'
        self.assertEqual(self.relay(body)[0], b'3\r\nabc\r\n0\r\n\r\n')
        self.assertEqual(self.relay(body, forwarder.Masker([b's3cret']))[0],
                         b'3\r\nabc\r\n0\r\nX: a\rGET /x HTTP/1.1\r\nSecret: ******\r\n\r\n')


if __name__ == '__main__':
    unittest.main()
