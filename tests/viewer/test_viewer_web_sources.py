# License: GPLv3 Copyright: the Book AI developers
"""The E-book viewer's Ask AI panel shows the web pages an answer used under it, and calibre's
notice that AI answers can be inaccurate once there is an answer, as the library's windows do
(tests/main_window/test_web_sources.py has the whole story). The panel is Book AI's real one,
around a stand-in for the viewer; the answer is OpenAI's documented Responses stream with a
url_citation annotation (aimock sends none), replayed by a scripted server."""

import json

from qt.core import QUrl

from helpers.books import quick_start_epub
from helpers.calibre_gui import StandInViewer, wait_until
from helpers.scripted_server import Reply, ScriptedServer

NOTICE = 'AI generated answers can be inaccurate, please verify any answers before acting on them.'


def stream(text, title, url):
    events = [
        {'type': 'response.created', 'response': {'id': 'resp_1', 'model': 'gpt-5-mini', 'status': 'in_progress'}},
        {'type': 'response.output_text.delta', 'item_id': 'msg_1', 'output_index': 1, 'content_index': 0,
         'delta': text},
        {'type': 'response.output_text.annotation.added', 'item_id': 'msg_1', 'output_index': 1, 'content_index': 0,
         'annotation_index': 0, 'annotation': {'type': 'url_citation', 'start_index': 0, 'end_index': len(text),
                                               'url': url, 'title': title}},
        {'type': 'response.completed', 'response': {'id': 'resp_1', 'model': 'gpt-5-mini', 'status': 'completed',
                                                    'usage': {'input_tokens': 50, 'output_tokens': 9}}}]
    return [f'event: {e["type"]}\ndata: {json.dumps(e)}\n\n'.encode() for e in events]


def test_the_viewer_panel_shows_the_sources_and_the_notice(qapp, prefs, monkeypatch, artifacts):
    import calibre.gui2
    from calibre_plugins.bookai.settings.secrets import secret_store
    from calibre_plugins.bookai.viewer.panel import AskPanel
    opened = []
    monkeypatch.setattr(calibre.gui2, 'open_url', lambda url: opened.append(url.toString()))
    url = 'https://en.wikipedia.org/wiki/Calibre_(software)'
    reply = Reply(200, chunks=stream('Calibre is an e-book manager.', 'Calibre <b>(software)</b>\x1b[0m', url),
                  headers=[('Content-Type', 'text/event-stream')])
    secret_store().set('openai', 'api_key', 'sk-test-0123456789')
    try:
        with ScriptedServer([reply]) as server:
            prefs['providers'] = {'openai': {'base_url': server.url + '/v1', 'model': 'gpt-5-mini', 'web_search': True}}
            prefs['provider'] = 'openai'
            prefs['confirm_send'] = 'never'
            panel = AskPanel(StandInViewer(quick_start_epub()))
            panel.resize(420, 640)
            panel.show()
            p = panel.panel
            p.scope_row.box.setCurrentIndex(p.scope_row.box.findData('metadata'))
            assert p.accuracy_notice.isHidden() and p.accuracy_notice.text() == NOTICE
            p.question.setPlainText('What is calibre?')
            p.send_button.click()
            assert p.accuracy_notice.isHidden()
            wait_until(lambda: not p.streaming)
            assert not p.conv.turns[-1].error, p.conv.turns[-1].error
        text = p.chat.toPlainText()
        assert 'Sources' in text and 'Calibre <b>(software)</b>\\x1b[0m' in text and '\x1b' not in text
        assert not p.accuracy_notice.isHidden()
        hrefs = []
        block = p.chat.document().begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                f = it.fragment()
                if f.isValid() and f.charFormat().isAnchor() and not f.charFormat().anchorHref().startswith('bookai:'):
                    hrefs.append(f.charFormat().anchorHref())
                it += 1
            block = block.next()
        assert hrefs == [url]
        p.chat.on_link(QUrl(hrefs[0]))
        assert opened == [url]
        assert panel.grab().save(str(artifacts / 'viewer-web-sources.png'))
        panel.close()
    finally:
        secret_store().set('openai', 'api_key', '')
