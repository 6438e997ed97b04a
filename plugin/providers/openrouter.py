# License: GPLv3 Copyright: the Book AI developers
"""OpenRouter: the chat-completions wire format (openai_chat.py) with its own catalogue and choice.

OpenRouter chooses a model as calibre 9.17 does (openrouter_choice(); "auto" is
OpenRouter's own openrouter/auto), and sends the models after the first one chosen as
OpenRouter's fallbacks (the request's `models`). Its catalogue says more of each model
(description, moderation, prices of each kind), for the model chooser (gui/model_chooser.py).
Images (covers) through chat completions with `modalities`: the image comes back as a data:
URL in the message's `images` (openrouter.ai/docs, image generation)."""

import math
import re
from dataclasses import replace
from typing import Any, cast

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import NotConfigured, ProviderError, ResultBlocked
from calibre_plugins.bookai.core.images import Image, ImageAddress, ImageResult, image_from_base64, no_image, said
from calibre_plugins.bookai.core.messages import Cost, Message, Usage, money
from calibre_plugins.bookai.core.transport import Request
from calibre_plugins.bookai.providers.caching import cached_blocks
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.configuration import ProviderConfig
from calibre_plugins.bookai.providers.models import Model, kept_models
from calibre_plugins.bookai.providers.openai_chat import OpenAIChat, number
from calibre_plugins.bookai.providers.options import Option
from calibre_plugins.bookai.providers.pricing import count

load_translations()

AUTO_MODEL = 'openrouter/auto'  # OpenRouter's own choice of a model for each question
# calibre 9.17's families for OpenRouter's automatic choice (calibre/ai/open_router/backend.py,
# free_model_choice), in its order; the paid fallbacks leave gpt-oss out, as calibre does
OPENROUTER_FAMILIES = ('gemini', 'gpt-5', 'grok', 'gpt-oss', 'claude', 'deepseek')
OPENROUTER_PAID_FAMILIES = ('gemini', 'gpt-5', 'grok', 'claude', 'deepseek')


# the models whose prompt cache OpenRouter is told where to end (cache_control, as Anthropic's API
# takes it: openrouter.ai/docs, prompt caching); of Gemini's it reads only the last breakpoint
CACHE_CONTROL_MODELS = ('anthropic/', 'google/gemini')


def cache_marked(messages: list[Message], wire: list[dict], book_only: bool = False) -> list[dict]:
    """wire (messages as chat completions sends them) with the book's text of each question a
    content part of its own and cache breakpoints as providers.caching.cached_blocks() places them
    (with book_only, the book's text of the last question only). Tools' results keep their content."""
    said = iter(cached_blocks(messages, [w for w in wire if w.get('role') not in ('system', 'tool')], book_only))
    return [w if w.get('role') in ('system', 'tool') else next(said) for w in wire]


def openrouter_family(model: Model) -> str:
    """Which of OPENROUTER_FAMILIES model belongs to, read from its name ('Google: Gemini 2.5
    Pro') as calibre reads it; '' for none."""
    creator, colon, rest = model.name.partition(':')
    creator = creator.lower()
    family = rest.strip().partition(' ')[0].lower() if colon else ''
    bare = re.sub(r' \(free\)$', '', rest.strip()).strip().lower()  # the name without its maker
    if creator == 'google':
        return 'gemini' if family == 'gemini' else ''
    if creator == 'deepseek':
        return 'deepseek'
    if creator == 'openai':
        return 'gpt-5' if bare.startswith('gpt-5') else 'gpt-oss' if bare.startswith('gpt-oss') else ''
    if creator == 'anthropic':
        return 'claude' if family == 'claude' else ''
    if creator == 'xai':
        return 'grok' if family == 'grok' and 'code fast' not in bare else ''
    return ''


# the prices calibre 9.17 reads from OpenRouter's catalogue (its Pricing); a model is free when
# they are all zero
FREE_KINDS = ('prompt', 'completion', 'request', 'image', 'image_token', 'image_output', 'web_search',
              'internal_reasoning', 'input_cache_read', 'input_cache_write')


