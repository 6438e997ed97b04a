# License: GPLv3 Copyright: the Book AI developers
"""The settings dialog, rendered offscreen: every tab shown (a screenshot each), and
every setting edited, saved and read back."""

import copy

import pytest
from qt.core import QApplication, QDialog, QLineEdit, QTimer, QWidget

from calibre_plugins.bookai.conversation.actions import TEMPLATE_VARIABLES, library_actions, library_actions_builtin
from calibre_plugins.bookai.conversation.books import STANDARD_FIELDS, interface_language
from calibre_plugins.bookai.gui import settings as settings_module
from calibre_plugins.bookai.gui.settings import SettingsDialog, SettingsWidget, slug
from calibre_plugins.bookai.providers.registry import PROVIDERS
from calibre_plugins.bookai.settings.prefs import plugin_prefs
from calibre_plugins.bookai.settings.secrets import secret_store

TABS = ('provider', 'quick-actions', 'sent-to-the-ai', 'save-to-book')
BUILTIN = [a.name for a in library_actions_builtin()]


@pytest.fixture(autouse=True)
def saved_prefs():
    """Every test starts from, and leaves behind, the settings as they were: the tests share one config."""
    prefs = plugin_prefs()
    before = copy.deepcopy(dict(prefs))
    secrets = copy.deepcopy(dict(secret_store().config))
    yield prefs
    dict.clear(prefs)
    dict.update(prefs, before)
    prefs.commit()
    store = secret_store().config
    dict.clear(store)
    dict.update(store, secrets)
    store.commit()


def shown(qapp, widget):
    widget.show()
    qapp.processEvents()
    return widget


def shoot(qapp, widget, path):
    qapp.processEvents()
    assert widget.grab().save(str(path))
    assert path.stat().st_size > 8000, f'{path} looks empty'


def answer_dialog(qapp, fill):
    """Run fill(dialog) on the next modal dialog, once it is shown; close it if fill fails."""
    errors = []

    def run():
        d = QApplication.activeModalWidget()
        if d is None:
            return QTimer.singleShot(10, run)
        try:
            fill(d)
        except BaseException as e:
            errors.append(e)
            d.reject()
    QTimer.singleShot(0, run)
    return errors


def click_through(qapp, button, fill):
    errors = answer_dialog(qapp, fill)
    button.click()
    qapp.processEvents()
    if errors:
        raise errors[0]


def action_names(w):
    return [a['name'] for a in w.actions_shown()]


def select_action(w, name):
    w.action_list.setCurrentRow(action_names(w).index(name))


def test_every_tab_renders(qapp, artifacts, saved_prefs):
    saved_prefs['provider'] = ''
    d = shown(qapp, SettingsDialog())
    assert d.windowTitle() == 'Book AI settings'
    assert d.minimumSizeHint().width() <= 720  # nothing forces the dialog wider
    assert (d.width(), d.height()) == (720, 560)
    w = d.settings
    assert w.tabs.count() == len(TABS)
    for i, tab in enumerate(TABS):
        w.tabs.setCurrentIndex(i)
        shoot(qapp, d, artifacts / f'settings-{tab}.png')
    w.tabs.setCurrentIndex(0)
    for name in PROVIDERS:  # every provider's settings fit the width
        w.provider_box.setCurrentIndex(w.provider_box.findData(name))
        qapp.processEvents()
        assert not w.config_pages[name].horizontalScrollBar().isVisible(), name
    shoot(qapp, d, artifacts / 'settings-provider-openai_compatible.png')
    d.reject()


