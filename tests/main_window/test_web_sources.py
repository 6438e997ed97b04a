# License: GPLv3 Copyright: the Book AI developers
"""The web pages an answer used, under that answer, and calibre's notice that AI answers can
be inaccurate, in the discussion window (offscreen, on a real calibre library).

aimock, the independent fake, cannot send web-search citations for any provider (its OpenAI
Responses streams always carry "annotations": [], and it ignores web searches for Anthropic
and Gemini), so the answer is OpenAI's Responses stream of a web search as OpenAI documents
it (response.output_text.annotation.added with url_citation annotations), replayed by a
scripted server: one title hostile (markup, terminal escapes, a right-to-left override),
one page named twice, one address that is no web page."""

import json

import pytest
from qt.core import QApplication, QEvent, QMouseEvent, QPointF, Qt, QTextCursor, QUrl

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.main_window.discussion import DiscussionWindow
from helpers.books import quick_start_epub
from helpers.calibre_gui import wait_until
from helpers.scripted_server import Reply, ScriptedServer

NOTICE = 'AI generated answers can be inaccurate, please verify any answers before acting on them.'
HOSTILE_TITLE = '<script>alert(1)</script><img src=http://tracker.example/t.png>\x1b[31mRed\x07\u202eevil'
SHOWN_TITLE = '<script>alert(1)</script><img src=http://tracker.example/t.png>\\x1b[31mRed\\x07\\u202eevil'
PAGES = [('The Quick Start Guide, explained', 'https://manual.calibre-ebook.com/quick_start.html'),
         (HOSTILE_TITLE, 'https://evil.example/page?a=1&b="2"'),
         ('Named twice', 'https://manual.calibre-ebook.com/quick_start.html'),
         ('No web page', 'javascript:alert(document.cookie)')]
ANSWER = 'The guide shows how to add books and convert them.'


def responses_stream(text, pages, finished=True):
    """SSE bytes of an OpenAI Responses answer with a web search, shaped as OpenAI's documentation
    shows them: the search call, the message's text deltas, one url_citation annotation per page."""
    n = 0

    def event(data):
        nonlocal n
        data['sequence_number'] = n
        n += 1
        return f'event: {data["type"]}\ndata: {json.dumps(data)}\n\n'.encode()
    response = {'id': 'resp_68b0', 'object': 'response', 'created_at': 1756400000, 'status': 'in_progress',
                'model': 'gpt-5-mini-2025-08-07', 'output': [], 'tools': [{'type': 'web_search'}]}
    out = [event({'type': 'response.created', 'response': response}),
           event({'type': 'response.in_progress', 'response': response}),
           event({'type': 'response.output_item.added', 'output_index': 0, 'item': {
               'id': 'ws_68b0', 'type': 'web_search_call', 'status': 'in_progress'}}),
           event({'type': 'response.web_search_call.in_progress', 'output_index': 0, 'item_id': 'ws_68b0'}),
           event({'type': 'response.web_search_call.searching', 'output_index': 0, 'item_id': 'ws_68b0'}),
           event({'type': 'response.web_search_call.completed', 'output_index': 0, 'item_id': 'ws_68b0'}),
           event({'type': 'response.output_item.done', 'output_index': 0, 'item': {
               'id': 'ws_68b0', 'type': 'web_search_call', 'status': 'completed',
               'action': {'type': 'search', 'query': 'calibre quick start guide'}}}),
           event({'type': 'response.output_item.added', 'output_index': 1, 'item': {
               'id': 'msg_68b0', 'type': 'message', 'status': 'in_progress', 'role': 'assistant', 'content': []}}),
           event({'type': 'response.content_part.added', 'item_id': 'msg_68b0', 'output_index': 1,
                  'content_index': 0, 'part': {'type': 'output_text', 'annotations': [], 'text': ''}})]
    for word in text.split(' '):
        out.append(event({'type': 'response.output_text.delta', 'item_id': 'msg_68b0', 'output_index': 1,
                          'content_index': 0, 'delta': word + ' ', 'logprobs': []}))
    annotations = []
    for i, (title, url) in enumerate(pages):
        a = {'type': 'url_citation', 'start_index': 0, 'end_index': len(text), 'title': title, 'url': url}
        annotations.append(a)
        out.append(event({'type': 'response.output_text.annotation.added', 'item_id': 'msg_68b0',
                          'output_index': 1, 'content_index': 0, 'annotation_index': i, 'annotation': a}))
    if not finished:
        return out
    out += [event({'type': 'response.output_text.done', 'item_id': 'msg_68b0', 'output_index': 1,
                   'content_index': 0, 'text': text, 'logprobs': []}),
            event({'type': 'response.content_part.done', 'item_id': 'msg_68b0', 'output_index': 1,
                   'content_index': 0, 'part': {'type': 'output_text', 'annotations': annotations, 'text': text}}),
            event({'type': 'response.completed', 'response': dict(
                response, status='completed', usage={'input_tokens': 328, 'output_tokens': 96,
                                                     'output_tokens_details': {'reasoning_tokens': 64},
                                                     'input_tokens_details': {'cached_tokens': 0}})})]
    return out


