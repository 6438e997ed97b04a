# License: GPLv3 Copyright: the Book AI developers
"""What the transport does where real peers cannot be made to misbehave on demand."""

import base64
import json
import ssl
from pathlib import Path

import pytest

from calibre_plugins.bookai.core import errors
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.messages import Answer, Done, Failed, Message, Role
from calibre_plugins.bookai.core.transport import Transport
from calibre_plugins.bookai.providers.registry import PROVIDERS, get_provider
from helpers.scripted_server import Reply, ScriptedServer, TunnelProxy, sse

KEY = 'sk-test-secret-key-0123456789'
QUESTION = [Message(Role.USER, 'Hello?')]


def chat_stream(text='Hi there'):
    words = text.split(' ')
    chunks = [json.dumps({'model': 'm', 'choices': [{'delta': {'content': (' ' if i else '') + w}}]})
              for i, w in enumerate(words)]
    chunks.append(json.dumps({'model': 'm', 'choices': [{'delta': {}, 'finish_reason': 'stop'}],
                              'usage': {'prompt_tokens': 3, 'completion_tokens': 2}}))
    return sse(*chunks, '[DONE]')


def provider(url, **settings):
    s = {'base_url': url + '/v1', 'model': 'm', 'api_key': KEY}
    s.update(settings)
    return get_provider('openai_compatible', settings=s)


def ask(p):
    answer = Answer()
    for chunk in p.text_chat(QUESTION):
        answer.add(chunk)
    return answer


def test_429_with_retry_after_is_waited_for_then_answered():
    replies = [Reply(429, b'{"error": {"message": "slow down"}}', [('Retry-After', '1')]),
               Reply(200, chunks=chat_stream(), headers=[('Content-Type', 'text/event-stream')])]
    with ScriptedServer(replies) as server:
        answer = ask(provider(server.url))
    assert answer.failed is None and answer.text == 'Hi there'
    assert len(server.received) == 2


def test_a_long_retry_after_is_reported_not_waited_for():
    with ScriptedServer([Reply(429, b'{"error": {"message": "come back tomorrow"}}', [('Retry-After', '86400')])]) as s:
        answer = ask(provider(s.url))
    assert isinstance(answer.failed.error, errors.RateLimited)
    assert answer.failed.error.retry_after == 86400 and 'come back tomorrow' in answer.failed.message
    assert len(s.received) == 1


def test_503_retries_are_bounded():
    replies = [Reply(503, b'busy', [('Retry-After', '0')]) for _ in range(5)]
    with ScriptedServer(replies) as s:
        answer = ask(provider(s.url))
    assert isinstance(answer.failed.error, errors.ServiceUnavailable)
    assert len(s.received) == 3  # the first try and two retries


def test_a_redirect_to_another_host_is_refused():
    with ScriptedServer([], host='127.0.0.2') as elsewhere:
        with ScriptedServer([Reply(307, headers=[('Location', elsewhere.url + '/v1/chat/completions')])]) as s:
            answer = ask(provider(s.url))
    assert isinstance(answer.failed.error, errors.RedirectRefused)
    assert elsewhere.received == []  # the key never went there


def test_a_redirect_on_the_same_host_is_followed():
    with ScriptedServer([]) as s:
        s.replies[:] = [Reply(308, headers=[('Location', s.url + '/v2/chat/completions')]),
                        Reply(200, chunks=chat_stream('moved fine'))]
        answer = ask(provider(s.url))
    assert answer.text == 'moved fine'
    assert [r['path'] for r in s.received] == ['/v1/chat/completions', '/v2/chat/completions']


def test_the_key_never_appears_in_an_error():
    echo = json.dumps({'error': {'message': f'Bad header Authorization: Bearer {KEY}'}}).encode()
    with ScriptedServer([Reply(400, echo)]) as s:
        answer = ask(provider(s.url))
    text = answer.failed.message + answer.failed.error.details + repr(answer.failed.error.__dict__)
    assert KEY not in text and errors.REDACTED in text