def test_provider_choice(qapp, saved_prefs):
    saved_prefs['provider'] = ''
    w = shown(qapp, SettingsWidget())
    assert w.none_chosen.isVisible()
    assert w.selected_provider == next(iter(PROVIDERS))
    assert list(w.config_widgets) == [w.selected_provider]  # only the one shown is made
    texts = {w.provider_box.itemData(i): w.provider_box.itemText(i) for i in range(w.provider_box.count())}
    assert set(texts) == set(PROVIDERS)
    assert '(local)' in texts['ollama'] and '(local)' in texts['lmstudio'] and '(local)' not in texts['openai']
    assert texts['ollama'].endswith('ready') and texts['openai'].endswith('needs setting up')  # no key yet
    w.provider_box.setCurrentIndex(w.provider_box.findData('ollama'))
    assert set(w.config_widgets) == {'openai', 'ollama'}
    assert w.provider_stack.currentWidget().widget() is w.config_widgets['ollama']
    w.config_widgets['ollama'].editors['model'].box.setEditText('tiny:1b')
    assert w.problem() == ''
    w.commit()
    assert saved_prefs['provider'] == 'ollama'
    assert saved_prefs['providers']['ollama']['model'] == 'tiny:1b'
    w.close()

    again = shown(qapp, SettingsWidget())
    assert again.selected_provider == 'ollama' and not again.none_chosen.isVisible()
    assert list(again.config_widgets) == ['ollama']
    assert again.config_widgets['ollama'].values()['model'] == 'tiny:1b'
    again.close()


def test_a_bad_provider_setting_is_not_saved(qapp, saved_prefs, monkeypatch):
    saved_prefs['provider'] = 'ollama'
    shown_errors = []
    import calibre.gui2
    monkeypatch.setattr(calibre.gui2, 'error_dialog', lambda parent, title, msg, **kw: shown_errors.append(msg))
    d = shown(qapp, SettingsDialog())
    w = d.settings
    w.provider_box.setCurrentIndex(w.provider_box.findData('openai_compatible'))
    w.config_widgets['openai_compatible'].editors['base_url'].setText('ftp://example.com')
    assert 'http://' in w.problem()
    d.accept()
    assert shown_errors and 'http://' in shown_errors[0]
    assert d.isVisible() and d.result() != QDialog.DialogCode.Accepted
    assert saved_prefs['provider'] == 'ollama'
    w.config_widgets['openai_compatible'].editors['base_url'].setText('http://127.0.0.1:8080')
    d.accept()
    assert not d.isVisible() and d.result() == QDialog.DialogCode.Accepted
    assert saved_prefs['provider'] == 'openai_compatible'
    assert saved_prefs['providers']['openai_compatible']['base_url'] == 'http://127.0.0.1:8080'


def test_an_api_key_is_never_shown(qapp, saved_prefs):
    key = 'sk-very-secret-key-0123456789'
    secret_store().set('openai', 'api_key', key)
    saved_prefs['provider'] = 'openai'
    w = shown(qapp, SettingsWidget())
    editor = w.config_widgets['openai'].editors['api_key']
    assert editor.echoMode() == QLineEdit.EchoMode.Password and editor.text() == ''
    assert 'stored' in editor.placeholderText()
    for child in w.findChildren(QWidget):
        for getter in ('text', 'currentText', 'toPlainText', 'toolTip', 'placeholderText'):
            value = getattr(child, getter, None)
            if callable(value):
                assert key not in str(value()), (child, getter)
    assert w.provider_box.currentText().endswith('ready')  # the stored key counts
    w.commit()  # nothing typed: the stored key is kept
    assert secret_store().get('openai', 'api_key') == key
    assert 'api_key' not in saved_prefs['providers']['openai']
    editor.setText('sk-replaced')
    w.commit()
    assert secret_store().get('openai', 'api_key') == 'sk-replaced'
    assert 'sk-replaced' not in str(dict(saved_prefs))
    w.close()


def test_slugs():
    assert slug('Plot holes!', set()) == 'plot_holes'
    assert slug('Plot holes!', {'plot_holes', 'plot_holes_2'}) == 'plot_holes_3'
    assert slug(' ?? ', set()) == 'action'
    assert slug('Résumé', set()) == 'résumé'


