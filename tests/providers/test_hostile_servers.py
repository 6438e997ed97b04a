# License: GPLv3 Copyright: the Book AI developers
"""Hostile servers (issue 15, findings 2 and 3): what a peer sends is bounded, in size, line
length, JSON depth and time, for every wire format, and the reader is told in a sentence,
keeping what came."""

import json
import os
import threading
import time

import pytest

from calibre_plugins.bookai.core import errors, limits
from calibre_plugins.bookai.core.messages import Answer, Message, Role
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.scripted_server import Reply, ScriptedServer, TrickleServer

KEY = 'sk-test-secret-key-0123456789'
QUESTION = [Message(Role.USER, 'Hello?')]
SSE_HEADERS = [('Content-Type', 'text/event-stream')]
MB = 1024 * 1024


def js(value):
    return json.dumps(value).encode()


def sse_event(payload, event=''):
    return (f'event: {event}\n' if event else '').encode() + b'data: ' + js(payload) + b'\n\n'


# one answer text event, as each wire format sends it
TEXT_EVENTS = {
    'openai_compatible': lambda t: sse_event({'model': 'm', 'choices': [{'index': 0, 'delta': {'content': t}}]}),
    'openrouter': lambda t: sse_event({'model': 'm', 'choices': [{'index': 0, 'delta': {'content': t}}]}),
    'openai': lambda t: sse_event({'type': 'response.output_text.delta', 'delta': t}),
    'anthropic': lambda t: sse_event({'type': 'content_block_delta', 'index': 0,
                                      'delta': {'type': 'text_delta', 'text': t}}, 'content_block_delta'),
    'gemini': lambda t: sse_event({'candidates': [{'content': {'parts': [{'text': t}], 'role': 'model'}}]}),
    'ollama': lambda t: js({'model': 'm', 'message': {'role': 'assistant', 'content': t}, 'done': False}) + b'\n',
}
FORMATS = list(TEXT_EVENTS)
# what carries no answer: a comment, an empty delta
NOTHING = {
    'openai_compatible': b': keepalive\n\n',
    'openrouter': b': OPENROUTER PROCESSING\n\n',
    'openai': sse_event({'type': 'response.output_text.delta', 'delta': ''}),
    'anthropic': sse_event({'type': 'ping'}, 'ping'),
    'gemini': b': keepalive\n\n',
    'ollama': js({'model': 'm', 'message': {'role': 'assistant', 'content': ''}, 'done': False}) + b'\n',
}


def provider(name, url, **settings):
    s = {'base_url': url + '/v1', 'model': 'm', 'api_key': KEY}
    s.update(settings)
    return get_provider(name, settings=s)


def ask(p):
    answer = Answer()
    for chunk in p.text_chat(QUESTION):
        answer.add(chunk)
    return answer


def resident():
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) * 1024
    return 0


class PeakMemory:
    """The growth of this process's resident memory while the block runs, sampled."""

    def __enter__(self):
        self.base = self.peak = resident()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.sample, daemon=True)
        self.thread.start()
        return self

    def sample(self):
        while not self.done.wait(0.02):
            self.peak = max(self.peak, resident())

    def __exit__(self, *a):
        self.done.set()
        self.thread.join()
        self.growth = max(self.peak, resident()) - self.base


