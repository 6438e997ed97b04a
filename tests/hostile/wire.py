# License: GPLv3 Copyright: the Book AI developers
"""The services' answers, as each wire format lays them out, served by the hostile peer.

A Shape is one kind of answer of one provider (a streamed answer, an error body, a model list,
embeddings, an image, the image at an address, a list of image models): its good answer, as the
service documents it, with every field Book AI reads (the model, ids, usage and cost, web pages,
descriptions, prices), and where it goes on the wire. WireSurface makes each attack's answers
from it and asks them as Book AI's callers do: text_chat() (rendered as the command line renders
it, plain and --json), models(), embed(), generate_image(), image_models().
"""

import io
import itertools
import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import images
from helpers.scripted_server import Reply
from hostile import payloads as P
from hostile.isolation import Observed
from hostile.surfaces import (
    ANSWER_SECONDS, JSON, MB, NDJSON, PNG, READ_TIMEOUT, SSE, TRICKLE_DELAY, Context, Payload, Surface, bound_value,
    error_observed, plugin,
)

B64 = images.b64(PNG)
PAGE, TITLE = 'https://example.org/page', 'A page about it'
# values a format needs as they are: changing them changes what the answer is, not what it says
STRUCTURAL = frozenset({'type', 'object', 'role', 'finish_reason', 'stop_reason', 'status', 'finishReason',
                        'mimeType', 'done_reason', 'b64_json', 'bytesBase64Encoded', 'url', 'uri', 'index',
                        'supportedGenerationMethods', 'input_modalities', 'output_modalities', 'output_format'})
URL_KEYS = frozenset({'url', 'uri'})
# The byte bounds as a case of an attack on bytes alone (oversized, endless) lowers them, for every
# entry but the one that stands for its way of reading (Shape.full: the bound is met there at its
# real size): the same code stops at the bound, in a fraction of the time (the limits are read as
# limits.NAME when used, so that a test can lower one)
LOWERED = {'core.limits:MAX_ANSWER_BYTES': 8 * MB, 'core.limits:MAX_LINE_CHARS': 2 * MB,
           'core.limits:MAX_JSON_BYTES': 4 * MB, 'core.limits:MAX_IMAGE_JSON_BYTES': 6 * MB,
           'core.limits:MAX_IMAGE_BYTES': 4 * MB}
# services that take no API key, whose reader sets an Authorization header of their own (Ollama
# behind a proxy): the key is that header's value
KEY_IN_HEADERS = ('ollama',)
HERE = 'http://image.placeholder/image.png'  # where the peer serves the image, filled in per case
IMAGE = [('Content-Type', 'image/png')]


def keep_structure(value: object, change, key: str = '') -> object:
    """value with change(text) applied to every string but those under STRUCTURAL keys (and
    base64 images, data: URLs)."""
    if isinstance(value, str):
        if key in STRUCTURAL or value.startswith('data:') or value == B64:
            return value
        return change(value)
    if isinstance(value, list):
        return [keep_structure(v, change, key) for v in value]
    if isinstance(value, dict):
        return {k: keep_structure(v, change, k) for k, v in value.items()}
    return value


def urls_replaced(value: object, url: str, key: str = '') -> object:
    """value with every web address in it (under url/uri, or text starting with http) replaced by url."""
    if isinstance(value, str):
        return url if (key in URL_KEYS or value.startswith('http')) and not value.startswith('data:') else value
    if isinstance(value, list):
        return [urls_replaced(v, url, key) for v in value]
    if isinstance(value, dict):
        return {k: urls_replaced(v, url, k) for k, v in value.items()}
    return value


def image_replaced(value: object, b64: str) -> object:
    """value with its image (base64, or in a data: URL) replaced by b64."""
    if isinstance(value, str):
        if value == B64:
            return b64
        if value.startswith('data:image/png;base64,'):
            return 'data:image/png;base64,' + b64
        return value
    if isinstance(value, list):
        return [image_replaced(v, b64) for v in value]
    if isinstance(value, dict):
        return {k: image_replaced(v, b64) for k, v in value.items()}
    return value


# the good answers {{{

CHAT_EVENTS = [
    {'id': 'chatcmpl-1', 'object': 'chat.completion.chunk', 'model': 'model-x', 'choices': [
        {'index': 0, 'delta': {'role': 'assistant', 'reasoning_content': 'Thinking it over.', 'content': 'Kept. '}}]},
    {'id': 'chatcmpl-1', 'object': 'chat.completion.chunk', 'model': 'model-x', 'choices': [
        {'index': 0, 'delta': {'content': 'The answer.'}}]},
    {'id': 'chatcmpl-1', 'object': 'chat.completion.chunk', 'model': 'model-x', 'choices': [
        {'index': 0, 'delta': {}, 'finish_reason': 'stop'}]},
    {'id': 'chatcmpl-1', 'object': 'chat.completion.chunk', 'model': 'model-x', 'choices': [],
     'usage': {'prompt_tokens': 12, 'completion_tokens': 7, 'completion_tokens_details': {'reasoning_tokens': 3},
               'prompt_tokens_details': {'cached_tokens': 2, 'cache_write_tokens': 1}, 'cost': 0.0012},
     'timings': {'cache_n': 2, 'prompt_n': 10}},  # llama.cpp's server's
]
VENICE_EVENTS = [dict(CHAT_EVENTS[0], citations=[PAGE], venice_parameters={
    'web_search_citations': [{'url': PAGE, 'title': TITLE, 'content': 'What it says.'}]})] + CHAT_EVENTS[1:]
