# License: GPLv3 Copyright: the Book AI developers
"""The providers no real server here covers, against aimock (an independent fake):
Gemini, Ollama, OpenAI's Responses stream, Anthropic's own error shapes, and
streams that are cut short or are not streams at all."""

from pathlib import Path

import pytest

from calibre_plugins.bookai.core import errors
from calibre_plugins.bookai.core.messages import Answer, Message, Role
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.peers import AiMock

FIXTURES = Path(__file__).parent / 'fixtures' / 'aimock.json'


@pytest.fixture(scope='module')
def mock():
    with AiMock(FIXTURES) as m:
        yield m


def provider(name, mock, **settings):
    base = {'gemini': '/v1beta', 'ollama': ''}.get(name, '/v1')
    s = {'base_url': mock.base_url + base, 'api_key': 'test-key-0123456789',
         'model': {'gemini': 'gemini-2.5-flash', 'ollama': 'llama3.2', 'anthropic': 'claude-sonnet-4-5',
                   'openai': 'gpt-5-mini'}.get(name, 'test-model')}
    s.update(settings)
    return get_provider(name, settings=s)


def seen(mock, path):
    """The last request aimock got at path, as it understood it: its body normalised
    into one chat shape for every provider, credentials shown as [REDACTED]."""
    return [r for r in mock.journal() if r['path'] == path][-1]


def ask(p, text, **kw):
    answer = Answer()
    for chunk in p.text_chat([Message(Role.SYSTEM, 'Be brief.'), Message(Role.USER, text)], **kw):
        answer.add(chunk)
    return answer


def test_gemini_streams_text_and_thoughts(mock):
    answer = ask(provider('gemini', mock), 'gemini question')
    assert answer.failed is None, answer.failed
    assert answer.text == 'Gemini says: the sea is large and full of fish.'
    assert answer.reasoning == 'The user asks about the sea.'
    assert len(answer.text_parts) > 3 and answer.done.finish_reason == 'stop'
    request = seen(mock, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse')
    assert request['headers'].get('x-goog-api-key') == '[REDACTED]'  # sent (aimock hides its value)
    assert request['body']['messages'] == [{'role': 'system', 'content': 'Be brief.'},
                                           {'role': 'user', 'content': 'gemini question'}]


def test_gemini_keeps_every_turn(mock):
    p = provider('gemini', mock)
    turns = [Message(Role.USER, 'first'), Message(Role.ASSISTANT, 'answer'), Message(Role.USER, 'gemini question')]
    answer = Answer()
    for chunk in p.text_chat(turns):
        answer.add(chunk)
    assert answer.failed is None
    messages = seen(mock, '/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse')['body']['messages']
    assert [(m['role'], m['content']) for m in messages] == [
        ('user', 'first'), ('assistant', 'answer'), ('user', 'gemini question')]


def test_ollama_streams_ndjson(mock):
    answer = ask(provider('ollama', mock), 'ollama question')
    assert answer.failed is None, answer.failed
    assert answer.text == 'Ollama says: rivers flow to the sea.'
    assert len(answer.text_parts) > 3 and answer.done.finish_reason == 'stop'


def test_ollama_sends_its_headers_when_listing_and_chatting(mock):
    p = provider('ollama', mock, headers=[('X-Gateway-Token', 'g-123')])
    assert 'llama3.2' in [m.id for m in p.models(refresh=True)]
    ask(p, 'ollama question')
    assert seen(mock, '/api/chat')['headers'].get('x-gateway-token') == 'g-123'


def test_openai_responses_stream(mock):
    answer = ask(provider('openai', mock), 'responses question')
    assert answer.failed is None, answer.failed
    assert answer.text == 'Responses say: tides follow the moon.'
    assert answer.reasoning.strip() == 'Tides, then.'
    assert answer.done.usage.input_tokens is not None


def test_anthropic_streams_thinking_and_text(mock):
    answer = ask(provider('anthropic', mock), 'claude question')
    assert answer.failed is None, answer.failed
    assert answer.text == "Claude says: waves are wind's work."
    assert answer.reasoning == 'Waves come from wind.'
    assert answer.done.finish_reason == 'stop'
    request = seen(mock, '/v1/messages')
    assert request['headers'].get('anthropic-version') == '2023-06-01'
    assert request['headers'].get('x-api-key') == '[REDACTED]'
    assert request['body']['messages'][0] == {'role': 'system', 'content': 'Be brief.'}


@pytest.mark.parametrize('question, kind, words', [
    ('overloaded please', errors.ServiceUnavailable, 'Overloaded'),
    ('rate limit please', errors.RateLimited, 'exceeded your rate limit'),
    ('bad key please', errors.AuthenticationFailed, 'invalid x-api-key'),
    ('too long please', errors.ContextTooLong, 'prompt is too long'),
    ('no credit please', errors.NoCredit, 'credit balance is too low'),
])
def test_anthropic_errors_in_its_own_shape(mock, question, kind, words):
    answer = ask(provider('anthropic', mock), question)
    assert isinstance(answer.failed.error, kind), answer.failed
    assert words in answer.failed.message  # the service's own message is told
    assert answer.text == ''


def test_gemini_quota_error(mock):
    answer = ask(provider('gemini', mock), 'gemini quota please')
    assert isinstance(answer.failed.error, errors.NoCredit)
    assert 'exceeded your current quota' in answer.failed.message


@pytest.mark.parametrize('name', ['openai_compatible', 'anthropic', 'gemini', 'openai', 'ollama'])
def test_a_stream_cut_short(mock, name):
    settings = {'model': 'llama3.2'} if name == 'ollama' else {}
    answer = ask(provider(name, mock, **settings), 'cut short please')
    assert isinstance(answer.failed.error, errors.ConnectionLost), answer.failed
    assert answer.text and 'cut off somewhere in the middle of it.' not in answer.text  # partial text kept


@pytest.mark.parametrize('name', ['openai_compatible', 'anthropic', 'gemini', 'openai'])
def test_a_reply_that_is_not_a_stream(mock, name):
    answer = ask(provider(name, mock), 'garbage please')
    assert isinstance(answer.failed.error, errors.ProtocolError), answer.failed
    assert 'not a valid answer stream' in answer.failed.message
