# License: GPLv3 Copyright: the Book AI developers
"""Covers made by a service that echoes the key (issue 26, finding 3: OpenRouter's
"model": "model-<key>"), in the forms a service may echo it in: neither what the many-books run
keeps (its outcomes, the staged run's manifest.json, read back for the review) nor calibre's job
log (main_window.cover_actions.make_covers, the job's own work, run here in a real calibre library)
holds any form of it; a book the service refused with the key in its error neither.
A scripted server answers as OpenRouter documents it."""

import base64
import json
import os

import pytest

from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import REDACTED
from helpers.images import png
from helpers.scripted_server import Reply, ScriptedServer
from helpers.secret_forms import forms_of, leaks

KEY = 'sk-or-v1-4b9e2c7d1a8f3e6b5c0d9a2f7e4b1c8d'
PICTURE = png(24, 32, 0x50)
CATALOGUE = {'data': [{'id': 'google/gemini-2.5-flash-image', 'name': 'Gemini 2.5 Flash Image',
                       'architecture': {'output_modalities': ['image', 'text']}}]}


def answer(body: object, status: int = 200) -> Reply:
    return Reply(status, json.dumps(body).encode(), headers=[('Content-Type', 'application/json')])


def made(echo: str) -> Reply:
    url = 'data:image/png;base64,' + base64.b64encode(PICTURE).decode()
    return answer({'id': f'gen-{echo}', 'model': f'model-{echo}', 'choices': [{
        'finish_reason': 'stop', 'message': {'role': 'assistant', 'content': f'Made by {echo}.', 'images': [
            {'type': 'image_url', 'image_url': {'url': url}}]}}],
        'usage': {'prompt_tokens': 9, 'completion_tokens': 12, 'cost': 0.04}})


def refused(echo: str) -> Reply:
    return answer({'error': {'message': f'No auth credentials found for {echo}', 'code': 401}}, 401)


def openrouter(server: ScriptedServer):
    from calibre_plugins.bookai.providers.registry import get_provider
    return get_provider('openrouter', settings={'base_url': server.url + '/api/v1', 'api_key': KEY,
                                                'image_model': 'google/gemini-2.5-flash-image'})


FORMS = ['raw', 'lower', 'upper', 'bearer-lower', 'percent-dash', 'percent-every-byte', 'percent-twice', 'json-u',
         'html-decimal', 'html-hex', 'html-named', 'hex', 'base64', 'base64-bearer']


@pytest.mark.parametrize('form', FORMS)
def test_the_staged_run_and_its_manifest_hold_no_key(tmp_path, form):
    from calibre_plugins.bookai.covers.bulk import MANIFEST, load_run, run_covers
    from calibre_plugins.bookai.covers.making import BookRequest
    echo = forms_of(KEY)[form]
    requests = [BookRequest(1, 'Book 1', 'A cover for Book 1'), BookRequest(2, 'Book 2', 'A cover for Book 2')]
    with ScriptedServer([answer(CATALOGUE), made(echo), refused(echo)]) as server:
        outcomes = run_covers(requests, openrouter(server), '2:3', 1, str(tmp_path / 'run'), CancelToken(),
                              library_id='lib', library_path=str(tmp_path / 'library'))
    assert [o.status for o in outcomes] == ['made', 'failed']
    assert outcomes[0].model.startswith('model-') and REDACTED in outcomes[0].model and REDACTED in outcomes[1].error
    assert (tmp_path / 'run' / '1.png').read_bytes() == PICTURE
    with open(tmp_path / 'run' / MANIFEST, encoding='utf-8') as f:
        manifest = f.read()
    assert leaks(manifest, KEY) == [] and leaks(json.dumps(json.loads(manifest)), KEY) == []
    run = load_run(str(tmp_path / 'run'))
    assert [o.model for o in run.outcomes] == [outcomes[0].model, ''] and REDACTED in run.outcomes[1].error
    assert leaks(repr(run), KEY) == [] and leaks(repr(outcomes), KEY) == []


@pytest.mark.parametrize('form', ['raw', 'bearer-lower', 'percent-every-byte', 'json-u', 'html-hex', 'hex'])
def test_the_jobs_log_holds_no_key(tmp_path, form):
    from calibre.ebooks.metadata.book.base import Metadata
    from calibre.library import db as open_library

    from calibre_plugins.bookai.covers.prompt import choices_from_prefs
    from calibre_plugins.bookai.main_window.cover_actions import make_covers
    echo = forms_of(KEY)[form]
    library = open_library(str(tmp_path / 'library')).new_api
    ids = [library.create_book_entry(Metadata(title, ['A. Writer'])) for title in ('Book One', 'Book Two')]
    log = []
    with ScriptedServer([answer(CATALOGUE), made(echo), refused(echo)]) as server:
        result = make_covers(library, ids, choices_from_prefs(), openrouter(server), 1, 'lib',
                             str(tmp_path / 'library'), log=log.append)
    assert [o.status for o in result.outcomes] == ['made', 'failed']
    assert log[0].startswith('Made: Book One (model-') and REDACTED in log[0], log
    assert log[1].startswith('Failed: Book Two: ') and REDACTED in log[1], log
    assert leaks('\n'.join(log), KEY) == []
    with open(os.path.join(result.staging_dir, 'manifest.json'), encoding='utf-8') as f:
        assert leaks(f.read(), KEY) == []