RESPONSES_EVENTS = [
    {'type': 'response.created', 'response': {'id': 'resp_1', 'model': 'gpt-x', 'status': 'in_progress'}},
    {'type': 'response.reasoning_summary_text.delta', 'delta': 'Thinking it over.'},
    {'type': 'response.output_text.delta', 'delta': 'Kept. '},
    {'type': 'response.output_text.delta', 'delta': 'The answer.'},
    {'type': 'response.output_text.annotation.added', 'annotation': {'type': 'url_citation', 'url': PAGE,
                                                                     'title': TITLE}},
    {'type': 'response.completed', 'response': {
        'id': 'resp_1', 'model': 'gpt-x', 'status': 'completed',
        'usage': {'input_tokens': 12, 'output_tokens': 7, 'output_tokens_details': {'reasoning_tokens': 3},
                  'input_tokens_details': {'cached_tokens': 2, 'cache_write_tokens': 1}}}},
]
ANTHROPIC_EVENTS = [
    {'type': 'message_start', 'message': {'id': 'msg_1', 'type': 'message', 'role': 'assistant', 'model': 'claude-x',
                                          'usage': {'input_tokens': 12, 'cache_read_input_tokens': 2,
                                                    'cache_creation_input_tokens': 1}}},
    {'type': 'content_block_start', 'index': 0, 'content_block': {'type': 'web_search_tool_result', 'content': [
        {'type': 'web_search_result', 'url': PAGE, 'title': TITLE}]}},
    {'type': 'content_block_start', 'index': 1, 'content_block': {'type': 'thinking', 'thinking': ''}},
    {'type': 'content_block_delta', 'index': 1, 'delta': {'type': 'thinking_delta', 'thinking': 'Thinking it over.'}},
    {'type': 'content_block_delta', 'index': 1, 'delta': {'type': 'signature_delta', 'signature': 'c2lnbmVk'}},
    {'type': 'content_block_start', 'index': 2, 'content_block': {'type': 'text', 'text': ''}},
    {'type': 'content_block_delta', 'index': 2, 'delta': {'type': 'text_delta', 'text': 'Kept. '}},
    {'type': 'content_block_delta', 'index': 2, 'delta': {'type': 'text_delta', 'text': 'The answer.'}},
    {'type': 'content_block_delta', 'index': 2, 'delta': {'type': 'citations_delta', 'citation': {
        'type': 'web_search_result_location', 'url': PAGE, 'title': TITLE, 'cited_text': 'What it says.'}}},
    {'type': 'message_delta', 'delta': {'stop_reason': 'end_turn'}, 'usage': {
        'output_tokens': 7, 'input_tokens': 12, 'cache_read_input_tokens': 2, 'cache_creation_input_tokens': 1}},
    {'type': 'message_stop'},
]
GEMINI_EVENTS = [
    {'candidates': [{'content': {'parts': [{'text': 'Thinking it over.', 'thought': True}, {'text': 'Kept. '}],
                                 'role': 'model'}}], 'modelVersion': 'gemini-x', 'responseId': 'r-1'},
    {'candidates': [{'content': {'parts': [{'text': 'The answer.'}], 'role': 'model'}, 'finishReason': 'STOP',
                     'groundingMetadata': {'groundingChunks': [{'web': {'uri': PAGE, 'title': TITLE}}]}}],
     'usageMetadata': {'promptTokenCount': 12, 'candidatesTokenCount': 4, 'thoughtsTokenCount': 3,
                       'cachedContentTokenCount': 2}, 'modelVersion': 'gemini-x', 'responseId': 'r-1'},
]
OLLAMA_EVENTS = [
    {'model': 'llama-x', 'created_at': '2025-01-01T00:00:00Z', 'message': {
        'role': 'assistant', 'content': 'Kept. ', 'thinking': 'Thinking it over.'}, 'done': False},
    {'model': 'llama-x', 'message': {'role': 'assistant', 'content': 'The answer.'}, 'done': False},
    {'model': 'llama-x', 'message': {'role': 'assistant', 'content': ''}, 'done': True, 'done_reason': 'stop',
     'prompt_eval_count': 12, 'eval_count': 7},
]

OPENAI_ERROR = {'error': {'message': 'The model m does not exist or you have no access to it.',
                          'type': 'invalid_request_error', 'param': 'model', 'code': 'model_not_found'}}
