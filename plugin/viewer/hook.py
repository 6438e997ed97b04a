# License: GPLv3 Copyright: the Book AI developers
"""How Book AI reaches into calibre's E-book viewer, which has no plugin API.

The viewer process runs every plugin's initialize() while it imports its own
modules, before the application exists (there, on 9.x, importing the Lookup
panel's module would be circular). So install() only wraps calibre's
Application.__init__; once the application exists it waits for the viewer's
main window, and then attach() adds a tab to the Lookup panel, named from what
that panel holds when it is attached (never from calibre's version number):

- a Lookup panel that is a tab widget (calibre 8.11 and later) holding calibre's
  own "Ask AI" tab, shown: that tab is left alone, and ours is added beside it
  as "Book AI";
- a Lookup panel that is a tab widget without it (9.x with calibre's AI removed,
  or hidden by its tweak): ours is "Ask AI", where calibre's would be;
- a Lookup panel that is a plain widget in its dock (before 8.11): the dock gets
  a tab widget holding calibre's Lookup, unchanged, and ours as "Ask AI".

The last tab used is kept as calibre 9.x keeps its own: the index in the viewer's
prefs (vprefs), written on every change of tab and read when the Lookup panel is
shown, so that a viewer started again opens the panel on Book AI's tab if the
reader last used it. Where the tab widget is calibre's, that is calibre's own
'llm_lookup_tab_index' (calibre 9.x writes it itself, and restores every tab but
ours, which does not exist yet when calibre first shows the panel); where Book AI
makes the tab widget, it is 'bookai_lookup_tab_index', apart from calibre's: a
calibre upgraded to 8.11 or later reads calibre's key for its own tabs, where
index 1 is calibre's "Ask AI", which the reader never chose there.

The tab holds a placeholder until it is first shown: nothing AI is imported
before. The selection reaches the panel from the same signal the Lookup panel
listens to. If anything is not as expected (a calibre this was not made for),
the viewer is left exactly as it was and one line on standard error says why.
"""

import sys
from typing import TYPE_CHECKING

# Qt is loaded in the viewer by then; nothing of calibre's viewer is
from qt.core import QApplication, QShowEvent, Qt, QTabWidget, QTimer, QVBoxLayout, QWidget

from calibre_plugins.bookai.gui.icons import plugin_icon

if TYPE_CHECKING:
    from calibre.gui2.viewer.ui import EbookViewer
    from calibre.utils.config import JSONConfig

    from calibre_plugins.bookai.conversation.last_read import LastRead
    from calibre_plugins.bookai.viewer.panel import AskPanel

load_translations()

PROBLEM = 'Book AI: no Ask AI panel in this E-book viewer: {}'
# The Lookup panel's last tab, in the viewer's prefs: calibre's own key where the tab widget is calibre's
# (calibre 8.11+), Book AI's where Book AI makes it (see the module's docstring)
CALIBRES_TAB_PREF, OWN_TAB_PREF = 'llm_lookup_tab_index', 'bookai_lookup_tab_index'
WAIT_MS, WAIT_TRIES = 100, 600   # the viewer's window appears after the application: wait up to a minute
KEEP_MS = 5000  # a place is kept in Book AI's record this long after the last page turned

_installed = False


def install() -> None:
    """Add the panel to the E-book viewer once it exists (see the module's docstring)."""
    global _installed
    if _installed:
        return
    _installed = True
    try:  # calibre's GUI is imported here, inside the viewer's own imports: any failure leaves it as it is
        from calibre.gui2 import Application
    except Exception as e:
        return say(e)
    if QApplication.instance() is not None:
        return wait_for_viewer()
    original = Application.__init__

    def __init__(self: Application, *args: object, **kwargs: object) -> None:
        original(self, *args, **kwargs)
        Application.__init__ = original  # once
        try:
            wait_for_viewer()
        except Exception as e:
            say(e)

    Application.__init__ = __init__


def say(problem: object) -> None:
    """The one line on standard error that says why there is no panel."""
    print(PROBLEM.format(problem), file=sys.stderr, flush=True)


