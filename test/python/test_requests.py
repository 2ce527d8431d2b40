"""What the runner makes of the payloads it is sent, the JSON it writes, and its reading of the
cgroup's OOM-kill counter."""
import json
import os
import tempfile
import unittest

from golden import GOLDEN, bytes_of, runner as r


class RunRequests(unittest.TestCase):
    def test_golden_payloads(self):
        for g in GOLDEN['runnerParses']['runRequests']:
            with self.subTest(g['name']):
                got = r.parse_run_request(bytes_of(g['payload']))
                want = g['request']
                if want is not None:
                    code = want['code']
                    want = {'dir': want['dir'], 'code': bytes.fromhex(code) if code is not None else None, 'max': want['max'], 'grace': want['graceSeconds'],
                            'session': want.get('session', False), 'reset': want.get('reset', False)}
                self.assertEqual(got, want)

    def test_run_directories(self):
        for d in ('/sandbox/runs/0001-abcdef', '/sandbox/runs/123456789-000000'):
            self.assertTrue(r.is_run_dir(d), d)
        for d in ('/sandbox/runs/001-abcdef', '/sandbox/runs/1234567890-abcdef', '/sandbox/runs/0001-abcde', '/sandbox/runs/0001_abcdef',
                  '/sandbox/runs/0001-abcdef/x', '/sandbox/runs/../0001-abcdef', '/sandbox/runsx/0001-abcdef', '/sandbox/runs/0001-abcdeg'):
            self.assertFalse(r.is_run_dir(d), d)


class Hellos(unittest.TestCase):
    def test_golden_nonces(self):
        for g in GOLDEN['runnerParses']['hellos']:
            with self.subTest(g['name']):
                self.assertEqual(r.hello_nonce(bytes_of(g['payload'])), g['nonce'])

    def test_a_bad_nonce_comes_back_as_ascii_json(self):
        reply = r.hello_reply(r.hello_nonce(b'nonce=ab\xffcd'), 1, '3.11.2', None, None, [], [], [])
        self.assertEqual(r.json_text(reply)[:40], '{"t":"hello","v":1,"nonce":"ab\\ufffdcd",')


class JsonText(unittest.TestCase):
    def test_is_json_and_ascii(self):
        values = [None, True, False, 0, -7, 2 ** 70, '', 'a"b\\c', '\x00\x1f\x7f', 'héllo ✓', [1, [None]], {'k': {'n': []}}]
        for v in values:
            with self.subTest(v=v):
                text = r.json_text(v)
                self.assertTrue(text.isascii())
                self.assertEqual(json.loads(text), v)

    def test_exact_escapes(self):
        self.assertEqual(r.json_text('é\n"'), '"\\u00e9\\u000a\\u0022"')
        # Beyond the BMP (and lone surrogates) there is no one-\u escape: a '?' keeps it ASCII.
        self.assertEqual(r.json_text('𝄞\udcff'), '"?\\udcff"')
        self.assertEqual(r.json_text((1, 'x')), '[1,"x"]')
        self.assertEqual(r.json_text(ValueError('boom')), '"boom"')