def openrouter_free(pricing: tuple[tuple[str, float], ...]) -> bool:
    """Costs nothing: OpenRouter lists prices (openrouter_pricing) and those calibre reads are
    all zero (a price that is not one, such as -1, is not free)."""
    listed = [v for k, v in pricing if k in FREE_KINDS]
    return bool(listed) and all(v == 0 for v in listed)


def openrouter_choice(models: list[Model], allow_paid: bool) -> list[Model]:
    """The models OpenRouter's automatic choice uses, the first to ask and the others as
    fallbacks, as calibre 9.17 chooses them: the newest model of each family in
    OPENROUTER_FAMILIES' order, of the free ones when any is free; else, with allow_paid, the
    newest paid one of each of OPENROUTER_PAID_FAMILIES, cheapest output first. Models that
    give no text, or whose prices cannot be read, are left out (calibre also lists image
    makers, and fails on prices it cannot read). NotConfigured when nothing
    free is listed and paid models are not allowed. Total over any list: an empty one, one with
    no model of a known family (then []: OpenRouter chooses, see choose_model()), one that
    names a model twice (once is counted), dates or prices that are not numbers."""
    free: dict[str, list[Model]] = {}
    paid: dict[str, list[Model]] = {}
    for m in models:
        family = openrouter_family(m)
        if not family or m.price('prompt') is None or m.price('completion') is None or (
                m.output_modalities and 'text' not in m.output_modalities):
            continue  # (calibre cannot read a catalogue with an entry it cannot price at all)
        (free if openrouter_free(m.pricing) else paid).setdefault(family, []).append(m)

    def created(m: Model) -> float:
        return m.created if type(m.created) in (int, float) and math.isfinite(m.created) else 0.0

    def newest(groups: dict, families: tuple) -> list[Model]:
        # the first listed of the newest, as a stable sort gives calibre
        return [sorted(groups[f], key=created, reverse=True)[0] for f in families if groups.get(f)]

    chosen = newest(free, OPENROUTER_FAMILIES)
    if chosen:
        return chosen
    if not allow_paid:
        raise NotConfigured(_('No free models were found for text to text generation. Choose "Free or paid '
                              'models", or a model, in the settings of OpenRouter.'))
    # every price is known: the models without one were left out above
    return sorted(newest(paid, OPENROUTER_PAID_FAMILIES), key=lambda m: cast(float, m.price('completion')))


def openrouter_pricing(data: object) -> tuple[tuple[str, float], ...]:
    """The prices of an OpenRouter catalogue entry, as (kind, US dollars per unit); () when
    any price cannot be read (the model is then neither free nor priced)."""
    if not isinstance(data, dict):
        return ()
    try:
        pricing = tuple((str(k), float(v)) for k, v in data.items())
    except (TypeError, ValueError):
        return ()
    kinds = dict(pricing)
    if 'prompt' not in kinds or 'completion' not in kinds or any(v != v for v in kinds.values()):  # NaN
        return ()
    return pricing


def strings(values: object) -> tuple[str, ...]:
    """The strings of a JSON list, as a tuple; () for anything that is not a list."""
    return tuple(v for v in values if isinstance(v, str)) if isinstance(values, list) else ()


