# License: GPLv3 Copyright: the Book AI developers
"""Start calibre's real main window headless, report what it holds, and quit.

    calibre-debug -e main_window.py LIBRARY

Writes a JSON report to $BOOKAI_PROBE_OUT and, if $BOOKAI_PROBE_SCREENSHOT is
set, a screenshot of the window there. A watchdog ends a run that hangs (a
modal error dialog, say) and says so in the report.

$BOOKAI_PROBE_DISCUSS: a discussion and a quick action (see discuss()), with the Book text
$BOOKAI_PROBE_DISCUSS_SCOPE (a scope's name) when set.
$BOOKAI_PROBE_RECAP=<a title>: that book's discussion window, its Story so far and its X-Ray tab (see
recap()), with screenshots.
$BOOKAI_PROBE_FEATURES: every feature of the Book AI menu in turn (see features()).
$BOOKAI_PROBE_SWITCH_TO / $BOOKAI_PROBE_QUIT: an answer streaming when the library is
switched, or calibre quits (see interrupt()).
$BOOKAI_PROBE_SETTINGS: the settings dialog's texts, and a screenshot of it there.
$BOOKAI_PROBE_SOCKETS: every network connection of the process recorded (sockets.py).
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from main_window_start import no_usb_scan, run_main_window  # noqa: E402
from report import Report, later, modal  # noqa: E402

report = Report(started=False, probed=False)
if os.environ.get('BOOKAI_PROBE_SOCKETS'):  # first of all: every connection of the process is seen
    from sockets import record
    record(report)


def icon_variant(ac):
    """Which icon the button shows: the zip's 'light' or 'dark' one, the user's
    'override' (<config>/resources/images/Book AI/images/bookai.png), or None."""
    import zipfile
    from calibre.constants import config_dir
    from qt.core import QIcon, QImage, QPixmap

    def rendered(icon):
        return icon.pixmap(48, 48).toImage().convertToFormat(QImage.Format.Format_ARGB32)

    shown = rendered(ac.qaction.icon())
    with zipfile.ZipFile(ac.plugin_path) as zf:
        candidates = {variant: zf.read(name) for variant, name in (
            ('light', 'images/bookai.png'), ('dark', 'images/bookai-for-dark-theme.png'))}
    override = os.path.join(config_dir, 'resources', 'images', 'Book AI', 'images', 'bookai.png')
    if os.path.exists(override):
        with open(override, 'rb') as f:
            candidates['override'] = f.read()
    for variant, data in candidates.items():
        if rendered(QIcon(QPixmap.fromImage(QImage.fromData(data)))) == shown:
            return variant


def describe_action(gui, name):
    ac = gui.iactions.get(name)
    if ac is None:
        return None
    main_bar = gui.bars_manager.main_bars[0]
    menu = ac.qaction.menu()
    return {
        'text': ac.qaction.text(),
        'tooltip': ac.qaction.toolTip(),
        'icon_is_null': ac.qaction.icon().isNull(),
        'icon_variant': icon_variant(ac),
        'menu': [a.text() for a in menu.actions() if not a.isSeparator()] if menu is not None else None,
        'on_main_toolbar': ac.qaction in main_bar.added_actions,
        'version': list(ac.interface_action_base_plugin.version),
    }


def menu_texts(gui, name):
    ac = gui.iactions.get(name)
    menu = ac.qaction.menu() if ac is not None else None
    return [a.text() for a in menu.actions() if not a.isSeparator()] if menu is not None else None


# calibre's AI's keys (8.16+) and Book AI's own
WATCHED_KEYS = ('Ctrl+Alt+A', 'Ctrl+Shift+A', 'Ctrl+Alt+D', 'Ctrl+Alt+N')


def shortcuts(gui):
    """Book AI's shortcuts: the keys each got, its default keys, whether the user set its keys,
    and what else in calibre wants those keys."""
    from qt.core import QAction
    kb = gui.keyboard
    ours = {u: s for u, s in kb.shortcuts.items() if 'bookai-' in u}
    ours_actions = {s['action'] for s in ours.values()}
    result = {}
    for unique, sc in ours.items():
        keys = bound_keys(gui, unique)
        others = sorted(s['name'] for u, s in kb.shortcuts.items() if u != unique and set(keys) & wanted_keys(gui, u))
        others += sorted({a.text() for a in gui.findChildren(QAction) if a not in ours_actions and set(
            portable(a.shortcuts())) & set(keys)})
        result[unique.rpartition('bookai-')[2]] = {
            'unique': unique, 'name': sc['name'], 'defaults': portable(sc['default_keys']),
            'keys': keys, 'customized': unique in custom_map(gui), 'also_wanted_by': others}
    return result


def custom_map(gui):
    """The keys the user set in Preferences → Shortcuts."""
    return gui.keyboard.config.get('map', {})


def wanted_keys(gui, unique):
    """The keys calibre's keyboard manager tries to give the shortcut unique: the user's, or its defaults."""
    custom = custom_map(gui)
    return set(portable(custom[unique] if unique in custom else gui.keyboard.shortcuts[unique]['default_keys']))


def bound_keys(gui, unique):
    return portable(gui.keyboard.keys_map.get(unique, ()))


def portable(keys):
    """Keys (strings or QKeySequences) as calibre's keyboard manager compares them."""
    from qt.core import QKeySequence
    fmt = QKeySequence.SequenceFormat.PortableText
    return [QKeySequence(k, fmt).toString(fmt) if isinstance(k, str) else k.toString(fmt) for k in keys]


