# License: GPLv3 Copyright: the Book AI developers
"""Ollama, on this computer or on one you run it on.

Tools (Capability.TOOLS): declared in OpenAI's function shape (`tools: [{type: function,
function: {name, description, parameters}}]`); a model's calls come whole in a chunk's
`message.tool_calls` ({function: {name, arguments: an object}}); they go back as the assistant
message's tool_calls, and each result as a `tool` message naming its tool_name."""

import re
from collections.abc import Iterator, Sequence
from typing import Any

from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import error_for_status
from calibre_plugins.bookai.core.messages import Message, ReasoningDelta, Role, TextDelta, Tool, Usage
from calibre_plugins.bookai.core.transport import Request
from calibre_plugins.bookai.providers.base import AIProviderPlugin, arguments_object, with_payload
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.configuration import ProviderConfig
from calibre_plugins.bookai.providers.context import ContextWindow, window_tokens
from calibre_plugins.bookai.providers.models import Model, timestamp_of
from calibre_plugins.bookai.providers.options import Option, parse_headers
from calibre_plugins.bookai.providers.streaming import StreamState

load_translations()


class Ollama(AIProviderPlugin):

    name = 'ollama'
    display_name = 'Ollama'
    description = _('Models you run with Ollama. On this computer, nothing leaves it.')
    capabilities = Capability.TEXT_TO_TEXT | Capability.REASONING | Capability.EMBEDDINGS | Capability.TOOLS
    needs_key = False
    default_base_url = 'http://localhost:11434'
    default_read_timeout = 600.0
    stream_format = 'ndjson'
    options = (
        Option('headers', _('Extra HTTP headers'), 'headers', (),
               help=_('One "Name: value" per line, sent with every request')),
        Option('context_length', _('Context length (tokens, 0 for the model\'s default)'), 'int', 0,
               minimum=0, maximum=10_000_000),
    )

    @classmethod
    def extra_headers(cls, config: ProviderConfig) -> dict[str, str]:
        # sent with every request, model listing and chat alike
        return dict(parse_headers(config.option('headers') or ()))

    def chat_request(self, messages: list[Message], model: str, max_tokens: int | None = None) -> Request:
        payload: dict[str, Any] = {'model': model, 'stream': True, 'messages': [chat_message(m) for m in messages]}
        effort = self.config.option('reasoning_effort')
        if effort == 'none':
            payload['think'] = False
        elif effort in ('high', 'medium', 'low'):
            payload['think'] = True
        options = {}
        if max_tokens:
            options['num_predict'] = max_tokens
        if ctx := int(self.config.option('context_length') or 0):
            options['num_ctx'] = ctx
        if options:
            payload['options'] = options
        return self.connection.request('/api/chat', payload)

    def structured(self, request: Request, schema: dict, name: str) -> Request:
        """Ollama's format, a JSON schema."""
        def change(payload: dict) -> None:
            payload['format'] = schema
        return with_payload(request, change)

    def with_tools(self, request: Request, tools: Sequence[Tool]) -> Request:
        """The tools as functions, in OpenAI's shape."""
        def change(payload: dict) -> None:
            payload['tools'] = [{'type': 'function', 'function': {
                'name': t.name, 'description': t.description, 'parameters': t.parameters}} for t in tools]
        return with_payload(request, change)

    def served_context(self, model: str, cancel: CancelToken) -> ContextWindow | None:
        """The reader's context length when set (it is what Ollama is asked to use); else what
        /api/show says of model: the num_ctx it is set up with, else its own context_length."""
        if ctx := int(self.config.option('context_length') or 0):
            return ContextWindow(ctx, 'setting')
        data = self.connection.json_answer(
            self.connection.request('/api/show', {'model': model}), model, cancel,
            _('{provider} sent an answer about its model that could not be read.'), quick=True)
        tokens = context_of_show(data)
        return ContextWindow(tokens, 'service') if tokens else None

    def read_stream(self, objects: Iterator[object], state: StreamState) -> Iterator[TextDelta | ReasoningDelta]:
        for obj in objects:
            if not isinstance(obj, dict):
                continue
            if 'error' in obj:
                raise error_for_status(obj.get('status', 500) if isinstance(obj.get('status'), int) else 500,
                                       self.display_name, message=str(obj['error']), model=state.model)
            state.model = obj.get('model') or state.model
            message = obj.get('message') or {}
            if thinking := message.get('thinking'):
                yield ReasoningDelta(thinking)
            if content := message.get('content'):
                yield TextDelta(content)
            for call in message.get('tool_calls') or ():
                function = call.get('function') or {}
                key = call.get('id') or f'call {len(state.tool_calls.calls)}'  # each comes whole
                state.tool_calls.begin(key, call.get('id'), function.get('name'))
                state.tool_calls.add(key, function.get('arguments'))
            if obj.get('done'):
                state.finish_reason = 'length' if obj.get('done_reason') == 'length' else \
                    'tool_calls' if state.tool_calls else 'stop'
                state.usage = Usage(obj.get('prompt_eval_count'), obj.get('eval_count'))
                state.finished = True

    def embed_request(self, texts: list[str], model: str) -> Request:
        return self.connection.request('/api/embed', {'model': model, 'input': list(texts)})

    def parse_embeddings(self, data: dict) -> list[list[float]]:
        return data['embeddings']

    @classmethod
    def parse_error(cls, status: int, body: str) -> tuple[str, str]:
        message, code = super().parse_error(status, body)
        return message, code or ('model' if status == 404 else '')

    def models_request(self) -> Request:
        return self.connection.request('/api/tags')

    def parse_models(self, data: dict) -> list[Model]:
        return [Model(m.get('model') or m['name'], m.get('name', ''), timestamp_of(m.get('modified_at')))
                for m in data.get('models', ()) if m.get('model') or m.get('name')]


def chat_message(m: Message) -> dict:
    """One message as Ollama's /api/chat takes it: an assistant's tool calls with their arguments
    as an object, a tool's result naming its tool."""
    wire: dict[str, Any] = {'role': 'system' if m.role in (Role.SYSTEM, Role.DEVELOPER) else m.role.value,
                            'content': m.text}
    if m.role is Role.TOOL:
        wire['tool_name'] = m.tool_name
    elif m.tool_calls:
        wire['tool_calls'] = [{'function': {'name': c.name, 'arguments': arguments_object(c.arguments)}}
                              for c in m.tool_calls]
    return wire


NUM_CTX = re.compile(r'^num_ctx[ \t]+(\d{1,15})[ \t]*$', re.MULTILINE)


def context_of_show(data: Any) -> int | None:
    """The context window in Ollama's answer to /api/show: the num_ctx among its parameters (a
    text of "name value" lines), else model_info's "<architecture>.context_length"; None when
    it holds no window (context.window_tokens)."""
    if not isinstance(data, dict):
        return None
    parameters = data.get('parameters')
    if isinstance(parameters, str) and (found := NUM_CTX.search(parameters)):
        if tokens := window_tokens(int(found.group(1))):
            return tokens
    info = data.get('model_info')
    if not isinstance(info, dict):
        return None
    arch = info.get('general.architecture')
    return window_tokens(info.get(f'{arch}.context_length')) if isinstance(arch, str) and len(arch) <= 64 else None
