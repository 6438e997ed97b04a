# License: GPLv3 Copyright: the Book AI developers
"""AI covers from calibre's main window, offscreen, in real calibre libraries, with calibre's
real job manager, against an OpenAI-compatible provider pointed at a scripted server that answers
as OpenAI's images API does with real PNGs: Use this cover and Undo; the job for many books with a
failure in the middle, stopped half-way, and with a library switch while it runs; the review's
Apply selected, Apply all and Discard."""

import base64
import json
import os
import time

import pytest
from qt.core import (
    QApplication, QBuffer, QColor, QImage, QIODevice, QPainter, QTimer, Qt,
)

from calibre_plugins.bookai.covers.bulk import staged_runs
from calibre_plugins.bookai.covers.undo import CoverUndo
from calibre_plugins.bookai.gui.cover_dialog import BulkCoverDialog, CoverDialog
from calibre_plugins.bookai.main_window import cover_actions as covers
from helpers.calibre_gui import LibraryView, StatusBar, shoot, stand_in_gui, wait_until, when_modal
from helpers.library import make_library
from helpers.scripted_server import Reply, ScriptedServer

LIGHTHOUSE, ORCHARD, ALMANAC, GUIDE = 1, 2, 3, 4
TITLES = {LIGHTHOUSE: 'The Keeper of the Lighthouse', ORCHARD: 'The Quince Orchard: A "Tale"',
          ALMANAC: 'The Parish Almanac'}


def png(color, width=512, height=768):
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor(color))
    p = QPainter(image)
    p.setPen(QColor('white'))
    p.drawRect(24, 24, width - 49, height - 49)
    p.drawText(image.rect(), Qt.AlignmentFlag.AlignCenter, color)
    p.end()
    buf = QBuffer()
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    assert image.save(buf, 'PNG')
    return bytes(buf.data())


def image_body(data):
    return json.dumps({'created': 1, 'data': [{'b64_json': base64.b64encode(data).decode('ascii')}]}).encode()


def image_reply(data, delay=0.0):
    if delay:  # the whole body, then the end of the answer only after delay seconds
        return Reply(200, headers=[('Content-Type', 'application/json')], chunks=[image_body(data)],
                     chunk_delay=delay)
    return Reply(200, image_body(data), [('Content-Type', 'application/json')])


def refusal(text):
    return Reply(400, json.dumps({'error': {'message': text, 'type': 'invalid_request_error'}}).encode(),
                 [('Content-Type', 'application/json')])


def stalled():
    return Reply(200, headers=[('Content-Type', 'application/json')], chunks=[b'{"data": ['], stall_after=0)


def open_library(path):
    from calibre.library import db
    return db(str(path))


def main_window(library):
    """What the covers' actions use of calibre's main window: the library open, the book list, the
    status bar, calibre's real job manager, the cover browser's refresh."""
    gui = stand_in_gui(job_manager=True)
    gui.current_db = open_library(library)
    gui.library_view = LibraryView()
    gui.status_bar = StatusBar()
    gui.browser_refreshed = 0
    gui.job_failures = []

    def refresh_cover_browser():
        gui.browser_refreshed += 1
    gui.refresh_cover_browser = refresh_cover_browser
    gui.job_exception = lambda job, dialog_title='': gui.job_failures.append(job)
    return gui


@pytest.fixture(autouse=True)
def own_cover_cache(tmp_path, monkeypatch):
    """Each test its own cover cache (runs staged for review, covers kept for Undo): what one test
    leaves there is never another's to find."""
    from calibre_plugins.bookai.covers import bulk, undo
    monkeypatch.setattr(bulk, 'staging_root', lambda: str(tmp_path / 'cover-cache' / 'covers-staged'))
    monkeypatch.setattr(undo, 'default_root', lambda: str(tmp_path / 'cover-cache' / 'covers-undo'))


@pytest.fixture
def books(sandbox):
    return make_library(sandbox, 'Library A', fts=False)


def use_images(prefs, server, at_once=1):
    prefs['providers'] = dict(prefs['providers'], openai_compatible={'base_url': server.url + '/v1'})
    prefs['image_provider'] = 'openai_compatible'
    prefs['cover_requests_at_once'] = at_once


