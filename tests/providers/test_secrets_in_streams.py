# License: GPLv3 Copyright: the Book AI developers
"""No secret leaves a provider, whatever path the service's text takes: an error inside the
stream of every wire format, an HTTP error, the answer and the reasoning (a key split across
two events at every point, as it is and encoded), the model's name, the model list, web links,
Test connection; in every form a service may echo it (helpers.secret_forms: in any case,
percent-encoded, JSON- and HTML-escaped, hex, base64; test_secrets_in_answers.py has every form
in every field). What the
windows and the command line keep (a conversation's history) holds none either.

Scripted servers: no real peer echoes a key on demand."""

import base64
import json
import socket
from urllib.parse import quote

import pytest

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.core.errors import REDACTED, ProviderError
from calibre_plugins.bookai.core.messages import Answer, Done, Failed, Message, ReasoningDelta, Role, TextDelta
from calibre_plugins.bookai.core.transport import Request, Route, Transport
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.scripted_server import Reply, ScriptedServer, sse
from helpers.secret_forms import forms_of, leaks

KEY = 'sk-live-7f3Qz9/Xa+Lm2Kp0Vw8Rt5Yb'
HEADER_KEY = 'hdr-4f9c2e7a1b-secret'
QUESTION = [Message(Role.USER, 'Hello?')]
SAID = 'The key is {key}, noted.'
WIRES = ('openai_compatible', 'openrouter', 'openai', 'anthropic', 'gemini', 'ollama')


def settings_for(wire, url):
    """Every wire format with a secret it sends: the API key, or (Ollama, and OpenAI compatible
    too) a header the user set."""
    s = {'base_url': url + ('' if wire == 'ollama' else '/v1'), 'model': 'm'}
    if wire == 'ollama':
        s['headers'] = [('Authorization', 'Bearer ' + KEY)]
    else:
        s['api_key'] = KEY
    if wire == 'openai_compatible':
        s['headers'] = [('X-Api-Key', HEADER_KEY)]
    return s


def events(wire, texts=(), reasoning=(), model='m', error=None, links=()):
    """The body a service of that wire format streams: the reasoning and text pieces, then the
    end of the answer, or an error in the stream."""
    if wire == 'ollama':
        objs = [{'model': model, 'message': {'thinking': r}} for r in reasoning]
        objs += [{'model': model, 'message': {'content': t}} for t in texts]
        objs.append({'error': error} if error else {'model': model, 'done': True, 'done_reason': 'stop'})
        return [json.dumps(o).encode() + b'\n' for o in objs]
    if wire in ('openai_compatible', 'openrouter'):
        objs = [{'model': model, 'choices': [{'delta': {'reasoning_content': r}}]} for r in reasoning]
        objs += [{'model': model, 'choices': [{'delta': {'content': t}}]} for t in texts]
        objs.append({'error': {'message': error}} if error else {
            'model': model, 'choices': [{'delta': {}, 'finish_reason': 'stop'}]})
        return sse(*map(json.dumps, objs), *(() if error else ('[DONE]',)))
    if wire == 'openai':
        objs = [{'type': 'response.created', 'response': {'model': model, 'id': 'r1'}}]
        objs += [{'type': 'response.reasoning_summary_text.delta', 'delta': r} for r in reasoning]
        objs += [{'type': 'response.output_text.delta', 'delta': t} for t in texts]
        objs += [{'type': 'response.output_text.annotation.added',
                  'annotation': {'type': 'url_citation', 'title': title, 'url': url}} for title, url in links]
        objs.append({'type': 'error', 'error': {'message': error}} if error else {
            'type': 'response.completed', 'response': {'model': model, 'status': 'completed'}})
        return sse(*map(json.dumps, objs))
    if wire == 'anthropic':
        objs = [{'type': 'message_start', 'message': {'model': model, 'id': 'msg1'}},
                {'type': 'content_block_start', 'index': 0, 'content_block': {'type': 'thinking'}}]
        objs += [{'type': 'content_block_delta', 'index': 0, 'delta': {'type': 'thinking_delta', 'thinking': r}}
                 for r in reasoning]
        objs += [{'type': 'content_block_delta', 'index': 0, 'delta': {'type': 'signature_delta', 'signature': 's'}},
                 {'type': 'content_block_start', 'index': 1, 'content_block': {'type': 'text'}}]
        objs += [{'type': 'content_block_delta', 'index': 1, 'delta': {'type': 'text_delta', 'text': t}}
                 for t in texts]
        objs += [{'type': 'content_block_delta', 'index': 1, 'delta': {'type': 'citations_delta', 'citation': {
            'title': title, 'url': url}}} for title, url in links]
        objs += [{'type': 'error', 'error': {'type': 'overloaded_error', 'message': error}}] if error else [
            {'type': 'message_delta', 'delta': {'stop_reason': 'end_turn'}}, {'type': 'message_stop'}]
        return sse(*map(json.dumps, objs))
    assert wire == 'gemini'
    part = lambda p: {'modelVersion': model, 'candidates': [{'content': {'parts': [p]}}]}  # noqa: E731
    objs = [part({'text': r, 'thought': True}) for r in reasoning] + [part({'text': t}) for t in texts]
    if links:
        objs.append({'candidates': [{'groundingMetadata': {'groundingChunks': [
            {'web': {'title': title, 'uri': url}} for title, url in links]}}]})
    objs.append({'error': {'code': 429, 'message': error, 'status': 'RESOURCE_EXHAUSTED'}} if error else {
        'modelVersion': model, 'candidates': [{'content': {'parts': []}, 'finishReason': 'STOP'}]})
    return sse(*map(json.dumps, objs))


