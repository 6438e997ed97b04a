# License: GPLv3 Copyright: the Book AI developers
"""The offer to carry calibre's AI settings over: what it lists, what ticking a section does,
made once on first use; rendered offscreen, with a screenshot for the README."""

import copy
import json
import shutil

import pytest
from qt.core import QDialog, Qt

from calibre_plugins.bookai.from_calibre import carry_over as calibre_settings
from calibre_plugins.bookai.gui import carry_over_offer as from_calibre
from calibre_plugins.bookai.providers.registry import PROVIDERS
from calibre_plugins.bookai.settings.prefs import plugin_prefs
from calibre_plugins.bookai.settings.secrets import secret_store
from helpers.calibre_ai import LLAMA_KEY, copy_recorded
from helpers.calibre_gui import when_modal
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


def wait_for(qapp, done, what: str, seconds: float = 120) -> None:
    """Process events until done() (calibre's files are read in a thread); a hang guard, not a measure."""
    import time
    end = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < end, f'{what}: still waiting'
        qapp.processEvents()
        time.sleep(0.01)


@pytest.fixture
def first_use(monkeypatch, saved_prefs):
    """The first-use offer as at a first start: not made yet, nothing looked at in this process; the
    offers it shows (or the reading it did: found, exception) recorded."""
    plugin_prefs()['calibre_settings_offered'] = False
    monkeypatch.setattr(from_calibre, '_looked', False)
    seen = []
    real = from_calibre.show_first_offer

    def recorded(found, exc, parent):
        seen.append((found, exc))
        real(found, exc, parent)
    monkeypatch.setattr(from_calibre, 'show_first_offer', recorded)
    return seen


def open_offers() -> list:
    return list(from_calibre._open_offers)


def test_the_offer_is_made_once_on_first_use_whatever_the_answer(qapp, calibre_config, first_use, monkeypatch):
    from_calibre.offer_on_first_use(None)  # returns at once: calibre's files are read in a thread
    assert plugin_prefs()['calibre_settings_offered'] is True  # marked before anything is read
    wait_for(qapp, open_offers, 'the offer')
    (d,) = open_offers()
    assert isinstance(d, from_calibre.CalibreSettingsOffer) and d.isVisible()
    d.reject()
    assert not open_offers()
    assert 'openai' not in plugin_prefs()['providers']  # Not now: nothing carried over
    from_calibre.offer_on_first_use(None)  # not again in this process
    monkeypatch.setattr(from_calibre, '_looked', False)
    from_calibre.offer_on_first_use(None)  # nor in the next: the settings say it was made
    qapp.processEvents()
    assert len(first_use) == 1 and not open_offers()


def test_nothing_is_offered_where_calibre_had_no_ai(qapp, tmp_path, monkeypatch, first_use):
    monkeypatch.setattr(calibre_settings, 'calibre_config_dir', lambda: str(tmp_path))
    from_calibre.offer_on_first_use(None)
    wait_for(qapp, lambda: first_use, 'reading calibre\'s files')
    assert first_use[0][1] is None and not first_use[0][0].found
    assert not open_offers()
    assert plugin_prefs()['calibre_settings_offered'] is True  # marked first: not read at every start


def test_a_fifo_for_calibres_file_never_stops_the_first_window(qapp, calibre_config, first_use):
    import os
    (calibre_config / 'ai.json').unlink()
    os.mkfifo(calibre_config / 'ai.json')  # read with open(), it would wait for a writer for ever
    from_calibre.offer_on_first_use(None)  # returns at once whatever the files hold
    wait_for(qapp, open_offers, 'the offer')
    (d,) = open_offers()
    assert d.problems.isVisibleTo(d) and 'ai.json could not be read: it is not a regular file' in d.problems.text()
    d.reject()


@pytest.mark.parametrize('failure', ['reading', 'settings'])
def test_nothing_that_goes_wrong_stops_the_first_window(qapp, calibre_config, first_use, monkeypatch, failure):
    """offer_on_first_use caught only OSError: anything else kept the first Book AI window from opening."""
    def broken(*args, **kwargs):
        raise KeyError('temperature')
    if failure == 'reading':
        monkeypatch.setattr(from_calibre, 'read', broken)
    else:
        monkeypatch.setattr(from_calibre, 'offered', broken)
    from_calibre.offer_on_first_use(None)  # no exception
    if failure == 'reading':
        wait_for(qapp, lambda: first_use, 'reading')
        assert isinstance(first_use[0][1], KeyError)
    qapp.processEvents()
    assert not open_offers()


def test_wrong_types_in_calibres_files_are_listed_in_the_offer(qapp, tmp_path, monkeypatch, first_use):
    monkeypatch.setattr(calibre_settings, 'calibre_config_dir', lambda: str(tmp_path))
    (tmp_path / 'ai.json').write_text(json.dumps({'providers': {
        'OpenAI': {'temperature': 0.5, 'headers': [['X-A', 'b\r\nc']], 'text_model': 'gpt-5'},
        'Anthropic': {'data_collection': 'deny'}, 'OpenRouter': {'data_collection': ['deny']}}}))
    from_calibre.offer_on_first_use(None)
    wait_for(qapp, open_offers, 'the offer')
    (d,) = open_offers()
    said = [d.tree.topLevelItem(i).child(j).text(2) for i in range(d.tree.topLevelItemCount())
            for j in range(d.tree.topLevelItem(i).childCount())]
    assert "not carried over: Book AI's OpenAI has no such setting" in said
    assert 'not carried over: it is not a value calibre writes for this setting' in said
    d.reject()


def test_a_python_template_is_shown_whole_and_needs_its_own_tick(qapp, calibre_config, saved_prefs, artifacts):
    template = "python:\ndef evaluate(book, context):\n    return book.title.upper()\n" + '# more\n' * 40
    gui = json.loads((calibre_config / 'gui.json').read_text('utf-8'))
    gui['llm-cover-generation']['title_template'] = template
    (calibre_config / 'gui.json').write_text(json.dumps(gui))
    plugin_prefs()['cover_templates'] = {'title': '', 'authors': '', 'series': ''}
    d = from_calibre.CalibreSettingsOffer(calibre_settings.read())
    d.resize(d.sizeHint())
    d.show()
    qapp.processEvents()
    assert template in d.code_view.toPlainText()  # whole
    assert d.code_box is not None and not d.code_box.isChecked()
    assert d.grab().save(str(artifacts / 'import-offer-python-template.png'))
    d.carry_button.click()
    assert plugin_prefs()['cover_templates']['title'] == ''  # not ticked: not carried
    assert plugin_prefs()['cover_templates']['series'] == '{series} #{series_index}'
    d = from_calibre.CalibreSettingsOffer(calibre_settings.read())
    d.code_box.setChecked(True)
    d.carry_button.click()
    assert plugin_prefs()['cover_templates']['title'] == template


def test_the_import_on_demand_reads_in_a_thread_and_offers(qapp, calibre_config, saved_prefs, monkeypatch):
    import threading
    threads = []
    real = calibre_settings.read

    def where(*args, **kwargs):
        threads.append(threading.current_thread() is threading.main_thread())
        return real(*args, **kwargs)
    monkeypatch.setattr(from_calibre, 'read', where)
    shown = []

    def answer(d):
        shown.append(d)
        d.reject()
    when_modal(answer)
    assert from_calibre.offer_on_demand(None) is False
    assert threads == [False] and len(shown) == 1 and isinstance(shown[0], from_calibre.CalibreSettingsOffer)
