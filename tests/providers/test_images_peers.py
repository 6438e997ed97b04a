# License: GPLv3 Copyright: the Book AI developers
"""Images against real peers: aimock 1.43's image routes (OpenAI's /v1/images/generations,
/v1/images/edits, which it reads as multipart/form-data itself, and Gemini's Imagen
:predict), for every provider whose wire format they are (OpenAI, any OpenAI-compatible
server, xAI's generations, Imagen); then the official SDKs (openai's images.generate and
images.edit, google-genai's models.generate_images and generate_content) fed the SAME
recorded bytes as Book AI's providers, which must read the same image bytes and usage.
(aimock has no image output for Gemini's generateContent or OpenRouter's chat, nor xAI's JSON
edits: those shapes are in test_images.py, written from the services' documentation.)"""

import base64
import json
from pathlib import Path

import pytest

from calibre_plugins.bookai.core import errors
from calibre_plugins.bookai.core.images import image_from_bytes
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.images import b64, png
from helpers.peers import AiMock, http, sdk_python
from helpers.scripted_server import Reply, ScriptedServer

KEY = 'sk-aimock-images-5c4b3a29'


COVER = png(16, 24, 0x40)
EDITED = png(16, 24, 0xC0)
PREDICTED = png(12, 16, 0x20)
SOURCE = image_from_bytes(png(2, 3), 'test')

FIXTURES = [
    {'match': {'userMessage': 'lighthouse cover'}, 'response': {'image': {
        'b64Json': b64(COVER), 'revisedPrompt': 'A lighthouse on a cliff, storm clouds'}}},
    {'match': {'userMessage': 'Make the sea calmer'}, 'response': {'image': {'b64Json': b64(EDITED)}}},
    {'match': {'userMessage': 'imagen cover'}, 'response': {'image': {'b64Json': b64(PREDICTED)}}},
    # aimock matches a fixture whose response is not an image to an image route only when it says so
    {'match': {'userMessage': 'refused cover', 'endpoint': 'image'}, 'response': {'error': {
        'message': 'Your request was rejected as a result of our safety system.', 'type': 'image_generation_user_error',
        'code': 'moderation_blocked'}, 'status': 400}},
    {'match': {'userMessage': 'busy cover', 'endpoint': 'image'}, 'response': {'error': {
        'message': 'Rate limit reached for images per minute.', 'type': 'requests', 'code': 'rate_limit_exceeded'},
        'status': 429, 'retryAfter': 30}},
    {'match': {'userMessage': 'words only'}, 'response': {'images': []}},
]


@pytest.fixture(scope='module')
def mock(tmp_path_factory):
    path = Path(tmp_path_factory.mktemp('aimock-images')) / 'images.json'
    path.write_text(json.dumps({'fixtures': FIXTURES}))
    with AiMock(path, api_keys=[KEY]) as m:
        yield m


def provider(name: str, mock: AiMock, model: str, **settings):
    base = '/v1beta' if name == 'gemini' else '/v1'
    return get_provider(name, settings=dict({'base_url': mock.base_url + base, 'api_key': KEY, 'image_model': model},
                                            **settings))


@pytest.mark.parametrize('name, model', [('openai', 'gpt-image-1'), ('openai_compatible', 'sd-turbo'),
                                         ('grok', 'grok-imagine-image')])
def test_generations_at_aimock(mock, name, model):
    mock.reset_journal()
    result = provider(name, mock, model).generate_image('A lighthouse cover in a storm', '2:3')
    assert (result.image.data, result.image.width, result.image.height) == (COVER, 16, 24)
    assert result.revised_prompt == 'A lighthouse on a cliff, storm clouds'
    entry = mock.journal(path='/v1/images/generations')[-1]
    assert entry['response']['status'] == 200
    assert entry['body']['model'] == model  # aimock read the model and prompt from Book AI's JSON
    assert entry['body']['messages'][0]['content'] == 'A lighthouse cover in a storm'


def test_openai_edit_at_aimock_reads_our_multipart_form(mock):
    mock.reset_journal()
    result = provider('openai', mock, 'gpt-image-1').generate_image('Make the sea calmer', '2:3', SOURCE)
    assert result.image.data == EDITED
    entry = mock.journal(path='/v1/images/edits')[-1]
    assert entry['response']['status'] == 200
    # aimock's own multipart reader found the fields in Book AI's form
    assert (entry['body']['model'], entry['body']['messages'][0]['content']) == ('gpt-image-1', 'Make the sea calmer')
    assert entry['headers']['content-type'].startswith('multipart/form-data; boundary=')


