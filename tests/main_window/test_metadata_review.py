# License: GPLv3 Copyright: the Book AI developers
"""AI metadata from calibre's main window (main_window/metadata_actions.py, gui/metadata_review.py),
offscreen, in a real calibre library with custom columns, with calibre's real job manager: the
choices dialog, then one job asking a model (a scripted server speaking llama.cpp's API, whose
answers a test chooses; and the real llama-server with the tiny model, constrained by the schema);
then the review: some fields ticked, Apply selected, calibre's db checked, Undo metadata change
putting back the exact old values; a field the reader changed since shown as a conflict and never
written; another library open when Apply is pressed, said in words and nothing written; the
review closed and found again in Review metadata kept for later, then discarded."""

import json
import re

import pytest
from qt.core import Qt

from calibre_plugins.bookai.gui.metadata_review import MetadataChoicesDialog
from calibre_plugins.bookai.main_window import metadata_actions as ma
from calibre_plugins.bookai.metadata.kept import KeptProposals
from helpers.book_fields import BOOK, library_with_columns
from helpers.calibre_gui import stand_in_main_window, wait_until, when_modal
from helpers.peers import LlamaServer, RecordingProxy, use_server
from helpers.scripted_model import ScriptedModel

COLUMNS = (('mood', 'Mood', 'enumeration', {'enum_values': ['Dark', 'Calm', 'Hopeful']}),
           ('level', 'Reading level', 'int', {}),
           ('read', 'Read on', 'datetime', {}))
VALUES = {'tags': ('Manual', 'Software'), '#mood': 'Calm'}
SECOND, THIRD = 2, 3
FIELDS = ['tags', 'comments', 'languages', '#mood', '#level']


def answer(request):
    """As a good model would answer, per book (by its title in the request): only the fields asked."""
    asked = request['response_format']['json_schema']['schema']['properties']
    text = request['messages'][-1]['content']
    if 'The Orchard' in text:
        given = {'tags': ['Fiction', 'Orchards'], 'description': 'A year in an orchard.',
                 'languages': ['French'], 'custom_mood': 'Hopeful', 'custom_level': 4}
    elif 'The Lighthouse' in text:
        given = {'tags': ['fiction', 'Sea'], 'description': 'A keeper and his light.',
                 'languages': ['English'], 'custom_mood': 'Dark', 'custom_level': 6}
    else:  # the Quick Start Guide
        given = {'tags': ['software', 'Ebook management'], 'description': 'Not asked: it has one.',
                 'languages': ['English'], 'custom_mood': 'hopeful', 'custom_level': 3}
    return json.dumps({k: v for k, v in given.items() if k in asked})


@pytest.fixture(autouse=True)
def own_cache(tmp_path, monkeypatch):
    """Each test its own Undo and kept proposals: what one leaves is never another's to find."""
    from calibre_plugins.bookai.metadata import changes
    monkeypatch.setattr(changes, 'default_root', lambda folder='metadata-undo': str(tmp_path / 'cache' / folder))


@pytest.fixture
def library(sandbox):
    """The Quick Start Guide (book 1, tagged, with a description) and two empty books (2, 3), with
    custom columns of kinds AI metadata fills, and one it does not (a date)."""
    lib = library_with_columns(sandbox, columns=COLUMNS, values=VALUES)
    for title in ('The Lighthouse', 'The Orchard'):
        r = sandbox.run(['calibredb', '--with-library', lib, 'add', '--empty', '--title', title,
                         '--authors', 'A. Writer'])
        assert r.returncode == 0, r
    return lib


def values(gui, ids=(BOOK, SECOND, THIRD), keys=('tags', 'comments', 'languages', '#mood', '#level')):
    db = gui.current_db.new_api
    return {(b, k): db.field_for(k, b) for b in ids for k in keys}