class OpenRouter(OpenAIChat):

    name = 'openrouter'
    display_name = 'OpenRouter'
    description = _('Hundreds of models from many companies through one account, including free ones. '
                    'Reports the cost of every answer.')
    default_base_url = 'https://openrouter.ai/api/v1'
    remote_service = True
    capabilities = (OpenAIChat.capabilities | Capability.EMBEDDINGS | Capability.IMAGE_GENERATION
                    | Capability.IMAGE_EDITING)
    default_embedding_model = 'openai/text-embedding-3-small'
    default_image_model = 'google/gemini-2.5-flash-image'
    has_model_chooser = True  # the settings offer gui/model_chooser.py for its catalogue
    options = (
        Option('model_strategy', _('Models to use'), 'choice', 'free_or_paid', choices=(
            ('free', _('Free models only')), ('free_or_paid', _('Free or paid models')),
            ('auto', _('Let OpenRouter choose (openrouter/auto)'))), help=_(
                'With no model set: "Free models only" uses the newest free model of each of Gemini, '
                'GPT-5, Grok, gpt-oss, Claude and DeepSeek, and fails when none is free; "Free or paid '
                'models" does the same, and when none is free uses the newest paid one of each, cheapest '
                'first; the models after the first are the ones OpenRouter falls back to.')),
        Option('deny_data_collection', _('Only use providers that do not keep your prompts'), 'bool', True),
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fallbacks = {}  # model id: the models OpenRouter is to fall back to, as chosen with it
        self._image_models: dict[str, Model] | None = None

    @classmethod
    def all_options(cls) -> tuple[Option, ...]:
        """Every option but the tier of the automatic choice: model_strategy says how it chooses."""
        return tuple(o for o in super().all_options() if o.name != 'model_tier')

    def automatic_model(self, tier: str | None, cancel: CancelToken | None) -> str:
        """openrouter/auto, or the first of openrouter_choice(), as the strategy says (the tier
        plays no part). The fallbacks chosen with it are kept for chat_payload(). When paid models
        are allowed and the list has none of a known family (or none at all), OpenRouter chooses:
        openrouter/auto."""
        strategy = self.config.option('model_strategy')
        if strategy == 'auto':
            return AUTO_MODEL
        chosen = openrouter_choice(self.models(cancel=cancel), allow_paid=strategy != 'free')
        if not chosen:
            return AUTO_MODEL
        self.fallbacks[chosen[0].id] = tuple(dict.fromkeys(m.id for m in chosen[1:] if m.id != chosen[0].id))
        return chosen[0].id

    @classmethod
    def extra_headers(cls, config: ProviderConfig) -> dict[str, str]:
        return {'X-Title': 'Book AI'}

    def chat_payload(self, messages: list[Message], model: str, max_tokens: int | None) -> dict:
        payload = super().chat_payload(messages, model, max_tokens)
        effort = payload.pop('reasoning_effort', None)
        if effort:
            payload['reasoning'] = {'effort': effort}
        elif self.config.option('reasoning_effort') == 'none':
            payload['reasoning'] = {'enabled': False}
        payload['usage'] = {'include': True}
        if fallbacks := self.fallbacks.get(model):
            payload['models'] = list(fallbacks)
        if model.startswith(CACHE_CONTROL_MODELS):
            payload['messages'] = cache_marked(messages, payload['messages'], book_only=model.startswith('google/'))
        return self.with_routing(payload)

    def with_routing(self, payload: dict) -> dict:
        """payload, with the routing OpenRouter is asked for: no provider that keeps prompts, when so set."""
        if self.config.option('deny_data_collection'):
            payload['provider'] = {'data_collection': 'deny'}
        return payload

    def embed_request(self, texts: list[str], model: str) -> Request:
        return self.connection.request('/embeddings', self.with_routing({'model': model, 'input': list(texts)}))

    # images {{{

    def image_models(self, cancel: CancelToken | None = None) -> dict[str, Model]:
        """OpenRouter's models that make images, by id (its catalogue filtered by output
        modalities, which the plain list leaves the image-only ones out of); asked once."""
        if self._image_models is None:
            data = self.connection.json_answer(
                self.connection.request('/models?output_modalities=image'), '', cancel or CancelToken(),
                _('{provider} sent a model list that could not be read.'))
            items = data.get('data') if isinstance(data, dict) else None
            listed = kept_models(self.parse_models({'data': items[:limits.MAX_MODELS] if isinstance(items, list)
                                                    else []}))
            self._image_models = {m.id: m for m in listed}
        return self._image_models

    def prepare_image(self, source: Image | None, model: str, cancel: CancelToken) -> None:
        """The catalogue of image models, asked for first (with the same Stop), to know whether
        the model also writes text: one that makes only images must be asked for images alone
        (modalities ["image"]). Without it, both are asked for."""
        try:
            self.image_models(cancel)
        except ProviderError:
            self._image_models = {}

    def image_request(self, prompt: str, model: str, aspect: str, source: Image | None = None) -> Request:
        content = prompt if source is None else [
            {'type': 'text', 'text': prompt}, {'type': 'image_url', 'image_url': {'url': source.data_url()}}]
        listed = (self._image_models or {}).get(model)
        modalities = ['image'] if listed is not None and listed.output_modalities and (
            'text' not in listed.output_modalities) else ['image', 'text']
        return self.connection.request('/chat/completions', self.with_routing({
            'model': model, 'messages': [{'role': 'user', 'content': content}], 'stream': False,
            'modalities': modalities, 'image_config': {'aspect_ratio': aspect}, 'usage': {'include': True}}))

    def parse_image_answer(self, data: Any, model: str) -> ImageResult:
        if data.get('error'):  # an error met after the request was accepted comes in the body
            raise self.stream_error(data['error'], model)
        usage = Usage()
        if isinstance(data.get('usage'), dict):  # the counts checked: the image matters more than its usage
            u = data['usage']
            cost = money(u.get('cost'))
            usage = Usage(count(u.get('prompt_tokens')), count(u.get('completion_tokens')),
                          cost=None if cost is None else Cost(float(cost), 'USD', 'reported'))
        model = data.get('model') if isinstance(data.get('model'), str) and data.get('model') else model
        text = ''
        for choice in data.get('choices') or ():
            if choice.get('error'):
                raise self.stream_error(choice['error'], model)
            message = choice.get('message') or {}
            if isinstance(message.get('content'), str):
                text += message['content']
            for image in message.get('images') or ():
                url = (image.get('image_url') or {}).get('url')
                if isinstance(url, str) and url and not url.startswith('data:'):
                    raise ImageAddress(url, usage, text=said(text, 2000))
                if url:
                    return ImageResult(image_from_base64(url, self.display_name), model, usage, text=said(text, 2000))
            if choice.get('finish_reason') == 'content_filter':
                raise ResultBlocked(_('{provider} blocked the image.').format(provider=self.display_name),
                                    provider_message=said(text))
        raise no_image(self.display_name, model, text)

    # }}}

    @staticmethod
    def usage_of(usage: dict, timings: object = None) -> Usage:
        """OpenAI's usage, with the prompt's tokens read from and written to the cache in its
        prompt_tokens_details, and the cost OpenRouter reports (which counts its cache's rates
        already: its cache_discount is not read)."""
        u = OpenAIChat.usage_of(usage, timings)
        cost = usage.get('cost')
        if cost is not None and type(cost) not in (int, float):
            raise ValueError('the cost is not a number')  # a stream of the wrong shape
        amount = money(cost)  # NaN, infinite, negative or absurd: unknown, never added up
        if amount is not None:  # OpenRouter credits are US dollars
            u = replace(u, cost=Cost(amount, 'USD', 'reported'))
        return u

    def parse_models(self, data: dict) -> list[Model]:
        models = []
        for m in data.get('data', ()):
            if not isinstance(m, dict) or not isinstance(m.get('id'), str):
                continue
            pricing = openrouter_pricing(m.get('pricing'))
            kinds = dict(pricing)
            prices = (kinds['prompt'] * 1e6, kinds['completion'] * 1e6) if pricing else ()
            arch = m['architecture'] if isinstance(m.get('architecture'), dict) else {}
            top = m['top_provider'] if isinstance(m.get('top_provider'), dict) else {}
            moderated = top.get('is_moderated')
            description = m.get('description')
            models.append(Model(
                m['id'], str(m.get('name') or ''), number(m.get('created')), number(m.get('context_length'), int),
                free=openrouter_free(pricing), prices=prices,
                reasoning='reasoning' in strings(m.get('supported_parameters')),
                description=description if isinstance(description, str) else '',
                moderated=moderated if isinstance(moderated, bool) else None, pricing=pricing,
                input_modalities=strings(arch.get('input_modalities')),
                output_modalities=strings(arch.get('output_modalities'))))
        return models
