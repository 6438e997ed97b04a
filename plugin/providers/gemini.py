# License: GPLv3 Copyright: the Book AI developers
"""Google's Gemini models, through the Gemini API (generativelanguage.googleapis.com).

Images (covers), two ways, as the model's name says (ai.google.dev/gemini-api/docs):
- Imagen (`imagen-*`): :predict, {instances: [{prompt}], parameters: {sampleCount,
  aspectRatio}}; the image in predictions[].bytesBase64Encoded, or the reason it was
  filtered in raiFilteredReason. Imagen makes images only: it cannot change one.
- Gemini image models (`gemini-*-image*`): :generateContent with responseModalities
  TEXT and IMAGE and imageConfig.aspectRatio; the image in a part's inlineData, the
  image to change sent as inlineData too. A refusal is promptFeedback.blockReason (the
  prompt) or a finishReason such as IMAGE_SAFETY (the image).

Tools (Capability.TOOLS): declared as `tools: [{functionDeclarations: [{name, description,
parameters}]}]` (parameters in Gemini's subset of OpenAPI's schema; Google Search is not offered
with them); a call comes whole, a `functionCall` part ({name, args}, perhaps an id) of the model's
turn, the finishReason STOP, with the thoughtSignature a thinking model signs it with (kept in
the Done's reasoning_details, sent back with the call, as Gemini 3 requires). Calls go back as
the model turn's functionCall parts, and their
results as `functionResponse` parts ({name, response: {result}}) of one user turn.
"""

from collections.abc import Iterator, Sequence
from urllib.parse import quote
from typing import Any

from calibre_plugins.bookai.core.errors import (
    NotConfigured, PromptBlocked, ProviderError, ResultBlocked, error_for_status,
)
from calibre_plugins.bookai.core.images import Image, ImageResult, image_from_base64, no_image, said
from calibre_plugins.bookai.core.messages import (
    MAX_TOOL_CALLS, Message, ReasoningDelta, Role, TextDelta, Tool, Usage, WebLink,
)
from calibre_plugins.bookai.core.streams import SSEEvent
from calibre_plugins.bookai.core.transport import Request
from calibre_plugins.bookai.providers.base import AIProviderPlugin, arguments_object, strict_schema, with_payload
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.configuration import ProviderConfig
from calibre_plugins.bookai.providers.pricing import count
from calibre_plugins.bookai.providers.models import Model
from calibre_plugins.bookai.providers.options import Option
from calibre_plugins.bookai.providers.streaming import StreamState, json_of

load_translations()

THINKING_BUDGETS = {'high': 24576, 'medium': 8192, 'low': 1024, 'none': 0}
# FUNCTION_CALL is not Google's (its calls end STOP), but servers that copy the API (aimock) say it
FINISH_REASONS = {'STOP': 'stop', 'MAX_TOKENS': 'length', 'FUNCTION_CALL': 'tool_calls'}
STATUS_OF_ERROR = {'INVALID_ARGUMENT': 400, 'FAILED_PRECONDITION': 400, 'UNAUTHENTICATED': 401,
                   'PERMISSION_DENIED': 403, 'NOT_FOUND': 404, 'RESOURCE_EXHAUSTED': 429, 'INTERNAL': 500,
                   'UNAVAILABLE': 503, 'DEADLINE_EXCEEDED': 504}


def openapi_types(schema: Any) -> Any:
    """A JSON schema with its types named as Gemini's Schema names them (OBJECT, STRING...)."""
    if isinstance(schema, dict):
        return {k: v.upper() if k == 'type' and isinstance(v, str) else openapi_types(v) for k, v in schema.items()}
    if isinstance(schema, list):
        return [openapi_types(v) for v in schema]
    return schema


# the signed thought a thinking model (Gemini 3) sends with a call, which it wants back with
# the call: kept in the Done's reasoning_details, by the call's place in the answer
SIGNATURE = 'gemini_call_signature'
MAX_SIGNATURE_CHARS = 64_000


