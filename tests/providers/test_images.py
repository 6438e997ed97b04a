# License: GPLv3 Copyright: the Book AI developers
"""Image generation and editing, each provider's wire format as its service documents it:
the request sent (route, headers, body; multipart/form-data for OpenAI's edits) and the
answer read (the image's bytes, usage, cost), with answers shaped exactly as the
documentation shows them, replayed by a scripted server. Then every way it can go wrong, in
words and without the API key: a safety refusal of the prompt or of the image, no credit,
too many requests, a model that answers with no image, a timeout, a huge or non-image body,
a data: URL that is not base64, an image over the largest side, an address instead of an
image. aimock's own image routes and the official SDKs are in test_images_peers.py."""

import base64
import email.parser
import email.policy
import json
import struct

import pytest

from calibre_plugins.bookai.core import errors, limits
from calibre_plugins.bookai.core.images import Image, NoImageMade, NotAnImage, image_from_bytes
from calibre_plugins.bookai.providers import pricing
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.registry import get_provider, image_provider_names
from helpers.images import png
from helpers.scripted_server import LoopbackListener, Reply, ScriptedServer

KEY = 'sk-img-Q7xW2-distinctive-9f8e7d6c'  # must never be in any error
BASES = {'openai': '/v1', 'openai_compatible': '/v1', 'grok': '/v1', 'openrouter': '/api/v1', 'gemini': '/v1beta'}
MODELS = {'openai': 'gpt-image-1', 'openai_compatible': 'sd-turbo', 'grok': 'grok-imagine-image',
          'openrouter': 'google/gemini-2.5-flash-image', 'gemini': 'gemini-2.5-flash-image',
          'imagen': 'imagen-4.0-generate-001'}


PICTURE = png(8, 12)
B64 = base64.b64encode(PICTURE).decode()
SOURCE = image_from_bytes(png(2, 3), 'test')


def provider(name: str, url: str, **settings):
    kind = 'gemini' if name == 'imagen' else name
    s = {'base_url': url + BASES[kind], 'api_key': KEY, 'image_model': MODELS[name]}
    s.update(settings)
    return get_provider(kind, settings=s)


def answer(body: object, status: int = 200, headers: tuple = ()) -> Reply:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return Reply(status, data, headers=[('Content-Type', 'application/json')] + list(headers))


# OpenRouter's catalogue of image models (/models?output_modalities=image), as it lists them
OPENROUTER_IMAGE_MODELS = {'data': [
    {'id': 'google/gemini-2.5-flash-image', 'name': 'Google: Gemini 2.5 Flash Image', 'created': 1759000000,
     'architecture': {'modality': 'text+image->text+image', 'input_modalities': ['image', 'text'],
                      'output_modalities': ['image', 'text']},
     'pricing': {'prompt': '0.0000003', 'completion': '0.0000025', 'image': '0.001238'}},
    {'id': 'black-forest-labs/flux.2-pro', 'name': 'Black Forest Labs: FLUX.2 Pro', 'created': 1764000000,
     'architecture': {'modality': 'text+image->image', 'input_modalities': ['text', 'image'],
                      'output_modalities': ['image']},
     'pricing': {'prompt': '0', 'completion': '0', 'image': '0.03'}}]}


def with_catalogue(name: str, replies: list) -> list:
    """replies, after OpenRouter's catalogue of image models, which it asks for first."""
    return ([answer(OPENROUTER_IMAGE_MODELS)] if name == 'openrouter' else []) + list(replies)


def generate(name: str, replies: list, aspect: str = '2:3', source: Image | None = None, **settings):
    """(result, what the server got: the image's request first) for one image asked of provider
    name from a scripted server."""
    with ScriptedServer(with_catalogue(name, replies)) as server:
        result = provider(name, server.url, **settings).generate_image('A lighthouse in a storm', aspect, source)
        return result, server.received[1:] if name == 'openrouter' else server.received


def failure(name: str, replies: list, source: Image | None = None, **settings) -> errors.ProviderError:
    """The error provider name raises for the scripted replies; checked to hold no key anywhere."""
    with ScriptedServer(with_catalogue(name, replies)) as server:
        with pytest.raises(errors.ProviderError) as e:
            provider(name, server.url, **settings).generate_image('A lighthouse in a storm', '2:3', source)
    error = e.value
    for text in (str(error), error.sentence, error.provider_message, error.details, repr(error.args)):
        assert KEY not in (text or '') and KEY[7:20] not in (text or ''), text
    assert str(error) and str(error).isprintable(), str(error)  # one line, no control character of the peer's
    return error


def sent_json(received: list, i: int = 0) -> dict:
    return json.loads(received[i]['body'])


# the answers as each service's documentation shows them

