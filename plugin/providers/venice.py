# License: GPLv3 Copyright: the Book AI developers
"""Venice AI: the OpenAI chat-completions wire format, plus what Venice adds to it,
as calibre 9.17's own Venice AI provider sends it (so that settings carried over
from calibre mean the same here).

- Every request carries `venice_parameters` with `include_venice_system_prompt`
  off: Book AI sends its own instructions, and Venice would add its own otherwise.
- The live list (/models?type=text) says what each model can do, in its
  `model_spec`: its traits ('default', 'fastest', 'most_intelligent'...), whether
  it reasons (supportsReasoning) and takes a reasoning effort
  (supportsReasoningEffort), its prices per million tokens, and whether it is
  offline (such models are left out of the list). Its description, prices and
  whether it is uncensored are kept for gui/model_chooser.py, which calibre's Venice
  settings have too (has_model_chooser is not set yet: the chooser is OpenRouter's for now).
- Reasoning effort: 'none' asks Venice to turn thinking off (disable_thinking)
  where the model reasons; low, medium and high go as `reasoning_effort` where the
  model takes one; 'auto' sends neither. For a model the list does not name (or
  when the list cannot be had) the effort is sent as chosen: Venice ignores what a
  model cannot do, and calibre would send nothing, which would quietly drop the
  reader's choice.
- Web search (off by default, it costs extra): enable_web_search 'auto' and
  enable_web_citations; the pages Venice cites come back in the first chunk of
  the stream (venice_parameters.web_search_citations, or a top-level 'citations'
  list) and end up in the Done's web_links.
- The automatic model choice follows calibre's: high is the model with the trait
  'most_intelligent', else the one with the highest output price (then the
  newest); low is the one with the trait 'fastest', else the cheapest; medium is
  the one with the trait 'default', else low's.
- When Venice reports no cost, it is estimated from the prices in the live list.
- Images (covers), as calibre 9.17 makes them: Venice's own /image/generate (not its
  OpenAI-compatible route), the model from the live list of image models
  (/models?type=image: the one with the trait 'default', else the newest), asked for the
  aspect ratio when the model lists the ones it takes (the nearest of them), else for a
  width and height of at most 1,280 pixels; no watermark. The image's price is the list's.
  Venice cannot change an image it is given.
"""

import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, cast

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import NotConfigured, ProviderError
from calibre_plugins.bookai.core.images import Image, ImageResult, image_from_base64, no_image
from calibre_plugins.bookai.core.messages import Cost, Message, ReasoningDelta, TextDelta, Usage, WebLink
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.core.streams import SSEEvent
from calibre_plugins.bookai.core.transport import Request
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.models import Model
from calibre_plugins.bookai.providers.openai_chat import EFFORTS, OpenAIChat
from calibre_plugins.bookai.providers.options import Option
from calibre_plugins.bookai.providers.streaming import StreamState, json_of

load_translations()

MOST_TRAITS = 16           # traits kept for one model
LONGEST_TRAIT = 64


def dict_of(value: object) -> dict:
    """value if it is a JSON object, else an empty one: the model list is read as it comes."""
    return value if isinstance(value, dict) else {}


def list_of(value: object) -> list:
    """value if it is a JSON list, else an empty one."""
    return value if isinstance(value, list) else []


def seconds(created: object) -> float:
    """A date the list gives (seconds since 1970) as a float; 0 for one that is not a date (a
    negative, NaN, infinite or astronomically large number, text)."""
    return float(cast(float, created)) if type(created) in (int, float) and 0 < cast(float, created) <= 2 ** 40 else 0.0


def usd(pricing: dict, key: str) -> float:
    """A price of the model list's pricing object, in US dollars per million tokens; 0 when not given."""
    price = dict_of(pricing.get(key)).get('usd')
    if type(price) in (int, float) and 0 <= cast(float, price) < 1e9:
        return float(cast(float, price))
    return 0.0


