# License: GPLv3 Copyright: the Book AI developers
"""The settings dialog, rendered offscreen: every tab shown (a screenshot each), and
every setting edited, saved and read back."""

import copy
import re
import shutil

import pytest
from qt.core import QAbstractButton, QDialog, QGroupBox, QLabel, QLineEdit, QWidget

from calibre_plugins.bookai.conversation.actions import (
    TEMPLATE_VARIABLES, VIEWER_VARIABLES, library_actions, library_actions_builtin, viewer_actions,
    viewer_actions_builtin,
)
from calibre_plugins.bookai.conversation.books import interface_language, offered_fields
from calibre_plugins.bookai.gui.settings_actions_tabs import ACTION_ROLE
from calibre_plugins.bookai.gui.settings_books_tabs import FIELD_ROLE
from calibre_plugins.bookai.gui.settings_dialog import SettingsDialog, SettingsWidget
from calibre_plugins.bookai.gui.settings_tab import check_state, checked
from calibre_plugins.bookai.providers.registry import PROVIDERS
from calibre_plugins.bookai.settings.prefs import plugin_prefs
from calibre_plugins.bookai.settings.secrets import secret_store
from helpers.books import quick_start_epub
from helpers.calibre_gui import shoot, when_modal

SMALLEST = 8000  # bytes: a smaller picture of a tab is an empty one
TABS = ('provider', 'library-actions', 'reading', 'book-fields', 'sent-to-the-ai', 'save-to-book', 'covers')
BUILTIN = [a.name for a in library_actions_builtin()]
VIEWER_BUILTIN = [a.name for a in viewer_actions_builtin()]
HIGHLIGHT_STYLES = ['color-yellow', 'color-green', 'color-blue', 'color-red', 'color-purple', 'decoration-wavy',
                    'decoration-strikeout']


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


def answer_dialog(qapp, fill):
    """Run fill(dialog) on the next modal dialog, once it is shown; close it if fill fails."""
    errors = []

    def run(d):
        try:
            fill(d)
        except BaseException as e:
            errors.append(e)
            d.reject()
    when_modal(run)
    return errors


def click_through(qapp, button, fill):
    errors = answer_dialog(qapp, fill)
    button.click()
    qapp.processEvents()
    if errors:
        raise errors[0]


def action_names(editor):
    return [a['name'] for a in editor.actions_shown()]


def select_action(editor, name):
    editor.action_list.setCurrentRow(action_names(editor).index(name))


def test_every_tab_renders(qapp, artifacts, saved_prefs):
    saved_prefs['provider'] = ''
    d = shown(qapp, SettingsDialog())
    assert d.windowTitle() == 'Book AI settings'
    assert d.minimumSizeHint().width() <= 720  # nothing forces the dialog wider
    w = d.settings
    assert (d.width(), d.height()) == (800, 560)
    assert not any(b.isVisible() for b in w.tabs.tabBar().findChildren(QAbstractButton))  # every tab's name shown
    assert w.tabs.count() == len(TABS)
    for i, tab in enumerate(TABS):
        w.tabs.setCurrentIndex(i)
        shoot(d, artifacts / f'settings-{tab}.png', SMALLEST)
    w.tabs.setCurrentIndex(0)
    for name in PROVIDERS:  # every provider's settings fit the width
        w.provider_tab.provider_box.setCurrentIndex(w.provider_tab.provider_box.findData(name))
        qapp.processEvents()
        assert not w.provider_tab.config_pages[name].horizontalScrollBar().isVisible(), name
    shoot(d, artifacts / 'settings-provider-openai_compatible.png', SMALLEST)
    d.reject()


def mnemonic(text):
    m = re.search(r'&([^&])', text.replace('&&', ''))
    return m.group(1).lower() if m else None


def test_tab_accelerators_are_unique(qapp, saved_prefs):
    """A tab's Alt+letter works from every tab: no button or label of any tab may use its letter."""
    d = shown(qapp, SettingsDialog())
    w = d.settings
    for name in PROVIDERS:  # every provider's settings made
        w.provider_tab.provider_box.setCurrentIndex(w.provider_tab.provider_box.findData(name))
    tab_keys = [mnemonic(w.tabs.tabText(i)) for i in range(w.tabs.count())]
    assert None not in tab_keys and len(set(tab_keys)) == len(tab_keys), tab_keys
    used = {}
    for child in d.findChildren(QWidget):
        if isinstance(child, (QLabel, QAbstractButton, QGroupBox)):
            key = mnemonic(child.title() if isinstance(child, QGroupBox) else child.text())
            if key:
                used.setdefault(key, []).append(child.text() if hasattr(child, 'text') else child.title())
    for key in tab_keys:
        assert key not in used, (key, used[key])
    d.reject()


