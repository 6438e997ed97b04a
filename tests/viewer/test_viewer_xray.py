# License: GPLv3 Copyright: the Book AI developers
"""The X-Ray tab and "Who or what is this?" of the E-book viewer's panel, offscreen: Book AI's real
panel around a stand-in for the viewer at a place in the real novel (tests/hosts/test_viewer_panel.py
has calibre's real viewer). The X-Ray is made by a scripted model behind a real provider
(helpers.scripted_model: it names the novel's people as the passages sent hold them); "Who or what
is this?" is answered by a real llama-server, and no request it receives holds the text after the
place."""

import re
import shutil
import threading
import zipfile

import pytest
from qt.core import QTextCursor, QUrl

from calibre_plugins.bookai.conversation import xray as xr
from calibre_plugins.bookai.grounding.extract import read_epub
from helpers.calibre_gui import StandInViewer, shoot, wait_until
from helpers.novel import AUTHOR, EPUB, TITLE
from helpers.peers import RecordingProxy, use_server
from helpers.scripted_model import NOVEL_ROSTER, ScriptedModel, roster_answer

TINY_TOKENS, TINY_CONTEXT = 16, 32768  # the tiny model reads a character as a token: passages of the novel fit
SENTINEL = 'Zebediah Quartermaine'
# what a model that knows the book might claim at any place: never shown before the text read names it
SPOILERS = [{'name': 'Mr. Wickham', 'description': 'He will elope with Lydia.'}, {'name': 'Pemberley', 'kind': 'place'}]


class WebView:
    """The viewer's web view: its place (a CFI), and where Book AI sent it."""

    def __init__(self, cfi: str) -> None:
        self.current_cfi = cfi
        self.went: list[tuple[str, object]] = []

    def goto_cfi(self, cfi: str, *args) -> None:
        self.went.append(('cfi', cfi))

    def goto_frac(self, frac: float) -> None:
        self.went.append(('frac', frac))


def viewer_at(path, chapter: int | None):
    """A stand-in viewer showing the book at path at the start of chapter (None: at no place that
    maps to its text), and the book as Book AI reads it."""
    book = read_epub(path)
    viewer = StandInViewer(path, TITLE, (AUTHOR,))
    viewer.web_view = WebView(book.cfi_at(book.chapters[chapter].start) if chapter is not None else '')
    return viewer, book


def move_to(viewer, book, chapter: int) -> None:
    viewer.web_view.current_cfi = book.cfi_at(book.chapters[chapter].start)


def xray_tab(viewer):
    """The panel, shown on its X-Ray tab, once it has shown what is kept."""
    from calibre_plugins.bookai.viewer.panel import AskPanel
    panel = AskPanel(viewer)
    panel.resize(420, 760)
    panel.show()
    panel.tabs.setCurrentWidget(panel.xray)
    x = panel.xray
    wait_until(lambda: x.work is None and (x.xray is not None or x.status.text() != ''), state=lambda: state(x))
    return panel


def state(x):
    return x.summary.text(), x.status.text(), x.build_button.text()


def build(x):
    x.build_button.click()
    assert x.build_button.text() == '&Stop'
    wait_until(lambda: x.work is None, state=lambda: state(x))


def listed(x):
    """The list as shown: {group heading: [names]}."""
    out = {}
    for g in range(x.list.topLevelItemCount()):
        group = x.list.topLevelItem(g)
        out[group.text(0)] = [group.child(i).text(0) for i in range(group.childCount())]
    return out


def tooltips(browser) -> set[str]:
    """The tooltips of the text a QTextBrowser shows."""
    doc, found = browser.document(), set()
    cursor = QTextCursor(doc)
    for i in range(1, doc.characterCount()):
        cursor.setPosition(i)
        found.add(cursor.charFormat().toolTip())
    return found - {''}


def names(x):
    return {n for group in listed(x).values() for n in group}


