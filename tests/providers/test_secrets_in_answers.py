# License: GPLv3 Copyright: the Book AI developers
"""No secret leaves a provider through any field of an answer, in any of the forms a service may
echo it in (helpers.secret_forms: issue 26's fourteen and more): every image provider's answer
(OpenRouter's "model": "model-<key>" and its words, OpenAI's, xAI's and a local server's revised
prompt, Gemini's model version and words, Imagen's prompt, the model Venice's list names), the
model lists (every field, and the copy cached on disk), a chat stream's model, response id,
finish reason and web links, an HTTP error's body (JSON, and an HTML page with the key in HTML's
entities), Test connection. Then where Book AI itself cuts a service's text short (a model's
words to 2,000 characters, a model's name to 100 inside a sentence, a description to its limit,
an event that is not JSON quoted in an error): no beginning of the key is left at the cut.

Scripted servers: no real peer echoes a key on demand in these fields (test_secrets_with_peers.py
has the real ones)."""

import base64
import json

import pytest

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.errors import REDACTED, SHORTEST_SECRET, ProviderError
from calibre_plugins.bookai.core.messages import Answer, Done, Failed, Message, Role
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.images import png
from helpers.scripted_server import Reply, ScriptedServer, sse
from helpers.secret_forms import forms_of, leaks

KEY = 'sk-live-7f3Qz9/Xa+Lm2Kp0Vw8Rt5Yb'
FORMS = list(forms_of(KEY))
PICTURE = png(8, 12)
B64 = base64.b64encode(PICTURE).decode()
BASES = {'openai': '/v1', 'openai_compatible': '/v1', 'grok': '/v1', 'openrouter': '/api/v1', 'gemini': '/v1beta',
         'imagen': '/v1beta', 'venice': '/api/v1', 'anthropic': '/v1', 'ollama': ''}
IMAGE_MODELS = {'openai': 'gpt-image-1', 'openai_compatible': 'sd-turbo', 'grok': 'grok-imagine-image',
                'openrouter': 'google/gemini-2.5-flash-image', 'gemini': 'gemini-2.5-flash-image',
                'imagen': 'imagen-4.0-generate-001', 'venice': ''}


def provider(name: str, url: str, **settings):
    kind = 'gemini' if name == 'imagen' else name
    s = {'base_url': url + BASES[name], 'api_key': KEY, 'model': 'm'}
    if name in IMAGE_MODELS:
        s['image_model'] = IMAGE_MODELS[name]
    s.update(settings)
    return get_provider(kind, settings=s)


def answer(body: object, status: int = 200) -> Reply:
    return Reply(status, body if isinstance(body, bytes) else json.dumps(body).encode(),
                 headers=[('Content-Type', 'application/json')])


def no_key(*texts: object) -> None:
    for text in texts:
        assert leaks(str(text), KEY) == [], text


def no_beginning(*texts: object) -> None:
    """Not even the first SHORTEST_SECRET characters of the key (what a cut would leave), in any case."""
    for text in texts:
        assert KEY[:SHORTEST_SECRET].lower() not in str(text).lower(), text


def everything_of(result) -> str:
    """Every text of an ImageResult a window, the command line, the job log or a manifest shows or keeps."""
    return '\n'.join(map(str, (result.model, result.revised_prompt, result.text, result.image.mime, repr(result),
                               result.usage)))


def error_texts(e: ProviderError) -> str:
    return '\n'.join((str(e), repr(e), e.sentence, e.provider_message, e.details, e.human()))


# images {{{

OPENROUTER_CATALOGUE = {'data': [{'id': 'google/gemini-2.5-flash-image', 'name': 'Gemini 2.5 Flash Image',
                                  'architecture': {'output_modalities': ['image', 'text']}}]}
VENICE_LIST = {'data': [{'id': 'model-{echo}', 'type': 'image', 'created': 1700000000,
                         'model_spec': {'traits': ['default'], 'pricing': {'generation': {'usd': 0.01}}}}]}


