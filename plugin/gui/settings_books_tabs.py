# License: GPLv3 Copyright: the Book AI developers
"""The tabs of the settings about what is sent of the books and where answers go: Book fields
(the fields the AI may be told about), Sent to the AI (confirming before sending, the
answer language, the book's own text, and Forget everything) and Save to book.
"""

import os
from typing import TYPE_CHECKING

from calibre.library.field_metadata import FieldMetadata
from qt.core import (
    QCheckBox, QComboBox, QFormLayout, QHBoxLayout, QListWidget, QListWidgetItem, QMessageBox, QPushButton, QSpinBox,
    Qt, QVBoxLayout, QWidget,
)

from calibre_plugins.bookai.conversation import forget
from calibre_plugins.bookai.conversation.books import (
    allowed_fields, interface_language, language_name, offered_fields, set_allowed_fields,
)
from calibre_plugins.bookai.conversation.lookups import lookup_calls
from calibre_plugins.bookai.conversation.notes import save_targets
from calibre_plugins.bookai.gui.settings_provider_tab import ProviderTab
from calibre_plugins.bookai.gui.settings_tab import (
    SettingsTab, check_state, checked, field_name, form_label, wrapped_label,
)

if TYPE_CHECKING:
    from calibre.db.cache import Cache
    from calibre.utils.config import JSONConfig

load_translations()

# the fixed answer languages offered: (ISO 639 code, the name the model is told, in English)
LANGUAGES = (('eng', 'English'), ('fra', 'French'), ('deu', 'German'), ('spa', 'Spanish'), ('ita', 'Italian'),
             ('por', 'Portuguese'), ('nld', 'Dutch'), ('pol', 'Polish'), ('rus', 'Russian'), ('ukr', 'Ukrainian'),
             ('tur', 'Turkish'), ('zho', 'Chinese'), ('jpn', 'Japanese'), ('kor', 'Korean'), ('ara', 'Arabic'),
             ('hin', 'Hindi'), ('swe', 'Swedish'), ('ces', 'Czech'), ('ell', 'Greek'))

FIELD_ROLE = Qt.ItemDataRole.UserRole        # a field's item: its key


class BookFieldsTab(SettingsTab):
    """The fields of the books that may be sent: every one calibre offers its own AI, for the
    library the settings were opened from (the standard fields only without one)."""

    def setup_ui(self) -> None:
        layout = QVBoxLayout(self)
        self.fields_intro = wrapped_label(_(
            'The title and authors of the books you ask about are always sent to the AI. Tick the other fields '
            'it may be told about; nothing else about your books is sent, unless you turn on passages of the '
            'book\'s own text.'), self)
        layout.addWidget(self.fields_intro)
        if self.db is not None:
            self.library_id = self.db.library_id
            fm = self.db.field_metadata
            path = getattr(getattr(self.db, 'backend', None), 'library_path', '') or ''
            where = _('Custom fields are chosen for this library ({library}); the other fields for every '
                      'library.').format(library=os.path.basename(os.path.normpath(path)) if path else self.library_id)
        else:
            self.library_id = ''
            fm = FieldMetadata()
            where = _('Opened here, the settings have no calibre library: only the standard fields are shown, chosen '
                      'for every library. Custom fields are chosen for each library in the Book AI settings of '
                      'calibre\'s main window.')
        self.fields_where = wrapped_label(where, self)
        self.fields_where.setTextFormat(Qt.TextFormat.PlainText)  # the library's folder name is not markup
        layout.addWidget(self.fields_where)
        self.field_list = QListWidget(self)
        for key in offered_fields(fm, custom=self.db is not None):
            item = QListWidgetItem(fm[key].get('name') or key, self.field_list)
            item.setToolTip(key)
            item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsUserCheckable)
            item.setData(FIELD_ROLE, key)
        layout.addWidget(self.field_list, 1)
        row = QHBoxLayout()
        for text, on in ((_('Select &all'), True), (_('Select &none'), False)):
            button = QPushButton(text, self)
            button.clicked.connect(lambda _checked=False, on=on: self.check_all_fields(on))
            row.addWidget(button)
            if on:
                self.all_fields_button = button
            else:
                self.no_fields_button = button
        row.addStretch(1)
        layout.addLayout(row)

    def load(self) -> None:
        allowed = allowed_fields(self.library_id)
        for i in range(self.field_list.count()):
            item = self.field_list.item(i)
            item.setCheckState(check_state(item.data(FIELD_ROLE) in allowed))

    def save(self, prefs: 'JSONConfig') -> None:
        set_allowed_fields(self.library_id, self.fields_pref())

    def check_all_fields(self, on: bool) -> None:
        """Tick every field (on), or none."""
        for i in range(self.field_list.count()):
            self.field_list.item(i).setCheckState(check_state(on))

    def fields_pref(self) -> list[str]:
        """The fields ticked, by lookup name, in the order shown."""
        return [self.field_list.item(i).data(FIELD_ROLE) for i in range(self.field_list.count())
                if checked(self.field_list.item(i))]


