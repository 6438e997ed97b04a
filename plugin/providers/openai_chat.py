# License: GPLv3 Copyright: the Book AI developers
"""The OpenAI chat-completions wire format, and the services that speak it:
any OpenAI-compatible server (with presets for the common ones), LM Studio,
GitHub models and xAI's Grok; OpenRouter (openrouter.py) and Venice AI (venice.py)
build on it. OpenAI compatible and LM Studio also make embeddings (the /embeddings
route: base.py).

Images (covers): an OpenAI-compatible server through OpenAI's /images/generations (as
LocalAI and stable-diffusion.cpp's server speak it: a "WxH" size, base64 asked for); xAI
through its images API (/images/generations and, with a JSON body, /images/edits:
docs.x.ai).

Tools (Capability.TOOLS): declared as `tools: [{type: function, function: {name, description,
parameters}}]`; a model's calls come back streamed in `delta.tool_calls[i]` (index, id,
function.name, then function.arguments in pieces), finish_reason `tool_calls`; they are sent
back as the assistant message's `tool_calls` ({id, type: function, function: {name,
arguments}}, its content null when it said nothing), each result a `tool` message naming its
tool_call_id."""

from collections.abc import Iterator, Sequence
from typing import Any, cast, overload

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import ProviderError, ResultBlocked, error_for_status
from calibre_plugins.bookai.core.images import Image, ImageResult, images_api_result
from calibre_plugins.bookai.core.messages import Cost, Message, ReasoningDelta, Role, TextDelta, Tool, Usage
from calibre_plugins.bookai.core.streams import SSEEvent
from calibre_plugins.bookai.core.transport import Request
from calibre_plugins.bookai.providers.base import AIProviderPlugin, with_payload
from calibre_plugins.bookai.providers.caching import is_openai_service, prompt_cache_key
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.configuration import ProviderConfig
from calibre_plugins.bookai.providers.context import ContextWindow, window_tokens
from calibre_plugins.bookai.providers.models import Model
from calibre_plugins.bookai.providers.options import Option, parse_headers
from calibre_plugins.bookai.providers.streaming import StreamState, json_of, count_at

load_translations()

EFFORTS = ('high', 'medium', 'low')
# "developer" is OpenAI's newer name for system; most compatible servers know only system
WIRE_ROLES = {Role.SYSTEM: 'system', Role.DEVELOPER: 'system', Role.USER: 'user', Role.ASSISTANT: 'assistant',
              Role.TOOL: 'tool'}


# the sampling temperature, in the range the OpenAI chat API allows; -1 sends none
TEMPERATURE = Option('temperature', _('Temperature (-1 for the server\'s default)'), 'float', -1.0,
                     minimum=-1, maximum=2)


def finish_reason_of(reason: str | None) -> str:
    """A finish reason as Book AI names them ('stop', 'length'), from a server's."""
    reasons: dict[str | None, str] = {'stop': 'stop', 'length': 'length', 'eos': 'stop', 'end_turn': 'stop'}
    return reasons.get(reason, reason or 'stop')


