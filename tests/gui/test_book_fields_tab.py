# License: GPLv3 Copyright: the Book AI developers
"""The Book fields tab of the settings, on real calibre libraries: every field calibre offers
its own AI (the very list of calibre's own Metadata tab, where calibre has its AI), Select
all and Select none, custom fields kept per library, the standard fields only without a
library; and the fields chosen shown in What will be sent as they are sent."""

import shutil
from html import escape

from qt.core import QDialog

from calibre_plugins.bookai.conversation.books import allowed_fields
from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.gui.preview import messages_html
from calibre_plugins.bookai.gui.settings_books_tabs import FIELD_ROLE
from calibre_plugins.bookai.gui.settings_dialog import SettingsDialog, SettingsWidget
from calibre_plugins.bookai.gui.settings_tab import check_state, checked
from helpers.book_fields import BOOK, calibres_offer, library_with_columns, open_library
from helpers.project import HOST, PROJECT


def rows(w):
    """(lookup name, text, tooltip, ticked) of each field listed."""
    items = [w.fields_tab.field_list.item(i) for i in range(w.fields_tab.field_list.count())]
    return [(i.data(FIELD_ROLE), i.text(), i.toolTip(), checked(i)) for i in items]


def tick(w, *keys):
    for i in range(w.fields_tab.field_list.count()):
        item = w.fields_tab.field_list.item(i)
        if item.data(FIELD_ROLE) in keys:
            item.setCheckState(check_state(True))


def open_dialog(qapp, db):
    d = SettingsDialog(db)
    d.show()
    d.settings.tabs.setCurrentWidget(d.settings.fields_tab.field_list.parentWidget())
    qapp.processEvents()
    return d


def test_every_field_calibre_offers_select_all_and_none(qapp, artifacts, sandbox, prefs, monkeypatch):
    db = open_library(library_with_columns(sandbox))
    try:
        prefs['book_fields'], prefs['book_custom_fields'] = ['tags'], {}
        d = open_dialog(qapp, db)
        w = d.settings
        fm = db.field_metadata
        shown = rows(w)
        keys = [r[0] for r in shown]
        assert keys == calibres_offer(fm)
        assert {'timestamp', 'formats', 'size', 'comments', '#mood', '#notes', '#read'} <= set(keys)
        assert [r[1] for r in shown] == [fm[k]['name'] for k in keys]  # named as calibre names them
        assert [r[2] for r in shown] == keys                             # the lookup name as tooltip
        assert [r[0] for r in shown if r[3]] == ['tags']
        assert 'always sent' in w.fields_tab.fields_intro.text()
        assert 'this library (library)' in w.fields_tab.fields_where.text()
        if HOST == 'forky':  # calibre's own Metadata tab lists exactly these, in this order
            from calibre.gui2.dialogs import llm_book
            monkeypatch.setattr(llm_book, 'get_current_db', lambda: db)
            calibres = llm_book.MetadataSettings()
            assert [(i.data(FIELD_ROLE), i.text(), i.toolTip()) for i in calibres] == [
                r[:3] for r in shown]
            calibres.deleteLater()

        w.fields_tab.all_fields_button.click()
        assert all(r[3] for r in rows(w))
        d.accept()
        assert d.result() == QDialog.DialogCode.Accepted
        assert allowed_fields(db.library_id) == set(keys)
        assert prefs['book_custom_fields'] == {db.library_id: sorted(k for k in keys if k.startswith('#'))}
        assert sorted(prefs['book_fields']) == sorted(k for k in keys if not k.startswith('#'))

        d = open_dialog(qapp, db)
        w = d.settings
        assert all(r[3] for r in rows(w))
        w.fields_tab.no_fields_button.click()
        assert not any(r[3] for r in rows(w))
        tick(w, 'timestamp', 'formats', 'size', 'series', '#mood', '#read')
        shot = artifacts / 'settings-fields.png'
        assert d.grab().save(str(shot)) and shot.stat().st_size > 8000
        if HOST == 'forky':
            shutil.copy(shot, PROJECT / 'docs' / 'screenshots' / 'settings-fields.png')
        d.accept()
        assert allowed_fields(db.library_id) == {'timestamp', 'formats', 'size', 'series', '#mood', '#read'}

        d = open_dialog(qapp, db)
        d.settings.fields_tab.no_fields_button.click()
        d.accept()
        assert allowed_fields(db.library_id) == set()
        assert prefs['book_custom_fields'] == {db.library_id: []}
    finally:
        db.close()


