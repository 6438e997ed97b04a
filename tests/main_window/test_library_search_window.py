# License: GPLv3 Copyright: the Book AI developers
"""Search library by meaning… and More like this in calibre's main window
(main_window/library_search_actions.py), offscreen, on a real calibre library made through calibre's
API (helpers/meaning_library.py), with calibre's real job manager and its real view of the library
(db.data: its marks, its search, its sort, its virtual library), against the real embedding model
(all-MiniLM-L6-v2 in llama-server): the job builds the index, words that share nothing with a book's
description show that book first in calibre's list, with why; calibre's virtual library restricts
what is found; More like this selects the nearest; Stop keeps what was embedded; a provider on the
internet asks the reader's consent, with the estimate, before anything is sent; Forget everything
and a library that is gone remove the index."""

import os
import shutil
import threading

import pytest
from qt.core import QObject, Qt

from calibre_plugins.bookai.library_search import building
from calibre_plugins.bookai.library_search.vectors import VectorFiles, forget_all
from calibre_plugins.bookai.main_window import library_search_actions as lsa
from helpers.calibre_gui import StatusBar, stand_in_gui, wait_until
from helpers.meaning_library import BOOKS, QUERIES, make_meaning_library
from helpers.peers import RecordingProxy


class BookList(QObject):
    """calibre's book list over calibre's own view of the library (db.data), as calibre's BooksView
    and BooksModel drive it: marks, search, sort and selection."""

    def __init__(self, db):
        super().__init__()
        self.db = db
        self.selected: list[int] = []

    def model(self):
        return self

    def get_selected_ids(self):
        return list(self.selected)

    def select_rows(self, ids, using_ids=True, change_current=True, scroll=True):
        self.selected = list(ids)

    def sort_by_named_field(self, field, order, reset=True):
        self.db.data.incremental_sort([(field, order)])  # what BooksModel._sort does

    def shown(self):
        data = self.db.data
        return [data.index_to_id(i) for i in range(len(data))]


class SearchBox:
    """calibre's search box: the text, and calibre's search of the book list when it is set."""

    def __init__(self, db):
        self.db, self.current = db, ''

    def text(self):
        return self.current

    def set_search_string(self, text, store_in_history=False, emit_changed=True):
        self.current = text
        self.db.data.search(text)


def main_window(library):
    from calibre.library import db
    gui = stand_in_gui(job_manager=True)
    gui.current_db = db(str(library))
    gui.library_view = BookList(gui.current_db)
    gui.search = SearchBox(gui.current_db)
    gui.status_bar = StatusBar()
    return gui


@pytest.fixture
def local(prefs, embed):
    """The embeddings of llama-server on this computer, through a proxy recording what it is sent."""
    with RecordingProxy(embed.base_url) as proxy:
        prefs['providers'] = {'openai_compatible': {'base_url': proxy.base_url + '/v1', 'model': embed.model,
                                                    'embedding_model': embed.model}}
        prefs['provider'] = 'openai_compatible'
        prefs['library_embeddings_provider'] = ''
        yield proxy


@pytest.fixture
def library(tmp_path):
    return make_meaning_library(tmp_path)


def embeddings(proxy):
    """The embedding requests the proxy passed on."""
    return [r for r in proxy.received if r[1].endswith('/embeddings')]


@pytest.fixture
def started(monkeypatch):
    """The jobs started in calibre's job manager, recorded."""
    from calibre_plugins.bookai.main_window import threaded_job
    record = []
    run = threaded_job.run_job

    def recording(gui, job, kept):
        record.append(job)
        return run(gui, job, kept)
    monkeypatch.setattr(threaded_job, 'run_job', recording)
    return record


def searched(w, words=''):
    if words:
        w.words.setText(words)
    assert w.search(), w.status.text()
    wait_until(lambda: w.search_button.isEnabled() and not lsa.jobs, timeout=180, state=lambda: w.status.text())


