# License: GPLv3 Copyright: the Book AI developers
"""Estimated cost of an answer, from a dated table of published prices.

Used only when the service does not report the cost itself (OpenRouter does).
A model missing from the table has an unknown cost, shown as unknown, never as
free. Prices are USD per million tokens (input, output), as the providers
published them on PRICE_DATE; the settings show that date.
"""

import re

from calibre_plugins.bookai.core.messages import Cost, Usage

PRICE_DATE = '2026-06-01'

PRICES = {
    'openai': {
        'gpt-5.5': (5.00, 30.00), 'gpt-5.4': (2.50, 15.00), 'gpt-5.4-nano': (0.20, 1.25),
        'gpt-5.1': (1.25, 10.00), 'gpt-5': (1.25, 10.00), 'gpt-5-mini': (0.25, 2.00), 'gpt-5-nano': (0.05, 0.40),
        'gpt-4.1': (2.00, 8.00), 'gpt-4o': (2.50, 10.00), 'gpt-4o-mini': (0.15, 0.60), 'o3': (2.00, 8.00),
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

# what may follow a priced model's id and still be the same model: a date or "latest"
SAME_MODEL_SUFFIX = re.compile(r'(-\d{4}-?\d{2}-?\d{2}|-latest)?')


def prices_for(provider: str, model: str | None) -> tuple[float, float] | None:
    """(input, output) prices of model, per million tokens, from the table; None when not listed."""
    table = PRICES.get(provider, {})
    model = (model or '').lower().removeprefix('models/')
    for name in sorted(table, key=len, reverse=True):
        if model.startswith(name) and SAME_MODEL_SUFFIX.fullmatch(model[len(name):]):
            return table[name]
    return None


def estimate(provider: str, model: str | None, usage: Usage) -> Cost | None:
    """The estimated Cost for usage, or None when the price or the token counts are unknown."""
    prices = prices_for(provider, model)
    if prices is None or usage.input_tokens is None or usage.output_tokens is None:
        return None
    amount = (usage.input_tokens * prices[0] + usage.output_tokens * prices[1]) / 1_000_000
    return Cost(amount, 'USD', 'estimated', PRICE_DATE)
