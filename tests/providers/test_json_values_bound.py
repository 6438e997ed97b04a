# License: GPLv3 Copyright: the Book AI developers
"""A peer's JSON that is within its byte bound but holds too many values for its size (issue 26,
finding 7) ends in a sentence, for every surface that reads JSON whole or as a stream: a model
list, an embeddings answer, an image answer (a tighter bound: limits.IMAGE_JSON_MEMORY_PER_BYTE),
an event of a streamed answer (what came before it kept), an error body (not quoted); never a
traceback, never gigabytes (each refused within a few times its size, measured by the kernel's
high-water mark). Deep JSON keeps its own sentence."""

import json
from pathlib import Path

import pytest

from calibre_plugins.bookai.core import errors, limits
from calibre_plugins.bookai.core.messages import Answer, Message, Role
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.peak import MB, peak_growth
from helpers.scripted_server import Reply, ScriptedServer

KEY = 'sk-test-values-0123456789'
QUESTION = [Message(Role.USER, 'Hello?')]
SSE_HEADERS = [('Content-Type', 'text/event-stream')]
BASES = {'openai': '/v1', 'openai_compatible': '/v1', 'grok': '/v1', 'openrouter': '/api/v1', 'gemini': '/v1beta',
         'ollama': '', 'anthropic': '/v1'}


def sentence(per_byte=limits.JSON_MEMORY_PER_BYTE):
    return (f'sent JSON holding more values than Book AI reads in a text of its size (read, they would take more '
            f'than {per_byte:g} times its size in memory), so it was not read.')


def empty_objects(size):
    return b'[' + b'{},' * (size // 3) + b'{}]'


def provider(name, url, **settings):
    s = {'base_url': url + BASES.get(name, '/v1'), 'model': 'm', 'api_key': KEY}
    s.update(settings)
    return get_provider(name, settings=s)


@pytest.mark.parametrize('name', ['openai_compatible', 'openrouter', 'ollama', 'gemini', 'anthropic'])
def test_a_model_list_of_empty_objects_is_a_sentence(name):
    body = b'{"data": ' + empty_objects(15 * MB) + b', "models": []}'
    assert len(body) <= limits.MAX_JSON_BYTES
    with ScriptedServer([Reply(200, body)]) as server:
        p = provider(name, server.url, model='')
        outcome, growth = peak_growth(lambda: p.models(refresh=True))
    assert isinstance(outcome, errors.ProtocolError), outcome
    assert sentence() in str(outcome) and KEY not in str(outcome)
    assert growth < 5 * len(body), growth / len(body)  # the body, its text, the strings taken out


@pytest.mark.parametrize('name', ['openai_compatible', 'ollama', 'gemini'])
def test_an_embeddings_answer_of_empty_objects_is_a_sentence(name):
    body = b'{"data": ' + empty_objects(8 * MB) + b', "embeddings": [], "embedding": {"values": []}}'
    with ScriptedServer([Reply(200, body)]) as server:
        p = provider(name, server.url, embedding_model='e')
        with pytest.raises(errors.ProtocolError) as e:
            p.embed(['one passage'])
    assert sentence() in str(e.value)


@pytest.mark.parametrize('name', ['openai', 'openai_compatible', 'grok', 'openrouter', 'gemini'])
def test_an_image_answer_of_14_million_empty_objects_is_a_sentence(name):
    body = b'{"created": 1, "data": ' + empty_objects(40 * MB) + b'}'
    assert 40 * MB < len(body) <= limits.MAX_IMAGE_JSON_BYTES
    replies = [Reply(200, body, headers=[('Content-Type', 'application/json')])]
    if name == 'openrouter':  # first its catalogue of image models: not there, both kinds of answer are asked for
        replies.insert(0, Reply(500, b'{"error": {"message": "Service unavailable", "code": 500}}'))
    with ScriptedServer(replies) as server:
        p = provider(name, server.url, image_model='img')
        outcome, growth = peak_growth(lambda: p.generate_image('A cover', model='img'))
    assert isinstance(outcome, errors.ProtocolError), outcome
    assert sentence(limits.IMAGE_JSON_MEMORY_PER_BYTE) in str(outcome)
    assert growth < 5 * len(body), growth / len(body)  # was 3.24 GB


def event(name, payload):
    if name == 'ollama':
        return payload + b'\n'
    return b'data: ' + payload + b'\n\n'


TEXT = {
    'openai_compatible': b'{"model": "m", "choices": [{"index": 0, "delta": {"content": "Kept. "}}]}',
    'openai': b'{"type": "response.output_text.delta", "delta": "Kept. "}',
    'anthropic': b'{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Kept. "}}',
    'gemini': b'{"candidates": [{"content": {"parts": [{"text": "Kept. "}], "role": "model"}}]}',
    'ollama': b'{"model": "m", "message": {"role": "assistant", "content": "Kept. "}, "done": false}',
}


@pytest.mark.parametrize('name', list(TEXT))
def test_an_event_of_empty_objects_in_a_stream_is_a_sentence_and_what_came_is_kept(name):
    costly = b'{"choices": ' + empty_objects(4 * MB) + b', "message": {"content": ""}}'
    with ScriptedServer([Reply(200, chunks=[event(name, TEXT[name]), event(name, costly)],
                               headers=SSE_HEADERS)]) as server:
        answer = Answer()
        for chunk in provider(name, server.url).text_chat(QUESTION):
            answer.add(chunk)
    assert isinstance(answer.failed.error, errors.ProtocolError), answer.failed
    assert sentence() in answer.failed.message
    assert answer.text == 'Kept. '


def test_an_error_body_of_empty_objects_is_a_sentence_not_a_traceback():
    # what is kept of it (limits.MAX_ERROR_BODY) is cut JSON: said in words, never parsed whole
    with ScriptedServer([Reply(400, b'{"error": ' + empty_objects(8 * MB) + b'}')]) as server:
        answer = Answer()
        for chunk in provider('openai_compatible', server.url).text_chat(QUESTION):
            answer.add(chunk)
    assert isinstance(answer.failed.error, errors.BadRequest)
    assert 'did not accept the request (HTTP 400)' in answer.failed.message
    assert 'Traceback' not in answer.failed.message and len(answer.failed.message) < 1000


def test_deep_json_keeps_its_own_sentence():
    deep = b'[' * 100_000 + b']' * 100_000
    with ScriptedServer([Reply(200, b'{"data": ' + deep + b'}')]) as server:
        with pytest.raises(errors.ProtocolError) as e:
            provider('openai_compatible', server.url, model='').models(refresh=True)
    assert f'sent JSON nested deeper than {limits.MAX_JSON_DEPTH} levels' in str(e.value)


def test_the_recorded_model_list_is_read_as_it_was():
    raw = (Path(__file__).parent / 'fixtures' / 'openrouter' / 'models-2026-05-01.json').read_bytes()
    with ScriptedServer([Reply(200, raw)]) as server:
        models = provider('openrouter', server.url, model='').models(refresh=True)
    assert {m.id for m in models} == {m['id'] for m in json.loads(raw)['data']}
