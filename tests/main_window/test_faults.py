# License: GPLv3 Copyright: the Book AI developers
"""Faults while answering, in the discussion window and the viewer's Ask AI panel, against
real servers: a server that stalls, one that dies mid-answer, one restarted between two
questions, several windows streaming at once; an HTML error page and a malformed chunk in
the middle of a stream come from a scripted server (no real peer sends those on demand).

Every fault ends the same way: a sentence in the chat, the conversation intact (in the
window and in the History), Send usable again, and no thread or relay left behind."""

import json
import os
import signal
import threading
from types import SimpleNamespace

import pytest
from qt.core import QApplication

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.gui.worker import StreamRelay
from calibre_plugins.bookai.main_window.discussion import DiscussionWindow
from helpers.books import quick_start_epub
from helpers.calibre_gui import wait_until
from helpers.peers import AiMock, direct_text, tiny_server, use_server
from helpers.scripted_server import Reply, ScriptedServer, sse

FIRST = 'First question'
SECOND = 'Second question'


TINY_TOKENS = 32


@pytest.fixture
def books(sandbox, tmp_path):
    path = sandbox.make_library(quick_start_epub(), quick_start_epub('deu'), quick_start_epub('fra'))
    from calibre.library import db
    return BookLibrary(db(str(path)).new_api, History(str(tmp_path / 'history')))


def window(books, book_id=1):
    w = DiscussionWindow(books, Conversation.about(books, [book_id]))
    w.show()
    return w


def send(w, question):
    w.panel.question.setPlainText(question)
    w.panel.send_button.click()
    assert w.panel.streaming


def answered(w):
    wait_until(lambda: not w.panel.streaming)
    return w.conv.turns[-1]


def streaming_text(w, parts=10):
    """Wait until the answer streaming into w has that many pieces."""
    wait_until(lambda: w.panel.answer is not None and len(w.panel.answer.text_parts) >= parts)


def window_with_a_first_answer(books, prefs, server, book_id=1):
    use_server(prefs, server.base_url)
    w = window(books, book_id)
    send(w, FIRST)
    turn = answered(w)
    assert turn.answer and not turn.error, turn.error
    return w


def other_threads():
    """The threads running now but for the plugin's own (the servers' included)."""
    return {t for t in threading.enumerate() if not t.name.startswith('BookAI')}


def settled(threads):
    """Wait until only those threads run, and no answer stream is relayed any more."""
    wait_until(lambda: set(threading.enumerate()) <= threads and not QApplication.instance().findChildren(
        StreamRelay), timeout=10)


def assert_recovered(w, threads, words, books=None):
    """After a fault: said in words, the failed question kept with its error and the earlier
    turn kept (shown, and in the History), Send usable, nothing left running."""
    panel = w.panel
    failed = panel.conv.turns[-1]
    shown = panel.chat.toPlainText()
    assert words in failed.error and failed.error in shown
    assert failed.question == SECOND and SECOND in shown and panel.conv.retry_question() == SECOND
    assert [t.question for t in panel.conv.turns] == [FIRST, SECOND] and panel.conv.turns[0].answered
    assert FIRST in shown and panel.conv.turns[0].answer.split()[0] in shown
    assert panel.retry_button.isVisible()
    assert not panel.streaming and panel.cancel is None and panel.answer is None
    assert panel.send_button.isEnabled() and panel.send_button.text() == '&Send'
    if books is not None:
        kept = books.history.load(panel.conv.library_id, panel.conv.id)
        assert [t.question for t in kept.turns] == [FIRST, SECOND] and kept.turns[0].answer == panel.conv.turns[0].answer
        assert kept.turns[1].error == failed.error
    settled(threads)


