# License: GPLv3 Copyright: the Book AI developers
"""Structured output (providers.base.structured()): an answer asked for as JSON of a given shape,
as each wire format asks for one. llama.cpp's server makes a grammar of the schema, so even the
tiny model of random weights answers JSON of that shape; the other formats' requests are checked
as sent (a recording proxy in front of aimock), and Claude's answer, the input of the tool it
must use, is read as the answer's text, as Anthropic's own SDK reads it."""

import json

import pytest

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.messages import Answer, Message, Role
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.peers import AiMock, RecordingProxy, sdk_python, tiny_server

SCHEMA = {'title': 'names', 'type': 'object', 'additionalProperties': False, 'required': ['entities'],
          'properties': {'entities': {'type': 'array', 'minItems': 1, 'maxItems': 3, 'items': {
              'type': 'object', 'additionalProperties': False, 'required': ['name', 'kind', 'passages'],
              'properties': {'name': {'type': 'string', 'maxLength': 12},
                             'kind': {'type': 'string', 'enum': ['character', 'place', 'term']},
                             'passages': {'type': 'array', 'maxItems': 2,
                                          'items': {'type': 'integer', 'minimum': 1, 'maximum': 5}}}}}}}
ANSWER = {'entities': [{'name': 'Elizabeth', 'kind': 'character', 'passages': [1, 2]}]}
QUESTION = [Message(Role.SYSTEM, 'Answer in JSON.'), Message(Role.USER, 'structured question')]


def ask(p, **kw):
    answer = Answer()
    for chunk in p.text_chat(QUESTION, schema=SCHEMA, **kw):
        answer.add(chunk)
    return answer


def fits(value, schema):
    """Whether value holds to SCHEMA's kind of schema (objects, arrays, strings, integers, enums)."""
    kind = schema.get('type')
    if kind == 'object':
        props = schema.get('properties', {})
        return (isinstance(value, dict) and all(k in value for k in schema.get('required', ()))
                and all(k in props for k in value) and all(fits(v, props[k]) for k, v in value.items()))
    if kind == 'array':
        return (isinstance(value, list) and schema.get('minItems', 0) <= len(value) <= schema.get('maxItems', 10 ** 9)
                and all(fits(v, schema['items']) for v in value))
    if kind == 'string':
        return isinstance(value, str) and len(value) <= schema.get('maxLength', 10 ** 9) and (
            'enum' not in schema or value in schema['enum'])
    if kind == 'integer':
        return type(value) is int and schema.get('minimum', -10 ** 9) <= value <= schema.get('maximum', 10 ** 9)
    return False


def test_llama_server_holds_even_the_tiny_model_to_the_schema():
    with tiny_server(tokens=400) as llama, RecordingProxy(llama.base_url) as proxy:
        p = get_provider('openai_compatible', settings={'base_url': proxy.base_url + '/v1', 'model': 'tiny',
                                                        'temperature': 0.0})
        answer = ask(p)
        plain = Answer()
        for chunk in p.text_chat(QUESTION, max_tokens=40):
            plain.add(chunk)
    assert answer.failed is None and answer.done.finish_reason == 'stop', answer.failed
    value = limits.load_json(answer.text)
    assert fits(value, SCHEMA), answer.text  # random weights, and still JSON of that shape
    sent, unchanged = proxy.chat_requests()
    assert sent['response_format'] == {'type': 'json_schema', 'json_schema': {'name': 'names', 'schema': SCHEMA}}
    assert 'response_format' not in unchanged and unchanged['messages'] == sent['messages']


@pytest.fixture(scope='module')
def mock(tmp_path_factory):
    path = tmp_path_factory.mktemp('aimock') / 'structured.json'
    path.write_text(json.dumps({'fixtures': [
        {'match': {'userMessage': 'structured question', 'model': 'claude-sonnet-4-5'},
         'response': {'toolCalls': [{'name': 'names', 'arguments': ANSWER}]}},
        {'match': {'userMessage': 'structured question'}, 'response': {'content': json.dumps(ANSWER)}},
    ]}))
    with AiMock(path) as m, RecordingProxy(m.base_url) as proxy:
        yield proxy


def provider(name, proxy, **settings):
    base = {'gemini': '/v1beta', 'ollama': ''}.get(name, '/v1')
    model = {'gemini': 'gemini-2.5-flash', 'ollama': 'llama3.2', 'anthropic': 'claude-sonnet-4-5',
             'openai': 'gpt-5-mini'}.get(name, 'test-model')
    return get_provider(name, settings=dict({'base_url': proxy.base_url + base, 'api_key': 'test-key-0123456789',
                                             'model': model}, **settings))