def openai_answer(b64: str = B64, **extra) -> dict:  # platform.openai.com/docs/api-reference/images/object
    return {'created': 1713833628, 'data': [dict(b64_json=b64, **extra)], 'background': 'opaque',
            'output_format': 'png', 'quality': 'high', 'size': '1024x1536',
            'usage': {'total_tokens': 4230, 'input_tokens': 70, 'output_tokens': 4160,
                      'input_tokens_details': {'text_tokens': 50, 'image_tokens': 20}}}


def gemini_answer(parts: list, finish: str = 'STOP', **extra) -> dict:  # ai.google.dev/gemini-api/docs/image-generation
    return dict({'candidates': [{'content': {'parts': parts, 'role': 'model'}, 'finishReason': finish, 'index': 0}],
                 'usageMetadata': {'promptTokenCount': 11, 'candidatesTokenCount': 1290, 'totalTokenCount': 1301,
                                   'promptTokensDetails': [{'modality': 'TEXT', 'tokenCount': 11}]},
                 'modelVersion': 'gemini-2.5-flash-image', 'responseId': 'abc'}, **extra)


def openrouter_answer(url: str, content: str = "Here's your cover.", **extra) -> dict:  # openrouter.ai/docs
    return dict({'id': 'gen-1', 'provider': 'Google', 'model': 'google/gemini-2.5-flash-image',
                 'object': 'chat.completion', 'created': 1, 'choices': [{
                     'index': 0, 'finish_reason': 'stop', 'native_finish_reason': 'STOP', 'message': {
                         'role': 'assistant', 'content': content,
                         'images': [{'type': 'image_url', 'image_url': {'url': url}, 'index': 0}]}}],
                 'usage': {'prompt_tokens': 9, 'completion_tokens': 1299, 'total_tokens': 1308, 'cost': 0.0387}},
                **extra)


# which providers can do what

def test_capabilities_and_the_settings_that_offer_images():
    names = dict(image_provider_names())
    assert set(names) == {'openai', 'openai_compatible', 'grok', 'openrouter', 'gemini', 'venice'}
    editing = {n for n in names if get_provider(n, settings={}).capabilities & Capability.IMAGE_EDITING}
    assert not get_provider('lmstudio', settings={}).capabilities & Capability.IMAGE_GENERATION
    assert editing == {'openai', 'grok', 'openrouter', 'gemini'}
    for name in names:
        assert 'image_model' in {o.name for o in get_provider(name, settings={}).all_options()}
    assert 'image_model' not in {o.name for o in get_provider('anthropic', settings={}).all_options()}
    with pytest.raises(errors.NotConfigured) as e:
        get_provider('anthropic', settings={'api_key': KEY}).generate_image('x')
    assert str(e.value) == 'Anthropic cannot make images.'


def test_a_provider_that_cannot_edit_says_so_before_sending_anything():
    with ScriptedServer([]) as server:
        with pytest.raises(errors.NotConfigured) as e:
            provider('openai_compatible', server.url).generate_image('x', source=SOURCE)
        assert server.received == []
    assert str(e.value) == 'OpenAI compatible cannot change an image it is given.'


# OpenAI

@pytest.mark.parametrize('aspect, size', [('2:3', '1024x1536'), ('3:4', '1024x1536'), ('9:16', '1024x1536'),
                                          ('1:1', '1024x1024'), ('4:3', '1536x1024')])
def test_openai_generation(aspect, size):
    result, got = generate('openai', [answer(openai_answer())], aspect)
    assert got[0]['path'] == '/v1/images/generations'
    assert got[0]['headers']['Authorization'] == f'Bearer {KEY}'
    assert sent_json(got) == {'model': 'gpt-image-1', 'prompt': 'A lighthouse in a storm', 'size': size, 'n': 1}
    image = result.image
    assert (image.data, image.mime, image.width, image.height) == (PICTURE, 'image/png', 8, 12)
    assert (result.model, result.usage.input_tokens, result.usage.output_tokens) == ('gpt-image-1', 70, 4160)
    assert result.usage.cost.amount == pytest.approx((50 * 5 + 20 * 10 + 4160 * 40) / 1e6)
    assert (result.usage.cost.source, result.usage.cost.price_date) == ('estimated', pricing.PRICE_DATE)


def test_openai_quality_and_dall_e():
    _r, got = generate('openai', [answer(openai_answer())], '1:1', image_quality='low')
    assert sent_json(got)['quality'] == 'low'
    revised = {'created': 1, 'data': [{'b64_json': B64, 'revised_prompt': 'A tall lighthouse, waves'}]}
    result, got = generate('openai', [answer(revised)], '2:3', image_model='dall-e-3')
    assert sent_json(got) == {'model': 'dall-e-3', 'prompt': 'A lighthouse in a storm', 'size': '1024x1792', 'n': 1,
                              'response_format': 'b64_json'}
    assert result.revised_prompt == 'A tall lighthouse, waves' and result.usage.cost is None  # not priced: unknown