def test_a_server_that_stalls_mid_answer_times_out_in_words(qapp, prefs, books, tiny):
    w = window_with_a_first_answer(books, prefs, tiny)
    with tiny_server(100000, 65536) as server:  # its answers go on until stopped (its context too)
        use_server(prefs, server.base_url, read_timeout=1.0)  # the longest silence, as set in the settings
        threads = other_threads()
        send(w, SECOND)
        streaming_text(w)
        os.kill(server.proc.pid, signal.SIGSTOP)  # the server stops dead, its connection open
        try:
            turn = answered(w)
        finally:
            os.kill(server.proc.pid, signal.SIGCONT)
        assert turn.answer  # what came before the silence is kept
        assert_recovered(w, threads, 'sent no answer for 1 second,', books)
        w.close()


def test_a_server_killed_mid_answer(qapp, prefs, books, tiny):
    w = window_with_a_first_answer(books, prefs, tiny)
    server = tiny_server(100000, 65536)  # an answer that cannot end by itself before the kill
    try:
        use_server(prefs, server.base_url)
        threads = other_threads()
        send(w, SECOND)
        streaming_text(w)
        server.kill()
        turn = answered(w)
        assert turn.answer
        assert_recovered(w, threads, 'was lost before the answer was complete', books)
        w.close()
    finally:
        server.stop()


def chat_chunk(text):
    return json.dumps({'model': 'tiny', 'choices': [{'index': 0, 'delta': {'content': text}}]})


@pytest.mark.parametrize('reply, words', [
    (Reply(500, b'<!DOCTYPE html><html><head><title>500</title><style>h1{}</style></head><body>'
                b'<h1>Internal Server Error</h1><p>The proxy broke.</p></body></html>',
           [('Content-Type', 'text/html'), ('Connection', 'close')]),  # as a proxy's error page comes
     'has a problem on its side (HTTP 500)'),
    (Reply(200, chunks=sse(chat_chunk('Half an'), chat_chunk(' answer'), '{"choices": [{"delta": {"cont', '[DONE]'),
           headers=[('Content-Type', 'text/event-stream')]),
     'not a valid answer stream'),
], ids=['500-html-page', 'malformed-chunk-mid-stream'])
def test_what_no_real_server_sends(qapp, prefs, books, tiny, reply, words):
    w = window_with_a_first_answer(books, prefs, tiny)
    with ScriptedServer([]) as scripted:
        scripted.replies.append(reply)
        use_server(prefs, scripted.url)  # the same conversation, now answered by a server gone wrong
        threads = other_threads()
        send(w, SECOND)
        turn = answered(w)
        assert_recovered(w, threads, words, books)
        if reply.status == 500:
            assert 'The proxy broke.' in turn.error and '<h1>' not in w.panel.chat.toPlainText()
        else:
            assert turn.answer == 'Half an answer'
        w.close()


def test_a_reply_that_is_not_a_stream_from_aimock(qapp, prefs, books, tiny, tmp_path):
    fixtures = tmp_path / 'malformed.json'
    fixtures.write_text(json.dumps({'fixtures': [
        {'match': {'userMessage': SECOND}, 'response': {'content': 'never seen'}, 'chaos': {'malformedRate': 1}}]}))
    w = window_with_a_first_answer(books, prefs, tiny)
    with AiMock(fixtures) as mock:
        use_server(prefs, mock.base_url)
        threads = other_threads()
        send(w, SECOND)
        turn = answered(w)
        assert not turn.answer and mock.journal(path='/v1/chat/completions')
        assert_recovered(w, threads, 'not a valid answer stream', books)
        w.close()


def test_a_server_restarted_between_two_questions(qapp, prefs, books):
    with tiny_server(32) as server:
        use_server(prefs, server.base_url)
        w = window(books)
        send(w, FIRST)
        first = answered(w)
        assert first.answer and not first.error
        server.restart()  # the same port: any connection kept from the first answer is dead
        expected = direct_text(server, w.conv.messages_for(SECOND))
        threads = other_threads()
        send(w, SECOND)
        second = answered(w)
        assert second.answer == expected and not second.error
        assert [t.question for t in w.conv.turns] == [FIRST, SECOND]
        assert w.panel.send_button.isEnabled() and w.panel.send_button.text() == '&Send'
        kept = books.history.load(w.conv.library_id, w.conv.id)
        assert [t.answer for t in kept.turns] == [first.answer, second.answer]
        settled(threads)
        w.close()