def wait_for_viewer(tries: int = WAIT_TRIES) -> None:
    """attach() to the viewer's main window, once there is one (asking again every WAIT_MS)."""
    for w in QApplication.topLevelWidgets():
        if type(w).__name__ == 'EbookViewer':
            try:
                attach(w)
            except Exception as e:
                say(f'{type(e).__name__}: {e}')
            return
    if tries:
        QTimer.singleShot(WAIT_MS, lambda: wait_for_viewer(tries - 1))


def check(viewer: 'EbookViewer') -> None:
    """What attach() needs of the viewer, or raise saying what is missing."""
    for name in ('lookup_widget', 'lookup_dock', 'web_view', 'current_book_data'):
        if not hasattr(viewer, name):
            raise LookupError(f'the viewer has no {name}')
    if not hasattr(viewer.web_view, 'selection_changed'):
        raise LookupError('the viewer does not report selections')
    if viewer.lookup_dock.widget() is not viewer.lookup_widget:
        raise LookupError('the Lookup panel is not where it was expected')


def attach(viewer: 'EbookViewer') -> None:
    """Add the panel's tab (a Placeholder until first shown) to the viewer's Lookup panel."""
    check(viewer)
    from calibre.gui2.viewer.config import vprefs  # the viewer's own prefs, as its Lookup panel uses them
    placeholder = Placeholder(viewer)
    lookup = viewer.lookup_widget
    if isinstance(lookup, QTabWidget):
        tabs, pref = lookup, CALIBRES_TAB_PREF
        title = _('Book AI') if has_calibres_ai_tab(lookup) else _('Ask &AI')
    else:
        dock = viewer.lookup_dock
        tabs = QTabWidget(dock)
        tabs.setDocumentMode(True)
        tabs.addTab(lookup, _('&Lookup'))
        dock.setWidget(tabs)
        title, pref = _('Ask &AI'), OWN_TAB_PREF
    placeholder.tab_index = tabs.addTab(placeholder, plugin_icon('bookai'), title)
    tabs.currentChanged.connect(lambda index: placeholder.shown() if tabs.widget(index) is placeholder else None)
    viewer.web_view.selection_changed.connect(placeholder.selection_changed, type=Qt.ConnectionType.QueuedConnection)
    if hasattr(viewer.web_view, 'cfi_changed'):  # the reader's place, for the recap offered after a break
        viewer.web_view.cfi_changed.connect(placeholder.place_changed)
    QApplication.instance().aboutToQuit.connect(placeholder.keep_place)
    viewer.bookai_panel = placeholder
    remember_tab(viewer, tabs, placeholder, vprefs, pref)


def has_calibres_ai_tab(tabs: QTabWidget) -> bool:
    """Whether calibre's Lookup panel shows an "Ask AI" tab of calibre's own."""
    index = getattr(tabs, 'llm_tab_index', -1)
    return isinstance(index, int) and 0 <= index < tabs.count() and tabs.isTabVisible(index)


def remember_tab(viewer: 'EbookViewer', tabs: QTabWidget, placeholder: 'Placeholder', vprefs: 'JSONConfig',
                 pref: str) -> None:
    """Keep the Lookup panel's last tab in the viewer's prefs under pref, and open the panel
    on Book AI's tab when that was the last one (see the module's docstring)."""

    def changed(index: int) -> None:
        # only what the reader can see: not the tabs going away as the viewer closes
        if index >= 0 and tabs.isVisible() and vprefs.get(pref) != index:
            vprefs[pref] = index

    def opened(visible: bool) -> None:
        if visible and vprefs.get(pref) == tabs.indexOf(placeholder) and tabs.currentWidget() is not placeholder:
            tabs.setCurrentWidget(placeholder)

    tabs.currentChanged.connect(changed)
    viewer.lookup_dock.visibilityChanged.connect(opened)
    opened(viewer.lookup_dock.isVisible())  # shown before the tab was there: calibre could not open it on ours


