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
        'menu': [a.text() for a in menu.actions()] if menu is not None else None,
        'on_main_toolbar': ac.qaction in main_bar.added_actions,
        'version': list(ac.interface_action_base_plugin.version),
    }


def probe(gui):
    from calibre.gui2 import gprefs
    report['probed'] = True
    report['iactions'] = sorted(gui.iactions)
    report['layout'] = {k: [x for x in (gprefs.get('action-layout-' + k) or ())]
                        for k in ('toolbar', 'context-menu')}
    report['book_ai'] = describe_action(gui, 'Book AI')
    if report.screenshot:
        report['screenshot'] = gui.grab().save(report.screenshot)
    report.write()
    gui.quit(confirm_quit=False)


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
