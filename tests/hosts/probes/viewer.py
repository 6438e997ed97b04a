# License: GPLv3 Copyright: the Book AI developers
"""Open a book in calibre's real E-book viewer headless, report, and close it.

    calibre-debug -e viewer.py BOOK

Writes a JSON report to $BOOKAI_PROBE_OUT and, if $BOOKAI_PROBE_SCREENSHOT is
set, a screenshot once the book's first page has rendered.

With $BOOKAI_PROBE_ASK set to a quick action's label, it then opens Book AI's
panel, selects the page's text through the viewer's own selection path
(its select_all shortcut), runs that action and waits for the answer; with
$BOOKAI_PROBE_ENDLESS_URL also a question stopped mid-answer; with
$BOOKAI_PROBE_NOTE also Save as note. $BOOKAI_PROBE_SHOTS: a folder for screenshots.

With $BOOKAI_PROBE_SECTIONS=N it goes N sections on (the viewer's next_section
shortcut) and reports where it is; with $BOOKAI_PROBE_GROUNDED also set to a
question, it then asks it with book text "up to where I am", and clicks a
citation of the answer's first passage; then it closes, and the viewer saves
its place.

$BOOKAI_PROBE_TAB=ours|first: the Lookup panel's tabs and the one it shows as the viewer starts
and once opened (a screenshot then at $BOOKAI_PROBE_TAB_SHOT), then the reader chooses Book AI's
tab or the first one and, with $BOOKAI_PROBE_TAB_DOCK=closed, closes the panel; then the viewer
closes (see choose_tab()).

With $BOOKAI_PROBE_SECTIONS=N and $BOOKAI_PROBE_XRAY=<a name>, it opens the panel's X-Ray tab
there, builds the X-Ray, shows the entity of that name (a screenshot then, viewer-xray.png in
$BOOKAI_PROBE_SHOTS), selects the name in the book's text as the reader would and asks "Who or
what is this?" (see xray()).

With $BOOKAI_PROBE_SECTIONS=N and $BOOKAI_PROBE_RECAP set, it presses the panel's Story so far
there, waits for the recap, and takes a screenshot (viewer-recap.png in $BOOKAI_PROBE_SHOTS) (see
recap()); then the X-Ray, with $BOOKAI_PROBE_XRAY too ($BOOKAI_PROBE_XRAY_SHOT_ONLY: closed after its
screenshot, where the sections took it).

$BOOKAI_PROBE_FEATURES=<a quick action's label>: each thing the panel does in turn (see
features()); $BOOKAI_PROBE_QUIT: the viewer closed while an answer streams;
$BOOKAI_PROBE_SOCKETS: every network connection of the process recorded (sockets.py).
"""

import functools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import Report, later as report_later, modal  # noqa: E402

report = Report(loaded=None, rendered=False)
if os.environ.get('BOOKAI_PROBE_SOCKETS'):  # first of all: every connection of the process is seen
    from sockets import record
    record(report)


def later(condition, then, timeout=120):
    report_later(report, condition, then, timeout)