def test_provider_choice(qapp, saved_prefs):
    saved_prefs['provider'] = ''
    w = shown(qapp, SettingsWidget())
    assert w.provider_tab.none_chosen.isVisible()
    assert w.provider_tab.selected_provider == next(iter(PROVIDERS))
    assert list(w.provider_tab.config_widgets) == [w.provider_tab.selected_provider]  # only the one shown is made
    box = w.provider_tab.provider_box
    texts = {box.itemData(i): box.itemText(i) for i in range(box.count())}
    assert set(texts) == set(PROVIDERS)
    assert '(local)' in texts['ollama'] and '(local)' in texts['lmstudio'] and '(local)' not in texts['openai']
    assert texts['ollama'].endswith('ready') and texts['openai'].endswith('needs setting up')  # no key yet
    w.provider_tab.provider_box.setCurrentIndex(w.provider_tab.provider_box.findData('ollama'))
    assert set(w.provider_tab.config_widgets) == {'openai', 'ollama'}
    assert w.provider_tab.provider_stack.currentWidget().widget() is w.provider_tab.config_widgets['ollama']
    w.provider_tab.config_widgets['ollama'].editors['model'].box.setEditText('tiny:1b')
    assert w.problem() == ''
    w.commit()
    assert saved_prefs['provider'] == 'ollama'
    assert saved_prefs['providers']['ollama']['model'] == 'tiny:1b'
    w.close()

    again = shown(qapp, SettingsWidget())
    assert again.provider_tab.selected_provider == 'ollama' and not again.provider_tab.none_chosen.isVisible()
    assert list(again.provider_tab.config_widgets) == ['ollama']
    assert again.provider_tab.config_widgets['ollama'].values()['model'] == 'tiny:1b'
    again.close()


def test_a_bad_provider_setting_is_not_saved(qapp, saved_prefs, monkeypatch):
    saved_prefs['provider'] = 'ollama'
    shown_errors = []
    import calibre.gui2
    monkeypatch.setattr(calibre.gui2, 'error_dialog', lambda parent, title, msg, **kw: shown_errors.append(msg))
    d = shown(qapp, SettingsDialog())
    w = d.settings
    w.provider_tab.provider_box.setCurrentIndex(w.provider_tab.provider_box.findData('openai_compatible'))
    w.provider_tab.config_widgets['openai_compatible'].editors['base_url'].setText('ftp://example.com')
    assert 'http://' in w.problem()
    d.accept()
    assert shown_errors and 'http://' in shown_errors[0]
    assert d.isVisible() and d.result() != QDialog.DialogCode.Accepted
    assert saved_prefs['provider'] == 'ollama'
    w.provider_tab.config_widgets['openai_compatible'].editors['base_url'].setText('http://127.0.0.1:8080')
    d.accept()
    assert not d.isVisible() and d.result() == QDialog.DialogCode.Accepted
    assert saved_prefs['provider'] == 'openai_compatible'
    assert saved_prefs['providers']['openai_compatible']['base_url'] == 'http://127.0.0.1:8080'


def test_an_api_key_is_never_shown(qapp, saved_prefs):
    key = 'sk-very-secret-key-0123456789'
    secret_store().set('openai', 'api_key', key)
    saved_prefs['provider'] = 'openai'
    w = shown(qapp, SettingsWidget())
    editor = w.provider_tab.config_widgets['openai'].editors['api_key']
    assert editor.echoMode() == QLineEdit.EchoMode.Password and editor.text() == ''
    assert 'stored' in editor.placeholderText()
    for child in w.findChildren(QWidget):
        for getter in ('text', 'currentText', 'toPlainText', 'toolTip', 'placeholderText'):
            value = getattr(child, getter, None)
            if callable(value):
                assert key not in str(value()), (child, getter)
    assert w.provider_tab.provider_box.currentText().endswith('ready')  # the stored key counts
    w.commit()  # nothing typed: the stored key is kept
    assert secret_store().get('openai', 'api_key') == key
    assert 'api_key' not in saved_prefs['providers']['openai']
    editor.setText('sk-replaced')
    w.commit()
    assert secret_store().get('openai', 'api_key') == 'sk-replaced'
    assert 'sk-replaced' not in str(dict(saved_prefs))
    w.close()