def test_openai_edit_is_multipart_with_the_image():
    result, got = generate('openai', [answer(openai_answer())], '2:3', SOURCE, image_quality='high')
    assert got[0]['path'] == '/v1/images/edits'
    content_type = got[0]['headers']['Content-Type']
    assert content_type.startswith('multipart/form-data; boundary=')
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b'Content-Type: ' + content_type.encode() + b'\r\n\r\n' + got[0]['body'])
    parts = {p.get_param('name', header='content-disposition'): p for p in message.iter_parts()}
    assert {k: parts[k].get_payload(decode=True).decode() for k in ('model', 'prompt', 'size', 'n', 'quality')} == {
        'model': 'gpt-image-1', 'prompt': 'A lighthouse in a storm', 'size': '1024x1536', 'n': '1', 'quality': 'high'}
    assert parts['image[]'].get_payload(decode=True) == SOURCE.data
    assert (parts['image[]'].get_content_type(), parts['image[]'].get_filename()) == ('image/png', 'image.png')
    assert got[0]['headers']['Authorization'] == f'Bearer {KEY}'
    assert result.image.data == PICTURE


# any OpenAI-compatible server (LocalAI, stable-diffusion.cpp's server)

@pytest.mark.parametrize('aspect, size', [('2:3', '512x768'), ('3:4', '576x768'), ('1:1', '512x512'),
                                          ('9:16', '448x768'), ('4:3', '768x576')])
def test_compatible_server_generation(aspect, size):
    result, got = generate('openai_compatible', [answer({'created': 1, 'data': [{'b64_json': B64}]})], aspect,
                           image_model='')
    assert got[0]['path'] == '/v1/images/generations'
    assert sent_json(got) == {'prompt': 'A lighthouse in a storm', 'n': 1, 'size': size, 'response_format': 'b64_json'}
    assert result.image.data == PICTURE and result.usage.cost is None  # a local server: no price, never "free"
    _r, got = generate('openai_compatible', [answer({'created': 1, 'data': [{'b64_json': B64}]})], aspect)
    assert sent_json(got)['model'] == 'sd-turbo'


def test_compatible_server_address_on_its_own_host_is_fetched():
    with ScriptedServer([]) as server:
        server.replies += [answer({'created': 1, 'data': [{'url': server.url + '/generated/abc.png'}]}),
                           Reply(200, PICTURE, headers=[('Content-Type', 'image/png')])]
        result = provider('openai_compatible', server.url).generate_image('x')
        assert [r['path'] for r in server.received] == ['/v1/images/generations', '/generated/abc.png']
        assert server.received[1]['headers']['Authorization'] == f'Bearer {KEY}'
    assert result.image.data == PICTURE


@pytest.mark.parametrize('where', ['http://198.51.100.7/abc.png', 'https://127.0.0.1:{port}/abc.png',
                                   'http://127.0.0.1:1/abc.png', 'file:///etc/passwd', 'abc.png', 42])
def test_an_address_elsewhere_is_not_fetched(where):
    with ScriptedServer([]) as server:
        url = where.format(port=server.address[1]) if isinstance(where, str) else where
        server.replies.append(answer({'created': 1, 'data': [{'url': url}]}))
        with pytest.raises(errors.ProtocolError) as e:
            provider('openai_compatible', server.url).generate_image('x')
        assert len(server.received) == 1
    assert str(e.value).startswith('OpenAI compatible sent the address of the image on another server instead of '
                                   'the image itself.')


# xAI

def test_grok_generation_and_reported_cost():
    result, got = generate('grok', [answer({'data': [{'b64_json': B64, 'mime_type': 'image/png', 'revised_prompt': ''}],
                                            'usage': {'cost_in_usd_ticks': 200000000}})], '2:3')
    assert got[0]['path'] == '/v1/images/generations'
    assert sent_json(got) == {'model': 'grok-imagine-image', 'prompt': 'A lighthouse in a storm', 'n': 1,
                              'response_format': 'b64_json', 'aspect_ratio': '2:3', 'resolution': '1k'}
    assert result.image.data == PICTURE
    assert (result.usage.cost.amount, result.usage.cost.source) == (0.02, 'reported')
    result, _got = generate('grok', [answer({'data': [{'b64_json': B64}]})])
    assert (result.usage.cost.amount, result.usage.cost.source) == (0.02, 'estimated')  # from the price table


def test_grok_edit_is_json_with_a_data_url():
    result, got = generate('grok', [answer({'data': [{'b64_json': B64, 'mime_type': 'image/png'}]})], '2:3', SOURCE)
    assert got[0]['path'] == '/v1/images/edits'
    assert got[0]['headers']['Content-Type'] == 'application/json'
    assert sent_json(got) == {'model': 'grok-imagine-image', 'prompt': 'A lighthouse in a storm', 'n': 1,
                              'response_format': 'b64_json',
                              'image': {'url': 'data:image/png;base64,' + base64.b64encode(SOURCE.data).decode(),
                                        'type': 'image_url'}}
    assert result.image.data == PICTURE