def sse_reply(chunks, **kw):
    return Reply(200, chunks=chunks, headers=[('Content-Type', 'text/event-stream')], **kw)


@pytest.fixture
def books(sandbox, tmp_path):
    path = sandbox.make_library(quick_start_epub())
    from calibre.library import db
    cache = db(str(path)).new_api
    yield BookLibrary(cache, History(str(tmp_path / 'history')))
    cache.close()


@pytest.fixture
def openai(prefs):
    """OpenAI (the Responses API) with web search, asked at a server the test makes: set_url(url)."""
    from calibre_plugins.bookai.settings.secrets import secret_store
    secret_store().set('openai', 'api_key', 'sk-test-0123456789')

    def set_url(url):
        prefs['providers'] = {'openai': {'base_url': url + '/v1', 'model': 'gpt-5-mini', 'web_search': True}}
        prefs['provider'] = 'openai'
        prefs['confirm_send'] = 'never'
    yield set_url
    secret_store().set('openai', 'api_key', '')


def anchors(view):
    """(href, text) of every link in the chat's document."""
    found = []
    block = view.document().begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            f = it.fragment()
            if f.isValid() and f.charFormat().isAnchor():
                found.append((f.charFormat().anchorHref(), f.text(), f.position()))
            it += 1
        block = block.next()
    return found


