# License: GPLv3 Copyright: the Book AI developers
"""The offer to carry calibre's AI settings over: what it lists, what ticking a section does,
made once on first use; rendered offscreen, with a screenshot for the README."""

import copy
import json
import shutil

import pytest
from qt.core import QDialog, QTimer, Qt

from calibre_plugins.bookai.from_calibre import settings as calibre_settings
from calibre_plugins.bookai.gui import from_calibre
from calibre_plugins.bookai.providers.registry import PROVIDERS
from calibre_plugins.bookai.settings.prefs import plugin_prefs
from calibre_plugins.bookai.settings.secrets import secret_store
from helpers.calibre_ai import LLAMA_KEY, copy_recorded
from helpers.project import PROJECT


@pytest.fixture(autouse=True)
def saved_prefs():
    """Every test starts from, and leaves behind, the settings as they were: the tests share one config."""
    prefs, store = plugin_prefs(), secret_store()
    before = copy.deepcopy(dict(prefs))
    keys = {name: store.get(name, 'api_key') for name in PROVIDERS}
    yield prefs
    dict.clear(prefs)
    dict.update(prefs, before)
    prefs.commit()
    for name, key in keys.items():  # the keys carried over: gone again
        if key:
            store.set(name, 'api_key', key)
        else:
            store.delete(name, 'api_key')


@pytest.fixture
def calibre_config(tmp_path, monkeypatch):
    copy_recorded('9.17', tmp_path)
    monkeypatch.setattr(calibre_settings, 'calibre_config_dir', lambda: str(tmp_path))
    return tmp_path


def test_the_offer_lists_what_was_found_and_carries_only_the_sections_ticked(qapp, calibre_config, artifacts,
                                                                             saved_prefs):
    found = calibre_settings.read()
    d = from_calibre.CalibreSettingsOffer(found, first_use=True)
    d.resize(d.sizeHint())
    d.show()
    qapp.processEvents()
    tops = {d.tree.topLevelItem(i).text(0) for i in range(d.tree.topLevelItemCount())}
    assert {'OpenAI compatible', 'Anthropic', 'OpenAI', 'Google Gemini', 'OpenRouter', 'Ollama', 'xAI Grok',
            'Venice AI', 'Answers', 'Library', 'E-book viewer', 'AI covers'} <= tops, tops
    assert 'asked once' in d.intro.text()
    grok = next(d.tree.topLevelItem(i) for i in range(d.tree.topLevelItemCount())
                if d.tree.topLevelItem(i).text(0) == 'xAI Grok')
    said = [grok.child(i).text(2) for i in range(grok.childCount())]
    assert any('has no web search' in s for s in said) and any("service's own settings" in s for s in said)
    shot = artifacts / 'import-offer.png'
    assert d.grab().save(str(shot))
    shutil.copy(shot, PROJECT / 'docs' / 'screenshots' / 'import-offer.png')
    anthropic_before = copy.deepcopy(plugin_prefs()['providers'].get('anthropic'))  # other tests may have saved some
    d.sections['Anthropic'].setCheckState(0, Qt.CheckState.Unchecked)
    d.carry_button.click()
    assert d.result() == QDialog.DialogCode.Accepted and not d.failed
    prefs = plugin_prefs()
    assert prefs['provider'] == 'openai_compatible'
    assert prefs['providers'].get('anthropic') == anthropic_before  # not ticked: not carried over
    assert prefs['providers']['openai']['model'] == 'gpt-5'
    assert secret_store().get('openai_compatible', 'api_key') == LLAMA_KEY
    assert secret_store().get('anthropic', 'api_key') == ''
    assert LLAMA_KEY not in json.dumps(dict(prefs))


def test_the_offer_is_made_once_on_first_use_whatever_the_answer(qapp, calibre_config, saved_prefs, monkeypatch):
    plugin_prefs()['calibre_settings_offered'] = False
    monkeypatch.setattr(from_calibre, '_looked', False)
    shown = []

    def answer_not_now():
        d = qapp.activeModalWidget()
        shown.append(d)
        d.reject()
    QTimer.singleShot(0, answer_not_now)
    from_calibre.offer_on_first_use(None)
    assert len(shown) == 1 and isinstance(shown[0], from_calibre.CalibreSettingsOffer)
    assert plugin_prefs()['calibre_settings_offered'] is True
    assert 'openai' not in plugin_prefs()['providers']  # Not now: nothing carried over
    from_calibre.offer_on_first_use(None)  # not again in this process
    monkeypatch.setattr(from_calibre, '_looked', False)
    from_calibre.offer_on_first_use(None)  # nor in the next: the settings say it was made
    assert len(shown) == 1


def test_nothing_is_offered_where_calibre_had_no_ai(qapp, tmp_path, monkeypatch, saved_prefs):
    monkeypatch.setattr(calibre_settings, 'calibre_config_dir', lambda: str(tmp_path))
    monkeypatch.setattr(from_calibre, '_looked', False)
    plugin_prefs()['calibre_settings_offered'] = False
    from_calibre.offer_on_first_use(None)  # would block on a dialog if one were shown
    assert plugin_prefs()['calibre_settings_offered'] is False