class Placeholder(QWidget):
    """The tab's widget: empty until first shown, then the panel (viewer.panel) inside it.

    It also follows the reader's place for Book AI's record of when and where each book was last
    read (conversation/last_read.py), which the panel's "Recap since you last read" is offered
    from: the place is only remembered until the panel is built, the book changes or the viewer
    quits (nothing of Book AI is imported before); then the book's record is read (the earlier
    reading, for the panel) before the place and the time are kept in it."""

    def __init__(self, viewer: 'EbookViewer') -> None:
        super().__init__()
        self.viewer = viewer
        self.panel: 'AskPanel | None' = None
        self.selected = ''
        self.annot: dict | None = None
        self.book_path = ''  # the book the viewer shows, as its place was last reported
        self.book = ('', 0, '', '')  # its library id, book id, format, path: the record's key
        self.place = ''  # its place then (a CFI)
        self.began = ''  # where the viewer opened it: where this reading began (a CFI)
        self.earlier: 'LastRead | None' = None  # when and where it was last read before, once read
        self.earlier_read = False
        self.keep_timer = QTimer(self)
        self.keep_timer.setSingleShot(True)
        self.keep_timer.setInterval(KEEP_MS)
        self.keep_timer.timeout.connect(self.keep_place)
        QVBoxLayout(self).setContentsMargins(0, 0, 0, 0)

    def showEvent(self, ev: QShowEvent) -> None:
        super().showEvent(ev)
        self.shown()

    def shown(self) -> None:
        """Build the panel, the first time the tab is shown."""
        if self.panel is None:
            # nothing AI is imported before the reader opens the tab: the viewer starts as fast as without us
            from calibre_plugins.bookai.viewer.panel import AskPanel  # on first show: nothing AI is imported before
            self.panel = AskPanel(self.viewer, self)
            self.layout().addWidget(self.panel)
            self.panel.selection_changed(self.selected, self.annot)
            if self.book_path:
                self.keep_place()  # the earlier reading read first, for the panel's offer
                self.panel.book_opened(self.earlier)

    def selection_changed(self, text: str | None, annot: dict | None = None, *rest: object) -> None:
        """The viewer's selection changed: kept for the panel, and passed to it once it is built."""
        self.selected, self.annot = text or '', annot
        if self.panel is not None:
            self.panel.selection_changed(self.selected, annot)

    def place_changed(self, cfi: object) -> None:
        """The viewer's place changed (a book opened, a page turned): remembered; kept in the record
        a few seconds later once the panel is built (see the class's docstring)."""
        if not isinstance(cfi, str) or not cfi.startswith('epubcfi('):
            return
        data = getattr(self.viewer, 'current_book_data', None) or {}
        path = data.get('pathtoebook') or ''
        if not path:
            return
        if path != self.book_path:  # another book: the one before kept where it was left
            self.keep_place()
            details = data.get('book_library_details') or {}
            self.book_path, self.earlier, self.earlier_read = path, None, False
            self.book = (str(details.get('library_id') or ''), int(details.get('book_id') or 0),
                         str(details.get('fmt') or ''), path)
            self.place = self.began = cfi
            if self.panel is not None:
                self.keep_place()
                self.panel.book_opened(self.earlier)
            return
        self.place = cfi
        if self.panel is not None:
            self.keep_timer.start()

    def keep_place(self) -> None:
        """Keep the book's place and the time in the record (the earlier reading read from it first),
        unless the reader turned the offer off. Never in the viewer's way: a problem is said once."""
        self.keep_timer.stop()
        if not self.book_path or not self.place:
            return
        try:
            from calibre_plugins.bookai.conversation.last_read import LastReadRecord, book_key  # late: see above
            from calibre_plugins.bookai.settings.prefs import plugin_prefs  # late: not before the panel or a new book
            if plugin_prefs()['recap_offer_days'] <= 0:
                return
            record, key = LastReadRecord(), book_key(*self.book)
            if not self.earlier_read:
                self.earlier, self.earlier_read = record.get(key), True
            record.put(key, self.place, began=self.began)
        except Exception as e:  # a full disk, a folder not writable: the viewer goes on, without the record
            if not getattr(self, 'keep_problem_said', False):
                self.keep_problem_said = True
                print(f'Book AI: where this book was read could not be kept: {e}', file=sys.stderr, flush=True)