# Google: Imagen and Gemini

@pytest.mark.parametrize('aspect, sent', [('2:3', '3:4'), ('3:4', '3:4'), ('1:1', '1:1'), ('9:16', '9:16'),
                                          ('4:3', '4:3')])
def test_imagen_predict(aspect, sent):
    result, got = generate('imagen', [answer({'predictions': [{'bytesBase64Encoded': B64, 'mimeType': 'image/png'}]})],
                           aspect)
    assert got[0]['path'] == '/v1beta/models/imagen-4.0-generate-001:predict'
    assert got[0]['headers']['x-goog-api-key'] == KEY and 'Authorization' not in got[0]['headers']
    assert sent_json(got) == {'instances': [{'prompt': 'A lighthouse in a storm'}],
                              'parameters': {'sampleCount': 1, 'aspectRatio': sent}}
    assert result.image.data == PICTURE
    assert (result.usage.cost.amount, result.usage.cost.source) == (0.04, 'estimated')


def test_imagen_cannot_edit_and_says_which_model_can():
    with ScriptedServer([]) as server:
        with pytest.raises(errors.NotConfigured) as e:
            provider('imagen', server.url).generate_image('x', source=SOURCE)
        assert server.received == []
    assert 'imagen-4.0-generate-001' in str(e.value) and 'gemini-2.5-flash-image' in str(e.value)


def test_imagen_filtered_or_empty():
    e = failure('imagen', [answer({'predictions': [{'raiFilteredReason': "Your current safety filter threshold "
                                                    "filtered out the image.\x1b[2J"}]})])
    assert isinstance(e, errors.ResultBlocked)
    assert str(e) == ('Google filtered the image out for safety. The service said: Your current safety filter '
                      'threshold filtered out the image.\\x1b[2J')
    e = failure('imagen', [answer({})])
    assert isinstance(e, NoImageMade)
    assert str(e) == ("Google Gemini's model imagen-4.0-generate-001 made no image. Google sent no reason; its "
                      "safety filter may have removed the image.")


def test_gemini_image_generation():
    result, got = generate('gemini', [answer(gemini_answer([
        {'text': 'thinking about waves', 'thought': True},
        {'inlineData': {'mimeType': 'image/png', 'data': base64.b64encode(png(1, 1)).decode()}, 'thought': True},
        {'text': 'Here is a lighthouse.'}, {'inlineData': {'mimeType': 'image/png', 'data': B64}}]))], '2:3')
    assert got[0]['path'] == '/v1beta/models/gemini-2.5-flash-image:generateContent'
    assert got[0]['headers']['x-goog-api-key'] == KEY
    assert sent_json(got) == {'contents': [{'role': 'user', 'parts': [{'text': 'A lighthouse in a storm'}]}],
                              'generationConfig': {'responseModalities': ['TEXT', 'IMAGE'],
                                                   'imageConfig': {'aspectRatio': '2:3'}}}
    assert result.image.data == PICTURE and result.text == 'Here is a lighthouse.'  # not the draft, not the thought
    assert (result.usage.input_tokens, result.usage.output_tokens) == (11, 1290)
    assert result.usage.cost.amount == pytest.approx((11 * 0.30 + 1290 * 30) / 1e6)


def test_gemini_image_edit_sends_the_image_inline():
    result, got = generate('gemini', [answer(gemini_answer([{'inlineData': {'mimeType': 'image/png', 'data': B64}}]))],
                           '3:4', SOURCE)
    parts = sent_json(got)['contents'][0]['parts']
    assert parts == [{'text': 'A lighthouse in a storm'},
                     {'inlineData': {'mimeType': 'image/png', 'data': base64.b64encode(SOURCE.data).decode()}}]
    assert result.image.data == PICTURE


def test_gemini_refusals_say_why():
    e = failure('gemini', [answer({'promptFeedback': {'blockReason': 'PROHIBITED_CONTENT'},
                                   'usageMetadata': {'promptTokenCount': 5}})])
    assert isinstance(e, errors.PromptBlocked) and str(e) == 'Google refused to make the image (prohibited content).'
    e = failure('gemini', [answer(gemini_answer([], 'IMAGE_SAFETY', ) | {'candidates': [{
        'finishReason': 'IMAGE_SAFETY', 'finishMessage': 'The image may violate our policies.', 'index': 0}]})])
    assert isinstance(e, errors.ResultBlocked)
    assert str(e) == 'Google stopped the image (image safety). The service said: The image may violate our policies.'
    e = failure('gemini', [answer(gemini_answer([{'text': 'I cannot draw that.'}], 'PROHIBITED_CONTENT'))])
    assert isinstance(e, errors.ResultBlocked) and 'prohibited content' in str(e)