def chosen_by_book_ai(gui, unique):
    """Whether Book AI chose the keys of the shortcut unique: Discuss or Read next, unless the user set them."""
    return unique.endswith(('bookai-discuss', 'bookai-read-next')) and unique not in custom_map(gui)


def keymap(gui):
    """For calibre's AI's keys and Book AI's: which shortcuts calibre's keyboard manager bound each
    to, which other shortcuts want it (the real map without the keys Book AI chose), and which
    of the main window's actions hold it."""
    from qt.core import QAction
    kb = gui.keyboard
    return {key: {
        'bound_to': sorted(s['name'] for u, s in kb.shortcuts.items() if key in bound_keys(gui, u)),
        'wanted_by_others': sorted(s['name'] for u, s in kb.shortcuts.items()
                                   if not chosen_by_book_ai(gui, u) and key in wanted_keys(gui, u)),
        'actions': sorted(a.text() for a in gui.findChildren(QAction) if key in portable(a.shortcuts())),
    } for key in WATCHED_KEYS}


def keyboard_messages():
    """What calibre's keyboard manager says about conflicts, as it says it in debug mode, into
    report['keyboard_said']."""
    import calibre.gui2.keyboard as keyboard
    said = report['keyboard_said'] = []
    keyboard.DEBUG = True
    keyboard.prints = lambda *args, **kwargs: said.append(' '.join(map(str, args)))


def probe(gui):
    from calibre.gui2 import gprefs
    report['probed'] = True
    report['iactions'] = sorted(gui.iactions)
    report['layout'] = {k: [x for x in (gprefs.get('action-layout-' + k) or ())]
                        for k in ('toolbar', 'context-menu')}
    report['book_ai'] = describe_action(gui, 'Book AI')
    report['view_menu'] = menu_texts(gui, 'View')
    report['similar_menu'] = menu_texts(gui, 'Similar Books')
    report['shortcuts'] = shortcuts(gui)
    report['keymap'] = keymap(gui)
    report['shortcuts_map'] = {k: list(v) for k, v in custom_map(gui).items()}
    if report.screenshot:
        report['screenshot'] = gui.grab().save(report.screenshot)
    report.write()
    if os.environ.get('BOOKAI_PROBE_DISCUSS'):
        return discuss(gui)
    if os.environ.get('BOOKAI_PROBE_RECAP'):
        return recap(gui)
    if os.environ.get('BOOKAI_PROBE_FEATURES'):
        return features(gui)
    if os.environ.get('BOOKAI_PROBE_QUIT') or os.environ.get('BOOKAI_PROBE_SWITCH_TO'):
        return interrupt(gui)
    if os.environ.get('BOOKAI_PROBE_SETTINGS'):
        return settings_texts(gui)
    gui.quit(confirm_quit=False)


