# License: GPLv3 Copyright: the Book AI developers
"""The discussion window, offscreen, against a real llama-server and a real calibre
library: what is shown is what the server sent; Stop, errors, closing mid-answer,
Save to book and the History."""

import time

import pytest
from qt.core import QApplication, QTextDocument

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.conversation.render import markdown_to_html
from calibre_plugins.bookai.main_window.discussion import DiscussionWindow
from helpers.books import quick_start_epub
from helpers.calibre_gui import wait_until, when_modal
from helpers.peers import LlamaServer, direct_text, use_server

TOKENS = 48


TINY_TOKENS = TOKENS


@pytest.fixture(scope='module')
def endless():
    """A server whose answers go on until stopped."""
    with LlamaServer('tiny', alias='tiny', extra_args=('--temp', '0', '-n', '100000')) as server:
        yield server


@pytest.fixture
def books(sandbox, tmp_path):
    """A library of three books (calibre's Quick Start Guide, in three languages)."""
    path = sandbox.make_library(quick_start_epub(), quick_start_epub('deu'), quick_start_epub('fra'))
    from calibre.library import db
    cache = db(str(path)).new_api
    return BookLibrary(cache, History(str(tmp_path / 'history')))


def window(books, ids=(1,)):
    w = DiscussionWindow(books, Conversation.about(books, list(ids)))
    w.show()
    return w


def answered(w):
    wait_until(lambda: w.panel.cancel is None)
    return w.conv.turns[-1]


def plain(html):
    d = QTextDocument()
    d.setHtml(html)
    return d.toPlainText()


def squeeze(text):
    return ' '.join(text.split())


def test_a_quick_action_shows_what_the_server_sent(qapp, prefs, tiny, books, artifacts):
    use_server(prefs, tiny.base_url)
    w = window(books)
    summarize = next(b for b in w.action_buttons if b.text() == 'Summarize')
    expected = direct_text(tiny, w.conv.messages_for('Provide a concise summary of the previously described book.'))
    summarize.click()
    assert w.panel.cancel is not None and w.panel.send_button.text() == '&Stop'
    turn = answered(w)
    assert turn.answer == expected and turn.model == 'tiny' and turn.usage.output_tokens == TOKENS
    assert squeeze(plain(markdown_to_html(expected))) in squeeze(w.panel.chat.toPlainText())
    assert 'tokens in' in w.panel.status.text() and 'runs on this computer' in w.panel.status.text()
    # a follow-up question, typed, sent with Enter, carries the conversation
    from qt.core import QKeyEvent, QEvent, Qt
    w.panel.question.setPlainText('And the author?')
    expected = direct_text(tiny, w.conv.messages_for('And the author?'))
    qapp.sendEvent(w.panel.question, QKeyEvent(QEvent.Type.KeyPress, Qt.Key.Key_Return, Qt.KeyboardModifier.NoModifier))
    assert w.panel.question.toPlainText() == ''
    turn = answered(w)
    assert turn.answer == expected
    assert len(w.conv.turns) == 2 and w.conv.provider == 'openai_compatible' and w.conv.model == 'tiny'
    assert w.grab().save(str(artifacts / 'discussion.png'))
    w.close()


def test_three_books_in_one_conversation(qapp, prefs, tiny, books):
    use_server(prefs, tiny.base_url)
    w = window(books, (1, 2, 3))
    assert 'Discussing 3 books' in w.books_label.text()
    context = w.conv.messages_for('q')[0].text
    assert context.count('book is:') == 3
    expected = direct_text(tiny, w.conv.messages_for('Compare them.'))
    w.panel.question.setPlainText('Compare them.')
    w.panel.send_button.click()
    assert answered(w).answer == expected
    w.close()