def test_a_stalled_stream_times_out_in_words():
    with ScriptedServer([Reply(200, chunks=chat_stream('a b c d'), stall_after=2)]) as s:
        answer = ask(provider(s.url, read_timeout=1.0))
    assert answer.text == 'a b'  # what arrived is kept
    assert isinstance(answer.failed.error, errors.TimedOut)
    assert 'for 1 second,' in answer.failed.message


def test_an_html_error_page_becomes_a_sentence():
    page = b'<html><head><style>p{}</style></head><body><h1>502 Bad Gateway</h1><p>nginx</p></body></html>'
    with ScriptedServer([Reply(502, page, [('Content-Type', 'text/html')])]) as s:
        answer = ask(provider(s.url))
    assert isinstance(answer.failed.error, errors.ServiceUnavailable)
    assert '502 Bad Gateway nginx' in answer.failed.message and '<h1>' not in answer.failed.message


def test_a_stream_that_ends_early_is_not_an_answer():
    with ScriptedServer([Reply(200, chunks=chat_stream('cut here')[:1])]) as s:
        answer = ask(provider(s.url))
    assert answer.text == 'cut'
    assert isinstance(answer.failed.error, errors.ConnectionLost)


def test_malformed_json_in_a_stream_is_a_protocol_error():
    with ScriptedServer([Reply(200, chunks=sse('{"choices": [', '[DONE]'))]) as s:
        answer = ask(provider(s.url))
    assert isinstance(answer.failed.error, errors.ProtocolError)


@pytest.mark.parametrize('name', ['openai', 'anthropic', 'gemini', 'openrouter', 'github', 'grok', 'venice'])
def test_a_missing_key_is_said_before_anything_is_sent(name):
    chunks = list(get_provider(name, settings={'api_key': ''}).text_chat(QUESTION))
    assert len(chunks) == 1 and isinstance(chunks[0].error, errors.MissingKey)
    assert 'API key' in chunks[0].message


def test_unused_ok_done_has_usage():
    with ScriptedServer([Reply(200, chunks=chat_stream('x y'))]) as s:
        chunks = list(provider(s.url).text_chat(QUESTION))
    done = chunks[-1]
    assert isinstance(done, Done) and not any(isinstance(c, Failed) for c in chunks)
    assert done.usage.input_tokens == 3 and done.usage.output_tokens == 2
    assert done.usage.cost is None  # a local server's price is unknown, not zero


def kept_transport():
    return Transport(proxies={})


def test_the_connection_is_kept_for_the_next_question_but_not_after_stop():
    replies = [Reply(200, chunks=chat_stream('one two')), Reply(200, chunks=chat_stream('three four')),
               Reply(200, chunks=chat_stream('five six seven eight'), chunk_delay=0.05),
               Reply(200, chunks=chat_stream('nine ten'))]
    with ScriptedServer(replies) as s:
        p = get_provider('openai_compatible', settings={'base_url': s.url + '/v1', 'model': 'm'},
                         transport=kept_transport())
        assert ask(p).text == 'one two'
        assert ask(p).text == 'three four'
        cancel = CancelToken()
        for chunk in p.text_chat(QUESTION, cancel=cancel):
            cancel.cancel()
        assert ask(p).text == 'nine ten'
        assert p.connection.transport.keeps_connections_to(s.url)
    ports = [r['client'][1] for r in s.received]
    assert ports[0] == ports[1] == ports[2]  # kept after complete answers
    assert ports[3] != ports[2]  # Stop closed it: the next question opened a new one


