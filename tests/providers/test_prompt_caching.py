# License: GPLv3 Copyright: the Book AI developers
"""The services' prompt caches (providers/caching.py): what each request says so that the
second question about a book costs little, the tokens read from the cache and written to it as
each wire format reports them, bounded however a server sends them, priced at the cached rates,
and said in words only when some were read.

The same scripted streams are also read by the official SDKs (openai, anthropic, google-genai):
they must agree on every count. llama-server itself: test_prompt_caching_peers.py."""

import json

import pytest

from calibre_plugins.bookai.conversation.conversation import Conversation, cache_text, question_message
from calibre_plugins.bookai.conversation.books import BookInfo
from calibre_plugins.bookai.conversation.prompts import CITE_REMINDER, book_part
from calibre_plugins.bookai.core.messages import MOST_TOKENS, Answer, Cost, Done, Message, Role, TextDelta, Usage
from calibre_plugins.bookai.providers import caching, pricing
from calibre_plugins.bookai.providers.registry import PROVIDERS, get_provider
from helpers.peers import sdk_python
from helpers.scripted_server import Reply, ScriptedServer

BOOK = '<book_passages>\n[1] (Chapter One)\nIt was a bright cold day in April.\n</book_passages>'
OTHER_BOOK = '<book_passages>\n[1] (Chapter Two)\nThe clocks were striking thirteen.\n</book_passages>'


def conversation_messages(passages=BOOK, question='Who is there?', earlier=()):
    """What a conversation about a book sends for question with passages, after the earlier
    (question, passages, answer) turns."""
    book = BookInfo(1, 'A Secret Title', ('Some Author',))
    conv = Conversation([book])
    for q, p, a in earlier:
        conv.ask(q, p)
        answer = Answer()
        answer.add(TextDelta(a))
        answer.add(Done(model='m'))
        conv.finish(answer, 'x')
    return conv.messages_for(question, passages)


def request(name, messages, model='model-x', **settings):
    s = {'api_key': 'k' * 12, 'base_url': 'http://127.0.0.1:9'}
    s.update(settings)
    return json.loads(get_provider(name, settings=s).chat_request(messages, model).body)


# the book's part of a question {{{

def test_the_question_message_marks_where_the_books_text_ends():
    m = question_message('Who is there?', BOOK)
    assert m.text == f'{BOOK}\n\n{CITE_REMINDER}\n\nWho is there?'
    assert m.book_text == book_part(BOOK) == f'{BOOK}\n\n{CITE_REMINDER}'
    assert question_message('Who is there?', '').book_text == '' and question_message('q', '').book_chars == 0
    assert Message(Role.USER, 'short', book_chars=99).book_text == ''  # never beyond the text


def test_every_turn_keeps_its_bytes_and_the_book_leads_each_question():
    first = conversation_messages()
    second = conversation_messages(question='And then?', earlier=[('Who is there?', BOOK, 'Nobody.')])
    assert second[:2] == first[:2]  # the system message and the first question, byte for byte
    assert [m.text for m in second[:2]] == [m.text for m in first[:2]]
    assert second[-1].book_text == first[-1].book_text  # the same passages: the same bytes first
    other_question = conversation_messages(question='Where are we?')
    assert other_question[0] == first[0] and other_question[-1].book_text == first[-1].book_text

# }}}


# requests {{{

def breakpoints(payload_messages):
    return [(i, j) for i, m in enumerate(payload_messages) if isinstance(m.get('content'), list)
            for j, b in enumerate(m['content']) if isinstance(b, dict) and 'cache_control' in b]


def test_anthropic_ends_its_cache_after_the_books_text_and_after_the_request():
    messages = conversation_messages(question='And then?', earlier=[('Who is there?', BOOK, 'Nobody.')])
    p = request('anthropic', messages)
    wire = p['messages']
    assert [m['role'] for m in wire] == ['user', 'assistant', 'user']
    # every question's book text is a block of its own, the same in every turn
    assert wire[0]['content'] == [{'type': 'text', 'text': book_part(BOOK)},
                                  {'type': 'text', 'text': '\n\nWho is there?'}]
    assert wire[1]['content'] == 'Nobody.'
    assert wire[2]['content'][0] == {'type': 'text', 'text': book_part(BOOK), 'cache_control': {'type': 'ephemeral'}}
    assert wire[2]['content'][1] == {'type': 'text', 'text': '\n\nAnd then?', 'cache_control': {'type': 'ephemeral'}}
    assert breakpoints(wire) == [(2, 0), (2, 1)]
    assert len(breakpoints(wire)) <= 4  # Anthropic's most
    assert ''.join(b['text'] for b in wire[2]['content']) == messages[-1].text  # the same words, cut in two
    assert p['system'] == messages[0].text
    # a question without the book's text: its one block ends the cache
    p = request('anthropic', conversation_messages(passages=''))
    assert p['messages'][-1]['content'] == [{'type': 'text', 'text': 'Who is there?',
                                            'cache_control': {'type': 'ephemeral'}}]