def image_answers(name: str, echo: str) -> tuple[list[Reply], tuple[str, ...]]:
    """The replies of provider name's service, with echo in every text its answer has; and the
    fields of the ImageResult that must show it was there (redacted)."""
    said = f'Here is your cover, made with {echo}.'
    if name in ('openai', 'grok', 'openai_compatible'):
        return [answer({'created': 1, 'model': f'model-{echo}', 'data': [
            {'b64_json': B64, 'revised_prompt': said}]})], ('revised_prompt',)
    if name == 'openrouter':
        return [answer(OPENROUTER_CATALOGUE), answer({
            'id': f'gen-{echo}', 'model': f'model-{echo}', 'provider': echo, 'choices': [{
                'finish_reason': 'stop', 'message': {'role': 'assistant', 'content': said, 'images': [
                    {'type': 'image_url', 'image_url': {'url': 'data:image/png;base64,' + B64}}]}}],
            'usage': {'prompt_tokens': 9, 'completion_tokens': 12, 'cost': 0.04}})], ('model', 'text')
    if name == 'gemini':
        return [answer({'candidates': [{'content': {'parts': [{'text': said}, {'inlineData': {
            'mimeType': 'image/png', 'data': B64}}]}, 'finishReason': 'STOP'}], 'modelVersion': f'model-{echo}',
            'responseId': echo})], ('model', 'text')
    if name == 'imagen':
        return [answer({'predictions': [{'bytesBase64Encoded': B64, 'mimeType': 'image/png',
                                         'prompt': said}]})], ('revised_prompt',)
    assert name == 'venice'
    listed = json.loads(json.dumps(VENICE_LIST).replace('{echo}', json.dumps(echo)[1:-1]))
    return [answer(listed), answer({'id': f'generate-{echo}', 'images': [B64]})], ('model',)


IMAGE_PROVIDERS = ['openai', 'grok', 'openai_compatible', 'openrouter', 'gemini', 'imagen', 'venice']


@pytest.mark.parametrize('form', FORMS)
@pytest.mark.parametrize('name', IMAGE_PROVIDERS)
def test_an_image_answer_holds_no_key_in_any_field(name, form):
    replies, fields = image_answers(name, forms_of(KEY)[form])
    with ScriptedServer(replies) as server:
        result = provider(name, server.url).generate_image('A lighthouse in a storm')
    assert result.image.data == PICTURE  # the image itself as it came: only words are redacted
    no_key(everything_of(result))
    for field in fields:
        assert REDACTED in getattr(result, field), (field, getattr(result, field))


@pytest.mark.parametrize('name', ['openrouter', 'gemini'])
def test_words_cut_to_their_limit_leave_no_beginning_of_the_key(name):
    """A model's words are kept to 2,000 characters: a key across the cut, wherever it falls, is
    redacted whole before the cut, never left as its first characters."""
    for before in range(2000 - len(KEY), 2000 - 1):
        replies, _fields = image_answers(name, 'x')
        body = json.loads(replies[-1].body)
        words = 'w' * before + KEY + ' and more words after it.'
        if name == 'openrouter':
            body['choices'][0]['message']['content'] = words
        else:
            body['candidates'][0]['content']['parts'][0]['text'] = words
        replies[-1] = answer(body)
        with ScriptedServer(replies) as server:
            result = provider(name, server.url).generate_image('A lighthouse')
        no_key(everything_of(result))
        no_beginning(result.text)


