# License: GPLv3 Copyright: the Book AI developers
"""AI covers in calibre's real main window, headless: the Book AI menu's entries, a job for the
selected books in calibre's Jobs panel, the review applied, Undo, and a library switch while a
job runs; how long the main window's event loop ever waited meanwhile. Then quit.

    calibre-debug -e covers.py LIBRARY

$BOOKAI_PROBE_COVERS_SERVER: the address of a server answering OpenAI's /v1/images/generations
(the test's); $BOOKAI_PROBE_SWITCH_TO: the library to switch to while the last job runs;
$BOOKAI_PROBE_SHOTS: a folder for screenshots. Writes its JSON report to $BOOKAI_PROBE_OUT.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from main_window_start import no_usb_scan, run_main_window  # noqa: E402
from pauses import Pauses  # noqa: E402
from report import Report, later  # noqa: E402

report = Report(started=False, probed=False)


def menu_state(gui, ac):
    from qt.core import QPoint
    ac.menu.popup(gui.mapToGlobal(QPoint(20, 20)))  # aboutToShow: Undo's state looked up
    state = {a.text().replace('&', ''): a.isEnabled() for a in ac.menu.actions() if not a.isSeparator()}
    ac.menu.hide()
    return state


def probe(gui):
    from qt.core import QApplication, QTimer

    import calibre.gui2 as gui2
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    report['probed'] = True
    prefs = plugin_prefs()
    prefs['providers'] = {'openai_compatible': {'base_url': os.environ['BOOKAI_PROBE_COVERS_SERVER'] + '/v1'}}
    prefs['image_provider'] = 'openai_compatible'
    prefs['cover_requests_at_once'] = 2
    gui2.question_dialog = lambda *a, **k: report.setdefault('questions', []).append(a[2]) or True
    shots = os.environ.get('BOOKAI_PROBE_SHOTS', '')
    ac = gui.iactions['Book AI']
    by_name = {u.rpartition('bookai-')[2]: s['action'] for u, s in gui.keyboard.shortcuts.items() if 'bookai-' in u}
    db = gui.current_db.new_api
    report['covers_before'] = {str(i): len(db.cover(i) or b'') for i in (1, 2)}
    report['covers_module_before'] = 'calibre_plugins.bookai.main_window.cover_actions' in sys.modules
    gui.library_view.select_rows([1, 2], using_ids=True)
    report['menu_before'] = menu_state(gui, ac)
    pauses = Pauses()

    def covers():
        return sys.modules.get('calibre_plugins.bookai.main_window.cover_actions')

    def lengths():
        return {str(i): len(db.cover(i) or b'') for i in (1, 2)}

    def bulk():

        report['step'] = 'bulk'  # where it was, if it never ends
        def accept():
            d = QApplication.activeModalWidget()
            if d is None:
                return QTimer.singleShot(20, accept)
            report['bulk_dialog'] = d.windowTitle()
            pauses.start('job')
            d.generate_button.click()
        QTimer.singleShot(0, accept)
        by_name['generate-covers'].trigger()
        later(report, lambda: covers().reviews, review)

    def review():

        report['step'] = 'review'  # where it was, if it never ends
        w = covers().reviews[0]
        report['jobs'] = [j.description for j in gui.job_manager.jobs]  # in the Jobs panel
        report['review'] = {'books': sorted(w.boxes), 'failures': w.failures.text()}
        pauses.start('review')
        later(report, lambda: all(t.pixmap() is not None and not t.pixmap().isNull() or  # not 'Loading…'
                                  t.text() in ('No cover', 'Cannot be shown') for t in w.thumbs.values()),
              lambda: apply(w))

    def apply(w):

        report['step'] = 'apply'  # where it was, if it never ends
        pauses.stop()  # the probe's own screenshot is no pause of Book AI's
        if shots:
            w.grab().save(os.path.join(shots, 'cover-review-in-calibre.png'))
        pauses.start('apply')
        w.apply_all_button.click()
        later(report, lambda: not covers().reviews and all(  # every book's, not only the first's
            n != report['covers_before'][i] for i, n in lengths().items()), applied)

    def applied():

        report['step'] = 'applied'  # where it was, if it never ends
        report['covers_applied'] = lengths()
        report['menu_after_apply'] = menu_state(gui, ac)
        pauses.stop()
        if shots:
            gui.grab().save(os.path.join(shots, 'main-window-new-covers.png'))
        pauses.start('undo')
        by_name['undo-cover'].trigger()
        # done once Book AI says so (its steps have put both back and dropped what it kept)
        later(report, lambda: 'put back' in gui.status_bar.currentMessage(), undone)

    def undone():

        report['step'] = 'undone'  # where it was, if it never ends
        report['covers_undone'] = lengths()
        report['menu_after_undo'] = menu_state(gui, ac)
        switch()

    def switch():
        """A job for book 1, and calibre switches library while it runs."""

        report['step'] = 'switch'  # where it was, if it never ends
        gui.library_view.select_rows([1], using_ids=True)
        pauses.start('second job')

        def accept():
            d = QApplication.activeModalWidget()
            if d is None:
                return QTimer.singleShot(20, accept)
            d.generate_button.click()
        QTimer.singleShot(0, accept)
        by_name['generate-covers'].trigger()
        job = next(iter(covers().jobs))
        report['library_before_switch'] = str(gui.current_db.library_id)

        def go():

            report['step'] = 'go'  # where it was, if it never ends
            pauses.stop()  # calibre's own switch of library, and its showing the other library, take what they take
            gui.library_moved(os.environ['BOOKAI_PROBE_SWITCH_TO'])
            QTimer.singleShot(1000, lambda: pauses.start('after the switch'))
            report['library_after_switch'] = str(gui.current_db.library_id)
            later(report, lambda: job not in covers().jobs and all(
                j.run_state == j.FINISHED for j in gui.job_manager.jobs), lambda: QTimer.singleShot(500, ended))
        later(report, lambda: job.start_time is not None, lambda: QTimer.singleShot(300, go))

    def ended():

        report['step'] = 'ended'  # where it was, if it never ends
        pauses.stop()
        report['longest_pause'] = pauses.longest
        report['longest_pause_in'] = pauses.where
        report['pause_stacks'] = pauses.stacks
        report['jobs_after'] = [(j.description, j.run_state == j.FINISHED, j.failed) for j in gui.job_manager.jobs]
        report['reviews_after_switch'] = len(covers().reviews)
        report['status_after_switch'] = gui.status_bar.currentMessage()
        report['other_library_covers'] = {str(i): len(gui.current_db.new_api.cover(i) or b'') for i in (1, 2)}
        report.write()
        gui.quit(confirm_quit=False)

    bulk()


def main(library):
    no_usb_scan()
    run_main_window(report, library, probe, ['--no-update-check'])


main(sys.argv[-1])