def ask(viewer):
    """Open the panel, select, run a quick action, then Stop and Save as note as asked."""
    from qt.core import QTabWidget
    shots = os.environ.get('BOOKAI_PROBE_SHOTS', '')
    viewer.toggle_lookup(True)
    placeholder = viewer.bookai_panel
    tabs = viewer.lookup_widget if isinstance(viewer.lookup_widget, QTabWidget) else viewer.lookup_dock.widget()
    report['tabs'] = [tabs.tabText(i).replace('&', '') for i in range(tabs.count())]
    report['modules_before_shown'] = sorted(m for m in sys.modules if m.startswith('calibre_plugins.bookai'))
    tabs.setCurrentWidget(placeholder)
    panel = placeholder.panel
    report['panel_built'] = panel is not None
    from qt.core import QTimer
    # past the cover (an image) to the first text, then select it all: the viewer's own shortcuts
    viewer.web_view.trigger_shortcut('next_section')
    QTimer.singleShot(1500, lambda: viewer.web_view.trigger_shortcut('select_all'))

    def selected():
        return bool(panel.selected)

    def run():
        report['selected'] = panel.selected[:200]
        report['quick_actions'] = [b.text() for b in panel.action_buttons]
        b = next(b for b in panel.action_buttons if b.text() == os.environ['BOOKAI_PROBE_ASK'])
        b.click()
        later(lambda: panel.panel.cancel is None and bool(panel.panel.conv.turns), answered)

    def answered():
        conv = panel.panel.conv
        turn = conv.turns[-1]
        report.update(question=turn.question, answer=turn.answer, error=turn.error,
                      messages=[m.text for m in conv.messages_for(turn.question)[:-1]],
                      chat_text=panel.panel.chat.toPlainText())
        if shots:
            viewer.grab().save(os.path.join(shots, 'viewer-panel.png'))
            panel.grab().save(os.path.join(shots, 'viewer-panel-only.png'))
        report.write()
        free_question()

    def free_question():
        p = panel.panel
        p.question.setPlainText('And who wrote it?')
        p.send_button.click()
        later(lambda: p.cancel is None and len(p.conv.turns) == 2, free_answered)

    def free_answered():
        conv = panel.panel.conv
        turn = conv.turns[-1]
        sent = conv.messages_for(turn.question)
        sent = sent[:-3] + sent[-1:]  # what was sent for it: without its own question and answer
        report.update(free_question=turn.question, free_answer=turn.answer, free_error=turn.error,
                      free_messages=[[m.role.value, m.text] for m in sent])
        report.write()
        if os.environ.get('BOOKAI_PROBE_ENDLESS_URL'):
            return stop()
        note()

    def stop():
        from calibre_plugins.bookai.settings.prefs import plugin_prefs
        prefs = plugin_prefs()
        providers = dict(prefs['providers'])
        providers['openai_compatible'] = dict(providers['openai_compatible'],
                                              base_url=os.environ['BOOKAI_PROBE_ENDLESS_URL'] + '/v1')
        prefs['providers'] = providers
        p = panel.panel
        p.conv.provider = ''  # follow the changed settings
        p.question.setPlainText('Go on and on.')
        p.send_button.click()
        later(lambda: p.answer is not None and len(p.answer.text_parts) >= 10, press_stop)

    def press_stop():
        panel.panel.send_button.click()
        later(lambda: panel.panel.cancel is None, stopped)

    def stopped():
        turn = panel.panel.conv.turns[-1]
        report.update(stopped_finish=turn.finish_reason, stopped_chars=len(turn.answer))
        report.write()
        note()

    def note():
        if not os.environ.get('BOOKAI_PROBE_NOTE'):
            return viewer.close()
        panel.panel.save(None)
        later(lambda: any(h.get('notes') for h in viewer.current_book_data.get('annotations_map', {}).get(
            'highlight', [])), noted, timeout=20)

    def noted():
        highlights = viewer.current_book_data.get('annotations_map', {}).get('highlight', [])
        report['notice'] = panel.panel.chat.toPlainText()[-300:]
        report['highlights'] = [{'notes': h.get('notes', ''), 'text': h.get('highlighted_text', '')[:100],
                                 'uuid': h.get('uuid')} for h in highlights]
        report['book_library_details'] = viewer.current_book_data.get('book_library_details')
        report.write()
        QTimer.singleShot(500, viewer.close)  # the notice comes once the note is set

    later(selected, run, timeout=30)


def sections(viewer, count, then):
    """Go count sections on, as the reader would, then then()."""
    from qt.core import QTimer

    def step(n):
        report.setdefault('cfis', []).append(viewer.web_view.current_cfi)
        if n == 0:
            report['cfi'] = viewer.web_view.current_cfi
            report.write()
            return then()
        viewer.web_view.trigger_shortcut('next_section')
        QTimer.singleShot(1500, lambda: step(n - 1))
    step(count)


def grounded(viewer):
    """Ask with book text up to the viewer's place, then follow a citation."""
    from qt.core import QTabWidget, QTimer
    viewer.toggle_lookup(True)
    tabs = viewer.lookup_widget if isinstance(viewer.lookup_widget, QTabWidget) else viewer.lookup_dock.widget()
    tabs.setCurrentWidget(viewer.bookai_panel)
    p = viewer.bookai_panel.panel.panel
    p.scope_row.box.setCurrentIndex(p.scope_row.box.findData(os.environ.get('BOOKAI_PROBE_SCOPE', 'position')))
    report['scopes'] = [p.scope_row.box.itemData(i) for i in range(p.scope_row.box.count())]
    p.question.setPlainText(os.environ['BOOKAI_PROBE_GROUNDED'])
    p.send_button.click()

    def answered():
        turn = p.conv.turns[-1]
        report.update(g_error=turn.error, g_answer=turn.answer, g_passages=turn.passages,
                      g_spoiler_safe=turn.spoiler_safe, g_places=[[x.chapter, x.position, x.cfi] for x in turn.places],
                      g_chat=p.chat.toPlainText()[-2000:])
        report.write()
        if not turn.places:
            return viewer.close()
        turn.answer += ' [1]'
        p.show_conversation()
        report['g_links'] = 'bookai:cite/0/1' in p.chat.toHtml()
        shots = os.environ.get('BOOKAI_PROBE_SHOTS', '')
        if shots:
            viewer.grab().save(os.path.join(shots, os.environ.get('BOOKAI_PROBE_SHOT_NAME', 'viewer-grounded.png')))
        from qt.core import QUrl
        p.chat.on_link(QUrl('bookai:cite/0/1'))  # the citation clicked: the viewer goes there
        QTimer.singleShot(3000, jumped)

    def jumped():
        report['cfi_after_jump'] = viewer.web_view.current_cfi
        report.write()
        viewer.close()
    later(lambda: not p.streaming and bool(p.conv.turns), answered)


