# The sandbox runner, part 65: the modules a program starts with, and finding the ones it added
# at its end without touching the others.


def _name_copy(name):
    """A str equal to `name` but a new object of our own (other keys are kept as they are)."""
    if type(name) is not str:
        return name
    return name.encode('utf-8', 'surrogatepass').decode('utf-8', 'surrogatepass')


class ForkModules:
    """What was in sys.modules when a program's process was forked (`names`), made by the process
    it is forked from, once for as long as its sys.modules stays the same size.

    At its end a program's own modules are torn down, as `python3 file` does. Finding them by
    walking sys.modules writes the reference count of every name and module it yields, and after
    a fork each page written is a copy-on-write fault: with the data stack preloaded that walk
    cost 750 faults per call, 2.3 ms on runc and 15 ms under gVisor (data image, measured in the
    runner). So the names are also kept as copies, hashed ahead, on a few pages of their own.
    Counting the copies still in sys.modules only reads the dict; the keys the program added
    are all after every key that was there at the fork (a dict keeps insertion order), so a walk
    backwards from the end stops as soon as it has them all."""

    def __init__(self, modules):
        self.names = frozenset(modules)
        self.copies = tuple(_name_copy(n) for n in self.names)
        for c in self.copies:
            hash(c)  # cached in the object now, not written in the child

    def added(self, modules, also=()):
        """The keys of `modules` not in `names`, and those of `also` it holds, in the dict's order."""
        if type(modules) is not dict:
            return [k for k in list(modules) if k not in self.names or k in also]
        count = len(modules) - sum(map(modules.__contains__, self.copies))
        found = []
        seen_also = set()
        if count > 0:
            for key in reversed(modules):
                if key not in self.names:
                    found.append(key)
                    count -= 1
                    if count == 0:
                        break
                elif key in also:
                    found.append(key)
                    seen_also.add(key)
        found.reverse()
        # A key of `also` not met on the way is before everything the program added.
        return [k for k in also if k not in seen_also and k in modules] + found