class OpenAIChat(AIProviderPlugin):
    """Base for the chat-completions services: subclasses set where and how."""

    capabilities = Capability.TEXT_TO_TEXT | Capability.REASONING | Capability.TOOLS

    def chat_messages(self, messages: list[Message]) -> list[dict]:
        return [chat_message(m) for m in messages]

    def chat_payload(self, messages: list[Message], model: str, max_tokens: int | None) -> dict:
        payload: dict[str, Any] = {'model': model, 'messages': self.chat_messages(messages), 'stream': True,
                   'stream_options': {'include_usage': True}}
        if max_tokens:
            payload['max_tokens'] = max_tokens
        temperature = self.option_or_none('temperature')
        if temperature is not None and temperature >= 0:
            payload['temperature'] = temperature
        effort = self.config.option('reasoning_effort')
        if effort in EFFORTS:
            payload['reasoning_effort'] = effort
        if is_openai_service(self.config.base_url):  # the same for every question about a book and place
            payload['prompt_cache_key'] = prompt_cache_key(messages)
        return payload

    def option_or_none(self, name: str) -> Any:
        """The value of an option, None when this service has no such option."""
        try:
            self.option_named(name)
        except KeyError:
            return None
        return self.config.option(name)

    def chat_request(self, messages: list[Message], model: str, max_tokens: int | None = None) -> Request:
        return self.connection.request('/chat/completions', self.chat_payload(messages, model, max_tokens))

    def structured(self, request: Request, schema: dict, name: str) -> Request:
        """OpenAI's response_format, not strict (the services that speak it differ in the keywords
        their strict mode takes); llama.cpp's server makes a grammar of it, so that even a small
        model answers JSON of that shape."""
        def change(payload: dict) -> None:
            payload['response_format'] = {'type': 'json_schema', 'json_schema': {'name': name, 'schema': schema}}
        return with_payload(request, change)

    def with_tools(self, request: Request, tools: Sequence[Tool]) -> Request:
        """The tools as functions (`tools: [{type: function, function: {...}}]`)."""
        def change(payload: dict) -> None:
            payload['tools'] = [{'type': 'function', 'function': {
                'name': t.name, 'description': t.description, 'parameters': t.parameters}} for t in tools]
        return with_payload(request, change)

    def read_stream(self, events: Iterator[SSEEvent], state: StreamState) -> Iterator[TextDelta | ReasoningDelta]:
        last_call: object = 0  # the call a piece with neither index nor id belongs to
        for event in events:
            if event.data == '[DONE]':
                state.finished = True
                break
            data = json_of(event, self.display_name)
            if 'error' in data:
                raise self.stream_error(data['error'], state.model)
            state.model = data.get('model') or state.model
            state.response_id = data.get('id') or state.response_id
            if usage := data.get('usage'):
                state.usage = self.usage_of(usage, data.get('timings'))
            for choice in data.get('choices') or ():
                delta = choice.get('delta') or {}
                reasoning = delta.get('reasoning_content') or delta.get('reasoning')
                if reasoning:
                    yield ReasoningDelta(reasoning)
                if content := delta.get('content'):
                    yield TextDelta(content)
                for call in delta.get('tool_calls') or ():
                    last_call = read_call(call, state, last_call)
                if reason := choice.get('finish_reason'):
                    if reason == 'content_filter':
                        raise ResultBlocked(_('{provider} blocked the answer.').format(provider=self.display_name))
                    state.finish_reason = finish_reason_of(reason)
        # servers that send no [DONE] still end with a finish reason
        state.finished = state.finished or bool(state.finish_reason)
        if state.tool_calls and state.finish_reason == 'stop':  # some servers say stop after calls
            state.finish_reason = 'tool_calls'

    def stream_error(self, error: object, model: str) -> ProviderError:
        """The ProviderError for an error a server reports inside a stream."""
        if isinstance(error, dict):
            message, code = str(error.get('message', '')), str(error.get('code', '') or error.get('type', ''))
            said_code = error.get('code')
            status = said_code if isinstance(said_code, int) else 500
        else:
            message, code, status = str(error), '', 500
        return error_for_status(status, self.display_name, message=message, code=code, model=model)

    @staticmethod
    def usage_of(usage: dict, timings: object = None) -> Usage:
        """The Usage of a usage object (Usage keeps only what are counts): the prompt's tokens read
        from the service's cache in prompt_tokens_details (OpenAI, OpenRouter, llama.cpp's server,
        xAI), else in DeepSeek's prompt_cache_hit_tokens, else in llama.cpp's timings (cache_n);
        those written to it (OpenRouter, OpenAI's newer models)."""
        cached = count_at(usage, 'prompt_tokens_details', 'cached_tokens')
        if cached is None:
            cached = count_at(usage, 'prompt_cache_hit_tokens')
        if cached is None:
            cached = count_at(timings, 'cache_n')
        return Usage(usage.get('prompt_tokens'), usage.get('completion_tokens'),
                     count_at(usage, 'completion_tokens_details', 'reasoning_tokens'), cached,
                     cache_write_tokens=count_at(usage, 'prompt_tokens_details', 'cache_write_tokens'))

    def models_request(self) -> Request:
        return self.connection.request('/models')

    def parse_models(self, data: dict) -> list[Model]:
        return [Model(m['id'], m.get('name', ''), number(m.get('created')), number(m.get('context_length'), int))
                for m in data.get('data', ()) if isinstance(m, dict) and m.get('id')]


def chat_message(m: Message) -> dict:
    """One message as chat completions sends it: an assistant's with its tool calls, a tool's
    result with the id of the call it answers."""
    wire: dict[str, Any] = {'role': WIRE_ROLES[m.role], 'content': m.text}
    if m.role is Role.TOOL:
        wire['tool_call_id'] = m.tool_call_id
    elif m.role is Role.ASSISTANT and m.tool_calls:
        wire['content'] = m.text or None
        wire['tool_calls'] = [{'id': c.id, 'type': 'function', 'function': {'name': c.name, 'arguments': c.arguments}}
                              for c in m.tool_calls]
    return wire


def read_call(call: dict, state: StreamState, last: object) -> object:
    """One piece of a streamed tool call (delta.tool_calls[i]) into state.tool_calls, under its
    index (else its id, else the call before's); the key it went under."""
    key = call.get('index')
    if key is None:
        key = call.get('id') or last
    function = call.get('function') or {}
    state.tool_calls.begin(key, call.get('id'), function.get('name'))
    state.tool_calls.add(key, function.get('arguments'))
    return key


