# License: GPLv3 Copyright: the Book AI developers
"""Forget everything: the keys (in a real GNOME Keyring, and in the file), the saved
conversations, the cached text of books, the chapter summaries and the choices made per book go; the library,
another program's secrets and the other settings stay exactly as they were."""

import hashlib
import os
import shutil
import uuid

import pytest

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.summaries import BookKey, BookSummaries, Summary, SummaryCache
from calibre_plugins.bookai.grounding.cache import TextCache
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.conversation.forget import forget_everything
from calibre_plugins.bookai.settings.prefs import plugin_prefs, private_config
from calibre_plugins.bookai.settings.secrets import SecretStore
from helpers.books import quick_start_epub
from helpers.keyring_bus import Keyring

LIBRARY = 'f0e1d2c3-b4a5-4687-9a8b-7c6d5e4f3a2b'


def tree(folder):
    """Every file under folder: its sha256."""
    found = {}
    for dirpath, dirs, names in os.walk(folder):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, 'rb') as f:
                found[os.path.relpath(path, folder)] = hashlib.sha256(f.read()).hexdigest()
    return found


@pytest.fixture
def prefs():
    p = plugin_prefs()
    before = {k: p[k] for k in ('book_scopes', 'book_text_consent', 'book_fields', 'confirm_send')}
    yield p
    for k, v in before.items():
        p[k] = v


@pytest.fixture
def kept(tmp_path, library, prefs):
    """Two conversations, a book's cached text and its chapter summaries, per-book choices, besides a library."""
    history = History(str(tmp_path / 'history'))
    for library_id in (LIBRARY, 'another-library'):
        conv = Conversation([], library_id=library_id)
        conv.ask('What is this library about?')
        history.save(conv)
    cache = TextCache(tmp_path / 'cache')
    book_file = tmp_path / 'guide.epub'
    shutil.copy(quick_start_epub(), book_file)
    cache.text_of(LIBRARY, 1, 'EPUB', book_file, read=read_epub)
    summaries = SummaryCache(str(tmp_path / 'summaries'))
    BookSummaries(summaries, BookKey(LIBRARY, 1, 'EPUB')).keep(
        Summary('openai_compatible/tiny', 1, 'Chapter 1', 1, 3, True, 900, '0' * 32, 'What happens [2].', 1.0))
    assert os.path.exists(summaries.file_of(BookKey(LIBRARY, 1, 'EPUB')))
    prefs['book_scopes'] = {f'{LIBRARY}:1': 'whole'}
    prefs['book_text_consent'] = [f'{LIBRARY}:1|openai', f'{LIBRARY}:1|anthropic']
    prefs['book_fields'] = ['tags']
    prefs['confirm_send'] = 'always'
    assert len(history.summaries(LIBRARY)) == 1 and os.listdir(cache.library_folder(LIBRARY))
    return history, cache, summaries


def test_forget_everything_with_the_keys_in_the_keyring(gnome_keyring, kept, library, prefs, tmp_path):
    history, cache, summaries = kept
    keyring = Keyring(gnome_keyring.address)
    try:
        keyring.add_item({'application': 'another-program'}, 'not ours')
        store = SecretStore(f'plugins/bookai-secrets-test-{uuid.uuid4().hex}')
        store.set('openai', 'api_key', 'sk-one-0123456789')
        store.set('anthropic', 'api_key', 'sk-two-0123456789')
        library_before = tree(library)
        done = forget_everything(store, history.folder, cache.folder, prefs, summary_folder=summaries.folder)
        assert (done.keys, done.conversations, done.cached_books, done.book_choices, done.summaries) == (2, 2, 1, 3, 1)
        assert keyring.items() == {}
        assert keyring.all_secrets() == ['not ours']
    finally:
        keyring.close()
    assert store.get('openai', 'api_key') == ''
    assert not os.path.exists(history.folder) and history.summaries(LIBRARY) == []
    assert not os.path.exists(cache.folder) and not os.path.exists(summaries.folder)
    assert prefs['book_scopes'] == {} and prefs['book_text_consent'] == []
    assert prefs['book_fields'] == ['tags'] and prefs['confirm_send'] == 'always'
    assert tree(library) == library_before


def test_forget_everything_with_the_keys_in_the_file(no_session_bus, kept, prefs, tmp_path):
    history, cache, summaries = kept
    rel = f'plugins/bookai-secrets-test-{uuid.uuid4().hex}'
    store = SecretStore(rel)
    store.set('gemini', 'api_key', 'gemini-key-0123456789')
    from calibre_plugins.bookai.conversation.last_read import LastReadRecord
    record = LastReadRecord(str(tmp_path / 'last-read.json'))
    record.put('a-book', 'epubcfi(/6/4)')
    done = forget_everything(store, history.folder, cache.folder, prefs, summary_folder=summaries.folder,
                             last_read_file=record.path)
    assert (done.keys, done.conversations, done.cached_books, done.book_choices, done.summaries) == (1, 2, 1, 3, 1)
    assert not os.path.exists(record.path)  # when and where books were read in the viewer
    assert private_config(rel) == {}
    assert not os.path.exists(history.folder) and not os.path.exists(cache.folder)
    assert not os.path.exists(summaries.folder)
    # nothing left: nothing fails
    again = forget_everything(store, history.folder, cache.folder, prefs, summary_folder=summaries.folder)
    assert (again.keys, again.conversations, again.cached_books, again.book_choices, again.summaries) == (0, 0, 0, 0, 0)
