# License: GPLv3 Copyright: the Book AI developers
"""Estimated cost of an answer, from a dated table of published prices.

Used only when the service does not report the cost itself (OpenRouter does).
A model missing from the table has an unknown cost, shown as unknown, never as
free. Prices are USD per million tokens (input, output), as the providers
published them on PRICE_DATE; the settings show that date. The tokens of a prompt
read from the service's prompt cache, and those written to it, are priced at the
rates of CACHE_PRICES, published on the same date.

Every estimate is made from token counts that are counts and ends as money or as
unknown (core.messages.known_cost): never NaN, infinite, negative or absurd.

A cost is said in ONE way (cost_text) and costs are added up by ONE rule (total_cost), for
answers and images alike: the chat's status line, the cover window, the many-books job and
the command line.
"""

import math
import re
from collections.abc import Iterable
from dataclasses import replace
from typing import TypeVar

from calibre_plugins.bookai.core.messages import Cost, Usage, known_cost, token_count

load_translations()

PRICE_DATE = '2026-06-01'

PRICES = {
    'openai': {
        'gpt-5.5': (5.00, 30.00), 'gpt-5.4': (2.50, 15.00), 'gpt-5.4-nano': (0.20, 1.25),
        'gpt-5.1': (1.25, 10.00), 'gpt-5': (1.25, 10.00), 'gpt-5-mini': (0.25, 2.00), 'gpt-5-nano': (0.05, 0.40),
        'gpt-4.1': (2.00, 8.00), 'gpt-4o': (2.50, 10.00), 'gpt-4o-mini': (0.15, 0.60), 'o3': (2.00, 8.00),
        # embeddings: the library's search by meaning
        'text-embedding-3-small': (0.02, 0.0), 'text-embedding-3-large': (0.13, 0.0),
    },
    'anthropic': {
        'claude-opus-4-5': (5.00, 25.00), 'claude-opus-4-1': (15.00, 75.00), 'claude-opus-4': (15.00, 75.00),
        'claude-sonnet-4-5': (3.00, 15.00), 'claude-sonnet-4': (3.00, 15.00),
        'claude-haiku-4-5': (1.00, 5.00), 'claude-3-5-haiku': (0.80, 4.00),
    },
    'gemini': {
        'gemini-2.5-pro': (1.25, 10.00), 'gemini-2.5-flash': (0.30, 2.50), 'gemini-2.5-flash-lite': (0.10, 0.40),
    },
}

# The prompt cache's rates, USD per million tokens (read from the cache, written to it), as
# published on PRICE_DATE; None for a write: at the input price (OpenAI's and Gemini's implicit
# caches charge nothing more for it). A model missing here is priced at its input price throughout.
CACHE_PRICES: dict[str, dict[str, tuple[float, float | None]]] = {
    'openai': {  # openai.com/api/pricing: "cached input"
        'gpt-5.5': (0.50, None), 'gpt-5.4': (0.25, None), 'gpt-5.4-nano': (0.02, None),
        'gpt-5.1': (0.125, None), 'gpt-5': (0.125, None), 'gpt-5-mini': (0.025, None), 'gpt-5-nano': (0.005, None),
        'gpt-4.1': (0.50, None), 'gpt-4o': (1.25, None), 'gpt-4o-mini': (0.075, None), 'o3': (0.50, None),
    },
    # docs.anthropic.com, prompt caching: a read costs a tenth of the input price, a write (kept
    # five minutes, the default, which is what Book AI asks for) 1.25 times it
    'anthropic': {model: (round(i * 0.1, 6), round(i * 1.25, 6)) for model, (i, _o) in PRICES['anthropic'].items()},
    'gemini': {  # ai.google.dev/gemini-api/docs/pricing: "context caching" (prompts up to 200,000 tokens)
        'gemini-2.5-pro': (0.125, None), 'gemini-2.5-flash': (0.03, None), 'gemini-2.5-flash-lite': (0.01, None),
    },
}

# saying and adding up costs {{{

