# License: GPLv3 Copyright: the Book AI developers
"""Search library by meaning… and More like this in calibre's real main window, headless: the
search from Book AI's menu (its job in calibre's Jobs, the books found in calibre's own book list,
best first, with why in the window), then More like this from calibre's Similar books menu on the
book selected. Then quit.

    calibre-debug -e library_search.py LIBRARY

$BOOKAI_PROBE_EMBED_SERVER: the address of a server answering OpenAI's /v1/embeddings (the test's
llama-server), $BOOKAI_PROBE_EMBED_MODEL its model; $BOOKAI_PROBE_WORDS: the words searched;
$BOOKAI_PROBE_SHOTS: a folder for screenshots. Writes its JSON report to $BOOKAI_PROBE_OUT.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from main_window_start import no_usb_scan, run_main_window  # noqa: E402
from report import Report, later  # noqa: E402

report = Report(started=False, probed=False)


def shown(gui):
    """The books calibre's book list shows, in its order, and the title of the first rows."""
    data = gui.library_view.model().db.data
    return [data.index_to_id(i) for i in range(len(data))]


def rows(w):
    return [[w.results.topLevelItem(i).text(c) for c in range(3)] for i in range(w.results.topLevelItemCount())]


def picture(gui, w, path):
    """calibre's main window with the search window over its lower right corner, as the reader sees them."""
    from qt.core import QPainter, QPoint
    whole = gui.grab()
    top = w.grab()
    p = QPainter(whole)
    p.drawPixmap(QPoint(whole.width() - top.width() - 16, whole.height() - top.height() - 40), top)
    p.end()
    whole.save(path)


def probe(gui):
    from qt.core import QTimer

    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    report['probed'] = True
    prefs = plugin_prefs()
    model = os.environ['BOOKAI_PROBE_EMBED_MODEL']
    prefs['providers'] = {'openai_compatible': {'base_url': os.environ['BOOKAI_PROBE_EMBED_SERVER'] + '/v1',
                                                'model': model, 'embedding_model': model}}
    prefs['provider'] = 'openai_compatible'
    shots = os.environ.get('BOOKAI_PROBE_SHOTS', '')
    by_name = {u.rpartition('bookai-')[2]: s['action'] for u, s in gui.keyboard.shortcuts.items() if 'bookai-' in u}
    report['module_before'] = 'calibre_plugins.bookai.main_window.library_search_actions' in sys.modules
    similar = gui.iactions['Similar Books'].qaction.menu()
    report['similar_menu'] = [a.text() for a in similar.actions() if not a.isSeparator()]

    def lsa():
        return sys.modules['calibre_plugins.bookai.main_window.library_search_actions']

    def search():
        report['step'] = 'search'
        by_name['search-by-meaning'].trigger()
        w = lsa().windows[0]
        w.words.setText(os.environ['BOOKAI_PROBE_WORDS'])
        w.search_button.click()
        later(report, lambda: w.found_ids(), lambda: found(w), timeout=150)

    def found(w):
        report['step'] = 'found'
        report['jobs'] = [(j.description, j.failed) for j in gui.job_manager.jobs]
        report['search_text'] = gui.search.text()
        report['shown'] = shown(gui)
        db = gui.current_db.new_api
        report['books'] = len(db.all_book_ids())  # calibre adds its Quick Start Guide to a new library
        report['shown_titles'] = [db.field_for('title', b) for b in report['shown']]
        report['window'] = rows(w)
        report['status'] = w.status.text()
        report['selected'] = list(gui.library_view.get_selected_ids())
        report['sorted_on'] = list(gui.library_view.model().sorted_on)
        w.words.setCursorPosition(0)
        QTimer.singleShot(700, lambda: shoot_then_more(w))  # calibre's book details show the book selected

    def shoot_then_more(w):
        if shots:
            picture(gui, w, os.path.join(shots, 'library-search.png'))
        w.close()
        gui.search.clear()
        gui.library_view.select_rows([1], using_ids=True)
        [a for a in similar.actions() if a.text() == 'More like this (Book AI)'][0].trigger()
        m = lsa().windows[-1]
        later(report, lambda: m.found_ids(), lambda: more(m), timeout=60)

    def more(m):
        report['step'] = 'more'
        report['more_shown'] = shown(gui)
        report['more_window'] = rows(m)
        report['more_title'] = m.windowTitle()
        report['more_nearest'] = m.nearest.text()
        report['more_selected'] = list(gui.library_view.get_selected_ids())
        QTimer.singleShot(700, lambda: shoot_more(m))

    def shoot_more(m):
        if shots:
            picture(gui, m, os.path.join(shots, 'more-like-this.png'))
        m.close()
        report.write()
        gui.quit(confirm_quit=False)

    search()


def main(library):
    no_usb_scan()
    run_main_window(report, library, probe, ['--no-update-check'])


main(sys.argv[-1])
