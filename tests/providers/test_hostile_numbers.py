# License: GPLv3 Copyright: the Book AI developers
"""Numbers from outside that cannot be true are unknown, never shown or added up: a cost of NaN,
-5, 1e308, ±Infinity or a 400-digit figure in OpenRouter's usage (from a scripted server, sent
as those bytes), token counts that are not counts, a History file holding such a cost; model
prices of inf or 1e300, dates and context lengths of the same kind in a model list and in its
cache; three models with one id. The sound values beside them are kept."""

import json
import math

import pytest

from calibre_plugins.bookai.conversation.conversation import Conversation, Turn, turn_from_dict, usage_text
from calibre_plugins.bookai.core.messages import (
    MOST_MONEY, Answer, Cost, Done, Message, Role, Usage, known_cost, money, token_count,
)
from calibre_plugins.bookai.providers import pricing
from calibre_plugins.bookai.providers.models import (
    UNKNOWN_PRICE, Model, kept_models, read_models_cache, write_models_cache,
)
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.scripted_server import Reply, ScriptedServer, sse

KEY = 'sk-or-key-0123456789abcdef'
# as the bytes of a JSON answer: what Python's json reads as NaN, infinities, and numbers past any price
UNTRUE_COSTS = ('NaN', '-5', '-0.0001', '1e308', '-Infinity', 'Infinity', '1e400', '1' + '0' * 400)


def strict_json(text: str) -> object:
    """text as JSON, refusing NaN and Infinity as a strict reader (JavaScript, jq) does."""
    def refuse(name):
        raise ValueError(f'{name} is not JSON')
    return json.loads(text, parse_constant=refuse)


def openrouter_answer(cost: str) -> list[Usage]:
    """The usage Book AI takes from OpenRouter answers whose usage names cost (as JSON bytes)."""
    chunk = ('{"model": "m", "choices": [{"delta": {"content": "Hi"}, "finish_reason": "stop"}], '
             f'"usage": {{"prompt_tokens": 3, "completion_tokens": 1, "cost": {cost}}}}}')
    with ScriptedServer([Reply(200, chunks=sse(chunk, '[DONE]'))]) as server:
        p = get_provider('openrouter', settings={'api_key': KEY, 'base_url': server.url + '/api/v1', 'model': 'm'})
        answer = Answer()
        for c in p.text_chat([Message(Role.USER, 'q')]):
            answer.add(c)
    assert answer.failed is None and answer.text == 'Hi', answer.failed
    return answer.done.usage


@pytest.mark.parametrize('cost', UNTRUE_COSTS)
def test_an_untrue_cost_from_openrouter_is_unknown_and_never_added_up(cost):
    usage = openrouter_answer(cost)
    assert usage.cost is None and (usage.input_tokens, usage.output_tokens) == (3, 1)
    sound = openrouter_answer('0.25')
    assert sound.cost == Cost(0.25, 'USD', 'reported')
    conv = Conversation([])
    conv.turns = [Turn('a', 'x', usage=sound, finish_reason='stop'), Turn('b', 'y', usage=usage, finish_reason='stop')]
    total = conv.total_usage()
    assert total.cost is None and (total.input_tokens, total.output_tokens) == (6, 2)  # the tokens still count
    text = usage_text(total)
    assert 'cost unknown' in text and '$' not in text and 'nan' not in text.lower() and 'inf' not in text.lower()


@pytest.mark.parametrize('amount', [math.nan, -5.0, -math.inf, math.inf, 1e308, MOST_MONEY * 2, 10 ** 400])
def test_usage_keeps_no_untrue_cost_however_it_is_made(amount):
    assert money(amount) is None
    cost = Cost(amount, 'USD', 'estimated', '2026-06-01')
    assert known_cost(cost) is None and Usage(cost=cost).cost is None
    assert Usage(cost=Cost(0.5)).cost == Cost(0.5)
    from dataclasses import replace
    assert replace(Usage(cost=Cost(0.5)), cost=cost).cost is None  # replace() checks as the constructor does