def cost_text(cost: Cost | None, local: bool = False) -> str:
    """A cost in words: '$0.0012' as the service reported it, 'about $0.04 (prices of 2026-06-01)'
    as estimated from the dated table (4 decimals below a cent, else 2; another currency after the
    amount); when nobody knows it, unknown (never free) unless it runs on this computer."""
    if cost is None:
        return _('no cost: runs on this computer') if local else _('cost unknown')
    amount = f'{cost.amount:.4f}' if cost.amount < 0.01 else f'{cost.amount:.2f}'
    money = f'${amount}' if cost.currency == 'USD' else f'{amount} {cost.currency}'
    if cost.source == 'reported':
        return money
    return _('about {money} (prices of {date})').format(money=money, date=cost.price_date)


def total_cost(costs: Iterable[Cost | None]) -> Cost | None:
    """The sum of costs: unknown (None) as soon as one is, when they are in different currencies,
    or when there are none; 'reported' only when every one was, else estimated, dated by the price
    table of the first one estimated."""
    given = list(costs)
    known = [c for c in given if c is not None]
    if not known or len(known) != len(given) or len({c.currency for c in known}) != 1:
        return None
    sources = {c.source for c in known}
    dated = next((c.price_date for c in known if c.source != 'reported'), '')
    return replace(known[0], amount=float(sum(c.amount for c in known)),
                   source='reported' if sources == {'reported'} else 'estimated', price_date=dated)

# }}}


# what may follow a priced model's id and still be the same model: a date or "latest"
SAME_MODEL_SUFFIX = re.compile(r'(-\d{4}-?\d{2}-?\d{2}|-latest)?')


Entry = TypeVar('Entry')


def table_entry(table: dict[str, Entry], model: str | None, same_model: re.Pattern = SAME_MODEL_SUFFIX) -> Entry | None:
    """The entry of a price table for model: the longest listed id it is, give or take what
    same_model allows after it; None when not listed."""
    model = (model or '').lower().removeprefix('models/')
    for name in sorted(table, key=len, reverse=True):
        if model.startswith(name) and same_model.fullmatch(model[len(name):]):
            return table[name]
    return None


def prices_for(provider: str, model: str | None) -> tuple[float, float] | None:
    """(input, output) prices of model, per million tokens, from the table; None when not listed."""
    return table_entry(PRICES.get(provider, {}), model)


def sending_estimate(provider: str, model: str | None, tokens: int, local: bool) -> str:
    """About how many tokens a request is and what sending it costs, before it is sent, in words
    (What will be sent, and the command line before a large send)."""
    text = _('About {tokens} tokens.').format(tokens=f'{tokens:,}')
    prices = prices_for(provider, model)
    if prices is not None:
        text += ' ' + _('Sending them costs about ${amount}, plus the answer.').format(
            amount=f'{tokens * prices[0] / 1_000_000:.4f}')
    elif not local:
        text += ' ' + _('The cost of this model is not known to Book AI.')
    return text


def cache_prices_for(provider: str, model: str | None) -> tuple[float, float | None] | None:
    """(read, write) prompt-cache prices of model, per million tokens, from CACHE_PRICES; None when not listed."""
    return table_entry(CACHE_PRICES.get(provider, {}), model)


def estimate(provider: str, model: str | None, usage: Usage) -> Cost | None:
    """The estimated Cost for usage, or None when the price or the token counts are unknown: the
    prompt's tokens read from the service's cache, and those written to it, at the cache's rates
    (CACHE_PRICES; the input price for a model not listed there), the rest at the input price."""
    prices = prices_for(provider, model)
    tokens_in, tokens_out = token_count(usage.input_tokens), token_count(usage.output_tokens)
    if prices is None or tokens_in is None or tokens_out is None:
        return None
    # Usage holds both to parts of the prompt, together no more than it
    read, written = usage.cached_tokens or 0, usage.cache_write_tokens or 0
    read_price, write_price = cache_prices_for(provider, model) or (prices[0], None)
    fresh = max(0, tokens_in - read - written)
    amount = (fresh * prices[0] + read * read_price + written * (prices[0] if write_price is None else write_price)
              + tokens_out * prices[1]) / 1_000_000
    return known_cost(Cost(amount, 'USD', 'estimated', PRICE_DATE))