def streamed(wire, body):
    return Reply(200, chunks=body, headers=[('Content-Type', 'application/x-ndjson' if wire == 'ollama'
                                             else 'text/event-stream')])


def ask(p):
    answer, chunks = Answer(), []
    for chunk in p.text_chat(QUESTION):
        chunks.append(chunk)
        answer.add(chunk)
    return answer, chunks


def everything_said(chunks):
    """Every text a window, the viewer or the command line could show or keep from chunks."""
    out = []
    for c in chunks:
        if isinstance(c, (TextDelta, ReasoningDelta)):
            out.append(c.text)
        elif isinstance(c, Failed):
            e = c.error
            out += [c.message, str(e), repr(e), getattr(e, 'details', ''), getattr(e, 'provider_message', '')]
        elif isinstance(c, Done):
            out += [c.model, c.response_id, repr(c.web_links), json.dumps(c.reasoning_details)]
    return '\n'.join(map(str, out))


def kept_in_history(tmp_path, answer):
    """What a conversation saves after this answer, as the windows and the command line save it."""
    conv = Conversation([])
    conv.ask('Hello?')
    conv.finish(answer, provider='p')
    history = History(str(tmp_path / 'history'))
    history.save(conv)
    return '\n'.join(p.read_text() for p in (tmp_path / 'history').rglob('*') if p.is_file())


def assert_no_secret(text):
    for secret in (KEY, HEADER_KEY):
        assert leaks(text, secret) == [], text


@pytest.mark.parametrize('form', ['raw', 'percent', 'base64', 'base64-url', 'base64-bearer', 'json-slash', 'lower',
                                  'bearer-lower', 'percent-every-byte', 'percent-dash', 'json-u', 'html-decimal',
                                  'html-hex', 'html-named', 'hex-upper'])
@pytest.mark.parametrize('wire', WIRES)
def test_an_error_inside_the_stream_holds_no_key(wire, form, tmp_path):
    echoed = forms_of(KEY)[form]
    said = f'quota exceeded for Bearer {echoed}'
    with ScriptedServer([streamed(wire, events(wire, ['Some text. '], error=said))]) as s:
        answer, chunks = ask(get_provider(wire, settings=settings_for(wire, s.url)))
    assert isinstance(answer.failed.error, ProviderError) and 'quota exceeded for' in answer.failed.message
    assert REDACTED in answer.failed.message and answer.text == 'Some text. '
    assert_no_secret(everything_said(chunks))
    assert_no_secret(kept_in_history(tmp_path, answer))


