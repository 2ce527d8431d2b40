"""The pages a fresh call writes (part 67), against this machine's own kernel: what a look at a
child's pagemap finds, and what a child forked ahead copies before its run."""
import ctypes
import mmap
import os
import unittest

from golden import runner as r

PAGE = 4096
PAGES = 8
HAS_PAGEMAP = os.path.exists('/proc/self/pagemap')


def _region():
    """An anonymous private region of PAGES pages, each written (present) here: (mmap, address)."""
    m = mmap.mmap(-1, PAGES * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for i in range(PAGES):
        m[i * PAGE] = i + 1
    return m, ctypes.addressof(ctypes.c_char.from_buffer(m))


def _child(action):
    """Forks a child that runs `action` and then waits; returns (pid, what it wrote back, go)."""
    done_r, done_w = os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.write(done_w, action() or b'.')
            os.read(go_r, 1)
        finally:
            os._exit(0)
    os.close(done_w)
    os.close(go_r)
    said = os.read(done_r, 4096)
    os.close(done_r)
    return pid, said, go_w


def _end(pid, go_w):
    os.write(go_w, b'x')
    os.close(go_w)
    os.waitpid(pid, 0)


def _copied_in_child(action, addr):
    """(the pages of the region at `addr` a child copied by the time `action` returned, what it said)."""
    pid, said, go = _child(action)
    try:
        return r._exclusive_pages(pid, [(addr, addr + PAGES * PAGE)]), said
    finally:
        _end(pid, go)


def _touched(m, runs, request=None):
    """A child's _touch_ahead of `runs` with `request` already on its wait pipe: (pages it copied,
    the region's first byte of each page as it sees them)."""
    libc = ctypes.CDLL(None, use_errno=True)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(m))
    wait_r, wait_w = os.pipe()
    if request:
        os.write(wait_w, request)

    def touch():
        r._touch_ahead(libc, runs, wait_r)
        return bytes(m[i * PAGE] for i in range(PAGES))

    try:
        return _copied_in_child(touch, addr)
    finally:
        os.close(wait_r)
        os.close(wait_w)


class Runs(unittest.TestCase):
    def test_adjacent_pages_make_one_run(self):
        self.assertEqual(r._runs({0x5000, 0x1000, 0x2000, 0x3000}), ((0x1000, 0x3000), (0x5000, 0x1000)))
        self.assertEqual(r._runs(set()), ())


class MinorFaults(unittest.TestCase):
    def test_a_process_that_is_gone_has_none(self):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        self.assertIsNone(r._minor_faults(pid))
        self.assertIsInstance(r._minor_faults(os.getpid()), int)


@unittest.skipUnless(HAS_PAGEMAP, 'this kernel has no /proc/self/pagemap')
class ExclusivePages(unittest.TestCase):
    def test_the_pages_a_child_wrote_and_no_other(self):
        m, addr = _region()

        def write():
            m[2 * PAGE] = 0xAA
            m[5 * PAGE + 7] = 0xBB

        found, _ = _copied_in_child(write, addr)
        self.assertEqual(found, [addr + 2 * PAGE, addr + 5 * PAGE])


@unittest.skipUnless(HAS_PAGEMAP, 'this kernel has no /proc/self/pagemap')
class TouchAhead(unittest.TestCase):
    def test_the_learned_pages_are_copied_and_keep_their_data(self):
        m, addr = _region()
        found, data = _touched(m, ((addr + 1 * PAGE, 2 * PAGE), (addr + 6 * PAGE, PAGE)))
        if found == []:
            self.skipTest('this kernel has no MADV_POPULATE_WRITE (Linux 5.14)')
        self.assertEqual(found, [addr + 1 * PAGE, addr + 2 * PAGE, addr + 6 * PAGE])
        self.assertEqual(data, bytes(range(1, PAGES + 1)))

    def test_a_learned_run_no_longer_mapped_is_neither_copied_nor_read(self):
        # Reading a byte of each page follows only a copy that succeeded: a read of a page the
        # runner has since unmapped would end the waiting child with SIGSEGV.
        libc = ctypes.CDLL(None, use_errno=True)
        m, addr = _region()
        m.close()
        wait_r, wait_w = os.pipe()
        try:
            pid, said, go = _child(lambda: r._touch_ahead(libc, ((addr, 2 * PAGE),), wait_r) or b'alive')
            _end(pid, go)
        finally:
            os.close(wait_r)
            os.close(wait_w)
        self.assertEqual(said, b'alive')

    def test_without_a_wait_pipe_every_learned_page_is_copied(self):
        # A session's process forked ahead writes its pages ahead before it says it is there.
        libc = ctypes.CDLL(None, use_errno=True)
        m, addr = _region()

        def touch():
            r._touch_ahead(libc, ((addr + 2 * PAGE, 3 * PAGE),), None)
            return bytes(m[i * PAGE] for i in range(PAGES))

        found, data = _copied_in_child(touch, addr)
        if found == []:
            self.skipTest('this kernel has no MADV_POPULATE_WRITE (Linux 5.14)')
        self.assertEqual(found, [addr + 2 * PAGE, addr + 3 * PAGE, addr + 4 * PAGE])
        self.assertEqual(data, bytes(range(1, PAGES + 1)))

    def test_a_run_request_already_there_stops_it_before_any_page(self):
        m, addr = _region()
        found, _ = _touched(m, ((addr, PAGES * PAGE),), b'/sandbox/runs/1-abc\n')
        self.assertEqual(found, [])


