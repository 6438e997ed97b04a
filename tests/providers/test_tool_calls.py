# License: GPLv3 Copyright: the Book AI developers
"""Tools on every wire format: the tools declared in the format's own shape, the conversation's
calls and results written back in it (exact JSON), the calls a model streams read right (several
calls, their arguments in many pieces, interleaved), a stream cut mid-call, hostile calls (a name
that is not text, huge arguments, too many calls) and a key echoed in a call's arguments. Streams
written from the services' documented examples, replayed by a scripted server; the real peers and
the official SDKs read the same bytes in test_tool_calls_peers.py. Which models refused tools:
providers/tool_support.py."""

import json

import pytest

from calibre_plugins.bookai.core import errors
from calibre_plugins.bookai.core.errors import REDACTED, BadRequest, ServiceUnavailable
from calibre_plugins.bookai.core.messages import (
    MAX_TOOL_ARGUMENTS_CHARS, MAX_TOOL_CALLS, Answer, Message, Role, Tool, ToolCall,
)
from calibre_plugins.bookai.providers import tool_support
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.scripted_server import Reply, ScriptedServer, sse

KEY = 'sk-live-7f3Qz9Xa2Lm2Kp0Vw8Rt5Yb'
SEARCH = Tool('search_book', 'Find passages of the book.', {
    'type': 'object', 'properties': {'query': {'type': 'string', 'title': 'Query'}},
    'required': ['query'], 'additionalProperties': False})
CHARACTER = Tool('character', 'Who a character is.', {'type': 'object', 'properties': {'name': {'type': 'string'}}})
TOOLS = (SEARCH, CHARACTER)
CALLS = (ToolCall('call_a', 'search_book', '{"query": "the ball"}'), ToolCall('call_b', 'character', '{"name": "Jane"}'))
CONVERSATION = [
    Message(Role.SYSTEM, 'Be brief.'),
    Message(Role.USER, 'Who danced?'),
    Message(Role.ASSISTANT, '', tool_calls=CALLS),
    Message(Role.TOOL, 'Passage 3: they danced.', tool_call_id='call_a', tool_name='search_book'),
    Message(Role.TOOL, 'Jane Bennet, the eldest.', tool_call_id='call_b', tool_name='character'),
]
BASE = {'gemini': '/v1beta', 'ollama': ''}


def provider(name, url='http://127.0.0.1:9', **settings):
    s = {'base_url': url + BASE.get(name, '/v1'), 'api_key': KEY, 'model': 'm'}
    s.update(settings)
    return get_provider(name, settings=s)


def body(name, messages=CONVERSATION, tools=TOOLS, **settings):
    p = provider(name, **settings)
    request = p.with_tools(p.chat_request(list(messages), settings.get('model', 'm')), tools)
    return json.loads(request.body)


def ask(name, chunks, tools=TOOLS, messages=(Message(Role.USER, 'q'),), **settings):
    with ScriptedServer([Reply(200, chunks=chunks)]) as server:
        answer = Answer()
        for chunk in provider(name, server.url, **settings).text_chat(list(messages), tools=tools):
            answer.add(chunk)
        return answer, json.loads(server.received[0]['body'])


def ndjson(*objects):
    return [(json.dumps(o) + '\n').encode() for o in objects]


def pieces(text, size=3):
    return [text[i:i + size] for i in range(0, len(text), size)]


def called(answer):
    assert answer.failed is None, answer.failed
    return [(c.id, c.name, json.loads(c.arguments)) for c in answer.done.tool_calls]


# the tools declared {{{

def test_chat_completions_declares_functions():
    for name in ('openai_compatible', 'openrouter', 'venice', 'grok', 'lmstudio', 'github'):
        sent = body(name)
        assert sent['tools'] == [{'type': 'function', 'function': {
            'name': t.name, 'description': t.description, 'parameters': t.parameters}} for t in TOOLS], name