@pytest.fixture
def novel_copy(tmp_path):
    """The novel, in a file of its own (the text cache and the X-Ray know a book by its file here)."""
    path = tmp_path / 'pride-and-prejudice.epub'
    shutil.copy(EPUB, path)
    return path


def test_the_xray_tab_builds_lists_searches_and_goes_to_places(qapp, prefs, novel_copy, artifacts):
    roster = [dict(r, description=r['description'] + ' <img src=x> & "so"') if r['name'] == 'Mr. Darcy' else r
              for r in NOVEL_ROSTER]
    viewer, book = viewer_at(novel_copy, 7)  # Chapters 1 to 6 read, and the title page
    with ScriptedModel(roster_answer(roster, SPOILERS)) as model:
        use_server(prefs, model.url)
        panel = xray_tab(viewer)
        x = panel.xray
        # shown: nothing kept yet, and nothing sent to see that
        assert 'No X-Ray is kept for this book yet' in x.summary.text() and '7 chapters' in x.summary.text()
        assert x.build_button.text() == 'Build X-Ray' and not model.requests and not names(x)
        seen = []
        x.progressed.connect(lambda *a: seen.append(a))
        build(x)
        assert len(model.requests) == 7, state(x)
        assert seen[0] == (0, 7, book.chapters[0].title) and seen[1] == (1, 7, 'Chapter 1') and seen[-1] == (7, 7, '')
        assert '7 requests sent: no cost: runs on this computer.' in x.status.text()
        shown = listed(x)
        assert list(shown) == [k for k in shown if k.startswith(('Characters (', 'Places (', 'Terms ('))]
        assert {'Elizabeth Bennet', 'Mrs. Bennet', 'Mr. Bingley', 'Mr. Darcy'} <= set(shown[next(
            k for k in shown if k.startswith('Characters'))])
        assert {'Netherfield', 'Longbourn', 'Meryton'} <= names(x)
        # Wickham (Chapter 15), Mr. Collins (13) come later; Pemberley's name is in Chapter 6, so it is there
        assert not names(x) & {'Mr. Wickham', 'Mr. Collins', 'the entail'}
        assert x.build_button.text() == 'Update X-Ray' and x.xray.complete
        # the search: by names (any of them), then descriptions, as `xray --search`
        x.search.setText('lizzy')
        assert names(x) == {'Elizabeth Bennet'} and x.entity.name == 'Elizabeth Bennet'
        text = x.details.toPlainText()
        assert 'Elizabeth, Lizzy, Eliza' in text and 'lively and quick to judge (as of Chapter 6)' in text
        assert 'First appears: Chapter 1, at ' in text and re.search(r'In \d of 7 chapters read:', text)
        html = x.details.toHtml()
        assert 'bookai:first' in html and 'bookai:cite/0' in html
        # the bar: a cell per chapter read, its chapter in its tooltip
        counts = x.entity.appearances(x.xray.chapters_read)
        assert tooltips(x.details) == {f'{book.chapters[n].title}: named in {c} passage{"" if c == 1 else "s"}'
                                       for n, c in zip(x.xray.chapters_read, counts)}
        assert counts[0] == 0 and all(counts[1:])
        # the first appearance and a cited passage: the viewer goes there
        liz = x.entity
        x.details.anchorClicked.emit(QUrl('bookai:first'))
        x.details.anchorClicked.emit(QUrl('bookai:cite/1'))
        assert viewer.web_view.went == [('cfi', liz.first.cfi), ('cfi', liz.citations[1].place.cfi)]
        assert liz.first.cfi.startswith('epubcfi(/') and liz.first.chapter == 'Chapter 1'
        x.search.setText('judge')  # in her description only
        assert names(x) == {'Elizabeth Bennet'}
        x.search.setText('nobody at all')
        assert not names(x) and 'Nothing in the X-Ray matches "nobody at all".' in x.details.toPlainText()
        # a model's words are text, never HTML
        x.search.setText('darcy')
        assert '<img src=x> & "so"' in x.details.toPlainText() and '<img' not in x.details.toHtml()
        x.search.setText('')
        x.show_named('Elizabeth Bennet')
        shoot(panel, artifacts / 'viewer-xray-panel.png', 10_000)
        panel.close()

        # the tab of a new panel shows what was kept, and sends nothing
        asked = len(model.requests)
        panel = xray_tab(viewer)
        assert 'Elizabeth Bennet' in names(panel.xray) and len(model.requests) == asked
        assert panel.xray.build_button.text() == 'Update X-Ray'
        # the reader moves on: two chapters are not in it; Update reads those alone
        move_to(viewer, book, 9)
        panel.xray.refresh()
        wait_until(lambda: panel.xray.work is None)
        assert '2 chapters you have read are not in the X-Ray yet' in panel.xray.summary.text()
        build(panel.xray)
        assert len(model.requests) == asked + 2 and panel.xray.xray.complete
        assert panel.xray.xray.chapters_read == tuple(range(9))
        panel.close()