def test_library_actions_edited(qapp, artifacts, saved_prefs):
    saved_prefs['library_actions'] = []
    w = SettingsWidget()
    w.resize(720, 500)
    shown(qapp, w)
    w.tabs.setCurrentIndex(TABS.index('library-actions'))
    e = w.library_tab.editor
    assert action_names(e) == BUILTIN
    for name in BUILTIN:  # calibre's actions can be hidden, never removed
        select_action(e, name)
        assert not e.remove_button.isEnabled() and not e.restore_button.isEnabled()
    select_action(e, 'summarize')
    assert not e.up_button.isEnabled() and e.down_button.isEnabled()
    e.action_list.item(0).setCheckState(check_state(False))

    def add(d):
        for v in TEMPLATE_VARIABLES:
            assert '{' + v + '}' in d.help.text()
        assert '{selected}' not in d.help.text() and '{language}' not in d.help.text()
        d.accept()  # empty: refused, in words
        assert d.isVisible() and 'label' in d.error.text()
        d.label_edit.setText('Plot holes!')
        d.accept()
        assert d.isVisible() and 'prompt' in d.error.text()
        d.template_edit.setPlainText('List the plot holes of {title}.')
        shoot(d, artifacts / 'settings-action-editor.png', SMALLEST)
        d.accept()
        assert not d.isVisible()

    click_through(qapp, e.add_button, add)
    assert action_names(e) == BUILTIN + ['plot_holes']
    assert e.action_list.currentRow() == len(BUILTIN)  # the new one is selected
    assert e.remove_button.isEnabled() and not e.down_button.isEnabled()
    e.up_button.click()
    assert action_names(e) == BUILTIN[:-1] + ['plot_holes', BUILTIN[-1]]

    select_action(e, 'chapters')

    def edit(d):
        assert d.label_edit.text() == 'Chapters'
        d.label_edit.setText('Chapter by chapter')
        d.accept()

    click_through(qapp, e.edit_button, edit)
    item = e.action_list.item(1)
    assert item.text().startswith('Chapter by chapter') and '(edited)' in item.text()
    assert e.restore_button.isEnabled() and not e.remove_button.isEnabled()
    shoot(w, artifacts / 'settings-library-actions-edited.png', SMALLEST)

    def cancel(d):
        d.label_edit.setText('Not kept')
        d.reject()

    click_through(qapp, e.edit_button, cancel)
    assert e.action_list.item(1).data(ACTION_ROLE)['label'] == 'Chapter by chapter'

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
    e = w.library_tab.editor
    assert action_names(e) == [a['name'] for a in saved]
    assert not checked(e.action_list.item(0))
    select_action(e, 'chapters')
    assert e.restore_button.isEnabled()
    e.restore_button.click()
    assert e.action_list.item(1).text() == 'Chapters' and not e.restore_button.isEnabled()
    select_action(e, 'plot_holes')
    e.remove_button.click()
    assert action_names(e) == BUILTIN
    w.commit()
    assert [a.name for a in library_actions(include_disabled=True)] == BUILTIN
    assert {a.name: a.label for a in library_actions(include_disabled=True)}['chapters'] == 'Chapters'
    assert all(a.builtin for a in library_actions(include_disabled=True))
    w.close()


