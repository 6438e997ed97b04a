# License: GPLv3 Copyright: the Book AI developers
"""Make chapter summaries in calibre's main window (main_window/summary_actions.py), offscreen, in a
real calibre library holding the real novel (a sentinel paragraph where the reader's place is saved,
as the E-book viewer saves it) and a book with no place, with calibre's real job manager, against a
real llama-server (the tiny model): one job, its progress as calibre's notifications (the fraction
and the chapter), a line a book in its log, nothing sent of the book with no place nor after the
place, a second job for the same books refused in words, the outcome said; for a provider on the
internet, the reader's consent with the estimate first; Stop from the Jobs window keeps the
summaries made."""

import json
import os
import threading

import pytest

from calibre_plugins.bookai.conversation.summaries import BookKey, BookSummaries, SummaryCache
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.main_window import summary_actions as sa
from helpers.books import quick_start_epub
from helpers.calibre_gui import stand_in_main_window, wait_until
from helpers.peers import LlamaServer, RecordingProxy, use_online, use_server
from helpers.sentinels import SENTINELS, bodies_with_sentinels, epub_with_sentinel

TINY = ('--temp', '0', '-n', '16', '--override-kv', 'llama.context_length=int:65536')


@pytest.fixture
def notified(monkeypatch):
    """What the job tells calibre's Jobs (fraction, text), recorded on its way; with pause set, the job
    waits after its first summary until calibre's Stop has been pressed (abort)."""
    record = {'put': [], 'pause': False, 'paused': threading.Event()}
    job = sa.summaries_job

    class Recorder:
        def __init__(self, queue, abort):
            self.queue, self.abort = queue, abort

        def put(self, item):
            record['put'].append(item)
            self.queue.put(item)
            if record['pause'] and item[0] > 0 and not record['paused'].is_set():
                record['paused'].set()
                self.abort.wait(60)

    def recording(plans, provider, abort=None, log=None, notifications=None):
        return job(plans, provider, abort=abort, log=log, notifications=Recorder(notifications, abort))
    monkeypatch.setattr(sa, 'summaries_job', recording)
    return record


@pytest.fixture
def novel_library(sandbox, tmp_path):
    """The novel with a sentinel where the reader's place is saved (book 1), and a book never opened in
    the viewer (book 2); (library folder, the novel as read from the library)."""
    from calibre_plugins.bookai.grounding.reading_position import viewer_annotations_file
    path, _before = epub_with_sentinel(tmp_path / 'pride-and-prejudice.epub', 0.03)
    lib = sandbox.make_library(path, quick_start_epub())
    from calibre.library import db
    library = db(str(lib)).new_api
    epub = library.format_abspath(1, 'EPUB')
    book = read_epub(epub)
    at = next(p.start for p in book.paragraphs if p.text == SENTINELS[0])
    annotations = viewer_annotations_file(epub)
    os.makedirs(os.path.dirname(annotations), exist_ok=True)
    with open(annotations, 'w') as f:
        json.dump([{'pos': book.cfi_at(at), 'pos_type': 'epubcfi', 'timestamp': '2026-12-01T10:00:00+00:00',
                    'type': 'last-read'}], f)
    library.close()
    return lib, book


def kept(gui, model='openai_compatible/tiny'):
    db = gui.current_db.new_api
    return [s for s in BookSummaries(SummaryCache(), BookKey(db.library_id, 1, 'EPUB')).summaries if s.model == model]


def test_the_job_summarizes_the_chapters_read_with_progress_and_nothing_after_the_place(
        qapp, prefs, novel_library, said, notified):
    lib, book = novel_library
    with LlamaServer('tiny', alias='tiny', ctx=65536, extra_args=TINY) as server, \
            RecordingProxy(server.base_url) as proxy:
        use_server(prefs, proxy.base_url)
        gui = stand_in_main_window(lib)
        assert sa.make_chapter_summaries(gui, [1, 2])
        assert not sa.make_chapter_summaries(gui, [2])  # those books are being done
        assert 'being made for Quick Start Guide already' in said['error'][-1]
        wait_until(lambda: sa.jobs, timeout=60, state=lambda: (said, gui.status_bar.messages))
        (job,) = sa.jobs
        assert job.description == 'Book AI: chapter summaries of 2 books' and job.killable
        wait_until(lambda: not sa.jobs and not sa.busy, timeout=120, state=lambda: notified['put'])
        assert not job.failed and gui.job_failures == [] and said['question'] == []  # on this computer: not asked
        made = kept(gui)
        assert len(made) >= 3 and all(s.complete for s in made)
        assert len(proxy.chat_requests()) == len(made)
        fractions = [f for f, _t in notified['put']]
        assert fractions == sorted(fractions) and fractions[-1] == 1.0
        assert any(t.startswith(f'Summarizing {made[1].title} of Pride and Prejudice') for _f, t in notified['put'])
        log = job.details
        assert 'Quick Start Guide: Book AI does not know where you are in it' in log
        assert f'Pride and Prejudice: {len(made)} chapter summaries made.' in log
        outcome = gui.status_bar.messages[-1]
        assert outcome.startswith(f'Book AI: {len(made)} chapter summaries made') and 'no cost' in outcome
        assert 'Nothing was done for 1 book.' in outcome
        # again: they are kept, nothing to make, nothing sent
        assert sa.make_chapter_summaries(gui, [1])
        wait_until(lambda: not sa.busy, timeout=60)
        assert 'There are no chapter summaries to make' in said['info'][-1][0]
        assert len(proxy.chat_requests()) == len(made) and not sa.jobs
    sent = ' '.join(json.dumps(r) for r in proxy.chat_requests())
    assert 'Quick Start' not in sent and 'calibre' not in sent.lower()
    assert bodies_with_sentinels(proxy.received) == []


def test_online_consent_first_and_stop_keeps_the_summaries_made(qapp, prefs, novel_library, said, notified):
    from calibre_plugins.bookai.settings.secrets import secret_store
    lib, _book = novel_library
    with LlamaServer('tiny', alias='grok-3', ctx=65536, extra_args=TINY) as server, \
            RecordingProxy(server.base_url) as proxy:
        use_online(prefs, proxy.base_url)
        try:
            gui = stand_in_main_window(lib)
            said['answer'] = False
            assert sa.make_chapter_summaries(gui, [1])
            wait_until(lambda: not sa.busy, timeout=60)
            (asked,) = said['question']
            assert 'go to xAI Grok, on the internet' in asked and 'chapters to summarize in 1 book: about' in asked
            assert 'tokens sent in' in asked and not sa.jobs and proxy.chat_requests() == []  # no: nothing sent
            said['answer'] = True
            notified['pause'] = True
            assert sa.make_chapter_summaries(gui, [1])
            wait_until(lambda: notified['paused'].is_set(), timeout=60, state=lambda: said)
            (job,) = sa.jobs
            gui.job_manager.kill_job(job, None)  # the Jobs window's Stop
            wait_until(lambda: not sa.jobs and not sa.busy, timeout=60)
            assert job.killed and len(said['question']) == 2
            db = gui.current_db.new_api
            assert f'{db.library_id}:1#so-far|grok' in prefs['book_text_consent']
            made = kept(gui, 'grok/grok-3')
            assert 1 <= len(made) < len(notified['put'])  # the summaries made before Stop are kept
            assert len(proxy.chat_requests()) <= len(made) + 1  # nothing after Stop but the one cut short
            assert gui.status_bar.messages[-1].startswith('Book AI: Stopped: the summaries made so far are kept.')
        finally:
            secret_store().set('grok', 'api_key', '')
    assert bodies_with_sentinels(proxy.received) == []