def test_anthropic_keeps_signed_thinking_and_breakpoints_within_four():
    messages = conversation_messages(question='Why?', earlier=[(f'q{i}', BOOK, f'a{i}') for i in range(6)])
    messages[2] = Message(Role.ASSISTANT, 'a0', 'thought', ({'type': 'thinking', 'thinking': 't', 'signature': 's'},))
    p = request('anthropic', messages, reasoning_effort='high')
    assert p['messages'][1]['content'][0] == {'type': 'thinking', 'thinking': 't', 'signature': 's'}
    assert breakpoints(p['messages']) == [(len(p['messages']) - 1, 0), (len(p['messages']) - 1, 1)]


@pytest.mark.parametrize('model, expected', [
    ('anthropic/claude-sonnet-4.5', [(1, 0), (1, 1)]),   # as Anthropic's own API
    ('google/gemini-2.5-flash', [(1, 0)]),              # OpenRouter reads Gemini's last one only: the book
    ('openai/gpt-5-mini', []), ('deepseek/deepseek-chat', []), ('openrouter/auto', []),
])
def test_openrouter_marks_the_cache_for_the_models_that_take_it(model, expected):
    messages = conversation_messages()
    p = request('openrouter', messages, model=model)
    assert breakpoints(p['messages']) == expected
    assert p['messages'][0] == {'role': 'system', 'content': messages[0].text}
    if not expected:
        assert p['messages'][1] == {'role': 'user', 'content': messages[1].text}
    assert 'prompt_cache_key' not in p and 'cache_prompt' not in p


def test_prompt_cache_key_only_for_openai_and_the_same_for_the_same_book_and_place():
    first, follow_up = conversation_messages(), conversation_messages(question='Where?')
    key = request('openai', first, base_url='https://api.openai.com/v1')['prompt_cache_key']
    assert key == request('openai', follow_up, base_url='https://api.openai.com/v1')['prompt_cache_key']
    assert key == request('openai', conversation_messages(question='x', earlier=[('q', BOOK, 'a')]),
                          base_url='https://api.openai.com/v1')['prompt_cache_key']
    assert key != request('openai', conversation_messages(OTHER_BOOK), base_url='https://api.openai.com/v1'
                          )['prompt_cache_key']
    assert key.startswith('bookai-') and len(key) <= 64  # OpenAI takes up to 64 characters
    for word in ('Secret', 'Title', 'April', 'Author'):  # nothing of the book in it
        assert word.lower() not in key.lower()
    # the chat completions of OpenAI's service, through the compatible provider
    compatible = request('openai_compatible', first, base_url='https://api.openai.com/v1')
    assert compatible['prompt_cache_key'] == key and 'cache_prompt' not in compatible
    # the default address is OpenAI's
    assert get_provider('openai', settings={'api_key': 'k' * 12}).config.base_url == 'https://api.openai.com/v1'
    # nowhere else: another address, another service
    assert 'prompt_cache_key' not in request('openai', first)  # a server copying OpenAI's Responses
    assert 'prompt_cache_key' not in request('openai', first, base_url='http://api.openai.com.example/v1')
    for name in PROVIDERS:
        if name != 'openai':
            assert 'prompt_cache_key' not in json.dumps(request(name, first)), name


def test_cache_prompt_only_to_a_server_known_to_be_llama_cpp(monkeypatch):
    monkeypatch.setattr(caching, '_llama_cpp', set())
    messages = conversation_messages()
    url = 'http://127.0.0.1:9/v1'
    assert 'cache_prompt' not in request('openai_compatible', messages, base_url=url)
    assert not caching.is_llama_cpp_props({'default_generation_settings': {'n_ctx': 4}, 'total_slots': '1'})
    assert not caching.is_llama_cpp_props([]) and not caching.llama_cpp_timings({'timings': []})
    caching.llama_cpp_seen(url)
    assert request('openai_compatible', messages, base_url=url)['cache_prompt'] is True
    assert 'cache_prompt' not in request('openai_compatible', messages, base_url='http://127.0.0.1:10/v1')
    for name in PROVIDERS:  # only the compatible provider: another service never gets it
        if name != 'openai_compatible':
            assert 'cache_prompt' not in request(name, messages, base_url=url), name
    for i in range(caching.MOST_SERVERS_KEPT * 2):  # bounded, whatever a session meets
        caching.llama_cpp_seen(f'http://127.0.0.1:{i}/v1')
    assert len(caching._llama_cpp) == caching.MOST_SERVERS_KEPT


