# License: GPLv3 Copyright: the Book AI developers
"""What the command line shows cannot lie, from calibre's own calibre-debug with the plugin
installed, against a scripted server: a web source's address is printed (and written as JSON,
and kept in the History) without its user:password@, a look-alike host as the punycode a browser
opens; --json is always valid JSON (a cost of NaN or Infinity from OpenRouter becomes null, never
NaN, which is not JSON); a model list that names one id three times prints it once."""

import json

import pytest

from helpers.scripted_server import Reply, ScriptedServer, sse

SSE = [('Content-Type', 'text/event-stream')]
JSON = [('Content-Type', 'application/json')]
LOOKALIKE = 'раураl.com'  # Cyrillic р а у р а, Latin l
LOOKALIKE_ASCII = 'xn--l-7sba6dbr.com'


def strict_json(line: str) -> object:
    def refuse(name):
        raise ValueError(f'{name} is not JSON')
    return json.loads(line, parse_constant=refuse)


def venice_answer() -> list[Reply]:
    cited = [{'title': 'PayPal login', 'url': f'https://user:hunter2@{LOOKALIKE}/login'},
             {'title': 'Docs', 'url': 'https://token:s3cr3t-token@docs.example.org/a'}]
    first = json.dumps({'id': 'c1', 'model': 'm', 'choices': [{'index': 0, 'delta': {'content': 'See the sources.'},
                                                               'finish_reason': None}],
                        'venice_parameters': {'web_search_citations': cited}})
    last = json.dumps({'id': 'c1', 'model': 'm', 'choices': [{'index': 0, 'delta': {}, 'finish_reason': 'stop'}]})
    return [Reply(200, b'{"data": []}', headers=JSON), Reply(200, headers=SSE, chunks=sse(first, last, '[DONE]'))]


def configure(cli, provider, server, path):
    r = cli('configure', provider, f'base_url={server.url}{path}', 'model=m', 'timeout=30', 'api_key=env:K', '--use',
            env={'K': 'sk-test-0123456789abcdef'})
    assert r.returncode == 0, r


@pytest.mark.parametrize('as_json', [False, True])
def test_a_source_is_printed_without_userinfo_and_a_lookalike_host_as_punycode(cli, sandbox, library, as_json):
    with ScriptedServer(venice_answer()) as server:
        configure(cli, 'venice', server, '/api/v1')
        r = cli('ask', '--library', library, '--book', '1', '--prompt', 'Where?', *(['--json'] if as_json else []))
    assert r.returncode == 0, r
    for secret in ('hunter2', 's3cr3t-token', 'user:', 'token:', LOOKALIKE):
        assert secret not in r.stdout and secret not in r.stderr
    if as_json:
        (done,) = [e for e in map(strict_json, r.stdout.splitlines()) if e['type'] == 'done']
        assert [w['url'] for w in done['web_links']] == [f'https://{LOOKALIKE_ASCII}/login', 'https://docs.example.org/a']
    else:
        assert f'- PayPal login <https://{LOOKALIKE_ASCII}/login>' in r.stdout
        assert '- Docs <https://docs.example.org/a>' in r.stdout
    (saved,) = (sandbox.config / 'plugins' / 'bookai-history').glob('*/*.json')
    text = saved.read_text(encoding='utf-8')
    assert 'hunter2' not in text and 's3cr3t-token' not in text and LOOKALIKE not in text and LOOKALIKE_ASCII in text


@pytest.mark.parametrize('cost', ['NaN', 'Infinity', '-Infinity', '-5', '1e308'])
def test_json_output_is_json_whatever_cost_openrouter_reports(cli, library, cost):
    stream = sse('{"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"content": "Hi"}}]}',
                 '{"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], '
                 f'"usage": {{"prompt_tokens": 3, "completion_tokens": 1, "cost": {cost}}}}}', '[DONE]')
    with ScriptedServer([Reply(200, headers=SSE, chunks=stream)]) as server:
        configure(cli, 'openrouter', server, '/api/v1')
        r = cli('ask', '--library', library, '--book', '1', '--prompt', 'Hi?', '--json')
    assert r.returncode == 0, r
    events = [strict_json(line) for line in r.stdout.splitlines()]
    (usage,) = [e for e in events if e['type'] == 'usage']
    assert usage['cost'] is None and (usage['input_tokens'], usage['output_tokens']) == (3, 1)


def test_a_model_listed_three_times_is_printed_once(cli):
    entry = {'id': 'openai/gpt-5', 'name': 'OpenAI: GPT-5', 'pricing': {'prompt': 'Infinity', 'completion': '1e300'}}
    listing = {'data': [entry, dict(entry, name='Again'), dict(entry, name='And again'),
                        {'id': 'openai/gpt-5-mini', 'name': 'OpenAI: GPT-5 Mini'}]}
    with ScriptedServer([Reply(200, json.dumps(listing).encode(), headers=JSON)]) as server:
        configure(cli, 'openrouter', server, '/api/v1')
        r = cli('models', 'openrouter', '--refresh')
    assert r.returncode == 0, r
    assert r.stdout.splitlines() == ['openai/gpt-5\tOpenAI: GPT-5', 'openai/gpt-5-mini\tOpenAI: GPT-5 Mini']