ANTHROPIC_ERROR = {'type': 'error', 'error': {'type': 'invalid_request_error', 'message': 'The model m is unknown.'}}
GEMINI_ERROR = {'error': {'code': 400, 'message': 'The model m is not found for API version v1beta.',
                          'status': 'INVALID_ARGUMENT', 'details': [{'reason': 'MODEL_NOT_FOUND'}]}}
OLLAMA_ERROR = {'error': 'model "m" not found, try pulling it first'}

CHAT_MODELS = {'object': 'list', 'data': [
    {'id': 'model-x', 'object': 'model', 'created': 1700000000, 'owned_by': 'someone', 'name': 'Model X',
     'context_length': 8192},
    {'id': 'model-y', 'object': 'model', 'created': 1700000100, 'owned_by': 'someone'}]}
OPENROUTER_MODELS = {'data': [
    {'id': 'google/gemini-x', 'name': 'Google: Gemini X', 'created': 1700000000, 'context_length': 8192,
     'description': 'A model that answers.', 'supported_parameters': ['reasoning', 'temperature'],
     'pricing': {'prompt': '0.000001', 'completion': '0.000002', 'request': '0', 'image': '0'},
     'architecture': {'input_modalities': ['text', 'image'], 'output_modalities': ['text']},
     'top_provider': {'is_moderated': False, 'context_length': 8192}},
    {'id': 'google/gemini-x:free', 'name': 'Google: Gemini X (free)', 'created': 1700000001, 'context_length': 8192,
     'description': 'Free.', 'pricing': {'prompt': '0', 'completion': '0'},
     'architecture': {'input_modalities': ['text'], 'output_modalities': ['text']}}]}
ANTHROPIC_MODELS = {'data': [{'id': 'claude-x', 'type': 'model', 'display_name': 'Claude X',
                              'created_at': '2025-01-01T00:00:00Z'}], 'has_more': False, 'first_id': 'claude-x'}
GEMINI_MODELS = {'models': [{'name': 'models/gemini-x', 'displayName': 'Gemini X', 'description': 'A model.',
                             'inputTokenLimit': 1048576, 'outputTokenLimit': 8192, 'thinking': True,
                             'supportedGenerationMethods': ['generateContent', 'countTokens']}]}
# what a local server says of the context window of the model it serves (the case's model: model-x)
LLAMA_PROPS = {'default_generation_settings': {'n_ctx': 4096, 'params': {'temperature': 0.8}},
               'total_slots': 1, 'model_path': 'models/x.gguf', 'chat_template': '{{ messages }}'}
LMSTUDIO_MODELS = {'object': 'list', 'data': [
    {'id': 'model-x', 'object': 'model', 'type': 'llm', 'state': 'loaded', 'max_context_length': 32768,
     'loaded_context_length': 4096}]}
OLLAMA_SHOW = {'parameters': 'num_ctx 4096\nstop "<|im_end|>"', 'model_info': {
    'general.architecture': 'llama', 'llama.context_length': 131072}, 'details': {'family': 'llama'}}
OLLAMA_MODELS = {'models': [{'name': 'llama-x:latest', 'model': 'llama-x:latest',
                             'modified_at': '2025-01-01T00:00:00.000000Z', 'size': 1000,
                             'details': {'family': 'llama', 'parameter_size': '1B'}}]}
GITHUB_MODELS = [{'id': 'openai/gpt-4.1', 'name': 'OpenAI GPT-4.1', 'publisher': 'OpenAI',
                  'limits': {'max_input_tokens': 8000, 'max_output_tokens': 4000}}]
VENICE_MODELS = {'object': 'list', 'type': 'text', 'data': [
    {'id': 'venice-x', 'type': 'text', 'created': 1700000000, 'object': 'model', 'owned_by': 'venice.ai',
     'model_spec': {'name': 'Venice X', 'description': 'A model.', 'availableContextTokens': 32768,
                    'capabilities': {'supportsReasoning': True, 'supportsReasoningEffort': True},
                    'pricing': {'input': {'usd': 0.5}, 'output': {'usd': 1.5}}, 'traits': ['default'],
                    'offline': False}}]}
VENICE_IMAGE_MODELS = {'object': 'list', 'type': 'image', 'data': [
    {'id': 'venice-img', 'type': 'image', 'created': 1700000000, 'model_spec': {
        'name': 'Venice Image', 'pricing': {'generation': {'usd': 0.01}},
        'constraints': {'aspectRatios': ['1:1', '2:3', '3:4'], 'defaultResolution': '1K'}, 'traits': ['default']}}]}
OPENROUTER_IMAGE_MODELS = {'data': [
    {'id': 'google/gemini-image', 'name': 'Google: Gemini Image', 'created': 1700000000,
     'pricing': {'prompt': '0.0000003', 'completion': '0.0000025', 'image': '0.001'},
     'architecture': {'input_modalities': ['text', 'image'], 'output_modalities': ['image', 'text']}}]}

