# License: GPLv3 Copyright: the Book AI developers
"""A History that cannot be written (its folder replaced by a file; a folder that cannot be
written): the command line prints the answer, then a sentence on standard error, and exits
6 (documented in cli.py), never a traceback; the discussion window says it and keeps the
conversation; what was saved before is left as it was. (The tests run as root, whom a
folder's permissions do not stop: "not writable" is, in process, a write that raises
PermissionError.)"""

import json
import os

import pytest

from calibre_plugins.bookai.conversation.conversation import Conversation, Turn
from calibre_plugins.bookai.conversation.history import History, ConversationNotKept
from calibre_plugins.bookai.settings import prefs as prefs_module
from helpers.books import quick_start_epub
from helpers.calibre_gui import wait_until
from helpers.peers import use_server
from helpers.project import PLUGIN_NAME
from helpers.sandbox import tracebacks
from helpers.scripted_server import Reply, ScriptedServer, sse

ANSWER = 'Hello reader, here is the answer.'
SAID = 'The conversation could not be kept in the History: '


def chat_stream():
    return Reply(200, headers=[('Content-Type', 'text/event-stream')], chunks=sse(
        json.dumps({'model': 'm', 'choices': [{'delta': {'content': ANSWER}}]}),
        json.dumps({'model': 'm', 'choices': [{'delta': {}, 'finish_reason': 'stop'}]}), '[DONE]'))


def test_the_command_line_prints_the_answer_then_says_it_was_not_kept(sandbox, plugin_zip):
    sandbox.install(plugin_zip)
    lib = sandbox.make_library(quick_start_epub())

    def cli(*args):
        return sandbox.run(['calibre-debug', '-r', PLUGIN_NAME, '--'] + [str(a) for a in args])
    with ScriptedServer([chat_stream(), chat_stream()]) as server:
        r = cli('configure', 'openai_compatible', f'base_url={server.url}/v1', 'model=m', '--use')
        assert r.returncode == 0, r
        folder = sandbox.config / 'plugins' / 'bookai-history'
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.write_bytes(b'a file where the folder was')
        for extra in ((), ('--json',)):
            r = cli('ask', '--library', lib, '--book', '1', '--prompt', 'Who wrote it?', *extra)
            assert r.returncode == 6 and not tracebacks(r.output), r
            assert ANSWER in r.stdout.replace('\\u', '')  # the answer, printed first
            assert r.stderr.strip().startswith(SAID) and 'Not a directory' in r.stderr, r
    assert folder.read_bytes() == b'a file where the folder was'  # left as it was


def saved(history, conv_id, answer='Kept before.'):
    conv = Conversation([], 'lib', 'openai_compatible', 'm', conversation_id=conv_id)
    conv.turns.append(Turn('A question?', answer, model='m', finish_reason='stop', asked=1000.0))
    history.save(conv)
    return conv


def test_a_save_that_fails_loses_nothing_saved_before(tmp_path, monkeypatch):
    from calibre_plugins.bookai.conversation import history as history_module
    history = History(str(tmp_path / 'history'))
    conv = saved(history, 'conv')
    path = history.path('lib', 'conv')
    before = open(path, 'rb').read()

    def refused(path, data):
        raise PermissionError(13, 'Permission denied', os.path.dirname(path))
    monkeypatch.setattr(history_module, 'write_private', refused)
    conv.turns.append(Turn('Another?', 'Not kept.', model='m', finish_reason='stop', asked=2000.0))
    with pytest.raises(ConversationNotKept) as e:
        history.save(conv)
    assert str(e.value) == f'Permission denied ({os.path.dirname(path)})'
    assert open(path, 'rb').read() == before and len(conv.turns) == 2  # on disk as it was; in memory, all
    assert [n for n in os.listdir(os.path.dirname(path))] == ['conv.json']  # no temporary file left


def test_the_window_says_it_and_keeps_the_conversation(qapp, prefs, sandbox, tmp_path, artifacts):
    from calibre.library import db
    from calibre_plugins.bookai.conversation.library import BookLibrary
    from calibre_plugins.bookai.main_window.discussion import DiscussionWindow
    not_a_folder = tmp_path / 'history'
    not_a_folder.write_bytes(b'a file where the folder was')
    library = BookLibrary(db(str(sandbox.make_library(quick_start_epub()))).new_api, History(str(not_a_folder)))
    with ScriptedServer([chat_stream()]) as server:
        use_server(prefs, server.url, model='m')
        w = DiscussionWindow(library, Conversation.about(library, [1]))
        w.show()
        w.panel.ask('Who wrote it?')
        wait_until(lambda: w.panel.cancel is None)
        text = w.panel.chat.toPlainText()
        assert ANSWER in text and SAID in text and 'Not a directory' in text, text[-500:]
        assert w.conv.turns[-1].answer == ANSWER  # the conversation is kept, in the window
        assert w.grab().save(str(artifacts / 'history-not-kept.png'))
        w.close()
    assert not_a_folder.read_bytes() == b'a file where the folder was'
    assert prefs_module.problems() == []


class Library:
    """What the History window uses of a library (conversation.library.BookLibrary)."""

    def __init__(self, history):
        self.history, self.library_id = history, 'lib'


def test_the_history_window_says_it_cannot_read_the_folder(qapp, tmp_path):
    from calibre_plugins.bookai.main_window.history_window import HistoryWindow
    (tmp_path / 'history').write_bytes(b'a file where the folder was')
    history = History(str(tmp_path / 'history'))
    w = HistoryWindow(Library(history), [].append)
    assert w.list.topLevelItemCount() == 0
    assert w.notice.text() == (f'The History in {history.library_folder("lib")} could not be read: '
                               'Not a directory')
    w.close()
    assert (tmp_path / 'history').read_bytes() == b'a file where the folder was'
