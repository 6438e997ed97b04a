# License: GPLv3 Copyright: the Book AI developers
"""OpenRouter's automatic model choice (providers/openrouter.py, openrouter_choice), against
calibre 9.17's own (calibre/ai/open_router/backend.py, free_model_choice and
model_choice_for_text) on the same recorded catalogues: the same models in the same order,
the first asked and the others sent as OpenRouter's fallbacks (`models`); the same failure
when only free models may be used and none is free; what the catalogue says of each model
kept, bounded and cached.

The catalogues are OpenRouter's own answers to /api/v1/models, recorded on 2025-07-29 and
2026-05-01 (fixtures/openrouter/README.md says where from and how they were trimmed). Each is
used as recorded and with its free models left out (calibre's paid branch). The expected ids
are written out here: on the host with calibre's AI (forky) calibre's own code must give them
too, and every host checks Book AI's side against them."""

import importlib.util
import json
import os
from dataclasses import asdict
from pathlib import Path

import pytest

from calibre_plugins.bookai.core.errors import NotConfigured
from calibre_plugins.bookai.core.messages import Answer, Message, Role
from calibre_plugins.bookai.providers.models import Model, kept_models, read_models_cache, write_models_cache
from calibre_plugins.bookai.providers.openrouter import openrouter_choice
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.project import HOST
from helpers.scripted_server import Reply, ScriptedServer, sse

FIXTURES = Path(__file__).parent / 'fixtures' / 'openrouter'
RECORDED = ('models-2025-07-29.json', 'models-2026-05-01.json')
KEY = 'sk-or-key-0123456789abcdef'
NO_FREE_MODELS = 'No free models were found for text to text generation'

# what calibre 9.17 chooses (model_choice_for_text), in order: (catalogue, free models left in, strategy)
CALIBRE_CHOOSES = {
    ('models-2025-07-29.json', True, 'free-or-paid'): ['google/gemini-2.5-pro-exp-03-25',
                                                        'deepseek/deepseek-chat-v3-0324:free'],
    ('models-2025-07-29.json', True, 'free-only'): ['google/gemini-2.5-pro-exp-03-25',
                                                     'deepseek/deepseek-chat-v3-0324:free'],
    ('models-2025-07-29.json', False, 'free-or-paid'): ['google/gemini-2.5-flash-lite', 'deepseek/deepseek-r1-0528',
                                                         'x-ai/grok-4', 'anthropic/claude-opus-4'],
    ('models-2025-07-29.json', False, 'free-only'): NO_FREE_MODELS,
    ('models-2026-05-01.json', True, 'free-or-paid'): ['openai/gpt-oss-120b:free'],
    ('models-2026-05-01.json', True, 'free-only'): ['openai/gpt-oss-120b:free'],
    ('models-2026-05-01.json', True, 'native'): ['openrouter/auto'],
    ('models-2026-05-01.json', False, 'free-or-paid'): ['deepseek/deepseek-v4-pro', 'google/gemini-3.1-flash-lite-preview',
                                                         'x-ai/grok-4.3', '~anthropic/claude-opus-latest',
                                                         'openai/gpt-5.5-pro'],
    ('models-2026-05-01.json', False, 'free-only'): NO_FREE_MODELS,
}
# calibre's strategy names and Book AI's ('native' is calibre's "High quality": openrouter/auto)
STRATEGIES = {'free-or-paid': 'free_or_paid', 'free-only': 'free', 'native': 'auto'}


def catalogue(name: str, with_free: bool = True) -> dict:
    """A recorded catalogue, as OpenRouter sent it; without its free models when not with_free."""
    data = json.loads((FIXTURES / name).read_bytes())
    if not with_free:
        data['data'] = [m for m in data['data'] if any(float(v) for v in m['pricing'].values())]
    return data


def openrouter(**settings):
    s = {'api_key': KEY}
    s.update(settings)
    return get_provider('openrouter', settings=s)


def book_ai_chooses(name: str, with_free: bool, strategy: str, monkeypatch) -> list[str] | str:
    """What Book AI asks for, with no model set: the model, then the fallbacks it sends."""
    p = openrouter(model_strategy=STRATEGIES[strategy])
    models = kept_models(p.parse_models(catalogue(name, with_free)))
    monkeypatch.setattr(p, 'models', lambda refresh=False, cancel=None: models)
    try:
        first = p.choose_model()
    except NotConfigured as e:
        return str(e)
    return [first] + list(json.loads(p.chat_request([Message(Role.USER, 'q')], first).body).get('models', ()))


@pytest.mark.parametrize('name, with_free, strategy', list(CALIBRE_CHOOSES))
def test_book_ai_chooses_what_calibre_chooses(name, with_free, strategy, monkeypatch):
    expected = CALIBRE_CHOOSES[name, with_free, strategy]
    got = book_ai_chooses(name, with_free, strategy, monkeypatch)
    if isinstance(expected, str):
        assert isinstance(got, str) and got.startswith(expected), got
    else:
        assert got == expected