OPENAI_EMBEDDINGS = {'object': 'list', 'model': 'e', 'data': [
    {'object': 'embedding', 'index': 0, 'embedding': [0.25, -0.5, 0.75]},
    {'object': 'embedding', 'index': 1, 'embedding': [0.5, 0.25, -0.75]}], 'usage': {'prompt_tokens': 4}}
GEMINI_EMBEDDINGS = {'embeddings': [{'values': [0.25, -0.5, 0.75]}, {'values': [0.5, 0.25, -0.75]}]}
OLLAMA_EMBEDDINGS = {'model': 'e', 'embeddings': [[0.25, -0.5, 0.75], [0.5, 0.25, -0.75]]}

OPENAI_IMAGE = {'created': 1700000000, 'data': [{'b64_json': B64, 'revised_prompt': 'A cover, as revised.'}],
                'output_format': 'png', 'usage': {'input_tokens': 50, 'output_tokens': 272, 'total_tokens': 322,
                                                  'input_tokens_details': {'text_tokens': 50, 'image_tokens': 0}}}
COMPATIBLE_IMAGE = {'created': 1700000000, 'data': [{'b64_json': B64}], 'output_format': 'png'}
GROK_IMAGE = {'data': [{'b64_json': B64, 'revised_prompt': 'A cover, as revised.'}],
              'usage': {'cost_in_usd_ticks': 200000000}}
OPENROUTER_IMAGE = {'id': 'gen-1', 'model': 'google/gemini-image', 'object': 'chat.completion', 'choices': [
    {'index': 0, 'finish_reason': 'stop', 'message': {'role': 'assistant', 'content': 'Here is the cover.', 'images': [
        {'type': 'image_url', 'image_url': {'url': 'data:image/png;base64,' + B64}}]}}],
    'usage': {'prompt_tokens': 20, 'completion_tokens': 1290, 'cost': 0.039}}
GEMINI_IMAGE = {'candidates': [{'content': {'role': 'model', 'parts': [
    {'text': 'Here is the cover.'}, {'inlineData': {'mimeType': 'image/png', 'data': B64}}]},
    'finishReason': 'STOP'}], 'usageMetadata': {'promptTokenCount': 20, 'candidatesTokenCount': 1290,
                                                'thoughtsTokenCount': 10}, 'modelVersion': 'gemini-image-x'}
IMAGEN_IMAGE = {'predictions': [{'bytesBase64Encoded': B64, 'mimeType': 'image/png', 'prompt': 'A cover, as revised.'}]}
VENICE_IMAGE = {'id': 'img-1', 'images': [B64], 'timing': {'total': 1000}}

# }}}


@dataclass
class Shape:
    """One kind of answer of one provider, and where it goes."""
    provider: str
    kind: str                       # stream, error, models, embeddings, image, image_url, image_models, context
    good: Any                       # the events of a stream, or the body
    method: str = 'POST'
    path: str = ''                  # a regular expression for the path of the request that gets it
    base: str = '/v1'               # the API root below the case's address
    settings: dict = field(default_factory=dict)
    others: list = field(default_factory=list)  # (method, path, JSON body): benign answers asked first
    status: int = 200
    bound: str = ''                 # the byte bound of what is read ('module:NAME')
    full: bool = False              # it stands for its way of reading: its bytes attacked at the real bounds

    @property
    def frame(self) -> str:
        if self.kind != 'stream':
            return 'json'
        return {'ollama': 'ndjson', 'anthropic': 'sse-events', 'openai': 'sse-events'}.get(self.provider, 'sse')


def framed(shape: Shape, events: list) -> list[bytes]:
    """A stream's events as its wire format lays them out, one piece each (with [DONE] where it has one)."""
    out = []
    for e in events:
        raw = e if isinstance(e, bytes) else P.dumps(e)
        if shape.frame == 'ndjson':
            out.append(raw + b'\n')
        elif shape.frame == 'sse-events':
            kind = e.get('type', 'message') if isinstance(e, dict) else 'message'
            out.append(f'event: {kind}\n'.encode() + b'data: ' + raw + b'\n\n')
        else:
            out.append(b'data: ' + raw + b'\n\n')
    if shape.frame == 'sse' and shape.provider not in ('gemini',):
        out.append(b'data: [DONE]\n\n')
    return out


def nothing(shape: Shape) -> bytes:
    """What each format sends that carries no answer: a comment, a ping, an empty delta."""
    if shape.provider == 'anthropic':
        return b'event: ping\ndata: {"type": "ping"}\n\n'
    if shape.provider == 'openai':
        return framed(shape, [{'type': 'response.output_text.delta', 'delta': ''}])[0]
    if shape.frame == 'ndjson':
        return framed(shape, [{'model': 'llama-x', 'message': {'role': 'assistant', 'content': ''}, 'done': False}])[0]
    return b': keepalive\n\n'


