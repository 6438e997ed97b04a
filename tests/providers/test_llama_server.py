# License: GPLv3 Copyright: the Book AI developers
"""The providers against a real llama.cpp server: every wire format it speaks,
streamed through the provider and compared with what the same server answers
to a plain direct request; and the real failures it produces."""

import socket

import pytest

from calibre_plugins.bookai.core import errors
from calibre_plugins.bookai.core.messages import Answer, Done, Message, Role, TextDelta
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.peers import LlamaServer, direct_text

CONVERSATION = [Message(Role.SYSTEM, 'You are terse.'), Message(Role.USER, 'Name three colours.')]
MAX_TOKENS = 24

# provider name: its settings for a llama-server at URL (each reaches the route its API uses)
PATHS = {
    'openai_compatible': lambda url: {'base_url': url + '/v1', 'temperature': 0.0},
    'lmstudio': lambda url: {'base_url': url + '/v1', 'temperature': 0.0},
    'openrouter': lambda url: {'base_url': url + '/v1', 'api_key': 'sk-or-test-key'},
    'github': lambda url: {'base_url': url, 'api_key': 'ghp-test-token'},
    'grok': lambda url: {'base_url': url + '/v1', 'api_key': 'xai-test-key'},
    'openai': lambda url: {'base_url': url + '/v1', 'api_key': 'sk-test-key'},
    'anthropic': lambda url: {'base_url': url + '/v1', 'api_key': 'sk-ant-test-key'},
}


# TINY_TOKENS: none: --temp 0 is the server's default, and providers that send no temperature get greedy
# decoding too


@pytest.fixture(scope='module')
def smol():
    with LlamaServer('smollm2', alias='smollm2', extra_args=('--temp', '0')) as server:
        yield server


def provider_for(name, server, **extra):
    settings = PATHS[name](server.base_url)
    settings.update({'model': server.model})
    settings.update(extra)
    return get_provider(name, settings=settings)


def ask(provider, messages=CONVERSATION, max_tokens=MAX_TOKENS, cancel=None):
    answer = Answer()
    for chunk in provider.text_chat(messages, max_tokens=max_tokens, cancel=cancel):
        answer.add(chunk)
    return answer


@pytest.mark.parametrize('name', list(PATHS))
def test_streamed_text_equals_the_direct_answer(name, tiny):
    expected = direct_text(tiny, CONVERSATION, MAX_TOKENS)
    answer = ask(provider_for(name, tiny))
    assert answer.failed is None, answer.failed.message
    assert answer.text == expected and len(expected) > 10
    # llama-server's Responses route says "completed" even when max_output_tokens cut the
    # answer short (OpenAI says "incomplete": see the aimock tests); the others say so
    assert answer.done.finish_reason == ('stop' if name == 'openai' else 'length')
    assert answer.done.usage.output_tokens == MAX_TOKENS
    assert answer.done.usage.input_tokens > 5
    assert len(answer.text_parts) > 1  # it really streamed


def test_a_follow_up_keeps_the_whole_conversation(tiny):
    provider = provider_for('openai_compatible', tiny)
    first = ask(provider)
    follow_up = CONVERSATION + [first.as_message(), Message(Role.USER, 'And three more?')]
    assert ask(provider, follow_up).text == direct_text(tiny, follow_up, MAX_TOKENS)


def test_llama_server_closes_connections_after_answering_and_the_transport_learns_it(tiny):
    # it answers "Keep-Alive: timeout=5, max=100" yet closes the connection after a streamed
    # answer: the second question finds the kept connection closed, and from then on none is kept
    from calibre_plugins.bookai.core.transport import Transport
    transport = Transport(proxies={})
    provider = get_provider('openai_compatible', transport=transport,
                            settings={'base_url': tiny.base_url + '/v1', 'model': 'tiny', 'temperature': 0.0})
    expected = direct_text(tiny, CONVERSATION, MAX_TOKENS)
    assert ask(provider).text == expected
    assert transport.keeps_connections_to(tiny.base_url)
    assert ask(provider).text == expected  # on a new connection, nothing lost
    assert not transport.keeps_connections_to(tiny.base_url)
    assert ask(provider).text == expected
    assert transport._idle == {}  # nothing kept to be checked before the next question


def test_the_live_model_list_and_automatic_choice(tiny):
    provider = get_provider('openai_compatible', settings={'base_url': tiny.base_url + '/v1'})
    models = provider.models(refresh=True)
    assert [m.id for m in models] == ['tiny']
    assert provider.choose_model() == 'tiny'  # no model configured: taken from the live list
    ok, sentence = provider.test_connection()
    assert ok and 'tiny' in sentence


def test_a_real_model_stops_by_itself(smol):
    answer = ask(provider_for('openai_compatible', smol),
                 [Message(Role.USER, 'What is the capital of France? Answer with one word.')], max_tokens=64)
    assert answer.failed is None
    assert answer.done.finish_reason == 'stop'
    assert 'paris' in answer.text.lower()


def test_anthropic_messages_with_a_real_model(smol):
    answer = ask(provider_for('anthropic', smol), [Message(Role.USER, 'Say hello.')], max_tokens=40)
    assert answer.failed is None and answer.text.strip()
    assert answer.done.finish_reason in ('stop', 'length')


def test_a_wrong_key_is_told_in_words():
    with LlamaServer('tiny', alias='tiny', api_key='the-right-key-123456') as server:
        answer = ask(provider_for('openai_compatible', server, api_key='a-wrong-key-654321'))
        assert isinstance(answer.failed.error, errors.AuthenticationFailed)
        assert 'refused the API key' in answer.failed.message
        assert 'a-wrong-key-654321' not in answer.failed.message + answer.failed.error.details
        assert ask(provider_for('openai_compatible', server, api_key='the-right-key-123456')).failed is None


def test_a_conversation_too_long_for_the_context():
    with LlamaServer('tiny', alias='tiny', ctx=256) as server:
        answer = ask(provider_for('openai_compatible', server), [Message(Role.USER, 'word ' * 600)])
    assert isinstance(answer.failed.error, errors.ContextTooLong)
    assert 'too long' in answer.failed.message


def test_nothing_listening():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    provider = get_provider('openai_compatible', settings={'base_url': f'http://127.0.0.1:{port}/v1', 'model': 'x'})
    answer = ask(provider)
    assert isinstance(answer.failed.error, errors.Unreachable)
    assert f'127.0.0.1:{port}' in answer.failed.message


def test_the_server_dies_mid_answer():
    with LlamaServer('tiny', alias='tiny') as server:
        chunks = provider_for('openai_compatible', server).text_chat(CONVERSATION, max_tokens=20000)
        answer = Answer()
        for chunk in chunks:
            answer.add(chunk)
            if len(answer.text_parts) == 5:
                server.kill()
    assert len(answer.text_parts) >= 5  # what arrived is kept
    assert isinstance(answer.failed.error, errors.ConnectionLost)


def test_stop_closes_the_connection_and_the_server_cancels(tiny):
    cancel = CancelToken()
    log_start = len(tiny.log())
    answer = Answer()
    for chunk in provider_for('openai_compatible', tiny).text_chat(CONVERSATION, max_tokens=20000, cancel=cancel):
        answer.add(chunk)
        if isinstance(chunk, TextDelta) and len(answer.text_parts) == 5:
            cancel.cancel()
    assert isinstance(answer.done, Done) and answer.done.finish_reason == 'cancelled'
    assert answer.failed is None and 5 <= len(answer.text_parts) < 20000
    tiny.wait_log(r'cancel', start=log_start)  # the server saw the disconnect and stopped generating
