# License: GPLv3 Copyright: the Book AI developers
"""Anthropic's Messages API: Claude.

Tools (Capability.TOOLS): declared as `tools: [{name, description, input_schema}]`; a call
streams as a `tool_use` content block (content_block_start: id, name) whose input comes in
`input_json_delta.partial_json` pieces, stop_reason `tool_use`. Calls go back as the assistant's
`tool_use` blocks (input: the arguments as an object, {} when they are not one) and their
results as `tool_result` blocks (tool_use_id, content) of one user message. structured() is a
tool too: with no tools offered, a tool's input is the answer's text."""

from collections.abc import Iterator, Sequence
from typing import Any

from calibre_plugins.bookai.core.errors import ProviderError, ResultBlocked, error_for_status
from calibre_plugins.bookai.core.messages import (
    Message, ReasoningDelta, Role, TextDelta, Tool, Usage, WebLink, token_count,
)
from calibre_plugins.bookai.core.streams import SSEEvent
from calibre_plugins.bookai.core.transport import Request
from calibre_plugins.bookai.providers.base import AIProviderPlugin, arguments_object, with_payload
from calibre_plugins.bookai.providers.caching import cached_blocks
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.configuration import ProviderConfig
from calibre_plugins.bookai.providers.models import Model, timestamp_of
from calibre_plugins.bookai.providers.options import Option
from calibre_plugins.bookai.providers.streaming import StreamState, json_of

load_translations()

API_VERSION = '2023-06-01'
THINKING_BUDGETS = {'high': 16000, 'medium': 6000, 'low': 2000}
STATUS_OF_ERROR_TYPE = {
    'invalid_request_error': 400, 'authentication_error': 401, 'billing_error': 402, 'permission_error': 403,
    'not_found_error': 404, 'request_too_large': 413, 'rate_limit_error': 429, 'api_error': 500,
    'overloaded_error': 529,
}
STOP_REASONS = {'end_turn': 'stop', 'stop_sequence': 'stop', 'max_tokens': 'length', 'pause_turn': 'stop',
                'tool_use': 'stop'}  # a structured answer's tool; with tools offered, 'tool_calls'


