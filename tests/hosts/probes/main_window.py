# License: GPLv3 Copyright: the Book AI developers
"""Start calibre's real main window headless, report what it holds, and quit.

    calibre-debug -e main_window.py LIBRARY

Writes a JSON report to $BOOKAI_PROBE_OUT and, if $BOOKAI_PROBE_SCREENSHOT is
set, a screenshot of the window there. A watchdog ends a run that hangs (a
modal error dialog, say) and says so in the report.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import Report  # noqa: E402

report = Report(started=False, probed=False)


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


def shortcuts(gui):
    """Book AI's shortcuts: the keys each got, and what else in calibre wants those keys."""
    from qt.core import QAction, QKeySequence
    fmt = QKeySequence.SequenceFormat.PortableText
    ours = {u: s for u, s in gui.keyboard.shortcuts.items() if 'bookai-' in u}
    result = {}
    for unique, sc in ours.items():
        keys = [k.toString(fmt) for k in gui.keyboard.keys_map.get(unique, ())]
        defaults = [QKeySequence(k, fmt).toString(fmt) for k in sc['default_keys']]
        others = sorted(s['name'] for u, s in gui.keyboard.shortcuts.items() if u != unique and any(
            QKeySequence(k, fmt).toString(fmt) in defaults for k in s['default_keys']))
        ours_actions = {s['action'] for s in ours.values()}
        others += sorted({a.text() for a in gui.findChildren(QAction) if a not in ours_actions and any(
            k.toString(fmt) in defaults for k in a.shortcuts())})
        result[unique.rpartition('bookai-')[2]] = {'name': sc['name'], 'defaults': defaults, 'keys': keys,
                                                   'also_wanted_by': others}
    return result


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
    if report.screenshot:
        report['screenshot'] = gui.grab().save(report.screenshot)
    report.write()
    if os.environ.get('BOOKAI_PROBE_DISCUSS'):
        return discuss(gui)
    gui.quit(confirm_quit=False)


def discuss(gui):
    """Select the first book, press the Discuss shortcut's action, run a quick action, wait for
    the answer, open the settings both ways; screenshots of each."""
    from qt.core import QApplication, QTimer
    shots = os.environ.get('BOOKAI_PROBE_SHOTS', '')
    gui.library_view.select_rows([1])
    ac = gui.iactions['Book AI']
    (discuss_action,) = [s['action'] for u, s in gui.keyboard.shortcuts.items() if u.endswith('bookai-discuss')]
    discuss_action.trigger()
    (w,) = ac.windows
    report['window_title'] = w.windowTitle()
    report['quick_actions'] = [b.text() for b in w.action_buttons]
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
            settings_by_menu()
        QTimer.singleShot(50, answered)

    def grab_modal(name, then):
        d = QApplication.activeModalWidget()
        if d is None:
            return QTimer.singleShot(50, lambda: grab_modal(name, then))
        report[name] = d.windowTitle()
        if shots:
            d.grab().save(os.path.join(shots, name + '.png'))
        d.reject()
        QTimer.singleShot(0, then)

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


def no_usb_scan():
    # A sandbox has no /sys/bus/usb: calibre's device scanner would print a
    # traceback of its own on every start. There are no devices to find here.
    from calibre.devices.scanner import DeviceScanner
    DeviceScanner.scan = lambda self: setattr(self, 'devices', [])


def main(library):
    no_usb_scan()
    report.start()
    from calibre.utils.config import dynamic
    dynamic.set('welcome_wizard_was_run', True)
    from qt.core import QTimer
    from calibre.gui2 import main as gui_main
    from calibre.gui2.ui import Main
    original = Main.initialize

    def initialize(self, *args, **kwargs):
        ans = original(self, *args, **kwargs)
        report['started'] = True
        self.resize(1600, 800)
        QTimer.singleShot(1500, lambda: probe(self))
        return ans

    Main.initialize = initialize
    report.finish(gui_main.main(['calibre', '--with-library', library]))


main(sys.argv[-1])