def test_gemini_text_only_answer_is_no_image_in_words():
    e = failure('gemini', [answer(gemini_answer([{'text': 'I am a text model.\x07 Try an image model.'}]))],
                image_model='gemini-2.5-flash')
    assert isinstance(e, NoImageMade)
    assert str(e) == ("Google Gemini's model gemini-2.5-flash-image made no image. The service said: I am a text "
                      "model.\\x07 Try an image model.")  # the model as the answer names it
    e = failure('gemini', [answer({'candidates': [{'content': {'parts': [{'text': 'No.'}]},
                                                    'finishReason': 'NO_IMAGE'}]})])
    assert isinstance(e, NoImageMade) and 'Google said why: no image.' in str(e)


# OpenRouter

def test_openrouter_generation_and_reported_cost():
    result, got = generate('openrouter', [answer(openrouter_answer('data:image/png;base64,' + B64))], '9:16')
    assert got[0]['path'] == '/api/v1/chat/completions'
    assert got[0]['headers']['Authorization'] == f'Bearer {KEY}'
    assert sent_json(got) == {'model': 'google/gemini-2.5-flash-image',
                              'messages': [{'role': 'user', 'content': 'A lighthouse in a storm'}], 'stream': False,
                              'modalities': ['image', 'text'], 'image_config': {'aspect_ratio': '9:16'},
                              'usage': {'include': True}, 'provider': {'data_collection': 'deny'}}
    assert result.image.data == PICTURE and result.text == "Here's your cover."
    assert (result.usage.cost.amount, result.usage.cost.source) == (0.0387, 'reported')
    assert (result.usage.input_tokens, result.usage.output_tokens) == (9, 1299)


def test_openrouter_asks_a_model_that_makes_only_images_for_images_alone():
    with ScriptedServer([answer(OPENROUTER_IMAGE_MODELS), answer(openrouter_answer('data:image/png;base64,' + B64,
                                                                                   content=None))]) as server:
        p = provider('openrouter', server.url, image_model='black-forest-labs/flux.2-pro')
        result = p.generate_image('A lighthouse in a storm', '3:4')
        got = server.received
    assert got[0]['path'] == '/api/v1/models?output_modalities=image'
    assert got[0]['headers']['Authorization'] == f'Bearer {KEY}'
    assert sent_json(got, 1)['modalities'] == ['image'] and sent_json(got, 1)['model'] == 'black-forest-labs/flux.2-pro'
    assert result.image.data == PICTURE and result.text == ''
    # without the catalogue, both are asked for, and the image still comes
    with ScriptedServer([answer({'error': {'message': 'Service unavailable', 'code': 500}}, 500),
                         answer(openrouter_answer('data:image/png;base64,' + B64))]) as server:
        result = provider('openrouter', server.url).generate_image('x')
        assert sent_json(server.received, 1)['modalities'] == ['image', 'text']
    assert result.image.data == PICTURE


def test_openrouter_edit_sends_the_image_as_a_content_part():
    result, got = generate('openrouter', [answer(openrouter_answer('data:image/png;base64,' + B64))], '2:3', SOURCE)
    assert sent_json(got)['messages'][0]['content'] == [
        {'type': 'text', 'text': 'A lighthouse in a storm'},
        {'type': 'image_url', 'image_url': {'url': 'data:image/png;base64,' + base64.b64encode(SOURCE.data).decode()}}]
    assert result.image.data == PICTURE


def test_openrouter_text_only_blocked_and_errors_in_the_body():
    e = failure('openrouter', [answer({'model': 'openai/gpt-4o', 'choices': [{'message': {
        'role': 'assistant', 'content': 'I can only describe a lighthouse.'}, 'finish_reason': 'stop'}]})])
    assert isinstance(e, NoImageMade)
    assert str(e) == ("OpenRouter's model openai/gpt-4o made no image. The service said: I can only describe a "
                      "lighthouse.")
    e = failure('openrouter', [answer({'choices': [{'message': {'role': 'assistant', 'content': ''},
                                                    'finish_reason': 'content_filter'}]})])
    assert isinstance(e, errors.ResultBlocked) and str(e) == 'OpenRouter blocked the image.'
    e = failure('openrouter', [answer({'error': {'code': 403, 'message': 'Your chosen model requires moderation and '
                                                 'your input was flagged', 'metadata': {'reasons': ['violence']}}})])
    assert isinstance(e, errors.PromptBlocked) and 'your input was flagged' in str(e)
    e = failure('openrouter', [answer({'error': {'code': 402, 'message': 'Insufficient credits'}})])
    assert isinstance(e, errors.NoCredit)


@pytest.mark.parametrize('url', ['data:image/png,' + 'x' * 40, 'data:image/png;base64,***',
                                 'data:;base64,' + 'QUJD' * 8])