class Anthropic(AIProviderPlugin):

    name = 'anthropic'
    display_name = 'Anthropic'
    description = _("Anthropic's Claude models.")
    capabilities = Capability.TEXT_TO_TEXT | Capability.REASONING | Capability.WEB_SEARCH | Capability.TOOLS
    default_base_url = 'https://api.anthropic.com/v1'
    remote_service = True
    options = (
        Option('max_tokens', _('Longest answer (tokens)'), 'int', 8192, minimum=1, maximum=1_000_000),
        Option('web_search', _('Let Claude search the web (costs extra)'), 'bool', False),
    )
    tier_patterns = (('high', r'claude-opus-[\w.-]+'), ('medium', r'claude-sonnet-[\w.-]+'),
                     ('low', r'claude-haiku-[\w.-]+'))

    @classmethod
    def auth_headers(cls, config: ProviderConfig) -> dict[str, str]:
        return {'x-api-key': config.api_key} if config.api_key else {}

    @classmethod
    def extra_headers(cls, config: ProviderConfig) -> dict[str, str]:
        return {'anthropic-version': API_VERSION}

    def chat_request(self, messages: list[Message], model: str, max_tokens: int | None = None) -> Request:
        thinking = THINKING_BUDGETS.get(self.config.option('reasoning_effort'))
        limit = max_tokens or int(self.config.option('max_tokens'))
        system = '\n\n'.join(m.text for m in messages if m.role in (Role.SYSTEM, Role.DEVELOPER))
        said = [self.message(m, thinking) for m in messages if m.role in (Role.USER, Role.ASSISTANT)]
        # the book's text and the conversation so far cached for the next question (providers/caching.py)
        payload = {'model': model, 'max_tokens': limit, 'stream': True,
                   'messages': with_results(messages, cached_blocks(messages, said))}
        if system:
            payload['system'] = system
        if thinking and not max_tokens:
            payload['thinking'] = {'type': 'enabled', 'budget_tokens': thinking}
            payload['max_tokens'] = max(limit, thinking + 1024)
        if self.config.option('web_search'):
            payload['tools'] = [{'type': 'web_search_20250305', 'name': 'web_search', 'max_uses': 5}]
        return self.connection.request('/messages', payload)

    def structured(self, request: Request, schema: dict, name: str) -> Request:
        """A tool Claude must use, whose input is the answer (read_stream() gives that input as the
        answer's text); without thinking, which a forced tool cannot go with, and without web search."""
        def change(payload: dict) -> None:
            payload.pop('thinking', None)
            payload['tools'] = [{'name': name, 'description': 'Give the answer.', 'input_schema': schema}]
            payload['tool_choice'] = {'type': 'tool', 'name': name}
        return with_payload(request, change)

    def with_tools(self, request: Request, tools: Sequence[Tool]) -> Request:
        """The tools, after web search when it is on."""
        def change(payload: dict) -> None:
            payload['tools'] = [t for t in payload.get('tools') or () if 'input_schema' not in t] + [
                {'name': t.name, 'description': t.description, 'input_schema': t.parameters} for t in tools]
        return with_payload(request, change)

    @staticmethod
    def message(m: Message, thinking: int | None) -> dict:
        """One turn of the conversation as Claude reads it: an assistant's tool calls as tool_use
        blocks after its text."""
        if m.role is Role.ASSISTANT and (m.tool_calls or (thinking and m.reasoning_details)):
            # with thinking on, Claude wants its signed thinking blocks back
            blocks = list(m.reasoning_details) if thinking else []
            if m.text or not m.tool_calls:
                blocks.append({'type': 'text', 'text': m.text})
            blocks += [{'type': 'tool_use', 'id': c.id, 'name': c.name, 'input': arguments_object(c.arguments)}
                       for c in m.tool_calls]
            return {'role': 'assistant', 'content': blocks}
        return {'role': m.role.value, 'content': m.text}

    def read_stream(self, events: Iterator[SSEEvent], state: StreamState) -> Iterator[TextDelta | ReasoningDelta]:
        blocks: dict[int, dict] = {}
        usage: dict[str, Any] = {}
        for event in events:
            kind = event.event
            if kind == 'ping':
                continue
            data = json_of(event, self.display_name)
            kind = data.get('type', kind)
            if kind == 'message_start':
                message = data.get('message') or {}
                state.model = message.get('model') or state.model
                state.response_id = message.get('id', '')
                usage.update(usage_fields(message.get('usage')))
            elif kind == 'content_block_start':
                block = dict(data.get('content_block') or {})
                blocks[data.get('index', 0)] = block
                if block.get('type') == 'tool_use' and state.tools_offered:
                    state.tool_calls.begin(data.get('index', 0), block.get('id'), block.get('name'))
                    if block.get('input'):  # usually {}, the input following in pieces
                        state.tool_calls.add(data.get('index', 0), block['input'])
                if block.get('type') == 'web_search_tool_result':
                    for result in block.get('content') or ():
                        if isinstance(result, dict) and result.get('url'):
                            state.web_links.append(WebLink(result.get('title', ''), result['url']))
            elif kind == 'content_block_delta':
                delta = data.get('delta') or {}
                block = blocks.setdefault(data.get('index', 0), {})
                dtype = delta.get('type')
                if dtype == 'text_delta':
                    yield TextDelta(delta.get('text', ''))
                elif dtype == 'thinking_delta':
                    block['thinking'] = block.get('thinking', '') + delta.get('thinking', '')
                    yield ReasoningDelta(delta.get('thinking', ''))
                elif dtype == 'input_json_delta' and block.get('type') == 'tool_use':
                    if state.tools_offered:
                        state.tool_calls.add(data.get('index', 0), delta.get('partial_json'))
                    else:
                        yield TextDelta(delta.get('partial_json', ''))  # the answer asked for as a tool's input
                elif dtype == 'signature_delta':
                    block['signature'] = block.get('signature', '') + delta.get('signature', '')
                elif dtype == 'citations_delta':
                    c = delta.get('citation') or {}
                    if c.get('url'):
                        state.web_links.append(WebLink(c.get('title', ''), c['url']))
            elif kind == 'message_delta':
                reason = (data.get('delta') or {}).get('stop_reason')
                if reason == 'refusal':
                    raise ResultBlocked(_('Claude declined to answer.'))
                if reason:
                    state.finish_reason = 'tool_calls' if reason == 'tool_use' and state.tool_calls else \
                        STOP_REASONS.get(reason, reason)
                usage.update(usage_fields(data.get('usage')))
            elif kind == 'message_stop':
                state.finished = True
            elif kind == 'error':
                raise self.error_of(data.get('error') or {}, state.model)
        state.usage = usage_of(usage)
        state.reasoning_details = [{'type': 'thinking', 'thinking': b.get('thinking', ''),
                                    'signature': b['signature']}
                                   for i, b in sorted(blocks.items()) if b.get('type') == 'thinking'
                                   and b.get('signature')]
        seen: set[str] = set()  # a page cited twice is listed once (add() gives None: false)
        state.web_links = [w for w in state.web_links
                           if not (w.url in seen or seen.add(w.url))]  # type: ignore[func-returns-value]

    def error_of(self, error: dict, model: str) -> ProviderError:
        """The ProviderError for an error Claude reports inside a stream."""
        etype = error.get('type', '')
        return error_for_status(STATUS_OF_ERROR_TYPE.get(etype, 500), self.display_name,
                                message=error.get('message', ''), code=etype, model=model)

    def models_request(self) -> Request:
        return self.connection.request('/models?limit=1000')

    def parse_models(self, data: dict) -> list[Model]:
        return [Model(m['id'], m.get('display_name', ''), timestamp_of(m.get('created_at')), reasoning=True)
                for m in data.get('data', ()) if m.get('id')]


