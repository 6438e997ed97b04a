# License: GPLv3 Copyright: the Book AI developers
"""Tools with the real peers: aimock's tool calls on every wire format (and the results sent
back, read by aimock as the format's own), the same recorded bytes read by Book AI and by the
official SDKs (openai, anthropic, google-genai, ollama) to the same calls, and llama.cpp's
llama-server with Qwen2.5-Coder-0.5B: a request offering tools is accepted and read, and a
conversation holding a call and its result answered."""

import json

import pytest

from calibre_plugins.bookai.core.messages import Answer, Message, Role, Tool, ToolCall
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.peers import AiMock, LlamaServer, http, sdk_python
from helpers.scripted_server import Reply, ScriptedServer

SEARCH = Tool('search_book', 'Find passages of the book that mention words.', {
    'type': 'object', 'properties': {'query': {'type': 'string', 'description': 'the words to find'}},
    'required': ['query'], 'additionalProperties': False})
CHARACTER = Tool('character', 'Who a character of the book is.', {
    'type': 'object', 'properties': {'name': {'type': 'string'}}, 'required': ['name']})
TOOLS = (SEARCH, CHARACTER)
CALLS = [{'name': 'search_book', 'arguments': {'query': 'the ball at Netherfield'}},
         {'name': 'character', 'arguments': {'name': 'Elizabeth Bennet'}}]
PROVIDER_OF = {'openai_chat': 'openai_compatible', 'responses': 'openai', 'anthropic': 'anthropic',
               'gemini': 'gemini', 'ollama': 'ollama'}
MODEL_OF = {'gemini': 'gemini-2.5-flash', 'ollama': 'llama3.2', 'anthropic': 'claude-sonnet-4-5',
            'responses': 'gpt-5-mini', 'openai_chat': 'test-model'}
BASE_OF = {'gemini': '/v1beta', 'ollama': ''}
KINDS = list(PROVIDER_OF)


def provider(kind, url, model=None):
    return get_provider(PROVIDER_OF[kind], settings={'base_url': url + BASE_OF.get(kind, '/v1'),
                                                     'model': model or MODEL_OF[kind], 'api_key': 'test-key-0123456789'})


def ask(p, messages, tools=TOOLS, max_tokens=None):
    answer = Answer()
    for chunk in p.text_chat(list(messages), tools=tools, max_tokens=max_tokens):
        answer.add(chunk)
    assert answer.failed is None, answer.failed
    return answer


def calls_of(answer):
    return [{'name': c.name, 'arguments': json.loads(c.arguments)} for c in answer.done.tool_calls]


@pytest.fixture(scope='module')
def mock(tmp_path_factory):
    path = tmp_path_factory.mktemp('aimock') / 'tools.json'
    path.write_text(json.dumps({'fixtures': [
        {'match': {'userMessage': 'tool question', 'hasToolResult': True},
         'response': {'content': 'Elizabeth danced at Netherfield.'}, 'chunkSize': 5},
        {'match': {'userMessage': 'tool question'}, 'response': {'toolCalls': CALLS}, 'chunkSize': 4},
    ]}))
    with AiMock(path) as m:
        yield m


@pytest.mark.parametrize('kind', KINDS)
def test_aimock_calls_and_results_on_every_format(mock, kind):
    p = provider(kind, mock.base_url)
    question = [Message(Role.SYSTEM, 'Use the tools.'), Message(Role.USER, 'tool question')]
    answer = ask(p, question)
    assert calls_of(answer) == CALLS
    assert answer.done.finish_reason == 'tool_calls'
    assert len({c.id for c in answer.done.tool_calls}) == 2
    # the results sent back in the format's own shape: aimock reads them as results, and answers
    results = [Message(Role.TOOL, f'result of {c.name}', tool_call_id=c.id, tool_name=c.name)
               for c in answer.done.tool_calls]
    final = ask(p, question + [answer.as_message()] + results)
    assert final.text == 'Elizabeth danced at Netherfield.' and final.done.tool_calls == ()
    assert final.done.finish_reason == 'stop'


SDK_CODE = r'''
import json, sys
kind, url, model = sys.argv[1:4]
calls = []
q = [{'role': 'user', 'content': 'q'}]
if kind in ('openai_chat', 'responses'):
    import openai
    client = openai.OpenAI(base_url=url + '/v1', api_key='replayed', max_retries=0)
if kind == 'openai_chat':
    by_index = {}
    for chunk in client.chat.completions.create(model=model, messages=q, stream=True):
        for choice in chunk.choices:
            for call in choice.delta.tool_calls or ():
                c = by_index.setdefault(call.index, {'id': '', 'name': '', 'arguments': ''})
                c['id'] = c['id'] or call.id or ''
                if call.function:
                    c['name'] = c['name'] or call.function.name or ''
                    c['arguments'] += call.function.arguments or ''
    calls = [by_index[i] for i in sorted(by_index)]
elif kind == 'responses':
    for event in client.responses.create(model=model, input='q', stream=True):
        if event.type == 'response.completed':
            calls = [{'id': o.call_id, 'name': o.name, 'arguments': o.arguments}
                     for o in event.response.output if o.type == 'function_call']
elif kind == 'anthropic':
    import anthropic
    client = anthropic.Anthropic(base_url=url, api_key='replayed', max_retries=0)
    with client.messages.stream(model=model, max_tokens=64, messages=q) as stream:
        message = stream.get_final_message()
    calls = [{'id': b.id, 'name': b.name, 'arguments': json.dumps(b.input)} for b in message.content
             if b.type == 'tool_use']
elif kind == 'gemini':
    from google import genai
    from google.genai import types
    client = genai.Client(api_key='replayed', http_options=types.HttpOptions(base_url=url, api_version='v1beta'))
    for chunk in client.models.generate_content_stream(model=model, contents='q'):
        for call in chunk.function_calls or ():
            calls.append({'id': call.id or '', 'name': call.name, 'arguments': json.dumps(call.args)})
elif kind == 'ollama':
    import ollama
    for chunk in ollama.Client(host=url).chat(model=model, messages=q, stream=True):
        for call in chunk.message.tool_calls or ():
            calls.append({'id': '', 'name': call.function.name, 'arguments': json.dumps(call.function.arguments)})
print(json.dumps(calls))
'''