def test_stop_keeps_the_chapters_read(qapp, prefs, novel_copy):
    viewer, book = viewer_at(novel_copy, 7)
    good, release = roster_answer(NOVEL_ROSTER), threading.Event()

    def answer(request):
        if len(model.requests) == 3:  # the third chapter: answered only once Stop was pressed
            release.wait(60)
        return good(request)
    with ScriptedModel(answer) as model:
        use_server(prefs, model.url)
        panel = xray_tab(viewer)
        x = panel.xray
        x.build_button.click()
        wait_until(lambda: len(model.requests) == 3 and 'Chapter 2 (3 of 7)' in x.status.text(), state=lambda: state(x))
        x.build_button.click()  # Stop
        wait_until(lambda: x.work is None and 'Stopped' in x.status.text(), state=lambda: state(x))
        release.set()
    assert x.status.text() == 'Stopped: the chapters read so far are kept for the X-Ray.'
    assert x.xray.missing == (2, 3, 4, 5, 6) and x.build_button.text() == 'Update X-Ray'
    assert '5 chapters you have read are not in the X-Ray yet' in x.summary.text()
    assert {'Elizabeth Bennet', 'Mr. Bingley'} <= names(x)  # from the title page and Chapter 1, kept
    panel.close()


def test_with_no_place_known_nothing_is_sent(qapp, prefs, novel_copy):
    viewer, book = viewer_at(novel_copy, None)
    with ScriptedModel(roster_answer(NOVEL_ROSTER)) as model:
        use_server(prefs, model.url)
        panel = xray_tab(viewer)
        x = panel.xray
        assert x.status.text() == ('Book AI does not know where you are in this book, so it cannot keep the X-Ray to '
                                   'what you have read: calibre\'s E-book viewer saves your place when you close the '
                                   'book. Nothing was sent.')
        x.build_button.click()
        wait_until(lambda: x.work is None)
        assert 'does not know where you are' in x.status.text()
        # nor for "Who or what is this?"
        panel.selection_changed('Mr. Bingley')
        panel.tabs.setCurrentIndex(0)
        assert panel.who_button.isEnabled()
        panel.who_button.click()
        p = panel.panel
        wait_until(lambda: not p.streaming)
        assert 'does not know where you are' in p.chat.toPlainText() and not p.conv.turns
        assert not model.requests
    panel.close()


def test_with_no_provider_it_says_so(qapp, prefs, novel_copy):
    prefs['provider'] = ''
    viewer, book = viewer_at(novel_copy, 7)
    panel = xray_tab(viewer)
    x = panel.xray
    assert 'No AI provider is chosen yet. Nothing is sent anywhere until you set one up.' in x.status.text()
    assert 'href="settings"' in x.status.text()
    x.build_button.click()
    assert x.work is None and 'No AI provider is chosen yet' in x.status.text()
    panel.close()


