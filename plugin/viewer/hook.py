# License: GPLv3 Copyright: the Book AI developers
"""How Book AI reaches into calibre's E-book viewer, which has no plugin API.

The viewer process runs every plugin's initialize() while it imports its own
modules, before the application exists (there, on 9.x, importing the Lookup
panel's module would be circular). So install() only wraps calibre's
Application.__init__; once the application exists it waits for the viewer's
main window, and then attach() adds a tab to the Lookup panel:

- calibre 8.11 and later: the Lookup panel is a tab widget (with calibre's own
  "Ask AI" tab, which is left alone); ours is added beside it as "Book AI";
- before 8.11: the Lookup panel is a plain widget in its dock; the dock gets a
  tab widget holding calibre's Lookup, unchanged, and ours as "Ask AI".

The tab holds a placeholder until it is first shown: nothing AI is imported
before. The selection reaches the panel from the same signal the Lookup panel
listens to. If anything is not as expected (a calibre this was not made for),
the viewer is left exactly as it was and one line on standard error says why.
"""

import sys

from qt.core import QVBoxLayout, QWidget  # Qt is loaded in the viewer by then; nothing of calibre's viewer is

load_translations()

PROBLEM = 'Book AI: no Ask AI panel in this E-book viewer: {}'
WAIT_MS, WAIT_TRIES = 100, 600   # the viewer's window appears after the application: wait up to a minute

_installed = False


def in_viewer():
    return 'calibre.gui2.viewer.main' in sys.modules


def install():
    global _installed
    if _installed:
        return
    _installed = True
    try:
        from calibre.gui2 import Application
    except Exception as e:
        return say(e)
    from qt.core import QApplication
    if QApplication.instance() is not None:
        return wait_for_viewer()
    original = Application.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        Application.__init__ = original  # once
        try:
            wait_for_viewer()
        except Exception as e:
            say(e)

    Application.__init__ = __init__


def say(problem):
    print(PROBLEM.format(problem), file=sys.stderr, flush=True)


def wait_for_viewer(tries=WAIT_TRIES):
    from qt.core import QApplication, QTimer
    for w in QApplication.topLevelWidgets():
        if type(w).__name__ == 'EbookViewer':
            try:
                attach(w)
            except Exception as e:
                say(f'{type(e).__name__}: {e}')
            return
    if tries:
        QTimer.singleShot(WAIT_MS, lambda: wait_for_viewer(tries - 1))


def check(viewer):
    """What attach() needs of the viewer, or raise saying what is missing."""
    for name in ('lookup_widget', 'lookup_dock', 'web_view', 'current_book_data'):
        if not hasattr(viewer, name):
            raise LookupError(f'the viewer has no {name}')
    if not hasattr(viewer.web_view, 'selection_changed'):
        raise LookupError('the viewer does not report selections')
    if viewer.lookup_dock.widget() is not viewer.lookup_widget:
        raise LookupError('the Lookup panel is not where it was expected')


def attach(viewer):
    from qt.core import QTabWidget, Qt
    check(viewer)
    placeholder = Placeholder(viewer)
    lookup = viewer.lookup_widget
    if isinstance(lookup, QTabWidget):
        tabs, title = lookup, _('Book AI')
    else:
        dock = viewer.lookup_dock
        tabs = QTabWidget(dock)
        tabs.setDocumentMode(True)
        tabs.addTab(lookup, _('&Lookup'))
        dock.setWidget(tabs)
        title = _('Ask &AI')
    from calibre_plugins.bookai.gui.icons import plugin_icon
    placeholder.tab_index = tabs.addTab(placeholder, plugin_icon('bookai'), title)
    tabs.currentChanged.connect(lambda index: placeholder.shown() if tabs.widget(index) is placeholder else None)
    viewer.web_view.selection_changed.connect(placeholder.selection_changed, type=Qt.ConnectionType.QueuedConnection)
    viewer.bookai_panel = placeholder


class Placeholder(QWidget):
    """The tab's widget: empty until first shown, then the panel (viewer.panel) inside it."""

    def __init__(self, viewer):
        super().__init__()
        self.viewer = viewer
        self.panel = None
        self.selected, self.annot = '', None
        QVBoxLayout(self).setContentsMargins(0, 0, 0, 0)

    def showEvent(self, ev):
        super().showEvent(ev)
        self.shown()

    def shown(self):
        if self.panel is None:
            from calibre_plugins.bookai.viewer.panel import AskPanel
            self.panel = AskPanel(self.viewer, self)
            self.layout().addWidget(self.panel)
            self.panel.selection_changed(self.selected, self.annot)

    def selection_changed(self, text, annot=None, *rest):
        self.selected, self.annot = text or '', annot
        if self.panel is not None:
            self.panel.selection_changed(self.selected, annot)