def settings_texts(gui):
    """The settings dialog's texts: its title, tabs, labels and buttons (for the translations);
    a screenshot of it in $BOOKAI_PROBE_SETTINGS."""
    from qt.core import QAbstractButton, QLabel, QTabWidget, QTimer

    def texts(d):
        tabs = d.findChild(QTabWidget)
        return {
            'title': d.windowTitle(),
            'tabs': [tabs.tabText(i) for i in range(tabs.count())],
            'labels': [w.text() for w in d.findChildren(QLabel) if w.text()],
            'buttons': [w.text() for w in d.findChildren(QAbstractButton) if w.text()],
        }
    QTimer.singleShot(50, lambda: modal(report, 'settings', lambda: gui.quit(confirm_quit=False),
                                        shot=os.environ['BOOKAI_PROBE_SETTINGS'], record=texts))
    gui.iactions['Book AI'].show_settings()


def discuss(gui):
    """Select the first book, press the Discuss shortcut's action, run a quick action, wait for
    the answer, open the settings both ways; screenshots of each."""
    from qt.core import QTimer
    shots = os.environ.get('BOOKAI_PROBE_SHOTS', '')
    gui.library_view.select_rows([1])
    ac = gui.iactions['Book AI']
    (discuss_action,) = [s['action'] for u, s in gui.keyboard.shortcuts.items() if u.endswith('bookai-discuss')]
    discuss_action.trigger()
    (w,) = ac.windows
    report['window_title'] = w.windowTitle()
    report['quick_actions'] = [b.text() for b in w.action_buttons]
    if scope := os.environ.get('BOOKAI_PROBE_DISCUSS_SCOPE'):  # the Book text the quick action goes with
        w.panel.scope_row.box.setCurrentIndex(w.panel.scope_row.box.findData(scope))
    next(b for b in w.action_buttons if b.text() == os.environ['BOOKAI_PROBE_DISCUSS']).click()

    def wait():
        if w.panel.cancel is not None:
            return QTimer.singleShot(50, wait)
        turn = w.conv.turns[-1]
        report['answer'] = turn.answer
        report['error'] = turn.error
        report['messages'] = [m.text for m in w.conv.messages_for(turn.question)[:-1]]
        report['question'] = turn.question
        report['chat_text'] = w.panel.chat.toPlainText()
        if shots:
            w.grab().save(os.path.join(shots, 'discussion-in-calibre.png'))
        report.write()
        if os.environ.get('BOOKAI_PROBE_GROUNDED'):
            return grounded()
        settings_by_menu()

    def grounded():
        """A question with passages of the whole book ($BOOKAI_PROBE_GROUNDED), in a new chat."""
        p = w.panel
        p.new_chat()
        p.scope_row.box.setCurrentIndex(p.scope_row.box.findData('book'))
        p.question.setPlainText(os.environ['BOOKAI_PROBE_GROUNDED'])
        p.send_button.click()

        def answered():
            if p.streaming:
                return QTimer.singleShot(50, answered)
            turn = w.conv.turns[-1]
            report['grounded'] = {'answer': turn.answer, 'error': turn.error, 'passages': turn.passages,
                                  'places': [[x.chapter, x.position, x.cfi] for x in turn.places],
                                  'links': [n for n in range(1, len(turn.places) + 1)
                                            if f'bookai:cite/0/{n}' in p.chat.toHtml()]}
            if shots:
                w.grab().save(os.path.join(shots, 'discussion-grounded.png'))
            report.write()
            if shots and report['grounded']['links']:  # the first passage linked under the answer, shown
                from qt.core import QUrl
                QTimer.singleShot(50, lambda: grab_modal('citation', settings_by_menu))
                return w.panel.chat.on_link(QUrl(f'bookai:cite/0/{report["grounded"]["links"][0]}'))
            settings_by_menu()
        QTimer.singleShot(50, answered)

    def grab_modal(name, then):
        modal(report, name, then, shot=os.path.join(shots, name + '.png') if shots else None)

    def settings_by_menu():
        QTimer.singleShot(50, lambda: grab_modal('settings_from_menu', customize))
        ac.show_settings()

    def customize():
        from calibre.customize.ui import find_plugin
        QTimer.singleShot(50, lambda: grab_modal('settings_from_preferences', done))
        find_plugin('Book AI').do_user_config(gui)

    def done():
        report.write()
        w.close()
        gui.quit(confirm_quit=False)

    QTimer.singleShot(50, wait)


