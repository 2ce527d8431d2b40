# The sandbox runner, part 67: the pages a fresh call writes, learned from the calls before it and
# written ahead by the next child forked ahead while it waits.
#
# A forked child shares the runner's memory until it writes a page; each first write is a
# copy-on-write fault. A pandas call makes about a thousand of them (most of its 4.2 ms here, and a
# fault costs 15-25 µs on a new VM), almost all on pages of the interpreter and the preloaded
# modules that every such call writes (reference counts, caches, free lists). The kernel tells
# which: /proc/self/pagemap marks a page a process alone maps (exclusive) once it has copied it.
# A child forked ahead that is asked to (while PID 1 still looks) reads that at its end, of the
# mappings it had at the fork, and leaves the list on its exit notice; the next child forked ahead
# asks the kernel to copy those pages before its run (MADV_POPULATE_WRITE: as if each were
# written, nothing is; the data stays the same, so a program sees nothing of it).
# gVisor has no pagemap: nothing is learned there. Linux before 5.14 has no MADV_POPULATE_WRITE:
# the child's request fails and it waits as before.
_PAGE = 4096
_MADV_POPULATE_WRITE = 23
# pagemap's top byte: present (bit 63) and exclusively mapped (bit 56).
_EXCLUSIVE_PRESENT = bytes(1 if i & 0x81 == 0x81 else 0 for i in range(256))
# Each page written ahead is the waiting child's own copy: at most 16 MB of them. A program
# decides what its process writes, so it decides what the next ones copy, within this bound.
TOUCH_MAX_PAGES = 4096
# A child that faulted fewer pages than this does not look (a look costs a few ms on its answer's
# way: 4 ms for a data image's 176 MB of writable mappings), nor does any after this many looks,
# or after a look that found few new pages.
TOUCH_LEARN_FAULTS = 200
TOUCH_LOOKS = 4
TOUCH_FEW_NEW = 32
# What the next child forked ahead writes ahead, and whether it looks at its end (PagesAhead
# sets them; a fork inherits them).
_TOUCH_RUNS = ()
_TOUCH_LOOK = False


def _writable_private(pid):
    """`pid`'s writable private mappings, as (start, end), in address order."""
    ranges = []
    for line in (_read_whole('/proc/%s/maps' % pid) or b'').splitlines():
        fields = line.split(None, 2)
        if len(fields) > 1 and fields[1][:2] == b'rw' and fields[1][3:4] == b'p':
            start, _, end = fields[0].partition(b'-')
            try:
                ranges.append((int(start, 16), int(end, 16)))
            except ValueError:
                return []
    return ranges


def _minor_faults(pid):
    """minflt of /proc/PID/stat (its 10th field), or None."""
    try:
        return int(_stat_fields(pid)[7])
    except (TypeError, IndexError, ValueError):
        return None