def test_responses_declares_functions_beside_web_search():
    sent = body('openai', web_search=True)
    assert sent['tools'] == [{'type': 'web_search'}] + [
        {'type': 'function', 'name': t.name, 'description': t.description, 'parameters': t.parameters}
        for t in TOOLS]


def test_anthropic_declares_input_schemas_beside_web_search():
    sent = body('anthropic', web_search=True)
    assert sent['tools'] == [{'type': 'web_search_20250305', 'name': 'web_search', 'max_uses': 5}] + [
        {'name': t.name, 'description': t.description, 'input_schema': t.parameters} for t in TOOLS]


def test_gemini_declares_functions_in_its_schema_subset():
    sent = body('gemini')
    assert sent['tools'] == [{'functionDeclarations': [
        {'name': 'search_book', 'description': 'Find passages of the book.', 'parameters': {
            'type': 'OBJECT', 'properties': {'query': {'type': 'STRING'}}, 'required': ['query']}},
        {'name': 'character', 'description': 'Who a character is.', 'parameters': {
            'type': 'OBJECT', 'properties': {'name': {'type': 'STRING'}}}}]}]


def test_ollama_declares_functions():
    assert body('ollama')['tools'] == [{'type': 'function', 'function': {
        'name': t.name, 'description': t.description, 'parameters': t.parameters}} for t in TOOLS]


def test_every_tool_format_says_it_has_tools():
    from calibre_plugins.bookai.providers.capabilities import Capability
    for name in ('openai_compatible', 'openrouter', 'venice', 'grok', 'lmstudio', 'github', 'openai', 'anthropic',
                 'gemini', 'ollama'):
        assert provider(name).capabilities & Capability.TOOLS, name

# }}}


# calls and results written back {{{

def test_chat_completions_writes_calls_and_results():
    for name in ('openai_compatible', 'openrouter', 'venice'):
        messages = body(name)['messages']
        assert messages[-3:] == [
            {'role': 'assistant', 'content': None, 'tool_calls': [
                {'id': 'call_a', 'type': 'function', 'function': {'name': 'search_book',
                                                                  'arguments': '{"query": "the ball"}'}},
                {'id': 'call_b', 'type': 'function', 'function': {'name': 'character',
                                                                  'arguments': '{"name": "Jane"}'}}]},
            {'role': 'tool', 'content': 'Passage 3: they danced.', 'tool_call_id': 'call_a'},
            {'role': 'tool', 'content': 'Jane Bennet, the eldest.', 'tool_call_id': 'call_b'}], name


def test_openrouter_caches_a_conversation_with_tools():
    conversation = CONVERSATION + [Message(Role.ASSISTANT, 'Jane danced.'), Message(Role.USER, 'And then?')]
    messages = body('openrouter', messages=conversation, model='anthropic/claude-sonnet-4.5')['messages']
    assert [m['role'] for m in messages] == ['system', 'user', 'assistant', 'tool', 'tool', 'assistant', 'user']
    assert messages[-1]['content'] == [{'type': 'text', 'text': 'And then?', 'cache_control': {'type': 'ephemeral'}}]
    assert messages[3] == {'role': 'tool', 'content': 'Passage 3: they danced.', 'tool_call_id': 'call_a'}


def test_responses_writes_function_call_items():
    sent = body('openai')
    assert sent['instructions'] == 'Be brief.'
    assert sent['input'] == [
        {'role': 'user', 'content': [{'type': 'input_text', 'text': 'Who danced?'}]},
        {'type': 'function_call', 'call_id': 'call_a', 'name': 'search_book', 'arguments': '{"query": "the ball"}'},
        {'type': 'function_call', 'call_id': 'call_b', 'name': 'character', 'arguments': '{"name": "Jane"}'},
        {'type': 'function_call_output', 'call_id': 'call_a', 'output': 'Passage 3: they danced.'},
        {'type': 'function_call_output', 'call_id': 'call_b', 'output': 'Jane Bennet, the eldest.'}]


