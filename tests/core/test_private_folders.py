# License: GPLv3 Copyright: the Book AI developers
"""Every folder Book AI makes is 0700, so that not even the names in it can be listed by another
user (core.files.private_folder, through write_private): the model lists, the text cache, the
covers' Undo and staging, the History, whatever the umask; one an older version made 0755 is
narrowed when Book AI meets it, with every folder under it; calibre's own folders above them are
left as they are, and nothing is ever widened."""

import os
import stat

import pytest

from calibre_plugins.bookai.core import files
from calibre_plugins.bookai.core.files import private_folder, private_roots, write_private


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def wide_umask(monkeypatch):
    """A umask that lets everyone read new folders (022), and a process that has narrowed nothing yet."""
    monkeypatch.setattr(files, 'narrowed_roots', set())
    old = os.umask(0o022)
    yield
    os.umask(old)


def cache_root() -> str:
    from calibre.constants import cache_dir
    return os.path.join(cache_dir(), 'bookai')


def history_root() -> str:
    from calibre.constants import config_dir
    return os.path.join(config_dir, 'plugins', 'bookai-history')


def test_the_roots_are_calibres_cache_and_the_history():
    assert private_roots() == (cache_root(), history_root())


@pytest.mark.parametrize('where', [('models', 'openrouter-1234.json'), ('text', 'lib', '1.EPUB.bookai'),
                                   ('covers-undo', 'lib', '7', 'entry'), ('covers-staged', 'run', 'manifest.json')])
def test_every_folder_made_in_the_cache_is_private(where, wide_umask):
    path = os.path.join(cache_root(), *where)
    write_private(path, b'x')
    folder = os.path.dirname(path)
    while True:
        assert mode(folder) == 0o700, folder
        if folder == cache_root():
            break
        folder = os.path.dirname(folder)
    assert mode(path) == 0o600


def test_folders_an_older_version_made_wide_are_narrowed_when_met(wide_umask, tmp_path):
    root = cache_root()
    olds = [os.path.join(root, *p) for p in (('text', 'old-library'), ('covers-undo', 'lib', '3'), ('models',))]
    for folder in olds:
        os.makedirs(folder, mode=0o755, exist_ok=True)
        os.chmod(folder, 0o755)
    os.chmod(root, 0o755)
    elsewhere = tmp_path / 'not-book-ai'
    elsewhere.mkdir(mode=0o755)
    os.symlink(elsewhere, os.path.join(root, 'a-link'))  # a link in the tree is not followed
    try:
        write_private(os.path.join(root, 'models', 'x.json'), b'{}')
        assert mode(root) == 0o700
        for folder in olds:  # not written to, but in the tree: narrowed too
            path = folder
            while path != root:
                assert mode(path) == 0o700, path
                path = os.path.dirname(path)
        assert mode(elsewhere) == 0o755
    finally:
        os.remove(os.path.join(root, 'a-link'))


def test_the_history_is_private_and_calibres_plugins_folder_is_left_as_it_is(wide_umask):
    plugins = os.path.dirname(history_root())
    os.makedirs(plugins, exist_ok=True)
    os.chmod(plugins, 0o755)
    old = os.path.join(history_root(), 'old-library')
    os.makedirs(old, exist_ok=True)
    os.chmod(history_root(), 0o755)
    os.chmod(old, 0o755)
    write_private(os.path.join(history_root(), 'new-library', 'c.json'), '{}')
    assert mode(history_root()) == mode(old) == mode(os.path.join(history_root(), 'new-library')) == 0o700
    write_private(os.path.join(plugins, 'bookai-test-settings.json'), '{}')  # a settings file: calibre's folder
    assert mode(plugins) == 0o755
    os.remove(os.path.join(plugins, 'bookai-test-settings.json'))


def test_narrowing_never_widens(wide_umask):
    folder = os.path.join(cache_root(), 'tight')
    os.makedirs(folder, exist_ok=True)
    os.chmod(folder, 0o500)
    try:
        private_folder(folder)
        assert mode(folder) == 0o500
    finally:
        os.chmod(folder, 0o700)


def test_whatever_the_umask_the_folders_are_0700(monkeypatch):
    monkeypatch.setattr(files, 'narrowed_roots', set())
    old = os.umask(0)
    try:
        path = os.path.join(cache_root(), 'umask0', 'deeper', 'f')
        write_private(path, b'x')
    finally:
        os.umask(old)
    assert mode(os.path.dirname(path)) == mode(os.path.dirname(os.path.dirname(path))) == 0o700


def test_a_text_cache_of_its_own_folder_is_private_from_that_folder_down(wide_umask, tmp_path):
    from calibre_plugins.bookai.grounding.cache import TextCache
    from calibre_plugins.bookai.grounding.extract import Book, Chapter, Paragraph
    os.chmod(tmp_path, 0o755)
    folder = tmp_path / 'cache'
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    book_file = tmp_path / 'b.epub'
    book_file.write_bytes(b'book')
    TextCache(folder).put('lib', 1, 'EPUB', book_file, Book([Chapter('One', 0)], [Paragraph(0, 0, 'Text.')]))
    assert mode(folder) == mode(folder / 'lib') == 0o700
    assert mode(tmp_path) == 0o755  # above the cache's own folder: not Book AI's to change