PRESETS = (  # value, label, base URL
    ('custom', _('Any other server'), ''),
    ('llamacpp', "llama.cpp's llama-server", 'http://127.0.0.1:8080/v1'),
    ('vllm', 'vLLM', 'http://127.0.0.1:8000/v1'),
    ('localai', 'LocalAI', 'http://127.0.0.1:8080/v1'),
    ('jan', 'Jan', 'http://127.0.0.1:1337/v1'),
    ('koboldcpp', 'KoboldCpp', 'http://127.0.0.1:5001/v1'),
    ('mistral', 'Mistral', 'https://api.mistral.ai/v1'),
    ('deepseek', 'DeepSeek', 'https://api.deepseek.com/v1'),
    ('groq', 'Groq', 'https://api.groq.com/openai/v1'),
    ('venice', 'Venice AI', 'https://api.venice.ai/api/v1'),
)


def preset_url(preset: str) -> str:
    """The address of a preset server; '' for any other."""
    return next((url for value, label, url in PRESETS if value == preset), '')


class OpenAICompatible(OpenAIChat):

    name = 'openai_compatible'
    display_name = _('OpenAI compatible')
    description = _('Any server that speaks the OpenAI chat API: local ones such as llama.cpp, vLLM, LocalAI, '
                    'Jan and KoboldCpp, or services such as Mistral, DeepSeek, Groq and Venice AI.')
    capabilities = OpenAIChat.capabilities | Capability.EMBEDDINGS | Capability.IMAGE_GENERATION
    needs_key = False
    key_optional = True
    default_read_timeout = 600.0  # usually a local server, and local models can be slow
    options = (
        Option('preset', _('Server'), 'choice', 'custom', choices=tuple((v, label) for v, label, url in PRESETS),
               help=_('Suggests the address of a well-known server'), fills='base_url',
               fill_values=tuple((v, url) for v, label, url in PRESETS)),
        Option('headers', _('Extra HTTP headers'), 'headers', (), help=_('One "Name: value" per line')),
        TEMPERATURE,
    )

    @classmethod
    def address(cls, config: ProviderConfig) -> str:
        url = (config.option('base_url') or preset_url(config.option('preset'))).rstrip('/')
        if url and url.count('/') == 2:  # an address with no path: the API lives under /v1
            url += '/v1'
        return url

    @classmethod
    def extra_headers(cls, config: ProviderConfig) -> dict[str, str]:
        return dict(parse_headers(config.option('headers') or ()))

    def served_context(self, model: str, cancel: CancelToken) -> ContextWindow | None:
        """On a server on this computer only (connection.is_local), what llama.cpp's llama-server
        says at /props: the context each request gets (another server answers 404: unknown)."""
        if not self.connection.is_local:
            return None
        data = self.connection.json_answer(
            self.connection.request_at_root('/props'), model, cancel,
            _('{provider} sent an answer about its model that could not be read.'), quick=True)
        tokens = context_of_props(data)
        return ContextWindow(tokens, 'service') if tokens else None

    # images {{{

    def image_model(self, cancel: CancelToken | None = None) -> str:
        """The image model as set; '' (none is sent) when it is not: a server such as
        stable-diffusion.cpp's makes images with the one model it has loaded."""
        return (self.config.option('image_model') or '').strip()

    def image_request(self, prompt: str, model: str, aspect: str, source: Image | None = None) -> Request:
        payload = {'prompt': prompt, 'n': 1, 'size': LOCAL_IMAGE_SIZES.get(aspect, '512x512'),
                   'response_format': 'b64_json'}
        if model:
            payload['model'] = model
        return self.connection.request('/images/generations', payload)

    def parse_image_answer(self, data: Any, model: str) -> ImageResult:
        return images_api_result(data, self.display_name, model)

    # }}}


# sizes a local server makes quickly (Stable Diffusion's 512 pixels a side, the long side 768),
# by aspect; each side a multiple of 64, as stable-diffusion.cpp's server rounds them up to (9:16
# is 448x768, the nearest such)
LOCAL_IMAGE_SIZES = {'2:3': '512x768', '3:4': '576x768', '1:1': '512x512', '9:16': '448x768', '4:3': '768x576'}


class LMStudio(OpenAIChat):

    name = 'lmstudio'
    display_name = 'LM Studio'
    description = _('Models running in LM Studio on this computer. Nothing leaves your computer.')
    capabilities = OpenAIChat.capabilities | Capability.EMBEDDINGS
    needs_key = False
    default_read_timeout = 600.0
    default_base_url = 'http://localhost:1234/v1'
    options = (TEMPERATURE,)

    def served_context(self, model: str, cancel: CancelToken) -> ContextWindow | None:
        """What LM Studio's own API (/api/v0/models) says of model: the context it is loaded
        with, else the most it can be loaded with."""
        data = self.connection.json_answer(
            self.connection.request_at_root('/api/v0/models'), model, cancel,
            _('{provider} sent an answer about its model that could not be read.'), quick=True)
        tokens = context_of_lmstudio(data, model)
        return ContextWindow(tokens, 'service') if tokens else None