def test_gemini_sends_the_same_prefix_and_nothing_that_varies():
    first = request('gemini', conversation_messages())
    again = request('gemini', conversation_messages(question='Where?'))
    assert first['systemInstruction'] == again['systemInstruction']
    assert first['contents'][0]['parts'][0]['text'].startswith(book_part(BOOK))
    assert again['contents'][0]['parts'][0]['text'].startswith(book_part(BOOK))
    assert 'cache_control' not in json.dumps(first) and 'cachedContent' not in json.dumps(first)

# }}}


# usage, bounded {{{

@pytest.mark.parametrize('value', [-1, 1.5, '12', True, None, [], {}, MOST_TOKENS, 10 ** 400, float('nan')])
def test_a_count_that_is_none_is_unknown(value):
    u = Usage(100, 5, None, value, cache_write_tokens=value)
    assert u.cached_tokens is None and u.cache_write_tokens is None and u.input_tokens == 100


def test_the_cache_counts_are_parts_of_the_prompt():
    assert Usage(100, 5, None, 100, cache_write_tokens=0).cached_tokens == 100
    assert Usage(100, 5, None, 101).cached_tokens is None
    assert Usage(None, 5, None, 10, cache_write_tokens=10).cached_tokens is None  # a part of nothing known
    u = Usage(100, 5, None, 60, cache_write_tokens=41)
    assert u.cached_tokens == 60 and u.cache_write_tokens is None  # together more than the prompt
    assert Usage(100, 5, None, 60, cache_write_tokens=40).cache_write_tokens == 40
    assert Usage('100', 5, None, 60).cached_tokens is None

# }}}


# each wire format's usage {{{

def sse(events, named=False):
    return [((f'event: {e.get("type")}\n' if named else '') + f'data: {json.dumps(e)}\n\n').encode()
            for e in events]


def chat_events(usage, timings=None):
    last = {'id': 'c1', 'object': 'chat.completion.chunk', 'created': 1, 'model': 'model-x', 'choices': [],
            'usage': usage}
    if timings is not None:
        last['timings'] = timings
    return sse([{'id': 'c1', 'object': 'chat.completion.chunk', 'created': 1, 'model': 'model-x', 'choices': [
        {'index': 0, 'delta': {'role': 'assistant', 'content': 'Hello.'}, 'finish_reason': None}]},
        {'id': 'c1', 'object': 'chat.completion.chunk', 'created': 1, 'model': 'model-x', 'choices': [
            {'index': 0, 'delta': {}, 'finish_reason': 'stop'}]}, last]) + [b'data: [DONE]\n\n']


def responses_events(usage):
    response = {'id': 'r1', 'object': 'response', 'created_at': 1, 'model': 'gpt-x', 'status': 'completed',
                'output': [], 'parallel_tool_calls': False, 'tool_choice': 'auto', 'tools': []}
    return sse([{'type': 'response.created', 'sequence_number': 0, 'response': dict(response, status='in_progress')},
                {'type': 'response.output_text.delta', 'sequence_number': 1, 'item_id': 'm1', 'output_index': 0,
                 'content_index': 0, 'delta': 'Hello.', 'logprobs': []},
                {'type': 'response.completed', 'sequence_number': 2, 'response': dict(response, usage=usage)}],
               named=True)


def anthropic_events(start_usage, delta_usage):
    return sse([
        {'type': 'message_start', 'message': {'id': 'msg_1', 'type': 'message', 'role': 'assistant', 'content': [],
                                              'model': 'claude-x', 'stop_reason': None, 'stop_sequence': None,
                                              'usage': start_usage}},
        {'type': 'content_block_start', 'index': 0, 'content_block': {'type': 'text', 'text': ''}},
        {'type': 'content_block_delta', 'index': 0, 'delta': {'type': 'text_delta', 'text': 'Hello.'}},
        {'type': 'content_block_stop', 'index': 0},
        {'type': 'message_delta', 'delta': {'stop_reason': 'end_turn', 'stop_sequence': None}, 'usage': delta_usage},
        {'type': 'message_stop'}], named=True)


