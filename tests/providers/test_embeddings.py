# License: GPLv3 Copyright: the Book AI developers
"""Embeddings through the providers. The OpenAI-compatible route against a real
llama.cpp server started with --embeddings; OpenAI's and OpenRouter's against
aimock; Ollama's /api/embed and Gemini's batchEmbedContents against a small fake of
ours that answers in their documented shapes (aimock answers /api/embed in Ollama's
older one-vector shape, and has no batchEmbedContents)."""

import hashlib
import json

import pytest

from calibre_plugins.bookai.core import errors
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.operations import EMBED_BATCH
from calibre_plugins.bookai.providers.registry import PROVIDERS, get_provider
from helpers.peers import AiMock, LlamaServer, http
from helpers.scripted_server import Reply, ScriptedServer

EMBEDDINGS = ('--embeddings', '--pooling', 'mean')
TEXTS = ['The sea is large and full of fish.', 'Rivers flow to the sea.', 'The sea is large and full of fish.']
KEY = 'secret-key-0123456789'


TINY_ARGS = EMBEDDINGS  # TINY_TOKENS: the server's default


def compatible(server, **settings):
    return get_provider('openai_compatible', settings={'base_url': server.base_url + '/v1', 'model': server.model,
                                                       **settings})


def direct(server, texts):
    """The vectors the server gives a plain request."""
    status, headers, body = http('POST', server.base_url + '/v1/embeddings', {'model': server.model, 'input': texts})
    assert status == 200, body
    return [d['embedding'] for d in sorted(json.loads(body)['data'], key=lambda d: d['index'])]


def counting(provider):
    """Records the number of texts of each request the provider makes."""
    sent, make = [], provider.embed_request

    def embed_request(texts, model):
        sent.append(len(texts))
        return make(texts, model)
    provider.embed_request = embed_request
    return sent


def test_vectors_as_the_server_makes_them(tiny):
    p = compatible(tiny)
    vectors = p.embed(TEXTS)
    assert vectors == direct(tiny, TEXTS)
    assert len(vectors) == 3 and {len(v) for v in vectors} == {64}  # the tiny model is 64 wide
    assert vectors[0] == vectors[2] != vectors[1]  # the same text, the same vector
    assert p.embed([TEXTS[1]]) == [vectors[1]]  # alone or with others
    assert p.embed([]) == []


def test_many_texts_go_in_batches(tiny):
    p = compatible(tiny)
    texts = [f'passage number {i}' for i in range(2 * EMBED_BATCH + 22)]
    sent = counting(p)
    vectors = p.embed(texts)
    assert sent == [EMBED_BATCH, EMBED_BATCH, 22]
    assert len(vectors) == len(texts)
    assert vectors[EMBED_BATCH + 5] == direct(tiny, [texts[EMBED_BATCH + 5]])[0]


def test_stop_between_batches(tiny):
    p = compatible(tiny)
    cancel = CancelToken()
    sent, answer = counting(p), p.connection.json_answer

    def json_answer(*args):
        data = answer(*args)
        cancel.cancel()  # Stop, as the first batch's answer arrives
        return data
    p.connection.json_answer = json_answer
    with pytest.raises(Cancelled):
        p.embed([f'text {i}' for i in range(3 * EMBED_BATCH)], cancel=cancel)
    assert sent == [EMBED_BATCH]


def test_a_server_without_embeddings_says_so():
    with LlamaServer('tiny', alias='tiny') as server:
        with pytest.raises(errors.ServiceUnavailable) as e:
            compatible(server).embed(TEXTS)
    assert 'This server does not support embeddings' in str(e.value)  # the server's own words


def test_a_wrong_key_is_told_and_never_shown():
    with LlamaServer('tiny', alias='tiny', api_key=KEY, extra_args=EMBEDDINGS) as server:
        with pytest.raises(errors.AuthenticationFailed) as e:
            compatible(server, api_key='a-wrong-key-654321').embed(TEXTS)
        assert 'a-wrong-key-654321' not in str(e.value) + e.value.details
        assert len(compatible(server, api_key=KEY).embed(TEXTS)) == 3


@pytest.mark.parametrize('name, settings, expected', [
    ('openai_compatible', {'model': 'chat-model'}, 'chat-model'),  # a local server: its one model
    ('openai_compatible', {'model': 'chat-model', 'embedding_model': 'bge-m3'}, 'bge-m3'),
    ('lmstudio', {'model': 'qwen3-4b', 'embedding_model': ' nomic-embed-text '}, 'nomic-embed-text'),
    ('ollama', {'model': 'llama3.2'}, 'llama3.2'),
    ('openai', {}, 'text-embedding-3-small'),
    ('openrouter', {}, 'openai/text-embedding-3-small'),
    ('gemini', {}, 'gemini-embedding-001'),
])
def test_which_model_makes_embeddings(name, settings, expected):
    assert get_provider(name, settings={'api_key': KEY, **settings}).embedding.model() == expected