def test_quick_actions_edited(qapp, artifacts, saved_prefs):
    saved_prefs['library_actions'] = []
    w = SettingsWidget()
    w.resize(720, 500)
    shown(qapp, w)
    w.tabs.setCurrentIndex(1)
    assert action_names(w) == BUILTIN
    for name in BUILTIN:  # calibre's actions can be hidden, never removed
        select_action(w, name)
        assert not w.remove_button.isEnabled() and not w.restore_button.isEnabled()
    select_action(w, 'summarize')
    assert not w.up_button.isEnabled() and w.down_button.isEnabled()
    w.action_list.item(0).setCheckState(settings_module.check_state(False))

    def add(d):
        for v in TEMPLATE_VARIABLES:
            assert '{' + v + '}' in d.help.text()
        d.accept()  # empty: refused, in words
        assert d.isVisible() and 'label' in d.error.text()
        d.label_edit.setText('Plot holes!')
        d.accept()
        assert d.isVisible() and 'prompt' in d.error.text()
        d.template_edit.setPlainText('List the plot holes of {title}.')
        shoot(qapp, d, artifacts / 'settings-action-editor.png')
        d.accept()
        assert not d.isVisible()

    click_through(qapp, w.add_button, add)
    assert action_names(w) == BUILTIN + ['plot_holes']
    assert w.action_list.currentRow() == len(BUILTIN)  # the new one is selected
    assert w.remove_button.isEnabled() and not w.down_button.isEnabled()
    w.up_button.click()
    assert action_names(w) == BUILTIN[:-1] + ['plot_holes', BUILTIN[-1]]

    select_action(w, 'chapters')

    def edit(d):
        assert d.label_edit.text() == 'Chapters'
        d.label_edit.setText('Chapter by chapter')
        d.accept()

    click_through(qapp, w.edit_button, edit)
    item = w.action_list.item(1)
    assert item.text().startswith('Chapter by chapter') and '(edited)' in item.text()
    assert w.restore_button.isEnabled() and not w.remove_button.isEnabled()
    shoot(qapp, w, artifacts / 'settings-quick-actions-edited.png')

    def cancel(d):
        d.label_edit.setText('Not kept')
        d.reject()

    click_through(qapp, w.edit_button, cancel)
    assert w.action_list.item(1).data(settings_module.ACTION_ROLE)['label'] == 'Chapter by chapter'

    w.commit()
    saved = saved_prefs['library_actions']
    assert [a['name'] for a in saved] == BUILTIN[:-1] + ['plot_holes', BUILTIN[-1]]
    assert set(saved[0]) == {'name', 'label', 'template', 'enabled'}
    by_name = {a['name']: a for a in saved}
    assert by_name['summarize']['enabled'] is False
    assert by_name['chapters']['label'] == 'Chapter by chapter'
    assert by_name['plot_holes'] == {'name': 'plot_holes', 'label': 'Plot holes!',
                                     'template': 'List the plot holes of {title}.', 'enabled': True}
    everything = library_actions(include_disabled=True)
    assert [a.name for a in everything] == [a['name'] for a in saved]
    assert [a.name for a in library_actions()] == [a['name'] for a in saved if a['name'] != 'summarize']
    mine = everything[-2]
    assert not mine.builtin and mine.template == 'List the plot holes of {title}.'
    assert next(a for a in everything if a.name == 'chapters').label == 'Chapter by chapter'
    w.close()

    # read back, then undone: the edit restored, the own action removed
    w = shown(qapp, SettingsWidget())
    assert action_names(w) == [a['name'] for a in saved]
    assert not settings_module.checked(w.action_list.item(0))
    select_action(w, 'chapters')
    assert w.restore_button.isEnabled()
    w.restore_button.click()
    assert w.action_list.item(1).text() == 'Chapters' and not w.restore_button.isEnabled()
    select_action(w, 'plot_holes')
    w.remove_button.click()
    assert action_names(w) == BUILTIN
    w.commit()
    assert [a.name for a in library_actions(include_disabled=True)] == BUILTIN
    assert {a.name: a.label for a in library_actions(include_disabled=True)}['chapters'] == 'Chapters'
    assert all(a.builtin for a in library_actions(include_disabled=True))
    w.close()


def test_fields_sent(qapp, saved_prefs):
    saved_prefs['book_fields'] = []
    w = shown(qapp, SettingsWidget())
    keys = [w.field_list.item(i).data(settings_module.FIELD_ROLE) for i in range(w.field_list.count())]
    assert keys == list(STANDARD_FIELDS)
    assert not any(settings_module.checked(w.field_list.item(i)) for i in range(w.field_list.count()))
    names = {w.field_list.item(i).data(settings_module.FIELD_ROLE): w.field_list.item(i).text()
             for i in range(w.field_list.count())}
    assert names['series'] == 'Series' and names['pubdate'] == 'Published'
    for key in ('pubdate', 'tags'):
        w.field_list.item(keys.index(key)).setCheckState(settings_module.check_state(True))
    w.commit()
    assert saved_prefs['book_fields'] == ['tags', 'pubdate']
    w.close()
    again = SettingsWidget()
    assert again.fields_pref() == ['tags', 'pubdate']


