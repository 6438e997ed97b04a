#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Make the tests' real novel, Pride and Prejudice, into an EPUB with calibre's own converter,
the same bytes each time with the same calibre (Debian 12's 6.13 made the one in git).

    python3 dev/make_test_novel.py                 # tests/books/pride-and-prejudice.epub from the text
    python3 dev/make_test_novel.py --check         # make it again elsewhere: the same bytes as in git?
    python3 dev/make_test_novel.py --from-deb DEB  # the text again, from Debian's r-cran-janeaustenr

The text (tests/books/pride-and-prejudice.txt) becomes HTML (tests/helpers/novel.py: a title
page, an <h2> per chapter, a <p> per paragraph, its _emphasis_ in italics), which ebook-convert
turns into an EPUB 3 of one file per chapter with a table of contents, the title, author and
date from an OPF of metadata. What calibre writes differently each run (the modification time
and the zip's dates and order) is then set to fixed values; nothing else is touched.
tests/grounding/test_test_novel.py reads the EPUB with Book AI's own reader and checks its
chapters against the text.
"""

import argparse
import gzip
import hashlib
import re
import struct
import subprocess
import sys
import tempfile
import zipfile
import zlib
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(PROJECT / 'tests'))
from helpers.novel import AUTHOR, AUTHOR_SORT, EPUB, PUBLISHED, SOURCE, TITLE, source_html  # noqa: E402

UUID = '5e1b3c1e-6b1f-4a43-9d1e-181301280000'  # the EPUB's identifier, fixed: calibre would make a new one
MODIFIED = '2024-01-01T00:00:00Z'
ZIP_TIME = (2024, 1, 1, 0, 0, 0)
METADATA = f'''<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf" unique-identifier="uuid_id" version="2.0">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:opf="http://www.idpf.org/2007/opf">
    <dc:identifier opf:scheme="uuid" id="uuid_id">{UUID}</dc:identifier>
    <dc:title>{TITLE}</dc:title>
    <dc:creator opf:file-as="{AUTHOR_SORT}" opf:role="aut">{AUTHOR}</dc:creator>
    <dc:date>{PUBLISHED}T00:00:00+00:00</dc:date>
    <dc:language>en</dc:language>
    <meta name="calibre:timestamp" content="{MODIFIED}"/>
  </metadata>
</package>
'''
# the options after the input and output files, as SOURCE.md gives them
OPTIONS = ['--read-metadata-from-opf', 'metadata.opf', '--chapter', '//h:h2', '--level1-toc', '//h:h2',
           '--no-default-epub-cover', '--epub-version', '3']


def make(out: Path, ebook_convert: str = 'ebook-convert') -> None:
    """The EPUB of the source text, written to out."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / 'pride-and-prejudice.html').write_text(source_html(), encoding='utf-8')
        (work / 'metadata.opf').write_text(METADATA, encoding='utf-8')
        r = subprocess.run([ebook_convert, 'pride-and-prejudice.html', 'made.epub', *OPTIONS], cwd=work,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if r.returncode:
            sys.exit(r.stdout + f'\nebook-convert failed ({r.returncode})')
        normalize(work / 'made.epub', out)


def normalize(made: Path, out: Path) -> None:
    """calibre's EPUB with its run's traces fixed: the zip's members in order of name (mimetype first,
    stored), each dated ZIP_TIME, and the package's modification time MODIFIED."""
    with zipfile.ZipFile(made) as zin, zipfile.ZipFile(out, 'w') as zout:
        names = sorted(zin.namelist(), key=lambda n: (n != 'mimetype', n))
        for name in names:
            data = zin.read(name)
            if name.endswith('.opf'):
                data = re.sub(rb'(<meta property="dcterms:modified"[^>]*>)[^<]*', rb'\g<1>' + MODIFIED.encode(), data)
            method = zipfile.ZIP_STORED if name == 'mimetype' or name.endswith('/') else zipfile.ZIP_DEFLATED
            zout.writestr(zipfile.ZipInfo(name, ZIP_TIME), data, compress_type=method, compresslevel=9)


def from_deb(deb: Path) -> str:
    """The novel's text from Debian's r-cran-janeaustenr: R's lazy-load data base, each object a
    zlib stream of R's XDR serialization; Pride and Prejudice is a character vector, a line each."""
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(['dpkg-deb', '-x', str(deb), tmp], check=True)
        data = Path(tmp, 'usr/lib/R/site-library/janeaustenr/data')
        index = unserialize(gzip.decompress((data / 'Rdata.rdx').read_bytes()))
        db = (data / 'Rdata.rdb').read_bytes()
    for offset, length in index[0]:
        size = struct.unpack('>i', db[offset:offset + 4])[0]
        raw = zlib.decompress(db[offset + 4:offset + length])
        assert len(raw) == size
        lines = unserialize(raw)
        if lines[0] == 'PRIDE AND PREJUDICE':
            return '\n'.join(lines) + '\n'
    sys.exit(f'{deb} holds no Pride and Prejudice')


def unserialize(raw: bytes) -> object:
    """R's XDR serialization, the few types the package's data uses: lists, character, logical,
    integer and double vectors (attributes read and dropped)."""
    assert raw[:2] == b'X\n', 'not R\'s XDR serialization'
    pos = 2

    def integer() -> int:
        nonlocal pos
        pos += 4
        return struct.unpack('>i', raw[pos - 4:pos])[0]

    def item() -> object:
        nonlocal pos
        flags = integer()
        kind = flags & 0xff
        if kind in (254, 255):  # NULL, a reference to a symbol read before
            return None
        if kind == 9:  # one string: -1 is NA
            n = integer()
            pos += max(n, 0)
            return None if n < 0 else raw[pos - n:pos].decode('utf-8')
        if kind == 1:  # a symbol
            return item()
        if kind == 2:  # a pairlist node: attributes, tag, value, rest
            parts = [item() for _ in range(bool(flags & 512) + bool(flags & 1024) + 2)]
            return parts[-2:]
        n = integer()
        if kind in (16, 19):  # character vector, list
            value = [item() for _ in range(n)]
        elif kind in (10, 13):  # logical, integer
            value = [integer() for _ in range(n)]
        elif kind == 14:  # double
            value = list(struct.unpack(f'>{n}d', raw[pos:pos + 8 * n]))
            pos += 8 * n
        else:
            raise ValueError(f'R type {kind} is not read here')
        if flags & 512:
            item()
        return value

    version = [integer() for _ in range(3)][0]
    if version == 3:  # the native encoding's name
        n = integer()
        pos += n
    return item()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--check', action='store_true', help='make it in a temporary folder and compare')
    parser.add_argument('--from-deb', type=Path, metavar='DEB', help='write the text from this .deb')
    parser.add_argument('--ebook-convert', default='ebook-convert')
    args = parser.parse_args()
    if args.from_deb:
        SOURCE.write_text(from_deb(args.from_deb), encoding='ascii')
        print(f'{SOURCE}: sha256 {hashlib.sha256(SOURCE.read_bytes()).hexdigest()}')
    elif args.check:
        with tempfile.TemporaryDirectory() as tmp:
            made = Path(tmp, EPUB.name)
            make(made, args.ebook_convert)
            same = made.read_bytes() == EPUB.read_bytes()
        print(f'{EPUB}: ' + ('the same bytes' if same else 'differs from what this calibre makes'))
        sys.exit(0 if same else 1)
    else:
        make(EPUB, args.ebook_convert)
        print(f'{EPUB}: {EPUB.stat().st_size:,} bytes, sha256 {hashlib.sha256(EPUB.read_bytes()).hexdigest()}')


if __name__ == '__main__':
    main()