def when(condition, then, timeout=60):
    """then() once condition() holds, polled on Qt's timer (inside a modal dialog's loop)."""
    end = time.monotonic() + timeout

    def look():
        if condition():
            return then()
        if time.monotonic() > end:
            raise AssertionError('timed out waiting')
        QTimer.singleShot(20, look)
    QTimer.singleShot(0, look)


def start_bulk(gui, ids):
    when_modal(lambda d: d.generate_button.click(), BulkCoverDialog)
    job = covers.generate_covers(gui, ids)
    assert job is not None
    return job


def the_review():
    wait_until(lambda: covers.reviews, timeout=60)
    (w,) = covers.reviews
    return w


def thumbnails_loaded(w):
    return all(t.pixmap() is not None and not t.pixmap().isNull() or t.text() in ('No cover', 'Cannot be shown')
               for t in w.thumbs.values())


def cover_size(data):
    image = QImage.fromData(data)
    return image.width(), image.height()


def test_use_this_cover_then_undo(qapp, prefs, books, said):
    new = png('#8e44ad')
    with ScriptedServer([image_reply(new)]) as server:
        use_images(prefs, server)
        gui = main_window(books)
        db = gui.current_db.new_api
        library_id = str(db.library_id)
        old = db.cover(GUIDE)
        assert old and cover_size(old) != (512, 768)
        gui.library_view.selected = [GUIDE]

        def use(d):
            assert d.book_id == GUIDE and 'Quick Start Guide' in d.book_label.text()
            d.generate_button.click()
            when(lambda: not d.busy, d.use_button.click)
        when_modal(use, CoverDialog)
        covers.generate_cover(gui)
        wait_until(lambda: gui.library_view.refreshed, timeout=60, state=lambda: said)
        assert gui.library_view.refreshed == [[GUIDE]] and gui.browser_refreshed == 1
        assert cover_size(db.cover(GUIDE)) == (512, 768)  # as calibre keeps it (a JPEG) on disk
        assert len(server.received) == 1
        assert CoverUndo().books(library_id) == [GUIDE] and covers.undoable(gui, [GUIDE])
        assert not covers.undoable(gui, [LIGHTHOUSE])
        # Undo puts the old cover back, byte for byte, and then there is nothing more to undo
        covers.undo_covers(gui, [GUIDE, LIGHTHOUSE])
        wait_until(lambda: len(gui.library_view.refreshed) == 2, timeout=30, state=lambda: said)
        assert db.cover(GUIDE) == old
        assert CoverUndo().books(library_id) == [] and not covers.undoable(gui, [GUIDE])
        assert said['error'] == []
        # a book that had no cover: Undo takes the new one off again
        assert not db.cover(LIGHTHOUSE)
        covers.apply_covers(gui, library_id, [(LIGHTHOUSE, new)])
        wait_until(lambda: len(gui.library_view.refreshed) == 3, timeout=30, state=lambda: said)
        assert db.cover(LIGHTHOUSE)
        covers.undo_covers(gui, [LIGHTHOUSE])
        wait_until(lambda: len(gui.library_view.refreshed) == 4, timeout=30, state=lambda: said)
        assert not db.cover(LIGHTHOUSE)


def test_cancel_mid_request_applies_nothing(qapp, prefs, books, said):
    with ScriptedServer([stalled()]) as server:
        use_images(prefs, server)
        gui = main_window(books)
        db = gui.current_db.new_api
        old = db.cover(GUIDE)
        gui.library_view.selected = [GUIDE]

        def cancel(d):
            d.generate_button.click()
            when(lambda: server.received, d.reject)
        when_modal(cancel, CoverDialog)
        covers.generate_cover(gui)
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            QApplication.processEvents()
        assert db.cover(GUIDE) == old and gui.library_view.refreshed == []
        assert CoverUndo().books(str(db.library_id)) == []