def test_a_cost_in_no_currency_or_of_the_wrong_type_is_unknown():
    assert Usage(cost=Cost(1.0, 'US dollars')).cost is None
    assert Usage(cost=Cost(1.0, '\x1b[2J')).cost is None
    assert Usage(cost='1.0').cost is None
    assert Usage(cost=Cost(True)).cost is None
    assert Usage(cost=Cost(2)).cost == Cost(2.0) and type(Usage(cost=Cost(2)).cost.amount) is float


@pytest.mark.parametrize('n', [-1, 1.5, True, '12', 10 ** 12, math.nan, None])
def test_a_token_count_that_is_not_a_count_is_unknown(n):
    assert token_count(n) is None
    usage = Usage(n, n, n, n)
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens, usage.cached_tokens) == (None,) * 4
    assert pricing.estimate('openai', 'gpt-4o', usage) is None


def test_an_estimate_never_exceeds_what_money_can_be():
    huge = Usage(10 ** 12 - 1, 10 ** 12 - 1)
    assert pricing.estimate('openai', 'gpt-5.5', huge) is None  # over MOST_MONEY: unknown, not a 12-digit bill
    assert pricing.estimate('openai', 'gpt-5.5', Usage(1000, 1000)).amount == pytest.approx(0.035)
    assert pricing.image_shape('inf:1') == pricing.image_shape('nan:nan') == pricing.image_shape('0:0') == 'square'


@pytest.mark.parametrize('amount', ['NaN', 'Infinity', '-5', '1e308'])
def test_a_history_file_with_an_untrue_cost_reads_as_unknown(amount):
    saved = json.loads('{"question": "q", "answer": "a", "finish_reason": "stop", "usage": {"input_tokens": 1, '
                       f'"output_tokens": -2, "cost": {{"amount": {amount}, "currency": "USD"}}}}}}')
    turn = turn_from_dict(saved)
    assert turn.usage.cost is None and turn.usage.input_tokens == 1 and turn.usage.output_tokens is None


def test_the_cli_writes_valid_json_whatever_the_numbers():
    from io import StringIO

    from calibre_plugins.bookai.cli import emit, events_of
    out = StringIO()
    for event in events_of(Done('m', usage=Usage(1, 2, cost=Cost(math.nan)))):
        emit(out, event)
    emit(out, {'type': 'citation', 'position': math.nan, 'nested': [math.inf, {'x': -math.inf}], 'fine': 0.5})
    events = [strict_json(line) for line in out.getvalue().splitlines()]
    assert events[0]['type'] == 'usage' and events[0]['cost'] is None and events[0]['input_tokens'] == 1
    assert events[-1] == {'type': 'citation', 'position': None, 'nested': [None, {'x': None}], 'fine': 0.5}


def model(id_, **kw):
    return Model(id_, kw.pop('name', id_), **kw)


def test_a_price_that_is_not_one_is_kept_as_unknown_and_the_rest_as_they_are():
    m = model('x/m', pricing=(('prompt', math.inf), ('completion', 1e300), ('request', -5.0), ('image', math.nan),
                              ('web_search', 0.01), ('internal_reasoning', 0.0)),
              prices=(math.inf, 2.0), created=math.nan, context_length=10 ** 30)
    (kept,) = kept_models([m])
    assert dict(kept.pricing) == {'prompt': UNKNOWN_PRICE, 'completion': UNKNOWN_PRICE, 'request': UNKNOWN_PRICE,
                                  'image': UNKNOWN_PRICE, 'web_search': 0.01, 'internal_reasoning': 0.0}
    assert [kept.price(k) for k in ('prompt', 'completion', 'request', 'image', 'web_search')] == [
        None, None, None, None, 0.01]
    assert kept.prices == () and kept.created == 0.0 and kept.context_length == 0
    assert model('y/m', pricing=(('prompt', math.inf),)).price('prompt') is None  # even before it is kept


def test_three_models_with_one_id_are_one_model():
    first = model('a/same', name='First', created=3.0)
    listed = [first, model('b/other'), model('a/same', name='Second'), model('a/same', name='Third'), model('')]
    kept = kept_models(listed)
    assert [m.id for m in kept] == ['a/same', 'b/other'] and kept[0] == first