def test_openrouter_data_url_that_is_not_a_base64_image(url):
    e = failure('openrouter', [answer(openrouter_answer(url))])
    assert isinstance(e, NotAnImage)
    assert str(e) in ('OpenRouter sent an image in a form Book AI cannot read.',
                      'OpenRouter sent something that is not an image Book AI can read (PNG, JPEG, WebP or GIF).')


# every error, for every wire format

ALL = ['openai', 'openai_compatible', 'grok', 'openrouter', 'gemini', 'imagen']


def openai_error(status: int, message: str, type_: str, code: str | None, headers: tuple = ()) -> Reply:
    return answer({'error': {'message': message, 'type': type_, 'param': None, 'code': code}}, status, headers)


def google_error(status: int, message: str, state: str, headers: tuple = ()) -> Reply:
    return answer({'error': {'code': status, 'message': message, 'status': state}}, status, headers)


@pytest.mark.parametrize('name', ['openai', 'openai_compatible', 'grok', 'openrouter'])
def test_a_refused_prompt_is_blocked_with_the_services_reason(name):
    e = failure(name, [openai_error(400, 'Your request was rejected as a result of our safety system. Your request '
                                    'may contain content that is not allowed by our safety system.',
                                    'image_generation_user_error', 'moderation_blocked')])
    assert isinstance(e, errors.PromptBlocked)
    display = provider(name, 'http://127.0.0.1:9').display_name
    assert str(e).startswith(f'{display} refused the request for safety reasons. The service said: Your request was '
                             'rejected as a result of our safety system.')
    e = failure(name, [openai_error(400, 'This request has been blocked by our content filters.',
                                    'invalid_request_error', 'content_policy_violation')])
    assert isinstance(e, errors.PromptBlocked)


def test_a_refused_prompt_at_google_is_blocked_too():
    e = failure('imagen', [google_error(400, "Image generation failed with the following error: The prompt could not "
                                        "be submitted. This prompt contains sensitive words that violate Google's "
                                        "Responsible AI practices.", 'INVALID_ARGUMENT')])
    assert isinstance(e, errors.PromptBlocked) and "violate Google's Responsible AI practices" in str(e)


@pytest.mark.parametrize('name', ALL)
def test_no_credit(name):
    # a 429 is waited out twice by the transport (a second, then two, with no Retry-After) before it
    # is told: so for two of them; the others say to wait longer than the transport waits
    times, wait = (3, ()) if name in ('openai', 'gemini') else (1, [('Retry-After', '60')])
    if name in ('gemini', 'imagen'):
        e = failure(name, [google_error(429, 'You exceeded your current quota, please check your plan and billing '
                                        'details.', 'RESOURCE_EXHAUSTED', wait)] * times)
    else:
        e = failure(name, [openai_error(429, 'You exceeded your current quota, please check your plan and billing '
                                        'details.', 'insufficient_quota', 'insufficient_quota', wait)] * times)
    assert isinstance(e, errors.NoCredit)
    assert str(e).startswith('Your ') and 'has no credit left, or its quota is used up.' in str(e)
    e = failure(name, [answer({'error': {'message': 'Payment required', 'code': 402}}, 402)])
    assert isinstance(e, errors.NoCredit)


@pytest.mark.parametrize('name', ALL)
def test_too_many_requests(name):
    # a wait longer than the transport waits out: told at once
    e = failure(name, [answer({'error': {'message': 'Rate limit reached for images per minute', 'code': 429}}, 429,
                              headers=[('Retry-After', '60')])])
    assert isinstance(e, errors.RateLimited) and e.retry_after == 60
    assert 'is getting too many requests. Wait a little, then retry.' in str(e)


@pytest.mark.parametrize('name', ALL)
def test_a_model_that_does_not_exist(name):
    e = failure(name, [answer({'error': {'message': 'The model `nope` does not exist', 'code': 'model_not_found'}},
                              404)], image_model='nope')
    assert isinstance(e, errors.ModelNotFound) and 'does not offer the model "nope"' in str(e)


@pytest.mark.parametrize('name', ['openai', 'openai_compatible', 'grok'])
def test_an_answer_with_no_image(name):
    e = failure(name, [answer({'created': 1, 'data': []})])
    assert isinstance(e, NoImageMade)
    assert str(e).endswith(f"'s model {MODELS[name]} made no image.")


@pytest.mark.parametrize('name', ALL)
def test_a_slow_server_times_out_in_words(name):
    """The headers never come: the read timeout (here half a second) ends the wait."""
    class Silent(LoopbackListener):
        def handle(self, client):
            client.recv(65536)
            self.stop.wait(10)
            client.close()
    with Silent() as server:
        with pytest.raises(errors.TimedOut) as e:
            provider(name, server.url, read_timeout=0.5).generate_image('x')
    assert 'did not answer for 0.5 seconds. A slow or busy server may need a longer timeout in the settings.' in str(
        e.value)
    assert KEY not in str(e.value) + (e.value.details or '')


