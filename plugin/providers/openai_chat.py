# License: GPLv3 Copyright: the Book AI developers
"""The OpenAI chat-completions wire format, and the services that speak it:
any OpenAI-compatible server (with presets for the common ones), LM Studio,
OpenRouter, GitHub models and xAI's Grok. The first three also make embeddings
(the /embeddings route: base.py).

OpenRouter chooses a model as calibre 9.17 does (openrouter_choice(); "auto" is
OpenRouter's own openrouter/auto), and sends the models after the first one chosen as
OpenRouter's fallbacks (the request's `models`). Its catalogue says more of each model
(description, moderation, prices of each kind), for the model chooser (gui/model_chooser.py).

Images (covers): an OpenAI-compatible server through OpenAI's /images/generations (as
LocalAI and stable-diffusion.cpp's server speak it: a "WxH" size, base64 asked for); xAI
through its images API (/images/generations and, with a JSON body, /images/edits:
docs.x.ai); OpenRouter through chat completions with `modalities` (the image comes back as
a data: URL in the message's `images`: openrouter.ai/docs, image generation)."""

import math
import re
from collections.abc import Iterator
from dataclasses import replace
from functools import cached_property

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import NotConfigured, ProviderError, ResultBlocked, error_for_status
from calibre_plugins.bookai.core.images import (Image, ImageAddress, ImageResult, image_from_base64, images_api_result,
                                               no_image, said)
from calibre_plugins.bookai.core.messages import Cost, Message, ReasoningDelta, Role, TextDelta, Usage, money
from calibre_plugins.bookai.core.streams import SSEEvent
from calibre_plugins.bookai.core.transport import Request
from calibre_plugins.bookai.providers.base import AIProviderPlugin, Capability, redacted_answer
from calibre_plugins.bookai.providers.models import Model, kept_models
from calibre_plugins.bookai.providers.options import Option, parse_headers
from calibre_plugins.bookai.providers.pricing import count
from calibre_plugins.bookai.providers.streaming import StreamState, json_of

load_translations()

EFFORTS = ('high', 'medium', 'low')
# "developer" is OpenAI's newer name for system; most compatible servers know only system
WIRE_ROLES = {Role.SYSTEM: 'system', Role.DEVELOPER: 'system', Role.USER: 'user', Role.ASSISTANT: 'assistant'}


# the sampling temperature, in the range the OpenAI chat API allows; -1 sends none
TEMPERATURE = Option('temperature', _('Temperature (-1 for the server\'s default)'), 'float', -1.0,
                     minimum=-1, maximum=2)


def finish_reason_of(reason: str | None) -> str:
    """A finish reason as Book AI names them ('stop', 'length'), from a server's."""
    return {'stop': 'stop', 'length': 'length', 'eos': 'stop', 'end_turn': 'stop'}.get(reason, reason or 'stop')


