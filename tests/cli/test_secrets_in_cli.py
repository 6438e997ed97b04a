# License: GPLv3 Copyright: the Book AI developers
"""The command line, end to end (a real calibre with the plugin installed): a service that
echoes the key, inside its stream and in its answer, gets it printed nowhere (standard
output, standard error, --json) and kept nowhere (the conversation's history); nor an image
service that names its model "model-<key>" (issue 26, finding 3: "cover" printed "Model:
model-sk-..."), nor a model list; in the forms a service may echo it in (helpers.secret_forms)."""

import json

import pytest

from helpers.books import quick_start_epub
from helpers.images import b64, png
from helpers.scripted_server import Reply, ScriptedServer, sse
from helpers.secret_forms import forms_of, leaks

KEY = 'sk-live-7f3Qz9/Xa+Lm2Kp0Vw8Rt5Yb'


def chunk(text, model='m'):
    return json.dumps({'model': model, 'choices': [{'delta': {'content': text}}]})


def hostile_reply(form):
    """Some text with the key split across two events, then the key again in an error inside the stream."""
    said = f'Your key is {KEY} indeed. '
    cut = said.index(KEY) + 7
    return Reply(200, chunks=sse(chunk(said[:cut], model=KEY), chunk(said[cut:]), json.dumps(
        {'error': {'message': f'quota exceeded for Bearer {forms_of(KEY)[form]}'}})),
        headers=[('Content-Type', 'text/event-stream')])


@pytest.mark.parametrize('form', ['raw', 'percent', 'base64', 'base64-bearer', 'bearer-lower', 'percent-every-byte',
                                  'json-u', 'html-hex'])
def test_the_command_line_prints_and_keeps_no_key(cli, sandbox, form):
    lib = sandbox.make_library(quick_start_epub())
    with ScriptedServer([hostile_reply(form), hostile_reply(form)]) as server:
        r = cli('configure', 'openai_compatible', f'base_url={server.url}/v1', 'model=m', 'api_key=-',
                stdin=KEY + '\n')
        assert r.returncode == 0, r
        plain = cli('ask', '--library', lib, '--book', '1', '--prompt', 'Who wrote it?')
        as_json = cli('ask', '--library', lib, '--book', '1', '--prompt', 'Who wrote it?', '--json')
    for r in (plain, as_json):
        assert r.returncode == 4 and 'quota exceeded for Bearer ' in r.stdout + r.stderr, r
        assert '[redacted]' in (r.stderr if r is plain else r.stdout).split('quota exceeded for Bearer ')[1]
        assert 'Traceback' not in r.stderr
        assert leaks(r.stdout + r.stderr, KEY) == [], r
    assert 'Your key is [redacted] indeed.' in plain.stdout
    events = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert ''.join(e.get('text', '') for e in events if e['type'] == 'text') == 'Your key is [redacted] indeed. '
    assert [e for e in events if e['type'] == 'error'] and leaks(json.dumps(events), KEY) == []
    kept = [p.read_text() for p in (sandbox.config / 'plugins' / 'bookai-history').rglob('*.json')]
    assert kept and 'Your key is [redacted] indeed.' in kept[0]
    assert leaks('\n'.join(kept), KEY) == []


CATALOGUE = {'data': [{'id': 'google/gemini-2.5-flash-image', 'name': 'Gemini 2.5 Flash Image',
                       'architecture': {'output_modalities': ['image', 'text']}}]}


def as_json(body, status=200):
    return Reply(status, json.dumps(body).encode(), headers=[('Content-Type', 'application/json')])


def image_made_by(echo):
    """OpenRouter's answer with an image, made by the model "model-<echo>", as in issue 26."""
    return as_json({'id': f'gen-{echo}', 'model': f'model-{echo}', 'choices': [{'finish_reason': 'stop', 'message': {
        'role': 'assistant', 'content': f'Here it is, {echo}.', 'images': [
            {'type': 'image_url', 'image_url': {'url': 'data:image/png;base64,' + b64(png(20, 30))}}]}}],
        'usage': {'prompt_tokens': 9, 'completion_tokens': 12, 'cost': 0.04}})


@pytest.mark.parametrize('form', ['raw', 'lower', 'percent-every-byte', 'html-hex', 'hex'])
def test_the_cover_command_prints_no_key_as_the_models_name(cli, sandbox, tmp_path, form):
    echo = forms_of(KEY)[form]
    lib = sandbox.make_library(quick_start_epub())
    refused = as_json({'error': {'message': f'Invalid credentials: {echo}', 'code': 401}}, 401)
    with ScriptedServer([as_json(CATALOGUE), image_made_by(echo), as_json(CATALOGUE), refused]) as server:
        r = cli('configure', 'openrouter', f'base_url={server.url}/api/v1', 'image_model=google/gemini-2.5-flash-image',
                'api_key=-', stdin=KEY + '\n')
        assert r.returncode == 0, r
        made = cli('cover', '--library', lib, '1', '--out', tmp_path / 'cover.png', '--provider', 'openrouter')
        failed = cli('cover', '--library', lib, '1', '--out', tmp_path / 'other.png', '--provider', 'openrouter')
    assert made.returncode == 0 and 'Model: model-' in made.stdout and '[redacted]' in made.stdout, made
    assert (tmp_path / 'cover.png').stat().st_size > 0
    assert failed.returncode == 4 and '[redacted]' in failed.stderr and 'Traceback' not in failed.stderr, failed
    for r in (made, failed):
        assert leaks(r.stdout + r.stderr, KEY) == [], r


@pytest.mark.parametrize('form', ['upper', 'percent-twice', 'json-u-upper'])
def test_the_models_command_prints_no_key(cli, sandbox, form):
    echo = forms_of(KEY)[form]
    listing = {'data': [{'id': f'model-{echo}'}, {'id': 'plain-model'}]}
    with ScriptedServer([as_json(listing)]) as server:
        r = cli('configure', 'openai_compatible', f'base_url={server.url}/v1', 'api_key=-', stdin=KEY + '\n')
        assert r.returncode == 0, r
        listed = cli('models', 'openai_compatible', '--refresh')
        cached = cli('models', 'openai_compatible')
    for r in (listed, cached):
        assert r.returncode == 0 and r.stdout.splitlines() == ['model-[redacted]', 'plain-model'], r
        assert leaks(r.stdout + r.stderr, KEY) == [], r