def _exclusive_pages(pid, ranges):
    """The addresses of the pages in `ranges` that `pid` maps present and alone."""
    fd = os.open('/proc/%s/pagemap' % pid, os.O_RDONLY | os.O_CLOEXEC)
    pages = []
    try:
        for start, end in ranges:
            data = os.pread(fd, (end - start) // _PAGE * 8, start // _PAGE * 8)
            # One byte per page (each entry's top byte, little-endian), 1 where it is ours alone.
            flags = data[7::8].translate(_EXCLUSIVE_PRESENT)
            i = flags.find(1)
            while i >= 0:
                pages.append(start + i * _PAGE)
                i = flags.find(1, i + 1)
    finally:
        os.close(fd)
    return pages


def _runs(pages):
    """Sorted page addresses as (start, length) runs of adjacent pages."""
    runs = []
    for p in sorted(pages):
        if runs and runs[-1][0] + runs[-1][1] == p:
            runs[-1][1] += _PAGE
        else:
            runs.append([p, _PAGE])
    return tuple((s, n) for s, n in runs)


class PagesAhead:
    """PID 1's record of the pages fresh calls wrote (take), for children forked ahead (touch)."""

    def __init__(self):
        global _TOUCH_LOOK
        self.pages = set()
        self.looks = TOUCH_LOOKS if os.path.exists('/proc/self/pagemap') else 0
        _TOUCH_LOOK = self.looks > 0

    def take(self, said):
        """The pages a child said it copied (ExitNotice.pages; None: it did not look). The notice is
        the program's to write: only page addresses of user space count, and at most the cap."""
        global _TOUCH_LOOK, _TOUCH_RUNS
        if said is None or self.looks <= 0:
            return
        self.looks -= 1
        room = TOUCH_MAX_PAGES - len(self.pages)
        new = [p for p in said if p % _PAGE == 0 and 0 < p < 1 << 47 and p not in self.pages][:room]
        if len(new) < TOUCH_FEW_NEW or len(new) == room:
            self.looks = 0
        _TOUCH_LOOK = self.looks > 0
        if new:
            self.pages.update(new)
            _TOUCH_RUNS = _runs(self.pages)


def _look_at_own_pages(ranges):
    """In a child at its end: the pages of `ranges` (its mappings at the fork) it has copied, or
    None when it faulted too few to be worth the look."""
    try:
        faults = _minor_faults(os.getpid())
        if faults is None or faults < TOUCH_LEARN_FAULTS:
            return None
        return _exclusive_pages('self', ranges)
    except Exception:  # noqa: BLE001 - a program that ended at its memory limit: no look, the exit goes on
        return None


def _touch_ahead(libc, runs, wait_fd):
    """In a child forked ahead: copies the learned pages now, stopping once its run has come."""
    if not runs:
        return
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    libc.madvise.restype = ctypes.c_int
    # Without a wait pipe (a session's process forked ahead, before it says it is there) it copies all.
    poller = None
    if wait_fd is not None:
        poller = select.poll()
        poller.register(wait_fd, select.POLLIN)
    for i, (start, length) in enumerate(runs):
        if poller is not None and i % 64 == 0 and poller.poll(0):
            return
        # An address no longer writable here fails alone (EFAULT, ENOMEM): nothing is written.
        if libc.madvise(start, length, _MADV_POPULATE_WRITE) == 0:
            # Then a byte of each page is read, as the program will read it. On a VM whose
            # hypervisor maps a process's page at its first use, that use cost about 5 µs a page
            # after the copy (a new VM of 11-13 µs a page's first touch: a pandas call's first
            # statements 7.8 ms with the pages copied, about 1 with them read too). One strided
            # copy in C, a byte a page; only after the copy succeeded, so every page is mapped.
            memoryview((ctypes.c_char * length).from_address(start)).cast('B')[::_PAGE].tobytes()
        elif ctypes.get_errno() == 22:
            return  # EINVAL: a kernel without it


# A session's own record (None until its first look), carried by each fork along its line of
# holders; independent of PID 1's, which fresh calls fill.
_SESSION_PAGES = None


def _session_looks():
    """Whether a process forked ahead of a session call is to look at its pages at its call's end."""
    return _SESSION_PAGES.looks > 0 if _SESSION_PAGES is not None else os.path.exists('/proc/self/pagemap')


def _learn_session_pages(ranges):
    """At the end of a kept session call, in its process (the next holder): the pages it copied of
    `ranges` (its mappings when it was forked ahead) become what the next process forked from it
    writes ahead, before it says it is there (off the next call's way). A look costs a few ms on
    the answer's way, so it is bounded as a fresh call's is (TOUCH_LOOKS looks at most, none after
    one that found few new pages)."""
    global _SESSION_PAGES
    if not ranges:
        return
    if _SESSION_PAGES is None:
        _SESSION_PAGES = PagesAhead()
    _SESSION_PAGES.take(_look_at_own_pages(ranges))