def test_anthropic_writes_tool_use_and_one_message_of_results():
    cut = ToolCall('toolu_c', 'character', '{"name": "Ja', cut=True)
    conversation = CONVERSATION + [Message(Role.ASSISTANT, 'Let me look.', tool_calls=(cut,)),
                                   Message(Role.TOOL, 'No such call.', tool_call_id='toolu_c', tool_name='character'),
                                   Message(Role.USER, 'And then?')]
    sent = body('anthropic', messages=conversation)
    assert sent['system'] == 'Be brief.'
    assert sent['messages'][1:5] == [
        {'role': 'assistant', 'content': [
            {'type': 'tool_use', 'id': 'call_a', 'name': 'search_book', 'input': {'query': 'the ball'}},
            {'type': 'tool_use', 'id': 'call_b', 'name': 'character', 'input': {'name': 'Jane'}}]},
        {'role': 'user', 'content': [
            {'type': 'tool_result', 'tool_use_id': 'call_a', 'content': 'Passage 3: they danced.'},
            {'type': 'tool_result', 'tool_use_id': 'call_b', 'content': 'Jane Bennet, the eldest.'}]},
        {'role': 'assistant', 'content': [
            {'type': 'text', 'text': 'Let me look.'},
            {'type': 'tool_use', 'id': 'toolu_c', 'name': 'character', 'input': {}}]},  # cut: not JSON
        {'role': 'user', 'content': [{'type': 'tool_result', 'tool_use_id': 'toolu_c', 'content': 'No such call.'}]}]
    assert sent['messages'][0]['role'] == sent['messages'][5]['role'] == 'user'
    assert sent['messages'][5]['content'][-1] == {'type': 'text', 'text': 'And then?',
                                                  'cache_control': {'type': 'ephemeral'}}


def test_gemini_writes_function_calls_and_one_turn_of_responses():
    sent = body('gemini')
    assert sent['contents'] == [
        {'role': 'user', 'parts': [{'text': 'Who danced?'}]},
        {'role': 'model', 'parts': [{'functionCall': {'name': 'search_book', 'args': {'query': 'the ball'}}},
                                    {'functionCall': {'name': 'character', 'args': {'name': 'Jane'}}}]},
        {'role': 'user', 'parts': [
            {'functionResponse': {'name': 'search_book', 'response': {'result': 'Passage 3: they danced.'}}},
            {'functionResponse': {'name': 'character', 'response': {'result': 'Jane Bennet, the eldest.'}}}]}]


def test_ollama_writes_calls_as_objects_and_results_by_tool():
    assert body('ollama')['messages'][-3:] == [
        {'role': 'assistant', 'content': '', 'tool_calls': [
            {'function': {'name': 'search_book', 'arguments': {'query': 'the ball'}}},
            {'function': {'name': 'character', 'arguments': {'name': 'Jane'}}}]},
        {'role': 'tool', 'content': 'Passage 3: they danced.', 'tool_name': 'search_book'},
        {'role': 'tool', 'content': 'Jane Bennet, the eldest.', 'tool_name': 'character'}]

# }}}


# streamed calls read {{{

def chat_chunk(delta=None, finish=None):
    return json.dumps({'id': 'c1', 'model': 'm', 'choices': [{'index': 0, 'delta': delta or {},
                                                              'finish_reason': finish}]})


def test_chat_completions_reads_interleaved_calls_in_pieces():
    first, second = '{"query": "the ball at Netherfield"}', '{"name": "Elizabeth"}'
    events = [chat_chunk({'role': 'assistant', 'tool_calls': [
        {'index': 0, 'id': 'call_1', 'type': 'function', 'function': {'name': 'search_book', 'arguments': ''}}]}),
        chat_chunk({'tool_calls': [{'index': 1, 'id': 'call_2', 'type': 'function',
                                    'function': {'name': 'character', 'arguments': ''}}]})]
    a, b = pieces(first), pieces(second)
    for i in range(max(len(a), len(b))):  # the two calls' pieces alternate
        for index, parts in ((0, a), (1, b)):
            if i < len(parts):
                events.append(chat_chunk({'tool_calls': [{'index': index, 'function': {'arguments': parts[i]}}]}))
    events.append(chat_chunk(finish='tool_calls'))
    answer, sent = ask('openai_compatible', sse(*events, '[DONE]'))
    assert called(answer) == [('call_1', 'search_book', {'query': 'the ball at Netherfield'}),
                              ('call_2', 'character', {'name': 'Elizabeth'})]
    assert answer.done.finish_reason == 'tool_calls' and answer.text == ''
    assert [t['function']['name'] for t in sent['tools']] == ['search_book', 'character']