def text_event(shape: Shape, text: str) -> bytes:
    """One event carrying answer text, as the shape's format sends it."""
    event = {'openai': {'type': 'response.output_text.delta', 'delta': text},
             'anthropic': {'type': 'content_block_delta', 'index': 0, 'delta': {'type': 'text_delta', 'text': text}},
             'gemini': {'candidates': [{'content': {'parts': [{'text': text}], 'role': 'model'}}]},
             'ollama': {'model': 'llama-x', 'message': {'role': 'assistant', 'content': text}, 'done': False},
             }.get(shape.provider, {'choices': [{'index': 0, 'delta': {'content': text}}]})
    return framed(shape, [event])[0]


class WireSurface(Surface):
    """A provider's answer of one kind (a Shape), served by the hostile peer."""

    def __init__(self, shape: Shape, attacks: tuple[str, ...]):
        self.shape, self.attacks = shape, attacks
        # every crafted image against the entry that stands for its way of reading; the others get
        # those that show their own reading reaches the same checks (a bomb, scans, damaged data)
        self.variants_of = {} if shape.full else {'crafted_image': SOME_CRAFTED}

    # the answers of each attack (in the test's process) {{{

    def body(self, value: Any) -> bytes:
        if isinstance(value, bytes):
            return value
        return P.dumps(value)

    def good_bytes(self) -> list[bytes]:
        s = self.shape
        return framed(s, s.good) if s.kind == 'stream' else [P.dumps(s.good)]

    def bound(self, attack: str, name: str) -> int:
        """A byte bound as this case has it: lowered (LOWERED) for an attack on bytes alone, but for
        the entry that stands for its way of reading (Shape.full)."""
        if attack in ('oversized', 'endless') and not self.shape.full and name in LOWERED:
            return LOWERED[name]
        return bound_value(name) or 0

    def variants(self, attack: str, variant: str, ctx: Context) -> list[Payload]:
        s = self.shape
        stream = s.kind == 'stream'
        bound = self.bound(attack, s.bound)
        if attack == 'oversized':
            if stream:  # one line longer than the bound, after an answer's beginning
                head = text_event(s, 'Kept. ') + (b'data: {"x": "' if s.frame != 'ndjson' else b'{"x": "')
                return [Payload('one line over its bound', ('chunks', [head], bound + MB), bound)]
            if s.kind == 'image_url':
                return [Payload('an image over its bound', ('chunks', [PNG[:33]], bound + MB), bound)]
            return [Payload('a body over its bound', ('chunks', [b'{"x": "'], bound + MB), bound)]
        if attack == 'endless':  # what is kept of it is at most the bound: its size, for the memory bound
            if stream:
                kept = self.bound(attack, 'core.limits:MAX_ANSWER_BYTES')
                return [Payload('answer text without end', ('endless', [text_event(s, 'Kept. ')],
                                                              text_event(s, 'and more words without end ' * 40)),
                                kept)]
            start = PNG[:33] if s.kind == 'image_url' else b'{"data": ["'
            return [Payload('a body without end', ('endless', [start], b'x' * 65536), bound)]
        if attack == 'trickle':
            whole = b''.join(self.good_bytes()) if s.kind != 'image_url' else PNG
            out = [Payload('a byte every %g s' % TRICKLE_DELAY, ('trickle', whole))]
            if stream:  # what carries no answer (a comment, a ping, an empty delta) is no progress
                out.append(Payload('keepalives without an answer', ('keepalives', [text_event(s, 'Kept. ')],
                                                                   nothing(s))))
            return out
        if attack == 'deep_json':
            if stream:
                deep = P.deep_in(s.good[-1]) if s.frame != 'ndjson' else P.deep_in(s.good[-1])
                return [Payload('JSON nested 100,000 levels', ('events', s.good[:1] + [deep]))]
            return [Payload('JSON nested 100,000 levels', ('body', P.deep_in(s.good)))]
        if attack == 'many_values':
            if stream:
                most = (bound_value('core.limits:MAX_LINE_CHARS') or 16 * MB) - 64 * 1024
                line = P.tiny_values(most, head=b'{"choices": [', tail=b'{}]}')
                return [Payload('one event of millions of empty objects', ('events', s.good[:1] + [line]), len(line))]
            body = P.tiny_values((bound or 16 * MB) - 64 * 1024)
            return [Payload('millions of empty objects', ('body', body), len(body))]
        if attack == 'wrong_types':
            if stream:
                out = []
                for i, event in enumerate(s.good):
                    for label, changed in P.wrong_types(event, most=60):
                        out.append(Payload(f'event {i}: {label}', ('events', s.good[:i] + [changed] + s.good[i + 1:])))
                return out
            return [Payload(label, ('body', changed)) for label, changed in P.wrong_types(s.good, most=150)]
        if attack == 'control_chars':
            return [Payload('escapes in every text', self.changed(lambda v: keep_structure(v, P.with_escapes)))]
        if attack == 'key_echo':
            return [Payload(f'the key, {name}', self.changed(lambda v, f=form: keep_structure(v, lambda t: f'{t} {f}')))
                    for name, form in P.key_forms().items()]
        if attack == 'numbers':
            return [Payload(name, self.changed(lambda v, n=number: P.numbers_replaced(v, n)))
                    for name, number in P.BAD_NUMBERS.items()]
        if attack == 'urls':
            urls = [(f'look-alike host {h}', u) for h, u in zip(P.LOOKALIKE_HOSTS, P.LOOKALIKE_URLS)]
            urls.append(('user:password in the address', P.USERINFO_URL))
            if s.kind == 'image_url':
                return [Payload(label, ('image at', url)) for label, url in urls] + [
                    Payload('user:password in an address on its own server', ('image at', 'userinfo-here'))]
            return [Payload(label, self.changed(lambda v, u=url: urls_replaced(v, u))) for label, url in urls]
        if attack == 'crafted_image':
            data = crafted(variant)
            if s.kind == 'image_url':
                return [Payload(variant, ('raw image', data), len(data))]
            return [Payload(variant, ('body', image_replaced(s.good, images.b64(data))), len(data) * 2)]
        raise ValueError(f'{attack} is not an attack on {s.provider} {s.kind}')

    def changed(self, change) -> tuple:
        s = self.shape
        if s.kind == 'stream':
            return ('events', [change(e) for e in s.good])
        return ('body', change(s.good))

    # }}}

    # the peer's routes (in the test's process) {{{

    def prepare(self, payload: Payload, ctx: Context, where: Path) -> dict:
        s = self.shape
        what, *rest = payload.data
        base = ctx.peer.case([])  # PEER/cN: this variant's own routes
        here = f'{base}/image.png'
        routes = [(m, p, Reply(200, self.body(b), JSON)) for m, p, b in s.others]
        if s.kind == 'image_url':
            image = Reply(200, PNG, IMAGE)
            if what in ('chunks', 'endless', 'trickle', 'raw image'):
                image = self.reply(what, rest, IMAGE, here)
                answer = self.reply('body', [s.good], JSON, here)
            elif what == 'image at':
                url = here.replace('http://', f'http://reader:{P.PASSWORD}@') if rest[0] == 'userinfo-here' \
                    else rest[0]
                answer = self.reply('body', [urls_replaced(s.good, url)], JSON, here)
            else:  # the answer that names the address, changed
                answer = self.reply(what, rest, JSON, here)
            routes = [(s.method, s.path, answer), ('GET', r'/image\.png$', image)] + routes
        else:
            headers = (SSE if s.frame != 'ndjson' else NDJSON) if s.kind == 'stream' else JSON
            routes.insert(0, (s.method, s.path, self.reply(what, rest, headers, here)))
        ctx.peer.cases[int(base.rpartition('/c')[2])] = routes
        return {'base_url': base + s.base}

    def reply(self, what: str, rest: list, headers: list, here: str) -> Any:
        """The reply (or a function making a fresh one for each request) of an attack's answer."""
        s = self.shape
        status = s.status if headers is not IMAGE else 200
        if what == 'chunks':
            head, total = rest
            return lambda path, body: Reply(status, headers=headers, chunks=sized(head, total))
        if what == 'endless':
            head, piece = rest
            return lambda path, body: Reply(status, headers=headers,
                                            chunks=itertools.chain(head, itertools.repeat(piece)))
        if what == 'trickle':
            (whole,) = rest
            return lambda path, body: Reply(status, headers=headers, chunks=[whole[i:i + 1] for i in range(len(whole))],
                                            chunk_delay=TRICKLE_DELAY)
        if what == 'keepalives':
            head, piece = rest
            return lambda path, body: Reply(status, headers=headers, chunks=itertools.chain(
                head, itertools.repeat(piece, 200)), chunk_delay=READ_TIMEOUT / 4)
        if what == 'raw image':
            return Reply(status, rest[0], headers)
        if what == 'events':
            (events,) = rest
            data = b''.join(framed(s, events))
        elif what == 'body':
            data = self.body(rest[0])
        else:
            raise ValueError(what)
        return Reply(status, data.replace(HERE.encode(), here.encode()), headers)

    # }}}

    # asking, as Book AI's callers do (in the case's process) {{{

    def use(self, handle: dict, ctx: Context, where: Path) -> Observed:
        s = self.shape
        self.following = ctx.attack == 'crafted_image'
        self.attack = ctx.attack
        limits = plugin('core.limits')
        if ctx.attack == 'trickle':
            limits.ANSWER_SECONDS = ANSWER_SECONDS
        for name in LOWERED:
            setattr(limits, name.partition(':')[2], self.bound(ctx.attack, name))
        settings = {'base_url': handle['base_url'], 'api_key': P.KEY, 'model': 'model-x',
                    'read_timeout': READ_TIMEOUT, 'connect_timeout': 5.0}
        if s.provider in KEY_IN_HEADERS:  # a service that takes no key: the reader's own header carries it
            settings['headers'] = f'Authorization: Bearer {P.KEY}'
        settings.update(s.settings)
        from calibre_plugins.bookai.core.transport import Transport
        from calibre_plugins.bookai.providers.registry import get_provider
        p = get_provider(s.provider, settings=settings, transport=Transport(proxies={}))
        return getattr(self, f'ask_{s.kind}')(p)

    def ask_stream(self, p: Any) -> Observed:
        from calibre_plugins.bookai import cli
        from calibre_plugins.bookai.conversation.conversation import cache_text, usage_text
        from calibre_plugins.bookai.core.messages import Answer, Done, Failed, Message, Role, TextDelta
        from calibre_plugins.bookai.core.web_links import kept_links, site
        answer, plain, as_json = Answer(), Kept(), Kept()
        for chunk in p.text_chat([Message(Role.USER, 'Hello?')]):
            answer.add(chunk)
            if isinstance(chunk, TextDelta):
                cli.say(plain, chunk.text, end='')
            for event in cli.events_of(chunk):
                cli.emit(as_json, event)
        seen = Observed()
        if answer.failed is not None:
            e = answer.failed.error
            seen = error_observed(e)
            seen.ended = 'returned'  # text_chat never raises: the sentence is the Failed chunk's
        done = answer.done
        if done is not None:
            links, left_out = kept_links(done.web_links)
            for w in links:
                cli.say(plain, f'- {w.title} <{w.url}>')
            seen.shown += [done.model, done.response_id, usage_text(done.usage), cache_text(done.usage)]
            seen.facts['figures'] = [usage_text(done.usage), cache_text(done.usage)]
            seen.shown += [t for w in links for t in (w.title, w.url, site(w.url))]
            seen.facts['usage'] = usage_numbers(done.usage)
            seen.facts['links'] = len(links)
        seen.shown += [plain.getvalue(), as_json.getvalue()]
        seen.facts['json_lines'] = as_json.getvalue().splitlines()
        seen.facts['text'] = answer.text[:200]
        if not isinstance(answer.done, Done) and not isinstance(answer.failed, Failed):
            seen.facts['no end'] = True
        return seen

    ask_error = ask_stream

    def ask_models(self, p: Any) -> Observed:
        from calibre_plugins.bookai import cli
        models = p.models(refresh=True)
        cached = p.model_list.cache_path()
        out = io.StringIO()
        for m in models:
            cli.say(out, m.id if m.display_name == m.id else f'{m.id}\t{m.display_name}')
        seen = Observed(shown=[out.getvalue()] + [t for m in models for t in (m.id, m.name, m.description)])
        seen.facts['numbers'] = [n for m in models for n in (m.created, m.context_length)]
        seen.facts['prices'] = [n for m in models for n in model_prices(m)]
        seen.facts['count'] = len(models)
        seen.facts['figures'] = [line for m in models for line in shown_prices(m)]
        if os.path.exists(cached):
            with open(cached, encoding='utf-8', errors='replace') as f:
                seen.facts['files'] = {os.path.basename(cached): f.read()}
        return seen

    def ask_context(self, p: Any) -> Observed:
        window = p.context_window('model-x')  # unknown, with why in words, when the service failed to say
        seen = Observed(sentence=window.why if window is not None else '', shown=[repr(window)])
        seen.facts['numbers'] = [window.tokens] if window is not None and window.tokens else []
        return seen

    def ask_image_models(self, p: Any) -> Observed:
        found = p.image_models()
        seen = Observed(shown=[str(k) for k in found])
        seen.facts['numbers'] = [n for m in found.values() for n in (getattr(m, 'created', 0),)]
        seen.facts['prices'] = [n for m in found.values() for n in model_prices(m)]
        return seen

    def ask_embeddings(self, p: Any) -> Observed:
        vectors = p.embed(['one passage', 'another passage'], model='e')
        return Observed(facts={'numbers': [x for v in vectors for x in v], 'vectors': len(vectors)})

    def ask_image(self, p: Any) -> Observed:
        from calibre_plugins.bookai import cli
        if self.attack in ('key_echo', 'control_chars'):  # also as the many-books job stages them: its manifest
            staged = self.staged(p)
        from calibre_plugins.bookai.core.cancel import CancelToken
        # made as the three ways in make it (covers.making), and said as the command line says it
        result = plugin('covers.making').make_image(p, 'A cover for a book about the sea.', '2:3', CancelToken())
        summary = cli.cover_summary(p, result)
        seen = Observed(shown=[result.model, result.revised_prompt, result.text, summary])
        seen.facts['figures'] = [summary]
        seen.facts['usage'] = usage_numbers(result.usage)
        seen.facts['image'] = (result.image.mime, result.image.width, result.image.height, len(result.image.data))
        if self.following:  # a crafted image that was accepted: shown as the windows show it
            seen.facts['decoded'] = follow_image(result.image)
            seen.shown.append(seen.facts['decoded'])
        if self.attack in ('key_echo', 'control_chars'):
            seen.shown += staged.shown
            seen.facts['files'] = staged.facts['files']
        return seen

    def staged(self, p: Any) -> Observed:
        """One book's cover made as the many-books job makes it (covers.bulk.run_covers): what its
        outcome says, and its manifest.json, as the job log and a later review read them."""
        import tempfile
        from calibre_plugins.bookai.core.cancel import CancelToken
        bulk = plugin('covers.bulk')
        folder = tempfile.mkdtemp(prefix='staged-')
        request = plugin('covers.making').BookRequest(1, 'A book', 'A cover for a book about the sea.')
        (outcome,) = bulk.run_covers([request], p, '2:3', 1,
                                     folder, CancelToken(), library_id='lib', library_path='/books')
        files = {}
        for name in os.listdir(folder):
            if name.endswith('.json'):
                with open(os.path.join(folder, name), encoding='utf-8', errors='replace') as f:
                    files[name] = f.read()
        return Observed(shown=[outcome.error, outcome.model, outcome.title], facts={'files': files})

    ask_image_url = ask_image

    # }}}


