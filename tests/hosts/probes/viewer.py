# License: GPLv3 Copyright: the Book AI developers
"""Open a book in calibre's real E-book viewer headless, report, and close it.

    calibre-debug -e viewer.py BOOK

Writes a JSON report to $BOOKAI_PROBE_OUT and, if $BOOKAI_PROBE_SCREENSHOT is
set, a screenshot once the book's first page has rendered.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import Report  # noqa: E402

report = Report(loaded=None, rendered=False)


def main(book):
    report.start()
    from qt.core import QTimer
    from calibre.gui2.viewer import main as viewer_main
    from calibre.gui2.viewer.ui import EbookViewer
    original = EbookViewer.load_finished

    def finish(viewer):
        if report.screenshot:
            report['screenshot'] = viewer.grab().save(report.screenshot)
        report.write()
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
            report.write()
            self.close()
        return ans

    EbookViewer.load_finished = load_finished
    report.finish(viewer_main.main(['ebook-viewer', book]))


main(sys.argv[-1])