def test_many_books_with_a_failure_in_the_middle(qapp, prefs, books, said, artifacts):
    replies = [image_reply(png('#16a085')), refusal('The prompt was refused by the safety system.'),
               image_reply(png('#d35400'))]
    with ScriptedServer(replies) as server:
        use_images(prefs, server, at_once=1)
        gui = main_window(books)
        db = gui.current_db.new_api
        ids = [LIGHTHOUSE, ORCHARD, GUIDE]
        db.set_cover({GUIDE: png('#34495e', 400, 600)})  # an old cover to see beside the new one
        before = {i: db.cover(i) for i in ids}
        job = start_bulk(gui, ids)
        wait_until(lambda: job in gui.job_manager.jobs, timeout=10, state=lambda: said)  # in the Jobs panel
        assert job.description == 'Book AI: covers for 3 books' and job.killable
        w = the_review()
        assert len(server.received) == 3
        prompts = [json.loads(r['body'])['prompt'] for r in server.received]
        titles = [TITLES[LIGHTHOUSE], TITLES[ORCHARD], 'Quick Start Guide']
        assert [f'the book "{t}"' in p for t, p in zip(titles, prompts)] == [True] * 3
        assert 'Failed: The Quince Orchard: A "Tale"' in job.details
        # nothing was written to the library by the job
        assert {i: db.cover(i) for i in ids} == before
        assert sorted(w.boxes) == [LIGHTHOUSE, GUIDE]
        failures = w.failures.text()
        assert 'Not made for 1 book' in failures and 'The Quince Orchard: A &quot;Tale&quot;' in failures
        assert 'safety system' in failures
        wait_until(lambda: thumbnails_loaded(w), timeout=30, state=lambda: said)
        assert w.thumbs[(LIGHTHOUSE, 'old')].text() == 'No cover'
        assert w.thumbs[(LIGHTHOUSE, 'new')].pixmap().height() == covers.THUMB_SIDE
        assert w.thumbs[(GUIDE, 'old')].pixmap().height() == covers.THUMB_SIDE
        assert 'Cost of the covers made: no cost: runs on this computer' in w.failures.text()
        w.resize(760, 640)
        shoot(w, artifacts / 'cover-review.png', 15_000, for_readme=True)
        # Apply selected: only the one ticked
        w.boxes[GUIDE].setChecked(False)
        staging = w.run.staging_dir
        w.apply_selected_button.click()
        wait_until(lambda: not covers.reviews and gui.library_view.refreshed, timeout=30, state=lambda: said)
        assert gui.library_view.refreshed == [[LIGHTHOUSE]]
        assert cover_size(db.cover(LIGHTHOUSE)) == (512, 768)
        assert db.cover(ORCHARD) == before[ORCHARD] and db.cover(GUIDE) == before[GUIDE]
        wait_until(lambda: not os.path.exists(staging), timeout=10, state=lambda: said)
        assert said['error'] == [] and gui.job_failures == []


def test_stopped_half_way(qapp, prefs, books, said):
    replies = [image_reply(png('#2980b9')), stalled(), image_reply(png('#27ae60')), image_reply(png('#c0392b'))]
    with ScriptedServer(replies) as server:
        use_images(prefs, server, at_once=1)
        gui = main_window(books)
        db = gui.current_db.new_api
        ids = [LIGHTHOUSE, ORCHARD, ALMANAC, GUIDE]
        before = {i: db.cover(i) for i in ids}
        job = start_bulk(gui, ids)
        wait_until(lambda: len(server.received) == 2, timeout=60, state=lambda: said)
        gui.job_manager.kill_job(job, None)  # the Jobs panel's Stop
        w = the_review()
        assert job.killed and len(server.received) == 2  # no request after Stop
        assert list(w.boxes) == [LIGHTHOUSE]
        assert 'Stopped before they were made: 3 books.' in w.failures.text()
        assert {i: db.cover(i) for i in ids} == before  # nothing applied
        staging = w.run.staging_dir
        w.discard_button.click()
        assert said['question'] == ['Discard the new cover? The book keeps its cover.']
        wait_until(lambda: not covers.reviews and not os.path.exists(staging), timeout=10, state=lambda: said)
        assert {i: db.cover(i) for i in ids} == before and gui.library_view.refreshed == []