def test_the_job_builds_the_index_and_the_search_shows_the_book_first_with_why(qapp, local, library, said, started):
    lib, ids = library
    gui = main_window(lib)
    w = lsa.open_search(gui)
    try:
        words, i = QUERIES[0]
        w.words.setText(words)
        assert w.search()
        wait_until(lambda: started, timeout=60, state=lambda: w.status.text())
        (job,) = started
        assert job.description == f'Book AI: the library by meaning, {len(BOOKS)} books' and job.killable
        assert 'see calibre\'s Jobs' in w.status.text()
        wait_until(lambda: w.search_button.isEnabled() and not lsa.jobs, timeout=180, state=lambda: w.status.text())
        assert not job.failed and said['question'] == [] and said['error'] == []  # on this computer: not asked
        assert f'{len(BOOKS)} books embedded' in job.details
        shown = gui.library_view.shown()
        assert shown[0] == ids[i], (shown, w.found_ids())
        assert shown == w.found_ids() and gui.search.text() == 'marked:bookai'  # best first, in calibre's list
        assert gui.library_view.selected == [ids[i]]
        scores = [float(w.results.topLevelItem(n).text(2)) for n in range(len(shown))]
        assert 1 < len(shown) < len(BOOKS) and scores == sorted(scores, reverse=True)  # the near ones only
        assert scores[-1] > scores[0] * lsa.NEAR - 0.01
        first = w.results.topLevelItem(0)
        assert first.text(0) == BOOKS[i][0] and first.text(1) and float(first.text(2)) > 0.3
        assert first.text(1) in (BOOKS[i][4], f'Title: {BOOKS[i][0]}', f'Tags: {", ".join(BOOKS[i][2])}')
        assert gui.current_db.data.marked_ids[ids[i]] == 'bookai 01'
        # clicking a book of the window selects it in calibre's list
        second = w.results.topLevelItem(1)
        w.select_in_list(second)
        assert gui.library_view.selected == [second.data(0, Qt.ItemDataRole.UserRole)]
        # again: nothing to embed, no job; the search restricted by the books shown before ours
        sent = len(embeddings(local))
        searched(w, QUERIES[2][0])
        assert len(started) == 1 and gui.library_view.shown()[0] == ids[QUERIES[2][1]]
        assert len(embeddings(local)) == sent + 2  # the words, then the parts of the books' entries for why
        assert all(r[0] == 'POST' for r in local.received)
    finally:
        w.close()


def test_the_virtual_library_and_search_restrict_what_is_found_and_marks_are_kept(qapp, local, library, said):
    lib, ids = library
    gui = main_window(lib)
    data = gui.current_db.data
    data.set_marked_ids({ids[11]: 'mine'})  # the reader's own mark
    data.set_base_restriction('tags:"=Sea"')  # calibre's virtual library
    data.search('')
    assert set(gui.library_view.shown()) == {ids[0], ids[5], ids[6]}
    w = lsa.open_search(gui)
    try:
        searched(w, QUERIES[1][0])  # the mystery: not in the virtual library
        assert w.found_ids() and set(w.found_ids()) <= {ids[0], ids[5], ids[6]}
        assert gui.library_view.shown() == w.found_ids()
        assert data.marked_ids[ids[11]] == 'mine'
        # More like this, from the keeper: the other Vesterholm book first, in the same virtual library
        m = lsa.more_like_this(gui, [ids[0]])
        wait_until(lambda: m.found_ids(), timeout=60, state=lambda: m.status.text())
        assert m.found_ids()[0] == ids[5] and ids[0] not in m.found_ids()
        assert 'Ada Brine' in m.results.topLevelItem(0).text(1)
        assert gui.library_view.shown()[0] == ids[5] and gui.library_view.selected == [ids[5]]
        assert set(gui.library_view.shown()) <= {ids[5], ids[6]}
        m.close()
    finally:
        w.close()


def test_more_like_this_with_no_book_selected_says_so(qapp, local, library, said):
    lib, _ids = library
    gui = main_window(lib)
    assert lsa.more_like_this(gui, []) is None
    assert said['error'] == ['Select one or more books first.']


def test_no_provider_that_embeds_says_how_to_set_one_up(qapp, prefs, library, said):
    lib, _ids = library
    prefs['provider'] = 'anthropic'  # answers, but makes no embeddings
    prefs['library_embeddings_provider'] = ''
    gui = main_window(lib)
    w = lsa.open_search(gui)
    try:
        w.words.setText('a lighthouse')
        assert not w.search()
        assert 'llama.cpp' in w.status.text() and 'Search library by meaning with' in w.status.text()
    finally:
        w.close()


