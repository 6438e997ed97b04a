# License: GPLv3 Copyright: the Book AI developers
"""The models a provider offers: Model, the live list as Book AI keeps it, its cache, and
the choice of a model by tier.

A provider asks its service for the list (operations.ModelList); what the service
sends is bounded (first_items, kept_models) and cached for a day in calibre's cache
folder, one file per provider and address (cache_path): when it was fetched, the address
(with no credentials) and the models. A cache file that is damaged or too large is set
aside, never overwritten; one written by an older version, without the fields added since,
still loads (model_from_dict), and is held to kept_models() as a fresh list is.

kept_models() is the one way a list becomes what Book AI keeps and shows: one model per id
(the first listed), every price a price (finite, from 0 to MOST_UNIT_PRICE US dollars a unit,
MOST_MONEY a million tokens; a price that is not one is kept as UNKNOWN_PRICE, which
Model.price() gives as None, and shown as unknown), dates and context lengths that are
numbers.

With no model set, the newest model of the chosen tier is used (model_for_tier), unless the
provider chooses its own way (OpenRouter: openrouter.py).
"""

import hashlib
import json
import math
import os
import re
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime

from calibre.constants import cache_dir

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.errors import Secrets, without_userinfo
from calibre_plugins.bookai.core.files import NotRegular, TooBig, read_regular, set_aside_if_can, write_private
from calibre_plugins.bookai.core.messages import money
from calibre_plugins.bookai.core.printable import CONTROL, inert, one_line

MODELS_CACHE_SECONDS = 24 * 60 * 60
MOST_UNIT_PRICE = 10_000.0  # US dollars for one token, request, image or search: more is a service's mistake
UNKNOWN_PRICE = -1.0        # a price listed that is not one (NaN, infinite, negative, absurd), as OpenRouter
#                             lists the price of openrouter/auto: shown as unknown, never as a figure
MOST_CREATED = 2 ** 40      # seconds since 1970 (year 36812): a later date is not a date
MOST_CONTEXT = 2 ** 53
MOST_TRAITS = 16            # traits kept for one model, of at most 64 characters each


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

    def __post_init__(self) -> None:
        # the service's words, as the chooser, the settings and the command line show them: on one
        # line (a description keeps its lines), nothing in them obeyed (core/printable.py)
        for name in ('id', 'name'):
            object.__setattr__(self, name, one_line(getattr(self, name)))
        object.__setattr__(self, 'description', inert(self.description))
        if any(isinstance(t, str) and CONTROL.search(t) for t in self.traits):
            object.__setattr__(self, 'traits', tuple(one_line(t) for t in self.traits))

    @property
    def display_name(self) -> str:
        return self.name or self.id

    def price(self, kind: str) -> float | None:
        """The price of kind ('prompt', 'completion', 'request', 'image', 'web_search'...) in
        US dollars per unit as the service lists it; None when it lists none, or one that is not
        a price (UNKNOWN_PRICE, or anything not from 0 to MOST_UNIT_PRICE)."""
        return next((money(value, MOST_UNIT_PRICE) for k, value in self.pricing if k == kind), None)


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
    """The models worth keeping from a list a service sent: one per id (the first listed), at
    most limits.MAX_MODELS, none with an empty id or one longer than limits.MAX_MODEL_ID_CHARS,
    names shortened to that, descriptions to limits.MAX_MODEL_DESCRIPTION_CHARS, at most
    limits.MAX_MODEL_PRICES prices and limits.MAX_MODEL_MODALITIES modalities each way, and
    every number one that can be true (bounded())."""
    most = limits.MAX_MODEL_ID_CHARS
    kept: dict[str, Model] = {}
    for m in models:
        if len(kept) >= limits.MAX_MODELS:
            break
        if (isinstance(m, Model) and isinstance(m.id, str) and isinstance(m.name, str)
                and isinstance(m.description, str) and 0 < len(m.id) <= most and m.id not in kept):
            kept[m.id] = bounded(m)
    return list(kept.values())


def unit_price(value: object) -> float:
    """A listed price per unit as kept: itself when it is a price (0 to MOST_UNIT_PRICE), else UNKNOWN_PRICE."""
    price = money(value, MOST_UNIT_PRICE)
    return UNKNOWN_PRICE if price is None else price