def test_a_follow_up_says_what_came_from_the_providers_cache(qapp, prefs, tiny, books):
    """The second question of a conversation sends the first one's bytes again: llama-server reads
    them from its prompt cache, says how many, and the window shows it under that answer only."""
    use_server(prefs, tiny.base_url)
    w = window(books)
    w.panel.question.setPlainText('Who wrote it?')
    w.panel.send_button.click()
    first = answered(w)
    w.panel.question.setPlainText('And when?')
    w.panel.send_button.click()
    second = answered(w)
    assert second.usage.cached_tokens >= first.usage.input_tokens - 2, (first.usage, second.usage)
    said = f"{second.usage.cached_tokens:,} of {second.usage.input_tokens:,} tokens read from the provider's cache"
    shown = w.panel.chat.toPlainText()
    assert said in shown and shown.index(said) > shown.index('And when?')  # under the second answer
    w.panel.show_conversation()  # shown again as the History shows it
    assert said in w.panel.chat.toPlainText()
    w.close()


def test_shift_enter_starts_a_new_line(qapp, prefs, tiny, books):
    use_server(prefs, tiny.base_url)
    w = window(books)
    from qt.core import QKeyEvent, QEvent, Qt
    w.panel.question.setPlainText('one')
    w.panel.question.moveCursor(w.panel.question.textCursor().MoveOperation.End)
    qapp.sendEvent(w.panel.question, QKeyEvent(QEvent.Type.KeyPress, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier))
    assert w.panel.question.toPlainText() == 'one\n' and w.panel.cancel is None and not w.conv.turns
    w.close()


def start_a_long_answer(prefs, server, books):
    """A window whose answer is streaming (ten chunks in), and where the server's log was then."""
    use_server(prefs, server.base_url)
    w = window(books)
    log_start = len(server.log())
    w.panel.question.setPlainText('Tell me everything.')
    w.panel.send_button.click()
    wait_until(lambda: w.panel.answer is not None and len(w.panel.answer.text_parts) >= 10)
    return w, log_start


def test_stop_is_seen_by_the_server(qapp, prefs, endless, books):
    w, log_start = start_a_long_answer(prefs, endless, books)
    w.panel.send_button.click()  # Stop
    turn = answered(w)
    assert turn.finish_reason == 'cancelled' and turn.answer and not turn.error
    endless.wait_log(r'cancel', start=log_start)
    assert 'Stopped.' in w.panel.chat.toPlainText()
    w.close()


def test_closing_mid_answer_stops_it_and_keeps_what_came(qapp, prefs, endless, books):
    w, log_start = start_a_long_answer(prefs, endless, books)
    conv = w.conv
    w.close()
    endless.wait_log(r'cancel', start=log_start)
    for _i in range(20):  # late chunks arrive at a window that is gone: nothing happens
        QApplication.processEvents()
        time.sleep(0.01)
    assert conv.turns[-1].finish_reason == 'cancelled' and conv.turns[-1].answer
    (kept,) = books.history.summaries(books.library_id)
    assert kept.id == conv.id and kept.turns == 1


def test_a_server_that_is_down_keeps_the_conversation(qapp, prefs, books):
    server = LlamaServer('tiny', alias='tiny', extra_args=('--temp', '0', '-n', '16'))
    use_server(prefs, server.base_url)
    w = window(books)
    w.panel.question.setPlainText('First question')
    w.panel.send_button.click()
    first = answered(w)
    assert first.answer and not first.error
    server.stop()
    w.panel.question.setPlainText('Second question')
    w.panel.send_button.click()
    failed = answered(w)
    assert failed.error and not failed.answer and '127.0.0.1' in failed.error
    text = w.panel.chat.toPlainText()
    assert 'First question' in text and 'Second question' in text and failed.error in text
    assert w.panel.retry_button.isVisible()
    server.start()
    use_server(prefs, server.base_url)  # the restarted server listens on a new port
    w.panel.retry_button.click()
    retried = answered(w)
    assert retried.question == 'Second question' and retried.answer and not retried.error
    assert [t.question for t in w.conv.turns] == ['First question', 'Second question']
    assert failed.error not in w.panel.chat.toPlainText()
    server.stop()
    w.close()


