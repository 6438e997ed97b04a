# License: GPLv3 Copyright: the Book AI developers
"""Prompt caching against real peers: llama.cpp's llama-server (the tiny model) through the
three wire formats it speaks (chat completions, Anthropic's messages, OpenAI's Responses), and
aimock as OpenRouter. The second question about the same book and place reads the book's text
from the server's cache, Book AI reads how much, and the bytes of a conversation's requests stay
the same turn after turn: the prompt the server evaluated for the second turn starts with the
exact bytes of the first's."""

import json

import pytest

from calibre_plugins.bookai.conversation.books import BookInfo
from calibre_plugins.bookai.conversation.conversation import Conversation, cache_text
from calibre_plugins.bookai.conversation.exchange import Exchange
from calibre_plugins.bookai.conversation.prompts import book_part
from calibre_plugins.bookai.conversation.question import Question, book_question
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.providers import caching
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.novel import AUTHOR, EPUB, TITLE
from helpers.peers import AiMock, RecordingProxy, http, sdk_python, tiny_server

TINY_TOKENS = 8          # the answers do not matter here: the prompts do
TINY_CONTEXT = 16384     # the tiny model reads a token a character: room for a few thousand of the book
PLACE = 0.4              # the reader's place, a fraction of the book
BUDGET = 1200            # tokens of book text per question, as Book AI counts them (about 4,800 characters)
BASES = {'openai_compatible': '/v1', 'anthropic': '/v1', 'openai': '/v1'}
PATHS = {'openai_compatible': '/chat/completions', 'anthropic': '/messages', 'openai': '/responses'}


@pytest.fixture(scope='module')
def novel():
    return read_epub(EPUB)


@pytest.fixture(autouse=True)
def no_server_known(monkeypatch):
    """Which servers are llama.cpp's is learned afresh in each test."""
    monkeypatch.setattr(caching, '_llama_cpp', set())


def about_the_novel() -> Conversation:
    return Conversation([BookInfo(1, TITLE, (AUTHOR,))])


def at_the_place(novel, text: str) -> Question:
    """text, with the chapter the reader is in up to the place: the same passages whatever the question."""
    q = book_question(text, 'chapter', novel, position=PLACE, budget=BUDGET)
    assert q.passages and q.spoiler_safe
    return q


def ask(conv: Conversation, provider, question: Question):
    """question asked in conv as the windows and the command line ask it (conversation/exchange.py)."""
    exchange = Exchange(conv, provider, question)
    for chunk in exchange.chunks():
        exchange.take(chunk)
    assert exchange.finish(None) == ''
    turn = exchange.turn
    assert not turn.error and turn.answered, turn.error
    return turn


def tokens_of(server, text: str) -> int:
    status, _h, body = http('POST', server.base_url + '/tokenize', {'content': text})
    assert status == 200, body
    return len(json.loads(body)['tokens'])


def provider_at(name: str, url: str):
    settings = {'base_url': url + BASES[name], 'model': 'tiny', 'api_key': 'no-key-needed', 'temperature': 0}
    if name == 'anthropic':  # llama-server holds the prompt and the longest answer asked for to its context
        settings['max_tokens'] = TINY_TOKENS
    return get_provider(name, settings=settings)


@pytest.mark.parametrize('name', ['openai_compatible', 'anthropic', 'openai'])
def test_the_second_question_reads_the_book_from_llama_servers_cache(name, novel, tiny):
    with RecordingProxy(tiny.base_url) as proxy:
        provider = provider_at(name, proxy.base_url)
        first = about_the_novel()
        q1 = at_the_place(novel, 'Who has come to the neighbourhood?')
        t1 = ask(first, provider, q1)
        book = tokens_of(tiny, book_part(q1.passages))
        assert book > 1000 and t1.usage.input_tokens > book
        # a follow-up reads the whole first turn from the cache: the bytes sent before are the same
        # (llama-server's Responses cannot read an earlier answer given back: "Cannot determine type of 'item'")
        if name != 'openai':
            t2 = ask(first, provider, at_the_place(novel, 'And what did her mother say?'))
            assert t2.usage.cached_tokens >= t1.usage.input_tokens - 2, (t1.usage, t2.usage)
        # another conversation about the same book and place reads the book's text from it
        other = about_the_novel()
        t3 = ask(other, provider, at_the_place(novel, 'Where does the story take place?'))
        assert t3.usage.cached_tokens >= 0.9 * book, (book, t3.usage)
        assert t3.usage.cached_tokens <= t3.usage.input_tokens
        assert cache_text(t3.usage) == f"{t3.usage.cached_tokens:,} of {t3.usage.input_tokens:,} tokens read from " \
                                       "the provider's cache"
        sent = [json.loads(body) for method, path, body in proxy.received if path.endswith(PATHS[name])]
    assert len(sent) == (2 if name == 'openai' else 3)
    if name == 'openai_compatible':  # cache_prompt once the server is known to be llama.cpp's: by its timings
        assert 'cache_prompt' not in sent[0] and sent[1]['cache_prompt'] is True and sent[2]['cache_prompt'] is True
    else:
        assert not any('cache_prompt' in s for s in sent)
    if name == 'anthropic':  # the book's text, then the request's end: where the cache ends
        last = sent[-1]['messages'][-1]['content']
        assert last[0]['text'] == book_part(q1.passages) and last[0]['cache_control'] == {'type': 'ephemeral'}
        assert last[-1]['cache_control'] == {'type': 'ephemeral'}
    assert not any('prompt_cache_key' in s for s in sent)  # not OpenAI's own service