def model_of(entry: dict) -> Model | None:
    """A Model from one entry of Venice's model list; None for one that does not answer
    text questions or is offline."""
    model_id = entry.get('id')
    if not isinstance(model_id, str) or not model_id or entry.get('type', 'text') != 'text':
        return None
    spec = dict_of(entry.get('model_spec'))
    if spec.get('offline') is True:
        return None
    caps = dict_of(spec.get('capabilities'))
    pricing = dict_of(spec.get('pricing'))
    traits = spec.get('traits')
    traits = tuple(t for t in traits if isinstance(t, str) and len(t) <= LONGEST_TRAIT)[:MOST_TRAITS] \
        if isinstance(traits, list) else ()
    name, description = spec.get('name'), spec.get('description')
    created = entry.get('created')
    context = spec.get('availableContextTokens')
    prices = (usd(pricing, 'input'), usd(pricing, 'output'))
    known = any(prices)  # Venice lists 0 for a price it does not know (a model in preview)
    return Model(model_id, name if isinstance(name, str) else '',
                 seconds(created),
                 context if type(context) is int and context > 0 else 0,
                 reasoning=caps.get('supportsReasoning') is True, prices=prices if known else (),
                 traits=traits, reasoning_effort=caps.get('supportsReasoningEffort') is True,
                 description=description if isinstance(description, str) else '',
                 moderated=False if spec.get('uncensored') is True else None,
                 # for the model chooser (gui/model_chooser.py), per token as OpenRouter lists them
                 pricing=(('prompt', prices[0] / 1e6), ('completion', prices[1] / 1e6)) if known else ())


def output_price(model: Model) -> float:
    """The model's price per million output tokens; 0 when the list gives none."""
    return model.prices[1] if len(model.prices) > 1 else 0.0


def input_price(model: Model) -> float:
    """The model's price per million input tokens; 0 when the list gives none."""
    return model.prices[0] if model.prices else 0.0


def cited_pages(data: dict) -> Iterator[WebLink]:
    """The web pages one chunk of Venice's stream cites: its 'citations' (addresses) and
    venice_parameters.web_search_citations (objects with a url and a title), as they come."""
    for c in list_of(data.get('citations')):
        if isinstance(c, str):
            yield WebLink(c, c)
    for c in list_of(dict_of(data.get('venice_parameters')).get('web_search_citations')):
        if isinstance(c, dict) and isinstance(c.get('url'), str):
            title = c.get('title')
            yield WebLink(title if isinstance(title, str) and title.strip() else c['url'], c['url'])
        elif isinstance(c, str):
            yield WebLink(c, c)


def add_pages(links: list[WebLink], pages: Iterable[WebLink]) -> None:
    """Add pages to links, each address once (Venice names them in several places). Which of
    them are kept and shown, and how, is core.web_links's to say, as for every provider."""
    known = {w.url for w in links}
    for page in pages:
        if page.url not in known:
            links.append(page)
            known.add(page.url)


# sizes for the image models that take a width and a height (at most 1,280 pixels, multiples of
# 8), by aspect: calibre 9.17's, and 2:3, a printed book's
PIXEL_SIZES = {'2:3': (848, 1272), '3:4': (960, 1280), '1:1': (1024, 1024), '9:16': (720, 1280), '4:3': (1280, 960)}


@dataclass(frozen=True)
class ImageModel:
    """What Venice's list says of one image model."""
    id: str
    created: float = 0.0
    traits: tuple[str, ...] = ()
    aspect_ratios: tuple[str, ...] = ()
    price: float = 0.0  # US dollars an image, 0 when not given

    def __post_init__(self) -> None:
        # the service's words, as the settings and the command line show them (core/printable.py)
        object.__setattr__(self, 'id', one_line(self.id))
        object.__setattr__(self, 'traits', tuple(one_line(t) for t in self.traits))


