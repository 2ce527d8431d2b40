"""A session program's own limits where the sandbox's memory is no cgroup the runner can see
(gVisor): the numbers own_limits computes from /proc, how the runner sets them, and how the
exit reply tells the host that a program ended at its own memory limit."""
import ctypes
import os
import resource
import unittest

from golden import runner as r

# /proc/self/status and /proc/meminfo as gVisor (release 20221219) wrote them in a 256 MB sandbox.
STATUS = 'Name:\tpython3\nState:\tR (running)\nTgid:\t1\nVmSize:\t21812 kB\nVmRSS:\t15212 kB\nVmData:\t4576 kB\nThreads:\t1\n'
MEMINFO_256 = 'MemTotal:         262144 kB\nMemFree:          250592 kB\nMemAvailable:     250592 kB\nBuffers:               0 kB\n'
MiB = 1 << 20


def meminfo(total_kb, available_kb):
    return 'MemTotal:  %d kB\nMemFree:  %d kB\nMemAvailable:  %d kB\n' % (total_kb, available_kb, available_kb)


class ProcNumbers(unittest.TestCase):
    def test_fields_of_status_and_meminfo(self):
        self.assertEqual(r.proc_number(STATUS, 'VmSize'), 21812)
        self.assertEqual(r.proc_number(STATUS, 'Threads'), 1)
        self.assertEqual(r.proc_number(MEMINFO_256, 'MemAvailable'), 250592)

    def test_a_missing_or_unreadable_field_is_none(self):
        self.assertIsNone(r.proc_number(STATUS, 'VmSwap'))
        self.assertIsNone(r.proc_number(STATUS, 'Vm'))  # a prefix is not the field
        self.assertIsNone(r.proc_number('VmSize:\n', 'VmSize'))
        self.assertIsNone(r.proc_number('VmSize:  -1 kB\n', 'VmSize'))


class OwnLimits(unittest.TestCase):
    def test_a_256_mb_sandbox_at_rest(self):
        # Room: 250592 kB free less the 16 MB reserve (256/16 MB, the least there is) = 234208 kB.
        room = 250592 * 1024 - 16 * MiB
        self.assertEqual(r.own_limits(STATUS, MEMINFO_256, 3), (21812 * 1024 + room - 8 * MiB, 3 + 28))
        self.assertEqual(room // (8 * MiB), 28)

    def test_a_smaller_sandbox_keeps_the_least_reserve(self):
        room = 120000 * 1024 - 16 * MiB
        self.assertEqual(r.own_limits(STATUS, meminfo(131072, 120000), 2), (21812 * 1024 + room - 8 * MiB, 2 + 12))

    def test_a_larger_sandbox_keeps_a_sixteenth_and_caps_the_processes(self):
        room = 1000000 * 1024 - 64 * MiB
        self.assertEqual(r.own_limits(STATUS, meminfo(1048576, 1000000), 5), (21812 * 1024 + room - 8 * MiB, 5 + 64))

    def test_a_sandbox_the_state_has_filled_leaves_no_growth(self):
        # Less free than the reserve: the program keeps what it maps and the tasks there are.
        self.assertEqual(r.own_limits(STATUS, meminfo(262144, 10000), 4), (21812 * 1024, 4))
        # Free memory within the exit room of the reserve: no growth of the address space, no process.
        self.assertEqual(r.own_limits(STATUS, meminfo(262144, 16384 + 4096), 4), (21812 * 1024, 4))

    def test_none_without_the_fields(self):
        self.assertIsNone(r.own_limits('Name:\tpython3\n', MEMINFO_256, 1))
        self.assertIsNone(r.own_limits(STATUS, 'MemTotal:  262144 kB\nMemFree:  1 kB\n', 1))


class SettingLimits(unittest.TestCase):
    def test_a_soft_limit_is_set_below_the_hard_one_and_never_above_it(self):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                hard = resource.getrlimit(resource.RLIMIT_AS)[1]
                got = [r._rlimit(libc, r._RLIMIT_AS, 1 << 40), resource.getrlimit(resource.RLIMIT_AS) == (1 << 40, hard)]
                resource.setrlimit(resource.RLIMIT_NPROC, (50, 60))
                got += [r._rlimit(libc, r._RLIMIT_NPROC, 70), resource.getrlimit(resource.RLIMIT_NPROC), r._rlimit(libc, r._RLIMIT_NPROC)]
                os.write(write, repr(got).encode())
            finally:
                os._exit(0)
        os.close(write)
        with os.fdopen(read) as f:
            got = f.read()
        os.waitpid(pid, 0)
        self.assertEqual(got, repr([1 << 40, True, 60, (60, 60), 60]))


class ExitReply(unittest.TestCase):
    def test_a_memory_error_at_its_own_limit_reads_as_an_oom_kill(self):
        self.assertIs(r.exit_reply(1 << 8, False, False, False, None, None, None, True)['oomKilled'], True)
        self.assertIs(r.exit_reply(1 << 8, False, False, False, 0, 0, None, True)['oomKilled'], True)

    def test_only_for_a_program_that_failed(self):
        self.assertNotIn('oomKilled', r.exit_reply(0, False, False, False, None, None, None, True))
        self.assertIs(r.exit_reply(0, False, False, False, 0, 0, None, True)['oomKilled'], False)
        self.assertNotIn('oomKilled', r.exit_reply(1 << 8, False, False, False, None, None))


if __name__ == '__main__':
    unittest.main()
