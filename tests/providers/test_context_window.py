# License: GPLv3 Copyright: the Book AI developers
"""The context window of the model in use (providers/context.py, ModelList.context_window):
learned from a real llama-server's /props at a local address; from the lists and details of the
services no peer here serves (OpenRouter, Venice, LM Studio, Ollama's /api/show), scripted;
from the dated table for the cloud services; unknown otherwise. What a service sends that is not
a window (a string, a negative, 1e308, a huge or endless body) leaves it unknown, bounded."""

import json
import time

import pytest

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.providers.context import CONTEXT_DATE, ContextWindow, table_window, window_tokens
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.peers import RecordingProxy
from helpers.scripted_server import Reply, ScriptedServer

TINY_CONTEXT = 1536   # the tiny llama-server's -c: what /props must say
TINY_TOKENS = 8


def paths(proxy: RecordingProxy) -> list[str]:
    return [path for _method, path, _body in proxy.received]


def json_reply(value: object) -> Reply:
    return Reply(200, json.dumps(value).encode(), [('Content-Type', 'application/json')])


def test_llama_server_props_give_its_context_at_a_local_address(tiny):
    with RecordingProxy(tiny.base_url) as proxy:
        p = get_provider('openai_compatible', settings={'base_url': proxy.base_url + '/v1', 'model': 'tiny'})
        assert p.connection.is_local
        assert p.context_window('tiny') == ContextWindow(TINY_CONTEXT, 'service')
        assert p.context_window('tiny') == ContextWindow(TINY_CONTEXT, 'service')  # kept: asked once
        assert paths(proxy) == ['/props']


def test_a_remote_service_at_the_same_server_is_never_asked_for_props(tiny):
    """/props is llama.cpp's, asked only of a server on this computer: a service on the internet
    (here Grok, at the llama-server's address) is never local; its list says no window, and the
    table does not know 'tiny': unknown."""
    with RecordingProxy(tiny.base_url) as proxy:
        p = get_provider('grok', settings={'base_url': proxy.base_url + '/v1', 'api_key': 'xai-k'})
        assert p.context_window('tiny') is None
        assert '/props' not in paths(proxy) and paths(proxy) == ['/v1/models']


def test_lm_studio_loaded_context_else_its_most():
    listing = {'data': [{'id': 'other', 'loaded_context_length': 99},
                        {'id': 'qwen', 'state': 'loaded', 'max_context_length': 32768, 'loaded_context_length': 8192},
                        {'id': 'gemma', 'state': 'not-loaded', 'max_context_length': 131072}]}
    with ScriptedServer([json_reply(listing), json_reply(listing)]) as s:
        p = get_provider('lmstudio', settings={'base_url': s.url + '/v1'})
        assert p.context_window('qwen') == ContextWindow(8192, 'service')
        assert p.context_window('gemma') == ContextWindow(131072, 'service')
        assert [r['path'] for r in s.received] == ['/api/v0/models'] * 2


@pytest.mark.parametrize('show, tokens', [
    ({'parameters': 'stop "<|im_end|>"\nnum_ctx 8192\ntemperature 0.7', 'model_info': {
        'general.architecture': 'qwen2', 'qwen2.context_length': 32768}}, 8192),
    ({'model_info': {'general.architecture': 'llama', 'llama.context_length': 131072}}, 131072),
    ({'model_info': {'general.architecture': 'llama', 'llama.context_length': '131072'}}, None),
    ({'parameters': 'num_ctx 99999999999999999999', 'model_info': {}}, None),
    ({'model_info': {'general.architecture': ['llama'], 'llama.context_length': 4096}}, None),
    ([1, 2, 3], None),
])
def test_ollama_show_shapes(show, tokens):
    replies = [json_reply(show), json_reply({'models': [{'name': 'm:latest', 'model': 'm:latest'}]})]
    with ScriptedServer(replies) as s:
        p = get_provider('ollama', settings={'base_url': s.url})
        window = p.context_window('m:latest')
        assert window == (ContextWindow(tokens, 'service') if tokens else None)
        assert s.received[0]['path'] == '/api/show' and json.loads(s.received[0]['body']) == {'model': 'm:latest'}


def test_ollama_context_length_set_by_the_reader_wins_and_nothing_is_asked():
    with ScriptedServer([]) as s:
        p = get_provider('ollama', settings={'base_url': s.url, 'context_length': 16384})
        assert p.context_window('m') == ContextWindow(16384, 'setting')
        assert s.received == []