def test_a_library_switch_while_the_job_runs(qapp, prefs, sandbox, books, said):
    other = make_library(sandbox, 'Library B', fts=False)
    with ScriptedServer([image_reply(png('#7f8c8d'), delay=2), image_reply(png('#f39c12'), delay=2)]) as server:
        use_images(prefs, server, at_once=2)
        gui = main_window(books)
        a = gui.current_db
        b = open_library(other)
        covers_a = {i: a.new_api.cover(i) for i in TITLES}
        covers_b = {i: b.new_api.cover(i) for i in TITLES}
        job = start_bulk(gui, [LIGHTHOUSE, ORCHARD])
        wait_until(lambda: len(server.received) == 2, timeout=60, state=lambda: said)
        # calibre switches to library B (as action.py passes it on) while the covers are being made
        covers.library_about_to_change(gui, str(b.library_id))
        gui.current_db = b
        covers.library_changed(gui)
        wait_until(lambda: job not in covers.jobs, timeout=60, state=lambda: said)
        QApplication.processEvents()
        assert covers.reviews == []  # no review in library B
        assert any('for the library Library A' in m and 'Review generated covers' in m
                   for m in gui.status_bar.messages), gui.status_bar.messages
        assert {i: b.new_api.cover(i) for i in TITLES} == covers_b
        assert {i: a.new_api.cover(i) for i in TITLES} == covers_a
        # asked for in library B, the review names where the covers wait, and applies nothing here
        covers.review_covers(gui)
        wait_until(lambda: said['info'], timeout=30, state=lambda: said)
        assert 'Some are waiting for: Library A' in said['info'][0][0] and covers.reviews == []
        # once library A is open again, they are there to review and apply
        covers.library_about_to_change(gui, str(a.library_id))
        gui.current_db = a
        gui.status_bar.messages.clear()
        covers.library_changed(gui)
        wait_until(lambda: gui.status_bar.messages, timeout=30, state=lambda: said)
        assert '2 new covers wait for your review' in gui.status_bar.messages[0]
        covers.review_covers(gui)
        w = the_review()
        assert sorted(w.boxes) == [LIGHTHOUSE, ORCHARD] and 'Library A' in w.header.text()
        # a switch closes the review, and keeps the covers for later
        covers.library_about_to_change(gui, str(b.library_id))
        wait_until(lambda: not covers.reviews, timeout=10, state=lambda: said)
        assert [r.library_id for r in staged_runs()].count(str(a.library_id)) == 1
        covers.review_covers(gui)
        w = the_review()
        w.apply_all_button.click()
        assert said['question'] == ['Replace the covers of 2 books with the new ones? Undo cover change can put '
                                    'the old ones back.']
        wait_until(lambda: not covers.reviews and gui.library_view.refreshed, timeout=30, state=lambda: said)
        assert cover_size(a.new_api.cover(LIGHTHOUSE)) == cover_size(a.new_api.cover(ORCHARD)) == (512, 768)
        assert {i: b.new_api.cover(i) for i in TITLES} == covers_b
        assert not [r for r in staged_runs() if r.library_id == str(a.library_id)]


def test_apply_all_asks_first(qapp, prefs, books, said):
    with ScriptedServer([image_reply(png('#1abc9c')), image_reply(png('#9b59b6'))]) as server:
        use_images(prefs, server, at_once=2)
        gui = main_window(books)
        db = gui.current_db.new_api
        before = {i: db.cover(i) for i in TITLES}
        start_bulk(gui, [LIGHTHOUSE, ALMANAC])
        w = the_review()
        said['answer'] = False
        w.apply_all_button.click()
        assert said['question'][0].startswith('Replace the covers of 2 books')
        QApplication.processEvents()
        assert covers.reviews == [w] and {i: db.cover(i) for i in TITLES} == before
        w.reject()  # closed: kept for later
        wait_until(lambda: not covers.reviews, timeout=10, state=lambda: said)
        assert [len(r.made) for r in staged_runs() if r.library_id == str(db.library_id)] == [2]


def test_a_job_that_made_nothing(qapp, prefs, books, said):
    """Every book failed: the review names each, in words, and keeps nothing once closed."""
    with ScriptedServer([refusal('No credit left on this account.')]) as server:
        use_images(prefs, server)
        gui = main_window(books)
        start_bulk(gui, [ORCHARD])
        w = the_review()
        assert w.boxes == {} and not w.apply_all_button.isEnabled() and not w.apply_selected_button.isEnabled()
        assert 'The Quince Orchard: A &quot;Tale&quot;' in w.failures.text() and 'No credit left' in w.failures.text()
        staging = w.run.staging_dir
        w.reject()
        wait_until(lambda: not os.path.exists(staging), timeout=10, state=lambda: said)
        assert said['question'] == [] and gui.library_view.refreshed == []