class Config(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(r.parse_config('preload=numpy,pandas;dirty=seaborn(threads)'), {'preload': 'numpy,pandas', 'dirty': 'seaborn(threads)'})
        self.assertEqual(r.parse_config(''), {})
        self.assertEqual(r.parse_config('preload=;=x;flag'), {'preload': '', 'flag': ''})


V1 = 'oom_kill_disable 0\nunder_oom 0\noom_kill 3\n'
V2 = 'low 0\nhigh 0\nmax 12\noom 2\noom_kill 2\noom_group_kill 0\n'


class OomKills(unittest.TestCase):
    def test_counts_in_both_cgroup_formats(self):
        self.assertEqual(r.oom_kill_count(V1), 3)
        self.assertEqual(r.oom_kill_count(V2), 2)
        self.assertIsNone(r.oom_kill_count('oom_kill_disable 0\nunder_oom 0\n'))  # kernels before 4.13
        self.assertIsNone(r.oom_kill_count('oom_kill x\n'))
        self.assertIsNone(r.oom_kill_count(''))

    def test_reads_the_first_file_that_has_a_count(self):
        with tempfile.TemporaryDirectory() as d:
            v2, v1, old = (os.path.join(d, n) for n in ('memory.events', 'memory.oom_control', 'old.oom_control'))
            for path, text in ((v2, V2), (v1, V1), (old, 'oom_kill_disable 0\n')):
                with open(path, 'w') as f:
                    f.write(text)
            self.assertEqual(r.read_oom_kills((v2, v1)), 2)
            self.assertEqual(r.read_oom_kills((os.path.join(d, 'absent'), v1)), 3)
            self.assertEqual(r.read_oom_kills((old, v1)), 3)
            self.assertIsNone(r.read_oom_kills((os.path.join(d, 'absent'), old)))
            self.assertIsNone(r.read_oom_kills((d,)))  # a directory: read fails
            self.assertEqual(r.OOM_COUNTERS, ('/sys/fs/cgroup/memory.events', '/sys/fs/cgroup/memory/memory.oom_control'))

    def test_the_counter_keeps_the_first_file_that_has_a_count_and_reads_it_anew(self):
        with tempfile.TemporaryDirectory() as d:
            v2, v1, old = (os.path.join(d, n) for n in ('memory.events', 'memory.oom_control', 'old.oom_control'))
            for path, text in ((v1, V1), (old, 'oom_kill_disable 0\n')):
                with open(path, 'w') as f:
                    f.write(text)
            counter = r.OomCounter((v2, old, v1))
            self.assertEqual(counter.read(), 3)
            with open(v1, 'w') as f:
                f.write(V1.replace('oom_kill 3', 'oom_kill 4'))
            self.assertEqual(counter.read(), 4)
            # Found once: a file that appears later is not looked for.
            with open(v2, 'w') as f:
                f.write(V2)
            self.assertEqual(counter.read(), 4)
            os.close(counter.fd)
            none = r.OomCounter((os.path.join(d, 'absent'), old, d))
            self.assertIsNone(none.fd)
            self.assertIsNone(none.read())

    def test_exit_reply_says_oom_killed_only_for_a_sigkill_while_the_counter_rose(self):
        cases = [
            ((9, 0, 1), True),
            ((9, 1, 1), False),
            ((0, 0, 1), False),  # the program lived: something else of the sandbox was killed
            ((137 << 8, 0, 1), False),  # sys.exit(137) is not a kill
            ((15, 0, 1), False),
            ((None, 0, 1), False),
        ]
        for (status, before, after), want in cases:
            with self.subTest(status=status, before=before, after=after):
                self.assertIs(r.exit_reply(status, False, False, False, before, after)['oomKilled'], want)
        self.assertNotIn('oomKilled', r.exit_reply(9, False, False, False, None, 1))
        self.assertNotIn('oomKilled', r.exit_reply(9, False, False, False, 0, None))
        self.assertNotIn('oomKilled', r.exit_reply(9, False, False, False))


class Rehearsal(unittest.TestCase):
    def test_parses_its_made_up_request_and_changes_nothing(self):
        calls = []
        with tempfile.TemporaryDirectory() as d:
            open(os.path.join(d, 'numpy.py'), 'w').close()
            req, exit_frame = r.rehearse_request(lambda: calls.append('stale'), {'numpy'}, d, lambda: calls.append('ooms'))
            self.assertEqual(os.listdir(d), ['numpy.py'])
        self.assertEqual(req, {'dir': '/sandbox/runs/0001-000000', 'code': b'print(1)\n', 'max': 1, 'grace': 1.0, 'session': False, 'reset': False})
        payload = b'{"t":"exit","exitCode":0,"signal":null,"killed":false,"limited":false,"orphans":false}'
        self.assertEqual(exit_frame, b'CXX\0\0\0\0\x01' + len(payload).to_bytes(4, 'big') + payload)
        self.assertEqual(calls, ['stale', 'ooms', 'ooms'])


if __name__ == '__main__':
    unittest.main()