def xray(viewer):
    """The X-Ray tab at the viewer's place: what it shows kept, then built; an entity shown; then
    "Who or what is this?" about that name, selected in the book."""
    from qt.core import QTimer, QUrl
    ask_panel = open_panel(viewer)
    x = ask_panel.xray
    ask_panel.tabs.setCurrentWidget(x)
    name = os.environ['BOOKAI_PROBE_XRAY']
    shots = os.environ.get('BOOKAI_PROBE_SHOTS', '')

    def shown():
        return x.work is None and (x.xray is not None or bool(x.status.text()))

    def build():
        report.update(x_tabs=[ask_panel.tabs.tabText(i) for i in range(ask_panel.tabs.count())],
                      x_summary_before=x.summary.text(), x_button_before=x.build_button.text())
        report.write()
        x.build_button.click()
        later(lambda: x.work is None, built, timeout=report.timeout)

    def built():
        made = x.xray
        report.update(x_summary=x.summary.text(), x_status=x.status.text(), x_button=x.build_button.text(),
                      x_chapters_read=list(made.chapters_read) if made else [],
                      x_missing=list(made.missing) if made else [],
                      x_entities=[[e.name, e.kind, e.first.chapter] for e in made.entities] if made else [])
        x.show_named(name)
        report['x_shown'] = x.entity.name if x.entity is not None else ''
        report['x_details'] = x.details.toPlainText()
        report.write()
        QTimer.singleShot(500, shoot)

    def shoot():
        if shots:
            viewer.grab().save(os.path.join(shots, 'viewer-xray.png'))
            x.grab().save(os.path.join(shots, 'viewer-xray-only.png'))
        if os.environ.get('BOOKAI_PROBE_XRAY_SHOT_ONLY'):  # the viewer left where it was, its place saved there
            report.write()
            return viewer.close()
        # where the name first appears: the viewer goes there; then the name is found with the viewer's
        # own search, which selects it, as the reader would select it
        x.details.anchorClicked.emit(QUrl('bookai:first'))
        QTimer.singleShot(2500, find)

    def find():
        report['x_cfi_after_first'] = viewer.web_view.current_cfi
        viewer.show_search(name, trigger=True)  # the next place that names it: the viewer goes there

        def found():
            return ask_panel.selected.strip() == name and viewer.web_view.current_cfi != report['x_cfi_after_first']
        later(found, lambda: QTimer.singleShot(1000, who), timeout=90)

    def who():
        report['x_selected'] = ask_panel.selected
        report['x_cfi_at_who'] = viewer.web_view.current_cfi
        ask_panel.tabs.setCurrentIndex(0)
        report['x_who_enabled'] = ask_panel.who_button.isEnabled()
        ask_panel.who_button.click()
        p = ask_panel.panel
        later(lambda: not p.streaming and bool(p.conv.turns), answered)

    def answered():
        p = ask_panel.panel
        turn = p.conv.turns[-1]
        report.update(x_who_question=turn.question, x_who_error=turn.error, x_who_places=[
            [pl.chapter, pl.position, pl.cfi] for pl in turn.places], x_who_passages=turn.passages,
            x_who_shown=x.entity.name if x.entity is not None else '')
        report.write()
        viewer.close()
    later(shown, build)


def recap(viewer, then=None):
    """Story so far at the viewer's place, as the reader asks it; a screenshot of the recap; then
    then() (by default, the viewer closes)."""
    from qt.core import QTimer
    p = open_panel(viewer).panel
    report['r_enabled'] = p.recap_button is not None and p.recap_button.isEnabled()
    then = then or viewer.close
    if not report['r_enabled']:
        return then()
    p.recap_button.click()

    def answered():
        turn = p.conv.turns[-1]
        report.update(r_question=turn.question, r_answer=turn.answer, r_error=turn.error,
                      r_places=[[x.chapter, x.position, x.cfi] for x in turn.places],
                      r_chat=p.chat.toPlainText()[-3000:])
        report.write()
        QTimer.singleShot(500, shoot)

    def shoot():
        if shots := os.environ.get('BOOKAI_PROBE_SHOTS', ''):
            p.chat.verticalScrollBar().setValue(0)  # what was sent, and the recap's beginning
            viewer.grab().save(os.path.join(shots, 'viewer-recap.png'))
        then()
    later(lambda: not p.streaming and bool(p.conv.turns) and p.loading is None, answered, timeout=900)