@pytest.mark.parametrize('name, with_free, strategy', list(CALIBRE_CHOOSES))
def test_calibres_own_choice_is_the_one_written_out(name, with_free, strategy, monkeypatch):
    """calibre 9.17's own code, on the same catalogue, gives the ids written out above. Where
    calibre has no AI (calibre before 8.11, and the AI-free fork) there is no calibre choice to
    compare with: the ids written out stand for it (test_book_ai_chooses_what_calibre_chooses)."""
    if importlib.util.find_spec('calibre.ai') is None or importlib.util.find_spec('calibre.ai.open_router') is None:
        from calibre.constants import numeric_version
        assert numeric_version < (8, 11) or HOST == 'noai', f'calibre {numeric_version} on {HOST} should have its AI'
        return
    from calibre.ai.open_router import backend
    models = backend.parse_models_list(catalogue(name, with_free))
    monkeypatch.setattr(backend, 'get_available_models', lambda: models)
    monkeypatch.setattr(backend, 'pref', lambda key, defval=None: strategy if key == 'model_choice_strategy' else defval)
    backend.free_model_choice.cache_clear()
    try:
        got = [m.id for m in backend.model_choice_for_text()]
    except Exception as e:  # calibre's NoFreeModels
        got = str(e)
    finally:
        backend.free_model_choice.cache_clear()
    assert got == CALIBRE_CHOOSES[name, with_free, strategy]


def test_a_model_set_explicitly_wins_and_has_no_fallbacks(monkeypatch):
    p = openrouter(model='anthropic/claude-sonnet-4', model_strategy='free')
    monkeypatch.setattr(p, 'models', lambda refresh=False, cancel=None: pytest.fail('no list needed'))
    assert p.choose_model() == 'anthropic/claude-sonnet-4'
    assert 'models' not in json.loads(p.chat_request([Message(Role.USER, 'q')], p.choose_model()).body)


def test_auto_needs_no_list():
    p = openrouter(model_strategy='auto')
    p.models = lambda refresh=False, cancel=None: pytest.fail('no list needed')
    assert p.choose_model() == 'openrouter/auto'


def test_the_request_asks_for_the_first_and_falls_back_to_the_others():
    """The whole way: the catalogue from the service, then the answer, from a scripted server:
    the request names the first model and the others as `models`, as calibre's chat_data does."""
    listing = json.dumps(catalogue('models-2025-07-29.json', with_free=False)).encode()
    answer_chunks = sse(json.dumps({'model': 'google/gemini-2.5-flash-lite', 'choices': [
        {'delta': {'content': 'Hello'}, 'finish_reason': 'stop'}], 'usage': {
        'prompt_tokens': 3, 'completion_tokens': 1, 'cost': 0.00001}}), '[DONE]')
    with ScriptedServer([Reply(200, listing), Reply(200, chunks=answer_chunks)]) as server:
        p = openrouter(base_url=server.url + '/api/v1', model_strategy='free_or_paid')
        answer = Answer()
        for chunk in p.text_chat([Message(Role.USER, 'q')]):
            answer.add(chunk)
        assert [r['path'] for r in server.received] == ['/api/v1/models', '/api/v1/chat/completions']
        sent = json.loads(server.received[1]['body'])
    assert answer.text == 'Hello' and answer.done.model == 'google/gemini-2.5-flash-lite'
    assert sent['model'] == 'google/gemini-2.5-flash-lite'
    assert sent['models'] == ['deepseek/deepseek-r1-0528', 'x-ai/grok-4', 'anthropic/claude-opus-4']
    assert sent['provider'] == {'data_collection': 'deny'}


def test_free_only_with_nothing_free_says_so_in_the_chat():
    listing = json.dumps(catalogue('models-2026-05-01.json', with_free=False)).encode()
    with ScriptedServer([Reply(200, listing)]) as server:
        p = openrouter(base_url=server.url + '/api/v1', model_strategy='free')
        chunks = list(p.text_chat([Message(Role.USER, 'q')]))
        assert len(server.received) == 1  # nothing asked of any model
    assert len(chunks) == 1 and isinstance(chunks[0].error, NotConfigured)
    assert chunks[0].message.startswith(NO_FREE_MODELS)


