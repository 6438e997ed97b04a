# License: GPLv3 Copyright: the Book AI developers
"""AI metadata's windows: the choices before the job (MetadataChoicesDialog: which fields, each with
the reader's own instruction, and how many requests at once, remembered), and the review after it
(MetadataReview): a row per book and field, the value the book has beside the one proposed, tags
new to the library marked, a tick per field; Apply selected, Apply all, Discard; closed without
deciding, the proposals stay kept for later (metadata/kept.py).

The review never writes but through metadata.changes.apply(), which writes nothing over a field
changed since the job read it, nor into another library than the proposals': a field the reader
changed since is shown as such, unticked, before anything is applied, and those Apply finds
changed are marked so. The window fills in short steps (gui.worker.run_in_steps, ROWS_A_STEP rows
each), and what reads or writes the library runs in a thread, so calibre's main window never waits
long, however many books. No HTTP here: the job (main_window/metadata_actions.py) asks.
"""

from collections.abc import Callable, Sequence
from typing import Any

from qt.core import (
    QAbstractItemView, QCheckBox, QDialog, QDialogButtonBox, QGridLayout, QHBoxLayout, QHeaderView, QLabel,
    QLineEdit, QSize, QSpinBox, Qt, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.metadata.asking import MOST_AT_ONCE
from calibre_plugins.bookai.metadata.changes import Applied, MetadataUndo, Proposal, apply
from calibre_plugins.bookai.metadata.fields import MAX_INSTRUCTION_CHARS, Field, standard_field
from calibre_plugins.bookai.metadata.kept import KeptProposals, KeptReview, changed_since, shown
from calibre_plugins.bookai.gui.review import add_review_buttons
from calibre_plugins.bookai.gui.worker import run_in_steps, run_in_thread
from calibre_plugins.bookai.settings.prefs import plugin_prefs

load_translations()

ROWS_A_STEP = 25   # rows the review adds in one turn of the GUI thread's event loop
BOOK, FIELD, NOW, NEW, NOTE = range(5)


class MetadataChoicesDialog(QDialog):
    """Which fields to fill for count books (calibre's tags, description and languages, and the
    library's fillable custom columns), each with an optional instruction, and the requests at once;
    remembered in the settings. chosen(): the fields ticked, with their instructions."""

    def __init__(self, count: int, columns: Sequence[Field], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(_('Fill in metadata with AI'))
        prefs = plugin_prefs()
        ticked = set(prefs['metadata_fields'])
        instructions = prefs['metadata_instructions']
        fields = [standard_field(k) for k in ('tags', 'comments', 'languages')] + list(columns)
        layout = QVBoxLayout(self)
        head = QLabel(ngettext(
            'The model proposes values for the selected book, from its details. Nothing is written until '
            'you have reviewed them.',
            'The model proposes values for the {count} selected books, from their details. Nothing is '
            'written until you have reviewed them.', count).format(count=count), self)
        head.setWordWrap(True)
        layout.addWidget(head)
        grid = QGridLayout()
        grid.addWidget(QLabel('<b>' + _('Field') + '</b>', self), 0, 0)
        grid.addWidget(QLabel('<b>' + _('Your instruction (optional)') + '</b>', self), 0, 1)
        self.boxes: dict[str, QCheckBox] = {}
        self.instructions: dict[str, QLineEdit] = {}
        self.fields = {f.key: f for f in fields}
        for row, f in enumerate(fields, start=1):
            label = _('Description, where a book has none') if f.key == 'comments' else f.label
            box = QCheckBox(label, self)
            box.setChecked(f.key in ticked)
            edit = QLineEdit(self)
            edit.setMaxLength(MAX_INSTRUCTION_CHARS)
            edit.setPlaceholderText({'tags': _('for example: genres and themes, no author names'),
                                     'comments': _('for example: two short paragraphs, no spoilers'),
                                     'languages': _('for example: the language of the text, not the title')}.get(
                f.key, _('for example: the mood of the book in one word')))
            value = instructions.get(f.key)
            edit.setText(value if isinstance(value, str) else '')
            self.boxes[f.key], self.instructions[f.key] = box, edit
            grid.addWidget(box, row, 0)
            grid.addWidget(edit, row, 1)
        grid.setColumnStretch(1, 1)
        layout.addLayout(grid)
        at_once = QHBoxLayout()
        at_once.addWidget(QLabel(_('Requests at once:'), self))
        self.at_once = QSpinBox(self)
        self.at_once.setRange(1, MOST_AT_ONCE)
        try:
            self.at_once.setValue(int(prefs['metadata_requests_at_once']))
        except (TypeError, ValueError):
            self.at_once.setValue(3)
        at_once.addWidget(self.at_once)
        at_once.addStretch(1)
        layout.addLayout(at_once)
        self.book_text = QCheckBox(_("Send the opening of each book's text too (its first pages: the model then "
                                     'reads beyond your place in a book not yet read)'), self)
        self.book_text.setChecked(bool(prefs['metadata_book_text']))
        layout.addWidget(self.book_text)
        self.bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel, self)
        self.start_button = self.bb.addButton(_('&Ask the model'), QDialogButtonBox.ButtonRole.AcceptRole)
        self.bb.accepted.connect(self.accept)
        self.bb.rejected.connect(self.reject)
        layout.addWidget(self.bb)
        for box in self.boxes.values():
            box.toggled.connect(self.update_state)
        self.update_state()

    def update_state(self) -> None:
        self.start_button.setEnabled(any(b.isChecked() for b in self.boxes.values()))

    def chosen(self) -> tuple[list[str], dict[str, str]]:
        """The fields ticked (calibre lookup names), and the instruction of each that has one."""
        keys = [k for k, b in self.boxes.items() if b.isChecked()]
        return keys, {k: e.text().strip() for k, e in self.instructions.items() if e.text().strip()}

    def accept(self) -> None:
        keys, instructions = self.chosen()
        if not keys:
            return
        prefs = plugin_prefs()
        prefs['metadata_fields'] = keys
        prefs['metadata_instructions'] = instructions
        prefs['metadata_book_text'] = self.book_text.isChecked()
        prefs['metadata_requests_at_once'] = self.at_once.value()
        super().accept()


class MetadataReview(QDialog):
    """The proposals of a library, to apply or not (see the module's doc).

    open_library() gives the library calibre has open now: (its new_api, its id, its name);
    written(book ids) is called once values were written (the book list refreshed then);
    library_name: the proposals' library as the reader knows it."""

    def __init__(self, parent: QWidget | None, library_id: str, library_name: str, review: KeptReview,
                 open_library: Callable[[], tuple[Any, str]], written: Callable[[list[int]], None] | None = None,
                 problems: Sequence[str] = (), kept: KeptProposals | None = None) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowTitle(_('Review metadata'))
        self.library_id, self.library_name, self.review = library_id, library_name, review
        self.open_library, self.written = open_library, written
        self.kept = kept or KeptProposals()
        self.proposals = list(review.proposals)
        self.boxes: dict[tuple[int, str], QTableWidgetItem] = {}
        self.conflicts: set[tuple[int, str]] = set()
        self.done_with: set[tuple[int, str]] = set()
        self.busy = True  # until the rows are in
        self.steps: Any = None
        self.setup_ui(problems)
        self.resize(self.sizeHint())
        self.find_conflicts()

    def sizeHint(self) -> QSize:
        return QSize(960, 560)

    def setup_ui(self, problems: Sequence[str]) -> None:
        layout = QVBoxLayout(self)
        books = len({p.book_id for p in self.proposals})
        head = ngettext('The model proposes {values} for {count} book of the library {library}.',
                        'The model proposes {values} for {count} books of the library {library}.', books).format(
            count=books, library=f'\u201c{self.library_name}\u201d', values=ngettext('{n} value', '{n} values', len(
                self.proposals)).format(n=len(self.proposals)))
        head += ' ' + _('Tick the ones to write: nothing is written until you apply it, and Undo metadata change '
                        'puts the old values back.')
        self.header = QLabel(head, self)
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(self.header)
        self.table = t = QTableWidget(0, 5, self)
        t.setHorizontalHeaderLabels([_('Book'), _('Field'), _('Now'), _('Proposed'), _('Note')])
        t.verticalHeader().setVisible(False)
        t.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        t.setWordWrap(False)
        h = t.horizontalHeader()
        for col, mode in ((BOOK, QHeaderView.ResizeMode.Interactive), (FIELD, QHeaderView.ResizeMode.Interactive),
                          (NOW, QHeaderView.ResizeMode.Interactive), (NEW, QHeaderView.ResizeMode.Interactive),
                          (NOTE, QHeaderView.ResizeMode.Stretch)):
            h.setSectionResizeMode(col, mode)
        for col, width in ((BOOK, 200), (FIELD, 130), (NOW, 200), (NEW, 260)):
            t.setColumnWidth(col, width)
        t.itemChanged.connect(self.update_state)
        layout.addWidget(t, 1)
        self.status = QLabel('\n'.join(one_line(p) for p in problems), self)
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status.setVisible(bool(problems))
        layout.addWidget(self.status)
        add_review_buttons(self, self, layout, _('Keep the proposals for later: Book AI → Review metadata kept '
                                                 'for later shows them again'))
        self.update_state()

    # filling in, a few rows a step {{{

    def find_conflicts(self) -> None:
        """The fields changed since the job read them, looked for in a thread (the library's fields),
        then the rows added a few a step."""
        db, library_id = self.open_library()
        proposals = list(self.proposals)

        def look() -> set[tuple[int, str]]:
            return changed_since(db, proposals) if library_id == self.library_id else set()

        def found(conflicts: set[tuple[int, str]] | None, exc: Exception | None) -> None:
            self.conflicts = set(conflicts or ())
            chunks = [proposals[i:i + ROWS_A_STEP] for i in range(0, len(proposals), ROWS_A_STEP)]
            self.steps = run_in_steps(chunks, self.add_rows, self.filled, self)
        run_in_thread(look, found, self)

    def add_rows(self, chunk: list[Proposal]) -> None:
        t = self.table
        t.blockSignals(True)
        try:
            for p in chunk:
                row = t.rowCount()
                t.insertRow(row)
                above = t.item(row - 1, BOOK) if row else None
                first = above is None or above.data(Qt.ItemDataRole.UserRole) != p.book_id
                title = one_line(self.review.titles.get(p.book_id) or str(p.book_id))
                book = QTableWidgetItem(title if first else '')
                book.setData(Qt.ItemDataRole.UserRole, p.book_id)  # which book the row is of
                book.setToolTip(title)
                t.setItem(row, BOOK, book)
                tick = QTableWidgetItem(one_line(p.label))
                tick.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled)
                tick.setCheckState(Qt.CheckState.Checked)
                t.setItem(row, FIELD, tick)
                for col, value, tags in ((NOW, p.old, ()), (NEW, p.new, p.new_tags)):
                    text = shown(p.key, value, tags)
                    item = QTableWidgetItem(text)
                    item.setToolTip(shown(p.key, value, tags) if len(text) < 60 else text)
                    t.setItem(row, col, item)
                notes = list(p.notes)
                if p.new_tags:
                    notes.insert(0, _('New to the library: {tags}').format(tags=', '.join(p.new_tags)))
                note = QTableWidgetItem(one_line(' '.join(notes)))
                note.setToolTip('\n'.join(one_line(n) for n in notes))
                t.setItem(row, NOTE, note)
                self.boxes[(p.book_id, p.key)] = tick
                if (p.book_id, p.key) in self.conflicts:
                    self.mark(p, _('Changed since it was read: it stays as it is.'))
        finally:
            t.blockSignals(False)

    def filled(self, results: list, exc: Exception | None) -> None:
        self.steps = None
        self.busy = False
        self.update_state()

    def mark(self, p: Proposal, why: str) -> None:
        """p's row unticked and greyed, with why in words: it is not written."""
        tick = self.boxes.get((p.book_id, p.key))
        if tick is None:
            return
        tick.setCheckState(Qt.CheckState.Unchecked)
        tick.setFlags(Qt.ItemFlag.ItemIsUserCheckable)  # not enabled: it cannot be ticked again
        row = tick.row()
        note = self.table.item(row, NOTE)
        if note is not None:
            note.setText(one_line(why))
            note.setToolTip(one_line(why))

    # }}}

    def check_all(self, on: bool) -> None:
        self.table.blockSignals(True)
        for item in self.boxes.values():
            if item.flags() & Qt.ItemFlag.ItemIsEnabled:
                item.setCheckState(Qt.CheckState.Checked if on else Qt.CheckState.Unchecked)
        self.table.blockSignals(False)
        self.update_state()

    def open_ones(self) -> list[Proposal]:
        """The proposals that can still be applied: not done with, not changed since."""
        return [p for p in self.proposals if (p.book_id, p.key) not in self.done_with
                and (p.book_id, p.key) not in self.conflicts]

    def selected(self) -> list[Proposal]:
        return [p for p in self.open_ones() if (item := self.boxes.get((p.book_id, p.key))) is not None
                and item.checkState() == Qt.CheckState.Checked]

    def update_state(self, *args: object) -> None:
        has = bool(self.open_ones())
        self.apply_selected_button.setEnabled(not self.busy and bool(self.selected()))
        self.apply_all_button.setEnabled(not self.busy and has)
        self.discard_button.setEnabled(not self.busy and bool(self.proposals))
        self.all_button.setEnabled(not self.busy and has)
        self.none_button.setEnabled(not self.busy and has)

    def say(self, text: str) -> None:
        self.status.setText(text)
        self.status.setVisible(bool(text))

    # the choices {{{

    def apply_selected(self) -> None:
        self.apply(self.selected())

    def apply_all(self) -> None:
        todo = self.open_ones()
        if not todo:
            return
        from calibre.gui2 import question_dialog  # looked up when called, so that a test can stand in for it
        books = len({p.book_id for p in todo})
        if not question_dialog(self, _('Apply all'), ngettext(
                'Write the {values} proposed for {count} book?', 'Write the {values} proposed for {count} books?',
                books).format(count=books, values=ngettext('{n} value', '{n} values', len(todo)).format(
                    n=len(todo))) + ' ' + _('Undo metadata change can put the old values back.')):
            return
        self.apply(todo)

    def apply(self, todo: list[Proposal]) -> None:
        """todo written (metadata.changes.apply, in a thread), only into the library they were made in:
        said in words, and nothing written, when another library is open."""
        if self.busy or not todo:
            return
        db, library_id = self.open_library()
        if library_id != self.library_id:
            self.say(_('These values are for the library {library}, and another library is open now: nothing was '
                       'written. They are kept: open that library, then choose Book AI → Review metadata kept for '
                       'later.').format(library=self.library_name))
            return
        self.busy = True
        self.update_state()
        kept, undo = self.kept, MetadataUndo()

        def write() -> Applied:  # in a thread: the library's fields and Book AI's cache, no Qt
            done = apply(db, library_id, todo, undo)
            try:
                kept.forget(library_id, [(p.book_id, p.key) for p in done.written + done.conflicts])
            except OSError:  # what was written stays kept for later: Apply finds it written, a conflict
                pass
            return done

        run_in_thread(write, self.applied, self)

    def applied(self, done: Applied | None, exc: Exception | None) -> None:
        self.busy = False
        if exc is not None or done is None:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
            self.say(_('Nothing was written: the values they replace could not be kept for Undo: {reason}').format(
                reason=reason))
            self.update_state()
            return
        for p in done.written:
            self.done_with.add((p.book_id, p.key))
            self.mark(p, _('Written.'))
        for p in done.conflicts:
            self.conflicts.add((p.book_id, p.key))
            self.mark(p, _('Changed since it was read: it stays as it is.'))
        for p, why in done.failed:
            self.mark(p, why)
            self.done_with.add((p.book_id, p.key))
        if done.written and self.written is not None:
            self.written(sorted({p.book_id for p in done.written}))
        lines = [ngettext('{n} value written: Undo metadata change puts the old one back.',
                          '{n} values written: Undo metadata change puts the old ones back.',
                          len(done.written)).format(n=len(done.written))]
        if done.conflicts:
            lines.append(ngettext('{n} field was changed since it was read, and is left as it is.',
                                  '{n} fields were changed since they were read, and are left as they are.',
                                  len(done.conflicts)).format(n=len(done.conflicts)))
        if done.failed:
            lines.append(ngettext('{n} value could not be written: its row says why.',
                                  '{n} values could not be written: their rows say why.',
                                  len(done.failed)).format(n=len(done.failed)))
        self.say(' '.join(lines))
        self.update_state()

    def discard(self) -> None:
        if self.busy:
            return
        from calibre.gui2 import question_dialog  # looked up when called, so that a test can stand in for it
        left = [p for p in self.proposals if (p.book_id, p.key) not in self.done_with]
        if left and not question_dialog(self, _('Discard'), ngettext(
                'Discard the value proposed? The book keeps its metadata.',
                'Discard the {count} values proposed? The books keep their metadata.', len(left)).format(
                count=len(left))):
            return
        kept, library_id = self.kept, self.library_id
        gone = [(p.book_id, p.key) for p in left]

        def forget() -> None:  # in a thread: Book AI's cache
            kept.forget(library_id, gone)
        self.busy = True
        self.update_state()

        def forgotten(result: None, exc: Exception | None) -> None:
            self.busy = False
            if exc is not None:
                self.say(_('The proposals could not be discarded: {error}').format(error=exc))
                self.update_state()
                return
            self.done_with.update(gone)
            self.close()
        run_in_thread(forget, forgotten, self)

    # }}}

    def done(self, r: int) -> None:
        """Closed, however: what was not applied or discarded stays kept for later (the job kept it)."""
        if self.steps is not None:
            self.steps.stop()
            self.steps = None
        super().done(r)