def test_reading_actions_edited(qapp, artifacts, saved_prefs):
    saved_prefs['viewer_actions'] = []
    saved_prefs['library_actions'] = []
    w = SettingsWidget()
    w.resize(720, 500)
    shown(qapp, w)
    w.tabs.setCurrentIndex(TABS.index('reading'))
    e = w.reading_tab.editor
    assert e is not w.library_tab.editor and e.isVisible() and not w.library_tab.editor.isVisible()
    assert action_names(e) == VIEWER_BUILTIN
    assert all(checked(e.action_list.item(i)) for i in range(e.action_list.count()))
    for name in VIEWER_BUILTIN:
        select_action(e, name)
        assert not e.remove_button.isEnabled() and not e.restore_button.isEnabled()
    select_action(e, 'define')
    e.action_list.currentItem().setCheckState(check_state(False))
    assert 'Prompt: Identify and define' in e.action_prompt.text()

    def add(d):
        for v in VIEWER_VARIABLES:
            assert '{' + v + '}' in d.help.text()
        for v in ('books_word', 'is_are', 'series'):
            assert '{' + v + '}' not in d.help.text()
        d.label_edit.setText('Explain')  # the label of a builtin action: its name is made unique
        d.template_edit.setPlainText('Who says this in {title}, and why? {selected}')
        shoot(d, artifacts / 'settings-reading-action-editor.png', SMALLEST)
        d.accept()
        assert not d.isVisible()

    click_through(qapp, e.add_button, add)
    assert action_names(e) == VIEWER_BUILTIN + ['explain_2']
    assert e.remove_button.isEnabled() and not e.restore_button.isEnabled()
    for i in range(len(VIEWER_BUILTIN)):
        e.up_button.click()
    assert action_names(e) == ['explain_2'] + VIEWER_BUILTIN
    assert not e.up_button.isEnabled() and e.down_button.isEnabled()
    select_action(e, 'translate')
    e.up_button.click()
    order = ['explain_2'] + VIEWER_BUILTIN[:-2] + ['translate', VIEWER_BUILTIN[-2]]
    assert action_names(e) == order
    shoot(w, artifacts / 'settings-reading-edited.png', SMALLEST)

    w.commit()
    saved = saved_prefs['viewer_actions']
    assert [a['name'] for a in saved] == order
    assert saved[0] == {'name': 'explain_2', 'label': 'Explain',
                        'template': 'Who says this in {title}, and why? {selected}', 'enabled': True}
    by_name = {a['name']: a for a in saved}
    assert by_name['define'] == {'name': 'define', 'label': '', 'template': '', 'enabled': False}
    assert saved_prefs['library_actions'] == [
        {'name': name, 'label': '', 'template': '', 'enabled': True} for name in BUILTIN]  # left as it was
    everything = viewer_actions(include_disabled=True)
    assert [a.name for a in everything] == order
    assert [a.name for a in viewer_actions()] == [name for name in order if name != 'define']
    mine = everything[0]
    assert not mine.builtin and mine.label == 'Explain' and mine.template.endswith('{selected}')
    assert all(a.builtin for a in everything[1:])
    assert [a.name for a in library_actions()] == BUILTIN
    w.close()

    # read back: the order, the hidden action; then the own action removed
    w = shown(qapp, SettingsWidget())
    e = w.reading_tab.editor
    assert action_names(e) == order
    assert not checked(e.action_list.item(order.index('define')))
    assert e.action_list.item(0).text() == 'Explain'  # the user's own, never marked edited
    select_action(e, 'explain_2')
    e.remove_button.click()
    assert action_names(e) == order[1:]
    w.commit()
    assert [a.name for a in viewer_actions(include_disabled=True)] == order[1:]
    w.close()


def test_highlight_style(qapp, artifacts, saved_prefs):
    saved_prefs['highlight_style'] = ''
    w = shown(qapp, SettingsWidget())
    w.tabs.setCurrentIndex(TABS.index('reading'))
    box = w.reading_tab.highlight_box
    box.showPopup()
    qapp.processEvents()
    shoot(box.view().window(), artifacts / 'settings-highlight-styles.png', SMALLEST)
    box.hidePopup()
    assert [box.itemData(i) for i in range(box.count())] == [''] + HIGHLIGHT_STYLES
    assert box.currentData() == '' and box.currentText() == "The viewer's current style"
    names = {box.itemData(i): box.itemText(i) for i in range(box.count())}
    assert names['color-yellow'] == 'Yellow highlight' and names['color-red'] == 'Pink highlight'
    assert names['decoration-wavy'] == 'Red wavy underline' and names['decoration-strikeout'] == 'Red strikeout'
    assert all(not box.itemIcon(i).isNull() for i in range(1, box.count()))
    from calibre.constants import numeric_version
    assert box.isEnabled() == (numeric_version >= (8, 11))  # before, notes use the viewer's current style
    assert hasattr(w.reading_tab, 'highlight_needs') == (numeric_version < (8, 11))
    w.commit()
    assert saved_prefs['highlight_style'] == ''
    box.setCurrentIndex(box.findData('color-purple'))
    w.commit()
    assert saved_prefs['highlight_style'] == 'color-purple'
    w.close()

    w = SettingsWidget()
    box = w.reading_tab.highlight_box
    assert box.currentData() == 'color-purple' and box.currentText() == 'Purple highlight'
    w.close()

    # a style the list does not offer (the viewer's own custom ones) is shown, and kept
    saved_prefs['highlight_style'] = 'custom-Quotes'
    w = SettingsWidget()
    box = w.reading_tab.highlight_box
    assert box.count() == len(HIGHLIGHT_STYLES) + 2
    assert box.currentData() == 'custom-Quotes' and box.currentText() == 'Quotes'
    w.commit()
    assert saved_prefs['highlight_style'] == 'custom-Quotes'
    box.setCurrentIndex(0)
    w.commit()
    assert saved_prefs['highlight_style'] == ''
    w.close()