@pytest.mark.parametrize('form', ['raw', 'percent', 'base64', 'json-slash', 'upper', 'bearer-lower',
                                  'percent-every-byte-lower', 'json-u-upper', 'html-hex-upper', 'hex'])
@pytest.mark.parametrize('wire', WIRES)
def test_an_http_error_holds_no_key(wire, form):
    body = json.dumps({'error': {'message': f'bad key {forms_of(KEY)[form]}'}}).encode()
    with ScriptedServer([Reply(401, body)]) as s:
        answer, chunks = ask(get_provider(wire, settings=settings_for(wire, s.url)))
    assert answer.failed and REDACTED in answer.failed.message
    assert_no_secret(everything_said(chunks))


@pytest.mark.parametrize('wire', WIRES)
@pytest.mark.parametrize('where, form', [('answer', 'raw'), ('reasoning', 'raw'), ('answer', 'percent-every-byte'),
                                         ('reasoning', 'html-hex')])
def test_a_key_split_across_two_events_at_every_point(wire, where, form):
    echoed = forms_of(KEY)[form]
    said = SAID.format(key=echoed)
    start = said.index(echoed)
    splits = range(start, start + len(echoed) + 1)
    replies = []
    for at in splits:
        pieces = [said[:at], said[at:]]
        replies.append(streamed(wire, events(wire, texts=pieces if where == 'answer' else ['ok'],
                                             reasoning=pieces if where == 'reasoning' else ())))
    with ScriptedServer(replies) as s:
        p = get_provider(wire, settings=settings_for(wire, s.url))
        for at in splits:
            answer, chunks = ask(p)
            assert answer.failed is None, answer.failed.message
            assert_no_secret(everything_said(chunks))
            got = answer.text if where == 'answer' else answer.reasoning
            assert got == SAID.format(key=REDACTED), (at, got)  # nothing lost, nothing else changed


@pytest.mark.parametrize('wire', WIRES)
def test_a_key_as_the_model_name_and_in_web_links(wire):
    links = [(f'Title {KEY}', f'https://example.com/?k={quote(KEY, safe="")}')]
    body = events(wire, texts=['Fine.'], model=f'model-{KEY}', links=links)
    with ScriptedServer([streamed(wire, body)]) as s:
        answer, chunks = ask(get_provider(wire, settings=settings_for(wire, s.url)))
    assert answer.failed is None and answer.text == 'Fine.'
    assert_no_secret(everything_said(chunks))
    if wire in ('openai', 'anthropic', 'gemini'):
        assert answer.done.web_links and REDACTED in answer.done.web_links[0].title


@pytest.mark.parametrize('wire', ['openai_compatible', 'openai', 'anthropic', 'ollama'])
def test_the_model_list_its_cache_and_test_connection_hold_no_key(wire):
    from calibre.constants import cache_dir
    if wire == 'ollama':
        listing = {'models': [{'model': KEY, 'name': KEY}]}
    else:
        listing = {'data': [{'id': 'model-' + KEY, 'display_name': base64.b64encode(KEY.encode()).decode()}]}
    chat = streamed(wire, events(wire, texts=['ready'], model=KEY))
    with ScriptedServer([Reply(200, json.dumps(listing).encode()), Reply(200, json.dumps(listing).encode()), chat]) as s:
        settings = dict(settings_for(wire, s.url), model='')
        p = get_provider(wire, settings=settings)
        models = p.models(refresh=True)
        assert models and all(REDACTED in m.id for m in models)
        assert_no_secret(repr(models))
        cached = open(p.model_list.cache_path(), encoding='utf-8').read()
        assert_no_secret(cached)
        ok, sentence = get_provider(wire, settings=settings).test_connection()
    assert ok and REDACTED in sentence, sentence
    assert_no_secret(sentence)
    assert cache_dir()


