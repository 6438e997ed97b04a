# License: GPLv3 Copyright: the Book AI developers
"""AI metadata in calibre's real main window, headless: the Book AI menu's entries, Fill in metadata
with AI… for the selected books, its job in calibre's Jobs panel, the review filled, Apply all, Undo
metadata change; how long the main window's event loop ever waited while the job ran and while the
review filled. Then quit.

    calibre-debug -e metadata.py LIBRARY

$BOOKAI_PROBE_METADATA_SERVER: an OpenAI-compatible server's root (the test's scripted model, or
llama-server); $BOOKAI_PROBE_MODEL: its model ('tiny' unless set); $BOOKAI_PROBE_BOOKS: the books
to select (ids, comma separated; all unless set); $BOOKAI_PROBE_FIELDS: the fields ticked
(tags,comments,languages unless set); $BOOKAI_PROBE_SHOTS: a folder for the review's screenshot
(metadata-review.png) and what Undo said (metadata-undo.png); $BOOKAI_PROBE_SHOT_ONLY: quit once
the review's is taken, nothing applied. Writes its
JSON report to $BOOKAI_PROBE_OUT.
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
    ac.menu.popup(gui.mapToGlobal(QPoint(20, 20)))  # aboutToShow: the entries' state looked up
    state = {a.text().replace('&', ''): a.isVisible() for a in ac.menu.actions() if not a.isSeparator()}
    ac.menu.hide()
    return state


def probe(gui):
    from qt.core import QApplication, QTimer

    import calibre.gui2 as gui2
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    report['probed'] = True
    prefs = plugin_prefs()
    prefs['providers'] = {'openai_compatible': {'base_url': os.environ['BOOKAI_PROBE_METADATA_SERVER'] + '/v1',
                                                'model': os.environ.get('BOOKAI_PROBE_MODEL', 'tiny'),
                                                'temperature': 0.0}}
    prefs['provider'] = 'openai_compatible'
    prefs['metadata_fields'] = os.environ.get('BOOKAI_PROBE_FIELDS', 'tags,comments,languages').split(',')
    gui2.question_dialog = lambda *a, **k: report.setdefault('questions', []).append(a[2]) or True
    gui2.info_dialog = lambda *a, **k: (report.setdefault('infos', []).append(a[2]),
                                        report.setdefault('info_titles', []).append(a[1]))
    shots = os.environ.get('BOOKAI_PROBE_SHOTS', '')
    ac = gui.iactions['Book AI']
    by_name = {u.rpartition('bookai-')[2]: s['action'] for u, s in gui.keyboard.shortcuts.items() if 'bookai-' in u}
    db = gui.current_db.new_api
    books = [int(b) for b in os.environ['BOOKAI_PROBE_BOOKS'].split(',')] if os.environ.get(
        'BOOKAI_PROBE_BOOKS') else sorted(db.all_book_ids())
    keys = ('tags', 'comments', 'languages')

    def values():
        return {f'{b}:{k}': list(v) if isinstance(v := db.field_for(k, b), tuple) else v for b in books for k in keys}

    report['values_before'] = values()
    report['module_before'] = 'calibre_plugins.bookai.main_window.metadata_actions' in sys.modules
    gui.library_view.select_rows(books, using_ids=True)
    report['menu_before'] = menu_state(gui, ac)
    pauses = Pauses()

    def actions():
        return sys.modules.get('calibre_plugins.bookai.main_window.metadata_actions')

    def fill():
        report['step'] = 'fill'  # where it was, if it never ends

        def accept():
            d = QApplication.activeModalWidget()
            if d is None:
                return QTimer.singleShot(20, accept)
            report['dialog'] = {'title': d.windowTitle(), 'fields': list(d.boxes),
                                'ticked': [k for k, b in d.boxes.items() if b.isChecked()]}
            if shots:
                d.grab().save(os.path.join(shots, 'metadata-choices.png'))
            pauses.start('job')
            d.start_button.click()
        QTimer.singleShot(0, accept)
        by_name['fill-metadata'].trigger()
        later(report, lambda: actions().reviews and not actions().reviews[0].busy, review, timeout=1500)

    def review():
        report['step'] = 'review'  # where it was, if it never ends
        w = actions().reviews[0]
        report['jobs'] = [j.description for j in gui.job_manager.jobs]  # in the Jobs panel
        pauses.stop()
        report['review'] = {'rows': w.table.rowCount(), 'status': w.status.text(), 'texts': [
            [w.table.item(r, c).text() for c in range(5)] for r in range(w.table.rowCount())]}
        if shots:
            w.grab().save(os.path.join(shots, 'metadata-review.png'))
        report['menu_with_review'] = menu_state(gui, ac)
        if os.environ.get('BOOKAI_PROBE_SHOT_ONLY'):
            w.discard_button.click()
            return later(report, lambda: not actions().reviews, ended)
        pauses.start('apply')
        w.apply_all_button.click()
        later(report, lambda: not w.busy, lambda: applied(w))

    def applied(w):
        report['step'] = 'applied'  # where it was, if it never ends
        report['applied_status'] = w.status.text()
        report['values_applied'] = values()
        w.close()
        pauses.start('undo')
        by_name['undo-metadata'].trigger()
        later(report, lambda: report.get('infos'), undone)

    def undone():
        report['step'] = 'undone'  # where it was, if it never ends
        report['values_undone'] = values()
        report['menu_after'] = menu_state(gui, ac)
        if shots:  # what Undo said, as calibre shows it
            from calibre.gui2.dialogs.message_box import MessageBox
            d = MessageBox(MessageBox.INFO, report['info_titles'][-1], report['infos'][-1], parent=gui)
            d.show()
            QApplication.processEvents()
            d.grab().save(os.path.join(shots, 'metadata-undo.png'))
            d.close()
        ended()

    def ended():
        report['step'] = 'ended'
        pauses.stop()
        report['longest_pause'] = pauses.longest
        report['longest_pause_in'] = pauses.where
        report['pause_stacks'] = pauses.stacks
        report['jobs_after'] = [(j.description, j.run_state == j.FINISHED, j.failed) for j in gui.job_manager.jobs]
        report.write()
        gui.quit(confirm_quit=False)

    fill()


def main(library):
    no_usb_scan()
    run_main_window(report, library, probe, ['--no-update-check'])


main(sys.argv[-1])