class SentTab(SettingsTab):
    """When to show what will be sent, the answer language, the book's own text with questions, and
    Forget everything (after which provider_tab, the Provider tab, reads the keys again)."""

    def __init__(self, db: 'Cache | None', prefs: 'JSONConfig', provider_tab: ProviderTab,
                 parent: QWidget | None = None):
        self.provider_tab = provider_tab
        super().__init__(db, prefs, parent)

    def setup_ui(self) -> None:
        layout = QVBoxLayout(self)
        layout.addWidget(wrapped_label(_(
            'Which fields of the books are sent is chosen in Book fields. Passages of the book\'s own text are '
            'sent only when you turn them on here.'), self))

        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        self.confirm_box = QComboBox(self)
        for value, text in (
                ('first', _('Show what will be sent before the first question of each conversation')),
                ('always', _('Show what will be sent before every question')),
                ('never', _('Never: send without asking'))):
            self.confirm_box.addItem(text, value)
        self.confirm_box.setToolTip(_('Local providers run on this computer: nothing is asked before using them'))
        form.addRow(*form_label(_('&Confirm before sending to an online provider:'), self.confirm_box, self))
        self.language_box = QComboBox(self)
        ui = interface_language() or 'English'
        self.language_box.addItem(_('calibre\'s interface language ({language})').format(language=ui), 'interface')
        self.language_box.addItem(_('The book\'s language (else calibre\'s interface language)'), 'book')
        self.language_box.addItem(_('Do not ask for a language'), 'never')
        for code, english in LANGUAGES:
            shown = language_name(code, localize=True)  # in the reader's language, where calibre knows it
            self.language_box.addItem(shown if shown and shown != language_name(code) else english, english)
        self.language_box.setToolTip(_('The AI is asked to answer in this language, when it can'))
        form.addRow(*form_label(_('Answer lan&guage:'), self.language_box, self))
        self.book_text_box = QCheckBox(_('Send passages of the book\'s own &text with questions'), self)
        self.book_text_box.setToolTip(_(
            'Off: only the book\'s details are sent, and the AI answers from what it knows. On: passages up to '
            'where you are reading go with each question, and the answer cites them. A book\'s window can '
            'choose otherwise for that book. Before book text goes to an online provider, you see it and confirm.'))
        form.addRow(self.book_text_box)
        self.budget_box = QSpinBox(self)
        self.budget_box.setRange(200, 100_000)
        self.budget_box.setSingleStep(500)
        self.budget_box.setSuffix(' ' + _('tokens'))
        self.budget_box.setToolTip(_('At most this much of the book\'s text goes with one question (a token is '
                                     'about four characters of English)'))
        form.addRow(*form_label(_('Book te&xt per question, at most:'), self.budget_box, self))
        self.meaning_box = QCheckBox(_('Rank passages by &meaning too, with a provider on this computer'), self)
        self.meaning_box.setToolTip(_(
            'Passages are ranked by the words they share with your question. With this, the provider\'s '
            'embeddings rank them by meaning as well. Only providers on this computer are used for it: the whole '
            'book goes to the provider to be embedded.'))
        form.addRow(self.meaning_box)
        self.lookups_box = QCheckBox(_('Let the AI look t&hings up in the book while it answers'), self)
        self.lookups_box.setToolTip(_(
            'Where the provider can, the AI may search the book, read around a passage and see its contents '
            'before it answers, never past where you are reading unless the whole book is chosen. Each lookup '
            'is shown and cited.'))
        form.addRow(self.lookups_box)
        self.lookup_calls_box = QSpinBox(self)
        self.lookup_calls_box.setRange(1, 32)
        self.lookup_calls_box.setToolTip(_('The most lookups the AI may make for one answer'))
        form.addRow(*form_label(_('Loo&kups per answer, at most:'), self.lookup_calls_box, self))
        layout.addLayout(form)
        layout.addStretch(1)
        row = QHBoxLayout()
        self.forget_button = QPushButton(_('&Forget everything...'), self)
        self.forget_button.setToolTip(_('Delete the API keys, the saved conversations, the cached text of '
                                        'books and the choices made for each book'))
        self.forget_button.clicked.connect(self.forget_everything)
        row.addWidget(self.forget_button)
        self.forgotten = wrapped_label('', self)
        row.addWidget(self.forgotten, 1)
        layout.addLayout(row)

    def load(self) -> None:
        prefs = self.prefs
        self.confirm_box.setCurrentIndex(max(0, self.confirm_box.findData(prefs['confirm_send'])))
        current = prefs['answer_language'] or 'interface'
        if self.language_box.findData(current) < 0:
            self.language_box.addItem(current, current)
        self.language_box.setCurrentIndex(self.language_box.findData(current))
        self.book_text_box.setChecked(bool(prefs['book_text']))
        self.budget_box.setValue(int(prefs['book_text_budget']))
        self.meaning_box.setChecked(prefs['retrieval'] == 'embeddings')
        self.lookups_box.setChecked(bool(prefs['lookups']))
        self.lookup_calls_box.setValue(lookup_calls(prefs['lookup_calls']))

    def save(self, prefs: 'JSONConfig') -> None:
        prefs['confirm_send'] = self.confirm_box.currentData()
        prefs['answer_language'] = self.language_box.currentData()
        prefs['book_text'] = self.book_text_box.isChecked()
        prefs['book_text_budget'] = self.budget_box.value()
        prefs['retrieval'] = 'embeddings' if self.meaning_box.isChecked() else 'bm25'
        prefs['lookups'] = self.lookups_box.isChecked()
        prefs['lookup_calls'] = self.lookup_calls_box.value()

    def forget_everything(self) -> None:
        """Forget everything, once the reader confirmed it, and say what was deleted."""
        box = QMessageBox(QMessageBox.Icon.Warning, _('Forget everything'), _(
            'Delete everything Book AI keeps about you, now and for good?'), QMessageBox.StandardButton.Cancel, self)
        box.setInformativeText('\n'.join((
            _('These are deleted:'),
            '\u2022 ' + _('the API keys of every provider, from your system\'s keyring and from calibre\'s '
                           'configuration folder'),
            '\u2022 ' + _('your saved conversations, in every library'),
            '\u2022 ' + _('the text of books kept to answer questions faster (read again when needed)'),
            '\u2022 ' + _('the choices made for each book: how much of its text is sent, and "don\'t ask again"'),
            '\u2022 ' + _('the indexes of your libraries by meaning (made again at the next search)'),
            '',
            _('Your books, their notes, columns and highlights are not touched, nor are the other settings.'))))
        delete = box.addButton(_('&Forget everything'), QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        self.forget_confirmation = box  # for the tests
        box.exec()
        if box.clickedButton() is not delete:
            return
        try:
            done = forget.forget_everything()
            # on use: the library's search by meaning only when forgetting
            from calibre_plugins.bookai.library_search.vectors import forget_all
            indexes = forget_all()
        except Exception as e:
            from calibre.gui2 import error_dialog  # looked up when called, so that a test can stand in for it
            return error_dialog(self, _('Not everything was forgotten'), str(e), show=True)
        finally:  # the providers shown read their keys again
            self.provider_tab.keys_forgotten()
        self.forgotten.setText(_(
            'Forgotten. API keys: {keys}; conversations: {conversations}; cached book texts: {books}; '
            'choices made for books: {choices}.').format(
                keys=done.keys, conversations=done.conversations, books=done.cached_books, choices=done.book_choices)
            + ' ' + ngettext('{count} index of a library by meaning.', '{count} indexes of libraries by meaning.',
                             indexes).format(count=indexes))


class SaveTab(SettingsTab):
    """The field Save to book adds answers to."""

    def setup_ui(self) -> None:
        layout = QVBoxLayout(self)
        layout.addWidget(wrapped_label(_(
            'An answer you save to a book is added at the end of this field, with the date and the model '
            'that wrote it. What the field holds already is never replaced.'), self))
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.save_box = QComboBox(self)
        if self.db is None:
            self.save_box.addItem(field_name(None, 'comments'), 'comments')
        else:
            for key, name, kind in save_targets(self.db):
                self.save_box.addItem(name if key == 'comments' else f'{name} ({key})', key)
        form.addRow(*form_label(_('Save answers &to:'), self.save_box, self))
        layout.addLayout(form)
        layout.addWidget(wrapped_label(_(
            'Besides Comments, the columns you made of type "Long text, like comments" are offered.'), self))
        layout.addStretch(1)

    def load(self) -> None:
        current = self.prefs['save_field'] or 'comments'
        if self.save_box.findData(current) < 0:
            self.save_box.addItem(_('{column} (not in this library)').format(column=current) if self.db is not None
                                  else current, current)
        self.save_box.setCurrentIndex(self.save_box.findData(current))

    def save(self, prefs: 'JSONConfig') -> None:
        prefs['save_field'] = self.save_box.currentData()