def viewer_panel(selected):
    """The viewer's Ask AI panel, in this process: calibre's viewer window stands behind it
    only as the data it holds about the open book (what the panel reads of it)."""
    from calibre_plugins.bookai.viewer.panel import AskPanel
    viewer = SimpleNamespace(current_book_data={
        'metadata': {'title': 'Quick Start Guide', 'authors': ['John Schember']},
        'book_library_details': {'book_id': 1, 'library_id': 'faults'}, 'annotations_map': {}})
    p = AskPanel(viewer)
    p.selection_changed(selected)
    p.show()
    return p


def test_two_windows_and_the_viewer_panel_streaming_at_once(qapp, prefs, books, tmp_path):
    questions = ['What is this book about?', 'Who is it for?', 'Explain: {selected}']
    answers = [' '.join(f'{name}-{i}' for i in range(40)) for name in ('first', 'second', 'viewer')]
    fixtures = tmp_path / 'three.json'  # small pieces, slowly: the three answers come interleaved
    fixtures.write_text(json.dumps({'fixtures': [
        {'match': {'userMessage': match}, 'response': {'content': answer}, 'chunkSize': 8, 'latency': 15}
        for match, answer in zip(('about?', 'for?', 'viewer shows books'), answers)]}))
    with AiMock(fixtures) as mock:
        use_server(prefs, mock.base_url)
        windows = [window(books, 1), window(books, 2)]
        viewer = viewer_panel('The calibre E-book viewer shows books.')
        panels = [w.panel for w in windows] + [viewer.panel]
        threads = other_threads()
        for panel, question in zip(panels, questions):
            panel.question.setPlainText(question)
            panel.send_button.click()
        wait_until(lambda: all(p.answer is not None and p.answer.text_parts for p in panels)
                   or not all(p.streaming for p in panels))
        assert all(p.streaming for p in panels)  # all three at once
        wait_until(lambda: not any(p.streaming for p in panels))
        for panel, answer, others in zip(panels, answers, ('second viewer', 'first viewer', 'first second')):
            (turn,) = panel.conv.turns
            assert turn.answer == answer and not turn.error
            shown = panel.chat.toPlainText()
            assert answer in shown and not any(f'{name}-' in shown for name in others.split())
            assert panel.send_button.isEnabled() and panel.send_button.text() == '&Send'
        assert len(mock.journal(path='/v1/chat/completions')) == 3
        settled(threads)
        for w in windows:
            w.close()
        viewer.close()


def test_a_new_chat_mid_answer_then_a_question_gets_only_its_own_answer(qapp, prefs, books, tiny):
    """The stopped answer's last pieces, still on their way, never land in the next one."""
    with tiny_server(100000, 65536) as endless:  # its answers go on until stopped (its context too)
        use_server(prefs, endless.base_url)
        w = window(books)
        send(w, FIRST)
        streaming_text(w)
        threads = other_threads()
        w.panel.new_chat()  # stops the answer that is coming, and starts afresh at once
        assert not w.panel.streaming and not w.conv.turns
        use_server(prefs, tiny.base_url)
        expected = direct_text(tiny, w.conv.messages_for(SECOND))
        send(w, SECOND)  # before the stopped stream's last pieces arrive
        turn = answered(w)
        assert turn.question == SECOND and turn.answer == expected and turn.finish_reason == 'length'
        assert [t.question for t in w.conv.turns] == [SECOND]
        assert w.panel.send_button.isEnabled() and w.panel.send_button.text() == '&Send'
        settled(threads)
        w.close()