def test_choices_round_trip(qapp, saved_prefs):
    saved_prefs['answer_language'] = 'interface'
    w = shown(qapp, SettingsWidget())
    assert [w.confirm_box.itemData(i) for i in range(w.confirm_box.count())] == ['first', 'always', 'never']
    assert w.confirm_box.currentData() == 'first'
    assert w.language_box.currentData() == 'interface'
    assert (interface_language() or 'English') in w.language_box.currentText()
    languages = [w.language_box.itemData(i) for i in range(w.language_box.count())]
    assert languages[:2] == ['interface', 'never'] and 'German' in languages and 'Greek' in languages
    assert [w.save_box.itemData(i) for i in range(w.save_box.count())] == ['comments']
    assert w.save_box.currentText() == 'Comments'
    w.confirm_box.setCurrentIndex(w.confirm_box.findData('always'))
    w.language_box.setCurrentIndex(w.language_box.findData('German'))
    w.commit()
    assert (saved_prefs['confirm_send'], saved_prefs['answer_language'], saved_prefs['save_field']) == (
        'always', 'German', 'comments')
    w.close()

    # values the lists do not offer are shown, and kept
    saved_prefs['answer_language'] = 'Esperanto'
    saved_prefs['save_field'] = '#gone'
    saved_prefs['confirm_send'] = 'never'
    w = SettingsWidget()
    assert w.language_box.currentText() == 'Esperanto' and w.save_box.currentData() == '#gone'
    assert w.confirm_box.currentData() == 'never'
    w.language_box.setCurrentIndex(w.language_box.findData('never'))
    w.commit()
    assert (saved_prefs['confirm_send'], saved_prefs['answer_language'], saved_prefs['save_field']) == (
        'never', 'never', '#gone')


def test_a_library_custom_columns(qapp, artifacts, library, saved_prefs):
    from calibre.library import db
    cache = db(str(library)).new_api
    cache.create_custom_column('notes', 'My notes', 'comments', False)
    cache.create_custom_column('mood', 'Mood', 'text', False)
    cache.close()
    cache = db(str(library)).new_api  # a new column appears once the library is opened again
    saved_prefs['book_fields'] = ['series', '#elsewhere']
    saved_prefs['save_field'] = 'comments'
    d = shown(qapp, SettingsDialog(cache))
    w = d.settings
    items = {w.field_list.item(i).data(settings_module.FIELD_ROLE): w.field_list.item(i)
             for i in range(w.field_list.count())}
    assert list(items)[:len(STANDARD_FIELDS)] == list(STANDARD_FIELDS)
    assert {'#notes', '#mood', '#elsewhere'} <= set(items)
    assert 'My notes' in items['#notes'].text() and 'Mood' in items['#mood'].text()
    assert items['series'].text() == cache.field_metadata['series']['name']
    assert 'not in this library' in items['#elsewhere'].text()
    assert settings_module.checked(items['series']) and settings_module.checked(items['#elsewhere'])
    save_to = [w.save_box.itemData(i) for i in range(w.save_box.count())]
    assert save_to == ['comments', '#notes']  # only long-text columns
    assert 'My notes' in w.save_box.itemText(1)
    items['#notes'].setCheckState(settings_module.check_state(True))
    items['#elsewhere'].setCheckState(settings_module.check_state(False))
    w.save_box.setCurrentIndex(1)
    for i, tab in enumerate(TABS):
        if tab in ('sent-to-the-ai', 'save-to-book'):
            w.tabs.setCurrentIndex(i)
            shoot(qapp, d, artifacts / f'settings-{tab}-library.png')
    d.accept()
    assert d.result() == QDialog.DialogCode.Accepted
    assert saved_prefs['book_fields'] == ['series', '#notes']
    assert saved_prefs['save_field'] == '#notes'
    cache.close()
