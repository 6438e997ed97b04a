# License: GPLv3 Copyright: the Book AI developers
"""The real discussion window, asking a scripted service that echoes the key: in its answer
(split across two events), its reasoning, its model's name and an error inside its stream,
in several encodings. Neither the chat nor the History holds any form of the key."""

import json
from pathlib import Path

import pytest

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.main_window.discussion import DiscussionWindow
from helpers.books import quick_start_epub
from helpers.calibre_gui import wait_until
from helpers.peers import use_server
from helpers.scripted_server import Reply, ScriptedServer, sse
from helpers.secret_forms import forms_of, leaks

KEY = 'sk-live-7f3Qz9/Xa+Lm2Kp0Vw8Rt5Yb'


@pytest.fixture
def books(sandbox, tmp_path):
    path = sandbox.make_library(quick_start_epub())
    from calibre.library import db
    return BookLibrary(db(str(path)).new_api, History(str(tmp_path / 'history')))


def delta(model='m', **d):
    return json.dumps({'model': model, 'choices': [{'delta': d}]})


def hostile(form, fails):
    said = f'Your key is {KEY} indeed.'
    cut = said.index(KEY) + 11
    events = [delta(model=f'model {KEY}', reasoning_content=f'Thinking about {forms_of(KEY)["base64"]}'),
              delta(content=said[:cut]), delta(content=said[cut:])]
    if fails:
        events.append(json.dumps({'error': {'message': f'quota exceeded for Bearer {forms_of(KEY)[form]}'}}))
    else:
        events += [json.dumps({'model': KEY, 'choices': [{'delta': {}, 'finish_reason': 'stop'}]}), '[DONE]']
    return Reply(200, chunks=sse(*events), headers=[('Content-Type', 'text/event-stream')])


@pytest.mark.parametrize('form', ['raw', 'percent', 'base64-url'])
def test_the_discussion_window_shows_and_keeps_no_key(qapp, prefs, books, form):
    with ScriptedServer([hostile(form, fails=False), hostile(form, fails=True)]) as server:
        use_server(prefs, server.url, api_key=KEY)
        w = DiscussionWindow(books, Conversation.about(books, [1]))
        w.show()
        try:
            for question in ('First question', 'Second question'):
                w.panel.question.setPlainText(question)
                w.panel.send_button.click()
                wait_until(lambda: not w.panel.streaming)
            shown = w.panel.chat.toPlainText()
            conv = w.panel.conv
            kept = books.history.load(conv.library_id, conv.id)
        finally:
            w.close()
    first, second = conv.turns
    assert first.answer == 'Your key is [redacted] indeed.' and first.answered and KEY not in first.model
    assert 'quota exceeded for Bearer [redacted]' in second.error and second.error in shown
    assert 'Your key is [redacted] indeed.' in shown
    saved = json.dumps(kept.as_dict())
    assert leaks(shown, KEY) == [] and leaks(saved, KEY) == []
    files = '\n'.join(p.read_text() for p in Path(books.history.folder).rglob('*.json'))
    assert files and leaks(files, KEY) == []