def recap(gui):
    """The discussion window of the book titled $BOOKAI_PROBE_RECAP: Story so far, as of the place
    the viewer saved, and its answer (discussion-recap.png); then the X-Ray tab, showing what is kept
    of the book (built first when nothing is) and the entry $BOOKAI_PROBE_XRAY when set
    (discussion-xray.png)."""
    from qt.core import QTimer
    shots = os.environ.get('BOOKAI_PROBE_SHOTS', '')
    db = gui.current_db.new_api
    (book_id,) = [i for i in db.all_book_ids() if db.field_for('title', i) == os.environ['BOOKAI_PROBE_RECAP']]
    gui.library_view.select_rows([book_id], using_ids=True)
    ac = gui.iactions['Book AI']
    (discuss_action,) = [s['action'] for u, s in gui.keyboard.shortcuts.items() if u.endswith('bookai-discuss')]
    discuss_action.trigger()
    (w,) = ac.windows
    w.resize(1000, 760)
    p = w.panel

    def ready():
        return p.grounding is not None and p.recap_button is not None

    def ask():
        report['r_enabled'] = ready() and p.recap_button.isEnabled()
        if not report['r_enabled']:
            return done()
        p.recap_button.click()
        later(report, lambda: not p.streaming and bool(w.conv.turns) and p.loading is None, answered,
              timeout=report.timeout)

    def answered():
        turn = w.conv.turns[-1]
        report.update(r_answer=turn.answer, r_error=turn.error, r_chat=p.chat.toPlainText()[-3000:],
                      r_places=[[x.chapter, x.position, x.cfi] for x in turn.places])
        report.write()
        if shots:
            p.chat.verticalScrollBar().setValue(0)  # what was sent, and the recap's beginning
            w.grab().save(os.path.join(shots, 'discussion-recap.png'))
        w.tabs.setCurrentWidget(w.xray)
        later(report, lambda: w.xray.work is None and (w.xray.xray is not None or bool(w.xray.status.text())),
              build, timeout=60)

    def build():
        """What is kept of the book, shown; made first when nothing is."""
        if w.xray.xray is not None and w.xray.xray.entities:
            return xray()
        w.xray.build_button.click()
        later(report, lambda: w.xray.work is None, xray, timeout=report.timeout)

    def xray():
        if name := os.environ.get('BOOKAI_PROBE_XRAY'):
            w.xray.show_named(name)
        report.update(x_summary=w.xray.summary.text(),
                      x_shown=w.xray.entity.name if w.xray.entity is not None else '')
        QTimer.singleShot(500, shoot)

    def shoot():
        if shots:
            w.grab().save(os.path.join(shots, 'discussion-xray.png'))
        if os.environ.get('BOOKAI_PROBE_LOOKUP'):
            return lookup()
        done()

    def lookup():
        """$BOOKAI_PROBE_LOOKUP asked in the chat with the passages up to the place: the model may look
        things up; its lookups unfolded under the answer (discussion-lookups.png)."""
        w.tabs.setCurrentIndex(0)
        p.new_button.click()  # a new chat: the story so far would leave the model little room for lookups
        row = p.scope_row
        row.box.setCurrentIndex(row.box.findData('position'))
        p.question.setPlainText(os.environ['BOOKAI_PROBE_LOOKUP'])
        p.send_button.click()
        later(report, lambda: not p.streaming and bool(w.conv.turns), looked, timeout=report.timeout)

    def looked():
        turn = w.conv.turns[-1]
        report.update(l_answer=turn.answer, l_error=turn.error,
                      l_lookups=[[x.tool, x.arguments, x.summary, x.refused] for x in turn.lookups])
        report.write()
        from qt.core import QUrl
        p.chat.on_link(QUrl(f'bookai:lookups/{len(w.conv.turns) - 1}'))  # unfolded
        QTimer.singleShot(500, lookup_shot)

    def lookup_shot():
        if shots:
            bar = p.chat.verticalScrollBar()
            bar.setValue(bar.maximum())
            w.grab().save(os.path.join(shots, 'discussion-lookups.png'))
        done()

    def done():
        report.write()
        w.close()
        gui.quit(confirm_quit=False)
    # $BOOKAI_PROBE_LOOKUP_ONLY: only the lookup's question, not Story so far and the X-Ray first
    later(report, ready, lookup if os.environ.get('BOOKAI_PROBE_LOOKUP_ONLY') else ask, timeout=60)


