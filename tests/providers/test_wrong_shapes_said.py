# License: GPLv3 Copyright: the Book AI developers
"""Model lists of the wrong shape and embeddings that are not numbers (issue 26, found by the hostile
battery): each ends in the provider's sentence, a ProtocolError, never a traceback or NaN ranking."""

import json

import pytest

from calibre_plugins.bookai.core.errors import ProtocolError
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.scripted_server import Reply, ScriptedServer

KEY = 'sk-test-wrong-shapes-0123456789'


def json_reply(body: object) -> Reply:
    return Reply(200, json.dumps(body).encode(), headers=[('Content-Type', 'application/json')])


@pytest.mark.parametrize('name,root,listing', [
    ('openai', '/v1', {'data': [1, 2, 3]}),
    ('openai', '/v1', {'data': [{'id': ['not', 'text']}]}),
    ('openai', '/v1', {'data': 'models'}),
    ('openai_compatible', '/v1', {'data': [{'id': 'm', 'created': 1e400}]}),
    ('gemini', '/v1beta', {'models': [{'name': 5}]}),
    ('gemini', '/v1beta', {'models': [{'name': 'models/x', 'inputTokenLimit': 'NaN'}]}),
    ('ollama', '', {'models': [[]]}),
])
def test_a_model_list_of_the_wrong_shape_is_said_in_words(name, root, listing):
    with ScriptedServer([json_reply(listing)]) as server:
        p = get_provider(name, settings={'api_key': KEY, 'base_url': server.url + root})
        try:
            models = p.models(refresh=True)
        except ProtocolError as e:
            assert 'model list that could not be read' in str(e) and KEY not in str(e)
        else:  # a shape the provider reads past (values reset to unknown) is fine: never a traceback
            assert all(isinstance(m.id, str) for m in models)


@pytest.mark.parametrize('vector', [[0.1, float('nan')], [float('inf'), 0.2], ['1e400', 0.1], [1e308, 0.1],
                                    [-2e6, 0.1]])
def test_embeddings_that_are_not_finite_numbers_are_said_in_words(vector):
    body = json.dumps({'data': [{'embedding': vector, 'index': 0}]}).encode()
    with ScriptedServer([Reply(200, body, headers=[('Content-Type', 'application/json')])]) as server:
        p = get_provider('openai_compatible', settings={'base_url': server.url + '/v1', 'model': 'm'})
        with pytest.raises(ProtocolError, match='embeddings that could not be read'):
            p.embed(['one passage'], model='e')