def test_chat_text_size(qapp, artifacts, saved_prefs):
    """The chat's text size: offered from smaller to larger, the default the normal one; saved, read back;
    a value not offered (set by something else than this dialog) shown as the default."""
    saved_prefs['chat_text_size'] = 100
    w = shown(qapp, SettingsWidget())
    w.tabs.setCurrentIndex(TABS.index('reading'))
    box = w.reading_tab.text_size_box
    assert [box.itemData(i) for i in range(box.count())] == [85, 100, 115, 130, 150]
    assert [box.itemText(i) for i in range(box.count())] == [
        'Smaller (85%)', 'Normal (100%)', 'Larger (115%)', 'Much larger (130%)', 'Largest (150%)']
    assert box.currentData() == 100 and box.isVisible()
    assert 'Ask AI panel' in box.toolTip() and 'at once' in box.toolTip()
    box.setCurrentIndex(box.findData(130))
    shoot(w, artifacts / 'settings-chat-text-size.png', SMALLEST, for_readme=True)
    w.commit()
    assert saved_prefs['chat_text_size'] == 130
    w.close()
    w = SettingsWidget()
    assert w.reading_tab.text_size_box.currentData() == 130
    w.close()
    saved_prefs['chat_text_size'] = 120
    w = SettingsWidget()
    assert w.reading_tab.text_size_box.currentData() == 100
    w.commit()
    assert saved_prefs['chat_text_size'] == 100
    w.close()


def test_fields_sent(qapp, saved_prefs):
    from calibre.library.field_metadata import FieldMetadata
    saved_prefs['book_fields'] = []
    w = shown(qapp, SettingsWidget())
    keys = [w.fields_tab.field_list.item(i).data(FIELD_ROLE) for i in range(w.fields_tab.field_list.count())]
    assert keys == offered_fields(FieldMetadata(), custom=False)  # no library: the standard fields only
    assert not any(checked(w.fields_tab.field_list.item(i)) for i in range(w.fields_tab.field_list.count()))
    names = {w.fields_tab.field_list.item(i).data(FIELD_ROLE): w.fields_tab.field_list.item(i).text()
             for i in range(w.fields_tab.field_list.count())}
    assert names['series'] == 'Series' and names['pubdate'] == 'Published'
    for key in ('pubdate', 'tags'):
        w.fields_tab.field_list.item(keys.index(key)).setCheckState(check_state(True))
    w.commit()
    assert saved_prefs['book_fields'] == ['pubdate', 'tags']
    w.close()
    again = SettingsWidget()
    assert again.fields_tab.fields_pref() == ['pubdate', 'tags']