@unittest.skipUnless(HAS_PAGEMAP, 'this kernel has no /proc/self/pagemap')
class Look(unittest.TestCase):
    def setUp(self):
        self.saved = r.TOUCH_LEARN_FAULTS

    def tearDown(self):
        r.TOUCH_LEARN_FAULTS = self.saved

    def test_a_child_looks_at_its_end_only_when_it_faulted_enough(self):
        m, addr = _region()
        ranges = [(addr, addr + PAGES * PAGE)]

        def write_and_look():
            m[3 * PAGE] = 0xCC
            r.TOUCH_LEARN_FAULTS = 1 << 30
            skipped = r._look_at_own_pages(ranges)
            r.TOUCH_LEARN_FAULTS = 0
            return repr((skipped, r._look_at_own_pages(ranges))).encode()

        pid, said, go = _child(write_and_look)
        _end(pid, go)
        self.assertEqual(said.decode(), repr((None, [addr + 3 * PAGE])))


@unittest.skipUnless(HAS_PAGEMAP, 'this kernel has no /proc/self/pagemap')
class SessionLook(unittest.TestCase):
    def test_a_kept_call_learns_what_it_wrote_for_the_next_process_forked_from_it(self):
        # In a child, as a session's line of processes: its own record, not PID 1's.
        m, addr = _region()
        ranges = [(addr, addr + PAGES * PAGE)]

        def write_and_learn():
            r._SESSION_PAGES, r._TOUCH_RUNS, r.TOUCH_LEARN_FAULTS = None, ((0x7000, PAGE),), 0
            first = r._session_looks()
            r._learn_session_pages(None)  # forked on its call's way: nothing to look at
            untouched = (r._SESSION_PAGES, r._TOUCH_RUNS)
            m[1 * PAGE] = 0xAA
            m[2 * PAGE] = 0xBB
            r._learn_session_pages(ranges)
            return repr((first, untouched, r._TOUCH_RUNS, r._SESSION_PAGES.looks, r._session_looks())).encode()

        pid, said, go = _child(write_and_learn)
        _end(pid, go)
        # Two new pages are few: that look was its last.
        expected = (True, (None, ((0x7000, PAGE),)), ((addr + PAGE, 2 * PAGE),), 0, False)
        self.assertEqual(said.decode(), repr(expected))


class Take(unittest.TestCase):
    def setUp(self):
        self.saved = r._TOUCH_RUNS, r._TOUCH_LOOK

    def tearDown(self):
        r._TOUCH_RUNS, r._TOUCH_LOOK = self.saved

    def ahead(self):
        a = r.PagesAhead()
        a.looks = r.TOUCH_LOOKS
        return a

    def test_what_a_child_said_is_written_ahead_by_the_next(self):
        a = self.ahead()
        said = [0x10000 + i * PAGE for i in range(40)] + [0x90000]
        a.take(said)
        self.assertEqual(r._TOUCH_RUNS, ((0x10000, 40 * PAGE), (0x90000, PAGE)))
        self.assertEqual((a.looks, r._TOUCH_LOOK), (r.TOUCH_LOOKS - 1, True))
        a.take(None)  # a child that did not look costs no look
        self.assertEqual(a.looks, r.TOUCH_LOOKS - 1)

    def test_a_program_written_notice_counts_only_page_addresses_of_user_space_and_the_cap(self):
        a = self.ahead()
        a.take([0, 0x10001, 1 << 47, 1 << 63] + [0x20000 + i * PAGE for i in range(r.TOUCH_MAX_PAGES + 10)])
        self.assertEqual(len(a.pages), r.TOUCH_MAX_PAGES)
        self.assertEqual(min(a.pages), 0x20000)
        self.assertEqual((a.looks, r._TOUCH_LOOK), (0, False))

    def test_a_look_that_finds_few_new_pages_is_the_last(self):
        a = self.ahead()
        a.take([0x10000 + i * PAGE for i in range(r.TOUCH_FEW_NEW - 1)])
        self.assertEqual((a.looks, r._TOUCH_LOOK), (0, False))
        self.assertEqual(len(a.pages), r.TOUCH_FEW_NEW - 1)


if __name__ == '__main__':
    unittest.main()