def test_two_libraries_keep_their_own_custom_fields(qapp, sandbox, prefs):
    first = open_library(library_with_columns(sandbox, 'first'))
    second = open_library(library_with_columns(sandbox, 'second', columns=(('genre', 'Genre', 'text', {}),
                                                                           ('mood', 'Mood', 'text', {}))))
    try:
        assert first.library_id != second.library_id
        prefs['book_fields'], prefs['book_custom_fields'] = [], {}
        d = open_dialog(qapp, first)
        tick(d.settings, 'tags', '#mood', '#notes')
        d.accept()
        d = open_dialog(qapp, second)
        w = d.settings
        assert [r[0] for r in rows(w) if r[3]] == ['tags']  # the standard fields: chosen for every library
        assert '#notes' not in [r[0] for r in rows(w)] and 'Genre' in [r[1] for r in rows(w)]
        tick(w, '#genre')
        d.accept()
        assert allowed_fields(first.library_id) == {'tags', '#mood', '#notes'}
        assert allowed_fields(second.library_id) == {'tags', '#genre'}  # not the first library's #mood
        d = open_dialog(qapp, first)
        assert sorted(r[0] for r in rows(d.settings) if r[3]) == ['#mood', '#notes', 'tags']
        d.reject()
    finally:
        first.close()
        second.close()


def test_old_settings_with_custom_columns_for_every_library(qapp, sandbox, prefs):
    db = open_library(library_with_columns(sandbox))
    try:
        prefs['book_fields'], prefs['book_custom_fields'] = ['series', '#mood'], {}  # as Book AI 1.0.0 kept them
        d = open_dialog(qapp, db)
        assert sorted(r[0] for r in rows(d.settings) if r[3]) == ['#mood', 'series']
        tick(d.settings, '#read')
        d.accept()
        assert prefs['book_custom_fields'] == {db.library_id: ['#mood', '#read']}
        assert prefs['book_fields'] == ['series', '#mood']  # still there for the libraries with no choice
        assert allowed_fields('another library') == {'series', '#mood'}
    finally:
        db.close()


def test_without_a_library_the_standard_fields_only(qapp, prefs):
    from calibre.library.field_metadata import FieldMetadata
    prefs['book_fields'], prefs['book_custom_fields'] = ['pubdate', '#mood'], {'lib': ['#genre']}
    w = SettingsWidget()
    w.show()
    qapp.processEvents()
    shown = rows(w)
    assert [r[0] for r in shown] == [k for k in calibres_offer(FieldMetadata()) if not k.startswith('#')]
    assert [r[0] for r in shown if r[3]] == ['pubdate']
    where = w.fields_tab.fields_where.text()
    assert 'no calibre library' in where and 'standard fields' in where
    tick(w, 'formats')
    w.commit()
    assert prefs['book_fields'] == ['formats', 'pubdate', '#mood']  # the custom choices stay as they were
    assert prefs['book_custom_fields'] == {'lib': ['#genre']}
    w.close()


def test_what_will_be_sent_shows_the_fields_as_sent(qapp, sandbox, prefs):
    db = open_library(library_with_columns(sandbox))
    try:
        prefs['book_fields'], prefs['book_custom_fields'] = ['formats', 'timestamp', 'size'], {}
        prefs['book_custom_fields'] = {db.library_id: ['#mood', '#notes']}
        conv = Conversation.about(BookLibrary(db), [BOOK])
        messages = conv.messages_for('What is it about?')
        system = messages[0].text
        fields = dict(conv.books[0].fields)
        assert set(fields) == {'Formats', 'Date', 'Size', 'Mood'}
        for name, value in fields.items():
            assert f'\n{name}: {value}' in system
        assert 'Some notes about this book:\n**Read** it twice.\n' in system
        html = messages_html(messages)
        for name, value in fields.items():
            assert f'<br>{escape(name)}: {escape(value)}' in html
        assert '**Read** it twice.' in html
    finally:
        db.close()