def test_choices_round_trip(qapp, saved_prefs):
    saved_prefs['answer_language'] = 'interface'
    w = shown(qapp, SettingsWidget())
    box = w.sent_tab.confirm_box
    assert [box.itemData(i) for i in range(box.count())] == ['first', 'always', 'never']
    assert w.sent_tab.confirm_box.currentData() == 'first'
    assert w.sent_tab.language_box.currentData() == 'interface'
    assert (interface_language() or 'English') in w.sent_tab.language_box.currentText()
    languages = [w.sent_tab.language_box.itemData(i) for i in range(w.sent_tab.language_box.count())]
    assert languages[:3] == ['interface', 'book', 'never'] and 'German' in languages and 'Greek' in languages
    assert [w.save_tab.save_box.itemData(i) for i in range(w.save_tab.save_box.count())] == ['comments']
    assert w.save_tab.save_box.currentText() == 'Comments'
    w.sent_tab.confirm_box.setCurrentIndex(w.sent_tab.confirm_box.findData('always'))
    w.sent_tab.language_box.setCurrentIndex(w.sent_tab.language_box.findData('German'))
    w.commit()
    assert (saved_prefs['confirm_send'], saved_prefs['answer_language'], saved_prefs['save_field']) == (
        'always', 'German', 'comments')
    w.close()

    # values the lists do not offer are shown, and kept
    saved_prefs['answer_language'] = 'Esperanto'
    saved_prefs['save_field'] = '#gone'
    saved_prefs['confirm_send'] = 'never'
    w = SettingsWidget()
    assert w.sent_tab.language_box.currentText() == 'Esperanto' and w.save_tab.save_box.currentData() == '#gone'
    assert w.sent_tab.confirm_box.currentData() == 'never'
    w.sent_tab.language_box.setCurrentIndex(w.sent_tab.language_box.findData('never'))
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
    saved_prefs['book_fields'], saved_prefs['book_custom_fields'] = ['series'], {cache.library_id: ['#elsewhere']}
    saved_prefs['save_field'] = 'comments'
    d = shown(qapp, SettingsDialog(cache))
    w = d.settings
    items = {w.fields_tab.field_list.item(i).data(FIELD_ROLE): w.fields_tab.field_list.item(i)
             for i in range(w.fields_tab.field_list.count())}
    assert list(items) == offered_fields(cache.field_metadata)
    assert {'#notes', '#mood'} <= set(items) and '#elsewhere' not in items  # a column the library lacks: gone
    assert items['#notes'].text() == 'My notes' and items['#mood'].text() == 'Mood'
    assert items['series'].text() == cache.field_metadata['series']['name']
    assert checked(items['series'])
    save_to = [w.save_tab.save_box.itemData(i) for i in range(w.save_tab.save_box.count())]
    assert save_to == ['comments', '#notes']  # only long-text columns
    assert 'My notes' in w.save_tab.save_box.itemText(1)
    items['#notes'].setCheckState(check_state(True))
    w.save_tab.save_box.setCurrentIndex(1)
    for i, tab in enumerate(TABS):
        if tab in ('book-fields', 'sent-to-the-ai', 'save-to-book'):
            w.tabs.setCurrentIndex(i)
            shoot(d, artifacts / f'settings-{tab}-library.png', SMALLEST)
    d.accept()
    assert d.result() == QDialog.DialogCode.Accepted
    assert saved_prefs['book_fields'] == ['series'] and saved_prefs['book_custom_fields'] == {
        cache.library_id: ['#notes']}
    assert saved_prefs['save_field'] == '#notes'
    cache.close()


def test_book_text_settings_round_trip(qapp, saved_prefs):
    saved_prefs['book_text'], saved_prefs['book_text_budget'], saved_prefs['retrieval'] = False, 1500, 'bm25'
    w = shown(qapp, SettingsWidget())
    sent = w.sent_tab
    assert not sent.book_text_box.isChecked() and sent.budget_box.value() == 1500 and not sent.meaning_box.isChecked()
    w.sent_tab.book_text_box.setChecked(True)
    w.sent_tab.budget_box.setValue(4000)
    w.sent_tab.meaning_box.setChecked(True)
    w.commit()
    assert (saved_prefs['book_text'], saved_prefs['book_text_budget'], saved_prefs['retrieval']) == (
        True, 4000, 'embeddings')
    w.close()
    w = SettingsWidget()
    sent = w.sent_tab
    assert sent.book_text_box.isChecked() and sent.budget_box.value() == 4000 and sent.meaning_box.isChecked()
    w.sent_tab.meaning_box.setChecked(False)
    w.commit()
    assert saved_prefs['retrieval'] == 'bm25'


def test_lookup_settings_round_trip(qapp, saved_prefs):
    """Lookups are on by default, at most 8 an answer; off and 3 are kept; a damaged count reads as 8."""
    w = shown(qapp, SettingsWidget())
    sent = w.sent_tab
    assert sent.lookups_box.isChecked() and sent.lookup_calls_box.value() == 8
    sent.lookups_box.setChecked(False)
    sent.lookup_calls_box.setValue(3)
    w.commit()
    assert (saved_prefs['lookups'], saved_prefs['lookup_calls']) == (False, 3)
    w.close()
    saved_prefs['lookup_calls'] = 'many'
    w = SettingsWidget()
    assert not w.sent_tab.lookups_box.isChecked() and w.sent_tab.lookup_calls_box.value() == 8
    w.close()