def open_panel(viewer):
    """The Ask AI panel, opened as the reader opens it: its ConversationPanel."""
    from qt.core import QTabWidget
    viewer.toggle_lookup(True)
    tabs = viewer.lookup_widget if isinstance(viewer.lookup_widget, QTabWidget) else viewer.lookup_dock.widget()
    tabs.setCurrentWidget(viewer.bookai_panel)
    return viewer.bookai_panel.panel


def features(viewer):
    """Each thing the panel does, as the reader does it: a question typed before any selection,
    a quick action on the selected text, What will be sent, Settings. What each showed goes in
    report['features'] (with or without a provider set up)."""
    from qt.core import QTimer
    ask_panel = open_panel(viewer)
    p = ask_panel.panel
    seen = report['features'] = {'opened': p.chat.toPlainText()}

    def typed():
        p.question.setPlainText('Who wrote this book?')
        p.send_button.click()
        later(lambda: not p.streaming, selected)

    def selected():
        seen['question'] = {'chat': p.chat.toPlainText(), 'answers': [t.answer for t in p.conv.turns]}
        viewer.web_view.trigger_shortcut('next_section')
        QTimer.singleShot(1500, lambda: viewer.web_view.trigger_shortcut('select_all'))
        later(lambda: bool(ask_panel.selected), quick_action, timeout=30)

    def quick_action():
        report['selected'] = ask_panel.selected
        b = next(b for b in ask_panel.action_buttons if b.text() == os.environ['BOOKAI_PROBE_FEATURES'])
        seen['quick_action_enabled'] = b.isEnabled()
        b.click()
        later(lambda: not p.streaming, preview)

    def preview():
        seen['quick_action'] = {'chat': p.chat.toPlainText(), 'answers': [t.answer for t in p.conv.turns]}
        if p.provider is not None:
            QTimer.singleShot(50, lambda: modal(seen, 'preview', settings))
        p.show_preview()
        if p.provider is None:
            settings()

    def settings():
        seen['preview_chat'] = p.chat.toPlainText()
        QTimer.singleShot(50, lambda: modal(seen, 'settings', viewer.close))
        p.settings_button.click()
    typed()


def quit_while_streaming(viewer):
    """A question answered (by a provider that answers without end); when some has come, the
    viewer is closed as the reader closes it. report['quit_at']: the time it was closed.
    $BOOKAI_PROBE_QUIT=idle: closed with the panel open and no question, for comparison."""
    import time
    p = open_panel(viewer).panel
    if os.environ['BOOKAI_PROBE_QUIT'] == 'idle':  # for comparison: the same viewer closed with no answer
        report['quit_at'] = time.time()
        report.write()
        return viewer.close()
    p.question.setPlainText('Go on and on.')
    p.send_button.click()

    def close():
        report['chars_before'] = len(''.join(p.answer.text_parts))
        report['quit_at'] = time.time()
        report.write()
        viewer.close()
    later(lambda: p.answer is not None and len(p.answer.text_parts) >= 10, close)


def lookup_tabs(viewer):
    """The Lookup panel's tab widget: calibre's (8.11+), or the one Book AI puts in the dock."""
    from qt.core import QTabWidget
    return viewer.lookup_widget if isinstance(viewer.lookup_widget, QTabWidget) else viewer.lookup_dock.widget()


def choose_tab(viewer):
    """What the Lookup panel shows as the viewer starts and when opened; then a tab chosen as the
    reader chooses one (a click on the tab bar), the panel closed if asked, and the viewer closed."""
    from qt.core import QTimer
    from calibre.gui2.viewer.config import vprefs
    tabs = lookup_tabs(viewer)

    def current():
        return tabs.tabText(tabs.currentIndex()).replace('&', '') if tabs.currentIndex() >= 0 else None

    report['tabs'] = [tabs.tabText(i).replace('&', '') for i in range(tabs.count())]
    report['lookup_open_at_start'] = viewer.lookup_dock.isVisible()
    report['tab_at_start'] = current()
    report['panel_built_at_start'] = viewer.bookai_panel.panel is not None
    viewer.toggle_lookup(True)

    def opened():
        report['tab_when_opened'] = current()
        if shot := os.environ.get('BOOKAI_PROBE_TAB_SHOT'):
            viewer.grab().save(shot)
        ours = os.environ['BOOKAI_PROBE_TAB'] == 'ours'
        tabs.tabBar().setCurrentIndex(tabs.indexOf(viewer.bookai_panel) if ours else 0)
        report['chosen'] = current()
        if os.environ.get('BOOKAI_PROBE_TAB_DOCK') == 'closed':
            viewer.toggle_lookup()
        report['lookup_open_at_close'] = viewer.lookup_dock.isVisible()
        report['prefs'] = {k: vprefs.get(k) for k in ('llm_lookup_tab_index', 'bookai_lookup_tab_index')}
        report.write()
        QTimer.singleShot(500, viewer.close)
    QTimer.singleShot(1000, opened)