def strings_of(values: object, few: int) -> tuple[str, ...]:
    """The strings of values (a tuple or list) of at most 64 characters, at most few of them."""
    return tuple(v for v in values if isinstance(v, str) and len(v) <= 64)[:few] \
        if isinstance(values, (tuple, list)) else ()


def bounded(m: Model) -> Model:
    """m, with its name, description, prices and modalities cut to the limits kept_models() says,
    and every number and flag one that can be true: prices that are prices (unit_price(); the
    (input, output) prices per million tokens both money() up to MOST_MONEY, else none), a date
    from 1970 to MOST_CREATED, a context length from 0 below MOST_CONTEXT (else 0)."""
    most, few = limits.MAX_MODEL_ID_CHARS, limits.MAX_MODEL_MODALITIES
    changes: dict[str, object] = {}
    if len(m.name) > most:
        changes['name'] = m.name[:most]
    if len(m.description) > limits.MAX_MODEL_DESCRIPTION_CHARS:
        changes['description'] = m.description[:limits.MAX_MODEL_DESCRIPTION_CHARS]
    pricing = m.pricing if isinstance(m.pricing, (tuple, list)) else ()
    pricing = tuple((k, unit_price(v)) for k, v in (p for p in pricing if isinstance(p, (tuple, list)) and len(p) == 2)
                    if isinstance(k, str) and len(k) <= 64)[:limits.MAX_MODEL_PRICES]
    if pricing != m.pricing:
        changes['pricing'] = pricing
    prices = tuple(money(v) for v in m.prices) if isinstance(m.prices, (tuple, list)) else ()
    prices = prices if len(prices) == 2 and None not in prices else ()
    if prices != m.prices:
        changes['prices'] = prices
    for field in ('input_modalities', 'output_modalities', 'traits'):
        values = getattr(m, field)
        kept = strings_of(values, few if field != 'traits' else MOST_TRAITS)
        if kept != values:
            changes[field] = kept
    created = m.created if type(m.created) in (int, float) and math.isfinite(m.created) else 0.0
    if not 0 <= created <= MOST_CREATED:
        created = 0.0
    if created != m.created or type(m.created) is not type(created):
        changes['created'] = created
    if not (type(m.context_length) is int and 0 <= m.context_length < MOST_CONTEXT):
        changes['context_length'] = 0
    for flag in ('free', 'reasoning', 'reasoning_effort'):
        if type(getattr(m, flag)) is not bool:
            changes[flag] = getattr(m, flag) is True
    if type(m.moderated) not in (bool, type(None)):
        changes['moderated'] = None
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
    """The cached model list at path, if it is there and less than a day old, held to
    kept_models(). A file larger than
    limits.MAX_MODELS_CACHE_BYTES, one that is not a model list, or anything but a regular file
    in its place (a FIFO is not waited on: files.read_regular) is set aside."""
    try:
        try:
            raw = read_regular(path, limits.MAX_MODELS_CACHE_BYTES)
        except FileNotFoundError:
            return None
        except (NotRegular, TooBig) as e:
            raise ValueError(str(e)) from None
        except OSError:
            return None
        cached = limits.load_json(raw)
        fetched = cached['fetched']
        models = [model_from_dict(m) for m in cached['models']]
        if type(fetched) not in (int, float) or not all(isinstance(m.id, str) for m in models):
            raise ValueError('not a model list')
        fetched = float(fetched)  # OverflowError for a number past floats
        models = kept_models(models)  # held to what a fresh list is: an edited file, an older version's
    except (ValueError, KeyError, TypeError, OverflowError):
        set_aside_if_can(path)  # never over a copy set aside before
        return None
    return models if time.time() - fetched < MODELS_CACHE_SECONDS else None


def write_models_cache(path: str, models: list[Model], base_url: str) -> None:
    """Cache the model list fetched now from base_url, unless it is larger than
    limits.MAX_MODELS_CACHE_BYTES (it is then asked for again next time)."""
    try:
        text = json.dumps({'fetched': time.time(), 'base_url': without_userinfo(base_url),
                           'models': [asdict(m) for m in kept_models(models)]}, allow_nan=False)
    except ValueError:  # a number JSON cannot hold: not kept (kept_models() leaves none)
        return
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
