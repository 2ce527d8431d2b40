"""The site folders a program sees and the runner never reads (_late_sites): the user site once
pip has made it, and a chat's prepared packages, each before the image's site directories."""
import os
import site
import sys
import tempfile
import unittest

from golden import runner as r


class LateSites(unittest.TestCase):
    def setUp(self):
        self.saved = (list(sys.path), r._CHAT_SITE, site.ENABLE_USER_SITE, site.USER_SITE)
        self.tmp = tempfile.mkdtemp()
        self.user = os.path.join(self.tmp, 'user')
        self.chat = os.path.join(self.tmp, 'chat')
        r._CHAT_SITE = self.chat
        site.ENABLE_USER_SITE = True
        site.USER_SITE = self.user
        self.image = site.getsitepackages()[0]
        sys.path[:] = ['/run', '/usr/lib/python3', self.image]

    def tearDown(self):
        sys.path[:], r._CHAT_SITE, site.ENABLE_USER_SITE, site.USER_SITE = self.saved
        for d, _, files in os.walk(self.tmp, topdown=False):
            for f in files:
                os.remove(os.path.join(d, f))
            os.rmdir(d)

    def test_nothing_when_neither_folder_exists(self):
        r._late_sites()
        self.assertEqual(sys.path, ['/run', '/usr/lib/python3', self.image])

    def test_both_go_before_the_image_site_and_their_pth_files_count(self):
        os.makedirs(self.user)
        os.makedirs(os.path.join(self.chat, 'extra'))
        with open(os.path.join(self.chat, 'x.pth'), 'w') as f:
            f.write('extra\n')
        r._late_sites()
        self.assertEqual(sys.path, ['/run', '/usr/lib/python3', self.user, self.chat, os.path.join(self.chat, 'extra'), self.image])

    def test_once_only(self):
        os.makedirs(self.user)
        r._late_sites()
        r._late_sites()
        self.assertEqual(sys.path, ['/run', '/usr/lib/python3', self.user, self.image])

    def test_no_user_site_when_python_turned_it_off(self):
        os.makedirs(self.user)
        site.ENABLE_USER_SITE = False
        r._late_sites()
        self.assertEqual(sys.path, ['/run', '/usr/lib/python3', self.image])


if __name__ == '__main__':
    unittest.main()
