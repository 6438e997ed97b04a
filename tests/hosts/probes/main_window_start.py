# License: GPLv3 Copyright: the Book AI developers
"""calibre's real main window started for a probe (a script under calibre-debug -e, which
imports this as it imports report.py): the welcome wizard skipped, the probe called 1.5 s after
the window is up, calibre's exit code into the report."""


def no_usb_scan():
    # A sandbox has no /sys/bus/usb: calibre's device scanner would print a
    # traceback of its own on every start. There are no devices to find here.
    from calibre.devices.scanner import DeviceScanner
    DeviceScanner.scan = lambda self: setattr(self, 'devices', [])


def run_main_window(report, library, probe, options=()):
    """Start report's watchdog, then calibre's main window on library (with calibre's command line
    options), 1600x800; report['started'] once it is up, probe(gui) 1.5 s later; returns when
    calibre has quit, its exit code written into the report."""
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
    report.finish(gui_main.main(['calibre', '--with-library', library] + list(options)))