def with_sentinel(path, chapters=(7, 20)):
    """The EPUB at path with a paragraph naming SENTINEL and Mr. Bingley first in each of chapters (the
    novel's Chapter n is in the n-th file)."""
    copy = path.with_name('with-sentinel.epub')
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(copy, 'w') as dst:
        for info in src.infolist():
            data = src.read(info)
            m = re.fullmatch(r'pride-and-prejudice_split_(\d+)\.html', info.filename)
            if m and int(m.group(1)) in chapters:
                data = re.sub(rb'(</h2>)', b'\\1<p class="calibre1">' + SENTINEL.encode() +
                              b' came to Meryton and called on Mr. Bingley.</p>', data, count=1)
                assert SENTINEL.encode() in data
            dst.writestr(info, data)
    return copy


def test_who_or_what_is_this_sends_only_what_was_read(qapp, prefs, novel_copy, tiny, artifacts):
    """Answered by a real llama-server, from the X-Ray kept (made by the scripted model for the same
    provider and model) and the passages before the place: the sentinel after it is in no request."""
    path = with_sentinel(novel_copy)
    viewer, book = viewer_at(path, 7)
    assert SENTINEL in book.paragraphs[next(i for i, p in enumerate(book.paragraphs) if p.chapter == 7) + 1].text
    prefs['book_text_budget'] = 600
    with ScriptedModel(roster_answer(NOVEL_ROSTER)) as model:
        use_server(prefs, model.url)
        panel = xray_tab(viewer)
        build(panel.xray)
        assert 'Mr. Bingley' in names(panel.xray)
        assert not [r for r in model.requests if SENTINEL in str(r)]
    panel.tabs.setCurrentIndex(0)
    panel.xray.show_named('Elizabeth Bennet')
    with RecordingProxy(tiny.base_url) as proxy:
        use_server(prefs, proxy.base_url)  # the same provider and model: the same X-Ray
        assert not panel.who_button.isEnabled()  # nothing selected yet
        panel.selection_changed('Mr. Bingley')
        assert panel.who_button.isEnabled()
        panel.who_button.click()
        p = panel.panel
        wait_until(lambda: not p.streaming and p.conv.turns, state=lambda: p.chat.toPlainText()[-500:])
        bodies = [body.decode('utf-8') for _method, _path, body in proxy.received]
    turn = p.conv.turns[-1]
    assert not turn.error and turn.spoiler_safe and turn.places, p.chat.toPlainText()[-500:]
    (chat,) = proxy.chat_requests()
    asked = chat['messages'][-1]['content']
    assert 'Who or what is "Mr. Bingley" in this book, as far as I have read?' in asked
    assert 'What the X-Ray says of it so far: Mr. Bingley (character; also called Bingley): A rich young man' in asked
    assert '<book_passages>' in asked and 'Bingley' in asked.split('<book_passages>', 1)[1]
    assert not [b for b in bodies if 'Zebediah' in b or 'Quartermaine' in b]  # in no request, in no form
    place = book.fraction(book.offset_of_cfi(viewer.web_view.current_cfi))
    assert all(pl.position < place for pl in turn.places)
    assert panel.xray.entity.name == 'Mr. Bingley'  # the X-Ray tab shows whom the selection names
    shoot(panel, artifacts / 'viewer-who-is.png', 10_000)
    panel.close()


def test_the_kept_xray_is_the_command_lines(qapp, prefs, novel_copy):
    """One Qt-free path: what the tab made is what conversation.xray keeps for that key."""
    viewer, book = viewer_at(novel_copy, 3)
    with ScriptedModel(roster_answer(NOVEL_ROSTER)) as model:
        use_server(prefs, model.url)
        panel = xray_tab(viewer)
        build(panel.xray)
    key = panel.xray.key
    assert key == xr.XRayKey(str(novel_copy), 'openai_compatible', 'tiny', key.language)
    kept = xr.cached_xray(book, book.fraction(book.chapters[3].start), key)
    assert kept.complete and kept.entities == panel.xray.xray.entities
    panel.close()