def test_a_body_that_stops_coming_times_out_in_words():
    with ScriptedServer([Reply(200, headers=[('Content-Type', 'application/json')],
                               chunks=[b'{"data": [{"b64_json": "iVBOR', b'w0KGgo"}]}'], stall_after=1)]) as server:
        with pytest.raises(errors.TimedOut) as e:
            provider('openai', server.url, read_timeout=0.5).generate_image('x')
    assert 'OpenAI at ' in str(e.value) and 'did not answer for 0.5 seconds' in str(e.value)


@pytest.mark.parametrize('name', ALL)
def test_a_huge_body_is_refused(name, monkeypatch):
    monkeypatch.setattr(limits, 'MAX_IMAGE_JSON_BYTES', 50_000)
    e = failure(name, [answer(b'{"data": [{"b64_json": "' + b'A' * 60_000 + b'"}]}')])
    assert isinstance(e, errors.TooLarge)
    assert 'sent more than 0.0476837 MB, the most Book AI accepts for one answer' in str(e)


@pytest.mark.parametrize('name', ALL)
def test_a_body_that_is_not_json(name):
    e = failure(name, [Reply(200, b'<html><body>502 Bad Gateway \x1b[0m</body></html>',
                             headers=[('Content-Type', 'text/html')])])
    assert isinstance(e, errors.ProtocolError) and str(e).endswith('sent an answer with no image Book AI can read.')


def image_answer(name: str, data: bytes) -> dict:
    b64 = base64.b64encode(data).decode()
    if name in ('openai', 'openai_compatible', 'grok'):
        return {'created': 1, 'data': [{'b64_json': b64}]}
    if name == 'openrouter':
        return openrouter_answer('data:image/png;base64,' + b64)
    if name == 'imagen':
        return {'predictions': [{'bytesBase64Encoded': b64, 'mimeType': 'image/png'}]}
    return gemini_answer([{'inlineData': {'mimeType': 'image/png', 'data': b64}}])


@pytest.mark.parametrize('name', ALL)
def test_what_is_not_an_image_is_refused(name):
    e = failure(name, [answer(image_answer(name, b'<svg xmlns="http://www.w3.org/2000/svg"/>'))])
    assert isinstance(e, NotAnImage) and 'not an image Book AI can read (PNG, JPEG, WebP or GIF)' in str(e)


@pytest.mark.parametrize('name', ALL)
def test_an_image_over_the_largest_side_is_refused(name):
    huge = png(1, 1)[:16] + struct.pack('>II', limits.MAX_IMAGE_SIDE + 1, 100) + png(1, 1)[24:]
    e = failure(name, [answer(image_answer(name, huge))])
    assert isinstance(e, errors.TooLarge)
    assert f'of {limits.MAX_IMAGE_SIDE + 1}x100 pixels; Book AI accepts at most {limits.MAX_IMAGE_SIDE}' in str(e)


@pytest.mark.parametrize('name', ALL)
def test_the_key_echoed_by_a_service_is_redacted(name):
    e = failure(name, [answer({'error': {'message': f'Incorrect API key provided: {KEY}. Bearer {KEY}', 'code': 400,
                                         'status': 'INVALID_ARGUMENT'}}, 400)])
    assert '[redacted]' in str(e)


@pytest.mark.parametrize('name', ALL)
def test_a_missing_key_is_said_before_anything_is_sent(name):
    if name == 'openai_compatible':
        return  # a local server takes no key (tested above: it works without one)
    with ScriptedServer([]) as server:
        with pytest.raises(errors.MissingKey) as e:
            provider(name, server.url, api_key='').generate_image('x')
        assert server.received == []
    assert 'needs an API key' in str(e.value)


# Venice AI (as calibre 9.17 asks it: its own /image/generate, the model from its image list)

VENICE_MODELS = {'object': 'list', 'type': 'image', 'data': [
    {'id': 'venice-sd35', 'type': 'image', 'created': 1700000000, 'object': 'model', 'owned_by': 'venice.ai',
     'model_spec': {'name': 'Venice SD35', 'traits': ['default'], 'pricing': {'generation': {'usd': 0.01}},
                    'constraints': {'widthHeightDivisor': 8, 'defaultSteps': 25}}},
    {'id': 'qwen-image-2', 'type': 'image', 'created': 1770000000, 'model_spec': {
        'name': 'Qwen Image 2', 'pricing': {'resolutions': {'1K': {'usd': 0.05}, '2K': {'usd': 0.08}}},
        'constraints': {'aspectRatios': ['1:1', '3:2', '16:9', '21:9', '9:16', '2:3', '3:4', '4:5'],
                        'defaultResolution': '1K'}}},
    {'id': 'retired-image', 'type': 'image', 'created': 1800000000, 'model_spec': {'offline': True}},
    {'id': 'venice-uncensored', 'type': 'text', 'created': 1800000000}]}


