# License: GPLv3 Copyright: the Book AI developers
""""Recap since you last read" in the E-book viewer's panel, offscreen: the hook's tab (its
Placeholder, which follows the viewer's place) and Book AI's real panel around a stand-in for the
viewer, at a place in the real novel with a sentinel right after it; a real llama-server (the tiny
model) behind a RecordingProxy. The offer is shown after a break as long as the setting, not
before; nothing is sent until the reader clicks; then the recap since the earlier place goes, with
nothing after the place now; the record then says the book was seen now, there. "Previously in
the series" for a book of a library."""

import time

import pytest

from calibre_plugins.bookai.conversation import last_read
from calibre_plugins.bookai.grounding.extract import read_epub
from helpers.calibre_gui import StandInViewer, wait_until
from helpers.peers import LlamaServer, RecordingProxy, use_server
from helpers.sentinels import bodies_with_sentinels, epub_with_sentinel, place_before_sentinel
from helpers.series import SAGA, saga_library

TINY = ('--temp', '0', '-n', '16', '--override-kv', 'llama.context_length=int:65536')
DAY = 86400


class WebView:
    def __init__(self, cfi: str) -> None:
        self.current_cfi = cfi


@pytest.fixture
def record(tmp_path, monkeypatch):
    path = str(tmp_path / 'cache' / 'last-read.json')
    monkeypatch.setattr(last_read, 'default_file', lambda: path)
    return last_read.LastReadRecord(path)


def opened(tmp_path, record, days_ago: float):
    """The novel open in a stand-in viewer at the place before the sentinel, last read days_ago
    in a reading that began at an earlier place and ended here; the hook's tab shown (the panel built): (tab, book, place, earlier cfi)."""
    from calibre_plugins.bookai.viewer.hook import Placeholder
    path, _before = epub_with_sentinel(tmp_path / 'novel.epub', 0.02)
    book = read_epub(str(path))
    place = place_before_sentinel(book)
    now_cfi, earlier_cfi = book.cfi_at(int(place * book.length) - 1), book.cfi_at(int(0.008 * book.length))
    key = last_read.book_key('', 0, 'EPUB', str(path))
    # that last reading began at the earlier place and ended here, where the viewer opens it again
    record.put(key, now_cfi, time.time() - days_ago * DAY, began=earlier_cfi)
    viewer = StandInViewer(path, 'Pride and Prejudice', ('Jane Austen',))
    viewer.web_view = WebView(now_cfi)
    tab = Placeholder(viewer)
    tab.place_changed(now_cfi)  # the viewer opened the book there
    tab.resize(460, 760)
    tab.show()  # the panel is built
    assert tab.panel is not None
    wait_until(tab.panel.isVisible)
    return tab, key, now_cfi


def test_the_offer_after_a_break_sends_nothing_until_clicked(qapp, prefs, tmp_path, record):
    prefs['recap_offer_days'] = 7
    with LlamaServer('tiny', alias='tiny', ctx=65536, extra_args=TINY) as server, \
            RecordingProxy(server.base_url) as proxy:
        use_server(prefs, proxy.base_url)
        tab, key, now_cfi = opened(tmp_path, record, 10.5)
        panel = tab.panel
        assert panel.offer_row.isVisibleTo(tab) and panel.offer_label.text() == 'You last read this book 10 days ago.'
        assert record.get(key).cfi == now_cfi  # seen now, there: kept for the next time
        wait_until(lambda: True, timeout=1)
        assert proxy.received == []  # nothing is sent until the reader asks
        panel.offer_button.click()
        p = panel.panel
        wait_until(lambda: not p.streaming and any(t.answered or t.error for t in p.conv.turns), timeout=600,
                   state=lambda: p.chat.toPlainText()[-500:])
        assert p.conv.turns[-1].answered, p.chat.toPlainText()[-800:]
        assert not panel.offer_row.isVisibleTo(tab)  # taken: gone
        recap = proxy.chat_requests()[-1]['messages'][-1]['content']
        assert 'I stopped reading this book for a while' in recap  # since the earlier place
        assert proxy.chat_requests() and not bodies_with_sentinels(proxy.received)
        tab.close()


def test_no_offer_before_the_break_nor_when_turned_off(qapp, prefs, tmp_path, record):
    prefs['recap_offer_days'] = 7
    tab, key, now_cfi = opened(tmp_path, record, 6)
    assert not tab.panel.offer_row.isVisibleTo(tab)
    tab.panel.book_opened(last_read.LastRead(time.time() - 8 * DAY, now_cfi))  # another book, a week ago
    assert tab.panel.offer_row.isVisibleTo(tab)
    tab.panel.offer_dismiss.click()
    assert not tab.panel.offer_row.isVisibleTo(tab)
    prefs['recap_offer_days'] = 0  # never: no offer, and no record kept
    tab.panel.book_opened(last_read.LastRead(time.time() - 80 * DAY, now_cfi))
    assert not tab.panel.offer_row.isVisibleTo(tab)
    seen = record.get(key).seen
    tab.place_changed(now_cfi.replace(')', '/2)'))
    tab.keep_place()
    assert record.get(key).seen == seen
    tab.close()


def test_previously_in_the_series_for_a_book_of_a_library(qapp, prefs, sandbox, tmp_path):
    """For a book of a library that the viewer's metadata puts in a series, the panel offers the
    series' recap beside "Who or what is this?" (the discussion window's test sends it), and opens
    the library only when asked: for the first book, it then says in words that the library holds
    no earlier one, and sends nothing; a book in no series, or from outside a library, has none."""
    from calibre_plugins.bookai.viewer.panel import AskPanel
    cache, lib = saga_library(sandbox, tmp_path)
    use_server(prefs, 'http://127.0.0.1:9')  # set up, never reached: nothing is sent
    panels = {}
    for book_id, series in ((3, 'The Saga'), (1, 'The Saga'), (2, '')):
        viewer = StandInViewer(cache.format_abspath(book_id, 'EPUB'), SAGA[book_id - 1][0], ('Ann Sailor',))
        viewer.current_book_data['metadata']['series'] = series
        viewer.current_book_data['book_library_details'] = {
            'dbpath': str(lib / 'metadata.db'), 'book_id': book_id, 'fmt': 'EPUB', 'library_id': cache.library_id}
        panels[book_id] = AskPanel(viewer)
    assert panels[3].panel.series_button.isEnabled() and panels[1].panel.series_button.isEnabled()
    assert 'earlier books of The Saga' in panels[3].panel.series_button.toolTip()
    assert panels[3].actions_grid.indexOf(panels[3].panel.series_button) >= 0  # not in the row under the chat
    assert panels[3].panel.bar.indexOf(panels[3].panel.series_button) < 0
    assert panels[2].panel.series_button is None
    first = panels[1].panel
    first.series_button.click()
    wait_until(lambda: 'no earlier book of the series The Saga' in first.chat.toPlainText() and not first.streaming,
               state=lambda: first.chat.toPlainText()[-400:])
    assert not first.conv.turns
    outside = AskPanel(StandInViewer(tmp_path / '1.epub'))
    assert outside.panel.series_button is None
    for p in (*panels.values(), outside):
        p.close()