def test_forget_everything(qapp, artifacts, saved_prefs, tmp_path):
    """Cancelled, nothing goes; confirmed, the keys, conversations, cached texts and per-book choices do."""
    from calibre_plugins.bookai.conversation.conversation import Conversation
    from calibre_plugins.bookai.conversation.history import History
    from calibre_plugins.bookai.grounding.cache import TextCache, default_folder
    from calibre_plugins.bookai.grounding.extract import read_epub
    secret_store().set('openai', 'api_key', 'sk-to-be-forgotten-0123')
    conv = Conversation([], library_id='forget-test')
    conv.ask('Anything?')
    History().save(conv)
    book_file = tmp_path / 'guide.epub'
    shutil.copy(quick_start_epub(), book_file)
    cache = TextCache(default_folder())
    cache.text_of('forget-test', 3, 'EPUB', book_file, read=read_epub)
    saved_prefs['book_scopes'] = {'forget-test:3': 'whole'}
    saved_prefs['book_text_consent'] = ['forget-test:3|openai']
    saved_prefs['provider'] = 'openai'
    from calibre_plugins.bookai.library_search.vectors import BookVectors, Stamp, VectorFiles
    vectors, index = VectorFiles(), BookVectors(3, 'openai/text-embedding-3-small')
    index.put(1, [1.0, 0.0, 0.0], Stamp(1.0, ''))
    vectors.write('forget-test', index)

    def still_there():
        return (secret_store().get('openai', 'api_key') == 'sk-to-be-forgotten-0123',
                len(History().summaries('forget-test')) == 1,
                cache.get('forget-test', 3, 'EPUB', book_file) is not None,
                saved_prefs['book_scopes'] == {'forget-test:3': 'whole'},
                saved_prefs['book_text_consent'] == ['forget-test:3|openai'],
                vectors.read('forget-test') is not None)

    d = shown(qapp, SettingsDialog())
    w = d.settings
    w.tabs.setCurrentIndex(TABS.index('sent-to-the-ai'))
    assert w.provider_tab.provider_box.currentText().endswith('ready')
    texts = []

    def cancel(box):
        texts.append(box.text() + '\n' + box.informativeText())
        box.resize(box.sizeHint())
        shoot(box, artifacts / 'settings-forget-confirmation.png', SMALLEST)
        box.button(box.StandardButton.Cancel).click()

    click_through(qapp, w.sent_tab.forget_button, cancel)
    assert still_there() == (True,) * 6 and w.sent_tab.forgotten.text() == ''
    for what in ('API keys', 'conversations', 'text of books', 'choices made for each book',
                 'the indexes of your libraries by meaning',
                 'Your books, their notes, columns and highlights are not touched'):
        assert what in texts[0]

    def confirm(box):
        (forget,) = [b for b in box.buttons() if b.text() == '&Forget everything']
        forget.click()

    click_through(qapp, w.sent_tab.forget_button, confirm)
    assert still_there() == (False,) * 6
    assert w.sent_tab.forgotten.text().startswith('Forgotten. API keys: 1; conversations: ')
    assert 'of libraries by meaning.' in w.sent_tab.forgotten.text() or 'of a library by meaning.' in \
        w.sent_tab.forgotten.text()
    assert w.provider_tab.provider_box.currentText().endswith('needs setting up')
    assert w.provider_tab.config_widgets['openai'].editors['api_key'].placeholderText() == 'Paste your key here'
    shoot(d, artifacts / 'settings-forgotten.png', SMALLEST)
    d.reject()
    assert secret_store().get('openai', 'api_key') == ''