def steps(*funcs):
    """Run funcs one after the other, each f(done) calling done() when it is over."""
    from qt.core import QTimer

    def go(i):
        if i < len(funcs):
            report.write()
            funcs[i](lambda: QTimer.singleShot(0, lambda: go(i + 1)))
    go(0)


def shown(w):
    """What a window of ours shows: the chat's text, and its conversation's answers."""
    return {'chat': w.panel.chat.toPlainText(), 'answers': [t.answer for t in w.conv.turns],
            'errors': [t.error for t in w.conv.turns]}


def features(gui):
    """Every feature of the Book AI menu, as a user reaches it, one after the other: what each
    showed goes in report['features'] (with or without a provider set up)."""
    from qt.core import QApplication, QPoint, QTimer
    seen = report['features'] = {}
    gui.library_view.select_rows([1])
    ac = gui.iactions['Book AI']
    by_name = {u.rpartition('bookai-')[2]: s['action'] for u, s in gui.keyboard.shortcuts.items() if 'bookai-' in u}

    def answered(w, then):
        later(report, lambda: not w.panel.streaming, then)

    def menu(done):
        ac.menu.popup(gui.mapToGlobal(QPoint(20, 20)))
        ac.quick_menu.popup(gui.mapToGlobal(QPoint(40, 40)))  # as when the submenu opens: filled then
        seen['menu'] = [a.text() for a in ac.menu.actions() if not a.isSeparator()]
        seen['quick_menu'] = [a.text() for a in ac.quick_menu.actions()]
        ac.quick_menu.hide()
        ac.menu.hide()
        done()

    def discuss(done):
        by_name['discuss'].trigger()
        w = ac.windows[-1]
        seen['discuss_opened'] = shown(w)
        w.panel.question.setPlainText('Who wrote this book?')
        w.panel.send_button.click()

        def preview():
            seen['discuss'] = shown(w)
            if w.panel.provider is not None:  # the dialog shows what goes where
                QTimer.singleShot(50, lambda: modal(report, 'preview', close))
            w.panel.show_preview()
            if w.panel.provider is None:
                close()

        def close():
            seen['preview_chat'] = w.panel.chat.toPlainText()
            w.close()
            done()
        answered(w, preview)

    def quick_action(i):
        def run(done):
            action = ac.quick_menu.actions()[i]  # the menu is filled anew each time it opens
            name = 'quick: ' + action.text()
            action.trigger()
            w = ac.windows[-1]

            def close():
                seen[name] = shown(w)
                w.close()
                done()
            answered(w, close)
        return run

    def read_next(done):
        by_name['read-next'].trigger()
        w = ac.windows[-1]

        def close():
            seen['read_next'] = shown(w)
            w.close()
            done()
        answered(w, close)

    def ask_library(done):
        by_name['ask-library'].trigger()
        w = ac.windows[-1]
        w.panel.question.setPlainText('How do I convert an ebook to another format?')
        w.panel.send_button.click()

        def close():
            seen['ask_library'] = shown(w)
            w.close()
            done()
        answered(w, close)

    def history(done):
        by_name['history'].trigger()
        w = ac.windows[-1]
        seen['history'] = {'title': w.windowTitle(), 'count': w.list.topLevelItemCount(), 'chat': w.notice.text()}
        w.close()
        done()

    def summaries(done):  # the selected book's chapter summaries: said in a dialog, in words
        QTimer.singleShot(50, lambda: modal(seen, 'summaries', done, record=lambda d: d.msg.text()))
        by_name['make-summaries'].trigger()

    def fill_metadata(done):  # without a provider said in a dialog, in words; with one, its choices (closed)
        QTimer.singleShot(50, lambda: modal(seen, 'fill_metadata', done, record=lambda d: (
            d.msg.text() if hasattr(d, 'msg') else d.windowTitle())))
        by_name['fill-metadata'].trigger()

    def by_meaning(name, trigger, words=''):
        def run(done):  # the window says, in words, what it could or could not do
            from calibre_plugins.bookai.main_window import library_search_actions as lsa
            trigger()
            w = lsa.windows[-1]
            if words:
                w.words.setText(words)
                w.search()

            def close():
                seen[name] = w.status.text()
                w.close()
                done()
            later(report, lambda: w.search_button.isEnabled() and not lsa.jobs and w.status.text(), close)
        return run

    def settings(done):
        QTimer.singleShot(50, lambda: modal(report, 'settings', done))
        by_name['settings'].trigger()

    def quit(done):
        report['open_windows'] = [type(w).__name__ for w in QApplication.topLevelWidgets()
                                  if w.isVisible() and w is not gui]
        gui.quit(confirm_quit=False)

    from calibre_plugins.bookai.conversation.actions import library_actions
    steps(menu, discuss, *[quick_action(i) for i in range(len(library_actions()))], read_next, ask_library,
          history, summaries, fill_metadata,
          by_meaning('search_by_meaning', by_name['search-by-meaning'].trigger, 'a guide to calibre'),
          by_meaning('more_like_this', by_name['more-like-this'].trigger), settings, quit)