def test_covers_of_a_run_calibre_closed_on_are_offered_for_review(qapp, prefs, books, said):
    """calibre closed (or crashed) while a job made covers: what it made is kept in the cache, unfinished.
    The next calibre offers it for review, as a finished run is, instead of leaving it there for ever;
    a run this calibre is still making is not offered."""
    from calibre_plugins.bookai.covers.bulk import (
        MANIFEST, MANIFEST_VERSION, CoverOutcome, load_run, new_staging_dir, outcome_json,
    )
    gui = main_window(books)
    library_id = str(gui.current_db.library_id)
    staging = new_staging_dir()
    with open(os.path.join(staging, f'{LIGHTHOUSE}.png'), 'wb') as f:
        f.write(png('#2e86c1'))
    made = CoverOutcome(LIGHTHOUSE, TITLES[LIGHTHOUSE], 'made', os.path.join(staging, f'{LIGHTHOUSE}.png'))
    with open(os.path.join(staging, MANIFEST), 'w') as f:  # as a run writes it after its first book
        json.dump({'version': MANIFEST_VERSION, 'library_id': library_id, 'library_path': str(books),
                   'started': time.time() - 60, 'written': time.time() - 50, 'finished': False, 'aspect': '3:4',
                   'total': 3, 'outcomes': [outcome_json(made)]}, f)
    assert load_run(staging).finished is False
    covers.filling.add(staging)  # as if this calibre's own job were still making it
    try:
        covers.review_covers(gui)
        wait_until(lambda: said['info'], timeout=30, state=lambda: said)
        assert covers.reviews == [] and 'No new covers are waiting for review.' in said['info'][0][0]
    finally:
        covers.filling.discard(staging)
    covers.review_covers(gui)  # no job of this calibre makes it: calibre was closed while it ran
    w = the_review()
    assert w.run.staging_dir == staging and sorted(w.boxes) == [LIGHTHOUSE]
    w.reject()


def test_no_image_from_outside_is_decoded_in_calibres_process(qapp, prefs, books, said, monkeypatch):
    """Every image is decoded by Book AI in calibre's worker process (issue 26): in calibre's own, the
    windows make QImages from Book AI's rows (gui.image_decoding.qimage, on the GUI thread), and the
    only decoding is calibre's, of what db.set_cover is given, on the GUI thread: Book AI's own
    baseline JPEGs (and, for Undo, the covers calibre itself stored). In the PyQt of Linux
    distributions a Qt call keeps Python's lock, so a thread waiting there on one of Qt's locks can
    hang calibre for good (gui.worker's note). Through the single window's Generate and Use this
    cover, the review's thumbnails, Apply all and Undo."""
    import threading

    import calibre.utils.img as calibre_img
    from calibre.db.cache import Cache

    from calibre_plugins.bookai.core.images import structure
    from calibre_plugins.bookai.gui import cover_dialog, image_decoding
    from calibre_plugins.bookai.main_window import cover_actions as mw

    assert not hasattr(cover_dialog, 'QImageReader') and not hasattr(mw, 'QImageReader')
    where = []  # (what, on the GUI thread?, the bytes calibre decoded)

    class Reader(calibre_img.QImageReader):
        def read(self):
            data = bytes(self.device().data()) if self.device() is not None else b''
            where.append(('calibre decodes', threading.current_thread() is threading.main_thread(), data))
            return super().read()
    monkeypatch.setattr(calibre_img, 'QImageReader', Reader)
    set_cover = Cache.set_cover

    def recorded(self, book_id_data_map):
        where.append(('set_cover', threading.current_thread() is threading.main_thread(), b''))
        return set_cover(self, book_id_data_map)
    monkeypatch.setattr(Cache, 'set_cover', recorded)
    qimage = image_decoding.qimage

    def made(pixels):
        where.append(('qimage', threading.current_thread() is threading.main_thread(), b''))
        return qimage(pixels)
    monkeypatch.setattr(cover_dialog, 'qimage', made)
    monkeypatch.setattr(mw, 'qimage', made)

    replies = [image_reply(png('#8e44ad')), image_reply(png('#16a085')), image_reply(png('#d35400'))]
    with ScriptedServer(replies) as server:
        use_images(prefs, server, at_once=2)
        gui = main_window(books)
        db = gui.current_db.new_api
        originals = {GUIDE: db.cover(GUIDE)}
        gui.library_view.selected = [GUIDE]

        def use(d):
            d.generate_button.click()
            when(lambda: not d.busy, d.use_button.click)
        when_modal(use, CoverDialog)
        covers.generate_cover(gui)
        wait_until(lambda: gui.library_view.refreshed, timeout=60, state=lambda: said)
        job = start_bulk(gui, [LIGHTHOUSE, ORCHARD])
        w = the_review()
        assert job.description == 'Book AI: covers for 2 books'
        wait_until(lambda: thumbnails_loaded(w), timeout=60, state=lambda: said)
        w.apply_all_button.click()
        wait_until(lambda: not covers.reviews and len(gui.library_view.refreshed) == 2, timeout=60, state=lambda: said)
        covers.undo_covers(gui, [GUIDE, LIGHTHOUSE, ORCHARD])
        wait_until(lambda: len(gui.library_view.refreshed) == 3, timeout=30, state=lambda: said)
        assert gui.library_view.refreshed[-1] == [LIGHTHOUSE, ORCHARD, GUIDE]
        assert not db.cover(LIGHTHOUSE) and db.cover(GUIDE) == originals[GUIDE] and said['error'] == []
    kinds = [w for w, _, _ in where]
    # 1 image shown + the review's thumbnails (2 new covers, and the old ones: a book without one has
    # none); 3 covers put on books and 3 put back
    assert kinds.count('qimage') >= 3 and kinds.count('set_cover') == 6, kinds
    assert all(on_gui for _, on_gui, _ in where), where
    decoded_by_calibre = [data for what, _, data in where if what == 'calibre decodes' and data]
    assert len(decoded_by_calibre) >= 4
    for data in decoded_by_calibre:  # Book AI's own JPEGs, and the old cover calibre stored itself
        found = structure(data, 'It')
        assert found.mime == 'image/jpeg' and not found.progressive and found.scans == 1