def test_the_second_turns_prompt_starts_with_the_exact_bytes_of_the_first(novel, tmp_path):
    """What llama-server itself evaluated (its slot saved, read back as text): the second turn's prompt
    begins with the whole of the first's, and another conversation about the same book and place begins
    with the same bytes through the book's text."""
    with tiny_server(TINY_TOKENS, TINY_CONTEXT, '--slot-save-path', str(tmp_path)) as server:
        provider = provider_at('openai_compatible', server.base_url)
        conv = about_the_novel()
        q1 = at_the_place(novel, 'Who has come to the neighbourhood?')
        t1 = ask(conv, provider, q1)
        evaluated1 = server.last_prompt()
        prompt1 = evaluated1[:evaluated1.rindex('<|im_start|>assistant\n') + len('<|im_start|>assistant\n')]
        assert prompt1.endswith(f'{q1.text}<|im_end|>\n<|im_start|>assistant\n') and t1.answer
        ask(conv, provider, at_the_place(novel, 'And what did her mother say?'))
        evaluated2 = server.last_prompt()
        assert evaluated2.startswith(prompt1 + t1.answer)  # the first turn, its answer, byte for byte
        ask(about_the_novel(), provider, at_the_place(novel, 'Where does the story take place?'))
        evaluated3 = server.last_prompt()
    book_end = prompt1.index(book_part(q1.passages)) + len(book_part(q1.passages))
    assert evaluated3[:book_end] == prompt1[:book_end]  # the system message and the book's text


OPENROUTER_FIXTURES = {'fixtures': [{
    'match': {'userMessage': 'What came from the cache?'},
    'response': {'content': 'The book, mostly.', 'usage': {
        'prompt_tokens': 14100, 'completion_tokens': 4, 'cost': 0.0042,
        'prompt_tokens_details': {'cached_tokens': 13200, 'cache_write_tokens': 900}}}}]}

OPENAI_SDK = r'''
import json, sys
import openai
url, model, question = sys.argv[1:4]
client = openai.OpenAI(base_url=url, api_key='sk-or-test', max_retries=0)
counts = {}
for chunk in client.chat.completions.create(model=model, stream=True, stream_options={'include_usage': True},
                                            messages=[{'role': 'user', 'content': question}]):
    if chunk.usage:
        d = chunk.usage.prompt_tokens_details
        counts = {'prompt': chunk.usage.prompt_tokens, 'read': d.cached_tokens, 'written': d.cache_write_tokens,
                  'cost': (chunk.usage.model_extra or {}).get('cost')}
print(json.dumps(counts))
'''


def test_openrouter_reads_the_cache_and_its_cost_as_the_openai_sdk_does(tmp_path, novel):
    fixtures = tmp_path / 'openrouter.json'
    fixtures.write_text(json.dumps(OPENROUTER_FIXTURES))
    with AiMock(fixtures) as mock:
        p = get_provider('openrouter', settings={'base_url': mock.base_url + '/api/v1', 'api_key': 'sk-or-test',
                                                  'model': 'anthropic/claude-sonnet-4.5'})
        conv = about_the_novel()
        q = at_the_place(novel, 'What came from the cache?')
        turn = ask(conv, p, q)
        sent = [e for e in mock.journal() if e.get('path', '').endswith('/chat/completions')]
        sdk = sdk_python(OPENAI_SDK, mock.base_url + '/api/v1', 'anthropic/claude-sonnet-4.5',
                         'What came from the cache?')
    u = turn.usage
    assert (u.input_tokens, u.cached_tokens, u.cache_write_tokens) == (14100, 13200, 900)
    assert u.cost is not None and u.cost.amount == 0.0042 and u.cost.source == 'reported'
    assert cache_text(u) == "13,200 of 14,100 tokens read from the provider's cache"
    assert sdk.returncode == 0, sdk.stderr[-3000:]
    assert json.loads(sdk.stdout.strip().splitlines()[-1]) == {'prompt': 14100, 'read': 13200, 'written': 900,
                                                               'cost': 0.0042}
    body = sent[-1]['body']
    content = body['messages'][-1]['content']
    assert content[0] == {'type': 'text', 'text': book_part(q.passages), 'cache_control': {'type': 'ephemeral'}}
    assert content[-1]['cache_control'] == {'type': 'ephemeral'}

