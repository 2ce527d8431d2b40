"""Session mode's pure parts in the runner: the state part of the exit reply, and the process list
that a kill spares the holder from and that decides whether a call left processes behind."""
import os
import time
import unittest

from golden import runner as r


class StateReply(unittest.TestCase):
    def test_reason_only_when_given(self):
        self.assertEqual(r.state_reply('', 'abcd0123', True, 7), {'from': '', 'now': 'abcd0123', 'kept': True, 'holder': 7})
        self.assertEqual(r.state_reply('abcd0123', 'abcd0123', False, 7, 'threads')['reason'], 'threads')

    def test_only_in_session_mode(self):
        self.assertNotIn('state', r.exit_reply(0, False, False, False, 0, 0))


class LivePids(unittest.TestCase):
    def test_ours_are_listed_and_a_zombie_is_not(self):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        try:
            for _ in range(200):
                if r._proc_status(pid) is not None and r._proc_status(pid)[0] == b'Z':
                    break
                time.sleep(0.01)
            self.assertEqual(r._proc_status(pid), (b'Z', os.getuid()))
            live = r._live_pids()
            self.assertIn(os.getpid(), live)
            self.assertNotIn(pid, live)
        finally:
            os.waitpid(pid, 0)
        self.assertIsNone(r._proc_status(pid))


if __name__ == '__main__':
    unittest.main()