@pytest.mark.parametrize('name', ['openrouter', 'gemini'])
def test_a_model_name_cut_in_a_sentence_leaves_no_beginning_of_the_key(name):
    """The sentence for an answer with no image names the model, cut to 100 characters."""
    for before in (80, 90, 95, 99):
        model = 'm' * before + KEY
        if name == 'openrouter':
            body = {'model': model, 'choices': [{'finish_reason': 'stop', 'message': {'content': 'No image.'}}]}
            replies = [answer(OPENROUTER_CATALOGUE), answer(body)]
        else:
            replies = [answer({'candidates': [{'content': {'parts': [{'text': 'No image.'}]},
                                               'finishReason': 'STOP'}], 'modelVersion': model})]
        with ScriptedServer(replies) as server:
            with pytest.raises(ProviderError) as e:
                provider(name, server.url).generate_image('A lighthouse')
        assert 'made no image' in str(e.value)
        no_key(error_texts(e.value))
        no_beginning(error_texts(e.value))


@pytest.mark.parametrize('form', ['raw', 'lower', 'percent-every-byte', 'json-u', 'html-hex', 'hex', 'base64'])
@pytest.mark.parametrize('name', IMAGE_PROVIDERS)
def test_an_image_error_holds_no_key(name, form):
    echo = forms_of(KEY)[form]
    replies = [answer({'error': {'message': f'Incorrect API key provided: {echo}', 'code': 401,
                                 'status': 'UNAUTHENTICATED', 'type': 'invalid_request_error'}}, 401)]
    if name == 'openrouter':
        replies.insert(0, answer(OPENROUTER_CATALOGUE))
    if name == 'venice':  # its list of image models first: the same refusal
        replies.append(replies[0])
    with ScriptedServer(replies) as server:
        with pytest.raises(ProviderError) as e:
            provider(name, server.url, image_model=IMAGE_MODELS[name] or 'v').generate_image('A lighthouse')
    assert REDACTED in str(e.value)
    no_key(error_texts(e.value))

# }}}


# model lists {{{

def model_list(name: str, echo: str) -> dict:
    """A model list in provider name's shape, with echo in every text of its one model."""
    if name == 'openrouter':
        return {'data': [{'id': f'vendor/model-{echo}', 'name': f'Model {echo}', 'created': 1700000000,
                          'description': f'The best, ask {echo}.', 'context_length': 1000,
                          'pricing': {'prompt': '0.000001', 'completion': '0.000002', echo: '0.5'},
                          'architecture': {'input_modalities': ['text', echo], 'output_modalities': [echo]},
                          'supported_parameters': [echo]}]}
    if name == 'gemini':
        return {'models': [{'name': f'models/model-{echo}', 'displayName': f'Model {echo}',
                            'description': echo, 'supportedGenerationMethods': ['generateContent']}]}
    if name == 'ollama':
        return {'models': [{'model': f'model-{echo}', 'name': f'model-{echo}'}]}
    if name == 'venice':
        return {'data': [{'id': f'model-{echo}', 'type': 'text', 'model_spec': {
            'name': f'Model {echo}', 'traits': [echo], 'pricing': {'input': {'usd': 1}, 'output': {'usd': 2}}}}]}
    return {'data': [{'id': f'model-{echo}', 'display_name': f'Model {echo}', 'name': f'Model {echo}'}]}


@pytest.mark.parametrize('form', FORMS)
@pytest.mark.parametrize('name', ['openai_compatible', 'openrouter', 'anthropic', 'gemini', 'ollama', 'venice'])
def test_a_model_list_holds_no_key_in_any_field_nor_in_its_cache(name, form):
    listing = model_list(name, forms_of(KEY)[form])
    settings = {'headers': [('Authorization', 'Bearer ' + KEY)]} if name == 'ollama' else {}
    with ScriptedServer([answer(listing)]) as server:
        p = provider(name, server.url, model='', **settings)
        models = p.models(refresh=True)
        cached_models = provider(name, server.url, model='', **settings).models()  # from the cache
    assert len(models) == 1 and REDACTED in models[0].id
    no_key(repr(models), repr(cached_models))
    with open(p.model_list.cache_path(), encoding='utf-8') as f:
        no_key(f.read())