def test_stop_keeps_what_was_embedded_and_the_next_search_goes_on(qapp, local, library, said, monkeypatch):
    lib, ids = library
    monkeypatch.setattr(building, 'BATCH', 4)
    paused, job_fn = threading.Event(), lsa.index_job

    def pausing(db, library_id, ready, abort=None, log=None, notifications=None):
        class Told:
            def put(self, item):
                notifications.put(item)
                if not paused.is_set():
                    paused.set()
                    abort.wait(60)  # until calibre's Stop
        return job_fn(db, library_id, ready, abort=abort, log=log, notifications=Told())
    monkeypatch.setattr(lsa, 'index_job', pausing)
    gui = main_window(lib)
    w = lsa.open_search(gui)
    try:
        w.words.setText(QUERIES[3][0])
        assert w.search()
        wait_until(paused.is_set, timeout=60, state=lambda: w.status.text())
        (job,) = lsa.jobs
        gui.job_manager.kill_job(job, None)  # the Jobs window's Stop
        wait_until(lambda: not lsa.jobs, timeout=60)
        assert 'Stopped: what was embedded is kept' in w.status.text()
        files = VectorFiles()
        e = building.embedder(building.embeddings_provider())
        assert len(files.read(str(gui.current_db.new_api.library_id), model=e.key)) == 4
        monkeypatch.setattr(lsa, 'index_job', job_fn)
        searched(w)
        assert gui.library_view.shown()[0] == ids[QUERIES[3][1]]
        assert len(files.read(str(gui.current_db.new_api.library_id), model=e.key)) == len(BOOKS)
    finally:
        w.close()


def test_online_the_reader_is_asked_first_with_the_estimate(qapp, prefs, embed, library, said):
    """OpenAI's wire (never on this computer, whatever its address) at the real embedding server."""
    from calibre_plugins.bookai.settings.secrets import secret_store
    lib, ids = library
    with RecordingProxy(embed.base_url) as proxy:
        prefs['providers'] = {'openai': {'base_url': proxy.base_url + '/v1', 'model': 'gpt-5-mini',
                                         'embedding_model': 'text-embedding-3-small'}}
        prefs['provider'] = 'openai'
        prefs['library_embeddings_provider'] = ''
        prefs['library_index_consent'] = []
        secret_store().set('openai', 'api_key', 'sk-test-key')
        gui = main_window(lib)
        w = lsa.open_search(gui)
        try:
            said['answer'] = False
            w.words.setText(QUERIES[4][0])
            assert w.search()
            wait_until(lambda: said['question'], timeout=60, state=lambda: w.status.text())
            wait_until(lambda: w.search_button.isEnabled(), timeout=60)
            (asked,) = said['question']
            assert f'of {len(BOOKS)} books go to OpenAI, on the internet, to be embedded by text-embedding-3-small' \
                in asked, asked
            assert 'About ' in asked and 'tokens' in asked and '$' in asked  # its price, from the dated table
            assert proxy.received == [] and not lsa.jobs and w.status.text() == 'Nothing was sent.'
            said['answer'] = True
            searched(w)
            assert len(said['question']) == 2 and gui.library_view.shown()[0] == ids[QUERIES[4][1]]
            library_id = str(gui.current_db.new_api.library_id)
            assert f'{library_id}|openai/text-embedding-3-small' in prefs['library_index_consent']
            searched(w, QUERIES[0][0])  # agreed: not asked again
            assert len(said['question']) == 2
        finally:
            w.close()
            secret_store().set('openai', 'api_key', '')


def test_forget_everything_and_a_library_gone_remove_the_index(qapp, prefs, local, library, said, tmp_path):
    from calibre_plugins.bookai.conversation.forget import forget_everything
    lib, ids = library
    other, _ = make_meaning_library(tmp_path, 'other', BOOKS[:3])
    gui, gui2 = main_window(lib), main_window(other)
    for g in (gui, gui2):
        w = lsa.open_search(g)
        searched(w, 'a lighthouse')
        w.close()
    files = VectorFiles()
    one, two = (str(g.current_db.new_api.library_id) for g in (gui, gui2))
    assert files.read(one) is not None and files.read(two) is not None
    assert prefs['library_index_places'][two] == str(other)
    # the other library is gone: the next search (in any library) removes its index
    gui2.current_db.close()
    shutil.rmtree(other)
    w = lsa.open_search(gui)
    searched(w, 'a lighthouse')
    w.close()
    assert files.read(two) is None and files.read(one) is not None and two not in prefs['library_index_places']
    # Forget everything (the settings' button calls both): every index, and the consents to send a
    # library online
    prefs['library_index_consent'] = [f'{one}|openai/text-embedding-3-small']
    forget_everything()
    assert prefs['library_index_consent'] == []
    assert forget_all() >= 1 and files.read(one) is None and not os.path.exists(files.folder)