def test_nothing_is_sent_without_a_provider(qapp, prefs, books):
    prefs['provider'] = ''
    w = window(books)
    assert 'No AI provider is chosen yet' in w.panel.chat.toPlainText()
    w.panel.question.setPlainText('Hello?')
    w.panel.send_button.click()
    assert w.panel.cancel is None and not w.conv.turns
    assert w.panel.question.toPlainText() == 'Hello?'  # the question is not lost
    assert 'Nothing was sent' in w.panel.chat.toPlainText()
    w.close()


def accept_next_dialog(check=None):
    def accept(d):
        if check is not None:
            check(d)
        d.accept()
    when_modal(accept)


def test_an_online_provider_shows_what_will_be_sent_first(qapp, prefs, tiny, books, artifacts):
    use_server(prefs, tiny.base_url, confirm='first')
    # an online provider: the same server, reached as OpenRouter would be
    prefs['providers'] = dict(prefs['providers'], openrouter={'base_url': tiny.base_url + '/v1', 'model': 'tiny'})
    prefs['provider'] = 'openrouter'
    from calibre_plugins.bookai.settings.secrets import secret_store
    secret_store().set('openrouter', 'api_key', 'sk-or-test-key')
    try:
        w = window(books)
        seen = []

        def check(d):
            seen.append(d.view.toPlainText())
            assert d.grab().save(str(artifacts / 'what-will-be-sent.png'))
        accept_next_dialog(check)
        w.panel.question.setPlainText('Who wrote it?')
        w.panel.send_button.click()
        answered(w)
        assert seen and 'Who wrote it?' in seen[0] and 'Quick Start Guide' in seen[0]
        assert 'sk-or-test-key' not in seen[0]
        w.panel.question.setPlainText('And then?')  # 'first': not asked again in this conversation
        w.panel.send_button.click()
        answered(w)
        assert len(seen) == 1 and len(w.conv.turns) == 2
        w.close()
    finally:
        secret_store().set('openrouter', 'api_key', '')


def test_save_to_book_appends_to_comments_and_a_custom_column(qapp, prefs, tiny, books, sandbox, tmp_path):
    use_server(prefs, tiny.base_url)
    db = books.db
    db.create_custom_column('aianswers', 'AI answers', 'comments', False, display={'interpret_as': 'long-text'})
    from calibre.library import db as open_db
    db = open_db(db.backend.library_path).new_api
    books = BookLibrary(db, books.history)
    db.set_field('comments', {1: '<p>My own words.</p>'})
    db.set_field('#aianswers', {1: 'Kept text.'})
    w = window(books)
    w.panel.question.setPlainText('Summarize it.')
    w.panel.send_button.click()
    turn = answered(w)
    accept_next_dialog()
    w.panel.on_link('save', 0)
    comments = db.field_for('comments', 1)
    assert comments.startswith('<p>My own words.</p>') and 'Summarize it.' in comments and 'tiny' in comments
    assert squeeze(plain(markdown_to_html(turn.answer))) in squeeze(plain(comments))

    def to_column(d):
        d.field_box.setCurrentIndex(d.field_box.findData('#aianswers'))
        d.remember.setChecked(True)
    accept_next_dialog(to_column)
    w.save_to_book(None)
    column = db.field_for('#aianswers', 1)
    assert column.startswith('Kept text.\n\n') and turn.answer.strip() in column
    assert prefs['save_field'] == '#aianswers'
    assert db.field_for('comments', 1) == comments  # untouched by the second save
    w.close()


