# License: GPLv3 Copyright: the Book AI developers
"""The models a provider offers: Model, the live list as Book AI keeps it, its cache, and
the choice of a model by tier.

A provider asks its service for the list (AIProviderPlugin.models()); what the service
sends is bounded (first_items, kept_models) and cached for a day in calibre's cache
folder, one file per provider and address (cache_path): when it was fetched, the address
(with no credentials) and the models. A cache file that is damaged or too large is set
aside, never overwritten; one written by an older version, without the fields added since,
still loads (model_from_dict). With no model set, the newest model of the chosen tier is used
(model_for_tier), unless the provider chooses its own way (OpenRouter: openai_chat.py).
"""

import hashlib
import json
import os
import re
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime

from calibre.constants import cache_dir

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.errors import Secrets, without_userinfo
from calibre_plugins.bookai.core.files import set_aside, write_private

MODELS_CACHE_SECONDS = 24 * 60 * 60


@dataclass(frozen=True)
class Model:
    """A model of a provider's live list."""
    id: str
    name: str = ''
    created: float = 0          # when the service says it was published, seconds since 1970
    context_length: int = 0
    free: bool = False
    reasoning: bool = False
    prices: tuple[float, ...] = ()  # (input, output) per million tokens, when the service lists them
    traits: tuple[str, ...] = ()    # what the service says the model is best at ('default', 'fastest'...)
    reasoning_effort: bool = False  # takes a reasoning effort (low, medium, high)
    # what a catalogue such as OpenRouter's says of a model besides the above
    description: str = ''           # as the service wrote it (often Markdown): shown as plain text only
    moderated: bool | None = None   # its answers are filtered by the service; None when not said
    pricing: tuple[tuple[str, float], ...] = ()  # (kind, US dollars per unit) as listed: 'prompt' and
    #                                 'completion' per token, 'request', 'image', 'web_search'...
    input_modalities: tuple[str, ...] = ()   # what it takes: 'text', 'image', 'file', 'audio'...
    output_modalities: tuple[str, ...] = ()  # what it gives: 'text', 'image'...

    @property
    def display_name(self) -> str:
        return self.name or self.id

    def price(self, kind: str) -> float | None:
        """The price of kind ('prompt', 'completion', 'request', 'image', 'web_search'...) in
        US dollars per unit as the service lists it; None when it lists none."""
        return next((value for k, value in self.pricing if k == kind), None)


TUPLE_FIELDS = ('prices', 'traits', 'input_modalities', 'output_modalities')


def model_from_dict(data: dict) -> Model:
    """A Model from what write_models_cache() wrote (JSON has lists where Model has tuples).
    Fields added since a file was written are left out of it and take their defaults. TypeError
    or ValueError for anything else, a field this version does not know included."""
    if not isinstance(data, dict):
        raise TypeError('not a model')
    values = dict(data)
    for k in TUPLE_FIELDS:
        if k in values:
            values[k] = tuple(values[k])
    if 'pricing' in values:
        values['pricing'] = tuple((str(k), float(v)) for k, v in values['pricing'])
    return Model(**values)


def timestamp_of(stamp: str | None) -> float:
    """Seconds since 1970 for an ISO 8601 time ('2025-09-29T10:00:00.123456789Z'), 0 if unreadable."""
    if not stamp:
        return 0.0
    stamp = re.sub(r'(\.\d{6})\d+', r'\1', stamp).replace('Z', '+00:00')  # at most microseconds
    try:
        return datetime.fromisoformat(stamp).timestamp()
    except ValueError:
        return 0.0


def first_items(data: object, count: int) -> object:
    """A model list as parsed JSON, with no list in it (at its top, or in its top object)
    longer than count: the rest is not looked at."""
    if isinstance(data, list):
        return data[:count]
    if isinstance(data, dict):
        return {k: v[:count] if isinstance(v, list) else v for k, v in data.items()}
    return data


def kept_models(models: list[Model]) -> list[Model]:
    """The models worth keeping from a list a service sent: at most limits.MAX_MODELS, none
    with an id longer than limits.MAX_MODEL_ID_CHARS, names shortened to that, descriptions to
    limits.MAX_MODEL_DESCRIPTION_CHARS, at most limits.MAX_MODEL_PRICES prices and
    limits.MAX_MODEL_MODALITIES modalities each way."""
    most = limits.MAX_MODEL_ID_CHARS
    kept = [bounded(m) for m in models
            if isinstance(m.id, str) and isinstance(m.name, str) and isinstance(m.description, str)
            and len(m.id) <= most]
    return kept[:limits.MAX_MODELS]


