# License: GPLv3 Copyright: the Book AI developers
"""No secret leaves through any field, against the real peers that can be made to echo one:
llama.cpp's llama-server run with --api-key and an --alias that holds the key in one of its forms
(the alias is what it names its model in every answer and in its model list: OpenAI's chat and
Responses, Anthropic's Messages), and aimock, whose fixtures make a service answer with the key
in its words, its reasoning, its model's name and its errors, in every wire format it speaks
(OpenAI chat and Responses, Anthropic, Gemini, Ollama) and in its images API's revised prompt.
helpers.secret_forms spells the forms; the scripted servers of test_secrets_in_answers.py cover
what no peer does."""

import json
from pathlib import Path

import pytest

from calibre_plugins.bookai.core.errors import REDACTED
from calibre_plugins.bookai.core.messages import Answer, Message, Role
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.images import b64, png
from helpers.peers import AiMock, LlamaServer
from helpers.secret_forms import forms_of, leaks

KEY = 'sk-peer-3e8d1c6b9a2f7e4d0c5b'
QUESTION = [Message(Role.USER, 'Name a colour.')]


def everything_said(chunks) -> str:
    """Every text of an answer that a window, the command line or the History shows or keeps."""
    answer = Answer()
    for c in chunks:
        answer.add(c)
    out = [answer.text, answer.reasoning, repr(chunks)]
    if answer.failed is not None:
        e = answer.failed.error
        out += [answer.failed.message, str(e), repr(e), getattr(e, 'details', ''), getattr(e, 'provider_message', '')]
    return '\n'.join(map(str, out))


def no_key(text: str) -> None:
    assert leaks(text, KEY) == [], text


# llama-server {{{

LLAMA_WIRES = {'openai_compatible': '/v1', 'openai': '/v1', 'anthropic': '/v1'}


@pytest.mark.parametrize('form', ['raw', 'upper', 'percent-every-byte', 'hex'])
def test_llama_server_naming_its_model_with_the_key(form):
    alias = f'model-{forms_of(KEY)[form]}'
    with LlamaServer('tiny', api_key=KEY, alias=alias) as server:
        for wire, base in LLAMA_WIRES.items():
            p = get_provider(wire, settings={'base_url': server.base_url + base, 'api_key': KEY, 'model': alias})
            chunks = list(p.text_chat(QUESTION, max_tokens=4))
            answer = Answer()
            for c in chunks:
                answer.add(c)
            assert answer.failed is None, (wire, answer.failed.message)
            assert answer.done.model == f'model-{REDACTED}', (wire, answer.done.model)
            no_key(everything_said(chunks))
        p = get_provider('openai_compatible', settings={'base_url': server.base_url + '/v1', 'api_key': KEY})
        models = p.models(refresh=True)
        assert [m.id for m in models] == [f'model-{REDACTED}']
        no_key(repr(models))
        with open(p.model_list.cache_path(), encoding='utf-8') as f:
            no_key(f.read())
        ok, sentence = p.test_connection()
        assert ok and REDACTED in sentence, sentence
        no_key(sentence)
        # a wrong key: llama-server's own 401, with nothing of either key in it
        wrong = get_provider('openai_compatible', settings={'base_url': server.base_url + '/v1', 'model': alias,
                                                            'api_key': KEY.upper()[::-1]})
        chunks = list(wrong.text_chat(QUESTION, max_tokens=4))
        assert 'refused the API key' in everything_said(chunks)
        no_key(everything_said(chunks))

# }}}


# aimock {{{

AIMOCK_WIRES = {'openai_compatible': ('/v1', 'test-model'), 'openai': ('/v1', 'gpt-5-mini'),
                'anthropic': ('/v1', 'claude-sonnet-4-5'), 'gemini': ('/v1beta', 'gemini-2.5-flash'),
                'ollama': ('', 'llama3.2')}
FORMS = ['raw', 'lower', 'bearer-lower', 'percent-dash', 'percent-every-byte-lower', 'json-u', 'html-decimal',
         'html-named', 'hex-upper', 'base64', 'base64-bearer']


def fixtures() -> list[dict]:
    """For each form: an answer with the key in its words, its reasoning and its model's name; an
    error with the key in its message; a listed model named with it; an image with it in the
    revised prompt."""
    found = []
    for form in FORMS:
        echo = forms_of(KEY)[form]
        found += [
            {'match': {'userMessage': f'echo {form}.'}, 'response': {
                'content': f'Your key is {echo}, noted.', 'reasoning': f'They sent {echo}.',
                'model': f'model-{echo}'}, 'chunkSize': 7},
            {'match': {'userMessage': f'refuse {form}.'}, 'response': {'error': {
                'message': f'Incorrect API key provided: {echo}', 'type': 'invalid_request_error',
                'code': 'invalid_api_key'}, 'status': 401}},
            {'match': {'userMessage': f'cover {form}.', 'endpoint': 'image'}, 'response': {'image': {
                'b64Json': b64(png(6, 9)), 'revisedPrompt': f'A cover, as {echo} asked.'}}},
        ]
    found.append({'match': {'model': f'model-{KEY}', 'userMessage': 'never asked'}, 'response': {'content': 'x'}})
    return found


@pytest.fixture(scope='module')
def mock(tmp_path_factory):
    path = Path(tmp_path_factory.mktemp('aimock-secrets')) / 'secrets.json'
    path.write_text(json.dumps({'fixtures': fixtures()}))
    with AiMock(path) as m:
        yield m


def aimock_provider(wire: str, mock: AiMock, **settings):
    base, model = AIMOCK_WIRES.get(wire, ('/v1', 'gpt-image-1'))
    s = {'base_url': mock.base_url + base, 'model': model, 'image_model': 'gpt-image-1'}
    if wire == 'ollama':
        s['headers'] = [('Authorization', 'Bearer ' + KEY)]
    else:
        s['api_key'] = KEY
    s.update(settings)
    return get_provider(wire, settings=s)


@pytest.mark.parametrize('form', FORMS)
@pytest.mark.parametrize('wire', list(AIMOCK_WIRES))
def test_aimock_echoing_the_key_in_its_answer_and_its_errors(mock, wire, form):
    p = aimock_provider(wire, mock)
    chunks = list(p.text_chat([Message(Role.USER, f'echo {form}.')]))
    answer = Answer()
    for c in chunks:
        answer.add(c)
    assert answer.failed is None, answer.failed.message
    assert answer.text.startswith('Your key is ') and answer.text.endswith(', noted.') and REDACTED in answer.text
    no_key(everything_said(chunks))
    chunks = list(p.text_chat([Message(Role.USER, f'refuse {form}.')]))
    said = everything_said(chunks)
    assert 'refused the API key' in said and REDACTED in said, said
    no_key(said)


def test_aimock_lists_a_model_named_with_the_key(mock):
    p = aimock_provider('openai_compatible', mock, model='')
    models = p.models(refresh=True)
    assert f'model-{REDACTED}' in [m.id for m in models]
    no_key(repr(models))


@pytest.mark.parametrize('form', FORMS)
@pytest.mark.parametrize('name', ['openai', 'openai_compatible', 'grok'])
def test_aimock_images_revised_prompt_holds_no_key(mock, name, form):
    p = aimock_provider(name, mock)
    result = p.generate_image(f'cover {form}.')
    assert result.image.width == 6 and REDACTED in result.revised_prompt, result.revised_prompt
    no_key('\n'.join((result.model, result.revised_prompt, result.text, repr(result))))

# }}}
