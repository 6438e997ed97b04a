# License: GPLv3 Copyright: the Book AI developers
"""Every provider's settings widget, rendered offscreen, with a screenshot each."""

import pytest

from calibre_plugins.bookai.gui.provider_config import ProviderConfigWidget
from calibre_plugins.bookai.providers.registry import PROVIDERS, get_provider


class NoSecrets:
    def get(self, provider, name):
        return ''

    def where(self):
        return 'Kept nowhere: a test.'


@pytest.mark.parametrize('name', list(PROVIDERS))
def test_config_widget_renders(name, qapp, artifacts):
    provider = get_provider(name, settings={}, secrets=NoSecrets())
    w = ProviderConfigWidget(provider)
    w.resize(640, w.sizeHint().height())
    w.show()
    qapp.processEvents()
    assert set(w.editors) == {o.name for o in provider.all_options()}
    assert ('api_key' in w.editors) == (provider.needs_key or provider.key_optional)
    values = w.values()
    assert values['model'] == '' and values['enabled'] is True
    assert 'api_key' not in values  # nothing typed: the stored key is kept
    if 'api_key' in w.editors:  # where the key is kept, said under its field
        assert w.key_place.text() == 'Kept nowhere: a test.' and w.key_place.isVisibleTo(w)
    shot = artifacts / f'provider-{name}.png'
    assert w.grab().save(str(shot))
    w.close()


def test_typed_values_reach_the_provider(qapp):
    provider = get_provider('openai_compatible', settings={}, secrets=NoSecrets())
    w = ProviderConfigWidget(provider)
    w.editors['base_url'].setText('http://127.0.0.1:9/')
    w.editors['api_key'].setText('sk-typed-key-123')
    w.editors['headers'].setPlainText('X-One: 1\nX-Two: two words')
    w.editors['model'].box.setEditText('some/model:7b')
    tested = w.provider_with_these_settings()
    assert tested.config.base_url == 'http://127.0.0.1:9/v1'
    assert tested.config.api_key == 'sk-typed-key-123'
    assert tested.extra_headers(tested.config) == {'X-One': '1', 'X-Two': 'two words'}
    assert tested.choose_model() == 'some/model:7b'
    w.editors['headers'].setPlainText('not a header')
    assert 'Name: value' in w.validate()


def test_reasoning_effort_chosen_in_the_settings_reaches_the_wire(qapp):
    import copy
    import json

    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    from helpers.reasoning import EXPECTED, REASONING, TURNS
    prefs = plugin_prefs()
    before = copy.deepcopy(dict(prefs))
    try:
        for name in REASONING:
            w = ProviderConfigWidget(get_provider(name, settings={}, secrets=NoSecrets()))
            combo = w.editors['reasoning_effort']
            assert [combo.itemData(i) for i in range(combo.count())] == ['auto', 'high', 'medium', 'low', 'none']
            combo.setCurrentIndex(combo.findData('low'))
            w.commit()
            saved = dict(prefs['providers'][name])
            assert saved['reasoning_effort'] == 'low'
            saved.update({'api_key': 'k' * 12, 'base_url': 'http://127.0.0.1:9'})
            body = json.loads(get_provider(name, settings=saved).chat_request(TURNS, 'model-x').body)
            assert REASONING[name](body) == EXPECTED[name]['low']
            w.close()
    finally:
        dict.clear(prefs)
        dict.update(prefs, before)
        prefs.commit()