def test_chat_completions_calls_after_stop_are_still_calls():
    answer, _ = ask('openai_compatible', sse(chat_chunk({'tool_calls': [
        {'index': 0, 'id': 'x', 'function': {'name': 'character', 'arguments': '{"name": "Kitty"}'}}]}),
        chat_chunk(finish='stop'), '[DONE]'))
    assert called(answer) == [('x', 'character', {'name': 'Kitty'})]
    assert answer.done.finish_reason == 'tool_calls'


def responses_event(kind, **fields):
    return json.dumps(dict(type=kind, **fields))


def test_responses_reads_function_call_items():
    events = [responses_event('response.created', response={'id': 'resp_1', 'model': 'gpt-5-mini'})]
    for index, (call_id, name, arguments) in enumerate((('call_1', 'search_book', '{"query": "letters"}'),
                                                        ('call_2', 'character', '{"name": "Lydia"}'))):
        events.append(responses_event('response.output_item.added', output_index=index, item={
            'type': 'function_call', 'id': f'fc_{index}', 'call_id': call_id, 'name': name, 'arguments': '',
            'status': 'in_progress'}))
        events += [responses_event('response.function_call_arguments.delta', output_index=index,
                                   item_id=f'fc_{index}', delta=p) for p in pieces(arguments)]
        events.append(responses_event('response.function_call_arguments.done', output_index=index,
                                      item_id=f'fc_{index}', arguments=arguments))
        events.append(responses_event('response.output_item.done', output_index=index, item={
            'type': 'function_call', 'id': f'fc_{index}', 'call_id': call_id, 'name': name, 'arguments': arguments,
            'status': 'completed'}))
    events.append(responses_event('response.completed', response={
        'id': 'resp_1', 'model': 'gpt-5-mini', 'status': 'completed',
        'usage': {'input_tokens': 20, 'output_tokens': 9}}))
    answer, _ = ask('openai', sse(*events))
    assert called(answer) == [('call_1', 'search_book', {'query': 'letters'}), ('call_2', 'character',
                                                                                  {'name': 'Lydia'})]
    assert answer.done.finish_reason == 'tool_calls'


def test_responses_arguments_given_only_whole():
    answer, _ = ask('openai', sse(
        responses_event('response.output_item.added', output_index=0, item={
            'type': 'function_call', 'id': 'fc', 'call_id': 'c', 'name': 'character', 'arguments': ''}),
        responses_event('response.function_call_arguments.done', output_index=0, item_id='fc',
                        arguments='{"name": "Mary"}'),
        responses_event('response.completed', response={'status': 'completed', 'usage': {}})))
    assert called(answer) == [('c', 'character', {'name': 'Mary'})]


def anthropic_events(*blocks, stop='tool_use'):
    """An Anthropic stream: each block (index, start block, [deltas]) started, its deltas, stopped."""
    out = [('message_start', {'type': 'message_start', 'message': {
        'id': 'msg_1', 'model': 'claude-sonnet-4-5', 'usage': {'input_tokens': 30, 'output_tokens': 1}}})]
    for index, start, deltas in blocks:
        out.append(('content_block_start', {'type': 'content_block_start', 'index': index, 'content_block': start}))
        out += [('content_block_delta', {'type': 'content_block_delta', 'index': index, 'delta': d}) for d in deltas]
        out.append(('content_block_stop', {'type': 'content_block_stop', 'index': index}))
    out += [('message_delta', {'type': 'message_delta', 'delta': {'stop_reason': stop},
                               'usage': {'output_tokens': 40}}),
            ('message_stop', {'type': 'message_stop'})]
    return [f'event: {kind}\ndata: {json.dumps(data)}\n\n'.encode() for kind, data in out]