def context_of_props(data: Any) -> int | None:
    """The context window in llama-server's answer to /props: default_generation_settings.n_ctx
    (the context of one of its slots, which is what a request gets); None when it holds none."""
    settings = data.get('default_generation_settings') if isinstance(data, dict) else None
    return window_tokens(settings.get('n_ctx')) if isinstance(settings, dict) else None


def context_of_lmstudio(data: Any, model: str) -> int | None:
    """The context window of model in LM Studio's /api/v0/models: loaded_context_length when it
    is loaded, else max_context_length; None when it is not listed or holds none."""
    items = data.get('data') if isinstance(data, dict) else None
    if not isinstance(items, list):
        return None
    for m in items[:limits.MAX_MODELS]:
        if isinstance(m, dict) and m.get('id') == model:
            return window_tokens(m.get('loaded_context_length')) or window_tokens(m.get('max_context_length'))
    return None


@overload
def number(value: object) -> float: ...
@overload
def number(value: object, kind: type[int]) -> int: ...


def number(value: object, kind: type = float) -> float | int:
    """value as a kind (float or int), 0 when it is none."""
    try:
        return kind(value or 0)
    except (TypeError, ValueError, OverflowError):
        return kind(0)


class GitHubModels(OpenAIChat):

    name = 'github'
    display_name = _('GitHub models')
    description = _('Models hosted by GitHub, with a personal access token. GitHub has discontinued this '
                    'service: use it only with an endpoint that still speaks its protocol.')
    default_base_url = 'https://models.github.ai/inference'
    remote_service = True
    tier_patterns = (('high', r'openai/gpt-\d[\d.]*'), ('medium', r'openai/gpt-\d[\d.]*-mini'),
                     ('low', r'openai/gpt-\d[\d.]*-nano'))

    @classmethod
    def extra_headers(cls, config: ProviderConfig) -> dict[str, str]:
        return {'X-GitHub-Api-Version': '2022-11-28', 'Accept': 'application/json'}

    def models_request(self) -> Request:
        req = self.connection.request('/models')
        root = self.config.base_url
        if root.endswith('/inference'):  # the catalog lives beside the inference API
            req.url = root[:-len('/inference')] + '/catalog/models'
        return req

    def parse_models(self, data: dict) -> list[Model]:
        items = data.get('data', ()) if isinstance(data, dict) else data
        return [Model(m['id'], m.get('name', ''), 0, int((m.get('limits') or {}).get('max_input_tokens') or 0))
                for m in items if isinstance(m, dict) and m.get('id')]


class Grok(OpenAIChat):

    name = 'grok'
    display_name = 'xAI Grok'
    description = _("xAI's Grok models.")
    default_base_url = 'https://api.x.ai/v1'
    remote_service = True
    capabilities = OpenAIChat.capabilities | Capability.IMAGE_GENERATION | Capability.IMAGE_EDITING
    default_image_model = 'grok-imagine-image'  # xAI's own examples' model, $0.02 an image
    tier_patterns = (('high', r'grok-\d[\w.-]*'), ('medium', r'grok-\d[\w.-]*-fast[\w-]*'),
                     ('low', r'grok-\d[\w.-]*-mini[\w-]*'))

    def chat_payload(self, messages: list[Message], model: str, max_tokens: int | None) -> dict:
        payload = super().chat_payload(messages, model, max_tokens)
        if payload.get('reasoning_effort') == 'medium':  # Grok knows only low and high
            payload['reasoning_effort'] = 'high'
        return payload

    # images {{{

    def image_request(self, prompt: str, model: str, aspect: str, source: Image | None = None) -> Request:
        payload = {'model': model, 'prompt': prompt, 'n': 1, 'response_format': 'b64_json'}
        if source is None:
            payload.update(aspect_ratio=aspect, resolution='1k')
            return self.connection.request('/images/generations', payload)
        # xAI takes the image to change in JSON (not multipart, as OpenAI does): a data: URL
        payload['image'] = {'url': source.data_url(), 'type': 'image_url'}
        return self.connection.request('/images/edits', payload)

    def parse_image_answer(self, data: Any, model: str) -> ImageResult:
        usage = Usage()
        ticks = (data.get('usage') or {}).get('cost_in_usd_ticks') if isinstance(data.get('usage'), dict) else None
        if type(ticks) in (int, float) and 0 <= cast(float, ticks) < 1e16:  # 10 billion ticks to the dollar
            usage = Usage(cost=Cost(cast(float, ticks) / 1e10, 'USD', 'reported'))
        return images_api_result(data, self.display_name, model, usage)

    # }}}

