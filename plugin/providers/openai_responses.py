# License: GPLv3 Copyright: the Book AI developers
"""OpenAI, through its Responses API (as calibre's own OpenAI provider does); its
embeddings through /embeddings (base.py)."""

from collections.abc import Iterator

from calibre_plugins.bookai.core.errors import ProviderError, ResultBlocked, error_for_status
from calibre_plugins.bookai.core.messages import Message, ReasoningDelta, Role, TextDelta, Usage, WebLink
from calibre_plugins.bookai.core.streams import SSEEvent
from calibre_plugins.bookai.core.transport import Request
from calibre_plugins.bookai.providers.base import AIProviderPlugin, Capability
from calibre_plugins.bookai.providers.models import Model
from calibre_plugins.bookai.providers.options import Option
from calibre_plugins.bookai.providers.streaming import StreamState, json_of

load_translations()

EFFORTS = {'high': 'high', 'medium': 'medium', 'low': 'low', 'none': 'minimal'}


class OpenAI(AIProviderPlugin):

    name = 'openai'
    display_name = 'OpenAI'
    description = _("OpenAI's GPT models.")
    capabilities = Capability.TEXT_TO_TEXT | Capability.REASONING | Capability.WEB_SEARCH | Capability.EMBEDDINGS
    default_base_url = 'https://api.openai.com/v1'
    remote_service = True
    default_embedding_model = 'text-embedding-3-small'
    options = (Option('web_search', _('Let the model search the web (costs extra)'), 'bool', False),)
    # the newest GPT: plain for the most capable, mini balanced, nano fastest
    tier_patterns = (('high', r'gpt-\d+(\.\d+)?'), ('medium', r'gpt-\d+(\.\d+)?-mini'),
                     ('low', r'gpt-\d+(\.\d+)?-nano'))

    def chat_request(self, messages: list[Message], model: str, max_tokens: int | None = None) -> Request:
        instructions = '\n\n'.join(m.text for m in messages if m.role in (Role.SYSTEM, Role.DEVELOPER))
        payload = {'model': model, 'stream': True, 'store': False, 'input': [
            {'role': m.role.value, 'content': [
                {'type': 'output_text' if m.role is Role.ASSISTANT else 'input_text', 'text': m.text}]}
            for m in messages if m.role in (Role.USER, Role.ASSISTANT)]}
        if instructions:
            payload['instructions'] = instructions
        if max_tokens:
            payload['max_output_tokens'] = max_tokens
        effort = EFFORTS.get(self.option('reasoning_effort'))
        if effort:
            payload['reasoning'] = {'effort': effort, 'summary': 'auto'}
        if self.option('web_search'):
            payload['tools'] = [{'type': 'web_search'}]
        return self.request('/responses', payload)

    def read_stream(self, events: Iterator[SSEEvent], state: StreamState) -> Iterator[TextDelta | ReasoningDelta]:
        summary_parts = 0
        for event in events:
            data = json_of(event, self.display_name)
            kind = data.get('type') or event.event
            if kind == 'response.output_text.delta':
                yield TextDelta(data.get('delta', ''))
            elif kind in ('response.reasoning_summary_text.delta', 'response.reasoning_text.delta'):
                yield ReasoningDelta(data.get('delta', ''))
            elif kind == 'response.reasoning_summary_part.added':
                if summary_parts:  # a blank line between the parts of a summary
                    yield ReasoningDelta('\n\n')
                summary_parts += 1
            elif kind == 'response.output_text.annotation.added':
                a = data.get('annotation') or {}
                if a.get('type') == 'url_citation' and a.get('url'):
                    state.web_links.append(WebLink(a.get('title', ''), a['url']))
            elif kind in ('response.created', 'response.in_progress'):
                response = data.get('response') or {}
                state.model = response.get('model') or state.model
                state.response_id = response.get('id') or state.response_id
            elif kind in ('response.completed', 'response.incomplete'):
                self.finish(data.get('response') or {}, state)
            elif kind == 'response.failed':
                error = (data.get('response') or {}).get('error') or {}
                raise self.error_of(error, state.model)
            elif kind == 'error':
                raise self.error_of(data.get('error') or data, state.model)

    def finish(self, response: dict, state: StreamState) -> None:
        """Fill state from the response a completed or incomplete answer ends with."""
        state.model = response.get('model') or state.model
        usage = response.get('usage') or {}
        state.usage = Usage(usage.get('input_tokens'), usage.get('output_tokens'),
                            (usage.get('output_tokens_details') or {}).get('reasoning_tokens'),
                            (usage.get('input_tokens_details') or {}).get('cached_tokens'))
        state.finish_reason = 'stop'
        if response.get('status') == 'incomplete':
            reason = (response.get('incomplete_details') or {}).get('reason', '')
            if reason == 'content_filter':
                raise ResultBlocked(_('OpenAI blocked the answer.'))
            state.finish_reason = 'length' if reason == 'max_output_tokens' else reason or 'length'
        state.finished = True

    def error_of(self, error: dict, model: str) -> ProviderError:
        """The ProviderError for an error OpenAI reports inside a stream."""
        code = str(error.get('code') or error.get('type') or '')
        status = 429 if 'rate_limit' in code or code == 'insufficient_quota' else 400 if code else 500
        return error_for_status(status, self.display_name, message=str(error.get('message', '')), code=code,
                                model=model)

    def models_request(self) -> Request:
        return self.request('/models')

    def parse_models(self, data: dict) -> list[Model]:
        return [Model(m['id'], '', float(m.get('created') or 0)) for m in data.get('data', ()) if m.get('id')]