def test_what_the_catalogue_says_of_a_model_is_kept():
    p = openrouter()
    models = {m.id: m for m in p.parse_models(catalogue('models-2026-05-01.json'))}
    gpt = models['openai/gpt-5-mini']
    assert gpt.name == 'OpenAI: GPT-5 Mini' and gpt.context_length == 400000 and gpt.created == 1754587407
    assert gpt.prices == pytest.approx((0.25, 2.0)) and not gpt.free and gpt.moderated is True
    assert gpt.price('web_search') == 0.01 and gpt.price('image') is None
    assert 'text' in gpt.input_modalities and 'image' in gpt.input_modalities and gpt.output_modalities == ('text',)
    assert gpt.description.startswith('GPT-5 Mini is a compact version of GPT-5')
    oss = models['openai/gpt-oss-120b:free']
    assert oss.free and oss.prices == (0.0, 0.0) and oss.moderated is True
    assert models['deepseek/deepseek-v4-pro'].moderated is False
    auto = models['openrouter/auto']  # priced -1: neither free nor a price anyone pays
    assert not auto.free


def test_damaged_entries_are_left_out_or_read_as_unknown():
    p = openrouter()
    models = p.parse_models({'data': [
        'not an entry', {'name': 'no id'},
        {'id': 'a/priced-in-words', 'name': 'A', 'pricing': {'prompt': 'free', 'completion': '0'},
         'created': 'yesterday', 'context_length': [1], 'top_provider': 'x', 'architecture': None,
         'description': {'not': 'text'}},
        {'id': 'b/fine', 'name': 'B: B 1', 'pricing': {'prompt': '0', 'completion': '0'},
         'architecture': {'input_modalities': ['text', 7], 'output_modalities': 'text'}}]})
    assert [m.id for m in models] == ['a/priced-in-words', 'b/fine']
    a, b = models
    assert (a.free, a.prices, a.pricing, a.created, a.context_length, a.moderated, a.description) == (
        False, (), (), 0.0, 0, None, '')
    assert b.free and b.input_modalities == ('text',) and b.output_modalities == ()


def test_what_a_model_says_is_bounded():
    from calibre_plugins.bookai.core import limits
    huge = Model('x/huge', 'X', description='d' * (limits.MAX_MODEL_DESCRIPTION_CHARS + 10),
                 pricing=tuple((f'kind{i}', 0.0) for i in range(100)) + (('k' * 100, 1.0),),
                 input_modalities=tuple(f'm{i}' for i in range(100)))
    (kept,) = kept_models([huge])
    assert len(kept.description) == limits.MAX_MODEL_DESCRIPTION_CHARS
    assert len(kept.pricing) == limits.MAX_MODEL_PRICES and all(len(k) <= 64 for k, v in kept.pricing)
    assert len(kept.input_modalities) == limits.MAX_MODEL_MODALITIES


def test_the_catalogue_is_cached_with_its_details(tmp_path):
    p = openrouter()
    models = kept_models(p.parse_models(catalogue('models-2026-05-01.json')))
    path = str(tmp_path / 'openrouter.json')
    write_models_cache(path, models, 'https://openrouter.ai/api/v1')
    assert read_models_cache(path) == models


def test_a_cache_written_before_these_fields_existed_still_reads(tmp_path):
    """Book AI 1.0.0 wrote id, name, created, context_length, free, reasoning and prices only."""
    import time
    path = tmp_path / 'old.json'
    path.write_text(json.dumps({'fetched': time.time(), 'base_url': 'https://openrouter.ai/api/v1', 'models': [
        {'id': 'openai/gpt-5', 'name': 'OpenAI: GPT-5', 'created': 1754587413, 'context_length': 400000,
         'free': False, 'reasoning': False, 'prices': [1.25, 10.0]}]}))
    (old,) = read_models_cache(str(path))
    assert old == Model('openai/gpt-5', 'OpenAI: GPT-5', 1754587413, 400000, prices=(1.25, 10.0))
    assert os.path.exists(path)
    assert asdict(old)['description'] == '' and old.moderated is None


def test_the_choice_leaves_out_models_that_give_no_text():
    image_only = Model('google/gemini-9-image', 'Google: Gemini 9 Image', created=2e9,
                       pricing=(('prompt', 0.0), ('completion', 0.0)), output_modalities=('image',))
    texts = Model('google/gemini-2.5-pro', 'Google: Gemini 2.5 Pro', created=1e9,
                  pricing=(('prompt', 0.0), ('completion', 0.0)), output_modalities=('text',))
    assert [m.id for m in openrouter_choice([image_only, texts], allow_paid=False)] == ['google/gemini-2.5-pro']


def test_the_choice_leaves_out_models_it_cannot_price():
    unpriced = Model('anthropic/claude-9', 'Anthropic: Claude 9', created=2e9)
    priced = Model('anthropic/claude-4', 'Anthropic: Claude 4', created=1e9,
                   pricing=(('prompt', 3e-6), ('completion', 1.5e-5)))
    assert [m.id for m in openrouter_choice([unpriced, priced], allow_paid=True)] == ['anthropic/claude-4']