def bounded(m: Model) -> Model:
    """m, with its name, description, prices and modalities cut to the limits kept_models() says."""
    most, few = limits.MAX_MODEL_ID_CHARS, limits.MAX_MODEL_MODALITIES
    changes = {}
    if len(m.name) > most:
        changes['name'] = m.name[:most]
    if len(m.description) > limits.MAX_MODEL_DESCRIPTION_CHARS:
        changes['description'] = m.description[:limits.MAX_MODEL_DESCRIPTION_CHARS]
    if len(m.pricing) > limits.MAX_MODEL_PRICES or any(len(k) > 64 for k, v in m.pricing):
        changes['pricing'] = tuple((k, v) for k, v in m.pricing if len(k) <= 64)[:limits.MAX_MODEL_PRICES]
    for field in ('input_modalities', 'output_modalities'):
        values = getattr(m, field)
        if len(values) > few or any(len(v) > 64 for v in values):
            changes[field] = tuple(v for v in values if len(v) <= 64)[:few]
    return replace(m, **changes) if changes else m


def redacted_models(models: list[Model], secrets: Secrets) -> list[Model]:
    """The model list with no secret in an id, a name or a description."""
    if not secrets:
        return list(models)
    return [replace(m, id=secrets.redact(m.id), name=secrets.redact(m.name),
                    description=secrets.redact(m.description)) for m in models]


def cache_path(provider: str, base_url: str) -> str:
    """Where the model list of the provider named provider, at base_url, is cached."""
    where = hashlib.sha256(base_url.encode('utf-8')).hexdigest()[:12]
    return os.path.join(cache_dir(), 'bookai', 'models', f'{provider}-{where}.json')


def read_models_cache(path: str) -> list[Model] | None:
    """The cached model list at path, if it is there and less than a day old. A file larger
    than limits.MAX_MODELS_CACHE_BYTES, or one that is not a model list, is set aside."""
    try:
        with open(path, 'rb') as f:
            raw = f.read(limits.MAX_MODELS_CACHE_BYTES + 1)
    except OSError:
        return None
    try:
        if len(raw) > limits.MAX_MODELS_CACHE_BYTES:
            raise ValueError('too large')
        cached = limits.load_json(raw)
        fetched = cached['fetched']
        models = [model_from_dict(m) for m in cached['models']]
        if not isinstance(fetched, (int, float)) or not all(isinstance(m.id, str) for m in models):
            raise ValueError('not a model list')
    except (ValueError, KeyError, TypeError):
        try:
            set_aside(path)  # never over a copy set aside before
        except OSError:
            pass
        return None
    return models if time.time() - fetched < MODELS_CACHE_SECONDS else None


def write_models_cache(path: str, models: list[Model], base_url: str) -> None:
    """Cache the model list fetched now from base_url, unless it is larger than
    limits.MAX_MODELS_CACHE_BYTES (it is then asked for again next time)."""
    text = json.dumps({'fetched': time.time(), 'base_url': without_userinfo(base_url),
                       'models': [asdict(m) for m in models]})
    if len(text.encode('utf-8')) > limits.MAX_MODELS_CACHE_BYTES:
        return
    try:
        write_private(path, text)
    except OSError:  # a cache: the list is asked for again next time
        pass


def version_key(model_id: str) -> tuple[float, ...]:
    """'gemini-2.5-flash' sorts after 'gemini-2.0-flash': the numbers in an id, compared as numbers."""
    return tuple(float(n) for n in re.findall(r'\d+(?:\.\d+)?', model_id))


def newness(model: Model) -> tuple[float, tuple[float, ...]]:
    """Sorts models oldest to newest: by publication date, then by the version in the id."""
    return model.created, version_key(model.id)


def model_for_tier(models: list[Model], tier_patterns: tuple[tuple[str, str], ...], tier: str) -> Model | None:
    """The newest of models whose id matches the tier's pattern (tier_patterns: (tier, regular
    expression for the whole id) pairs); else the first listed; None for no model."""
    for t, pattern in tier_patterns:
        if t == tier:
            matching = [m for m in models if re.fullmatch(pattern, m.id, flags=re.IGNORECASE)]
            if matching:
                return max(matching, key=newness)
    return models[0] if models else None