class Kept(io.StringIO):
    """What the command line printed, as a reader's terminal would show it: its first and last
    MB only (an endless answer's middle is of no interest, and would cost the case memory)."""

    def __init__(self) -> None:
        super().__init__()
        self.head, self.tail, self.size = [], [], 0

    def write(self, text: str) -> int:
        if self.size < MB:
            self.head.append(text)
        else:
            self.tail.append(text)
            if len(self.tail) > 4096:
                del self.tail[:2048]
        self.size += len(text)
        return len(text)

    def getvalue(self) -> str:
        return ''.join(self.head) + ''.join(self.tail)[-MB:]


def sized(head: list[bytes], total: int) -> Iterator[bytes]:
    """head, then spaces in pieces of a MB, total bytes in all."""
    sent = 0
    for piece in head:
        sent += len(piece)
        yield piece
    piece = b'x' * MB
    while sent < total:
        yield piece[:total - sent]
        sent += min(MB, total - sent)


def usage_numbers(usage: Any) -> dict:
    cost = usage.cost
    return {'input_tokens': usage.input_tokens, 'output_tokens': usage.output_tokens,
            'reasoning_tokens': usage.reasoning_tokens, 'cached_tokens': usage.cached_tokens,
            'cache_write_tokens': usage.cache_write_tokens,
            'cost': None if cost is None else cost.amount}


