# License: GPLv3 Copyright: the Book AI developers
"""Stream shapes that no peer here produces as the real services do, written from
the services' documented examples and replayed by a scripted server: Ollama's
thinking, blocked questions and answers, web-search links, reported cost."""

import json

from calibre_plugins.bookai.core import errors
from calibre_plugins.bookai.core.messages import Answer, Message, Role, WebLink
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.scripted_server import Reply, ScriptedServer, sse


def ask(name, chunks, base='/v1', **settings):
    with ScriptedServer([Reply(200, chunks=chunks)]) as server:
        s = {'base_url': server.url + base, 'api_key': 'key-0123456789', 'model': 'm'}
        s.update(settings)
        answer = Answer()
        for chunk in get_provider(name, settings=s).text_chat([Message(Role.USER, 'q')]):
            answer.add(chunk)
        return answer, json.loads(server.received[0]['body'])


def ndjson(*objects):
    return [(json.dumps(o) + '\n').encode() for o in objects]


def test_ollama_thinking_is_reasoning():
    answer, sent = ask('ollama', ndjson(
        {'model': 'qwen3', 'message': {'role': 'assistant', 'content': '', 'thinking': 'Let me see.'}, 'done': False},
        {'model': 'qwen3', 'message': {'role': 'assistant', 'content': 'Seven.'}, 'done': False},
        {'model': 'qwen3', 'message': {'role': 'assistant', 'content': ''}, 'done': True, 'done_reason': 'stop',
         'prompt_eval_count': 12, 'eval_count': 5}), base='', reasoning_effort='high')
    assert (answer.reasoning, answer.text) == ('Let me see.', 'Seven.')
    assert answer.done.usage.input_tokens == 12 and answer.done.usage.output_tokens == 5
    assert sent['think'] is True


def test_gemini_blocked_question_says_why():
    answer, _sent = ask('gemini', sse(json.dumps({'promptFeedback': {'blockReason': 'PROHIBITED_CONTENT'}})),
                        base='/v1beta')
    assert isinstance(answer.failed.error, errors.PromptBlocked)
    assert 'prohibited content' in answer.failed.message


def test_gemini_blocked_answer_keeps_what_came_and_says_why():
    answer, _sent = ask('gemini', sse(
        json.dumps({'candidates': [{'content': {'parts': [{'text': 'Once upon'}], 'role': 'model'}}]}),
        json.dumps({'candidates': [{'content': {'parts': [], 'role': 'model'}, 'finishReason': 'RECITATION'}]})),
        base='/v1beta')
    assert answer.text == 'Once upon'
    assert isinstance(answer.failed.error, errors.ResultBlocked) and 'recitation' in answer.failed.message


def test_gemini_search_grounding_links():
    answer, sent = ask('gemini', sse(json.dumps({
        'candidates': [{'content': {'parts': [{'text': 'It rained.'}], 'role': 'model'}, 'finishReason': 'STOP',
                        'groundingMetadata': {'groundingChunks': [
                            {'web': {'uri': 'https://example.org/rain', 'title': 'example.org'}}]}}],
        'usageMetadata': {'promptTokenCount': 8, 'candidatesTokenCount': 3, 'thoughtsTokenCount': 10},
        'modelVersion': 'gemini-2.5-flash'})), base='/v1beta', web_search=True)
    assert answer.done.web_links == (WebLink('example.org', 'https://example.org/rain'),)
    assert sent['tools'] == [{'google_search': {}}]
    usage = answer.done.usage
    assert (usage.input_tokens, usage.output_tokens, usage.reasoning_tokens) == (8, 13, 10)
    assert usage.cost is not None and usage.cost.source == 'estimated'  # gemini-2.5-flash is in the price table


def test_anthropic_refusal_is_a_blocked_answer():
    answer, _sent = ask('anthropic', [
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"m1","model":"claude-x","usage":{"input_tokens":5}}}\n\n',
        b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"refusal"},"usage":{"output_tokens":0}}\n\n',
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'])
    assert isinstance(answer.failed.error, errors.ResultBlocked)


