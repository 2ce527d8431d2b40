"""The runner's frames against the golden ones: what the host sends, the runner reads as meant;
what the runner sends is byte for byte what the host is tested to decode."""
import json
import unittest

from golden import GOLDEN, bytes_of, read_all, runner as r


class Limits(unittest.TestCase):
    def test_the_runner_keeps_the_limits_the_host_checks(self):
        limits = GOLDEN['limits']
        self.assertEqual(r.HEADER, limits['headerBytes'])
        # Output is read CHUNK bytes at a time, and each read is one O/E frame.
        self.assertEqual(r.CHUNK, limits['maxDataPayload'])
        self.assertEqual(r.MAX_REQUEST, limits['maxRequestPayload'])


def _request(meaning):
    """What parse_run_request makes of the host's RunRequest."""
    code = meaning.get('code')
    return {
        'dir': meaning['dir'],
        'code': code.encode('utf-8') if code is not None else None,
        'max': meaning['maxOutputBytes'],
        'grace': meaning['orphanGraceMs'] / 1000.0,
        'session': 'state' in meaning,
        'reset': meaning.get('state', {}).get('reset', False),
    }


class HostToRunner(unittest.TestCase):
    def test_each_golden_frame_reads_as_meant(self):
        for g in GOLDEN['hostToRunner']:
            with self.subTest(g['name']):
                [frames] = read_all(r.FrameReader(), [bytes_of(g['bytes'])])
                self.assertEqual(len(frames), 1)
                kind, rid, payload = frames[0]
                self.assertEqual((kind, rid), (g['kind'], g['id']))
                if kind == 'h':
                    self.assertEqual(r.hello_nonce(payload), g['nonce'])
                elif kind == 'r':
                    self.assertEqual(r.parse_run_request(payload), _request(g['request']))
                else:
                    self.assertEqual(payload, b'')

    def test_all_of_them_in_one_stream_split_at_every_byte(self):
        stream = b''.join(bytes_of(g['bytes']) for g in GOLDEN['hostToRunner'])
        want = [(g['kind'], g['id'], bytes_of(g['bytes'])[12:]) for g in GOLDEN['hostToRunner']]
        for cut in range(len(stream) + 1):
            reader = r.FrameReader()
            got = sum(read_all(reader, [stream[:cut], stream[cut:]]), [])
            self.assertEqual(got, want, 'cut at %d' % cut)
            self.assertEqual(reader.buf, b'')

    def test_byte_by_byte(self):
        stream = b''.join(bytes_of(g['bytes']) for g in GOLDEN['hostToRunner'])
        got = sum(read_all(r.FrameReader(), [stream[i:i + 1] for i in range(len(stream))]), [])
        self.assertEqual([(k, i) for k, i, _ in got], [(g['kind'], g['id']) for g in GOLDEN['hostToRunner']])


# How the runner makes each golden reply (the names are the fixture's).
MADE = {
    'hello': lambda: r.encode_frame(b'H', 0, r.hello_reply('0123456789abcdef', 1, '3.11.2', None, None, ['numpy', 'matplotlib.pyplot'], ['pandas'], ['seaborn(threads)'])),
    'hello with a recursion problem': lambda: r.encode_frame(b'H', 0, r.hello_reply('ab', 1, '3.11.2', None, 'recursion counter not found', [], [], [])),
    'hello of an unusable runner': lambda: r.encode_frame(b'H', 0, r.hello_reply('ab', 1, '3.13.0', 'runner unavailable: ImportError: no module named ctypes', None, [], [], [])),
    'started': lambda: r.encode_frame(b'S', 7, r.started_reply(42)),
    'stdout bytes, not UTF-8': lambda: r.encode_frame(b'O', 7, b'hello\n\xff\xfe'),
    'stderr, empty': lambda: r.encode_frame(b'E', 7, b''),
    'exit 3': lambda: r.encode_frame(b'X', 7, r.exit_reply(3 << 8, False, False, False, 0, 0)),
    'exit by SIGKILL, OOM-killed': lambda: r.encode_frame(b'X', 7, r.exit_reply(9, False, False, False, 4, 5)),
    'exit by SIGKILL, not for memory': lambda: r.encode_frame(b'X', 7, r.exit_reply(9, False, False, False, 5, 5)),
    'exit 0 while the counter rose (a subprocess was OOM-killed)': lambda: r.encode_frame(b'X', 7, r.exit_reply(0, False, False, False, 5, 6)),
    'exit by SIGKILL, the counter unreadable': lambda: r.encode_frame(b'X', 7, r.exit_reply(9, True, False, False, None, None)),
    'exit 0, starting over to preload what it imported': lambda: r.encode_frame(
        b'X', 7, r.exit_reply(0, False, False, False, 0, 0, None, False, ['numpy', 'pandas'])),
    'exit by SIGTERM, output limited, orphans stopped': lambda: r.encode_frame(b'X', 7, r.exit_reply(15, False, True, True, 0, 0)),
    'exit of a child that was not reaped': lambda: r.encode_frame(b'X', 7, r.exit_reply(None, True, False, False, 0, 0)),
    'exit 0 in session mode, kept': lambda: r.encode_frame(b'X', 7, r.exit_reply(0, False, False, False, 0, 0, r.state_reply('', '0a1b2c3d', True, 57))),
    'exit 0 in session mode, not kept: threads left running': lambda: r.encode_frame(
        b'X', 7, r.exit_reply(0, False, False, False, 0, 0, r.state_reply('0a1b2c3d', '0a1b2c3d', False, 31, 'threads'))),
    'exit 1 in session mode, the state unchanged': lambda: r.encode_frame(
        b'X', 7, r.exit_reply(1 << 8, False, False, False, 0, 0, r.state_reply('0a1b2c3d', '0a1b2c3d', False, 31))),
    'declined, a non-ASCII reason': lambda: r.encode_frame(b'D', 8, r.declined_reply('shadows pändas ✓ 𝄞', True)),
    'declined, invalid request': lambda: r.encode_frame(b'D', 9, r.declined_reply('invalid request', False)),
}


class RunnerToHost(unittest.TestCase):
    def test_every_golden_reply_is_made_here(self):
        self.assertEqual(sorted(MADE), sorted(g['name'] for g in GOLDEN['runnerToHost']))

    def test_each_is_the_golden_bytes(self):
        for g in GOLDEN['runnerToHost']:
            with self.subTest(g['name']):
                made = MADE[g['name']]()
                self.assertEqual(made.hex(), g['bytes'])
                self.assertEqual((made[2:3].decode(), int.from_bytes(made[4:8], 'big')), (g['kind'], g['id']))
                payload = made[12:]
                if 'reply' in g:
                    self.assertTrue(payload.isascii())
                    self.assertEqual(json.loads(payload), g['reply'])
                else:
                    self.assertEqual(payload.hex(), g['payload'])

    def test_the_largest_output_chunk_fits_an_o_frame(self):
        frame = r.encode_frame(b'O', 1, b'a' * r.CHUNK)
        self.assertEqual(frame[:12].hex(), '43584f00' '00000001' '00010000')
        self.assertEqual(len(frame), GOLDEN['limits']['headerBytes'] + GOLDEN['limits']['maxDataPayload'])


class RunnerReads(unittest.TestCase):
    def test_streams(self):
        for g in GOLDEN['runnerReads']:
            with self.subTest(g['name']):
                got = read_all(r.FrameReader(), [bytes_of(c) for c in g['chunks']])
                want = [[(f['kind'], f['id'], bytes_of(f['payload'])) for f in after] for after in g['frames']]
                self.assertEqual(got, want)


if __name__ == '__main__':
    unittest.main()