def gemini_events(usage):
    return sse([{'candidates': [{'content': {'parts': [{'text': 'Hello.'}], 'role': 'model'}, 'index': 0}],
                 'modelVersion': 'gemini-x', 'responseId': 'r1'},
                {'candidates': [{'content': {'parts': [{'text': ''}], 'role': 'model'}, 'finishReason': 'STOP',
                                 'index': 0}], 'usageMetadata': usage, 'modelVersion': 'gemini-x',
                 'responseId': 'r1'}])


# kind: (provider, path under the server, model, the stream for these counts: prompt, read, written)
def stream_for(kind, prompt, read, written):
    if kind == 'openai_chat':
        return chat_events({'prompt_tokens': prompt, 'completion_tokens': 2, 'total_tokens': prompt + 2,
                            'prompt_tokens_details': {'cached_tokens': read, 'cache_write_tokens': written}})
    if kind == 'openrouter':
        return chat_events({'prompt_tokens': prompt, 'completion_tokens': 2, 'total_tokens': prompt + 2,
                            'cost': 0.0042, 'is_byok': False,
                            'prompt_tokens_details': {'cached_tokens': read, 'cache_write_tokens': written}})
    if kind == 'responses':
        return responses_events({'input_tokens': prompt, 'output_tokens': 2, 'total_tokens': prompt + 2,
                                 'input_tokens_details': {'cached_tokens': read, 'cache_write_tokens': written},
                                 'output_tokens_details': {'reasoning_tokens': 0}})
    if kind == 'anthropic':
        fresh = prompt - read - written
        return anthropic_events({'input_tokens': fresh, 'output_tokens': 1, 'cache_read_input_tokens': read,
                                 'cache_creation_input_tokens': written},
                                {'output_tokens': 2, 'input_tokens': fresh, 'cache_read_input_tokens': read,
                                 'cache_creation_input_tokens': written})
    if kind == 'gemini':
        return gemini_events({'promptTokenCount': prompt, 'candidatesTokenCount': 2, 'totalTokenCount': prompt + 2,
                              'cachedContentTokenCount': read})
    raise ValueError(kind)


KINDS = {'openai_chat': ('openai_compatible', '/v1', 'model-x'), 'openrouter': ('openrouter', '/api/v1', 'model-x'),
         'responses': ('openai', '/v1', 'gpt-x'), 'anthropic': ('anthropic', '/v1', 'claude-x'),
         'gemini': ('gemini', '/v1beta', 'gemini-x')}


def ours(kind, chunks):
    name, base, model = KINDS[kind]
    with ScriptedServer([Reply(200, chunks=chunks, headers=[('Content-Type', 'text/event-stream')])]) as server:
        p = get_provider(name, settings={'api_key': 'k' * 12, 'base_url': server.url + base, 'model': model})
        answer = Answer()
        for chunk in p.text_chat([Message(Role.USER, 'q')]):
            answer.add(chunk)
    assert answer.failed is None, answer.failed
    return answer.done.usage


@pytest.mark.parametrize('kind', list(KINDS))
def test_each_wire_format_reads_the_tokens_read_from_and_written_to_the_cache(kind):
    u = ours(kind, stream_for(kind, 14_100, 13_200, 0 if kind == 'gemini' else 900))
    assert (u.input_tokens, u.cached_tokens) == (14_100, 13_200)
    if kind != 'gemini':  # Gemini's implicit cache writes nothing billed
        assert u.cache_write_tokens == 900
    assert cache_text(u) == "13,200 of 14,100 tokens read from the provider's cache"
    if kind == 'openrouter':
        assert u.cost == Cost(0.0042, 'USD', 'reported')  # OpenRouter's own figure, its cache counted in


def test_llama_cpp_timings_and_deepseeks_counts_say_what_came_from_the_cache():
    u = ours('openai_chat', chat_events({'prompt_tokens': 5030, 'completion_tokens': 2, 'total_tokens': 5032},
                                        {'cache_n': 5010, 'prompt_n': 20}))
    assert (u.input_tokens, u.cached_tokens) == (5030, 5010)
    # DeepSeek (api-docs.deepseek.com, context caching): hits and misses, in the usage itself
    u = ours('openai_chat', chat_events({'prompt_tokens': 5030, 'completion_tokens': 2, 'total_tokens': 5032,
                                         'prompt_cache_hit_tokens': 4992, 'prompt_cache_miss_tokens': 38}))
    assert (u.input_tokens, u.cached_tokens) == (5030, 4992)


