# License: GPLv3 Copyright: the Book AI developers
"""The offer to carry calibre's own AI settings over into Book AI's (from_calibre/settings.py).

Made once, the first time a reader opens a Book AI window where calibre's AI settings
exist (offer_on_first_use), and on demand from the settings' "Import from calibre's AI…"
button. It lists what was found, by section, with where each setting lands in Book AI or
why it does not; keys are never shown. Nothing is changed before the reader clicks Carry
over, and then only the sections left ticked.
"""

from collections.abc import Iterable

from qt.core import (
    QDialog, QDialogButtonBox, QLabel, QSize, Qt, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget,
)

from calibre_plugins.bookai.from_calibre.settings import CalibreSettings, carry_over, mark_offered, offer_due, read

load_translations()


class CalibreSettingsOffer(QDialog):
    """What of calibre's AI settings Book AI can take, by section, each section ticked to carry over."""

    def __init__(self, found: CalibreSettings, parent: QWidget | None = None, first_use: bool = False):
        super().__init__(parent)
        self.found, self.first_use = found, first_use
        self.failed: list[str] = []
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
                child = QTreeWidgetItem(top, [i.setting, i.value, i.destination if i.carried else
                                              _('not carried over: {why}').format(why=i.why_not)])
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
        self.problems = p = QLabel('\n'.join(self.found.problems), self)
        p.setWordWrap(True)
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

    def accept(self) -> None:
        self.failed = carry_over(self.found, self.chosen_sections())
        if self.failed:
            from calibre.gui2 import error_dialog
            error_dialog(self, _('Not all was carried over'), '\n\n'.join(self.failed), show=True)
        super().accept()


_looked = False  # calibre's settings were looked at in this process: not again


def offer_on_first_use(parent: QWidget | None, libraries: Iterable[str] = ()) -> None:
    """The first time a Book AI window opens where calibre's AI settings exist: the offer. Made
    once, whatever the reader answers; nothing is offered where there is nothing to carry over.
    calibre's files are read once per process at most: the next windows open at once."""
    global _looked
    if _looked:
        return
    _looked = True
    try:
        found = offer_due(libraries=libraries)
    except OSError:  # Book AI's own settings file cannot be read: the settings dialog says so
        return
    if found is None:
        return
    try:
        mark_offered()
    except OSError:
        return  # not written: it would be asked again and again
    CalibreSettingsOffer(found, parent, first_use=True).exec()


def offer_on_demand(parent: QWidget | None, libraries: Iterable[str] = ()) -> bool:
    """The settings' import: the offer, or a sentence when calibre's AI settings were not found.
    True when something was carried over."""
    found = read(libraries=libraries)
    if not found.items and not found.problems:
        from calibre.gui2 import info_dialog
        info_dialog(parent, _("calibre's AI settings"), _("No settings of calibre's own AI were found."), show=True)
        return False
    d = CalibreSettingsOffer(found, parent)
    return d.exec() == QDialog.DialogCode.Accepted and not d.failed