def test_covers_tab(qapp, saved_prefs, artifacts):
    """The image provider (only those that make images, apart from the one that answers), the
    reader's own styles, the templates (with calibre's template editor), the extra instructions,
    the requests at once and the days covers are kept for Undo: shown, edited, saved, read back."""
    from calibre_plugins.bookai.covers.styles import saved_styles
    from calibre_plugins.bookai.providers.capabilities import Capability
    from calibre_plugins.bookai.providers.registry import provider_class
    saved_prefs['provider'] = 'ollama'
    saved_prefs['image_provider'] = ''
    saved_prefs['providers'] = dict(saved_prefs['providers'], openai_compatible={'base_url': 'http://127.0.0.1:7860/v1'})
    saved_prefs['cover_styles'] = [{'name': 'custom_ink', 'human_name': 'Ink', 'template': 'Pen and ink.'},
                                   {'name': 'pulp', 'human_name': 'Not calibre\'s', 'template': 'taken key'}]
    d = shown(qapp, SettingsDialog(tab='covers'))
    w = d.settings
    assert w.tabs.currentIndex() == TABS.index('covers') and w.tabs.tabText(w.tabs.currentIndex()) == 'Cover art&work'
    offered = [w.covers_tab.image_box.itemData(i) for i in range(w.covers_tab.image_box.count())]
    assert offered[0] == '' and set(offered[1:]) == {
        name for name in PROVIDERS if provider_class(name).capabilities & Capability.IMAGE_GENERATION}
    assert {'openai', 'gemini', 'grok', 'openai_compatible'} <= set(offered) and 'ollama' not in offered
    assert w.covers_tab.image_box.currentData() == '' and 'Nothing is sent' in w.covers_tab.image_state.text()
    assert not w.covers_tab.image_settings_button.isEnabled()
    assert [w.covers_tab.styles_list.item(i).text() for i in range(w.covers_tab.styles_list.count())] == ['Ink']
    w.covers_tab.image_box.setCurrentIndex(w.covers_tab.image_box.findData('openai_compatible'))
    state = w.covers_tab.image_state.text()
    assert 'OpenAI compatible is ready.' in state and 'Provider tab' in state

    def add(editor):
        editor.accept()  # empty: refused, said
        assert editor.isVisible() and 'name' in editor.error.text()
        editor.name_edit.setText('Linocut')
        editor.template_edit.setPlainText('A bold two-colour linocut print.')
        editor.accept()
    click_through(qapp, w.covers_tab.add_style_button, add)
    w.covers_tab.styles_list.item(0).setSelected(True)  # Ink
    w.covers_tab.delete_style_button.click()

    def template(editor):
        editor.textbox.setPlainText('{title:uppercase()}')
        editor.accept()
    click_through(qapp, w.covers_tab.template_buttons['title'], template)
    assert w.covers_tab.template_edits['title'].text() == '{title:uppercase()}'
    w.covers_tab.template_edits['series'].setText('{series} #{series_index}')
    w.covers_tab.cover_instructions.setPlainText('No text but the title.')
    w.covers_tab.at_once_box.setValue(6)
    w.covers_tab.undo_days_box.setValue(7)
    d.resize(800, 680)  # the whole tab, for the README
    shoot(d, artifacts / 'settings-covers.png', SMALLEST, for_readme=True)
    d.accept()
    assert d.result() == QDialog.DialogCode.Accepted
    assert saved_prefs['provider'] == 'ollama' and saved_prefs['image_provider'] == 'openai_compatible'
    assert [(s.human_name, s.template) for s in saved_styles()] == [('Linocut', 'A bold two-colour linocut print.')]
    assert saved_styles()[0].name == 'custom_linocut'
    assert saved_prefs['cover_templates'] == {'title': '{title:uppercase()}', 'authors': '',
                                              'series': '{series} #{series_index}'}
    assert saved_prefs['cover_instructions'] == 'No text but the title.'
    assert (saved_prefs['cover_requests_at_once'], saved_prefs['cover_undo_days']) == (6, 7)
    again = SettingsWidget()
    assert again.covers_tab.image_box.currentData() == 'openai_compatible' and again.covers_tab.at_once_box.value() == 6
    assert again.covers_tab.template_edits['series'].text() == '{series} #{series_index}'


def test_the_image_providers_own_settings(qapp, saved_prefs):
    """Its settings…: the image provider's settings of the Provider tab, saved on OK, shown saved there."""
    saved_prefs['provider'] = 'grok'
    saved_prefs['image_provider'] = 'grok'
    d = shown(qapp, SettingsDialog(tab='covers'))
    w = d.settings
    assert 'needs setting up' in w.covers_tab.image_state.text()

    def fill(editor):
        cw = editor.config
        cw.editors['api_key'].setText('xai-a-key-for-the-test-0123')
        cw.editors['image_model'].setText('grok-2-image')
        editor.accept()
    click_through(qapp, w.covers_tab.image_settings_button, fill)
    assert 'is ready' in w.covers_tab.image_state.text()
    assert secret_store().get('grok', 'api_key') == 'xai-a-key-for-the-test-0123'
    assert saved_prefs['providers']['grok']['image_model'] == 'grok-2-image'
    assert w.provider_tab.config_widgets['grok'].values()['image_model'] == 'grok-2-image'  # the Provider tab shows it
    d.accept()
    assert saved_prefs['providers']['grok']['image_model'] == 'grok-2-image'


def test_the_recap_offer_days(qapp, saved_prefs):
    """After how many days away the viewer's panel offers a recap: 7 by default, 0 shown as Never; saved."""
    w = shown(qapp, SettingsWidget())
    w.tabs.setCurrentIndex(TABS.index('reading'))
    box = w.reading_tab.offer_box
    assert box.value() == 7 and 'Nothing is sent until you click' in box.toolTip()
    box.setValue(0)
    assert box.text() == 'Never'
    w.commit()
    assert saved_prefs['recap_offer_days'] == 0
    w.close()
    w = SettingsWidget()
    assert w.reading_tab.offer_box.value() == 0
    w.reading_tab.offer_box.setValue(30)
    w.commit()
    assert saved_prefs['recap_offer_days'] == 30
    w.close()