def venice(replies: list, aspect: str = '2:3', **settings):
    with ScriptedServer(replies) as server:
        s = {'base_url': server.url + '/api/v1', 'api_key': KEY}
        s.update(settings)
        result = get_provider('venice', settings=s).generate_image('A lighthouse in a storm', aspect)
        return result, server.received


def test_venice_chooses_its_default_image_model_and_sizes_in_pixels():
    result, got = venice([answer(VENICE_MODELS), answer({'id': 'generate-image-1', 'images': [B64],
                                                         'timing': {'total': 3000}})])
    assert [r['path'] for r in got] == ['/api/v1/models?type=image', '/api/v1/image/generate']
    assert sent_json(got, 1) == {'model': 'venice-sd35', 'prompt': 'A lighthouse in a storm', 'format': 'png',
                                 'hide_watermark': True, 'safe_mode': False, 'width': 848, 'height': 1272}
    assert result.image.data == PICTURE and result.model == 'venice-sd35'
    assert (result.usage.cost.amount, result.usage.cost.source) == (0.01, 'estimated')


def test_venice_blurs_adult_content_when_the_reader_asked_as_in_calibre():
    result, got = venice([answer(VENICE_MODELS), answer({'images': [B64]})], image_model='venice-sd35', safe_mode=True)
    assert sent_json(got, 1)['safe_mode'] is True and result.image.data == PICTURE


@pytest.mark.parametrize('aspect, sent', [('2:3', '2:3'), ('4:3', '3:2'), ('1:1', '1:1')])
def test_venice_asks_an_aspect_ratio_of_models_that_list_them(aspect, sent):
    result, got = venice([answer(VENICE_MODELS), answer({'images': [B64]})], aspect, image_model='qwen-image-2')
    body = sent_json(got, 1)
    assert body['aspect_ratio'] == sent and 'width' not in body
    assert result.usage.cost.amount == 0.05  # the default resolution's price


def test_venice_without_its_list():
    result, got = venice([answer({'error': 'Not found'}, 404), answer({'images': [B64]})], image_model='venice-sd35')
    assert sent_json(got, 1)['width'] == 848 and result.usage.cost is None  # unknown, not free
    with ScriptedServer([answer({'data': []})]) as server:
        with pytest.raises(errors.NotConfigured) as e:
            get_provider('venice', settings={'base_url': server.url + '/api/v1', 'api_key': KEY}).generate_image('x')
    assert str(e.value) == 'Venice AI lists no model that makes images.'
    with ScriptedServer([answer({'error': f'Invalid key {KEY}'}, 401)]) as server:
        with pytest.raises(errors.AuthenticationFailed) as e:
            get_provider('venice', settings={'base_url': server.url + '/api/v1', 'api_key': KEY}).generate_image('x')
    assert KEY not in str(e.value) + (e.value.details or '')


def test_venice_no_image_and_no_editing():
    with ScriptedServer([answer(VENICE_MODELS), answer({'id': 'x', 'images': []})]) as server:
        p = get_provider('venice', settings={'base_url': server.url + '/api/v1', 'api_key': KEY})
        with pytest.raises(NoImageMade) as e:
            p.generate_image('x')
        assert str(e.value) == "Venice AI's model venice-sd35 made no image."
        with pytest.raises(errors.NotConfigured) as e:
            p.generate_image('x', source=SOURCE)
        assert str(e.value) == 'Venice AI cannot change an image it is given.' and len(server.received) == 2


def test_a_server_with_no_model_set_that_makes_no_image():
    e = failure('openai_compatible', [answer({'created': 1, 'data': []})], image_model='')
    assert isinstance(e, NoImageMade) and str(e) == 'OpenAI compatible made no image.'


@pytest.mark.parametrize('usage', [{'promptTokenCount': 'eleven', 'candidatesTokenCount': 1290},
                                   {'promptTokenCount': True, 'candidatesTokenCount': 1290.5},
                                   {'promptTokenCount': 11, 'candidatesTokenCount': [1290]},
                                   {'promptTokenCount': -5, 'candidatesTokenCount': 10 ** 30}])
def test_usage_counts_that_are_not_counts_give_an_unknown_cost(usage):
    result, _got = generate('gemini', [answer(gemini_answer([{'inlineData': {'mimeType': 'image/png', 'data': B64}}],
                                                            usageMetadata=usage))])
    assert result.image.data == PICTURE and result.usage.cost is None
    assert result.usage.input_tokens in (None, 11) and result.usage.output_tokens in (None, 1290)


def test_openrouter_usage_that_is_not_counts():
    result, _got = generate('openrouter', [answer(openrouter_answer('data:image/png;base64,' + B64) | {
        'usage': {'prompt_tokens': '9', 'completion_tokens': None, 'cost': 'free'}})])
    assert result.image.data == PICTURE
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.cost) == (None, None, None)
