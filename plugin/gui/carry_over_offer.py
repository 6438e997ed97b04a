# License: GPLv3 Copyright: the Book AI developers
"""The offer to carry calibre's own AI settings over into Book AI's (from_calibre/carry_over.py).

Made once, the first time a reader opens a Book AI window where calibre's AI settings
exist (offer_on_first_use), and on demand from the settings' "Import from calibre's AI…"
button. It lists what was found, by section, with where each setting lands in Book AI or
why it does not; keys are never shown. Nothing is changed before the reader clicks Carry
over, and then only the sections left ticked. A template that calibre would run as Python
is shown whole, below the list, and carried over only when its own box is ticked too.

calibre's files are read in a thread (gui/worker.py: one that never calls Qt), never on the
GUI thread: whatever they hold (a FIFO, a library's database that takes its time), the window
that asked opens at once. The first-use offer is marked made before anything is read, so a
file that stops Book AI cannot stop it at every start; and nothing that goes wrong in it
keeps the first Book AI window from opening.
"""

from collections.abc import Iterable

from qt.core import (
    QApplication, QCheckBox, QDialog, QDialogButtonBox, QEventLoop, QLabel, QPlainTextEdit, QSize, Qt,
    QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget,
)

from calibre_plugins.bookai.from_calibre.carry_over import CalibreSettings, carry_over, mark_offered, offered, read
from calibre_plugins.bookai.gui.worker import run_in_thread

load_translations()