def test_anthropic_reads_tool_use_blocks():
    def use(index, tool_id, name, arguments):
        return (index, {'type': 'tool_use', 'id': tool_id, 'name': name, 'input': {}},
                [{'type': 'input_json_delta', 'partial_json': p} for p in pieces(arguments)])
    answer, _ = ask('anthropic', anthropic_events(
        (0, {'type': 'text', 'text': ''}, [{'type': 'text_delta', 'text': 'Let me look.'}]),
        use(1, 'toolu_1', 'search_book', '{"query": "Pemberley"}'),
        use(2, 'toolu_2', 'character', '{"name": "Darcy"}')))
    assert called(answer) == [('toolu_1', 'search_book', {'query': 'Pemberley'}),
                              ('toolu_2', 'character', {'name': 'Darcy'})]
    assert answer.text == 'Let me look.' and answer.done.finish_reason == 'tool_calls'


def test_anthropic_tool_input_is_the_answer_without_tools():
    """structured(): a tool Claude must use, whose input is the answer's text (no tools offered)."""
    answer, _ = ask('anthropic', anthropic_events(
        (0, {'type': 'tool_use', 'id': 't', 'name': 'answer', 'input': {}},
         [{'type': 'input_json_delta', 'partial_json': p} for p in pieces('{"names": []}')])), tools=())
    assert answer.failed is None and answer.text == '{"names": []}'
    assert answer.done.tool_calls == () and answer.done.finish_reason == 'stop'


def test_gemini_reads_whole_function_calls():
    def chunk(parts, finish=None):
        candidate = {'content': {'role': 'model', 'parts': parts}}
        if finish:
            candidate['finishReason'] = finish
        return json.dumps({'candidates': [candidate], 'modelVersion': 'gemini-2.5-flash'})
    answer, _ = ask('gemini', sse(
        chunk([{'functionCall': {'name': 'search_book', 'args': {'query': 'Rosings'}}}]),
        chunk([{'functionCall': {'id': 'fc-2', 'name': 'character', 'args': {'name': 'Lady Catherine'}}},
               {'functionCall': {'name': 'character', 'args': {}}}], 'STOP')))
    assert called(answer) == [('call_0', 'search_book', {'query': 'Rosings'}),
                              ('fc-2', 'character', {'name': 'Lady Catherine'}), ('call_2', 'character', {})]
    assert answer.done.finish_reason == 'tool_calls'


def test_gemini_sends_each_call_back_with_its_signature():
    """Gemini 3 signs a call (thoughtSignature, beside the functionCall) and refuses the call sent
    back without it: the signature is kept in the Done, and goes back with its call."""
    answer, _ = ask('gemini', sse(json.dumps({'candidates': [{'content': {'role': 'model', 'parts': [
        {'functionCall': {'name': 'search_book', 'args': {'query': 'Meryton'}}, 'thoughtSignature': 'c2lnLTE='},
        {'functionCall': {'name': 'character', 'args': {'name': 'Wickham'}}},
        {'functionCall': {'name': 'character', 'args': {'name': 'Denny'}}, 'thoughtSignature': 'x' * 70_000}]},
        'finishReason': 'STOP'}]})))
    assert [c[1] for c in called(answer)] == ['search_book', 'character', 'character']
    results = [Message(Role.TOOL, 'r', tool_call_id=c.id, tool_name=c.name) for c in answer.done.tool_calls]
    sent = body('gemini', messages=[Message(Role.USER, 'q'), answer.as_message()] + results)
    assert sent['contents'][1] == {'role': 'model', 'parts': [
        {'functionCall': {'name': 'search_book', 'args': {'query': 'Meryton'}}, 'thoughtSignature': 'c2lnLTE='},
        {'functionCall': {'name': 'character', 'args': {'name': 'Wickham'}}},
        {'functionCall': {'name': 'character', 'args': {'name': 'Denny'}}}]}  # too long to be one: not kept


