# License: GPLv3 Copyright: the Book AI developers
"""Google's Gemini models, through the Gemini API (generativelanguage.googleapis.com)."""

from collections.abc import Iterator
from urllib.parse import quote

from calibre_plugins.bookai.core.errors import PromptBlocked, ProviderError, ResultBlocked, error_for_status
from calibre_plugins.bookai.core.messages import Message, ReasoningDelta, Role, TextDelta, Usage, WebLink
from calibre_plugins.bookai.core.streams import SSEEvent
from calibre_plugins.bookai.core.transport import Request
from calibre_plugins.bookai.providers.base import AIProviderPlugin, Capability
from calibre_plugins.bookai.providers.models import Model
from calibre_plugins.bookai.providers.options import Option
from calibre_plugins.bookai.providers.streaming import StreamState, json_of

load_translations()

THINKING_BUDGETS = {'high': 24576, 'medium': 8192, 'low': 1024, 'none': 0}
FINISH_REASONS = {'STOP': 'stop', 'MAX_TOKENS': 'length'}
STATUS_OF_ERROR = {'INVALID_ARGUMENT': 400, 'FAILED_PRECONDITION': 400, 'UNAUTHENTICATED': 401,
                   'PERMISSION_DENIED': 403, 'NOT_FOUND': 404, 'RESOURCE_EXHAUSTED': 429, 'INTERNAL': 500,
                   'UNAVAILABLE': 503, 'DEADLINE_EXCEEDED': 504}


def model_path(model: str) -> str:
    """A model's resource name, as the API's routes take it."""
    return model if model.startswith(('models/', 'tunedModels/')) else 'models/' + model


def reason_words(reason: str) -> str:
    """A reason Google gives ('SAFETY', 'PROHIBITED_CONTENT'), in lower-case words."""
    return reason.replace('_', ' ').lower()


class GoogleGemini(AIProviderPlugin):

    name = 'gemini'
    display_name = 'Google Gemini'
    description = _("Google's Gemini models. A free tier is available, with low limits.")
    capabilities = Capability.TEXT_TO_TEXT | Capability.REASONING | Capability.WEB_SEARCH | Capability.EMBEDDINGS
    default_base_url = 'https://generativelanguage.googleapis.com/v1beta'
    remote_service = True
    default_embedding_model = 'gemini-embedding-001'
    options = (
        Option('web_search', _('Ground answers with Google Search (uses up free-tier limits fast)'), 'bool', False),
    )
    tier_patterns = (('high', r'gemini-[\d.]+-pro(-preview[\w-]*)?'), ('medium', r'gemini-[\d.]+-flash'),
                     ('low', r'gemini-[\d.]+-flash-lite'))

    def auth_headers(self) -> dict[str, str]:
        return {'x-goog-api-key': self.api_key} if self.api_key else {}

    def chat_request(self, messages: list[Message], model: str, max_tokens: int | None = None) -> Request:
        system = '\n\n'.join(m.text for m in messages if m.role in (Role.SYSTEM, Role.DEVELOPER))
        # every turn stays a turn of its own: user and model alternate as in the conversation
        payload = {'contents': [{'role': 'model' if m.role is Role.ASSISTANT else 'user', 'parts': [{'text': m.text}]}
                                for m in messages if m.role in (Role.USER, Role.ASSISTANT)]}
        if system:
            payload['systemInstruction'] = {'parts': [{'text': system}]}
        config = {}
        if max_tokens:
            config['maxOutputTokens'] = max_tokens
        budget = THINKING_BUDGETS.get(self.option('reasoning_effort'))
        if budget is not None and not (budget == 0 and '-pro' in model):  # pro models always think
            config['thinkingConfig'] = {'thinkingBudget': budget, 'includeThoughts': budget > 0}
        elif self.option('reasoning_effort') == 'auto':
            config['thinkingConfig'] = {'includeThoughts': True}
        if config:
            payload['generationConfig'] = config
        if self.option('web_search'):
            payload['tools'] = [{'google_search': {}}]
        return self.request(f'/{quote(model_path(model))}:streamGenerateContent?alt=sse', payload)

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
                for chunk in (candidate.get('groundingMetadata') or {}).get('groundingChunks') or ():
                    web = chunk.get('web') or {}
                    if web.get('uri'):
                        state.web_links.append(WebLink(web.get('title', ''), web['uri']))
                if reason := candidate.get('finishReason'):
                    if reason not in FINISH_REASONS and reason != 'FINISH_REASON_UNSPECIFIED':
                        raise ResultBlocked(_('Google stopped the answer ({reason}).').format(
                            reason=reason_words(reason)))
                    state.finish_reason = FINISH_REASONS.get(reason, 'stop')
                    state.finished = True

    def embed_request(self, texts: list[str], model: str) -> Request:
        path = model_path(model)
        return self.request(f'/{quote(path)}:batchEmbedContents', {
            'requests': [{'model': path, 'content': {'parts': [{'text': t}]}} for t in texts]})

    def parse_embeddings(self, data: dict) -> list[list[float]]:
        return [e['values'] for e in data['embeddings']]

    def error_of(self, error: dict, model: str) -> ProviderError:
        """The ProviderError for an error Gemini reports inside a stream."""
        status = error.get('code') if isinstance(error.get('code'), int) else STATUS_OF_ERROR.get(
            error.get('status', ''), 500)
        return error_for_status(status, self.display_name, message=error.get('message', ''),
                                code=error.get('status', ''), model=model)

    def models_request(self) -> Request:
        return self.request('/models?pageSize=1000')

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
