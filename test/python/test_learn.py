"""Preloading on first use: what a fresh program leaves on its exit page about the learnable
modules it imported, and what the runner takes from it. The page is the program's to write, so
only names of the runner's own list count."""
import ctypes
import unittest

from golden import runner as r


class UsedModules(unittest.TestCase):
    def setUp(self):
        native = r._Native()  # libc with mmap's types; it makes this process not dumpable
        native.set_dumpable(True)
        self.notice = r.ExitNotice(native.libc)
        self.assertIsNotNone(self.notice.addr)

    def tearDown(self):
        self.notice.close()

    def finish(self, status=0):
        ctypes.c_uint32.from_address(self.notice.addr + 4).value = status
        ctypes.c_uint32.from_address(self.notice.addr).value = r.ExitNotice.MAGIC

    def test_names_of_the_list_in_its_order(self):
        r.ExitNotice.write_used(self.notice.addr, ['pandas', 'numpy'])
        self.finish()
        self.assertEqual(self.notice.used(('numpy', 'pandas', 'scipy')), ('numpy', 'pandas'))

    def test_nothing_before_the_exit_is_written(self):
        r.ExitNotice.write_used(self.notice.addr, ['numpy'])
        self.assertEqual(self.notice.used(('numpy',)), ())

    def test_a_program_can_name_only_what_the_list_allows(self):
        raw = b'numpy,os;import evil,\xff\xfe,' + b'x' * 5000
        ctypes.memmove(self.notice.addr + r.ExitNotice.USED + 2, raw, r.ExitNotice.SIZE - r.ExitNotice.USED - 2)
        ctypes.c_uint16.from_address(self.notice.addr + r.ExitNotice.USED).value = 0xFFFF
        self.finish(1)
        self.assertEqual(self.notice.used(('numpy', 'pandas')), ('numpy',))

    def test_a_long_list_keeps_the_whole_names_that_fit(self):
        names = ['m%d' % i for i in range(2000)]
        r.ExitNotice.write_used(self.notice.addr, names)
        self.finish()
        used = self.notice.used(tuple(names))
        self.assertEqual(used, tuple(names[:len(used)]))
        self.assertEqual(len(used), 839)  # 4,086 bytes: m0..m838 and their commas


if __name__ == '__main__':
    unittest.main()