def endless(name, total=2 * 1024 * MB, piece='many words of an answer that never ends, ' * 100):
    """total bytes of answer text events."""
    event = TEXT_EVENTS[name](piece)
    yield TEXT_EVENTS[name]('The beginning. ')
    for _ in range(total // len(event)):
        yield event


# the size of an answer

@pytest.mark.parametrize('name', FORMATS)
def test_an_endless_answer_stops_at_the_limit_with_a_sentence_and_keeps_its_text(name):
    with ScriptedServer([Reply(200, chunks=endless(name), headers=SSE_HEADERS)]) as server:
        with PeakMemory() as memory:
            start = time.monotonic()
            answer = ask(provider(name, server.url))
            elapsed = time.monotonic() - start
    assert isinstance(answer.failed.error, errors.TooLarge)
    assert f'sent more than {limits.MAX_ANSWER_BYTES / MB:g} MB, the most Book AI accepts for one answer, ' \
           'so it was stopped.' in answer.failed.message
    assert answer.text.startswith('The beginning. many words') and len(answer.text) > MB  # what came is kept
    assert memory.growth < 300 * MB, memory.growth
    assert elapsed < 60


def test_a_conversation_keeps_the_partial_answer_of_a_stopped_stream(monkeypatch):
    """As the windows and the command line use it: the turn keeps the text that came, with the
    sentence, and so does the history."""
    from calibre_plugins.bookai.conversation.conversation import Conversation
    monkeypatch.setattr(limits, 'MAX_ANSWER_BYTES', 2 * MB)
    with ScriptedServer([Reply(200, chunks=endless('openai_compatible', total=64 * MB),
                               headers=SSE_HEADERS)]) as server:
        p = provider('openai_compatible', server.url)
        conv = Conversation(())
        answer = Answer()
        for chunk in p.text_chat(conv.ask('Go on and on.')):
            answer.add(chunk)
        turn = conv.finish(answer, p.name)
    assert turn.answer == answer.text and turn.answer.startswith('The beginning. many words')
    assert 'the most Book AI accepts for one answer, so it was stopped.' in turn.error
    kept = Conversation.from_dict(json.loads(json.dumps(conv.as_dict())))
    assert kept.turns[-1].answer == turn.answer and kept.turns[-1].error == turn.error
    assert kept.retry_question() == 'Go on and on.'


# the length of a line

@pytest.mark.parametrize('name', FORMATS)
def test_a_100_mb_line_stops_quickly_with_a_sentence(name):
    start_of_line = b'data: {"choices": "' if name != 'ollama' else b'{"message": "'
    line = [TEXT_EVENTS[name]('Kept. '), start_of_line] + [b'x' * MB] * 100
    with ScriptedServer([Reply(200, chunks=line, headers=SSE_HEADERS)]) as server:
        with PeakMemory() as memory:
            start = time.monotonic()
            answer = ask(provider(name, server.url))
            elapsed = time.monotonic() - start
    assert isinstance(answer.failed.error, errors.TooLarge)
    assert f'sent a line longer than {limits.MAX_LINE_CHARS / MB:g} MB, the most Book AI accepts, so the answer ' \
           'was stopped.' in answer.failed.message
    assert answer.text == 'Kept. '
    assert elapsed < 30 and memory.growth < 300 * MB, (elapsed, memory.growth)


# the depth of JSON

DEEP = b'[' * 100_000 + b']' * 100_000
DEEP_SENTENCE = (f'sent JSON nested deeper than {limits.MAX_JSON_DEPTH} levels, the most Book AI reads, '
                 'so it was not read.')


def deep_event(name):
    if name == 'ollama':
        return b'{"message": {"content": ' + DEEP + b'}}\n'
    return b'data: {"a": ' + DEEP + b'}\n\n'


@pytest.mark.parametrize('name', FORMATS)
def test_deep_json_in_a_stream_is_a_sentence_not_a_recursion_error(name):
    with ScriptedServer([Reply(200, chunks=[TEXT_EVENTS[name]('Kept. '), deep_event(name)],
                               headers=SSE_HEADERS)]) as server:
        answer = ask(provider(name, server.url))
    assert isinstance(answer.failed.error, errors.ProtocolError)
    assert DEEP_SENTENCE in answer.failed.message and 'Recursion' not in answer.failed.message
    assert answer.text == 'Kept. '


@pytest.mark.parametrize('name', ['openai_compatible', 'ollama', 'gemini', 'anthropic'])
def test_deep_json_in_a_model_list_is_a_sentence(name):
    with ScriptedServer([Reply(200, b'{"data": ' + DEEP + b', "models": ' + DEEP + b'}')]) as server:
        p = provider(name, server.url, model='')
        with pytest.raises(errors.ProtocolError) as e:
            p.models(refresh=True)
    assert DEEP_SENTENCE in str(e.value)


@pytest.mark.parametrize('name', ['openai_compatible', 'ollama', 'gemini'])
def test_deep_json_in_an_embeddings_answer_is_a_sentence(name):
    with ScriptedServer([Reply(200, b'{"data": ' + DEEP + b', "embeddings": ' + DEEP + b'}')]) as server:
        p = provider(name, server.url, embedding_model='e')
        with pytest.raises(errors.ProtocolError) as e:
            p.embed(['one passage'])
    assert DEEP_SENTENCE in str(e.value)


def test_deep_json_in_an_error_body_is_not_quoted_and_not_a_traceback():
    with ScriptedServer([Reply(400, b'{"error": ' + DEEP + b'}')]) as server:
        answer = ask(provider('openai_compatible', server.url))
    assert isinstance(answer.failed.error, errors.BadRequest)
    assert 'did not accept the request (HTTP 400)' in answer.failed.message
    assert 'Recursion' not in answer.failed.message and len(answer.failed.message) < 1000


# the model list and its cache

def model_list(count, id_length=20):
    yield b'{"object": "list", "data": ['
    for i in range(count):
        yield (b', ' if i else b'') + js({'id': f'model-{i:0{id_length}d}', 'object': 'model', 'created': i})
    yield b']}'


def batched(pieces, size=64 * 1024):
    buffer = []
    length = 0
    for piece in pieces:
        buffer.append(piece)
        length += len(piece)
        if length >= size:
            yield b''.join(buffer)
            buffer, length = [], 0
    if buffer:
        yield b''.join(buffer)


def test_a_300_mb_model_list_is_not_read_and_not_cached():
    p = None
    with ScriptedServer([Reply(200, chunks=batched(model_list(6_000_000)))]) as server:  # about 300 MB
        p = provider('openai_compatible', server.url, model='')
        with PeakMemory() as memory:
            with pytest.raises(errors.TooLarge) as e:
                p.models(refresh=True)
    assert f'sent more than {limits.MAX_JSON_BYTES / MB:g} MB, the most Book AI accepts for one answer' in str(e.value)
    assert memory.growth < 300 * MB, memory.growth
    assert not os.path.exists(p.model_list.cache_path())


def test_a_long_model_list_is_kept_to_its_limit_and_so_is_its_cache():
    count = limits.MAX_MODELS * 3
    with ScriptedServer([Reply(200, b''.join(model_list(count)))]) as server:
        p = provider('openai_compatible', server.url, model='')
        models = p.models(refresh=True)
    assert len(models) == limits.MAX_MODELS
    assert os.path.getsize(p.model_list.cache_path()) <= limits.MAX_MODELS_CACHE_BYTES
    assert len(p.models()) == limits.MAX_MODELS  # read back from the cache


@pytest.mark.parametrize('damage', [b'{"fetched": 1e99, "models": [{"id": "x"', b'[' * 100_000,
                                    b'{"fetched": 1e99, "models": [], "pad": "' + b'x' * 9 * MB + b'"}',
                                    b'{"fetched": 1e99, "models": [{"id": "x", "no such field": 1}]}'],
                         ids=['cut short', 'nested too deep', 'too large', 'not models'])
def test_a_damaged_or_oversized_models_cache_is_set_aside_not_overwritten(damage):
    with ScriptedServer([Reply(200, b''.join(model_list(3)))]) as server:
        p = provider('openai_compatible', server.url, model='')
        path = p.model_list.cache_path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'wb') as f:
            f.write(damage)
        models = p.models()
    assert [m.id for m in models] == [f'model-{i:020d}' for i in range(3)]
    with open(path + '.damaged', 'rb') as f:
        assert f.read() == damage
    with open(path, 'rb') as f:
        assert json.loads(f.read())['models'][0]['id'] == 'model-' + '0' * 20
    os.remove(path + '.damaged')


