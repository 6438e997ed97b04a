# License: GPLv3 Copyright: the Book AI developers
"""Save to book: a note appended to a book's comments, or to a custom column of the
comments type, after what the field already holds. Nothing is ever replaced.

The functions at the top work on a library's new_api and need no display; the
dialog below them shows what will be added and where, and asks.
"""

from qt.core import (
    QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QListWidget, QListWidgetItem, Qt,
    QTextBrowser, QVBoxLayout,
)

from calibre_plugins.bookai.gui.render import markdown_to_html

load_translations()

HTML_KINDS = ('html', '')  # how a comments field shows its text; the others hold plain or Markdown text


def save_targets(db):
    """[(field, name, kind)]: Comments, then every custom column that holds long text."""
    fm = db.field_metadata
    targets = [('comments', fm['comments'].get('name') or _('Comments'), 'html')]
    for key in sorted(fm.custom_field_keys(), key=lambda k: (fm[k].get('name') or k).lower()):
        meta = fm[key]
        if meta.get('datatype') == 'comments':
            kind = (meta.get('display') or {}).get('interpret_as') or 'html'
            targets.append((key, meta.get('name') or key, kind))
    return targets


def appended(current, note_md, kind):
    """The field's new value: what it held, then the note."""
    current = current or ''
    if kind in HTML_KINDS:
        addition = '<div class="bookai-note">' + markdown_to_html(note_md) + '</div>'
        return current + ('<hr>' if current.strip() else '') + addition
    return current.rstrip('\n') + ('\n\n' if current.strip() else '') + note_md


def append_note(db, book_ids, field, note_md):
    """Append the note to field of each book; the ids changed."""
    kinds = {f: kind for f, name, kind in save_targets(db)}
    if field not in kinds:
        raise ValueError(_('{field} is not a field that can hold notes.').format(field=field))
    values = {}
    with db.write_lock:  # read and write in one go: an edit made meanwhile is not lost
        for book_id in book_ids:
            values[book_id] = appended(db._field_for(field, book_id), note_md, kinds[field])
        db._set_field(field, values)
    return list(values)


class SaveToBookDialog(QDialog):
    """Which books, which field, and exactly what is added."""

    def __init__(self, db, books, note_md, field='comments', parent=None):
        super().__init__(parent)
        self.db, self.books, self.note_md = db, books, note_md
        self.targets = save_targets(db)
        self.setWindowTitle(_('Save to book'))
        self.setup_ui(field)
        self.resize(640, 520)

    def setup_ui(self, field):
        layout = QVBoxLayout(self)
        form = QFormLayout()
        layout.addLayout(form)
        self.book_list = QListWidget(self)
        for book in self.books:
            item = QListWidgetItem(f'{book.title} — {book.authors_text}', self.book_list)
            item.setData(Qt.ItemDataRole.UserRole, book.book_id)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked)
        self.book_list.setMaximumHeight(24 * min(4, len(self.books)) + 8)
        form.addRow(_('Books:'), self.book_list)
        self.field_box = QComboBox(self)
        for key, name, kind in self.targets:
            self.field_box.addItem(name, key)
        self.field_box.setCurrentIndex(max(0, self.field_box.findData(field)))
        form.addRow(_('&Add to:'), self.field_box)
        explain = QLabel(_('The text below is added after what the field already holds. '
                           'Nothing there is replaced.'), self)
        explain.setWordWrap(True)
        layout.addWidget(explain)
        self.preview = QTextBrowser(self)
        self.preview.setOpenLinks(False)
        self.preview.setHtml(markdown_to_html(self.note_md))
        layout.addWidget(self.preview, 1)
        self.remember = QCheckBox(_('Use this field from now on'), self)
        layout.addWidget(self.remember)
        bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel, self)
        bb.accepted.connect(self.accept)
        bb.rejected.connect(self.reject)
        layout.addWidget(bb)

    @property
    def field(self):
        return self.field_box.currentData()

    @property
    def book_ids(self):
        items = (self.book_list.item(i) for i in range(self.book_list.count()))
        return [i.data(Qt.ItemDataRole.UserRole) for i in items if i.checkState() == Qt.CheckState.Checked]
