# License: GPLv3 Copyright: the Book AI developers
"""The provider base class, shaped like calibre's AIProviderPlugin: one AI service's wire format.

A provider is one small class that knows its wire format and nothing else:

- `options`: the settings it needs, declared (providers/options.py; the settings
  dialog and the command line are built from them);
- `chat_request()`: one HTTP request for a conversation;
- `stream_format` and `read_stream()`: the decoded events in, answer chunks out;
- `models_request()` and `parse_models()`: the live model list;
- `parse_error()`: what the service said when it answered with an error status;
- with Capability.EMBEDDINGS: `embed_request()` and `parse_embeddings()` (the
  default is the /embeddings route most services copy from OpenAI);
- with Capability.IMAGE_GENERATION (and IMAGE_EDITING, when it can change an image it is
  given): `image_request()` and `parse_image_answer()`;
- where a service differs, the choices below their defaults: `address()`, `auth_headers()`,
  `extra_headers()`, `prepare_chat()`, `estimate_cost()`, `prepare_image()`, `image_model()`,
  `automatic_model()`, `pick_for_tier()`, `served_context()`, `structured()` (an answer in JSON
  of a given shape, where the service can be asked for one);
- with Capability.TOOLS: `with_tools()` (the tools declared in the format's shape), and
  `chat_request()` and `read_stream()` writing and reading tool calls and their results
  (providers/tool_support.py remembers the models whose service refused them).

The rest is made of parts, one job each, the same for every service:

- `config` (providers/configuration.py): the reader's settings for it, its key and address,
  and why it cannot be used yet;
- `connection` (providers/connection.py): its requests sent and answers read, bounded, its
  secrets kept out of everything that comes back, and whether it is local;
- the operations (providers/operations.py): answering, embeddings, images, the model list.

The rest of the plugin calls the operations calibre's AIProviderPlugin names, text_chat()
(and embed(), generate_image(), models(), test_connection()), and never knows which provider it holds.
"""

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import NotConfigured, ProviderError
from calibre_plugins.bookai.core.images import Image, ImageResult
from calibre_plugins.bookai.core.messages import Chunk, Cost, Delta, Failed, Message, Role, Tool, Usage
from calibre_plugins.bookai.core.transport import Request, Transport
from calibre_plugins.bookai.providers import pricing
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.configuration import ProviderConfig
from calibre_plugins.bookai.providers.connection import Connection, to_json
from calibre_plugins.bookai.providers.context import ContextWindow
from calibre_plugins.bookai.providers.models import Model, model_for_tier
from calibre_plugins.bookai.providers.operations import Answering, Embedding, ImageMaking, ModelList
from calibre_plugins.bookai.providers.options import Option, declared_options
from calibre_plugins.bookai.providers.streaming import StreamState
from calibre_plugins.bookai.settings.secrets import SecretStore

load_translations()