def test_ollama_reads_whole_tool_calls():
    answer, _ = ask('ollama', ndjson(
        {'model': 'qwen3', 'message': {'role': 'assistant', 'content': '', 'tool_calls': [
            {'function': {'name': 'search_book', 'arguments': {'query': 'Longbourn'}}}]}, 'done': False},
        {'model': 'qwen3', 'message': {'role': 'assistant', 'content': '', 'tool_calls': [
            {'id': 'call_x', 'function': {'index': 1, 'name': 'character', 'arguments': {'name': 'Mr Collins'}}}]},
         'done': False},
        {'model': 'qwen3', 'message': {'role': 'assistant', 'content': ''}, 'done': True, 'done_reason': 'stop'}))
    assert called(answer) == [('call_0', 'search_book', {'query': 'Longbourn'}),
                              ('call_x', 'character', {'name': 'Mr Collins'})]
    assert answer.done.finish_reason == 'tool_calls'

# }}}


# hostile calls {{{

def test_a_name_that_is_not_text_is_no_name():
    answer, _ = ask('openai_compatible', sse(
        chat_chunk({'tool_calls': [{'index': 0, 'id': 'a', 'function': {'name': {'rm': '-rf'}, 'arguments': '{}'}}]}),
        chat_chunk({'tool_calls': [{'index': 1, 'id': 7, 'function': {'name': 'x\x1b[31m\nevil' * 20,
                                                                       'arguments': 5}}]}),
        chat_chunk(finish='tool_calls'), '[DONE]'))
    assert answer.failed is None, answer.failed
    first, second = answer.done.tool_calls
    assert (first.name, first.arguments) == ('', '{}')
    assert second.id == 'call_1' and second.arguments == '' and len(second.name) == 64
    assert '\x1b' not in second.name and '\n' not in second.name


def test_huge_arguments_are_cut():
    piece = '"' + 'a' * 999 + '",'
    answer, _ = ask('openai_compatible', sse(
        chat_chunk({'tool_calls': [{'index': 0, 'id': 'a', 'function': {'name': 'search_book', 'arguments': '['}}]}),
        *[chat_chunk({'tool_calls': [{'index': 0, 'function': {'arguments': piece}}]}) for _ in range(50)],
        chat_chunk(finish='tool_calls'), '[DONE]'))
    call, = answer.done.tool_calls
    assert call.cut and len(call.arguments) <= MAX_TOOL_ARGUMENTS_CHARS + 1


def test_a_hundred_calls_are_held_to_the_most():
    answer, _ = ask('ollama', ndjson(
        {'model': 'm', 'message': {'role': 'assistant', 'content': '', 'tool_calls': [
            {'function': {'name': 'character', 'arguments': {'name': str(i)}}} for i in range(100)]}, 'done': False},
        {'model': 'm', 'message': {'role': 'assistant', 'content': ''}, 'done': True}))
    assert answer.failed is None, answer.failed
    assert [json.loads(c.arguments)['name'] for c in answer.done.tool_calls] == [str(i) for i in range(MAX_TOOL_CALLS)]


