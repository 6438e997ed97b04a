# License: GPLv3 Copyright: the Book AI developers
"""The provider that makes covers: chosen apart from the one answers come from, and only among
the providers that can make images; anything else in the setting gives none."""

import pytest


def test_the_image_provider_is_the_one_chosen_for_images(prefs):
    from calibre_plugins.bookai.providers.capabilities import Capability
    from calibre_plugins.bookai.providers.registry import image_provider, image_provider_names, provider_class
    names = [n for n, _shown in image_provider_names()]
    assert 'openai_compatible' in names and 'anthropic' not in names and 'ollama' not in names
    assert all(provider_class(n).capabilities & Capability.IMAGE_GENERATION for n in names)
    prefs['provider'] = 'anthropic'  # answers from one provider, covers from another
    prefs['image_provider'] = 'openai_compatible'
    prefs['providers'] = {'openai_compatible': {'base_url': 'http://127.0.0.1:9/v1', 'image_model': 'sd'}}
    p = image_provider()
    assert p.name == 'openai_compatible' and p.config.option('image_model') == 'sd'


@pytest.mark.parametrize('value', ['', 'anthropic', 'ollama', 'no such provider', '../openai', 'OPENAI'])
def test_no_image_provider_unless_one_that_makes_images_is_chosen(prefs, value):
    from calibre_plugins.bookai.providers.registry import image_provider
    prefs['provider'] = 'openai_compatible'  # the chat provider is not used for covers
    prefs['image_provider'] = value
    assert image_provider() is None
