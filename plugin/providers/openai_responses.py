# License: GPLv3 Copyright: the Book AI developers
"""OpenAI, through its Responses API (as calibre's own OpenAI provider does); its
embeddings through /embeddings (base.py); its images (covers) through the images API:
/images/generations to make one, /images/edits (multipart/form-data) to change one
(platform.openai.com/docs/api-reference/images). The gpt-image models answer in base64
and report their usage in tokens, which are priced as calibre prices them.

Tools (Capability.TOOLS): declared as `tools: [{type: function, name, description,
parameters}]` (beside web search, when it is on); a model's call streams as an output item
(`response.output_item.added`, type function_call: call_id, name) and its arguments in
`response.function_call_arguments.delta` pieces (`.done` repeats them whole), keyed by the
item's output_index; they are sent back as `function_call` input items and each result as a
`function_call_output` (call_id, output)."""

import math
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from calibre_plugins.bookai.core.errors import ProviderError, ResultBlocked, error_for_status
from calibre_plugins.bookai.core.images import Image, ImageResult, images_api_result
from calibre_plugins.bookai.core.messages import Message, ReasoningDelta, Role, TextDelta, Tool, Usage, WebLink
from calibre_plugins.bookai.core.streams import SSEEvent
from calibre_plugins.bookai.core.transport import Request
from calibre_plugins.bookai.providers import pricing
from calibre_plugins.bookai.providers.base import AIProviderPlugin, strict_schema, with_payload
from calibre_plugins.bookai.providers.caching import is_openai_service, prompt_cache_key
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.models import Model
from calibre_plugins.bookai.providers.options import Option
from calibre_plugins.bookai.providers.streaming import StreamState, json_of, count_at

load_translations()

EFFORTS = {'high': 'high', 'medium': 'medium', 'low': 'low', 'none': 'minimal'}

# the sizes the image models make, (width, height); the nearest in shape is asked for
GPT_IMAGE_SIZES = ((1024, 1024), (1024, 1536), (1536, 1024))
DALL_E_3_SIZES = ((1024, 1024), (1024, 1792), (1792, 1024))
DALL_E_2_SIZES = ((1024, 1024),)


def nearest_size(aspect: str, sizes: tuple[tuple[int, int], ...]) -> str:
    """The size ('WxH') of sizes whose shape is nearest to aspect (width:height)."""
    try:
        w, h = (float(x) for x in aspect.split(':'))
        wanted = math.log(w / h)
    except (ValueError, ZeroDivisionError):
        wanted = 0.0
    width, height = min(sizes, key=lambda s: abs(math.log(s[0] / s[1]) - wanted))
    return f'{width}x{height}'


def image_sizes(model: str) -> tuple[tuple[int, int], ...]:
    """The sizes model makes: the gpt-image ones, unless it is a DALL-E."""
    return DALL_E_3_SIZES if model.startswith('dall-e-3') else DALL_E_2_SIZES if model.startswith(
        'dall-e-2') else GPT_IMAGE_SIZES