def image_model_of(entry: dict) -> ImageModel | None:
    """An ImageModel from one entry of /models?type=image; None for one that is offline or not an image model."""
    model_id = entry.get('id')
    if not isinstance(model_id, str) or not model_id or entry.get('type') != 'image':
        return None
    spec = dict_of(entry.get('model_spec'))
    if spec.get('offline') is True:
        return None
    pricing, constraints = dict_of(spec.get('pricing')), dict_of(spec.get('constraints'))
    price = usd(pricing, 'generation')
    if not price:  # newer models are priced by resolution: the default one's, as calibre reads it
        resolutions = dict_of(pricing.get('resolutions'))
        default = resolutions.get(constraints.get('defaultResolution')) or next(iter(resolutions.values()), None)
        price = usd({'p': default}, 'p') if isinstance(default, dict) else 0.0
    traits = tuple(t for t in list_of(spec.get('traits')) if isinstance(t, str) and len(t) <= LONGEST_TRAIT)
    ratios = tuple(r for r in list_of(constraints.get('aspectRatios')) if isinstance(r, str) and len(r) <= 16)
    created = entry.get('created')
    return ImageModel(model_id, seconds(created),
                      traits[:MOST_TRAITS], ratios[:64], price)


def nearest_aspect(aspect: str, choices: tuple[str, ...]) -> str | None:
    """The one of choices (width:height) nearest in shape to aspect; None when none can be read."""
    def log_ratio(a: str) -> float | None:
        try:
            w, h = (float(x) for x in a.split(':'))
            return math.log(w / h)
        except (ValueError, ZeroDivisionError):
            return None
    wanted = log_ratio(aspect)
    known = [(abs(r - wanted), c) for c in choices if (r := log_ratio(c)) is not None] if wanted is not None else []
    return min(known)[1] if known else None