def test_anthropic_web_search_results_and_citations():
    events = [
        {'type': 'message_start', 'message': {'id': 'm', 'model': 'claude-sonnet-4-5', 'usage': {'input_tokens': 20}}},
        {'type': 'content_block_start', 'index': 0, 'content_block': {
            'type': 'web_search_tool_result', 'tool_use_id': 't', 'content': [
                {'type': 'web_search_result', 'url': 'https://example.org/a', 'title': 'A'},
                {'type': 'web_search_result', 'url': 'https://example.org/b', 'title': 'B'}]}},
        {'type': 'content_block_stop', 'index': 0},
        {'type': 'content_block_start', 'index': 1, 'content_block': {'type': 'text', 'text': ''}},
        {'type': 'content_block_delta', 'index': 1, 'delta': {'type': 'citations_delta', 'citation': {
            'type': 'web_search_result_location', 'url': 'https://example.org/a', 'title': 'A'}}},
        {'type': 'content_block_delta', 'index': 1, 'delta': {'type': 'text_delta', 'text': 'Found it.'}},
        {'type': 'message_delta', 'delta': {'stop_reason': 'end_turn'}, 'usage': {'output_tokens': 4}},
        {'type': 'message_stop'}]
    answer, sent = ask('anthropic', [f'event: {e["type"]}\ndata: {json.dumps(e)}\n\n'.encode() for e in events],
                       web_search=True)
    assert answer.text == 'Found it.'
    assert [w.url for w in answer.done.web_links] == ['https://example.org/a', 'https://example.org/b']
    assert sent['tools'][0]['type'].startswith('web_search')
    assert answer.done.usage.cost is not None  # claude-sonnet-4-5 is priced


def test_openai_url_citations_and_an_incomplete_answer():
    events = [
        {'type': 'response.created', 'response': {'id': 'r1', 'model': 'gpt-5-mini'}},
        {'type': 'response.output_text.delta', 'delta': 'See the docs'},
        {'type': 'response.output_text.annotation.added', 'annotation': {
            'type': 'url_citation', 'url': 'https://example.org/docs', 'title': 'Docs'}},
        {'type': 'response.incomplete', 'response': {
            'id': 'r1', 'model': 'gpt-5-mini', 'status': 'incomplete',
            'incomplete_details': {'reason': 'max_output_tokens'},
            'usage': {'input_tokens': 9, 'output_tokens': 16, 'output_tokens_details': {'reasoning_tokens': 12}}}}]
    answer, sent = ask('openai', [f'event: {e["type"]}\ndata: {json.dumps(e)}\n\n'.encode() for e in events],
                       web_search=True)
    assert answer.text == 'See the docs' and answer.done.finish_reason == 'length'
    assert answer.done.web_links == (WebLink('Docs', 'https://example.org/docs'),)
    assert answer.done.usage.reasoning_tokens == 12
    assert sent['store'] is False  # OpenAI is told not to keep the conversation
    assert sent['tools'] == [{'type': 'web_search'}]


def test_openrouter_reports_the_cost():
    answer, sent = ask('openrouter', sse(
        json.dumps({'model': 'vendor/m', 'choices': [{'delta': {'content': 'Hi'}}]}),
        json.dumps({'model': 'vendor/m', 'choices': [{'delta': {}, 'finish_reason': 'stop'}],
                    'usage': {'prompt_tokens': 10, 'completion_tokens': 2, 'cost': 0.00042}}),
        '[DONE]'))
    cost = answer.done.usage.cost
    assert (cost.amount, cost.currency, cost.source) == (0.00042, 'USD', 'reported')
    assert sent['usage'] == {'include': True}
    assert sent['provider'] == {'data_collection': 'deny'}  # only providers that keep no prompts


def test_an_unknown_model_has_an_unknown_cost_never_zero():
    answer, _sent = ask('openai', [f'data: {json.dumps(e)}\n\n'.encode() for e in (
        {'type': 'response.output_text.delta', 'delta': 'x'},
        {'type': 'response.completed', 'response': {'model': 'some-new-model', 'status': 'completed',
                                                    'usage': {'input_tokens': 1, 'output_tokens': 1}}})])
    assert answer.done.usage.cost is None