def test_the_review_with_crafted_covers_says_each_and_loses_nothing(qapp, prefs, books, said):
    """Issue 26 in the review: new covers that are the crafted images (an 89-byte PNG with damaged
    pixel data, 28 GB of zeros in 29 MB, 8192x8192 pixels, 100,000 scans, a progressive CMYK JPEG of
    8192x8192, 10,000 scans within the pixel bound) beside a good one. Their thumbnails say why they
    cannot be shown; Apply all puts on the good one only, names each other book with its sentence,
    and every other book keeps its cover byte for byte; Undo still puts the good one's old cover back."""
    from calibre.ebooks.metadata.book.base import Metadata

    from calibre_plugins.bookai.covers.bulk import MANIFEST, MANIFEST_VERSION, CoverOutcome, load_run, new_staging_dir
    from calibre_plugins.bookai.covers.bulk import outcome_json
    from helpers.images import jpeg_progressive, png_bomb, png_damaged, png_of_side
    gui = main_window(books)
    db = gui.current_db.new_api
    library_id = str(db.library_id)
    crafted = [('png', png_damaged(), 'is damaged (its pixel data cannot be unpacked)'),
               ('png', png_bomb(), 'holds far more data than its 64x64 pixels need'),
               ('png', png_of_side(8192, 8192), 'has 8192x8192 pixels'),
               ('jpg', jpeg_progressive(8192, 8192, 3, 100_000), 'has 8192x8192 pixels'),
               ('jpg', jpeg_progressive(8192, 8192, 4), 'has 8192x8192 pixels'),
               ('jpg', jpeg_progressive(2048, 2048, 3, 10_000), 'is a JPEG of more than 100 scans')]
    ids = [db.create_book_entry(Metadata(f'Crafted {i}', ['Ann Author'])) for i in range(len(crafted))]
    db.set_cover({book_id: png('#555555', 60, 90) for book_id in ids[::2]})  # some had a cover, some none
    good = GUIDE
    db.set_cover({good: png('#34495e', 400, 600)})  # an old cover to see beside the new one
    staging = new_staging_dir()
    outcomes = []
    for book_id, (ext, data, _words) in zip(ids, crafted):
        path = os.path.join(staging, f'{book_id}.{ext}')
        with open(path, 'wb') as f:
            f.write(data)
        outcomes.append(CoverOutcome(book_id, f'Crafted {ids.index(book_id)}', 'made', path))
    with open(os.path.join(staging, f'{good}.png'), 'wb') as f:
        f.write(png('#1abc9c'))
    outcomes.append(CoverOutcome(good, 'Quick Start Guide', 'made', os.path.join(staging, f'{good}.png')))
    with open(os.path.join(staging, MANIFEST), 'w') as f:
        json.dump({'version': MANIFEST_VERSION, 'library_id': library_id, 'library_path': str(books),
                   'started': time.time(), 'written': time.time(), 'finished': True, 'aspect': '2:3',
                   'total': len(outcomes), 'outcomes': [outcome_json(o) for o in outcomes]}, f)
    before = {book_id: db.cover(book_id) for book_id in ids + [good]}
    w = covers.open_review(gui, load_run(staging))
    wait_until(lambda: thumbnails_loaded(w), timeout=120, state=lambda: said)
    for book_id, (_ext, _data, words) in zip(ids, crafted):
        label = w.thumbs[(book_id, 'new')]
        assert label.text() == 'Cannot be shown' and label.toolTip().startswith('The new cover ') and (
            words in label.toolTip()), label.toolTip()
    assert w.thumbs[(good, 'new')].pixmap().height() == covers.THUMB_SIDE
    assert w.thumbs[(good, 'old')].pixmap().height() == covers.THUMB_SIDE
    w.apply_all_button.click()
    wait_until(lambda: not covers.reviews and gui.library_view.refreshed, timeout=120, state=lambda: said)
    assert gui.library_view.refreshed == [[good]]
    assert cover_size(db.cover(good)) == (512, 768) and db.cover(good) != before[good]
    (failures,) = said['error']
    for i, (book_id, (_ext, _data, words)) in enumerate(zip(ids, crafted)):
        assert f'Crafted {i}: The new cover ' in failures and words in failures
        assert db.cover(book_id) == before[book_id]  # byte for byte, or still none
    assert CoverUndo().books(library_id) == [good]
    covers.undo_covers(gui, ids + [good])
    wait_until(lambda: len(gui.library_view.refreshed) == 2, timeout=60, state=lambda: said)
    assert db.cover(good) == before[good] and CoverUndo().books(library_id) == []
    assert len(said['error']) == 1  # Undo: nothing to say for the books that had nothing to undo


