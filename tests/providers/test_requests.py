# License: GPLv3 Copyright: the Book AI developers
"""What each provider puts on the wire for the shared settings, and how it picks models."""

import json
import time

import pytest

from calibre_plugins.bookai.providers.models import Model
from calibre_plugins.bookai.providers.registry import PROVIDERS, get_provider
from helpers.reasoning import EXPECTED, REASONING, payload
from helpers.scripted_server import Reply, ScriptedServer

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
        # the last question as a block: the end of the prompt cache (providers/caching.py)
        assert [(m['role'], m['content']) for m in p['messages']] == [
            ('user', 'u1'), ('assistant', 'a1'),
            ('user', [{'type': 'text', 'text': 'u2', 'cache_control': {'type': 'ephemeral'}}])]
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
    """(On recorded catalogues, against calibre's own choice: test_openrouter.py.)"""
    free_price, paid_price = (('prompt', 0.0), ('completion', 0.0)), (('prompt', 1.25e-6), ('completion', 1e-5))
    listed = [Model('openai/gpt-5', 'OpenAI: GPT-5', pricing=paid_price),
              Model('openai/gpt-oss-20b:free', 'OpenAI: gpt-oss-20b (free)', free=True, pricing=free_price)]
    free = get_provider('openrouter', settings={'api_key': 'k' * 12, 'model_strategy': 'free'})
    free.models = lambda refresh=False, cancel=None: listed
    assert free.choose_model('high') == 'openai/gpt-oss-20b:free'
    auto = get_provider('openrouter', settings={'api_key': 'k' * 12, 'model_strategy': 'auto'})
    assert auto.choose_model('high') == 'openrouter/auto'


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
    assert p.model_list.cache_path().startswith(os.environ['CALIBRE_CACHE_DIRECTORY'])


def test_service_timestamps_are_read_with_any_precision():
    from calibre_plugins.bookai.providers.models import timestamp_of
    assert timestamp_of('2025-09-29T00:00:00Z') == 1759104000.0
    assert timestamp_of('2025-09-29T00:00:00.123456789-00:00') == 1759104000.123456  # Ollama's nanoseconds
    assert timestamp_of('') == timestamp_of('not a time') == 0.0


@pytest.mark.parametrize('name', list(REASONING))
def test_a_providers_own_reasoning_effort_wins_over_the_plugin_wide_one(name):
    """Book AI 1.0.0 kept one effort for all providers: it still counts where a provider has none."""
    p = get_provider(name, settings={'api_key': 'k' * 12, 'base_url': 'http://127.0.0.1:9', 'reasoning_effort': 'low'})
    assert p.config.option('reasoning_effort') == 'low'
    assert p.option_named('reasoning_effort').kind == 'choice'
    assert {v for v, label in p.option_named('reasoning_effort').choices} == set(EXPECTED[name])