def last_body(proxy):
    return json.loads(proxy.received[-1][2])


@pytest.mark.parametrize('name', ['openai', 'anthropic', 'gemini', 'ollama', 'openrouter', 'grok'])
def test_each_format_asks_for_the_shape_and_reads_the_answer(mock, name):
    settings = {'web_search': True} if name in ('openai', 'anthropic', 'gemini') else {}
    if name in ('anthropic', 'gemini', 'openai'):
        settings['reasoning_effort'] = 'high' if name != 'openai' else 'low'
    answer = ask(provider(name, mock, **settings), max_tokens=300)
    assert answer.failed is None, answer.failed
    assert limits.load_json(answer.text) == ANSWER  # Claude's tool input, read as the answer
    body = last_body(mock)
    if name == 'openai':  # strict, without what strict mode refuses; no web search with it
        fmt = body['text']['format']
        assert fmt['type'] == 'json_schema' and fmt['strict'] is True and fmt['name'] == 'names'
        assert 'maxLength' not in json.dumps(fmt['schema']) and 'title' not in fmt['schema']
        assert fmt['schema']['properties']['entities']['maxItems'] == 3 and 'tools' not in body
    elif name == 'anthropic':  # a tool it must use; thinking cannot go with that
        assert body['tools'] == [{'name': 'names', 'description': 'Give the answer.', 'input_schema': SCHEMA}]
        assert body['tool_choice'] == {'type': 'tool', 'name': 'names'} and 'thinking' not in body
    elif name == 'gemini':  # Gemini's schema: its type names, no additionalProperties; no Google Search
        config = body['generationConfig']
        assert config['responseMimeType'] == 'application/json' and 'tools' not in body
        schema = config['responseSchema']
        assert schema['type'] == 'OBJECT' and schema['properties']['entities']['items']['type'] == 'OBJECT'
        assert 'additionalProperties' not in json.dumps(schema)
        assert schema['properties']['entities']['items']['properties']['kind']['enum'] == ['character', 'place',
                                                                                          'term']
        assert 'thinkingConfig' in config  # the rest of the request as it was
    elif name == 'ollama':
        assert body['format'] == SCHEMA
    else:  # the services that speak OpenAI's chat completions
        assert body['response_format'] == {'type': 'json_schema', 'json_schema': {'name': 'names', 'schema': SCHEMA}}


SDK_CODE = r'''
import json, sys
import anthropic
url, schema = sys.argv[1], json.loads(sys.argv[2])
client = anthropic.Anthropic(base_url=url, api_key='test-key-0123456789', max_retries=0)
with client.messages.stream(model='claude-sonnet-4-5', max_tokens=300,
                            messages=[{'role': 'user', 'content': 'structured question'}],
                            tools=[{'name': 'names', 'description': 'Give the answer.', 'input_schema': schema}],
                            tool_choice={'type': 'tool', 'name': 'names'}) as stream:
    message = stream.get_final_message()
print(json.dumps([b.input for b in message.content if b.type == 'tool_use']))
'''


def test_claudes_tool_input_reads_as_anthropics_sdk_reads_it(mock):
    answer = ask(provider('anthropic', mock))
    r = sdk_python(SDK_CODE, mock.base_url, json.dumps(SCHEMA))
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout.strip().splitlines()[-1]) == [limits.load_json(answer.text)] == [ANSWER]


def test_a_web_search_query_is_never_the_answer(mock):
    """Claude's own web search streams its query as a tool's input too: only a tool Book AI asked
    for is read as the answer."""
    from calibre_plugins.bookai.core.streams import SSEEvent
    from calibre_plugins.bookai.providers.streaming import StreamState
    events = [('content_block_start', {'type': 'content_block_start', 'index': 0,
                                       'content_block': {'type': 'server_tool_use', 'id': 's', 'name': 'web_search'}}),
              ('content_block_delta', {'type': 'content_block_delta', 'index': 0,
                                       'delta': {'type': 'input_json_delta', 'partial_json': '{"query": "x"}'}}),
              ('content_block_start', {'type': 'content_block_start', 'index': 1,
                                       'content_block': {'type': 'text', 'text': ''}}),
              ('content_block_delta', {'type': 'content_block_delta', 'index': 1,
                                       'delta': {'type': 'text_delta', 'text': 'Found.'}}),
              ('message_stop', {'type': 'message_stop'})]
    p = provider('anthropic', mock)
    chunks = list(p.read_stream(iter(SSEEvent(data=json.dumps(d), event=e) for e, d in events), StreamState()))
    assert [c.text for c in chunks] == ['Found.']