def test_imagen_predict_at_aimock(mock):
    mock.reset_journal()
    result = provider('gemini', mock, 'imagen-4.0-generate-001').generate_image('An imagen cover', '2:3')
    assert (result.image.data, result.image.mime) == (PREDICTED, 'image/png')
    assert result.usage.cost.amount == 0.04
    entry = mock.journal(path='/v1beta/models/imagen-4.0-generate-001:predict')[-1]
    assert entry['response']['status'] == 200 and entry['body']['messages'][0]['content'] == 'An imagen cover'


@pytest.mark.parametrize('name, model', [('openai', 'gpt-image-1'), ('grok', 'grok-imagine-image'),
                                         ('gemini', 'imagen-4.0-generate-001')])
def test_errors_at_aimock_in_words(mock, name, model):
    p = provider(name, mock, model)
    with pytest.raises(errors.PromptBlocked) as e:
        p.generate_image('A refused cover')
    assert 'refused the request for safety reasons' in str(e.value) and 'safety system' in str(e.value)
    with pytest.raises(errors.RateLimited) as e:
        p.generate_image('A busy cover')
    assert e.value.retry_after == 30 and 'too many requests' in str(e.value)
    with pytest.raises(errors.ProviderError) as e:
        p.generate_image('words only, please')
    assert str(e.value).endswith(f"'s model {model} made no image.") or 'safety filter may have removed' in str(e.value)
    wrong = provider(name, mock, model, api_key='sk-wrong-key-000000')
    with pytest.raises(errors.AuthenticationFailed) as e:
        wrong.generate_image('A lighthouse cover')
    for error in (e.value,):
        assert 'sk-wrong-key-000000' not in str(error) + (error.details or '') and KEY not in str(error)


# the official SDKs, on the same bytes

SDK_CODE = r'''
import base64, json, sys
kind, url, path = sys.argv[1:4]
out = {}
if kind in ('openai-generate', 'openai-edit'):
    import openai
    client = openai.OpenAI(base_url=url + '/v1', api_key='replayed', max_retries=0)
    if kind == 'openai-generate':
        r = client.images.generate(model='gpt-image-1', prompt='A lighthouse cover', size='1024x1536', n=1)
    else:
        with open(path, 'rb') as f:
            r = client.images.edit(model='gpt-image-1', image=[('image.png', f.read(), 'image/png')],
                                   prompt='Make the sea calmer', size='1024x1536', n=1)
    out['image'] = r.data[0].b64_json
    out['revised_prompt'] = r.data[0].revised_prompt or ''
    if r.usage is not None:
        out['usage'] = {'input': r.usage.input_tokens, 'output': r.usage.output_tokens,
                        'text': r.usage.input_tokens_details.text_tokens,
                        'image': r.usage.input_tokens_details.image_tokens}
else:
    from google import genai
    from google.genai import types
    if kind == 'imagen':
        # google-genai reads Imagen's :predict answers only in Vertex mode (the same predictions
        # bytesBase64Encoded/mimeType shape): its express mode takes an API key
        client = genai.Client(vertexai=True, api_key='replayed',
                              http_options=types.HttpOptions(base_url=url, api_version='v1beta'))
    else:
        client = genai.Client(api_key='replayed', http_options=types.HttpOptions(base_url=url, api_version='v1beta'))
    if kind == 'imagen':
        r = client.models.generate_images(model='imagen-4.0-generate-001', prompt='An imagen cover',
                                          config=types.GenerateImagesConfig(number_of_images=1, aspect_ratio='3:4'))
        out['image'] = base64.b64encode(r.generated_images[0].image.image_bytes).decode()
        out['mime'] = r.generated_images[0].image.mime_type
    else:
        r = client.models.generate_content(
            model='gemini-2.5-flash-image', contents='A lighthouse cover',
            config=types.GenerateContentConfig(response_modalities=['TEXT', 'IMAGE'],
                                               image_config=types.ImageConfig(aspect_ratio='2:3')))
        text = []
        for part in r.candidates[0].content.parts:
            if part.thought:
                continue
            if part.inline_data is not None:
                out['image'] = base64.b64encode(part.inline_data.data).decode()
                out['mime'] = part.inline_data.mime_type
            elif part.text:
                text.append(part.text)
        out['text'] = ''.join(text)
        um = r.usage_metadata
        out['usage'] = {'input': um.prompt_token_count, 'output': um.candidates_token_count}
print(json.dumps(out))
'''