def interrupt(gui):
    """A discussion's answer streams (from a provider that answers without end); when some has
    come, calibre switches to the library $BOOKAI_PROBE_SWITCH_TO, or quits ($BOOKAI_PROBE_QUIT)
    as its Quit action does. report['quit_at']: the time of the quit."""
    import threading
    import time
    gui.library_view.select_rows([1])
    ac = gui.iactions['Book AI']
    ac.discuss()
    (w,) = ac.windows
    ac.show_history()
    report['library_id'] = w.library.library_id
    w.panel.question.setPlainText('Go on and on.')
    w.panel.send_button.click()

    def streaming():
        return w.panel.answer is not None and len(w.panel.answer.text_parts) >= 10

    def ours():
        return sorted(t.name for t in threading.enumerate() if t.name.startswith('BookAI'))

    def go():
        report['chars_before'] = len(''.join(w.panel.answer.text_parts))
        report['threads_before'] = ours()
        if os.environ.get('BOOKAI_PROBE_QUIT'):
            report['quit_at'] = time.time()
            report.write()
            return gui.quit()
        gui.library_moved(os.environ['BOOKAI_PROBE_SWITCH_TO'])
        report['status_message'] = gui.status_bar.currentMessage()
        report['windows_after'] = [type(x).__name__ for x in ac.windows if x.isVisible()]
        later(report, lambda: not ours(), switched, timeout=30)

    def switched():
        report['threads_after'] = ours()
        report['library_after'] = gui.current_db.library_id
        report['book_after'] = gui.current_db.new_api.field_for('title', 1)
        ac.show_history()  # the new library's: the conversation is not there
        h = ac.windows[-1]
        report['history_after'] = h.list.topLevelItemCount()
        h.close()
        gui.quit(confirm_quit=False)
    later(report, streaming, go)


def calibres_own_pauses():
    """calibre 6 and 8 sleep two seconds in their shutdown, plugin or not: report['calibre_paused']
    is how long calibre's GUI thread slept in it, so that a test can tell that from ours."""
    import threading
    import time
    from calibre.gui2.ui import Main
    report['calibre_paused'] = 0.0
    original_sleep, original_shutdown = time.sleep, Main.shutdown

    def sleep(seconds):
        if threading.current_thread() is threading.main_thread():
            report['calibre_paused'] += seconds
        original_sleep(seconds)

    def shutdown(self, *args, **kwargs):
        time.sleep = sleep
        try:
            return original_shutdown(self, *args, **kwargs)
        finally:
            time.sleep = original_sleep
    Main.shutdown = shutdown


def main(library):
    no_usb_scan()
    keyboard_messages()
    calibres_own_pauses()
    # calibre's own check for updates of calibre and of its plugins: off where the process is to
    # make no connection of its own (calibre has this option, not a preference, for it)
    no_check = ['--no-update-check'] if os.environ.get('BOOKAI_PROBE_NO_UPDATE_CHECK') else []
    run_main_window(report, library, probe, no_check)


main(sys.argv[-1])