def choose(fields, instruction='', at_once=2):
    """The choices dialog, when it shows: fields ticked, the mood's instruction given, Ask the model."""
    def act(d):
        assert {'tags', 'comments', 'languages', '#mood', '#level'} <= set(d.boxes) and '#read' not in d.boxes
        for key, box in d.boxes.items():
            box.setChecked(key in fields)
        d.instructions['#mood'].setText(instruction)
        d.at_once.setValue(at_once)
        d.start_button.click()
    when_modal(act, MetadataChoicesDialog)


def run_job(gui, ids, fields=FIELDS, instruction='the mood of the book in a word', at_once=2):
    """The menu's Fill in metadata with AI… for ids, the job run to its end; the review it opens."""
    choose(fields, instruction, at_once)
    job = ma.fill_metadata(gui, ids)
    assert job is not None and job.killable
    wait_until(lambda: not ma.jobs, timeout=120)
    assert not job.failed and gui.job_failures == []
    return job


def review_filled():
    wait_until(lambda: ma.reviews and not ma.reviews[-1].busy, timeout=60)
    return ma.reviews[-1]


def rows(w):
    """(book id, field) of each row, its tick, and what its columns say."""
    out = {}
    for (book_id, key), item in w.boxes.items():
        r = item.row()
        out[(book_id, key)] = (item.checkState() == Qt.CheckState.Checked,
                               bool(item.flags() & Qt.ItemFlag.ItemIsEnabled),
                               *(w.table.item(r, c).text() for c in range(5)))
    return out


def tick_only(w, wanted):
    for key, item in w.boxes.items():
        item.setCheckState(Qt.CheckState.Checked if key in wanted else Qt.CheckState.Unchecked)


def test_reviewed_applied_in_part_then_undone_exactly(qapp, prefs, library, said):
    with ScriptedModel(answer) as model:
        use_server(prefs, model.url)
        gui = stand_in_main_window(library)
        before = values(gui)
        run_job(gui, [BOOK, SECOND, THIRD])
        w = review_filled()
        assert prefs['metadata_fields'] == FIELDS and prefs['metadata_requests_at_once'] == 2  # remembered
        assert prefs['metadata_instructions'] == {'#mood': 'the mood of the book in a word'}
        assert len(model.requests) == 3
        assert all('the mood of the book in a word' in r['messages'][-1]['content'] for r in model.requests)
    assert values(gui) == before  # nothing written by the job
    seen = rows(w)
    assert (BOOK, 'comments') not in seen  # it has a description: not asked
    assert (BOOK, '#mood') in seen and seen[(BOOK, '#mood')][3:5] == ('Mood', 'Calm')
    assert seen[(BOOK, '#mood')][5] == 'Hopeful'
    assert seen[(BOOK, 'tags')][4:6] == ('Manual, Software', 'Software, Ebook management (new)')
    assert 'New to the library: Ebook management' in seen[(BOOK, 'tags')][6]
    assert seen[(THIRD, 'languages')][4:6] == ('(none)', 'French')
    assert seen[(SECOND, 'comments')][5] == 'A keeper and his light.'
    assert all(on and enabled for on, enabled, *_rest in seen.values())  # all ticked to start with
    assert w.table.item(w.boxes[(SECOND, 'tags')].row(), 0).text() == 'The Lighthouse'
    assert w.table.item(w.boxes[(SECOND, 'comments')].row(), 0).text() == ''  # a book's title once
    kept = KeptProposals()
    assert len(kept.review(str(gui.current_db.new_api.library_id)).proposals) == len(seen)

    chosen = {(BOOK, 'tags'), (SECOND, '#mood'), (THIRD, 'comments'), (THIRD, 'languages')}
    tick_only(w, chosen)
    w.apply_selected_button.click()
    wait_until(lambda: not w.busy, timeout=60)
    after = values(gui)
    assert set(after[(BOOK, 'tags')]) == {'Software', 'Ebook management'}
    assert after[(SECOND, '#mood')] == 'Dark' and after[(THIRD, 'comments')] == '<p>A year in an orchard.</p>'
    assert after[(THIRD, 'languages')] == ('fra',)
    assert {k: v for k, v in after.items() if k not in chosen} == {k: v for k, v in before.items() if k not in chosen}
    assert '4 values written' in w.status.text()
    assert gui.library_view.refreshed == [[BOOK, SECOND, THIRD]]
    done = rows(w)
    assert all(not done[k][1] and done[k][6] == 'Written.' for k in chosen)  # not to be ticked again
    library_id = str(gui.current_db.new_api.library_id)
    assert {(p.book_id, p.key) for p in kept.review(library_id).proposals} == set(seen) - chosen

    ma.undo_metadata(gui)
    wait_until(lambda: said['info'], timeout=30)
    assert said['info'][-1][0] == '4 values put back.' and 'The Lighthouse: #mood' in said['info'][-1][1]
    assert values(gui) == before  # exactly as it was
    ma.undo_metadata(gui)
    wait_until(lambda: len(said['info']) == 2, timeout=30)
    assert 'no metadata in this library that it could put back' in said['info'][-1][0]
    w.close()