def test_the_cache_holds_only_json_and_reads_back_as_kept(tmp_path):
    path = str(tmp_path / 'models.json')
    listed = [model('a/m', pricing=(('prompt', math.inf), ('completion', 1e-6)), created=math.inf),
              model('a/m', name='again'), model('b/m', prices=(1.0, math.nan))]
    write_models_cache(path, listed, 'https://u:p@example.org/v1')
    with open(path, encoding='utf-8') as f:
        text = f.read()
    cached = strict_json(text)  # no NaN, no Infinity
    assert cached['base_url'] == 'https://example.org/v1' and [m['id'] for m in cached['models']] == ['a/m', 'b/m']
    assert read_models_cache(path) == kept_models(listed)


def test_a_cache_edited_by_hand_is_held_to_the_same_rules(tmp_path):
    import time
    path = tmp_path / 'models.json'
    path.write_text('{"fetched": %r, "base_url": "x", "models": [' % time.time()
                    + '{"id": "a/m", "prices": [Infinity, 1.0], "pricing": [["prompt", NaN], ["completion", 1e300]],'
                    ' "created": -1e300, "free": "yes"},'
                    ' {"id": "a/m", "name": "duplicate"}, {"id": "b/m", "context_length": 1e400}]}')
    a, b = read_models_cache(str(path))
    assert (a.id, a.prices, a.price('prompt'), a.price('completion'), a.created, a.free) == (
        'a/m', (), None, None, 0.0, False)
    assert b.id == 'b/m' and b.context_length == 0


def test_an_openrouter_catalogue_of_untrue_numbers_lists_each_model_once_with_unknown_prices():
    p = get_provider('openrouter', settings={'api_key': KEY})
    entry = {'id': 'openai/gpt-5', 'name': 'OpenAI: GPT-5', 'created': 'Infinity', 'context_length': 1e400,
             'pricing': {'prompt': 'Infinity', 'completion': '1e300'}}
    listing = {'data': [entry, dict(entry, name='Again'), dict(entry, name='And again'),
                        {'id': 'openai/gpt-5-mini', 'name': 'OpenAI: GPT-5 Mini',
                         'pricing': {'prompt': '0.00000025', 'completion': '0.000002'}}]}
    with ScriptedServer([Reply(200, json.dumps(listing).encode(), headers=[('Content-Type', 'application/json')])]) \
            as server:
        p = get_provider('openrouter', settings={'api_key': KEY, 'base_url': server.url + '/api/v1'})
        models = p.models(refresh=True)
    assert [m.id for m in models] == ['openai/gpt-5', 'openai/gpt-5-mini']
    gpt = models[0]
    assert gpt.name == 'OpenAI: GPT-5' and gpt.price('prompt') is None and gpt.price('completion') is None
    assert not gpt.free and gpt.created == 0.0 and gpt.context_length == 0
    assert models[1].price('completion') == 2e-6


def test_a_cache_file_that_is_no_file_or_holds_numbers_past_floats_is_set_aside(tmp_path):
    import os
    import threading
    import time
    fifo = tmp_path / 'fifo.json'
    os.mkfifo(fifo)
    got = []
    t = threading.Thread(target=lambda: got.append(read_models_cache(str(fifo))), daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive() and got == [None]  # a FIFO in the cache file's place is not waited on
    assert not os.path.lexists(fifo) and os.path.lexists(str(fifo) + '.damaged')
    for name, text in (('huge.json', '{"fetched": %r, "models": [{"id": "a", "pricing": [["prompt", 1%s]]}]}'
                        % (time.time(), '0' * 400)),
                       ('when.json', '{"fetched": 1%s, "models": []}' % ('0' * 400)),
                       ('bool.json', '{"fetched": true, "models": []}')):
        path = tmp_path / name
        path.write_text(text)
        assert read_models_cache(str(path)) is None and os.path.exists(str(path) + '.damaged'), name