def test_an_idle_connection_numbered_past_1023_is_still_seen_open():
    """select() cannot watch a descriptor past 1023 (FD_SETSIZE): a calibre with many files open,
    or a long test run, gave every kept connection such a number, and each was taken for closed (and
    its server for one that closes every connection). poll() has no such limit."""
    import os
    import socket

    from calibre_plugins.bookai.core.transport import still_open
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1600:  # a descriptor numbered 1500 must be allowed (the hosts allow far more)
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(1600, hard), hard))
    a, b = socket.socketpair()
    high = os.dup2(a.fileno(), 1500)
    sock = socket.socket(fileno=high)
    try:
        assert sock.fileno() > 1023
        assert still_open(sock)       # idle, nothing to read: open
        b.sendall(b'x')
        assert not still_open(sock)  # something came: not to be used
        b.close()
        assert not still_open(sock)
    finally:
        sock.close()
        a.close()


def test_a_kept_connection_the_server_closed_is_not_used_and_nothing_is_sent_twice():
    replies = [Reply(200, chunks=chat_stream('first answer')), Reply(200, chunks=chat_stream('second answer'))]
    with ScriptedServer(replies) as s:
        p = get_provider('openai_compatible', settings={'base_url': s.url + '/v1', 'model': 'm'},
                         transport=kept_transport())
        assert ask(p).text == 'first answer'
        s.close_connections()  # the server drops the idle connection
        assert ask(p).text == 'second answer'
    assert len(s.received) == 2
    assert s.received[0]['client'] != s.received[1]['client']


def test_kept_connections_their_servers_closed_are_let_go_when_another_is_kept():
    """One connection is kept per address, and used again only for that address: one whose server
    has since closed it is closed when the next one is kept, not held (a descriptor each) until its
    address is asked again. A quick run asks hundreds of servers once each: it ran out of a user's
    1,024 open files."""
    transport = kept_transport()
    urls = []
    for text in ('one', 'two', 'three'):
        with ScriptedServer([Reply(200, chunks=chat_stream(text))]) as s:
            p = get_provider('openai_compatible', settings={'base_url': s.url + '/v1', 'model': 'm'},
                             transport=transport)
            assert ask(p).text == text
            urls.append(s.url)
    assert list(transport._idle) == [transport.route(urls[-1]).key]  # the last one's, which nothing asked since


def test_a_server_found_closing_at_once_when_another_is_kept_is_learned_as_such():
    """A kept connection let go because its server closed it at once, found when another one is
    kept, teaches what finding it when asking again teaches: that server closes every connection."""
    import time
    transport = kept_transport()
    with ScriptedServer([Reply(200, chunks=chat_stream('one'))]) as closing:
        p = get_provider('openai_compatible', settings={'base_url': closing.url + '/v1', 'model': 'm'},
                         transport=transport)
        assert ask(p).text == 'one' and transport.keeps_connections_to(closing.url)
        closing.close_connections()
        time.sleep(0.2)  # the close reaches this end
        with ScriptedServer([Reply(200, chunks=chat_stream('two'))]) as other:
            p = get_provider('openai_compatible', settings={'base_url': other.url + '/v1', 'model': 'm'},
                             transport=transport)
            assert ask(p).text == 'two'
        assert not transport.keeps_connections_to(closing.url)
        assert list(transport._idle) == [transport.route(other.url).key]


def test_calibres_proxy_is_used_for_a_remote_service_with_its_credentials():
    with ScriptedServer([Reply(200, chunks=chat_stream('via the proxy'))]) as proxy:
        host_port = proxy.url.split('//')[1]
        transport = Transport(proxies={'http': f'http://reader:s%40cret@{host_port}'})
        p = get_provider('openai_compatible', settings={'base_url': 'http://books.example/v1', 'model': 'm'},
                         transport=transport)
        assert ask(p).text == 'via the proxy'
    (request,) = proxy.received
    assert request['path'] == 'http://books.example/v1/chat/completions'  # the full URL, to the proxy
    assert request['headers']['Proxy-Authorization'] == 'Basic ' + base64.b64encode(b'reader:s@cret').decode()