def test_a_field_changed_since_is_shown_and_never_written(qapp, prefs, library, said):
    with ScriptedModel(answer) as model:
        use_server(prefs, model.url)
        gui = stand_in_main_window(library)
        run_job(gui, [SECOND, THIRD], fields=['tags', '#mood'])
    w = review_filled()
    w.close()  # without deciding: kept for later
    db = gui.current_db.new_api
    db.set_field('#mood', {SECOND: 'Calm'})  # the reader sets it by hand meanwhile
    ma.review_kept(gui)
    w = review_filled()
    seen = rows(w)
    assert seen[(SECOND, '#mood')][:2] == (False, False)  # unticked, and cannot be ticked
    assert seen[(SECOND, '#mood')][6] == 'Changed since it was read: it stays as it is.'
    db.set_field('tags', {THIRD: ('Poetry',)})  # and another, while the review is open
    w.apply_all_button.click()
    wait_until(lambda: not w.busy, timeout=60)
    assert said['question'] and 'Write the 3 values proposed for 2 books?' in said['question'][-1]
    assert db.field_for('#mood', SECOND) == 'Calm' and db.field_for('tags', THIRD) == ('Poetry',)
    assert set(db.field_for('tags', SECOND)) == {'fiction', 'Sea'} or set(db.field_for('tags', SECOND)) == {
        'Fiction', 'Sea'}
    assert db.field_for('#mood', THIRD) == 'Hopeful'
    assert '2 values written' in w.status.text() and '1 field was changed since it was read' in w.status.text()
    assert rows(w)[(THIRD, 'tags')][6] == 'Changed since it was read: it stays as it is.'
    assert KeptProposals().review(str(db.library_id)).proposals == [p for p in w.proposals if (
        p.book_id, p.key) == (SECOND, '#mood')]
    w.close()


def test_another_library_open_is_said_and_nothing_is_written(qapp, prefs, library, said, sandbox):
    from calibre.library import db as open_db
    other = library_with_columns(sandbox, 'other', columns=COLUMNS, values=VALUES)
    with ScriptedModel(answer) as model:
        use_server(prefs, model.url)
        gui = stand_in_main_window(library)
        before = values(gui)
        run_job(gui, [SECOND], fields=['tags'])
    w = review_filled()
    first = gui.current_db
    gui.current_db = open_db(str(other))  # calibre switched library, the review still open
    other_before = values(gui, ids=(BOOK,))
    w.apply_all_button.click()
    assert not w.busy and 'another library is open now: nothing was written' in w.status.text()
    assert values(gui, ids=(BOOK,)) == other_before
    gui.current_db = first
    assert values(gui) == before
    w.close()
    # the job that ends while another library is open: kept, and said
    with ScriptedModel(answer) as model:
        use_server(prefs, model.url)
        choose(['#mood'])
        job = ma.fill_metadata(gui, [THIRD])
        gui.current_db = open_db(str(other))
        wait_until(lambda: not ma.jobs, timeout=120)
    assert not job.failed and not [r for r in ma.reviews if r.isVisible()]
    assert re.search(r'for the library library\. It is kept: open that library', gui.status_bar.messages[-1])
    gui.current_db = first
    ma.review_kept(gui)
    w = review_filled()
    assert set(rows(w)) == {(SECOND, 'tags'), (THIRD, '#mood')}  # both runs' proposals, kept
    w.close()


