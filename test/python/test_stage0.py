"""Stage 0's hand-over when exec fails (the runner then serves on as it is): fd 3, which in stage 1
may be the channel, is what it was, the hand-over pipe is gone, and nothing is left imported."""
import errno
import os
import sys
import unittest
from unittest import mock

from golden import runner as r


def _refused(*_args):
    raise OSError(errno.ENOMEM, 'Cannot allocate memory')


def _open_fds():
    return {int(fd): os.readlink('/proc/self/fd/' + fd) for fd in os.listdir('/proc/self/fd') if os.path.exists('/proc/self/fd/' + fd)}


class FailedExec(unittest.TestCase):
    def setUp(self):
        # The test process's own fd 3, if it has one, is kept aside and put back afterwards.
        try:
            self.own = os.dup(3)
        except OSError:
            self.own = None

    def tearDown(self):
        if self.own is None:
            try:
                os.close(3)
            except OSError:
                pass
        else:
            os.dup2(self.own, 3)
            os.close(self.own)

    def attempt(self):
        sys.modules.pop('fcntl', None)  # as in stage 1, where nothing imported it
        before = _open_fds()
        with mock.patch.object(os, 'execv', _refused), mock.patch.object(os, 'execve', _refused):
            with self.assertRaises(OSError) as caught:
                r._stage0_exec('preload=;learn=numpy', {'PATH': '/usr/bin'})
        self.assertEqual(caught.exception.errno, errno.ENOMEM)
        self.assertEqual(_open_fds(), before)
        self.assertNotIn('fcntl', sys.modules)

    def test_fd_3_in_use_is_put_back(self):
        null = os.open('/dev/null', os.O_RDONLY)  # not inheritable
        if null != 3:
            os.dup2(null, 3, inheritable=False)
            os.close(null)
        inode = os.fstat(3).st_ino
        self.attempt()
        self.assertEqual(os.fstat(3).st_ino, inode)
        self.assertFalse(os.get_inheritable(3))

    def test_a_pipe_the_kernel_will_not_grow_leaves_nothing_either(self):
        null = os.open('/dev/null', os.O_RDONLY)
        if null != 3:
            os.dup2(null, 3, inheritable=False)
            os.close(null)
        inode = os.fstat(3).st_ino
        import fcntl  # loaded here, so the runner's import finds this module and its patched fcntl()
        real = fcntl.fcntl

        def refused(fd, cmd, arg=0):
            if cmd == 1031:  # F_SETPIPE_SZ, past the user's pipe-buffer limit
                raise OSError(errno.EPERM, 'Operation not permitted')
            return real(fd, cmd, arg)

        before = _open_fds()
        with mock.patch.object(fcntl, 'fcntl', refused), mock.patch.object(os, 'execv', _refused):
            with mock.patch.object(os, 'execve', _refused), self.assertRaises(OSError) as caught:
                r._stage0_exec('preload=;learn=numpy', {'PATH': '/usr/bin'})
        self.assertEqual(caught.exception.errno, errno.EPERM)
        self.assertEqual(_open_fds(), before)
        self.assertEqual(os.fstat(3).st_ino, inode)
        self.assertIs(sys.modules.get('fcntl'), fcntl)

    def test_fd_3_free_stays_free(self):
        try:
            os.close(3)
        except OSError:
            pass
        self.attempt()
        with self.assertRaises(OSError):
            os.fstat(3)


if __name__ == '__main__':
    unittest.main()