def test_the_window_the_job_and_the_command_line_send_the_same_request(qapp, prefs, books, said, tmp_path):
    """One cover pipeline for every way in (covers.making): for the same book and choices, the cover
    window's Generate, the many-books job and `cover` send the image server the same request, byte
    for byte: the style, the extra instructions, the description, the title through its calibre
    template, the aspect ratio."""
    import io

    from calibre_plugins.bookai import cli
    with ScriptedServer([image_reply(png('#2c3e50'))] * 3) as server:
        use_images(prefs, server)
        prefs['cover_style'] = 'noir'
        prefs['cover_aspect'] = '3:4'
        prefs['cover_description'] = True
        prefs['cover_instructions'] = 'Deep blues only.'
        prefs['cover_templates'] = {'title': '{title:uppercase()}'}
        gui = main_window(books)
        gui.library_view.selected = [GUIDE]

        def generate(d):
            d.generate_button.click()
            when(lambda: not d.busy, d.reject)
        when_modal(generate, CoverDialog)
        covers.generate_cover(gui)
        assert len(server.received) == 1, said
        start_bulk(gui, [GUIDE])
        the_review().close()
        assert len(server.received) == 2, said
        out, err = io.StringIO(), io.StringIO()
        code = cli.main(['cover', '--library', str(books), str(GUIDE), '--out', str(tmp_path / 'cover.png')],
                        stdout=out, stderr=err)
        assert code == 0, err.getvalue()
    window, job, command_line = [(r['path'], r['body']) for r in server.received]
    assert window == job == command_line
    sent = json.loads(window[1])
    assert window[0] == '/v1/images/generations'
    for part in ('QUICK START GUIDE', 'Deep blues only.', 'Book description:', 'in noir style'):
        assert part in sent['prompt'], sent['prompt']
