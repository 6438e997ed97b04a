# License: GPLv3 Copyright: the Book AI developers
"""The real LLM peers (dev/peers.py makes them, tests/helpers/peers.py starts them) work on this host."""

import json
import sys
import urllib.error
import urllib.request

import pytest

from helpers.peers import SETUP_HINT, AiMock, LlamaServer, PeerMissing, peers_dir, sdk_python

opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def post(url, body, headers=None):
    req = urllib.request.Request(url, json.dumps(body).encode(), {'Content-Type': 'application/json', **(headers or {})})
    return opener.open(req, timeout=120)


def sse_chat(url, body, headers=None):
    """(text, finish_reason, saw [DONE]) of an OpenAI chat completion stream."""
    text, finish, done = [], None, False
    with post(url, dict(body, stream=True), headers) as r:
        assert r.headers['Content-Type'].startswith('text/event-stream')
        for line in r:
            line = line.decode('utf-8').strip()
            if not line.startswith('data:'):
                continue
            data = line[5:].strip()
            if data == '[DONE]':
                done = True
                break
            for choice in json.loads(data).get('choices', ()):
                text.append(choice.get('delta', {}).get('content') or '')
                finish = choice.get('finish_reason') or finish
    return ''.join(text), finish, done


def test_peers_folder():
    assert (peers_dir() / 'bin' / 'llama-server').exists()
    assert 'dev/peers.py setup' in SETUP_HINT


def test_missing_peer_says_how_to_make_it(monkeypatch, tmp_path):
    monkeypatch.setenv('BOOKAI_PEERS', str(tmp_path))
    with pytest.raises(PeerMissing, match=r'python3 dev/peers\.py setup'):
        LlamaServer('tiny')


def test_tiny_model_streams_the_same_text_twice():
    with LlamaServer('tiny') as llama:
        body = {'model': llama.model, 'temperature': 0, 'max_tokens': 16,
                'messages': [{'role': 'user', 'content': 'Tell me about this book.'}]}
        first = sse_chat(llama.base_url + '/v1/chat/completions', body)
        second = sse_chat(llama.base_url + '/v1/chat/completions', body)
    assert first == second
    text, finish, done = first
    assert text and finish == 'length' and done
    assert llama.model == 'tiny'


def test_smollm2_answers_and_stops_by_itself():
    with LlamaServer('smollm2') as llama:
        r = json.load(post(llama.base_url + '/v1/chat/completions', {
            'model': llama.model, 'temperature': 0, 'max_tokens': 64,
            'messages': [{'role': 'user', 'content': 'What is the capital of France? Answer in one short sentence.'}]}))
    choice = r['choices'][0]
    assert choice['finish_reason'] == 'stop'
    assert 'Paris' in choice['message']['content']
    assert r['model'] == 'SmolLM2-135M-Instruct'


def test_api_key_is_checked():
    with LlamaServer('tiny', api_key='sekrit', alias='tiny-with-key') as llama:
        url = llama.base_url + '/v1/chat/completions'
        body = {'model': llama.model, 'max_tokens': 2, 'messages': [{'role': 'user', 'content': 'hi'}]}
        for headers in ({}, {'Authorization': 'Bearer wrong'}):
            with pytest.raises(urllib.error.HTTPError) as e:
                post(url, body, headers)
            assert e.value.code == 401
            assert 'error' in json.loads(e.value.read())
        ok = json.load(post(url, body, {'Authorization': 'Bearer sekrit'}))
        assert ok['model'] == 'tiny-with-key'


def test_aimock_serves_openai_and_ollama_fixtures(tmp_path):
    (tmp_path / 'fixtures.json').write_text(json.dumps({'fixtures': [
        {'match': {'userMessage': 'hello', 'model': 'mock-model'},
         'response': {'content': 'Hello, reader. Nice book!'}, 'chunkSize': 4},
    ]}))
    with AiMock(tmp_path) as mock:
        messages = [{'role': 'user', 'content': 'hello there'}]
        text, finish, done = sse_chat(mock.base_url + '/v1/chat/completions',
                                      {'model': 'mock-model', 'messages': messages})
        assert (text, finish, done) == ('Hello, reader. Nice book!', 'stop', True)

        with post(mock.base_url + '/api/chat', {'model': 'mock-model', 'messages': messages}) as r:
            lines = [json.loads(line) for line in r if line.strip()]
        assert len(lines) > 2 and all(not x['done'] for x in lines[:-1]) and lines[-1]['done']
        assert ''.join(x['message']['content'] for x in lines) == 'Hello, reader. Nice book!'
        assert lines[-1]['done_reason'] == 'stop'

        tags = json.load(opener.open(mock.base_url + '/api/tags', timeout=30))
        assert [m['name'] for m in tags['models']] == ['mock-model']
        assert [e['path'] for e in mock.journal()] == ['/v1/chat/completions', '/api/chat']  # GETs are not journaled

        with pytest.raises(urllib.error.HTTPError) as e:
            post(mock.base_url + '/v1/chat/completions', {'model': 'other', 'messages': messages})
        assert e.value.code == 404


def test_sdks_import_in_this_python():
    r = sdk_python('import sys, openai, anthropic, google.genai, ollama; '
                   'print(sys.version_info[:2], openai.__version__, anthropic.__version__, google.genai.__version__)')
    assert r.returncode == 0, r.stderr
    assert str(tuple(sys.version_info[:2])) in r.stdout
