# License: GPLv3 Copyright: the Book AI developers
"""Books for the tests: calibre's Quick Start Guide, which Debian's calibre ships, and small
EPUBs a test makes (its chapters' XHTML, its container and package, or damaged ones)."""

import zipfile
from pathlib import Path


def quick_start_epub(lang: str = 'eng') -> Path:
    """calibre's Quick Start Guide, a real EPUB that Debian's calibre ships."""
    for base in ('/usr/share/calibre/quick_start', '/usr/lib/calibre/resources/quick_start'):
        p = Path(base) / f'{lang}.epub'
        if p.exists():
            return p
    raise FileNotFoundError(f'calibre\'s Quick Start Guide ({lang}.epub) is not installed')


def library_epub(library: Path) -> Path:
    """The EPUB file of the library's first book, as calibre stores it."""
    return min(library.rglob('*.epub'))


# A small EPUB made by a test: its container, its chapters' XHTML, its package.
CONTAINER = ('<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
             '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
             '</rootfiles></container>')
XHTML = '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title>' \
        '</head><body>{body}</body></html>'


def opf(chapters: list) -> str:
    """The package document of an EPUB of these chapters, in order."""
    items = ''.join(f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
                    for i in range(len(chapters)))
    refs = ''.join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    return (f'<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0">'
            f'<metadata/><manifest>{items}</manifest><spine>{refs}</spine></package>')


def make_epub(path: Path, chapters: list, container: str = CONTAINER, package: str | None = None,
              method: int = zipfile.ZIP_DEFLATED) -> Path:
    """An EPUB of chapters: each an XHTML body (str), or bytes used as the whole file."""
    with zipfile.ZipFile(path, 'w', method) as zf:
        zf.writestr('mimetype', 'application/epub+zip', compress_type=zipfile.ZIP_STORED)
        zf.writestr('META-INF/container.xml', container)
        zf.writestr('OEBPS/content.opf', package if package is not None else opf(chapters))
        for i, body in enumerate(chapters):
            zf.writestr(f'OEBPS/c{i}.xhtml', body if isinstance(body, bytes) else XHTML.format(body=body))
    return path
