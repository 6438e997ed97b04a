# License: GPLv3 Copyright: the Book AI developers
"""What the library-by-meaning tests share: the real embedding model's Embedder, through Book AI's
OpenAI-compatible provider (the server itself: tests/conftest.py's embed)."""

import pytest


@pytest.fixture
def e(embed):
    from calibre_plugins.bookai.library_search import building
    from calibre_plugins.bookai.providers.registry import get_provider
    provider = get_provider('openai_compatible', settings={'base_url': embed.base_url + '/v1', 'model': embed.model})
    return building.embedder(provider, embed.model)
