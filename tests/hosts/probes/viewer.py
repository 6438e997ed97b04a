# License: GPLv3 Copyright: the Book AI developers
"""Open a book in calibre's real E-book viewer headless, report, and close it.

    calibre-debug -e viewer.py BOOK

Writes a JSON report to $BOOKAI_PROBE_OUT and, if $BOOKAI_PROBE_SCREENSHOT is
set, a screenshot once the book's first page has rendered.
"""

import json
import os
import sys
import threading

OUT = os.environ['BOOKAI_PROBE_OUT']
SCREENSHOT = os.environ.get('BOOKAI_PROBE_SCREENSHOT')
report = {'loaded': None, 'rendered': False, 'timeout': False}


def write_report():
    with open(OUT, 'w') as f:
        json.dump(report, f, indent=2)


def on_timeout():
    report['timeout'] = True
    write_report()
    os._exit(3)


def main(book):
    timer = threading.Timer(float(os.environ.get('BOOKAI_PROBE_TIMEOUT', '120')), on_timeout)
    timer.daemon = True
    timer.start()
    from qt.core import QTimer
    from calibre.gui2.viewer import main as viewer_main
    from calibre.gui2.viewer.ui import EbookViewer
    original = EbookViewer.load_finished

    def finish(viewer):
        if SCREENSHOT:
            report['screenshot'] = viewer.grab().save(SCREENSHOT)
        write_report()
        viewer.close()

    def rendered(viewer, *args):
        if not report['rendered']:
            report['rendered'] = True
            QTimer.singleShot(1000, lambda: finish(viewer))

    def load_finished(self, ok, data):
        report['loaded'] = bool(ok)
        self.resize(1100, 750)
        self.web_view.content_file_changed.connect(lambda *a: rendered(self, *a))
        ans = original(self, ok, data)
        if not ok:
            write_report()
            self.close()
        return ans

    EbookViewer.load_finished = load_finished
    ret = viewer_main.main(['ebook-viewer', book])
    report['exit_code'] = ret
    write_report()
    timer.cancel()


main(sys.argv[-1])
