# License: GPLv3 Copyright: the Book AI developers
"""What the library-by-meaning tests share: the real embedding model in llama-server (one per test
module), and its Embedder through Book AI's OpenAI-compatible provider."""

import pytest

from helpers.peers import LlamaServer


@pytest.fixture(scope='module')
def server():
    with LlamaServer('embed') as s:
        yield s


@pytest.fixture
def e(server):
    from calibre_plugins.bookai.library_search import building
    from calibre_plugins.bookai.providers.registry import get_provider
    provider = get_provider('openai_compatible', settings={'base_url': server.base_url + '/v1', 'model': server.model})
    return building.embedder(provider, server.model)