def test_kept_for_later_then_discarded(qapp, prefs, library, said):
    with ScriptedModel(answer) as model:
        use_server(prefs, model.url)
        gui = stand_in_main_window(library)
        before = values(gui)
        run_job(gui, [SECOND, THIRD], fields=['tags', 'languages'])
    w = review_filled()
    first = rows(w)
    w.close()
    assert not ma.reviews
    ma.review_kept(gui)
    w = review_filled()
    assert rows(w) == first  # the same rows, read back from the kept file
    said['answer'] = False
    w.discard_button.click()
    assert 'Discard the 4 values proposed?' in said['question'][-1] and w.isVisible()
    said['answer'] = True
    w.discard_button.click()
    wait_until(lambda: not ma.reviews, timeout=30)
    assert values(gui) == before and not KeptProposals().has(str(gui.current_db.new_api.library_id))
    ma.review_kept(gui)
    wait_until(lambda: said['info'], timeout=30)
    assert 'No metadata proposed by AI is waiting' in said['info'][-1][0]


def test_stop_keeps_what_was_answered_and_asks_no_more(qapp, prefs, library, said):
    import threading
    answered, release = threading.Event(), threading.Event()

    def slow(request):
        if 'The Orchard' in request['messages'][-1]['content']:
            release.wait(60)  # the second book's answer never comes before Stop
        else:
            answered.set()
        return answer(request)

    with ScriptedModel(slow) as model:
        use_server(prefs, model.url)
        gui = stand_in_main_window(library)
        choose(['tags'], at_once=1)
        job = ma.fill_metadata(gui, [SECOND, THIRD])
        wait_until(lambda: answered.is_set() and len(model.requests) == 2, timeout=60)
        gui.job_manager.kill_job(job, None)  # the Jobs window's Stop
        wait_until(lambda: not ma.jobs, timeout=60)
        release.set()
    assert job.killed and gui.job_failures == []
    w = review_filled()
    assert set(rows(w)) == {(SECOND, 'tags')}  # the book answered before Stop, and nothing after
    assert 'Stopped: the books answered by then are shown.' in w.status.text()
    w.close()


def test_the_real_llama_server_is_asked_in_the_schema(qapp, prefs, library, said):
    """The tiny random model, constrained by the schema llama-server is sent: the job ends, and what it
    said is either reviewed (each value checked) or said in words."""
    with LlamaServer('tiny', alias='tiny', ctx=8192, extra_args=('--temp', '0')) as server, \
            RecordingProxy(server.base_url) as proxy:
        use_server(prefs, proxy.base_url)
        gui = stand_in_main_window(library)
        before = values(gui)
        run_job(gui, [SECOND, THIRD], fields=['#mood', '#level'])
        (first, *_more) = proxy.chat_requests()
        schema = first['response_format']['json_schema']['schema']
        assert schema['properties']['custom_mood'] == {'type': 'string', 'enum': ['Dark', 'Calm', 'Hopeful']}
    assert values(gui) == before
    if ma.reviews:
        w = review_filled()
        for p in w.proposals:
            assert (p.key == '#mood' and p.new in ('Dark', 'Calm', 'Hopeful')) or (
                p.key == '#level' and isinstance(p.new, int))
        w.close()
    else:
        assert said['info'] and said['info'][-1][0] == 'The model proposed nothing to change.'
