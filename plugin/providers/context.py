# License: GPLv3 Copyright: the Book AI developers
"""The context window of a model: how many tokens it reads at once, the question and the
answer together, with where Book AI learned it (a ContextWindow).

ModelList.context_window() (providers/operations.py) learns it, in this order: what the service
itself says of the model in use, beyond its model list (the provider's served_context(): the
reader's Ollama context length, Ollama's /api/show, LM Studio's loaded context, llama.cpp's
/props); the live model list's context_length (OpenRouter, Venice, Gemini, GitHub models...);
else the dated table below, of the windows the cloud services publish, as prices are kept
(providers/pricing.py); else it is unknown (None), and nothing is sized by it.

Every figure a service sends is held to window_tokens(): an int from 1 to below
models.MOST_CONTEXT, or no figure at all.
"""

from dataclasses import dataclass

from calibre_plugins.bookai.providers.models import MOST_CONTEXT
from calibre_plugins.bookai.providers.pricing import table_entry

# when the table below was written, from the services' published model pages
CONTEXT_DATE = '2026-12-05'

# tokens in and out together, as each service publishes its models' context windows; a model
# missing here is unknown, unless its service says it
CONTEXT_WINDOWS: dict[str, dict[str, int]] = {
    'openai': {  # platform.openai.com/docs/models
        'gpt-5.1': 400_000, 'gpt-5': 400_000, 'gpt-5-mini': 400_000, 'gpt-5-nano': 400_000,
        'gpt-4.1': 1_047_576, 'gpt-4.1-mini': 1_047_576, 'gpt-4.1-nano': 1_047_576,
        'gpt-4o': 128_000, 'gpt-4o-mini': 128_000, 'o3': 200_000, 'o3-mini': 200_000, 'o4-mini': 200_000,
    },
    'anthropic': {  # docs.anthropic.com: models overview (the standard window, not a beta's)
        'claude-opus-4-5': 200_000, 'claude-opus-4-1': 200_000, 'claude-opus-4': 200_000,
        'claude-sonnet-4-5': 200_000, 'claude-sonnet-4': 200_000, 'claude-3-7-sonnet': 200_000,
        'claude-haiku-4-5': 200_000, 'claude-3-5-haiku': 200_000,
    },
    'gemini': {  # ai.google.dev/gemini-api/docs/models (the list also says it: inputTokenLimit)
        'gemini-2.5-pro': 1_048_576, 'gemini-2.5-flash': 1_048_576, 'gemini-2.5-flash-lite': 1_048_576,
        'gemini-2.0-flash': 1_048_576, 'gemini-2.0-flash-lite': 1_048_576,
    },
    'grok': {  # docs.x.ai/docs/models
        'grok-4': 256_000, 'grok-4-fast-reasoning': 2_000_000, 'grok-4-fast-non-reasoning': 2_000_000,
        'grok-code-fast-1': 256_000, 'grok-3': 131_072, 'grok-3-mini': 131_072,
    },
    # GitHub models: its catalog lists each model's max_input_tokens (openai_chat.GitHubModels),
    # which is what its requests are held to, lower than the model's own window
}


@dataclass(frozen=True)
class ContextWindow:
    """A model's context window in tokens, and where it was learned."""
    tokens: int         # 0 when unknown: the service was asked and could not say
    source: str         # 'setting' (the reader's), 'service' (what the server said of the model
    #                     loaded), 'list' (the model list), 'table' (CONTEXT_WINDOWS), 'unknown',
    #                     'refused' (less than a request the service refused as too long: refused())
    date: str = ''      # for 'table': CONTEXT_DATE
    why: str = ''       # for 'unknown': what the service did instead of saying, in words


def window_tokens(value: object) -> int | None:
    """value as a context window in tokens: an int from 1 to below MOST_CONTEXT; None for
    anything else a service may send (a string, a float, true, a negative or absurd number)."""
    return value if type(value) is int and 0 < value < MOST_CONTEXT else None


def table_window(provider: str, model: str | None) -> ContextWindow | None:
    """The published window of provider's model, from CONTEXT_WINDOWS (give or take a date or
    "latest" after its id, as prices are matched); None when it is not listed."""
    tokens = table_entry(CONTEXT_WINDOWS.get(provider, {}), model)
    return ContextWindow(tokens, 'table', CONTEXT_DATE) if tokens else None


# what a service refused as too long, in this process: (provider, address, model) -> fewer tokens
# than that request held. A window learned later is held below it (refused_below()).
REFUSED: dict[tuple[str, str, str], int] = {}
MOST_REFUSED = 64


def refused(provider: str, address: str, model: str, tokens: int) -> None:
    """The service at address refused a request of about tokens tokens to model as longer than
    it reads: its window is taken as three quarters of that from now on (the estimate of tokens
    is rough), whatever it or the table says."""
    key = (provider, address, model)
    if key in REFUSED or len(REFUSED) < MOST_REFUSED:
        REFUSED[key] = min(REFUSED.get(key, tokens), tokens * 3 // 4)


def refused_below(provider: str, address: str, model: str, window: ContextWindow | None) -> ContextWindow | None:
    """window, held below what the service refused (refused()); as it was when nothing was."""
    most = REFUSED.get((provider, address, model))
    if most is None or (window is not None and 0 < window.tokens <= most):
        return window
    return ContextWindow(most, 'refused')