def shown_prices(m: Any) -> list[str]:
    """A model's prices as the model chooser shows them (gui/model_chooser.py's lines and details)."""
    try:
        from calibre_plugins.bookai.gui import model_chooser
    except ImportError:
        return []
    return [*model_chooser.price_lines(m), model_chooser.details_html(m)]


def model_prices(m: Any) -> list:
    """The prices a model list gave a model, as Book AI keeps them."""
    price = getattr(m, 'price', None)
    listed = [m.price(k) for k, _v in getattr(m, 'pricing', ())] if callable(price) else []
    return [*getattr(m, 'prices', ()), *listed, *((price,) if type(price) in (int, float) else ())]


def follow_image(image: Any) -> str:
    """An image Book AI accepted, decoded as its windows then decode it (a thumbnail); in words."""
    from hostile.registry import decode_for_display
    return decode_for_display(image.data, image.width, image.height)


def crafted(name: str) -> bytes:
    """The crafted image of that name (helpers.images', issue 26's)."""
    return CRAFTED[name]()


SOME_CRAFTED = ('PNG, 64x64, zlib stream of 28 GB of zeros', 'JPEG, progressive 8192x8192, 100,000 scans',
                'PNG, damaged pixel data', 'PNG, 4096x4096, within the checks')
CRAFTED = {
    'PNG, 64x64, zlib stream of 28 GB of zeros': lambda: images.png_bomb(64, 64),
    'PNG, 8192x8192': lambda: images.png_of_side(8192, 8192),
    'PNG, 60000x60000 header': lambda: (images.PNG_SIGNATURE + images.ihdr(60000, 60000) + images.chunk(
        b'IDAT', zlib.compress(b'\x00' * 2)) + images.chunk(b'IEND', b'')),
    'PNG, damaged pixel data': images.png_damaged,
    # the largest that pass every check of the structure: decoded as the windows decode them
    'PNG, 4096x4096, within the checks': lambda: images.png_of_side(4096, 4096),
    'JPEG, progressive 4096x4096, 90 scans, within the checks': lambda: images.jpeg_progressive(4096, 4096, 3, 85),
    'PNG, text chunk inflating to 64 MB': lambda: images.png_with_text_bomb(64 * MB),
    'APNG of 20,000 frames': lambda: images.apng(8, 8, 20_000),
    'JPEG, progressive 8192x8192, 100,000 scans': lambda: images.jpeg_progressive(8192, 8192, 1, 100_000),
    'JPEG, progressive 8192x8192 RGB': lambda: images.jpeg_progressive(8192, 8192, 3),
    'JPEG, progressive 8192x8192 CMYK': lambda: images.jpeg_progressive(8192, 8192, 4),
    'GIF of 100,000 frames': lambda: images.gif(64, 64, 100_000),
    'WebP, animated, 50,000 frames': lambda: images.webp_animated(64, 64, 50_000),
}