def contents_of(messages: list[Message]) -> list[dict]:
    """The conversation as Gemini's contents: user and model turns as in the conversation, a
    model's tool calls as functionCall parts after its text (each with the thoughtSignature it
    came with), each run of tools' results one user turn of functionResponse parts."""
    contents: list[dict] = []
    for m in messages:
        if m.role is Role.TOOL:
            result: dict[str, Any] = {'functionResponse': {'name': m.tool_name, 'response': {'result': m.text}}}
            if contents and contents[-1].get('results'):
                contents[-1]['parts'].append(result)
            else:
                contents.append({'role': 'user', 'parts': [result], 'results': True})
        elif m.role in (Role.USER, Role.ASSISTANT):
            parts: list[dict] = [{'text': m.text}] if m.text or not m.tool_calls else []
            signatures = {d.get('call'): d.get('signature') for d in m.reasoning_details
                          if isinstance(d, dict) and d.get('type') == SIGNATURE}
            for i, call in enumerate(m.tool_calls):
                part: dict[str, Any] = {'functionCall': {'name': call.name, 'args': arguments_object(call.arguments)}}
                if isinstance(signatures.get(i), str):
                    part['thoughtSignature'] = signatures[i]
                parts.append(part)
            contents.append({'role': 'model' if m.role is Role.ASSISTANT else 'user', 'parts': parts})
    for turn in contents:
        turn.pop('results', None)
    return contents


def model_path(model: str) -> str:
    """A model's resource name, as the API's routes take it."""
    return model if model.startswith(('models/', 'tunedModels/')) else 'models/' + model


def reason_words(reason: str) -> str:
    """A reason Google gives ('SAFETY', 'PROHIBITED_CONTENT'), in lower-case words."""
    return said(reason, 100).replace('_', ' ').lower()


# the finish reasons that say Google's filters stopped the image (ai.google.dev/api/generate-content#FinishReason)
BLOCKING_FINISH = frozenset({'SAFETY', 'IMAGE_SAFETY', 'PROHIBITED_CONTENT', 'IMAGE_PROHIBITED_CONTENT', 'BLOCKLIST',
                             'SPII', 'RECITATION', 'IMAGE_RECITATION'})
# the shapes Imagen makes, width:height; another is asked as the nearest of these
IMAGEN_ASPECTS = {'1:1': '1:1', '3:4': '3:4', '4:3': '4:3', '9:16': '9:16', '16:9': '16:9', '2:3': '3:4'}


def is_imagen(model: str) -> bool:
    """Whether model is one of Imagen's (:predict), not a Gemini model (:generateContent)."""
    return model.removeprefix('models/').startswith('imagen')