def test_a_second_damaged_models_cache_never_overwrites_the_first():
    with ScriptedServer([Reply(200, b''.join(model_list(3))), Reply(200, b''.join(model_list(3)))]) as server:
        p = provider('openai_compatible', server.url, model='')
        path = p.model_list.cache_path()
        os.makedirs(os.path.dirname(path), exist_ok=True)
        for damage in (b'first damage', b'second damage'):
            with open(path, 'wb') as f:
                f.write(damage)
            assert len(p.models()) == 3
    with open(path + '.damaged', 'rb') as f:
        assert f.read() == b'first damage'
    with open(path + '.2.damaged', 'rb') as f:
        assert f.read() == b'second damage'
    for kept in (path + '.damaged', path + '.2.damaged'):
        os.remove(kept)


# time: silence is no answer progress, and a whole-request deadline

@pytest.mark.parametrize('name', FORMATS)
def test_a_stream_of_keepalives_ends_after_the_longest_silence(name):
    chunks = [TEXT_EVENTS[name]('Kept. ')] + [NOTHING[name]] * 60
    with ScriptedServer([Reply(200, chunks=chunks, headers=SSE_HEADERS, chunk_delay=0.5)]) as server:
        start = time.monotonic()
        answer = ask(provider(name, server.url, read_timeout=2.0))
        elapsed = time.monotonic() - start
    assert isinstance(answer.failed.error, errors.TimedOut)
    assert 'sent no answer for 2 seconds, so the answer was stopped.' in answer.failed.message
    assert answer.text == 'Kept. '
    assert elapsed < 10, elapsed