def test_only_providers_with_embeddings_have_the_option():
    for name in PROVIDERS:
        p = get_provider(name, settings={'api_key': KEY})
        has = any(o.name == 'embedding_model' for o in p.all_options())
        assert has == bool(p.capabilities & Capability.EMBEDDINGS), name
    with pytest.raises(errors.NotConfigured) as e:
        get_provider('anthropic', settings={'api_key': KEY}).embed(TEXTS)
    assert 'offers no embeddings' in str(e.value)


def aimock_vector(text, dimensions=1536):
    """What aimock answers for a text no fixture matches (its documented deterministic fallback)."""
    digest, out = hashlib.sha256(text.encode()).digest(), []
    for i in range(dimensions):
        if i and i % 32 == 0:
            digest = hashlib.sha256(digest).digest()
        out.append(digest[i % 32] / 127.5 - 1)
    return out


@pytest.fixture(scope='module')
def mock(tmp_path_factory):
    fixtures = tmp_path_factory.mktemp('aimock') / 'none.json'
    fixtures.write_text('{"fixtures": []}')
    with AiMock(fixtures) as m:
        yield m


@pytest.mark.parametrize('name, model', [('openai', 'text-embedding-3-small'),
                                         ('openrouter', 'openai/text-embedding-3-small')])
def test_openai_and_openrouter_against_aimock(mock, name, model):
    p = get_provider(name, settings={'base_url': mock.base_url + '/v1', 'api_key': KEY})
    vectors = p.embed(TEXTS[:2])
    assert [[round(x, 5) for x in v] for v in vectors] == [[round(x, 5) for x in aimock_vector(t)] for t in TEXTS[:2]]
    seen = [r for r in mock.journal() if r['path'] == '/v1/embeddings'][-1]
    assert seen['body']['model'] == model and seen['headers']['authorization'] == '[REDACTED]'
    mock.queue_error(401, 'Incorrect API key provided')
    with pytest.raises(errors.AuthenticationFailed) as e:
        p.embed(TEXTS)
    assert 'Incorrect API key provided' in str(e.value)


def test_openrouter_keeps_its_data_collection_rule_for_embeddings():
    p = get_provider('openrouter', settings={'api_key': KEY})
    assert json.loads(p.embed_request(['a'], 'm').body) == {
        'model': 'm', 'input': ['a'], 'provider': {'data_collection': 'deny'}}


def json_reply(status, data):
    return Reply(status, json.dumps(data).encode(), headers=[('Content-Type', 'application/json')])


def test_ollama_api_embed():
    vectors = [[0.25, -0.5, 1.0], [0.0, 0.125, -1.0]]
    with ScriptedServer([json_reply(200, {'model': 'nomic-embed-text', 'embeddings': vectors}),
                         json_reply(404, {'error': 'model "nomic-embed-text" not found, try pulling it first'})]) as s:
        p = get_provider('ollama', settings={'base_url': s.url, 'model': 'llama3.2',
                                             'embedding_model': 'nomic-embed-text',
                                             'headers': [('X-Gateway-Token', 'g-123')]})
        assert p.embed(TEXTS[:2]) == vectors
        with pytest.raises(errors.ModelNotFound) as e:
            p.embed(TEXTS[:2])
    request = s.received[0]
    assert request['path'] == '/api/embed'
    assert json.loads(request['body']) == {'model': 'nomic-embed-text', 'input': TEXTS[:2]}
    assert request['headers']['X-Gateway-Token'] == 'g-123'
    assert 'try pulling it first' in str(e.value)


def test_gemini_batch_embed_contents():
    vectors = [[0.5, 0.25], [-0.75, 1.0]]
    with ScriptedServer([json_reply(200, {'embeddings': [{'values': v} for v in vectors]}),
                         json_reply(403, {'error': {'code': 403, 'status': 'PERMISSION_DENIED',
                                                    'message': 'Method doesn\'t allow unregistered callers.'}})]) as s:
        p = get_provider('gemini', settings={'base_url': s.url + '/v1beta', 'api_key': KEY})
        assert p.embed(TEXTS[:2]) == vectors
        with pytest.raises(errors.AuthenticationFailed) as e:
            p.embed(TEXTS[:2])
    request = s.received[0]
    assert request['path'] == '/v1beta/models/gemini-embedding-001:batchEmbedContents'
    assert request['headers']['x-goog-api-key'] == KEY
    assert json.loads(request['body']) == {'requests': [
        {'model': 'models/gemini-embedding-001', 'content': {'parts': [{'text': t}]}} for t in TEXTS[:2]]}
    assert "doesn't allow unregistered callers" in str(e.value)
    assert KEY not in str(e.value) + e.value.details


@pytest.mark.parametrize('answer', [{'embeddings': [[1.0, 2.0]]}, {'embeddings': 'nothing'}, {'vectors': []}])
def test_an_answer_that_does_not_fit_is_a_protocol_error(answer):
    with ScriptedServer([json_reply(200, answer)]) as s:
        p = get_provider('ollama', settings={'base_url': s.url, 'model': 'm'})
        with pytest.raises(errors.ProtocolError) as e:
            p.embed(TEXTS[:2])  # two texts: one vector is not enough
    assert 'embeddings that could not be read' in str(e.value)