def test_history_reopens_a_conversation_after_a_restart(qapp, prefs, tiny, books):
    use_server(prefs, tiny.base_url)
    w = window(books)
    w.panel.question.setPlainText('Remember this.')
    w.panel.send_button.click()
    first = answered(w)
    conv_id = w.conv.id
    w.close()
    # "after a restart": a new History over the same folder, a new window
    history = History(books.history.folder)
    (summary,) = history.summaries(books.library_id, 1)
    assert summary.id == conv_id and summary.turns == 1
    from calibre_plugins.bookai.main_window.history_window import HistoryWindow
    opened = []
    h = HistoryWindow(BookLibrary(books.db, history), opened.append)
    h.show()
    assert h.list.topLevelItemCount() == 1
    h.list.setCurrentItem(h.list.topLevelItem(0))
    h.open_button.click()
    (conv,) = opened
    assert conv.turns[0].answer == first.answer
    w = DiscussionWindow(BookLibrary(books.db, history), conv)
    w.show()
    assert 'Remember this.' in w.panel.chat.toPlainText()
    w.close()
    h.list.setCurrentItem(h.list.topLevelItem(0))
    accept_next_dialog()
    h.delete_button.click()
    assert h.list.topLevelItemCount() == 0 and history.summaries(books.library_id) == []
    h.close()


def test_streamed_rendering_matches_rendering_at_once(qapp, artifacts):
    """Blocks rendered as they finish, and the tail re-rendered, end up as one rendering would."""
    from calibre_plugins.bookai.gui.chat import ChatView
    text = ('# Title\n\nA paragraph with **bold** and a [link](https://example.org).\n\n'
            '| Book | Year |\n|---|---|\n| One | 1999 |\n| Two | 2001 |\n\n'
            '1. first\n2. second\n\n```\ncode\n\nmore code\n```\n\nThe end.\n')
    view = ChatView()
    view.begin_answer('q', 'model')
    for i in range(0, len(text), 3):
        view.add_text(text[i:i + 3])
        view.flush()
    streamed = view.toPlainText()
    at_once = plain(markdown_to_html(text))
    assert squeeze(at_once) in squeeze(streamed)
    assert view.document().toHtml().count('<table') == 1
    view.resize(640, 560)
    view.show()
    assert view.grab().save(str(artifacts / 'chat-markdown.png'))


def test_the_chat_text_size_follows_the_settings(qapp, prefs, books, artifacts):
    """The chat's text, and only the chat's, at the size the settings say: at once in the window the
    settings were opened from, and in another open window with its next render."""
    prefs['provider'] = ''
    prefs['chat_text_size'] = 100
    w = window(books)
    other = window(books, (2,))
    chat = w.panel.chat
    base = w.panel.question.font().pointSizeF()
    assert chat.font().pointSizeF() == base == chat.document().defaultFont().pointSizeF()
    height = chat.document().size().height()

    def settings_changed(percent):
        prefs['chat_text_size'] = percent  # as the settings dialog saves it
    w.panel.open_settings = lambda: settings_changed(130)
    w.panel.show_settings()
    assert chat.font().pointSizeF() == pytest.approx(base * 1.3)
    assert chat.document().defaultFont().pointSizeF() == pytest.approx(base * 1.3)
    assert chat.document().size().height() > height  # laid out again, larger
    assert w.panel.question.font().pointSizeF() == base  # the rest of the window as it was
    assert 'No AI provider is chosen yet' in chat.toPlainText()
    assert w.grab().save(str(artifacts / 'discussion-text-130.png'))
    assert other.panel.chat.font().pointSizeF() == base  # not rendered again yet
    other.panel.show_conversation()
    assert other.panel.chat.font().pointSizeF() == pytest.approx(base * 1.3)
    w.panel.open_settings = lambda: settings_changed(85)
    w.panel.show_settings()
    assert chat.font().pointSizeF() == pytest.approx(base * 0.85)
    w.panel.open_settings = lambda: settings_changed(100)
    w.panel.show_settings()
    assert chat.font().pointSizeF() == base and chat.document().size().height() == height
    w.close()
    other.close()