def test_https_goes_through_calibres_proxy_in_a_tunnel_and_the_key_stays_inside_it():
    tls = Path(__file__).parent / 'fixtures'
    context = ssl.create_default_context(cafile=str(tls / 'test-server.crt'))  # made for books.example
    reply = Reply(200, chunks=chat_stream('through the tunnel'))
    with ScriptedServer([reply], tls=(tls / 'test-server.crt', tls / 'test-server.key')) as server, \
            TunnelProxy(server.address) as proxy:
        host_port = proxy.url.split('//')[1]
        transport = Transport(proxies={'https': f'http://reader:s%40cret@{host_port}'}, tls_context=context)
        p = get_provider('openai_compatible', transport=transport, settings={
            'base_url': 'https://books.example/v1', 'model': 'm', 'api_key': 'sk-tunnelled-key-0123'})
        assert ask(p).text == 'through the tunnel'
    (line, headers), = proxy.requests
    assert line == 'CONNECT books.example:443 HTTP/1.0' or line == 'CONNECT books.example:443 HTTP/1.1'
    assert headers['Proxy-Authorization'] == 'Basic ' + base64.b64encode(b'reader:s@cret').decode()
    (request,) = server.received
    assert request['path'] == '/v1/chat/completions'
    assert request['headers']['Host'] == 'books.example'
    assert request['headers']['Authorization'] == 'Bearer sk-tunnelled-key-0123'
    assert b'sk-tunnelled-key' not in proxy.relayed and b'chat/completions' not in proxy.relayed  # encrypted


@pytest.mark.parametrize('headers, shown', [('X-Token: caf\u20ac-secret', 'X-Token'),
                                              ('X-Token: one\nno colon here', 'no colon here')])
def test_a_header_that_cannot_be_sent_is_told_in_words(headers, shown):
    with ScriptedServer([]) as s:
        p = get_provider('openai_compatible', settings={'base_url': s.url + '/v1', 'model': 'm', 'headers': headers})
        chunks = list(p.text_chat(QUESTION))
    assert isinstance(chunks[-1], Failed) and isinstance(chunks[-1].error, errors.NotConfigured)
    assert shown in chunks[-1].message and 'secret' not in chunks[-1].message
    assert s.received == []


def test_this_machines_own_addresses_never_go_through_the_proxy():
    with ScriptedServer([]) as proxy, ScriptedServer([Reply(200, chunks=chat_stream('direct'))]) as local:
        transport = Transport(proxies={'http': proxy.url})
        p = get_provider('openai_compatible', settings={'base_url': local.url + '/v1', 'model': 'm'},
                         transport=transport)
        assert ask(p).text == 'direct'
    assert proxy.received == [] and len(local.received) == 1


@pytest.fixture
def no_cycle_collector():
    import gc
    gc.collect()
    gc.disable()
    yield
    gc.enable()


def test_a_provider_no_longer_used_is_freed_at_once_with_its_connections(no_cycle_collector):
    """A provider and its parts hold no cycle: one no longer used is freed as soon as it is let go,
    its transport and the connection it kept with it, not when Python's cycle collector comes (a
    long session or test run otherwise ran out of file descriptors)."""
    import weakref
    with ScriptedServer([Reply(200, chunks=chat_stream('one two'))]) as s:
        p = get_provider('openai_compatible', settings={'base_url': s.url + '/v1', 'model': 'm'},
                         transport=kept_transport())
        assert ask(p).text == 'one two'
        assert p.connection.transport.keeps_connections_to(s.url)
        held = weakref.ref(p), weakref.ref(p.connection), weakref.ref(p.connection.transport)
        del p
        assert [ref() for ref in held] == [None, None, None]


@pytest.mark.parametrize('name', PROVIDERS)
def test_no_provider_holds_a_cycle(name, no_cycle_collector):
    import weakref
    p = get_provider(name, settings={'api_key': KEY}, transport=Transport(proxies={}))
    assert p.connection.headers() and p.connection.is_local in (True, False)
    assert isinstance(p.config.missing_setup(), str)
    parts = p.answering, p.embedding, p.image_making, p.model_list
    held = [weakref.ref(x) for x in (p, p.config, p.connection, p.connection.transport, *parts)]
    del p, parts
    assert [ref() for ref in held] == [None] * len(held)