def test_a_description_cut_to_its_limit_leaves_no_beginning_of_the_key():
    most = limits.MAX_MODEL_DESCRIPTION_CHARS
    for tail in ('', 'd' * 70000):  # the whole read at once, and one too long to be looked at whole
        for before in (most - 12, most - 7, most - SHORTEST_SECRET):
            listing = model_list('openrouter', 'x')
            listing['data'][0]['description'] = 'd' * before + KEY + tail
            with ScriptedServer([answer(listing)]) as server:
                p = provider('openrouter', server.url, model='')
                models = p.models(refresh=True)
            no_beginning(models[0].description)
            with open(p.model_list.cache_path(), encoding='utf-8') as f:
                no_beginning(f.read())

# }}}


# a chat stream's fields {{{

WIRES = ('openai_compatible', 'openrouter', 'openai', 'anthropic', 'gemini', 'ollama')


def stream(wire: str, echo: str) -> Reply:
    """An answer of that wire format with echo as its model, its id, its finish reason and in its
    web links (where the format has them)."""
    if wire == 'ollama':
        objs = [{'model': f'model-{echo}', 'message': {'content': 'Fine.'}},
                {'model': f'model-{echo}', 'done': True, 'done_reason': echo}]
        return Reply(200, chunks=[json.dumps(o).encode() + b'\n' for o in objs],
                     headers=[('Content-Type', 'application/x-ndjson')])
    if wire in ('openai_compatible', 'openrouter'):
        objs = [{'id': echo, 'model': f'model-{echo}', 'choices': [{'delta': {'content': 'Fine.'}}]},
                {'id': echo, 'model': f'model-{echo}', 'choices': [{'delta': {}, 'finish_reason': echo}]}]
        events = [*map(json.dumps, objs), '[DONE]']
    elif wire == 'openai':
        link = {'type': 'url_citation', 'title': f'Page {echo}', 'url': f'https://example.com/{echo}'}
        objs = [{'type': 'response.created', 'response': {'model': f'model-{echo}', 'id': echo}},
                {'type': 'response.output_text.delta', 'delta': 'Fine.'},
                {'type': 'response.output_text.annotation.added', 'annotation': link},
                {'type': 'response.completed', 'response': {'model': f'model-{echo}', 'id': echo,
                                                            'status': 'incomplete',
                                                            'incomplete_details': {'reason': echo}}}]
        events = list(map(json.dumps, objs))
    elif wire == 'anthropic':
        objs = [{'type': 'message_start', 'message': {'model': f'model-{echo}', 'id': echo}},
                {'type': 'content_block_start', 'index': 0, 'content_block': {'type': 'text'}},
                {'type': 'content_block_delta', 'index': 0, 'delta': {'type': 'text_delta', 'text': 'Fine.'}},
                {'type': 'content_block_delta', 'index': 0, 'delta': {'type': 'citations_delta', 'citation': {
                    'title': f'Page {echo}', 'url': f'https://example.com/{echo}'}}},
                {'type': 'message_delta', 'delta': {'stop_reason': echo}}, {'type': 'message_stop'}]
        events = list(map(json.dumps, objs))
    else:
        objs = [{'modelVersion': f'model-{echo}', 'responseId': echo,
                 'candidates': [{'content': {'parts': [{'text': 'Fine.'}]}}]},
                {'candidates': [{'groundingMetadata': {'groundingChunks': [
                    {'web': {'title': f'Page {echo}', 'uri': f'https://example.com/{echo}'}}]}}]},
                {'modelVersion': f'model-{echo}', 'responseId': echo,
                 'candidates': [{'content': {'parts': []}, 'finishReason': 'STOP'}]}]
        events = list(map(json.dumps, objs))
    return Reply(200, chunks=sse(*events), headers=[('Content-Type', 'text/event-stream')])


def chat_settings(wire: str) -> dict:
    return {'headers': [('Authorization', 'Bearer ' + KEY)]} if wire == 'ollama' else {}