class OpenAIChat(AIProviderPlugin):
    """Base for the chat-completions services: subclasses set where and how."""

    capabilities = Capability.TEXT_TO_TEXT | Capability.REASONING

    def chat_messages(self, messages: list[Message]) -> list[dict]:
        return [{'role': WIRE_ROLES[m.role], 'content': m.text} for m in messages]

    def chat_payload(self, messages: list[Message], model: str, max_tokens: int | None) -> dict:
        payload = {'model': model, 'messages': self.chat_messages(messages), 'stream': True,
                   'stream_options': {'include_usage': True}}
        if max_tokens:
            payload['max_tokens'] = max_tokens
        temperature = self.option_or_none('temperature')
        if temperature is not None and temperature >= 0:
            payload['temperature'] = temperature
        effort = self.option('reasoning_effort')
        if effort in EFFORTS:
            payload['reasoning_effort'] = effort
        return payload

    def option_or_none(self, name: str) -> object:
        """The value of an option, None when this service has no such option."""
        try:
            self.option_named(name)
        except KeyError:
            return None
        return self.option(name)

    def chat_request(self, messages: list[Message], model: str, max_tokens: int | None = None) -> Request:
        return self.request('/chat/completions', self.chat_payload(messages, model, max_tokens))

    def read_stream(self, events: Iterator[SSEEvent], state: StreamState) -> Iterator[TextDelta | ReasoningDelta]:
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
                state.usage = self.usage_of(usage)
            for choice in data.get('choices') or ():
                delta = choice.get('delta') or {}
                reasoning = delta.get('reasoning_content') or delta.get('reasoning')
                if reasoning:
                    yield ReasoningDelta(reasoning)
                if content := delta.get('content'):
                    yield TextDelta(content)
                if reason := choice.get('finish_reason'):
                    if reason == 'content_filter':
                        raise ResultBlocked(_('{provider} blocked the answer.').format(provider=self.display_name))
                    state.finish_reason = finish_reason_of(reason)
        # servers that send no [DONE] still end with a finish reason
        state.finished = state.finished or bool(state.finish_reason)

    def stream_error(self, error: object, model: str) -> ProviderError:
        """The ProviderError for an error a server reports inside a stream."""
        if isinstance(error, dict):
            message, code = str(error.get('message', '')), str(error.get('code', '') or error.get('type', ''))
            status = error.get('code') if isinstance(error.get('code'), int) else 500
        else:
            message, code, status = str(error), '', 500
        return error_for_status(status, self.display_name, message=message, code=code, model=model)

    @staticmethod
    def usage_of(usage: dict) -> Usage:
        details = usage.get('completion_tokens_details')
        details = details if isinstance(details, dict) else {}
        prompt = usage.get('prompt_tokens_details')
        cached = prompt.get('cached_tokens') if isinstance(prompt, dict) else None
        return Usage(usage.get('prompt_tokens'), usage.get('completion_tokens'), details.get('reasoning_tokens'),
                     cached)  # Usage keeps only what are counts

    def models_request(self) -> Request:
        return self.request('/models')

    def parse_models(self, data: dict) -> list[Model]:
        return [Model(m['id'], m.get('name', ''), number(m.get('created')), number(m.get('context_length'), int))
                for m in data.get('data', ()) if isinstance(m, dict) and m.get('id')]


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

    @cached_property
    def base_url(self) -> str:
        url = (self.option('base_url') or preset_url(self.option('preset'))).rstrip('/')
        if url and url.count('/') == 2:  # an address with no path: the API lives under /v1
            url += '/v1'
        return url

    def extra_headers(self) -> dict[str, str]:
        return dict(parse_headers(self.option('headers') or ()))

    # images {{{

    def image_model(self, cancel: CancelToken | None = None) -> str:
        """The image model as set; '' (none is sent) when it is not: a server such as
        stable-diffusion.cpp's makes images with the one model it has loaded."""
        return (self.option('image_model') or '').strip()

    def image_request(self, prompt: str, model: str, aspect: str, source: Image | None = None) -> Request:
        payload = {'prompt': prompt, 'n': 1, 'size': LOCAL_IMAGE_SIZES.get(aspect, '512x512'),
                   'response_format': 'b64_json'}
        if model:
            payload['model'] = model
        return self.request('/images/generations', payload)

    def parse_image_answer(self, data: object, model: str) -> ImageResult:
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


# calibre 9.17's families for OpenRouter's automatic choice (calibre/ai/open_router/backend.py,
# free_model_choice), in its order; the paid fallbacks leave gpt-oss out, as calibre does
AUTO_MODEL = 'openrouter/auto'  # OpenRouter's own choice of a model for each question
OPENROUTER_FAMILIES = ('gemini', 'gpt-5', 'grok', 'gpt-oss', 'claude', 'deepseek')
OPENROUTER_PAID_FAMILIES = ('gemini', 'gpt-5', 'grok', 'claude', 'deepseek')


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


