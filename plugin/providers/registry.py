# License: GPLv3 Copyright: the Book AI developers
"""Book AI's own provider registry.

One calibre plugin zip can register only one calibre plugin, so the providers
are not calibre plugins: they are listed here and imported only when used, so
that an unused provider costs nothing.
"""

import importlib
from typing import TYPE_CHECKING

from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:  # for types only: the names of the providers cost no provider code
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

# name: (module in this package, class)
PROVIDERS = {
    'openai': ('openai_responses', 'OpenAI'),
    'anthropic': ('anthropic', 'Anthropic'),
    'gemini': ('gemini', 'GoogleGemini'),
    'openrouter': ('openrouter', 'OpenRouter'),
    'ollama': ('ollama', 'Ollama'),
    'lmstudio': ('openai_chat', 'LMStudio'),
    'github': ('openai_chat', 'GitHubModels'),
    'grok': ('openai_chat', 'Grok'),
    'venice': ('venice', 'Venice'),
    'openai_compatible': ('openai_chat', 'OpenAICompatible'),
}


def provider_class(name: str) -> 'type[AIProviderPlugin]':
    """The class of the provider named name (its module imported now); KeyError for an unknown name."""
    try:
        module, cls = PROVIDERS[name]
    except KeyError:
        raise KeyError(f'no provider named {name!r}; known: {", ".join(PROVIDERS)}') from None
    return getattr(importlib.import_module(f'calibre_plugins.bookai.providers.{module}'), cls)


def provider_id(text: str) -> str | None:
    """The id of the provider text names: its id or its name as the settings show it
    ("OpenAI compatible"), in any case and spacing; None when no provider has that name."""
    wanted = ' '.join(text.replace('_', ' ').split()).casefold()
    for name in PROVIDERS:
        if wanted in (' '.join(name.replace('_', ' ').split()).casefold(),
                      ' '.join(provider_class(name).display_name.split()).casefold()):
            return name
    return None


def provider_names() -> list[tuple[str, str]]:
    """(id, name as shown) of every provider, in the settings' order."""
    return [(name, provider_class(name).display_name) for name in PROVIDERS]


def get_provider(name: str, **kw) -> 'AIProviderPlugin':
    """A provider named name, made with kw (settings, secrets, transport: see AIProviderPlugin)."""
    return provider_class(name)(**kw)


def chosen_provider() -> 'AIProviderPlugin | None':
    """The provider chosen in the settings, with the user's settings; None if none is chosen."""
    name = plugin_prefs()['provider']
    return get_provider(name) if name in PROVIDERS else None


def image_provider_names() -> list[tuple[str, str]]:
    """(id, name as shown) of the providers that can make images (covers), in the settings' order."""
    return [(name, provider_class(name).display_name) for name in PROVIDERS
            if provider_class(name).capabilities & Capability.IMAGE_GENERATION]


def image_provider() -> 'AIProviderPlugin | None':
    """The provider chosen in the settings to make covers, with the user's settings; None if
    none is chosen, or the one chosen cannot make images."""
    name = plugin_prefs()['image_provider']
    if name not in PROVIDERS or not provider_class(name).capabilities & Capability.IMAGE_GENERATION:
        return None
    return get_provider(name)
