# License: GPLv3 Copyright: the Book AI developers
"""The book fields chosen reach the request: calibre-debug -r "Book AI" -- ask, on a real
library with custom columns, against a scripted server that keeps what it received. The
date added, the formats, the size and a custom column go as the settings say; Book AI
1.0.0's settings (custom columns in one list for every library) still work."""

import json

from calibre_plugins.bookai.conversation.library import BookLibrary
from helpers.book_fields import BOOK, library_with_columns, set_plugin_prefs
from helpers.scripted_server import Reply, ScriptedServer, sse


def answer() -> Reply:
    chunk = json.dumps({'model': 'tiny', 'choices': [{'index': 0, 'delta': {'content': 'Noted.'}}]})
    return Reply(200, chunks=sse(chunk, '[DONE]'), headers=[('Content-Type', 'text/event-stream')])


def system_message(received: dict) -> str:
    body = json.loads(received['body'])
    assert body['messages'][0]['role'] == 'system'
    return body['messages'][0]['content']


def test_the_fields_chosen_reach_the_server(cli, sandbox):
    lib = library_with_columns(sandbox)
    library = BookLibrary.open(str(lib))
    library_id = library.library_id
    library.db.close()
    with ScriptedServer([answer(), answer()]) as server:
        r = cli('configure', 'openai_compatible', f'base_url={server.url}/v1', 'model=tiny')
        assert r.returncode == 0, r
        set_plugin_prefs(sandbox, book_fields=['formats', 'size', 'timestamp'],
                         book_custom_fields={library_id: ['#mood'], 'another-library': ['#read']})
        shown = cli('ask', '--library', lib, '--book', str(BOOK), '--prompt', 'What is it?', '--show-sent')
        assert shown.returncode == 0 and 'nothing was sent' in shown.stdout, shown
        assert server.received == []
        r = cli('ask', '--library', lib, '--book', str(BOOK), '--prompt', 'What is it?')
        assert r.returncode == 0 and 'Noted.' in r.stdout, r

        # Book AI 1.0.0's settings: custom columns for every library, in book_fields
        set_plugin_prefs(sandbox, book_fields=['#mood', 'publisher'], book_custom_fields={})
        old = cli('ask', '--library', lib, '--book', str(BOOK), '--prompt', 'And now?')
        assert old.returncode == 0, old
    sent = system_message(server.received[0])
    from calibre.library import db  # what calibre itself shows for these fields of this book
    cache = db(str(lib)).new_api
    try:
        mi = cache.get_metadata(BOOK)
        mi.set('size', cache.field_for('size', BOOK))
        for field in ('formats', 'size', 'timestamp', '#mood'):
            name, value = mi.format_field(field)
            assert f'\n{name}: {value}' in sent, (field, sent)
    finally:
        cache.close()
    assert '\nFormats: EPUB' in sent and '\nMood: calm' in sent and '\nDate: ' in sent and '\nSize: ' in sent
    assert 'Read on' not in sent and 'Publisher' not in sent and 'tagged' not in sent  # only what was chosen
    assert sent in shown.stdout  # --show-sent shows it as it is sent
    sent = system_message(server.received[1])
    assert '\nMood: calm' in sent and '\nPublisher: Kovid Press' in sent and 'Formats' not in sent