class OpenAI(AIProviderPlugin):

    name = 'openai'
    display_name = 'OpenAI'
    description = _("OpenAI's GPT models.")
    capabilities = (Capability.TEXT_TO_TEXT | Capability.REASONING | Capability.WEB_SEARCH | Capability.EMBEDDINGS
                    | Capability.IMAGE_GENERATION | Capability.IMAGE_EDITING | Capability.TOOLS)
    default_base_url = 'https://api.openai.com/v1'
    remote_service = True
    default_embedding_model = 'text-embedding-3-small'
    default_image_model = 'gpt-image-1'  # as calibre 9.17 falls back to
    options = (
        Option('web_search', _('Let the model search the web (costs extra)'), 'bool', False),
        Option('image_quality', _('Image quality'), 'choice', 'auto', choices=(
            ('auto', _('Automatic')), ('low', _('Low')), ('medium', _('Medium')), ('high', _('High'))),
            help=_('The quality of generated images. Higher quality images cost more and take longer to generate.')),
    )
    # the newest GPT: plain for the most capable, mini balanced, nano fastest
    tier_patterns = (('high', r'gpt-\d+(\.\d+)?'), ('medium', r'gpt-\d+(\.\d+)?-mini'),
                     ('low', r'gpt-\d+(\.\d+)?-nano'))

    def chat_request(self, messages: list[Message], model: str, max_tokens: int | None = None) -> Request:
        instructions = '\n\n'.join(m.text for m in messages if m.role in (Role.SYSTEM, Role.DEVELOPER))
        payload = {'model': model, 'stream': True, 'store': False,
                   'input': [item for m in messages for item in input_items(m)]}
        if instructions:
            payload['instructions'] = instructions
        if max_tokens:
            payload['max_output_tokens'] = max_tokens
        effort = EFFORTS.get(self.config.option('reasoning_effort'))
        if effort:
            payload['reasoning'] = {'effort': effort, 'summary': 'auto'}
        if self.config.option('web_search'):
            payload['tools'] = [{'type': 'web_search'}]
        if is_openai_service(self.config.base_url):  # the same for every question about a book and place
            payload['prompt_cache_key'] = prompt_cache_key(messages)
        return self.connection.request('/responses', payload)

    def structured(self, request: Request, schema: dict, name: str) -> Request:
        """The Responses API's text.format, strict (without the keywords strict mode refuses); no
        web search with it."""
        def change(payload: dict) -> None:
            payload.pop('tools', None)
            payload['text'] = {'format': {'type': 'json_schema', 'name': name, 'strict': True,
                                          'schema': strict_schema(schema, ('maxLength', 'minLength', 'title'))}}
        return with_payload(request, change)

    def with_tools(self, request: Request, tools: Sequence[Tool]) -> Request:
        """The tools as functions, after web search when it is on."""
        def change(payload: dict) -> None:
            payload['tools'] = [t for t in payload.get('tools') or () if t.get('type') != 'function'] + [
                {'type': 'function', 'name': t.name, 'description': t.description, 'parameters': t.parameters}
                for t in tools]
        return with_payload(request, change)

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
            elif kind in ('response.output_item.added', 'response.output_item.done'):
                item = data.get('item') or {}
                if item.get('type') == 'function_call':
                    key = item_key(data, item.get('id'))
                    state.tool_calls.begin(key, item.get('call_id'), item.get('name'))
                    state.tool_calls.whole(key, item.get('arguments'))
            elif kind == 'response.function_call_arguments.delta':
                state.tool_calls.add(item_key(data, data.get('item_id')), data.get('delta'))
            elif kind == 'response.function_call_arguments.done':
                state.tool_calls.whole(item_key(data, data.get('item_id')), data.get('arguments'))
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
        if not isinstance(usage, dict):
            raise TypeError('the usage is not an object')  # a stream of the wrong shape
        # the prompt's tokens read from OpenAI's cache, and (GPT-5.6 and later) written to it: a
        # count of the wrong shape is no count
        state.usage = Usage(count_at(usage, 'input_tokens'), count_at(usage, 'output_tokens'),
                            count_at(usage, 'output_tokens_details', 'reasoning_tokens'),
                            count_at(usage, 'input_tokens_details', 'cached_tokens'),
                            cache_write_tokens=count_at(usage, 'input_tokens_details', 'cache_write_tokens'))
        state.finish_reason = 'stop'
        if response.get('status') == 'incomplete':
            reason = (response.get('incomplete_details') or {}).get('reason', '')
            if reason == 'content_filter':
                raise ResultBlocked(_('OpenAI blocked the answer.'))
            state.finish_reason = 'length' if reason == 'max_output_tokens' else reason or 'length'
        elif state.tool_calls:
            state.finish_reason = 'tool_calls'
        state.finished = True

    def error_of(self, error: dict, model: str) -> ProviderError:
        """The ProviderError for an error OpenAI reports inside a stream."""
        code = str(error.get('code') or error.get('type') or '')
        status = 429 if 'rate_limit' in code or code == 'insufficient_quota' else 400 if code else 500
        return error_for_status(status, self.display_name, message=str(error.get('message', '')), code=code,
                                model=model)

    def models_request(self) -> Request:
        return self.connection.request('/models')

    def parse_models(self, data: dict) -> list[Model]:
        return [Model(m['id'], '', float(m.get('created') or 0)) for m in data.get('data', ()) if m.get('id')]

    # images {{{

    def image_request(self, prompt: str, model: str, aspect: str, source: Image | None = None) -> Request:
        size = nearest_size(aspect, image_sizes(model))
        dall_e = model.startswith('dall-e')
        quality = self.config.option('image_quality')
        if source is not None:
            fields = [('model', model), ('prompt', prompt), ('size', size), ('n', '1')]
            if not dall_e and quality != 'auto':
                fields.append(('quality', quality))
            if dall_e:
                fields.append(('response_format', 'b64_json'))
            return self.connection.multipart_request('/images/edits', fields, [
                ('image' if model.startswith('dall-e-2') else 'image[]', f'image.{source.extension}', source.mime,
                 source.data)])
        payload = {'model': model, 'prompt': prompt, 'size': size, 'n': 1}
        if dall_e:  # the DALL-E models answer with an address unless asked for base64; gpt-image always sends base64
            payload['response_format'] = 'b64_json'
        elif quality != 'auto':
            payload['quality'] = quality
        return self.connection.request('/images/generations', payload)

    def parse_image_answer(self, data: Any, model: str) -> ImageResult:
        return images_api_result(data, self.display_name, model, image_usage(data.get('usage'), model))

    # }}}


def input_items(m: Message) -> list[dict]:
    """One message as the Responses API's input items: a turn of text; an assistant's tool calls
    as function_call items after its text (if any); a tool's result as a function_call_output."""
    if m.role is Role.TOOL:
        return [{'type': 'function_call_output', 'call_id': m.tool_call_id, 'output': m.text}]
    if m.role not in (Role.USER, Role.ASSISTANT):
        return []
    items: list[dict] = []
    if m.text or not m.tool_calls:
        items.append({'role': m.role.value, 'content': [
            {'type': 'output_text' if m.role is Role.ASSISTANT else 'input_text', 'text': m.text}]})
    if m.role is Role.ASSISTANT:
        items += [{'type': 'function_call', 'call_id': c.id, 'name': c.name, 'arguments': c.arguments}
                  for c in m.tool_calls]
    return items


def item_key(data: dict, item_id: object) -> object:
    """The key a function call's events share: its output_index, else its item's id."""
    index = data.get('output_index')
    return index if isinstance(index, int) else item_id


def image_usage(usage: object, model: str) -> Usage:
    """The usage the images API reports (input_tokens, with text_tokens and image_tokens in its
    details, and output_tokens), with its cost estimated as calibre estimates it."""
    if not isinstance(usage, dict):
        return Usage()
    details = usage['input_tokens_details'] if isinstance(usage.get('input_tokens_details'), dict) else {}
    counts = [v if type(v) is int and v >= 0 else None for v in (
        usage.get('input_tokens'), usage.get('output_tokens'), details.get('text_tokens'), details.get('image_tokens'))]
    input_tokens, output_tokens, text_tokens, image_tokens = counts
    if text_tokens is None and image_tokens is None:
        text_tokens = input_tokens
    u = Usage(input_tokens, output_tokens)
    cost = pricing.image_token_cost('openai', model, text_tokens, image_tokens, output_tokens)
    return replace(u, cost=cost) if cost is not None else u
