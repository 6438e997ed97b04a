# License: GPLv3 Copyright: the Book AI developers
"""The command line, end to end (a real calibre with the plugin installed): a service that
echoes the key, inside its stream and in its answer, gets it printed nowhere (standard
output, standard error, --json) and kept nowhere (the conversation's history)."""

import json

import pytest

from helpers.books import quick_start_epub
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


@pytest.mark.parametrize('form', ['raw', 'percent', 'base64', 'base64-bearer'])
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