def record(kind, peer_url, model, question):
    """The exact bytes the peer streams for the request our provider makes, offering TOOLS."""
    p = provider(kind, peer_url, model)
    req = p.with_tools(p.chat_request([Message(Role.USER, question)], model, 200), TOOLS)
    status, headers, body = http('POST', req.url, req.body, req.headers)
    assert status == 200, body[:500]
    return body, headers.get('Content-Type', 'text/event-stream')


@pytest.fixture(scope='module')
def recordings(mock):
    return {f'aimock {kind}': (kind, MODEL_OF[kind]) + record(kind, mock.base_url, MODEL_OF[kind], 'tool question')
            for kind in KINDS}


def pieces(data, size=7):
    return [data[i:i + size] for i in range(0, len(data), size)]


@pytest.mark.parametrize('case', [f'aimock {k}' for k in KINDS])
def test_same_bytes_same_calls(case, recordings):
    kind, model, data, content_type = recordings[case]
    replies = [Reply(200, chunks=pieces(data), headers=[('Content-Type', content_type)]) for _ in range(2)]
    with ScriptedServer(replies) as server:
        answer = ask(provider(kind, server.url, model), [Message(Role.USER, 'q')])
        r = sdk_python(SDK_CODE, kind, server.url, model)
    assert r.returncode == 0, r.stderr[-3000:]
    theirs = json.loads(r.stdout.strip().splitlines()[-1])
    mine = [{'id': c.id, 'name': c.name, 'arguments': c.arguments} for c in answer.done.tool_calls]
    assert mine, data[:2000]
    assert [(c['name'], json.loads(c['arguments'])) for c in mine] == [
        (c['name'], json.loads(c['arguments'])) for c in theirs]
    if kind not in ('gemini', 'ollama'):  # these may send no id: Book AI gives each one of its place
        assert [c['id'] for c in mine] == [c['id'] for c in theirs]
    assert answer.done.finish_reason == 'tool_calls'


def test_qwen_takes_tools_calls_and_results():
    """llama-server (--jinja, the default here) with Qwen2.5-Coder-0.5B, whose chat template declares
    tools: a request offering them is accepted and its stream read. This small model writes its
    call as text (even made to call one, with tool_choice required or told to write the call),
    which this build does not read as tool_calls: only what holds for the real server is asserted.
    Then a conversation holding a call and its result, in OpenAI's shape, goes through the
    template (which renders each call's arguments and the tool's message) and is answered, through
    its chat completions route and, from Anthropic's and the Responses shapes, its others."""
    with LlamaServer('qwen', alias='qwen', ctx=4096, extra_args=('--temp', '0', '-n', '40')) as qwen:
        p = provider('openai_chat', qwen.base_url, 'qwen')
        question = [Message(Role.SYSTEM, 'You answer questions about a book, using its tools.'),
                    Message(Role.USER, 'Use the search_book tool to find the words "Netherfield ball".')]
        offered = ask(p, question, max_tokens=40)
        assert offered.done.model == 'qwen' and offered.done.finish_reason in ('stop', 'tool_calls', 'length')
        assert offered.text or offered.done.tool_calls
        assert all(c.name in ('search_book', 'character') for c in offered.done.tool_calls)
        call = ToolCall('call_1', 'search_book', '{"query": "Netherfield ball"}')
        result = Message(Role.TOOL, 'Passage 12: "The ball at Netherfield was crowded."', tool_call_id='call_1',
                         tool_name='search_book')
        conversation = question + [Message(Role.ASSISTANT, '', tool_calls=(call,)), result]
        final = ask(p, conversation, max_tokens=40)
        assert final.text and final.done.finish_reason in ('stop', 'length', 'tool_calls')
        assert final.done.usage.input_tokens > offered.done.usage.input_tokens  # the call and result were read
        # its Anthropic and Responses routes turn those formats' calls and results into the same
        # template's: the tool_use and tool_result blocks, the function_call items are accepted
        for kind in ('anthropic', 'responses'):
            other = ask(provider(kind, qwen.base_url, 'qwen'), conversation, max_tokens=40)
            assert other.text, kind
            assert other.done.usage.input_tokens > offered.done.usage.input_tokens, kind