# hostile values in every place a count of the cache is read: never a crash, never shown
HOSTILE = [-5, 10 ** 400, 1e308, '13200', True, None, [13200], {'n': 1}, 99_999_999]


@pytest.mark.parametrize('kind', list(KINDS))
@pytest.mark.parametrize('bad', HOSTILE, ids=repr)
def test_a_hostile_count_of_the_cache_is_dropped(kind, bad):
    chunks = [c.replace(b'13200', json.dumps(bad).encode()).replace(b'900', json.dumps(bad).encode())
              for c in stream_for(kind, 14_100, 13_200, 900)]
    u = ours(kind, chunks)
    assert u.cached_tokens is None or 0 <= u.cached_tokens <= (u.input_tokens or 0)
    assert u.cache_write_tokens is None or (u.cached_tokens or 0) + u.cache_write_tokens <= (u.input_tokens or 0)
    if type(bad) is not int or not 0 <= bad < MOST_TOKENS:
        assert u.cached_tokens is None and u.cache_write_tokens is None
    elif kind != 'anthropic':  # more than the prompt; Anthropic's prompt is the sum of its parts
        assert u.cached_tokens is None
    assert '-' not in cache_text(u) and 'nan' not in cache_text(u).lower()


@pytest.mark.parametrize('kind', ['openai_chat', 'responses', 'anthropic', 'gemini'])
@pytest.mark.parametrize('details', [[], 'x', 7, None], ids=repr)
def test_usage_details_of_the_wrong_shape_are_no_counts(kind, details):
    """Within a usage object, a count (or the details holding it) of the wrong shape is no count, and the
    answer stands; a usage that is no object at all is the stream breaking its format (tests/core/test_fuzz.py)."""
    if kind == 'openai_chat':
        chunks = chat_events({'prompt_tokens': 10, 'completion_tokens': 2, 'prompt_tokens_details': details},
                             details)
    elif kind == 'responses':
        chunks = responses_events({'input_tokens': 10, 'output_tokens': 2, 'input_tokens_details': details,
                                   'output_tokens_details': details})
    elif kind == 'anthropic':
        chunks = anthropic_events({'input_tokens': 10, 'cache_read_input_tokens': [details]},
                                  {'output_tokens': 2, 'cache_creation_input_tokens': [details]})
    else:
        chunks = gemini_events({'promptTokenCount': 10, 'candidatesTokenCount': 2,
                                'cachedContentTokenCount': [details]})
    u = ours(kind, chunks)
    assert u.input_tokens == 10 and u.cached_tokens is None and u.cache_write_tokens is None

# }}}


# the official SDKs read the same bytes {{{

SDK_CODE = r'''
import json, sys
kind, url, model = sys.argv[1:4]
counts = {}
q = [{'role': 'user', 'content': 'q'}]
if kind in ('openai_chat', 'openrouter', 'responses'):
    import openai
    client = openai.OpenAI(base_url=url, api_key='replayed', max_retries=0)
if kind in ('openai_chat', 'openrouter'):
    for chunk in client.chat.completions.create(model=model, messages=q, stream=True):
        if chunk.usage:
            d = chunk.usage.prompt_tokens_details
            counts = {'prompt': chunk.usage.prompt_tokens, 'read': d.cached_tokens,
                      'written': getattr(d, 'cache_write_tokens', None)}
elif kind == 'responses':
    for event in client.responses.create(model=model, input='q', stream=True):
        if event.type == 'response.completed':
            u = event.response.usage
            counts = {'prompt': u.input_tokens, 'read': u.input_tokens_details.cached_tokens,
                      'written': getattr(u.input_tokens_details, 'cache_write_tokens', None)}
elif kind == 'anthropic':
    import anthropic
    client = anthropic.Anthropic(base_url=url, api_key='replayed', max_retries=0)
    u = {}
    for event in client.messages.create(model=model, max_tokens=64, messages=q, stream=True):
        if event.type == 'message_start':
            s = event.message.usage
            u = {'fresh': s.input_tokens, 'read': s.cache_read_input_tokens, 'written': s.cache_creation_input_tokens}
        elif event.type == 'message_delta':
            d = event.usage
            for k, v in (('fresh', d.input_tokens), ('read', d.cache_read_input_tokens),
                         ('written', d.cache_creation_input_tokens)):
                if v is not None:
                    u[k] = v
    counts = {'prompt': u['fresh'] + (u['read'] or 0) + (u['written'] or 0), 'read': u['read'],
              'written': u['written']}
elif kind == 'gemini':
    from google import genai
    from google.genai import types
    client = genai.Client(api_key='replayed', http_options=types.HttpOptions(base_url=url, api_version='v1beta'))
    for chunk in client.models.generate_content_stream(model=model, contents='q'):
        um = chunk.usage_metadata
        if um is not None and um.prompt_token_count is not None:
            counts = {'prompt': um.prompt_token_count, 'read': um.cached_content_token_count, 'written': None}
print(json.dumps(counts))
'''


