# License: GPLv3 Copyright: the Book AI developers
"""calibre's real E-book viewer with the plugin installed, on a real EPUB."""

from helpers.books import library_epub
from helpers.sandbox import tracebacks


def test_viewer_opens_a_book_with_the_plugin_installed(sandbox, plugin_zip, library, artifacts):
    sandbox.install(plugin_zip)
    shot = artifacts / 'viewer.png'
    report, r = sandbox.probe('viewer', [library_epub(library)], env={'BOOKAI_PROBE_SCREENSHOT': shot})
    assert report['loaded'] and report['rendered'] and not report['timeout'], r
    assert not tracebacks(r.output), r
    # the book's first page (its cover, a picture) is painted: the middle differs from the margin
    from qt.core import QImage
    image = QImage(str(shot))
    assert not image.isNull()
    assert image.pixelColor(image.width() // 2, image.height() // 2) != image.pixelColor(2, image.height() // 2)
