# License: GPLv3 Copyright: the Book AI developers
"""OpenRouter's automatic choice (providers/openrouter.py: openrouter_choice, OpenRouter.choose_model)
is total over any list: empty, of no known family, naming one model three times, with prices and
dates that are not numbers. Each strategy ends in a model to ask or, for "free models only" with
nothing free, in its sentence; never in "unexpected problem: IndexError"."""

import json
import math
import random

import pytest

from calibre_plugins.bookai.core.errors import NotConfigured
from calibre_plugins.bookai.core.messages import Answer, Message, Role
from calibre_plugins.bookai.providers.models import Model, kept_models
from calibre_plugins.bookai.providers.openrouter import AUTO_MODEL, openrouter_choice
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.scripted_server import Reply, ScriptedServer, sse

KEY = 'sk-or-key-0123456789abcdef'
STRATEGIES = ('free', 'free_or_paid', 'auto')
NO_FREE = 'No free models were found for text to text generation'


def choose(models: list[Model], strategy: str, monkeypatch) -> tuple[str, tuple[str, ...]]:
    """(the model Book AI asks, its fallbacks), with the list models and no model set."""
    p = get_provider('openrouter', settings={'api_key': KEY, 'model_strategy': strategy})
    monkeypatch.setattr(p, 'models', lambda refresh=False, cancel=None: kept_models(models))
    chosen = p.choose_model()
    return chosen, p.fallbacks.get(chosen, ())


UNKNOWN_FAMILIES = [Model('mistralai/mistral-large', 'Mistral: Mistral Large', 1e9,
                          pricing=(('prompt', 2e-6), ('completion', 6e-6))),
                    Model('meta-llama/llama-4', 'Meta: Llama 4', 2e9, pricing=(('prompt', 0.0), ('completion', 0.0)))]
PAID_CLAUDE = Model('anthropic/claude-4', 'Anthropic: Claude 4', 1e9, pricing=(('prompt', 3e-6), ('completion', 1.5e-5)))


@pytest.mark.parametrize('models', [[], UNKNOWN_FAMILIES], ids=['empty', 'no known family'])
def test_free_or_paid_on_a_list_with_nothing_to_choose_lets_openrouter_choose(models, monkeypatch):
    assert openrouter_choice(models, allow_paid=True) == []
    assert choose(models, 'free_or_paid', monkeypatch) == (AUTO_MODEL, ())
    assert choose(models, 'auto', monkeypatch) == (AUTO_MODEL, ())


@pytest.mark.parametrize('models', [[], UNKNOWN_FAMILIES], ids=['empty', 'no known family'])
def test_free_only_on_a_list_with_nothing_free_says_so(models, monkeypatch):
    with pytest.raises(NotConfigured) as e:
        choose(models, 'free', monkeypatch)
    assert str(e.value).startswith(NO_FREE)


def test_a_model_listed_three_times_is_chosen_once_with_no_fallback_to_itself(monkeypatch):
    models = [PAID_CLAUDE, PAID_CLAUDE, PAID_CLAUDE]
    assert choose(models, 'free_or_paid', monkeypatch) == ('anthropic/claude-4', ())
    assert [m.id for m in openrouter_choice(models, allow_paid=True)] == ['anthropic/claude-4']


def test_prices_and_dates_that_are_not_numbers_do_not_decide(monkeypatch):
    unpriced = Model('anthropic/claude-9', 'Anthropic: Claude 9', math.nan,
                     pricing=(('prompt', math.inf), ('completion', -1.0)))
    half_free = Model('google/gemini-9', 'Google: Gemini 9', math.inf,
                      pricing=(('prompt', 0.0), ('completion', math.nan)))  # not free: a price is unknown
    assert choose([unpriced, half_free, PAID_CLAUDE], 'free_or_paid', monkeypatch) == ('anthropic/claude-4', ())
    assert openrouter_choice([unpriced, half_free, PAID_CLAUDE], allow_paid=True) == [PAID_CLAUDE]


def random_models(rng: random.Random) -> list[Model]:
    """A list as a broken or hostile catalogue may give it."""
    makers = ['Google: Gemini', 'OpenAI: GPT-5', 'OpenAI: gpt-oss', 'xAI: Grok', 'Anthropic: Claude', 'DeepSeek: V',
              'Mistral: Large', '', ':', 'Google', 'openai: GPT-5 (free)']
    numbers = [0.0, 1e-6, -1.0, math.nan, math.inf, -math.inf, 1e300, 2.5]
    models = []
    for _ in range(rng.randrange(0, 12)):
        kinds = rng.sample(['prompt', 'completion', 'request', 'image', 'web_search'], rng.randrange(0, 5))
        models.append(Model(rng.choice(['a/x', 'b/y', 'c/z', f'd/{rng.random()}']), rng.choice(makers),
                            rng.choice(numbers), pricing=tuple((k, rng.choice(numbers)) for k in kinds),
                            output_modalities=rng.choice([(), ('text',), ('image',), ('image', 'text')])))
    return models


@pytest.mark.parametrize('strategy', STRATEGIES)
def test_every_strategy_is_total_over_any_list(strategy, monkeypatch):
    rng = random.Random(f'openrouter-{strategy}')
    for _ in range(400):
        models = random_models(rng)
        try:
            chosen, fallbacks = choose(models, strategy, monkeypatch)
        except NotConfigured as e:  # the one sentence a strategy may end in
            assert strategy == 'free' and str(e).startswith(NO_FREE)
            continue
        listed = {m.id for m in kept_models(models)}
        assert chosen == AUTO_MODEL or chosen in listed
        assert chosen not in fallbacks and len(set(fallbacks)) == len(fallbacks) and set(fallbacks) <= listed


def test_the_chat_asks_openrouter_to_choose_when_the_list_has_no_known_family():
    """The whole way, from a scripted server: was "unexpected problem: IndexError"."""
    listing = {'data': [{'id': m.id, 'name': m.name, 'pricing': {'prompt': '0.000002', 'completion': '0.000006'}}
                        for m in UNKNOWN_FAMILIES]}
    answer = sse(json.dumps({'model': 'mistralai/mistral-large', 'choices': [
        {'delta': {'content': 'Hello'}, 'finish_reason': 'stop'}]}), '[DONE]')
    with ScriptedServer([Reply(200, json.dumps(listing).encode(), headers=[('Content-Type', 'application/json')]),
                         Reply(200, chunks=answer)]) as server:
        p = get_provider('openrouter', settings={'api_key': KEY, 'base_url': server.url + '/api/v1',
                                                 'model_strategy': 'free_or_paid'})
        got = Answer()
        for chunk in p.text_chat([Message(Role.USER, 'q')]):
            got.add(chunk)
        sent = json.loads(server.received[1]['body'])
    assert got.failed is None and got.text == 'Hello'
    assert sent['model'] == AUTO_MODEL and 'models' not in sent