@pytest.mark.parametrize('kind', list(KINDS))
def test_the_official_sdks_read_the_same_counts(kind):
    chunks = stream_for(kind, 14_100, 13_200, 0 if kind == 'gemini' else 900)
    mine = ours(kind, chunks)
    name, base, model = KINDS[kind]
    with ScriptedServer([Reply(200, chunks=chunks, headers=[('Content-Type', 'text/event-stream')])]) as server:
        url = server.url + (base if kind in ('openai_chat', 'openrouter', 'responses') else '')
        r = sdk_python(SDK_CODE, kind, url, model)
    assert r.returncode == 0, r.stderr[-3000:]
    theirs = json.loads(r.stdout.strip().splitlines()[-1])
    assert theirs == {'prompt': mine.input_tokens, 'read': mine.cached_tokens,
                      'written': mine.cache_write_tokens if kind != 'gemini' else None}

# }}}


# prices and words {{{

def test_cached_tokens_are_priced_at_the_cached_rate():
    full = pricing.estimate('openai', 'gpt-5-mini', Usage(10_000, 100))
    cached = pricing.estimate('openai', 'gpt-5-mini', Usage(10_000, 100, None, 9_000))
    # 1,000 at $0.25, 9,000 at $0.025, 100 out at $2.00, per million
    assert cached.amount == pytest.approx((1_000 * 0.25 + 9_000 * 0.025 + 100 * 2.00) / 1e6)
    assert full.amount == pytest.approx((10_000 * 0.25 + 100 * 2.00) / 1e6) and cached.amount < full.amount
    assert cached.source == 'estimated' and cached.price_date == pricing.PRICE_DATE


def test_anthropic_writes_cost_more_and_reads_a_tenth():
    u = Usage(10_000, 100, None, 6_000, cache_write_tokens=3_000)
    cost = pricing.estimate('anthropic', 'claude-sonnet-4-5-20250929', u)
    assert cost.amount == pytest.approx((1_000 * 3.00 + 6_000 * 0.30 + 3_000 * 3.75 + 100 * 15.00) / 1e6)
    gemini = pricing.estimate('gemini', 'gemini-2.5-flash', Usage(10_000, 100, None, 10_000))
    assert gemini.amount == pytest.approx((10_000 * 0.03 + 100 * 2.50) / 1e6)


def test_every_cached_price_is_of_a_priced_model_and_below_its_input_price():
    for provider, table in pricing.CACHE_PRICES.items():
        for model, (read, write) in table.items():
            input_price = pricing.PRICES[provider][model][0]
            assert 0 < read < input_price, (provider, model)
            assert write is None or write >= input_price, (provider, model)


def test_a_model_without_a_cached_price_is_priced_at_its_input_price(monkeypatch):
    monkeypatch.setitem(pricing.CACHE_PRICES, 'openai', {})
    assert pricing.estimate('openai', 'gpt-5-mini', Usage(10_000, 100, None, 9_000)).amount == pytest.approx(
        pricing.estimate('openai', 'gpt-5-mini', Usage(10_000, 100)).amount)
    assert pricing.estimate('openai', 'gpt-unlisted', Usage(10_000, 100, None, 9_000)) is None  # unknown, not free


def test_the_cache_is_said_only_when_something_was_read_from_it():
    assert cache_text(Usage(14_100, 5, None, 13_200)) == "13,200 of 14,100 tokens read from the provider's cache"
    assert cache_text(Usage(14_100, 5, None, 0)) == ''
    assert cache_text(Usage(14_100, 5)) == ''
    assert cache_text(Usage(None, 5, None, 13_200)) == ''

# }}}