@pytest.mark.parametrize('name', ['openai_compatible', 'openai', 'anthropic', 'gemini', 'ollama'])
def test_a_stream_ending_mid_call_is_incomplete(name):
    cut = {
        'openai_compatible': sse(chat_chunk({'tool_calls': [{'index': 0, 'id': 'a', 'function': {
            'name': 'character', 'arguments': '{"na'}}]})),
        'openai': sse(responses_event('response.output_item.added', output_index=0, item={
            'type': 'function_call', 'id': 'fc', 'call_id': 'c', 'name': 'character', 'arguments': ''}),
            responses_event('response.function_call_arguments.delta', output_index=0, item_id='fc', delta='{"na')),
        'anthropic': anthropic_events((0, {'type': 'tool_use', 'id': 't', 'name': 'character', 'input': {}},
                                       [{'type': 'input_json_delta', 'partial_json': '{"na'}]))[:-2],
        'gemini': sse(json.dumps({'candidates': [{'content': {'parts': [
            {'functionCall': {'name': 'character', 'args': {}}}]}}]})),
        'ollama': ndjson({'model': 'm', 'message': {'content': '', 'tool_calls': [
            {'function': {'name': 'character', 'arguments': {}}}]}, 'done': False}),
    }[name]
    answer, _ = ask(name, cut)
    assert isinstance(answer.failed.error, errors.ConnectionLost), answer.failed
    assert answer.done is None


@pytest.mark.parametrize('name', ['openai_compatible', 'openai', 'anthropic', 'gemini', 'ollama'])
def test_a_key_echoed_in_a_call_is_redacted(name):
    """The service's key, echoed in a call's arguments (split across pieces where the format
    streams them), in its id and its name, comes out redacted (redacted_stream: Done's fields)."""
    arguments = json.dumps({'query': f'the key is {KEY}'})
    half = len(arguments) // 2
    stream = {
        'openai_compatible': sse(
            chat_chunk({'tool_calls': [{'index': 0, 'id': 'id-' + KEY, 'function': {'name': KEY[:20],
                                                                                     'arguments': arguments[:half]}}]}),
            chat_chunk({'tool_calls': [{'index': 0, 'function': {'arguments': arguments[half:]}}]}),
            chat_chunk(finish='tool_calls'), '[DONE]'),
        'openai': sse(responses_event('response.output_item.added', output_index=0, item={
            'type': 'function_call', 'id': 'fc', 'call_id': 'id-' + KEY, 'name': 'search_book', 'arguments': ''}),
            responses_event('response.function_call_arguments.delta', output_index=0, item_id='fc',
                            delta=arguments[:half]),
            responses_event('response.function_call_arguments.delta', output_index=0, item_id='fc',
                            delta=arguments[half:]),
            responses_event('response.completed', response={'status': 'completed', 'usage': {}})),
        'anthropic': anthropic_events((0, {'type': 'tool_use', 'id': 'id-' + KEY, 'name': 'search_book', 'input': {}},
                                       [{'type': 'input_json_delta', 'partial_json': arguments[:half]},
                                        {'type': 'input_json_delta', 'partial_json': arguments[half:]}])),
        'gemini': sse(json.dumps({'candidates': [{'content': {'parts': [
            {'functionCall': {'id': 'id-' + KEY, 'name': 'search_book', 'args': json.loads(arguments)}}]},
            'finishReason': 'STOP'}]})),
        'ollama': ndjson({'model': 'm', 'message': {'content': '', 'tool_calls': [
            {'id': 'id-' + KEY, 'function': {'name': 'search_book', 'arguments': json.loads(arguments)}}]},
            'done': True}),
    }[name]
    # Ollama has no key: the secret it sends is a header the reader set
    answer, _ = ask(name, stream, **({'headers': [('Authorization', 'Bearer ' + KEY)]} if name == 'ollama' else {}))
    assert answer.failed is None, answer.failed
    call, = answer.done.tool_calls
    assert KEY not in repr(answer.done) and KEY[:20] not in repr(answer.done)
    assert json.loads(call.arguments) == {'query': f'the key is {REDACTED}'}
    assert call.id == 'id-' + REDACTED

# }}}


# which models refused tools {{{

def refusal(status, message):
    return errors.error_for_status(status, 'llama.cpp', message=message, model='m')