class GoogleGemini(AIProviderPlugin):

    name = 'gemini'
    display_name = 'Google Gemini'
    description = _("Google's Gemini models. A free tier is available, with low limits.")
    capabilities = (Capability.TEXT_TO_TEXT | Capability.REASONING | Capability.WEB_SEARCH | Capability.EMBEDDINGS
                    | Capability.IMAGE_GENERATION | Capability.IMAGE_EDITING  # editing: the Gemini image models only
                    | Capability.TOOLS)
    default_base_url = 'https://generativelanguage.googleapis.com/v1beta'
    remote_service = True
    default_embedding_model = 'gemini-embedding-001'
    default_image_model = 'gemini-2.5-flash-image'
    options = (
        Option('web_search', _('Ground answers with Google Search (uses up free-tier limits fast)'), 'bool', False),
    )
    tier_patterns = (('high', r'gemini-[\d.]+-pro(-preview[\w-]*)?'), ('medium', r'gemini-[\d.]+-flash'),
                     ('low', r'gemini-[\d.]+-flash-lite'))

    @classmethod
    def auth_headers(cls, config: ProviderConfig) -> dict[str, str]:
        return {'x-goog-api-key': config.api_key} if config.api_key else {}

    def chat_request(self, messages: list[Message], model: str, max_tokens: int | None = None) -> Request:
        system = '\n\n'.join(m.text for m in messages if m.role in (Role.SYSTEM, Role.DEVELOPER))
        # every turn stays a turn of its own: user and model alternate as in the conversation
        payload: dict[str, Any] = {'contents': contents_of(messages)}
        if system:
            payload['systemInstruction'] = {'parts': [{'text': system}]}
        config: dict[str, Any] = {}
        if max_tokens:
            config['maxOutputTokens'] = max_tokens
        budget = THINKING_BUDGETS.get(self.config.option('reasoning_effort'))
        if budget is not None and not (budget == 0 and '-pro' in model):  # pro models always think
            config['thinkingConfig'] = {'thinkingBudget': budget, 'includeThoughts': budget > 0}
        elif self.config.option('reasoning_effort') == 'auto':
            config['thinkingConfig'] = {'includeThoughts': True}
        if config:
            payload['generationConfig'] = config
        if self.config.option('web_search'):
            payload['tools'] = [{'google_search': {}}]
        return self.connection.request(f'/{quote(model_path(model))}:streamGenerateContent?alt=sse', payload)

    def structured(self, request: Request, schema: dict, name: str) -> Request:
        """generationConfig's responseSchema (Gemini's subset of OpenAPI's schema: without
        additionalProperties); no Google Search with it."""
        def change(payload: dict) -> None:
            payload.pop('tools', None)
            config = payload.setdefault('generationConfig', {})
            config['responseMimeType'] = 'application/json'
            config['responseSchema'] = openapi_types(strict_schema(schema, ('additionalProperties', 'title')))
        return with_payload(request, change)

    def with_tools(self, request: Request, tools: Sequence[Tool]) -> Request:
        """The tools as function declarations, their parameters without the keywords Gemini's
        schema refuses."""
        def change(payload: dict) -> None:
            payload['tools'] = [{'functionDeclarations': [
                {'name': t.name, 'description': t.description, 'parameters': openapi_types(strict_schema(
                    t.parameters, ('additionalProperties', 'title', '$schema')))} for t in tools]}]
        return with_payload(request, change)

    def read_stream(self, events: Iterator[SSEEvent], state: StreamState) -> Iterator[TextDelta | ReasoningDelta]:
        for event in events:
            data = json_of(event, self.display_name)
            if 'error' in data:
                raise self.error_of(data['error'], state.model)
            state.model = data.get('modelVersion') or state.model
            state.response_id = data.get('responseId') or state.response_id
            if feedback := data.get('promptFeedback'):
                if reason := feedback.get('blockReason'):
                    raise PromptBlocked(_('Google blocked the question ({reason}).').format(
                        reason=reason_words(reason)))
            if usage := data.get('usageMetadata'):
                state.usage = Usage(usage.get('promptTokenCount'),
                                    (usage.get('candidatesTokenCount') or 0) + (usage.get('thoughtsTokenCount') or 0)
                                    if 'candidatesTokenCount' in usage else None,
                                    usage.get('thoughtsTokenCount'), usage.get('cachedContentTokenCount'))
            for candidate in data.get('candidates') or ():
                for part in (candidate.get('content') or {}).get('parts') or ():
                    if text := part.get('text'):
                        yield ReasoningDelta(text) if part.get('thought') else TextDelta(text)
                    if call := part.get('functionCall'):
                        number = len(state.tool_calls.calls)
                        key = call.get('id') or f'part {number}'
                        state.tool_calls.begin(key, call.get('id'), call.get('name'))
                        state.tool_calls.add(key, call.get('args') or {})
                        signature = part.get('thoughtSignature')
                        if isinstance(signature, str) and len(signature) <= MAX_SIGNATURE_CHARS and \
                                number < MAX_TOOL_CALLS:
                            state.reasoning_details.append({'type': SIGNATURE, 'call': number,
                                                            'signature': signature})
                for chunk in (candidate.get('groundingMetadata') or {}).get('groundingChunks') or ():
                    web = chunk.get('web') or {}
                    if web.get('uri'):
                        state.web_links.append(WebLink(web.get('title', ''), web['uri']))
                if reason := candidate.get('finishReason'):
                    if reason not in FINISH_REASONS and reason != 'FINISH_REASON_UNSPECIFIED':
                        raise ResultBlocked(_('Google stopped the answer ({reason}).').format(
                            reason=reason_words(reason)))
                    state.finish_reason = 'tool_calls' if state.tool_calls else FINISH_REASONS.get(reason, 'stop')
                    state.finished = True

    def embed_request(self, texts: list[str], model: str) -> Request:
        path = model_path(model)
        return self.connection.request(f'/{quote(path)}:batchEmbedContents', {
            'requests': [{'model': path, 'content': {'parts': [{'text': t}]}} for t in texts]})

    def parse_embeddings(self, data: dict) -> list[list[float]]:
        return [e['values'] for e in data['embeddings']]

    # images {{{

    def image_request(self, prompt: str, model: str, aspect: str, source: Image | None = None) -> Request:
        path = quote(model_path(model))
        if is_imagen(model):
            if source is not None:
                raise NotConfigured(_('The model {model} of {provider} makes images but cannot change one: choose a '
                                      'Gemini image model (such as {example}) to refine a cover.').format(
                    model=model, provider=self.display_name, example=self.default_image_model))
            return self.connection.request(f'/{path}:predict', {'instances': [{'prompt': prompt}], 'parameters': {
                'sampleCount': 1, 'aspectRatio': IMAGEN_ASPECTS.get(aspect, '3:4')}})
        parts: list[dict[str, Any]] = [{'text': prompt}]
        if source is not None:
            parts.append({'inlineData': {'mimeType': source.mime, 'data': source.data_url().partition(',')[2]}})
        return self.connection.request(f'/{path}:generateContent', {'contents': [{'role': 'user', 'parts': parts}],
                                                         'generationConfig': {'responseModalities': ['TEXT', 'IMAGE'],
                                                                              'imageConfig': {'aspectRatio': aspect}}})

    def parse_image_answer(self, data: Any, model: str) -> ImageResult:
        if 'predictions' in data or is_imagen(model):
            return self.imagen_answer(data, model)
        if data.get('error'):
            raise self.error_of(data['error'], model)
        if reason := (data.get('promptFeedback') or {}).get('blockReason'):
            raise PromptBlocked(_('Google refused to make the image ({reason}).').format(reason=reason_words(reason)),
                                provider_message=said((data.get('promptFeedback') or {}).get('blockReasonMessage')))
        model = data.get('modelVersion') if isinstance(data.get('modelVersion'), str) and data.get('modelVersion') \
            else model
        image, texts, finish, finish_message = None, [], '', ''
        for candidate in data.get('candidates') or ():
            finish = candidate.get('finishReason') or finish
            finish_message = candidate.get('finishMessage') or finish_message
            if finish in BLOCKING_FINISH:
                raise ResultBlocked(_('Google stopped the image ({reason}).').format(reason=reason_words(finish)),
                                    provider_message=said(finish_message))
            for part in (candidate.get('content') or {}).get('parts') or ():
                if part.get('thought'):  # the model's thinking, and its draft images: not the answer
                    continue
                if isinstance(part.get('text'), str):
                    texts.append(part['text'])
                inline = part.get('inlineData') or part.get('inline_data')
                if inline and inline.get('data'):
                    image = inline['data']  # the last one: the finished image
        text = ''.join(texts)
        if image is None:
            why = _('Google said why: {reason}.').format(reason=reason_words(finish)) if finish not in (
                '', 'STOP', 'FINISH_REASON_UNSPECIFIED') else ''
            raise no_image(self.display_name, model, text or finish_message, why)
        u = data['usageMetadata'] if isinstance(data.get('usageMetadata'), dict) else {}
        made, thoughts = count(u.get('candidatesTokenCount')), count(u.get('thoughtsTokenCount'))
        usage = Usage(count(u.get('promptTokenCount')), None if made is None else made + (thoughts or 0), thoughts)
        return ImageResult(image_from_base64(image, self.display_name), model, usage, text=said(text, 2000))

    def imagen_answer(self, data: dict, model: str) -> ImageResult:
        """The image in Imagen's answer to :predict, or the reason its filter gave for none."""
        if data.get('error'):
            raise self.error_of(data['error'], model)
        reason = ''
        for prediction in data.get('predictions') or ():
            if prediction.get('bytesBase64Encoded'):
                return ImageResult(image_from_base64(prediction['bytesBase64Encoded'], self.display_name), model,
                                   revised_prompt=said(prediction.get('prompt'), 2000))
            reason = prediction.get('raiFilteredReason') or reason
        if reason:
            raise ResultBlocked(_('Google filtered the image out for safety.'), provider_message=said(reason))
        raise no_image(self.display_name, model, why=_('Google sent no reason; its safety filter may have removed '
                                                       'the image.'))

    # }}}

    def error_of(self, error: dict, model: str) -> ProviderError:
        """The ProviderError for an error Gemini reports inside a stream."""
        said_code = error.get('code')
        status = said_code if isinstance(said_code, int) else STATUS_OF_ERROR.get(error.get('status', ''), 500)
        return error_for_status(status, self.display_name, message=error.get('message', ''),
                                code=error.get('status', ''), model=model)

    def models_request(self) -> Request:
        return self.connection.request('/models?pageSize=1000')

    def parse_models(self, data: dict) -> list[Model]:
        models = []
        for m in data.get('models', ()):
            if 'generateContent' not in (m.get('supportedGenerationMethods') or ('generateContent',)):
                continue
            mid = m.get('name', '').removeprefix('models/')
            if mid:
                models.append(Model(mid, m.get('displayName', ''), 0, int(m.get('inputTokenLimit') or 0),
                                    reasoning=bool(m.get('thinking'))))
        return models
