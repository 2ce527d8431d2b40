"""The modules a program added, found at its end from the set it was forked with: the keys after
every key that was there at the fork, in the dict's order, whatever it did to the others."""
import unittest

from golden import runner as r


class AddedModules(unittest.TestCase):
    def setUp(self):
        self.modules = {'builtins': 1, 'sys': 2, '__main__': 3, 'os': 4, 'json': 5}
        self.forked = r.ForkModules(self.modules)

    def added(self):
        return self.forked.added(self.modules, ('__main__',))

    def test_nothing_added_is_main_alone(self):
        self.assertEqual(self.added(), ['__main__'])

    def test_imports_in_their_order_after_main(self):
        self.modules['csv'] = 6
        self.modules['re'] = 7
        self.assertEqual(self.added(), ['__main__', 'csv', 're'])

    def test_a_module_of_the_fork_removed(self):
        del self.modules['json']
        self.modules['csv'] = 6
        self.assertEqual(self.added(), ['__main__', 'csv'])

    def test_a_module_of_the_fork_removed_and_imported_again_is_not_the_programs(self):
        self.modules['csv'] = 6
        del self.modules['os']
        self.modules['os'] = 8
        self.modules['re'] = 7
        self.assertEqual(self.added(), ['__main__', 'csv', 're'])

    def test_main_replaced_in_place_keeps_its_place(self):
        self.modules['csv'] = 6
        self.modules['__main__'] = 9
        self.assertEqual(self.added(), ['__main__', 'csv'])

    def test_main_put_back_after_an_import_is_met_where_it_is(self):
        self.modules['csv'] = 6
        main = self.modules.pop('__main__')
        self.modules['__main__'] = main
        self.modules['re'] = 7
        self.assertEqual(self.added(), ['csv', '__main__', 're'])

    def test_main_removed_is_not_named(self):
        del self.modules['__main__']
        self.modules['csv'] = 6
        self.assertEqual(self.added(), ['csv'])

    def test_keys_that_are_not_names(self):
        self.modules[42] = 6
        self.modules[('a', 'b')] = 7
        self.assertEqual(self.added(), ['__main__', 42, ('a', 'b')])

    def test_every_module_replaced_by_a_new_dict_of_other_names(self):
        self.modules.clear()
        self.modules.update({'a': 1, 'b': 2})
        self.assertEqual(self.added(), ['a', 'b'])

    def test_a_mapping_that_is_not_a_dict_is_walked_whole(self):
        class Modules(dict):
            pass

        mods = Modules(self.modules)
        mods['csv'] = 6
        self.assertEqual(self.forked.added(mods, ('__main__',)), ['__main__', 'csv'])

    def test_the_copies_are_other_objects_equal_to_the_names(self):
        names = sorted(self.forked.names)
        copies = sorted(self.forked.copies)
        self.assertEqual(copies, names)
        originals = {id(k) for k in self.modules}
        self.assertEqual([c for c in self.forked.copies if id(c) in originals], [])


if __name__ == '__main__':
    unittest.main()