def test_openrouter_and_venice_lists_give_the_window():
    openrouter = {'data': [{'id': 'a/b', 'name': 'B', 'context_length': 200000, 'pricing': {}},
                           {'id': 'a/c', 'context_length': -5}]}
    with ScriptedServer([json_reply(openrouter)]) as s:
        p = get_provider('openrouter', settings={'base_url': s.url + '/v1', 'api_key': 'sk-or-k'})
        assert p.context_window('a/b') == ContextWindow(200000, 'list')
        assert p.context_window('a/c') is None  # the list is cached: no second request
        assert len(s.received) == 1
    venice = {'data': [{'id': 'venice-uncensored', 'type': 'text', 'model_spec': {
        'availableContextTokens': 32768, 'pricing': {'input': {'usd': 0.5}, 'output': {'usd': 2}}}}]}
    with ScriptedServer([json_reply(venice)]) as s:
        p = get_provider('venice', settings={'base_url': s.url + '/api/v1', 'api_key': 'vk'})
        assert p.context_window('venice-uncensored') == ContextWindow(32768, 'list')


def test_cloud_models_from_the_dated_table():
    assert table_window('anthropic', 'claude-sonnet-4-5-20250929') == ContextWindow(200_000, 'table', CONTEXT_DATE)
    assert table_window('openai', 'gpt-4.1-mini') == ContextWindow(1_047_576, 'table', CONTEXT_DATE)
    assert table_window('gemini', 'models/gemini-2.5-flash') == ContextWindow(1_048_576, 'table', CONTEXT_DATE)
    assert table_window('openai', 'gpt-4.1-mini-turbo') is None and table_window('nobody', 'gpt-4o') is None
    with ScriptedServer([json_reply({'data': [{'id': 'claude-sonnet-4-5-20250929', 'created_at': None}]})]) as s:
        p = get_provider('anthropic', settings={'base_url': s.url + '/v1', 'api_key': 'sk-ant-k'})
        assert p.context_window('claude-sonnet-4-5-20250929') == ContextWindow(200_000, 'table', CONTEXT_DATE)


@pytest.mark.parametrize('n_ctx', ['4096', -4096, 0, 1e308, 4096.0, True, 2 ** 60, None, {'n': 1}, [4096]])
def test_a_props_figure_that_is_not_a_window_is_none(n_ctx):
    assert window_tokens(n_ctx) is None
    replies = [json_reply({'default_generation_settings': {'n_ctx': n_ctx}}), json_reply({'data': [{'id': 'm'}]})]
    with ScriptedServer(replies) as s:
        p = get_provider('openai_compatible', settings={'base_url': s.url + '/v1'})
        assert p.context_window('m') is None
        assert [r['path'] for r in s.received] == ['/props', '/v1/models']


@pytest.mark.parametrize('reply', [
    Reply(200, b'{"default_generation_settings": {"n_ctx": ' + b'[' * 100_000),    # deep, damaged
    Reply(200, b'x' * (limits.MAX_JSON_BYTES + 10)),                                # larger than its bound
    Reply(200, b'<html>not found</html>'),
    Reply(404, b'{"error": {"message": "File Not Found", "code": 404}}'),
])
def test_props_that_cannot_be_read_leave_the_window_to_the_list(reply):
    with ScriptedServer([reply, json_reply({'data': [{'id': 'm', 'context_length': 8192}]})]) as s:
        p = get_provider('openai_compatible', settings={'base_url': s.url + '/v1'})
        assert p.context_window('m') == ContextWindow(8192, 'list')


def test_a_server_that_stalls_is_waited_for_only_so_long(monkeypatch):
    monkeypatch.setattr(limits, 'CONTEXT_LOOKUP_SECONDS', 1.0)
    stall = Reply(200, chunks=[b'{"default_generation_settings": ', b'{}}'], stall_after=1,
                  headers=[('Content-Type', 'application/json')])
    with ScriptedServer([stall, json_reply({'data': []})]) as s:
        p = get_provider('openai_compatible', settings={'base_url': s.url + '/v1', 'read_timeout': 600})
        started = time.monotonic()
        window = p.context_window('m')
        assert time.monotonic() - started < 10
        # unknown, and why in words: the question says it (question.book_question)
        assert (window.tokens, window.source) == (0, 'unknown') and 'Book AI' not in window.why and window.why
        s.release.set()
        assert 'm' not in p.context_windows  # the service failed to say: asked again next time


def test_stop_stops_the_lookup():
    cancel = CancelToken()
    cancel.cancel()
    with ScriptedServer([json_reply({'default_generation_settings': {'n_ctx': 4096}})]) as s:
        p = get_provider('openai_compatible', settings={'base_url': s.url + '/v1'})
        with pytest.raises(Cancelled):
            p.context_window('m', cancel)
        assert p.context_windows == {}