class Venice(OpenAIChat):

    name = 'venice'
    display_name = 'Venice AI'
    description = _('Venice AI, a service that says it does not store your chats, with open and uncensored '
                    'models. Needs an API key and credit.')
    default_base_url = 'https://api.venice.ai/api/v1'
    remote_service = True
    capabilities = OpenAIChat.capabilities | Capability.WEB_SEARCH | Capability.IMAGE_GENERATION
    options = (Option('web_search', _('Let the model search the web (costs extra)'), 'bool', False),
               Option('safe_mode', _('Blur adult content in generated images'), 'bool', False))

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._listed: dict[str, Model] | None = None
        self._image_models: dict[str, ImageModel] | None = None

    # the model list {{{

    def models_request(self) -> Request:
        return self.connection.request('/models?type=text')

    def parse_models(self, data: Any) -> list[Model]:
        items = dict_of(data).get('data') if isinstance(data, dict) else data
        if not isinstance(items, list):
            return []
        return [m for m in (model_of(e) for e in items if isinstance(e, dict)) if m is not None]

    def model_info(self, model: str) -> Model | None:
        """What the live list (asked for by prepare_chat) says of model; None when it names no such
        model, or when the list could not be had."""
        return (self._listed or {}).get(model)

    def pick_for_tier(self, models: list[Model], tier: str) -> Model | None:
        """As calibre chooses: by Venice's traits, else by price (see the module's doc)."""
        if not models:
            return None

        def with_trait(trait: str) -> Model | None:
            return next((m for m in models if trait in m.traits), None)

        if tier == 'high':
            return with_trait('most_intelligent') or max(models, key=lambda m: (output_price(m), m.created))
        unknown = float('inf')  # a price the list does not give is not cheap
        low = with_trait('fastest') or min(models, key=lambda m: (output_price(m) or unknown,
                                                                  input_price(m) or unknown))
        if tier == 'low':
            return low
        return with_trait('default') or low

    # }}}

    # the conversation {{{

    def prepare_chat(self, model: str, cancel: CancelToken) -> None:
        """The live list, asked for once, with the answer's Stop: chat_payload() and estimate_cost()
        read it. When it cannot be had, the chat goes on (and says what is wrong, if anything is)."""
        if self._listed is None:
            try:
                self._listed = {m.id: m for m in self.models(cancel=cancel)}
            except ProviderError:
                pass

    def chat_payload(self, messages: list[Message], model: str, max_tokens: int | None) -> dict:
        payload = super().chat_payload(messages, model, max_tokens)
        payload.pop('reasoning_effort', None)
        venice: dict[str, Any] = {'include_venice_system_prompt': False}
        effort = self.config.option('reasoning_effort')
        info = self.model_info(model)
        if effort == 'none':
            if info is None or info.reasoning:
                venice['disable_thinking'] = True
        elif effort in EFFORTS and (info is None or info.reasoning_effort):
            payload['reasoning_effort'] = effort
        if self.config.option('web_search'):
            venice['enable_web_search'] = 'auto'
            venice['enable_web_citations'] = True
        payload['venice_parameters'] = venice
        return payload

    def read_stream(self, events: Iterator[SSEEvent], state: StreamState) -> Iterator[TextDelta | ReasoningDelta]:
        return super().read_stream(self.citing(events, state), state)

    def citing(self, events: Iterator[SSEEvent], state: StreamState) -> Iterator[SSEEvent]:
        """events, the pages cited in them added to state.web_links as they pass. Venice sends
        them in the first chunk: only a chunk that names citations is read twice."""
        for event in events:
            if 'citations' in event.data and event.data != '[DONE]':
                add_pages(state.web_links, cited_pages(json_of(event, self.display_name)))
            yield event

    def estimate_cost(self, model: str, usage: Usage) -> Cost | None:
        """usage's cost estimated from the live list's prices; else from the dated price table."""
        u = usage
        if u.input_tokens is not None and u.output_tokens is not None and self._listed:
            info = self._listed.get(model)
            if info is not None and info.prices:
                amount = (u.input_tokens * input_price(info) + u.output_tokens * output_price(info)) / 1_000_000
                return Cost(amount, 'USD', 'estimated', time.strftime('%Y-%m-%d', time.gmtime()))
        return super().estimate_cost(model, usage)

    # }}}

    # images {{{

    def image_models(self, cancel: CancelToken | None = None) -> dict[str, ImageModel]:
        """Venice's image models that are online, by id, as its live list gives them (asked once)."""
        if self._image_models is None:
            data = self.connection.json_answer(
                self.connection.request('/models?type=image'), '', cancel or CancelToken(),
                _('{provider} sent a model list that could not be read.'))
            items = dict_of(data).get('data') if isinstance(data, dict) else data
            found = (image_model_of(e) for e in list_of(items)[:limits.MAX_MODELS] if isinstance(e, dict))
            self._image_models = {m.id: m for m in found if m is not None}
        return self._image_models

    def image_model(self, cancel: CancelToken | None = None) -> str:
        """The image model as set; else, as calibre chooses, the listed one with the trait 'default',
        else the newest."""
        configured = (self.config.option('image_model') or '').strip()
        if configured:
            return configured
        models = list(self.image_models(cancel).values())
        if not models:
            raise NotConfigured(_('{provider} lists no model that makes images.').format(provider=self.display_name))
        chosen = next((m for m in models if 'default' in m.traits), None) or max(models, key=lambda m: m.created)
        return chosen.id

    def prepare_image(self, source: Image | None, model: str, cancel: CancelToken) -> None:
        """The list of image models, asked for first (with the same Stop), for the shapes and the
        price of the model. When a model is set, the image is asked for even if the list cannot
        be had; when none is, the list must say which."""
        if source is not None:
            return
        try:
            self.image_models(cancel)
        except ProviderError:
            if not (model or (self.config.option('image_model') or '').strip()):
                raise
            self._image_models = {}  # the list only adds the shapes and the price

    def image_request(self, prompt: str, model: str, aspect: str, source: Image | None = None) -> Request:
        payload = {'model': model, 'prompt': prompt, 'format': 'png', 'hide_watermark': True,
                   'safe_mode': bool(self.config.option('safe_mode'))}
        info = (self._image_models or {}).get(model)
        ratio = nearest_aspect(aspect, info.aspect_ratios) if info is not None else None
        if ratio:
            payload['aspect_ratio'] = ratio
        else:
            payload['width'], payload['height'] = PIXEL_SIZES.get(aspect, PIXEL_SIZES['1:1'])
        return self.connection.request('/image/generate', payload)

    def parse_image_answer(self, data: Any, model: str) -> ImageResult:
        for b64 in data.get('images') or ():
            info = (self._image_models or {}).get(model)
            usage = Usage(cost=Cost(info.price, 'USD', 'estimated', time.strftime('%Y-%m-%d', time.gmtime()))) \
                if info is not None and info.price else Usage()
            return ImageResult(image_from_base64(b64, self.display_name), model, usage)
        raise no_image(self.display_name, model)

    # }}}