def unexpected_viewer():
    """A viewer unlike any calibre Book AI knows: its Lookup panel is not in its dock."""
    from qt.core import QWidget
    from calibre.gui2.viewer.ui import EbookViewer
    original = EbookViewer.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.lookup_dock.setWidget(QWidget(self.lookup_dock))
    EbookViewer.__init__ = __init__


def main(book):
    report.start()
    from qt.core import QTimer
    from calibre.gui2.viewer import main as viewer_main
    # ebook-viewer loads the plugins while it imports these modules; calibre-debug -e loaded
    # them before this script ran. Initialize them again (as calibre does when a plugin is
    # added), now in a viewer process: what the plugins' initialize() sees in ebook-viewer.
    if os.environ.get('BOOKAI_PROBE_UNEXPECTED'):
        unexpected_viewer()
    from calibre.customize.ui import initialize_plugins
    initialize_plugins()
    # the first-run help over the book ("Welcome to the calibre E-book viewer"): seen already
    from calibre.gui2.viewer.config import vprefs
    session = dict(vprefs['session_data'] or {})
    session['controls_help_shown_count'] = 2
    vprefs['session_data'] = session
    from calibre.gui2.viewer.ui import EbookViewer
    original = EbookViewer.load_finished

    def finish(viewer):
        if report.screenshot:
            report['screenshot'] = viewer.grab().save(report.screenshot)
        report['bookai_modules'] = sorted(m for m in sys.modules if m.startswith('calibre_plugins.bookai'))
        report['has_panel'] = hasattr(viewer, 'bookai_panel')
        from qt.core import QTabWidget
        lookup = viewer.lookup_widget  # calibre's own Lookup panel: its tabs (8.11+), or None (a plain widget)
        report['lookup_tabs'] = [lookup.tabText(i).replace('&', '') for i in range(lookup.count())] if isinstance(
            lookup, QTabWidget) else None
        report.write()
        if os.environ.get('BOOKAI_PROBE_ASK') and report['has_panel']:
            return ask(viewer)
        if os.environ.get('BOOKAI_PROBE_FEATURES') and report['has_panel']:
            return features(viewer)
        if os.environ.get('BOOKAI_PROBE_QUIT') and report['has_panel']:
            return quit_while_streaming(viewer)
        if os.environ.get('BOOKAI_PROBE_TAB') and report['has_panel']:
            return choose_tab(viewer)
        if os.environ.get('BOOKAI_PROBE_SECTIONS'):
            then = (lambda: grounded(viewer)) if os.environ.get('BOOKAI_PROBE_GROUNDED') else viewer.close
            if os.environ.get('BOOKAI_PROBE_XRAY') and report['has_panel']:
                then = lambda: xray(viewer)  # noqa: E731
            if os.environ.get('BOOKAI_PROBE_RECAP') and report['has_panel']:  # and then the X-Ray, if asked
                then = functools.partial(recap, viewer, then if os.environ.get('BOOKAI_PROBE_XRAY') else None)
            return sections(viewer, int(os.environ['BOOKAI_PROBE_SECTIONS']), then)
        viewer.close()

    def rendered(viewer, *args):
        if not report['rendered']:
            report['rendered'] = True
            if os.environ.get('BOOKAI_PROBE_T0'):  # for bench/viewer_start.py
                import time
                report['rendered_after'] = time.time() - float(os.environ['BOOKAI_PROBE_T0'])
            QTimer.singleShot(1000, lambda: finish(viewer))

    def load_finished(self, ok, data):
        report['loaded'] = bool(ok)
        self.resize(1100, 750)
        self.web_view.content_file_changed.connect(lambda *a: rendered(self, *a))
        ans = original(self, ok, data)
        if not ok:
            report.write()
            self.close()
        return ans

    EbookViewer.load_finished = load_finished
    report.finish(viewer_main.main(['ebook-viewer', book]))


main(sys.argv[-1])