def theirs(kind: str, url: str, source_path: str = '') -> dict:
    r = sdk_python(SDK_CODE, kind, url, source_path or '-')
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def replayed(body: bytes) -> list:
    return [Reply(200, body, headers=[('Content-Type', 'application/json')]) for _ in range(2)]


@pytest.fixture(scope='module')
def recorded(mock) -> dict:
    """The exact bytes aimock answers to the requests Book AI's providers make."""
    got = {}
    for kind, name, model, prompt, source in (('openai-generate', 'openai', 'gpt-image-1', 'A lighthouse cover', None),
                                              ('openai-edit', 'openai', 'gpt-image-1', 'Make the sea calmer', SOURCE),
                                              ('imagen', 'gemini', 'imagen-4.0-generate-001', 'An imagen cover', None)):
        req = provider(name, mock, model).image_request(prompt, model, '2:3', source)
        status, _headers, body = http('POST', req.url, req.body, req.headers)
        assert status == 200, body[:500]
        got[kind] = body
    return got


# as the services document them, with the usage aimock does not send
DOCUMENTED = {
    'openai-generate': json.dumps({'created': 1713833628, 'data': [{'b64_json': b64(COVER)}], 'usage': {
        'total_tokens': 4230, 'input_tokens': 70, 'output_tokens': 4160,
        'input_tokens_details': {'text_tokens': 50, 'image_tokens': 20}}}).encode(),
    'gemini-image': json.dumps({'candidates': [{'content': {'parts': [
        {'text': 'Here is your cover.'}, {'inlineData': {'mimeType': 'image/png', 'data': b64(COVER)}}],
        'role': 'model'},
        'finishReason': 'STOP', 'index': 0}], 'usageMetadata': {'promptTokenCount': 11, 'candidatesTokenCount': 1290,
                                                                 'totalTokenCount': 1301},
        'modelVersion': 'gemini-2.5-flash-image'}).encode(),
}


def ours(kind: str, url: str) -> dict:
    name, model, source = {'openai-generate': ('openai', 'gpt-image-1', None),
                           'openai-edit': ('openai', 'gpt-image-1', SOURCE),
                           'imagen': ('gemini', 'imagen-4.0-generate-001', None),
                           'gemini-image': ('gemini', 'gemini-2.5-flash-image', None)}[kind]
    base = '/v1beta' if name == 'gemini' else '/v1'
    result = get_provider(name, settings={'base_url': url + base, 'api_key': KEY, 'image_model': model}).generate_image(
        'A cover', '2:3', source)
    out = {'image': b64(result.image.data)}
    if kind.startswith('openai'):
        out['revised_prompt'] = result.revised_prompt
    if kind in ('imagen', 'gemini-image'):
        out['mime'] = result.image.mime
    if kind == 'gemini-image':
        out['text'] = result.text
    u = result.usage
    if u.input_tokens is not None:
        out['usage'] = {'input': u.input_tokens, 'output': u.output_tokens}
    return out


@pytest.mark.parametrize('kind', ['openai-generate', 'openai-edit', 'imagen'])
def test_sdks_read_aimocks_bytes_as_book_ai_does(kind, recorded, tmp_path):
    source = tmp_path / 'source.png'
    source.write_bytes(SOURCE.data)
    with ScriptedServer(replayed(recorded[kind])) as server:
        mine = ours(kind, server.url)
        sdk = theirs(kind, server.url, str(source))
        if kind == 'openai-edit':  # the SDK's own form reached the same route
            assert server.received[1]['path'] == '/v1/images/edits'
    assert mine == sdk
    made = {'openai-generate': COVER, 'openai-edit': EDITED, 'imagen': PREDICTED}[kind]
    assert base64.b64decode(mine['image']) == made


@pytest.mark.parametrize('kind', ['openai-generate', 'gemini-image'])
def test_sdks_read_the_documented_answers_as_book_ai_does(kind):
    with ScriptedServer(replayed(DOCUMENTED[kind])) as server:
        mine = ours(kind, server.url)
        sdk = theirs(kind, server.url)
    if kind == 'openai-generate':  # the SDK also gives the split Book AI prices by
        assert sdk.pop('usage') == {'input': 70, 'output': 4160, 'text': 50, 'image': 20}
        assert mine.pop('usage') == {'input': 70, 'output': 4160}
    assert mine == sdk
    assert base64.b64decode(mine['image']) == COVER
