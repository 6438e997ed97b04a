# License: GPLv3 Copyright: the Book AI developers
"""The models a provider offers: Model, the live list as Book AI keeps it, its cache, and
the choice of a model by tier.

A provider asks its service for the list (AIProviderPlugin.models()); what the service
sends is bounded (first_items, kept_models) and cached for a day in calibre's cache
folder, one file per provider and address (cache_path): when it was fetched, the address
(with no credentials) and the models. A cache file that is damaged or too large is set
aside, never overwritten. With no model set, the newest model of the chosen tier is used
(model_for_tier).
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

    @property
    def display_name(self) -> str:
        return self.name or self.id


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
    with an id longer than limits.MAX_MODEL_ID_CHARS, names shortened to that."""
    most = limits.MAX_MODEL_ID_CHARS
    kept = [m if len(m.name) <= most else replace(m, name=m.name[:most]) for m in models
            if isinstance(m.id, str) and isinstance(m.name, str) and len(m.id) <= most]
    return kept[:limits.MAX_MODELS]


def redacted_models(models: list[Model], secrets: Secrets) -> list[Model]:
    """The model list with no secret in an id or a name."""
    if not secrets:
        return list(models)
    return [replace(m, id=secrets.redact(m.id), name=secrets.redact(m.name)) for m in models]


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
        models = [Model(**m) for m in cached['models']]
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