# Images, as published on PRICE_DATE. Per image, by model and by the image's shape where the
# price depends on it ('square' for 1:1, 'tall' for 2:3, 3:4 and 9:16, 'wide' for 4:3; '*' for
# any): Imagen and xAI bill per image, whatever the prompt. Used when the service reports no
# token usage for the image (and no cost); with token usage, IMAGE_TOKEN_PRICES counts.
IMAGE_PRICES: dict[str, dict[str, dict[str, float]]] = {
    'gemini': {  # ai.google.dev/gemini-api/docs/pricing
        'imagen-4.0-generate': {'*': 0.04}, 'imagen-4.0-fast-generate': {'*': 0.02},
        'imagen-4.0-ultra-generate': {'*': 0.06}, 'imagen-3.0-generate': {'*': 0.03},
    },
    'grok': {  # docs.x.ai: image generation, flat per image
        'grok-imagine-image': {'*': 0.02}, 'grok-2-image': {'*': 0.07},
    },
}

# (input text, input image, output image) USD per million tokens, for models that bill images as
# tokens: OpenAI's gpt-image models (openai.com/api/pricing), Gemini's image models (whose input
# images cost what their text does)
IMAGE_TOKEN_PRICES: dict[str, dict[str, tuple[float, float, float]]] = {
    'openai': {
        'gpt-image-1': (5.00, 10.00, 40.00), 'gpt-image-1-mini': (2.00, 2.50, 8.00),
        'gpt-image-1.5': (5.00, 8.00, 32.00),
    },
    'gemini': {
        'gemini-2.5-flash-image': (0.30, 0.30, 30.00), 'gemini-3-pro-image': (2.00, 2.00, 120.00),
        'gemini-3.1-flash-image': (0.50, 0.50, 60.00),
    },
}

# what may follow a priced image model's id and still be the same model: a preview, a version
# number (imagen-4.0-generate-001), a date
SAME_IMAGE_MODEL_SUFFIX = re.compile(r'(-preview)?(-\d{3}|-\d{2}-\d{4}|-\d{4}-?\d{2}-?\d{2}|-latest)?')


def image_table_entry(table: dict[str, Entry], model: str | None) -> Entry | None:
    """The entry of a provider's image price table for model (give or take SAME_IMAGE_MODEL_SUFFIX)."""
    return table_entry(table, model, SAME_IMAGE_MODEL_SUFFIX)


def image_shape(aspect: str) -> str:
    """'square', 'tall' or 'wide', for an aspect given as width:height."""
    try:
        w, h = (float(x) for x in aspect.split(':'))
    except (ValueError, AttributeError):
        return 'square'
    if not (math.isfinite(w) and math.isfinite(h) and w > 0 and h > 0):
        return 'square'
    return 'square' if w == h else 'tall' if w < h else 'wide'


def count(n: object) -> int | None:
    """n as a count of tokens: a whole number from 0 (a service's JSON may hold anything); else None."""
    return token_count(n)


def image_token_cost(provider: str, model: str | None, text_tokens: int | None, image_tokens: int | None,
                     output_tokens: int | None) -> Cost | None:
    """The estimated Cost of an image billed as tokens (text and image tokens in, image tokens
    out); None when the model's prices or the counts are not known."""
    prices = image_table_entry(IMAGE_TOKEN_PRICES.get(provider, {}), model)
    text_tokens, image_tokens, output_tokens = (count(n) for n in (text_tokens, image_tokens, output_tokens))
    if prices is None or output_tokens is None or (text_tokens is None and image_tokens is None):
        return None
    amount = ((text_tokens or 0) * prices[0] + (image_tokens or 0) * prices[1] + output_tokens * prices[2]) / 1_000_000
    return known_cost(Cost(amount, 'USD', 'estimated', PRICE_DATE))


def estimate_image(provider: str, model: str | None, usage: Usage, aspect: str) -> Cost | None:
    """The estimated Cost of one image made by model, or None when its price is not known: from
    its token usage (all input counted as text) when the model bills tokens, else per image."""
    if image_table_entry(IMAGE_TOKEN_PRICES.get(provider, {}), model) is not None:
        return image_token_cost(provider, model, usage.input_tokens, None, usage.output_tokens)
    prices = image_table_entry(IMAGE_PRICES.get(provider, {}), model)
    if not isinstance(prices, dict):
        return None
    price = prices.get(image_shape(aspect), prices.get('*'))
    return None if price is None else known_cost(Cost(float(price), 'USD', 'estimated', PRICE_DATE))
