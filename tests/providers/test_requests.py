# License: GPLv3 Copyright: the Book AI developers
"""What each provider puts on the wire for the shared settings, and how it picks models."""

import json
import time

import pytest

from calibre_plugins.bookai.core.messages import Message, Role
from calibre_plugins.bookai.providers.models import Model
from calibre_plugins.bookai.providers.registry import PROVIDERS, get_provider
from helpers.scripted_server import Reply, ScriptedServer

TURNS = [Message(Role.SYSTEM, 'sys'), Message(Role.USER, 'u1'), Message(Role.ASSISTANT, 'a1'),
         Message(Role.USER, 'u2')]


def payload(name, **settings):
    s = {'api_key': 'k' * 12, 'base_url': 'http://127.0.0.1:9'}
    s.update(settings)
    return json.loads(get_provider(name, settings=s).chat_request(TURNS, 'model-x').body)


# provider: {effort: what its request says}
REASONING = {
    'openai': lambda p: p.get('reasoning', {}).get('effort'),
    'anthropic': lambda p: p.get('thinking', {}).get('budget_tokens'),
    'gemini': lambda p: p.get('generationConfig', {}).get('thinkingConfig', {}).get('thinkingBudget'),
    'openrouter': lambda p: p.get('reasoning'),
    'ollama': lambda p: p.get('think'),
    'openai_compatible': lambda p: p.get('reasoning_effort'),
    'grok': lambda p: p.get('reasoning_effort'),
}
EXPECTED = {
    'openai': {'auto': None, 'high': 'high', 'medium': 'medium', 'low': 'low', 'none': 'minimal'},
    'anthropic': {'auto': None, 'high': 16000, 'medium': 6000, 'low': 2000, 'none': None},
    'gemini': {'auto': None, 'high': 24576, 'medium': 8192, 'low': 1024, 'none': 0},
    'openrouter': {'auto': None, 'high': {'effort': 'high'}, 'medium': {'effort': 'medium'},
                   'low': {'effort': 'low'}, 'none': {'enabled': False}},
    'ollama': {'auto': None, 'high': True, 'medium': True, 'low': True, 'none': False},
    'openai_compatible': {'auto': None, 'high': 'high', 'medium': 'medium', 'low': 'low', 'none': None},
    'grok': {'auto': None, 'high': 'high', 'medium': 'high', 'low': 'low', 'none': None},
}


@pytest.mark.parametrize('name', list(REASONING))
def test_one_reasoning_setting_mapped_per_provider(name):
    got = {effort: REASONING[name](payload(name, reasoning_effort=effort)) for effort in EXPECTED[name]}
    assert got == EXPECTED[name]


@pytest.mark.parametrize('name', list(PROVIDERS))
def test_every_turn_is_sent_in_the_providers_own_shape(name):
    p = payload(name)
    if name == 'gemini':
        turns = [(c['role'], c['parts'][0]['text']) for c in p['contents']]
        assert turns == [('user', 'u1'), ('model', 'a1'), ('user', 'u2')]
        assert p['systemInstruction']['parts'][0]['text'] == 'sys'
    elif name == 'anthropic':
        assert [(m['role'], m['content']) for m in p['messages']] == [('user', 'u1'), ('assistant', 'a1'), ('user', 'u2')]
        assert p['system'] == 'sys'
    elif name == 'openai':
        assert [(m['role'], m['content'][0]['text']) for m in p['input']] == [
            ('user', 'u1'), ('assistant', 'a1'), ('user', 'u2')]
        assert p['instructions'] == 'sys'
    else:
        assert [(m['role'], m['content']) for m in p['messages']] == [
            ('system', 'sys'), ('user', 'u1'), ('assistant', 'a1'), ('user', 'u2')]


def models(*ids, created=None):
    return [Model(i, created=(created or {}).get(i, 0)) for i in ids]


@pytest.mark.parametrize('name, listed, expected', [
    ('openai', models('gpt-4o', 'gpt-5', 'gpt-5-mini', 'gpt-5-nano', 'gpt-5.1', 'gpt-5.1-mini', 'gpt-5.1-codex',
                      'gpt-5-2025-08-07', 'o3', created={'gpt-5.1': 2, 'gpt-5.1-mini': 2, 'gpt-5': 1}),
     {'high': 'gpt-5.1', 'medium': 'gpt-5.1-mini', 'low': 'gpt-5-nano'}),
    ('anthropic', models('claude-opus-4-1-20250805', 'claude-opus-4-5-20251101', 'claude-sonnet-4-5-20250929',
                         'claude-haiku-4-5-20251001', 'claude-3-5-haiku-20241022',
                         created={'claude-opus-4-5-20251101': 3, 'claude-opus-4-1-20250805': 2,
                                  'claude-haiku-4-5-20251001': 2, 'claude-3-5-haiku-20241022': 1}),
     {'high': 'claude-opus-4-5-20251101', 'medium': 'claude-sonnet-4-5-20250929', 'low': 'claude-haiku-4-5-20251001'}),
    ('gemini', models('gemini-2.0-flash', 'gemini-2.5-flash', 'gemini-2.5-flash-lite', 'gemini-2.5-pro',
                      'gemini-3-pro-preview', 'text-embedding-004'),
     {'high': 'gemini-3-pro-preview', 'medium': 'gemini-2.5-flash', 'low': 'gemini-2.5-flash-lite'}),
])
def test_the_tier_picks_the_newest_matching_model_of_the_live_list(name, listed, expected):
    p = get_provider(name, settings={'api_key': 'k' * 12})
    assert {tier: p.pick_for_tier(listed, tier).id for tier in expected} == expected


def test_openrouter_free_only_and_auto():
    listed = [Model('openai/gpt-5', prices=(1.25, 10.0)), Model('meta/llama-free', free=True, prices=(0.0, 0.0))]
    free = get_provider('openrouter', settings={'api_key': 'k' * 12, 'model_strategy': 'free'})
    assert free.pick_for_tier(listed, 'high').id == 'meta/llama-free'
    auto = get_provider('openrouter', settings={'api_key': 'k' * 12, 'model_strategy': 'auto'})
    assert auto.pick_for_tier(listed, 'high').id == 'openrouter/auto'


def test_the_model_list_is_cached_for_a_day(monkeypatch):
    listing = json.dumps({'data': [{'id': 'only-model', 'created': 1}]}).encode()
    with ScriptedServer([Reply(200, listing), Reply(200, listing)]) as server:
        p = get_provider('openai_compatible', settings={'base_url': server.url + '/v1'})
        assert [m.id for m in p.models()] == ['only-model']
        assert [m.id for m in p.models()] == ['only-model']
        assert len(server.received) == 1  # the second came from the cache
        later = time.time() + 25 * 3600
        monkeypatch.setattr(time, 'time', lambda: later)
        p.models()
        assert len(server.received) == 2  # a day later it is fetched again
    import os
    assert p.models_cache_path().startswith(os.environ['CALIBRE_CACHE_DIRECTORY'])


def test_service_timestamps_are_read_with_any_precision():
    from calibre_plugins.bookai.providers.models import timestamp_of
    assert timestamp_of('2025-09-29T00:00:00Z') == 1759104000.0
    assert timestamp_of('2025-09-29T00:00:00.123456789-00:00') == 1759104000.123456  # Ollama's nanoseconds
    assert timestamp_of('') == timestamp_of('not a time') == 0.0