class AIProviderPlugin:
    """One AI service: a subclass says where it is and how its wire format reads (see above)."""

    name = ''                   # the internal id: settings are stored under it
    display_name = ''
    description = ''
    capabilities = Capability.TEXT_TO_TEXT
    default_read_timeout = 120.0
    needs_key = True
    key_optional = False        # a key may be given, the service works without one
    default_base_url = ''
    remote_service = False      # a service on the internet: never local, at any address (a gateway passes it on)
    stream_format = 'sse'       # or 'ndjson'
    options: tuple[Option, ...] = ()  # the provider's own; all_options() adds those every provider has
    tier_patterns: tuple[tuple[str, str], ...] = ()  # (tier, regular expression for the whole id)
    default_embedding_model = ''  # with EMBEDDINGS: the model when none is set; '' for the chat model
    has_model_chooser = False   # its settings offer a chooser over the model list's details (gui/model_chooser.py)
    default_image_model = ''    # with IMAGE_GENERATION: the model that makes images when none is set

    def __init__(self, settings: dict | None = None, secrets: SecretStore | None = None,
                 transport: Transport | None = None):
        """settings: option values (default: the user's saved ones); secrets: a store with
        get(provider, name) (default: the user's); transport: shared HTTP (default: one per process)."""
        self.config = ProviderConfig(type(self), settings, secrets)
        self.connection = Connection(type(self), self.config, transport)
        self.context_windows: dict[str, ContextWindow | None] = {}  # by model: ModelList.context_window()

    # its options, declared {{{

    # made by all_options() and option_named(), once per class
    _all_options: tuple[Option, ...]
    _options_by_name: dict[str, Option]

    @classmethod
    def all_options(cls) -> tuple[Option, ...]:
        """Every option of this provider, in the order the settings show them."""
        if '_all_options' not in cls.__dict__:  # built once per class: option() is called per request
            cls._all_options = declared_options(
                cls.options, default_base_url=cls.default_base_url, takes_key=cls.needs_key or cls.key_optional,
                read_timeout=cls.default_read_timeout, embeddings=bool(cls.capabilities & Capability.EMBEDDINGS),
                default_embedding_model=cls.default_embedding_model,
                images=bool(cls.capabilities & Capability.IMAGE_GENERATION), default_image_model=cls.default_image_model)
        return cls._all_options

    @classmethod
    def option_named(cls, name: str) -> Option:
        """The option called name; KeyError when this provider has none."""
        if '_options_by_name' not in cls.__dict__:
            cls._options_by_name = {o.name: o for o in cls.all_options()}
        return cls._options_by_name[name]

    # }}}

    # what a provider implements {{{

    def chat_request(self, messages: list[Message], model: str, max_tokens: int | None = None) -> Request:
        """One request for the conversation messages, answered by model as a stream."""
        raise NotImplementedError()

    def read_stream(self, events: Iterator, state: StreamState) -> Iterator[Delta]:
        """Yield TextDelta/ReasoningDelta for the decoded events; fill state; raise ProviderError
        for an error the service reports inside the stream."""
        raise NotImplementedError()

    def models_request(self) -> Request:
        """One request for the live model list."""
        raise NotImplementedError()

    def parse_models(self, data: Any) -> list[Model]:
        """The models in the service's answer to models_request()."""
        raise NotImplementedError()

    def embed_request(self, texts: list[str], model: str) -> Request:
        """One request for the vectors of texts. The default: the /embeddings route of OpenAI,
        which most services speak."""
        return self.connection.request('/embeddings', {'model': model, 'input': list(texts)})

    def parse_embeddings(self, data: Any) -> list[list[float]]:
        """The vectors in an embeddings answer, in the order of the texts."""
        return [item['embedding'] for item in sorted(data['data'], key=lambda item: item.get('index', 0))]

    @classmethod
    def parse_error(cls, status: int, body: str) -> tuple[str, str]:
        """(message, code) from an error body; the generic reading knows the usual JSON shapes."""
        try:
            data = limits.load_json(body)
        except limits.TooComplex:  # nothing worth quoting
            return '', ''
        except ValueError:
            return text_of_html(body)[:300], ''
        err = data.get('error', data) if isinstance(data, dict) else data
        if isinstance(err, list) and err:
            err = err[0].get('error', err[0]) if isinstance(err[0], dict) else err[0]
        if isinstance(err, dict):
            message = err.get('message') or err.get('detail') or err.get('error') or ''
            code = ' '.join(str(err[k]) for k in ('code', 'type', 'status') if err.get(k))
            return str(message), code
        return str(err), ''

    def image_request(self, prompt: str, model: str, aspect: str, source: Image | None = None) -> Request:
        """One request for an image of the given aspect (width:height, one of core.images.ASPECTS)
        made from prompt by model; with source, the change prompt asks for, made to that image
        (only with Capability.IMAGE_EDITING)."""
        raise NotImplementedError()

    def parse_image_answer(self, data: Any, model: str) -> ImageResult:
        """The image in the service's JSON answer to image_request(), with its usage: each image
        through core.images (image_from_base64/image_from_bytes). Raises PromptBlocked or
        ResultBlocked, with the service's reason, when it refused for safety, ProtocolError (or
        KeyError, TypeError...: told as the service breaking its format) when there is no image."""
        raise NotImplementedError()

    # }}}

    # where services differ {{{

    @classmethod
    def address(cls, config: ProviderConfig) -> str:
        """The address of the service's API, from the settings: as set, else the provider's default."""
        return (config.option('base_url') or cls.default_base_url).rstrip('/')

    @classmethod
    def auth_headers(cls, config: ProviderConfig) -> dict[str, str]:
        """The headers that carry the key (a provider may send it its own way)."""
        return {'Authorization': f'Bearer {config.api_key}'} if config.api_key else {}

    @classmethod
    def extra_headers(cls, config: ProviderConfig) -> dict[str, str]:
        """Headers a provider sends with every request besides the key; ValueError for ones the user set wrong."""
        return {}

    def prepare_chat(self, model: str, cancel: CancelToken) -> None:
        """What the provider must know before it asks model for an answer (with the answer's Stop)."""

    def estimate_cost(self, model: str, usage: Usage) -> Cost | None:
        """usage's cost when the service told none: estimated from the dated price table."""
        return pricing.estimate(self.name, model, usage)

    def served_context(self, model: str, cancel: CancelToken) -> ContextWindow | None:
        """The context window of model as the reader set it for this service, or as the service
        itself says of the model it serves, beyond its model list (a local server's loaded
        context); None when it says nothing more. Each request made for it is quick (Connection.open)
        and read bounded (json_answer); a figure that is not one (context.window_tokens) is none.
        Raises ProviderError or Cancelled (ModelList.context_window() then looks elsewhere)."""
        return None

    def prepare_image(self, source: Image | None, model: str, cancel: CancelToken) -> None:
        """What the provider must know before it asks for an image (with the image's Stop)."""

    def structured(self, request: Request, schema: dict, name: str) -> Request:
        """request (chat_request()'s) asking for an answer that is JSON of the shape schema says (a
        JSON Schema of objects, arrays, strings and integers; name: a word for it), as this service's
        format asks for one; request unchanged where the format has no way to (the prompt asks then).
        A service may still answer otherwise: its caller checks the answer against the schema."""
        return request

    def with_tools(self, request: Request, tools: Sequence[Tool]) -> Request:
        """request (chat_request()'s) offering the model tools, as this service's format declares
        them. Only with Capability.TOOLS; chat_request() writes the conversation's tool calls and
        results (Message.tool_calls, Role.TOOL) in the format's own shape."""
        raise NotImplementedError()

    def takes_tools(self, model: str) -> bool:
        """Whether model may be offered tools: the provider's format has them (Capability.TOOLS) and
        the service has not refused them for this model (providers/tool_support.py)."""
        from calibre_plugins.bookai.providers import tool_support  # late: it reads a file of calibre's cache
        return bool(self.capabilities & Capability.TOOLS) and not tool_support.refused(
            self.name, self.config.base_url, model)

    def image_model(self, cancel: CancelToken | None = None) -> str:
        """The model that makes images: as set, else the provider's default."""
        model = (self.config.option('image_model') or '').strip() or self.default_image_model
        if not model:
            raise NotConfigured(_('{provider} has no image model set: choose one in the settings.').format(
                provider=self.display_name))
        return model

    def automatic_model(self, tier: str | None, cancel: CancelToken | None) -> str:
        """The model used when none is set: the newest live model of the tier."""
        chosen = self.pick_for_tier(self.models(cancel=cancel), tier or self.config.option('model_tier'))
        if chosen is None:
            raise NotConfigured(_('{provider} lists no model to use: choose one in the settings.').format(
                provider=self.display_name))
        return chosen.id

    def pick_for_tier(self, models: list[Model], tier: str) -> Model | None:
        """The newest model whose id matches the tier's pattern; else the first listed."""
        return model_for_tier(models, self.tier_patterns, tier)

    # }}}

    # the operations, as calibre's AIProviderPlugin names them {{{

    # The operations are made when asked for, not kept: each holds its provider, and a provider that
    # held them back would live until Python's cycle collector came, its connections open meanwhile.

    @property
    def answering(self) -> Answering:
        return Answering(self)

    @property
    def embedding(self) -> Embedding:
        return Embedding(self)

    @property
    def image_making(self) -> ImageMaking:
        return ImageMaking(self)

    @property
    def model_list(self) -> ModelList:
        return ModelList(self)

    def text_chat(self, messages: Iterable[Message], use_model: str = '', cancel: CancelToken | None = None,
                  max_tokens: int | None = None, schema: dict | None = None,
                  tools: Sequence[Tool] = ()) -> Iterator[Chunk]:
        """Answering.text_chat: the answer's chunks, then one Done or one Failed. Never raises.
        schema: the answer asked for as JSON of that shape (structured()); tools: what the model
        may call (with_tools()), its calls in the Done."""
        return self.answering.text_chat(messages, use_model, cancel, max_tokens, schema, tools)

    def embed(self, texts: Iterable[str], model: str = '', cancel: CancelToken | None = None,
              progress: Callable[[int, int], None] | None = None) -> list[list[float]]:
        """Embedding.embed: a vector for each of texts, in order."""
        return self.embedding.embed(texts, model, cancel, progress)

    def generate_image(self, prompt: str, aspect: str = '2:3', source: Image | None = None, model: str = '',
                       cancel: CancelToken | None = None) -> ImageResult:
        """ImageMaking.generate_image: an image made from prompt (or source changed as it asks)."""
        return self.image_making.generate_image(prompt, aspect, source, model, cancel)

    def models(self, refresh: bool = False, cancel: CancelToken | None = None) -> list[Model]:
        """ModelList.models: the live model list, cached for a day."""
        return self.model_list.models(refresh, cancel)

    def context_window(self, model: str, cancel: CancelToken | None = None) -> ContextWindow | None:
        """ModelList.context_window: how many tokens model reads at once, and where that was learned."""
        return self.model_list.context_window(model, cancel)

    def choose_model(self, tier: str | None = None, cancel: CancelToken | None = None) -> str:
        """ModelList.choose: the configured model, or the one chosen from the live list."""
        return self.model_list.choose(tier, cancel)

    def test_connection(self) -> tuple[bool, str]:
        """(ok, sentence): a real, minimal request, told in words, with no secret in them."""
        ok, sentence = self._test_connection()
        return ok, self.connection.scrub(sentence)

    def _test_connection(self) -> tuple[bool, str]:
        if problem := self.config.missing_setup():
            return False, problem
        try:
            models = self.models(refresh=True)
            model = self.choose_model()
        except ProviderError as e:
            return False, str(e)
        for chunk in self.text_chat([Message(Role.USER, 'Reply with the single word: ready')], model, max_tokens=16):
            if isinstance(chunk, Failed):
                return False, chunk.message
        return True, _('{provider} answered with model {model} ({count} models available).').format(
            provider=self.display_name, model=model, count=len(models))

    # }}}


def with_payload(request: Request, change: Callable[[dict], None]) -> Request:
    """request with its JSON body as change(payload) leaves it: the body of a request Book AI has
    just made itself (structured() adds to a chat_request()'s)."""
    payload = json.loads(request.body or b'{}')
    change(payload)
    return replace(request, body=to_json(payload).encode('utf-8'))


def arguments_object(arguments: str) -> dict:
    """A tool call's arguments (the JSON text a model wrote) as the JSON object the formats that
    send them back as an object want: {} when they are not one (cut, or not JSON)."""
    try:
        value = limits.load_json(arguments)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def strict_schema(schema: Any, dropped: tuple[str, ...]) -> Any:
    """schema without the keywords dropped, at every level (a service that refuses them)."""
    if isinstance(schema, dict):
        return {k: strict_schema(v, dropped) for k, v in schema.items() if k not in dropped}
    if isinstance(schema, list):
        return [strict_schema(v, dropped) for v in schema]
    return schema


def text_of_html(body: str) -> str:
    """Some servers answer errors with an HTML page: its visible text, briefly."""
    text = re.sub(r'(?is)<(script|style).*?</\1>', ' ', body)
    text = re.sub(r'<[^>]+>', ' ', text)
    return ' '.join(text.split())