def test_a_refusal_of_tools_is_told_from_other_errors():
    assert tool_support.tools_refused(refusal(400, 'tools param requires --jinja flag'))
    assert tool_support.tools_refused(refusal(500, 'tools param requires --jinja flag'))  # older llama-servers
    assert tool_support.tools_refused(refusal(400, 'registry.ollama.ai/library/gemma:2b does not support tools'))
    assert tool_support.tools_refused(refusal(422, "'tool_choice' is not supported by this model"))
    assert tool_support.tools_refused(refusal(400, 'This model does not support function calling.'))
    assert not tool_support.tools_refused(refusal(400, 'max_tokens must be at least 1'))
    assert not tool_support.tools_refused(refusal(401, 'tools: invalid key'))
    assert not tool_support.tools_refused(refusal(429, 'too many tool requests'))
    assert not tool_support.tools_refused(ValueError('tools'))
    # our own words never count: only what the service said
    assert isinstance(refusal(400, 'nope'), BadRequest) and not tool_support.tools_refused(
        BadRequest('The tools were refused.', status=400))
    assert not tool_support.tools_refused(ServiceUnavailable('x', provider_message='overloaded', status=503))


def test_a_refusal_is_kept_per_provider_address_and_model(tmp_path):
    path = str(tmp_path / 'bookai' / 'tool-support.json')
    llama = provider('openai_compatible', 'http://127.0.0.1:8080')
    other = provider('openai_compatible', 'http://127.0.0.1:8081')
    assert not tool_support.refused('openai_compatible', llama.config.base_url, 'qwen', path)
    tool_support.remember_refusal(llama, 'qwen', path, now=1_000_000.0)
    assert tool_support.refused('openai_compatible', llama.config.base_url, 'qwen', path, now=1_000_060.0)
    assert not tool_support.refused('openai_compatible', llama.config.base_url, 'other', path, now=1_000_060.0)
    assert not tool_support.refused('openai_compatible', other.config.base_url, 'qwen', path, now=1_000_060.0)
    assert not tool_support.refused('ollama', llama.config.base_url, 'qwen', path, now=1_000_060.0)
    later = 1_000_000.0 + tool_support.REFUSAL_DAYS * 86400 + 1
    assert not tool_support.refused('openai_compatible', llama.config.base_url, 'qwen', path, now=later)
    text = (tmp_path / 'bookai' / 'tool-support.json').read_text()
    assert '127.0.0.1' not in text and 'qwen' not in text and 'openai' not in text  # hashed
    assert (tmp_path / 'bookai' / 'tool-support.json').stat().st_mode & 0o077 == 0


def test_the_record_is_bounded(tmp_path):
    path = str(tmp_path / 'tool-support.json')
    p = provider('ollama')
    for i in range(tool_support.MAX_ENTRIES + 20):
        tool_support.remember_refusal(p, f'model-{i}', path, now=1_000_000.0 + i)
    kept = tool_support.read(path)
    assert len(kept) == tool_support.MAX_ENTRIES
    assert tool_support.refused('ollama', p.config.base_url, f'model-{tool_support.MAX_ENTRIES + 19}', path,
                                now=1_000_100.0)
    assert not tool_support.refused('ollama', p.config.base_url, 'model-0', path, now=1_000_100.0)


def test_a_damaged_record_is_set_aside(tmp_path):
    path = tmp_path / 'tool-support.json'
    path.write_text('{"kind": "bookai-tool-support", "version": 1, "refused": [')
    assert tool_support.read(str(path)) == {}
    assert (tmp_path / 'tool-support.json.damaged').exists()
    tool_support.remember_refusal(provider('ollama'), 'm', str(path))
    assert len(tool_support.read(str(path))) == 1


def test_takes_tools_reads_the_record(tmp_path, monkeypatch):
    path = str(tmp_path / 'tool-support.json')
    monkeypatch.setattr(tool_support, 'default_file', lambda: path)
    p = provider('ollama', 'http://127.0.0.1:11434')
    assert p.takes_tools('gemma:2b')
    tool_support.remember_refusal(p, 'gemma:2b')
    assert not p.takes_tools('gemma:2b') and p.takes_tools('qwen3')

# }}}