def test_an_embeddings_error_holds_no_key():
    body = json.dumps({'error': {'message': 'key ' + base64.b64encode(KEY.encode()).decode()}}).encode()
    with ScriptedServer([Reply(400, body), Reply(200, b'{"data": "' + quote(KEY).encode() + b'"}')]) as s:
        p = get_provider('openai_compatible', settings=settings_for('openai_compatible', s.url))
        for _ in range(2):
            with pytest.raises(ProviderError) as e:
                p.embed(['a passage'], model='m')
            assert_no_secret('\n'.join((str(e.value), repr(e.value), e.value.details, e.value.provider_message)))


def closed_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


def test_a_password_in_the_address_is_never_shown_nor_sent():
    password = 'pa55-w0rd-in-url'
    url = f'http://reader:{password}@127.0.0.1:{closed_port()}/v1'
    route = Route.to(url + '/chat/completions', lambda scheme, host: None, 'Book AI')
    assert password not in route.shown_url and 'reader' not in route.shown_url
    # an error from the transport: the address is shown without its user and password
    with pytest.raises(ProviderError) as e:
        Transport(proxies={}).open(Request(url + '/models', 'GET'), provider='P')
    assert password not in str(e.value) + e.value.details and '127.0.0.1' in str(e.value)
    # the same address given to a provider: whatever it says, no password, and nothing sent with it
    with ScriptedServer([Reply(500, password.encode())]) as s:
        p = get_provider('openai_compatible', settings={
            'base_url': s.url.replace('http://', f'http://reader:{password}@') + '/v1', 'model': 'm'})
        answer, chunks = ask(p)
        ok, sentence = p.test_connection()
    assert answer.failed and password not in everything_said(chunks) + sentence
    assert all(password not in repr(r) for r in s.received)


def test_a_plain_http_proxy_gets_no_password_of_the_address():
    """Plain HTTP through a proxy puts the whole address on the request line: without its user
    and password."""
    proxy = {'http': 'http://127.0.0.1:3128'}
    route = Route.to('http://me:pa55-w0rd@api.example/v1/x', Transport(proxies=proxy).proxy_for, 'Book AI')
    assert route.target == 'http://api.example/v1/x'


def test_no_secret_no_delay():
    """With no secret long enough to matter, chunks pass through as they come (the same objects)."""
    with ScriptedServer([streamed('openai_compatible', events('openai_compatible', texts=['a', 'b']))]) as s:
        p = get_provider('openai_compatible', settings={'base_url': s.url + '/v1', 'model': 'm'})
        assert not p.connection.known_secrets
        answer, chunks = ask(p)
    assert [c.text for c in chunks if isinstance(c, TextDelta)] == ['a', 'b']


@pytest.mark.parametrize('form', list(forms_of(KEY)))
def test_every_form_split_at_every_point_is_redacted_and_nothing_is_lost(form):
    from calibre_plugins.bookai.core.errors import Secrets
    from calibre_plugins.bookai.providers.streaming import redacted_stream
    secrets = Secrets([KEY])
    said = SAID.format(key=forms_of(KEY)[form])
    expected = secrets.redact(said)
    assert leaks(expected, KEY) == []
    for at in range(len(said) + 1):
        for kind in (TextDelta, ReasoningDelta):
            chunks = list(redacted_stream(iter([kind(said[:at]), kind(said[at:]), Done()]), secrets))
            assert ''.join(c.text for c in chunks if isinstance(c, kind)) == expected, at
            assert all(leaks(c.text, KEY) == [] for c in chunks if isinstance(c, kind))
            assert isinstance(chunks[-1], Done)


def test_the_proxy_password_is_a_secret_too():
    password = 'proxy-pa55-word'
    body = events('openai_compatible', texts=[f'Proxy {password} and {base64.b64encode(password.encode()).decode()}'])
    with ScriptedServer([streamed('openai_compatible', body)]) as s:
        transport = Transport(proxies={'https': f'http://me:{password}@127.0.0.1:3128'})
        p = get_provider('openai_compatible', settings={'base_url': s.url + '/v1', 'model': 'm'}, transport=transport)
        answer, chunks = ask(p)
    assert answer.text.startswith('Proxy [redacted] and ') and leaks(everything_said(chunks), password) == []
