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

    def test_dropped_only_when_given(self):
        self.assertNotIn('dropped', r.state_reply('abcd0123', '', False, 0, None))
        self.assertEqual(r.state_reply('abcd0123', '', False, 0, None, 'threads')['dropped'], 'threads')

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


class InetSockets(unittest.TestCase):
    # /proc/net/tcp as Linux writes it: a listening socket of uid 65534, one of another uid, and
    # one closed (TIME_WAIT: no inode).
    TABLE = (
        b'  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n'
        b'   0: 0100007F:A1B2 00000000:0000 0A 00000000:00000000 00:00000000 00000000 65534        0 41231 1 '
        b'0000000000000000 100 0 0 10 0\n'
        b'   1: 0100007F:A1B3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 41232 1 '
        b'0000000000000000 100 0 0 10 0\n'
        b'   2: 0100007F:A1B4 0100007F:0050 06 00000000:00000000 03:00001770 00000000 65534        0 0 3 0000000000000000\n'
    )

    def test_counts_the_open_sockets_of_one_uid(self):
        self.assertEqual(r.inet_sockets_in(self.TABLE, 65534), 1)
        self.assertEqual(r.inet_sockets_in(self.TABLE, 0), 1)
        self.assertEqual(r.inet_sockets_in(self.TABLE, 1000), 0)
        self.assertEqual(r.inet_sockets_in(b'', 65534), 0)