class CalibreSettingsOffer(QDialog):
    """What of calibre's AI settings Book AI can take, by section, each section ticked to carry over."""

    def __init__(self, found: CalibreSettings, parent: QWidget | None = None, first_use: bool = False):
        super().__init__(parent)
        self.found, self.first_use = found, first_use
        self.failed: list[str] = []
        self.code_box: QCheckBox | None = None
        self.setWindowTitle(_("Book AI: calibre's AI settings"))
        self.setup_ui()

    def setup_ui(self) -> None:
        l = QVBoxLayout(self)
        intro = _("calibre's own AI settings were found. Book AI can carry them over: the settings below go into "
                  "Book AI's, the API keys into its key store. calibre's files are only read, never changed.")
        if self.first_use:
            intro += ' ' + _('This is asked once: the same import is in the settings of Book AI.')
        self.intro = la = QLabel(intro, self)
        la.setWordWrap(True)
        l.addWidget(la)
        self.tree = t = QTreeWidget(self)
        t.setColumnCount(3)
        t.setHeaderLabels([_('calibre had'), _('Value'), _('In Book AI')])
        t.setRootIsDecorated(True)
        self.sections: dict[str, QTreeWidgetItem] = {}
        for section in self.found.sections():
            items = [i for i in self.found.items if i.section == section]
            top = QTreeWidgetItem(t, [section])
            carried = any(i.carried for i in items)
            if carried:
                top.setFlags(top.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                top.setCheckState(0, Qt.CheckState.Checked)
                self.sections[section] = top
            for i in items:
                if not i.carried:
                    where = _('not carried over: {why}').format(why=i.why_not)
                elif i.code:
                    where = _('{where}, only if you tick the box below: it runs as Python code').format(
                        where=i.destination)
                else:
                    where = i.destination
                child = QTreeWidgetItem(top, [i.setting, i.value, where])
                child.setToolTip(2, child.text(2))
                if not i.carried:
                    child.setForeground(2, self.palette().placeholderText())
            top.setExpanded(True)
        t.setWordWrap(True)
        for col in range(2):
            t.resizeColumnToContents(col)
            t.setColumnWidth(col, min(t.columnWidth(col), 300))
        t.header().setStretchLastSection(True)
        l.addWidget(t)
        code = self.found.code_items()
        if code:
            self.code_label = cl = QLabel(_('calibre would run these templates as Python code: a program, which can do '
                                            'anything you can. They are shown whole. Carry them over only if you wrote '
                                            'them or know what they do.'), self)
            cl.setWordWrap(True)
            l.addWidget(cl)
            self.code_view = cv = QPlainTextEdit(self)
            cv.setReadOnly(True)
            cv.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
            cv.setPlainText('\n\n'.join(f'{i.section}: {i.setting}\n{i.code}' for i in code))
            l.addWidget(cv)
            self.code_box = QCheckBox(ngettext('Also carry over this template, which runs as Python code',
                                               'Also carry over these {count} templates, which run as Python code',
                                               len(code)).format(count=len(code)), self)
            self.code_box.setChecked(False)
            l.addWidget(self.code_box)
        self.problems = p = QLabel('\n'.join(self.found.problems), self)
        p.setWordWrap(True)
        p.setTextFormat(Qt.TextFormat.PlainText)
        p.setVisible(bool(self.found.problems))
        l.addWidget(p)
        self.bb = bb = QDialogButtonBox(self)
        self.carry_button = bb.addButton(_('&Carry over'), QDialogButtonBox.ButtonRole.AcceptRole)
        self.carry_button.setEnabled(self.found.found)
        bb.addButton(_('&Not now') if self.first_use else _('&Cancel'), QDialogButtonBox.ButtonRole.RejectRole)
        bb.accepted.connect(self.accept)
        bb.rejected.connect(self.reject)
        l.addWidget(bb)

    def sizeHint(self) -> QSize:
        return QSize(960, 640)

    def chosen_sections(self) -> list[str]:
        """The sections left ticked."""
        return [s for s, top in self.sections.items() if top.checkState(0) == Qt.CheckState.Checked]

    def with_code(self) -> bool:
        """Whether the reader agreed to carry over the templates that run code."""
        return self.code_box is not None and self.code_box.isChecked()

    def accept(self) -> None:
        self.failed = carry_over(self.found, self.chosen_sections(), with_code=self.with_code())
        if self.failed:
            from calibre.gui2 import error_dialog
            error_dialog(self, _('Not all was carried over'), '\n\n'.join(self.failed), show=True)
        super().accept()


_looked = False  # calibre's settings were looked at in this process: not again
_open_offers: set[CalibreSettingsOffer] = set()  # first-use offers shown and not yet answered


def offer_on_first_use(parent: QWidget | None, libraries: Iterable[str] = ()) -> None:
    """The first time a Book AI window opens where calibre's AI settings exist: the offer. Made
    once, whatever the reader answers (marked made before anything is read); nothing is offered
    where there is nothing to carry over. calibre's files are read in a thread, at most once per
    process: this returns at once, and the offer comes when they have been read. Never raises."""
    global _looked
    if _looked:
        return
    _looked = True
    try:
        if offered():
            return
        mark_offered()  # first: whatever calibre's files hold, they are not read at every start
        paths = [p for p in libraries if isinstance(p, str)]
        run_in_thread(lambda: read(libraries=paths), lambda found, exc: show_first_offer(found, exc, parent),
                      QApplication.instance())
    except Exception:  # Book AI's own settings cannot be read or written (the settings dialog says so), or
        return         # anything else: the window that asked opens all the same


def show_first_offer(found: CalibreSettings | None, exc: Exception | None, parent: QWidget | None) -> None:
    """On the GUI thread, once calibre's files were read: the offer, when there is something to carry over."""
    if exc is not None or found is None or not found.found:
        return
    try:
        try:
            if parent is not None:
                parent.isVisible()  # RuntimeError when the window that asked is gone meanwhile
        except RuntimeError:
            parent = None
        d = CalibreSettingsOffer(found, parent, first_use=True)
        _open_offers.add(d)
        d.finished.connect(lambda result: _open_offers.discard(d))
        d.open()
    except Exception:  # never in the way of the window
        return


def read_while_waiting(parent: QWidget | None, libraries: list[str]) -> CalibreSettings:
    """calibre's settings read in a thread; the windows go on being drawn and answering meanwhile."""
    loop = QEventLoop()
    got: dict = {}

    def done(found: CalibreSettings | None, exc: Exception | None) -> None:
        got['found'], got['exc'] = found, exc
        loop.quit()
    QApplication.setOverrideCursor(Qt.CursorShape.WaitCursor)
    try:
        run_in_thread(lambda: read(libraries=libraries), done, QApplication.instance())
        if 'found' not in got:
            loop.exec()
    finally:
        QApplication.restoreOverrideCursor()
    if got.get('exc') is not None:
        found = CalibreSettings()
        found.problems.append(_("calibre's AI settings could not be read: {reason}").format(reason=got['exc']))
        return found
    return got['found']


_reading = False  # an import on demand is under way (its wait lets the window's buttons be clicked again)


def offer_on_demand(parent: QWidget | None, libraries: Iterable[str] = ()) -> bool:
    """The settings' import: the offer, or a sentence when calibre's AI settings were not found.
    True when something was carried over."""
    global _reading
    if _reading:
        return False
    _reading = True
    try:
        found = read_while_waiting(parent, [p for p in libraries if isinstance(p, str)])
    finally:
        _reading = False
    if not found.items and not found.problems:
        from calibre.gui2 import info_dialog
        info_dialog(parent, _("calibre's AI settings"), _("No settings of calibre's own AI were found."), show=True)
        return False
    d = CalibreSettingsOffer(found, parent)
    return d.exec() == QDialog.DialogCode.Accepted and not d.failed