def test_an_answer_that_never_ends_is_stopped_after_the_longest_duration(monkeypatch):
    monkeypatch.setattr(limits, 'ANSWER_SECONDS', 3)
    chunks = [TEXT_EVENTS['anthropic']('word ')] * 100
    with ScriptedServer([Reply(200, chunks=chunks, headers=SSE_HEADERS, chunk_delay=0.2)]) as server:
        start = time.monotonic()
        answer = ask(provider('anthropic', server.url, read_timeout=2.0))
        elapsed = time.monotonic() - start
    assert isinstance(answer.failed.error, errors.TimedOut)
    assert 'was still answering after 0.05 minutes, the longest an answer may take, so it was stopped.' \
        in answer.failed.message
    assert answer.text.startswith('word word ')
    assert elapsed < 10, elapsed


def test_headers_that_trickle_are_cut_off():
    head = b'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nX-Padding: ' + b'a' * 100 + b'\r\n\r\n'
    with TrickleServer(head, delay=0.3) as server:
        start = time.monotonic()
        answer = ask(provider('openai_compatible', server.url, read_timeout=2.0))
        elapsed = time.monotonic() - start
    assert isinstance(answer.failed.error, errors.TimedOut)
    assert 'did not answer for 2 seconds.' in answer.failed.message
    assert elapsed < 8, elapsed


def test_a_model_list_that_trickles_is_cut_off():
    body = b''.join(model_list(50))
    head = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n' % len(body)
    with TrickleServer(head + body, delay=0.3, fast=len(head) + 10) as server:
        p = provider('openai_compatible', server.url, model='', read_timeout=2.0)
        start = time.monotonic()
        with pytest.raises(errors.TimedOut) as e:
            p.models(refresh=True)
        elapsed = time.monotonic() - start
    assert 'did not answer for 2 seconds.' in str(e.value)
    assert elapsed < 8, elapsed


def test_an_error_body_that_trickles_is_cut_off():
    body = b'{"error": {"message": "' + b'slow ' * 100 + b'"}}'
    head = b'HTTP/1.1 400 Bad Request\r\nContent-Length: %d\r\n\r\n' % len(body)
    with TrickleServer(head + body, delay=0.3, fast=len(head) + 5) as server:
        start = time.monotonic()
        answer = ask(provider('openai_compatible', server.url, read_timeout=2.0))
        elapsed = time.monotonic() - start
    assert isinstance(answer.failed.error, errors.TimedOut)
    assert elapsed < 8, elapsed


def test_a_server_that_closes_its_connection_after_answering_is_read_to_the_end():
    """Connection: close hands the socket to the response: the deadline's reader keeps it open."""
    stream = [TEXT_EVENTS['openai_compatible']('Hi there'),
              sse_event({'model': 'm', 'choices': [{'index': 0, 'delta': {}, 'finish_reason': 'stop'}]}),
              b'data: [DONE]\n\n']
    close = [('Connection', 'close')]
    replies = [Reply(200, b''.join(model_list(3)), headers=close),
               Reply(200, chunks=stream, headers=SSE_HEADERS + close)]
    with ScriptedServer(replies) as server:
        p = provider('openai_compatible', server.url, model='')
        assert len(p.models(refresh=True)) == 3
        answer = ask(provider('openai_compatible', server.url))
    assert answer.failed is None and answer.text == 'Hi there'