@pytest.mark.parametrize('form', FORMS)
@pytest.mark.parametrize('wire', WIRES)
def test_a_streams_model_id_finish_reason_and_links_hold_no_key(wire, form):
    with ScriptedServer([stream(wire, forms_of(KEY)[form])]) as server:
        chunks = list(provider(wire, server.url, **chat_settings(wire)).text_chat([Message(Role.USER, 'Hi?')]))
    answer_ = Answer()
    for c in chunks:
        answer_.add(c)
    done = chunks[-1]
    assert isinstance(done, Done), chunks[-1]
    assert answer_.text == 'Fine.' and REDACTED in done.model
    no_key(repr(done), done.model, done.finish_reason, done.response_id, json.dumps(
        [[w.title, w.url] for w in done.web_links]), repr(done.usage))
    if wire in ('openai', 'anthropic', 'gemini'):
        assert done.web_links and REDACTED in done.web_links[0].title


def test_an_event_that_is_not_json_quoted_in_an_error_leaves_no_beginning_of_the_key():
    for before in range(500 - len(KEY), 500 - SHORTEST_SECRET + 1):
        body = [b'data: ' + ('{' * 1 + 'x' * (before - 1) + KEY + ' not json').encode() + b'\n\n']
        with ScriptedServer([Reply(200, chunks=body, headers=[('Content-Type', 'text/event-stream')])]) as server:
            chunks = list(provider('openai_compatible', server.url).text_chat([Message(Role.USER, 'Hi?')]))
        failed = chunks[-1]
        assert isinstance(failed, Failed) and 'not a valid answer stream' in failed.message
        no_key(error_texts(failed.error))
        no_beginning(error_texts(failed.error))

# }}}


# errors {{{

@pytest.mark.parametrize('form', FORMS)
@pytest.mark.parametrize('wire', WIRES)
def test_an_http_error_in_json_holds_no_key(wire, form):
    echo = forms_of(KEY)[form]
    body = {'error': {'message': f'Incorrect API key provided: {echo}. You sent Authorization: {echo}',
                      'type': 'invalid_request_error', 'code': echo}}
    with ScriptedServer([answer(body, 401)]) as server:
        chunks = list(provider(wire, server.url, **chat_settings(wire)).text_chat([Message(Role.USER, 'Hi?')]))
    failed = chunks[-1]
    assert isinstance(failed, Failed) and REDACTED in failed.message
    no_key(error_texts(failed.error), failed.message)


@pytest.mark.parametrize('form', ['raw', 'lower', 'bearer-lower', 'html-decimal', 'html-hex', 'html-named',
                                  'html-of-url', 'percent-every-byte', 'json-u'])
def test_an_html_error_page_holds_no_key(form):
    page = (f'<html><head><title>401</title></head><body><h1>Unauthorized</h1><p>The key '
            f'{forms_of(KEY)[form]} is not valid.</p></body></html>').encode()
    with ScriptedServer([Reply(401, page, headers=[('Content-Type', 'text/html')])]) as server:
        chunks = list(provider('openai_compatible', server.url).text_chat([Message(Role.USER, 'Hi?')]))
    failed = chunks[-1]
    assert isinstance(failed, Failed) and 'Unauthorized' in failed.message and REDACTED in failed.message
    no_key(error_texts(failed.error), failed.message)


@pytest.mark.parametrize('form', ['lower', 'upper', 'percent-twice', 'json-u-upper', 'html-hex-upper', 'hex-upper'])
def test_test_connection_holds_no_key(form):
    echo = forms_of(KEY)[form]
    listing = {'data': [{'id': f'model-{echo}'}]}
    with ScriptedServer([answer(listing), stream('openai_compatible', echo)]) as server:
        ok, sentence = provider('openai_compatible', server.url, model='').test_connection()
    assert ok and REDACTED in sentence, sentence
    no_key(sentence)

# }}}