def click_at(view, position):
    """A real left click on the character at position of the chat's document."""
    c = QTextCursor(view.document())
    c.setPosition(position + 1)
    view.ensureCursorVisible()
    view.setTextCursor(c)
    view.ensureCursorVisible()
    rect = view.cursorRect(c)
    at = QPointF(rect.left() - 2, rect.center().y())
    for kind in (QEvent.Type.MouseButtonPress, QEvent.Type.MouseButtonRelease):
        view.viewport().setFocus()
        ev = QMouseEvent(kind, at, view.viewport().mapToGlobal(at), Qt.MouseButton.LeftButton,
                         Qt.MouseButton.LeftButton if kind == QEvent.Type.MouseButtonPress else Qt.MouseButton.NoButton,
                         Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(view.viewport(), ev)


def ask(w, question):
    w.panel.question.setPlainText(question)
    w.panel.send_button.click()


def test_sources_under_the_answer_the_notice_after_it_and_both_kept(qapp, prefs, openai, books, monkeypatch,
                                                                     artifacts, tmp_path):
    import calibre.gui2
    opened = []
    monkeypatch.setattr(calibre.gui2, 'open_url', lambda url: opened.append(url.toString(
        QUrl.ComponentFormattingOption.FullyEncoded)))
    replies = [sse_reply(responses_stream(ANSWER, PAGES)),
               sse_reply(responses_stream('And then it goes on and on and on', [], finished=False), stall_after=12)]
    with ScriptedServer(replies) as server:
        openai(server.url)
        w = DiscussionWindow(books, Conversation.about(books, [1]))
        w.resize(760, 720)
        w.show()
        notice = w.panel.accuracy_notice
        assert notice.text() == NOTICE and notice.font().italic() and notice.wordWrap()
        assert notice.textFormat() == Qt.TextFormat.PlainText
        assert notice.isHidden()  # nothing answered yet

        ask(w, 'What does the guide show?')
        assert w.panel.streaming and notice.isHidden()
        wait_until(lambda: not w.panel.streaming)
        turn = w.conv.turns[-1]
        assert turn.answer.strip() == ANSWER and not turn.error, turn.error
        assert json.loads(server.received[0]['body'])['tools'] == [{'type': 'web_search'}]
        assert not notice.isHidden()  # an answer, and none coming

        view = w.panel.chat
        text = view.toPlainText()
        after = text[text.index(ANSWER):]
        assert 'Sources' in after and 'The Quick Start Guide, explained' in after
        assert SHOWN_TITLE in after  # markup shown as text, controls shown as escapes
        assert '\x1b' not in text and '\u202e' not in text and '\x07' not in text
        assert 'Named twice' not in text and 'No web page' not in text and 'javascript' not in text
        assert '1 more page the answer named is not shown.' in after
        assert 'manual.calibre-ebook.com' in after and 'evil.example' in after
        html = view.document().toHtml()
        assert '<script' not in html and '<img' not in html
        web = [(href, label, pos) for href, label, pos in anchors(view) if not href.startswith('bookai:')]
        assert [href for href, _label, _pos in web] == [PAGES[0][1], PAGES[1][1]]
        assert web[1][1] == SHOWN_TITLE

        click_at(view, web[0][2])  # a real click on the first page's title
        wait_until(lambda: opened)
        assert opened == [PAGES[0][1]]
        view.on_link(QUrl(web[1][0]))  # the second, as its link is given when clicked
        assert opened[1] == QUrl(PAGES[1][1]).toString(QUrl.ComponentFormattingOption.FullyEncoded)
        assert w.grab().save(str(artifacts / 'web-sources.png'))

        # a second answer: while it streams, no notice, though an answer is there already
        ask(w, 'And then?')
        wait_until(lambda: w.panel.answer is not None and w.panel.answer.text_parts)
        assert w.panel.streaming and notice.isHidden()
        w.panel.chat.flush()  # what came so far, as the next render shows it
        assert w.grab().save(str(artifacts / 'web-sources-streaming.png'))
        w.panel.send_button.click()  # Stop
        wait_until(lambda: not w.panel.streaming)
        assert w.conv.turns[-1].finish_reason == 'cancelled' and not notice.isHidden()
        assert w.conv.turns[-1].web_links == ()
        assert view.toPlainText().count('Sources') == 1  # under the answer that used them only
        conv_id = w.conv.id
        w.close()

    # after a restart: the History gives the pages back, and the window shows them again
    history = History(books.history.folder)
    conv = history.load(books.library_id, conv_id)
    assert conv.turns[0].web_links == turn.web_links and conv.turns[0].web_links_left_out == 1
    w = DiscussionWindow(BookLibrary(books.db, history), conv)
    w.resize(760, 720)
    w.show()
    assert not w.panel.accuracy_notice.isHidden()
    again = w.panel.chat
    assert [h for h, _l, _p in anchors(again) if not h.startswith('bookai:')] == [PAGES[0][1], PAGES[1][1]]
    assert SHOWN_TITLE in again.toPlainText() and '1 more page the answer named is not shown.' in again.toPlainText()
    assert w.grab().save(str(artifacts / 'web-sources-reopened.png'))
    w.close()


def test_the_sources_in_the_chat_are_inert(qapp, monkeypatch):
    """Pages however they reach a turn (a History file edited by hand, say) are shown by the same
    rules: no tag of a title comes alive, and only web addresses are links."""
    import calibre.gui2
    from calibre_plugins.bookai.conversation.conversation import Turn
    from calibre_plugins.bookai.core.messages import WebLink
    from calibre_plugins.bookai.gui.chat import ChatView
    opened = []
    monkeypatch.setattr(calibre.gui2, 'open_url', lambda url: opened.append(url.toString()))
    links = (WebLink('"><a href="javascript:alert(1)">x</a>', 'https://a.example/'),
             WebLink('data', 'data:text/html,<script>alert(1)</script>'),
             WebLink('ours', 'bookai:settings/0'), WebLink('file', 'file:///etc/passwd'),
             WebLink('', 'https://b.example/"onmouseover="alert(1)'))
    view = ChatView()
    view.show_conversation([Turn('q', 'An answer.', model='m', finish_reason='stop', web_links=links)], 'm')
    found = anchors(view)
    web = [h for h, _l, _p in found if not h.startswith('bookai:')]
    assert web == ['https://a.example/', 'https://b.example/"onmouseover="alert(1)']
    assert [h for h, _l, _p in found if h.startswith('bookai:')] == ['bookai:copy/0']
    assert '"><a href="javascript:alert(1)">x</a>' in view.toPlainText()
    assert '3 more pages the answer named are not shown.' in view.toPlainText()
    for href, _label, _pos in found:
        view.on_link(QUrl(href))
    assert len(opened) == 2 and all(u.startswith('https://') for u in opened)