def with_results(messages: list[Message], said: list[dict]) -> list[dict]:
    """said (the user and assistant turns of messages, in order) with the results of tools put
    where they were: each run of TOOL messages one user message of tool_result blocks."""
    turns = iter(said)
    out: list[dict] = []
    results: list[dict] = []
    for m in messages:
        if m.role is Role.TOOL:
            results.append({'type': 'tool_result', 'tool_use_id': m.tool_call_id, 'content': m.text})
            continue
        if m.role not in (Role.USER, Role.ASSISTANT):
            continue
        if results:
            out.append({'role': 'user', 'content': results})
            results = []
        out.append(next(turns))
    if results:
        out.append({'role': 'user', 'content': results})
    return out


USAGE_FIELDS = ('input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens')


def usage_fields(usage: object) -> dict[str, Any]:
    """The counts Book AI reads of a usage object of message_start or message_delta (the latter's
    are the totals so far, so they replace the former's); TypeError for a usage that is not an
    object (a stream of the wrong shape). A count of the wrong shape is no count (usage_of())."""
    if usage is None:
        return {}
    if not isinstance(usage, dict):
        raise TypeError('the usage is not an object')
    return {k: usage[k] for k in USAGE_FIELDS if k in usage}


def usage_of(usage: dict[str, Any]) -> Usage:
    """The Usage of what message_start and message_delta said. Anthropic counts the prompt in three
    parts, fresh (input_tokens), read from its cache and written to it: the prompt is their sum, of
    the parts that are counts (without a fresh count, unknown)."""
    fresh, read, written = (token_count(usage.get(k)) for k in (
        'input_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens'))
    prompt = None if fresh is None else fresh + (read or 0) + (written or 0)
    return Usage(prompt, usage.get('output_tokens'), None, read, cache_write_tokens=written)