def number(value: object, kind: type = float) -> float | int:
    """value as a kind (float or int), 0 when it is none."""
    try:
        return kind(value or 0)
    except (TypeError, ValueError, OverflowError):
        return kind(0)


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
    free, paid = {}, {}
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
    return sorted(newest(paid, OPENROUTER_PAID_FAMILIES), key=lambda m: m.price('completion'))


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

    def choose_model(self, tier: str | None = None, cancel: CancelToken | None = None) -> str:
        """The configured model; else openrouter/auto, or the first of openrouter_choice(), as
        the strategy says (the tier plays no part). The fallbacks chosen with it are kept for
        chat_payload(). When paid models are allowed and the list has none of a known family
        (or none at all), OpenRouter chooses: openrouter/auto."""
        configured = (self.option('model') or '').strip()
        if configured:
            return configured
        strategy = self.option('model_strategy')
        if strategy == 'auto':
            return AUTO_MODEL
        chosen = openrouter_choice(self.models(cancel=cancel), allow_paid=strategy != 'free')
        if not chosen:
            return AUTO_MODEL
        self.fallbacks[chosen[0].id] = tuple(dict.fromkeys(m.id for m in chosen[1:] if m.id != chosen[0].id))
        return chosen[0].id

    def extra_headers(self) -> dict[str, str]:
        return {'X-Title': 'Book AI'}

    def chat_payload(self, messages: list[Message], model: str, max_tokens: int | None) -> dict:
        payload = super().chat_payload(messages, model, max_tokens)
        effort = payload.pop('reasoning_effort', None)
        if effort:
            payload['reasoning'] = {'effort': effort}
        elif self.option('reasoning_effort') == 'none':
            payload['reasoning'] = {'enabled': False}
        payload['usage'] = {'include': True}
        if fallbacks := self.fallbacks.get(model):
            payload['models'] = list(fallbacks)
        return self.with_routing(payload)

    def with_routing(self, payload: dict) -> dict:
        """payload, with the routing OpenRouter is asked for: no provider that keeps prompts, when so set."""
        if self.option('deny_data_collection'):
            payload['provider'] = {'data_collection': 'deny'}
        return payload

    def embed_request(self, texts: list[str], model: str) -> Request:
        return self.request('/embeddings', self.with_routing({'model': model, 'input': list(texts)}))

    # images {{{

    def image_models(self, cancel: CancelToken | None = None) -> dict[str, Model]:
        """OpenRouter's models that make images, by id (its catalogue filtered by output
        modalities, which the plain list leaves the image-only ones out of); asked once."""
        if self._image_models is None:
            data = self.json_answer(self.request('/models?output_modalities=image'), '', cancel or CancelToken(),
                                    _('{provider} sent a model list that could not be read.'))
            items = data.get('data') if isinstance(data, dict) else None
            listed = kept_models(self.parse_models({'data': items[:limits.MAX_MODELS] if isinstance(items, list)
                                                    else []}))
            self._image_models = {m.id: m for m in listed}
        return self._image_models

    @redacted_answer
    def generate_image(self, prompt: str, aspect: str = '2:3', source: Image | None = None, model: str = '',
                       cancel: CancelToken | None = None) -> ImageResult:
        """As every provider's (base.py); the catalogue of image models is asked for first (with
        the same Stop), to know whether the model also writes text: one that makes only images
        must be asked for images alone (modalities ["image"]). Without it, both are asked for."""
        cancel = cancel or CancelToken()
        if not self.missing_setup():
            try:
                self.image_models(cancel)
            except ProviderError:
                self._image_models = {}
        return super().generate_image(prompt, aspect, source, model, cancel)

    def image_request(self, prompt: str, model: str, aspect: str, source: Image | None = None) -> Request:
        content = prompt if source is None else [
            {'type': 'text', 'text': prompt}, {'type': 'image_url', 'image_url': {'url': source.data_url()}}]
        listed = (self._image_models or {}).get(model)
        modalities = ['image'] if listed is not None and listed.output_modalities and (
            'text' not in listed.output_modalities) else ['image', 'text']
        return self.request('/chat/completions', self.with_routing({
            'model': model, 'messages': [{'role': 'user', 'content': content}], 'stream': False,
            'modalities': modalities, 'image_config': {'aspect_ratio': aspect}, 'usage': {'include': True}}))

    def parse_image_answer(self, data: object, model: str) -> ImageResult:
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
    def usage_of(usage: dict) -> Usage:
        u = OpenAIChat.usage_of(usage)
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
            arch = m.get('architecture') if isinstance(m.get('architecture'), dict) else {}
            top = m.get('top_provider') if isinstance(m.get('top_provider'), dict) else {}
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


class GitHubModels(OpenAIChat):

    name = 'github'
    display_name = _('GitHub models')
    description = _('Models hosted by GitHub, with a personal access token. GitHub has discontinued this '
                    'service: use it only with an endpoint that still speaks its protocol.')
    default_base_url = 'https://models.github.ai/inference'
    remote_service = True
    tier_patterns = (('high', r'openai/gpt-\d[\d.]*'), ('medium', r'openai/gpt-\d[\d.]*-mini'),
                     ('low', r'openai/gpt-\d[\d.]*-nano'))

    def extra_headers(self) -> dict[str, str]:
        return {'X-GitHub-Api-Version': '2022-11-28', 'Accept': 'application/json'}

    def models_request(self) -> Request:
        req = self.request('/models')
        root = self.base_url
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
            return self.request('/images/generations', payload)
        # xAI takes the image to change in JSON (not multipart, as OpenAI does): a data: URL
        payload['image'] = {'url': source.data_url(), 'type': 'image_url'}
        return self.request('/images/edits', payload)

    def parse_image_answer(self, data: object, model: str) -> ImageResult:
        usage = Usage()
        ticks = (data.get('usage') or {}).get('cost_in_usd_ticks') if isinstance(data.get('usage'), dict) else None
        if type(ticks) in (int, float) and 0 <= ticks < 1e16:  # 10 billion ticks to the dollar
            usage = Usage(cost=Cost(ticks / 1e10, 'USD', 'reported'))
        return images_api_result(data, self.display_name, model, usage)

    # }}}

