# License: GPLv3 Copyright: the Book AI developers
"""Hostile and broken book files, fuzzed with hypothesis (derandomised, as tests/core/test_fuzz.py):
EPUBs as mutated zips, EPUBs whose XHTML, package and container are mutated, arbitrary
bytes; and a few mutated files of each format read through calibre's conversion
(formats.CONVERTED_FIRST). The only allowed outcomes are a Book and an UnreadableBook with
a sentence; never another exception, never a hang (an alarm guards each example, a guard
against hangs, not a measure of speed), and resident memory stays under a generous bound.
"""

import io
import signal
import zipfile

import pytest

from helpers.fuzzing import fuzz, mutate  # first: it points hypothesis at its cache
from hypothesis import given, strategies as st
from helpers.books import CONTAINER, XHTML, make_epub, opf
from helpers.memory import MB, resident
from helpers.sandbox import Sandbox

from calibre_plugins.bookai.grounding.extract import Book, UnreadableBook, read_epub
from calibre_plugins.bookai.grounding.formats import CONVERTED_FIRST, read_book

MEMORY_BOUND = 300 * MB  # the most resident memory may grow over a whole test
EPUB_GUARD = 10          # seconds one EPUB may take before it counts as a hang
CONVERSION_GUARD = 90    # seconds one conversion may take
CONVERTED_EXAMPLES = 6   # mutated files per converted format: a conversion takes a while

CHAPTERS = ['<h1>One</h1><p>Line one<br/>line two, <em>with</em> a <a href="c1.xhtml#x">link</a>.</p>'
            '<div><p>Nested</p>tail text<div>deeper <span>still</span></div></div><table><tr><td>a</td>'
            '<td>b</td></tr></table><ul><li>item</li></ul><script>x()</script>',
            '<section><h2 id="x">Two</h2><p>Second chapter &amp; more.</p><pre>code\nblock</pre></section>']
NAV = ('<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">'
       '<body><nav epub:type="toc"><ol><li><a href="c0.xhtml">One</a></li><li><a href="c1.xhtml">Two</a></li>'
       '</ol></nav></body></html>')


class Hang(BaseException):
    """Not an Exception: no `except Exception` in the code under test can swallow it."""


def guarded(seconds, fn, *args):
    def alarm(signum, frame):
        raise Hang(f'no result after {seconds} seconds')
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def outcome(fn, *args, seconds=EPUB_GUARD):
    """A Book, or the UnreadableBook raised; anything else fails the test."""
    try:
        book = guarded(seconds, fn, *args)
    except UnreadableBook as e:
        message = str(e)
        assert message.strip() and 'Traceback' not in message and len(message.split()) >= 4, message
        return e
    assert isinstance(book, Book)
    assert all(isinstance(p.text, str) and p.text for p in book.paragraphs)
    return book


def members():
    """The files of a small, well-formed EPUB, with a table of contents: (name, bytes)."""
    package = opf(CHAPTERS).replace('<manifest>', '<manifest><item id="nav" href="nav.xhtml" properties="nav" '
                                    'media-type="application/xhtml+xml"/>')
    return [('mimetype', b'application/epub+zip'), ('META-INF/container.xml', CONTAINER.encode()),
            ('OEBPS/content.opf', package.encode()), ('OEBPS/nav.xhtml', NAV.encode())] + [
        (f'OEBPS/c{i}.xhtml', XHTML.format(body=body).encode()) for i, body in enumerate(CHAPTERS)]


def zipped(files, method=zipfile.ZIP_DEFLATED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w', method) as zf:
        for name, data in files:
            zf.writestr(name, data)
    return buf.getvalue()


@st.composite
def mutated(draw, data, hostile=(b'<', b'>', b'</p>', b'<br/>', b'<div>' * 50, b'&amp;', b'&bogus;', b'\x00',
                                 b']]>', b'<!DOCTYPE x [<!ENTITY a "aaaa">]>', b'\xff\xfe', b'PK\x03\x04',
                                 b'<!DOCTYPE x [<!ENTITY b "bbbb"><!ENTITY a "&b;&b;&b;&b;&b;&b;&b;&b;">]>',
                                 b' title="&a;&a;&a;&a;"', b' a="1" b="2" c="3"', b'<p/>' * 200)):
    """data with a few bit flips, truncations, duplications, deletions and insertions."""
    return mutate(draw, data, st.sampled_from(hostile) | st.binary(max_size=20), least=1)


@pytest.fixture(scope='module')
def baseline():
    return resident()


def read_bytes(tmp_path, data, name='fuzz.epub'):
    path = tmp_path / name
    path.write_bytes(data)
    return outcome(read_epub, path)


def test_the_well_formed_book_reads(tmp_path):
    book = read_bytes(tmp_path, zipped(members()))
    assert isinstance(book, Book) and [c.title for c in book.chapters] == ['One', 'Two']
    assert 'Line one line two, with a link.' in [p.text for p in book.paragraphs]


@fuzz(600)
@given(data=st.data())
def test_mutated_epub_zips(tmp_path, baseline, data):
    method = data.draw(st.sampled_from((zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2,
                                        zipfile.ZIP_LZMA)))
    read_bytes(tmp_path, data.draw(mutated(zipped(members(), method))))
    assert resident() - baseline < MEMORY_BOUND


@fuzz(600)
@given(data=st.data())
def test_mutated_xhtml_package_and_container(tmp_path, baseline, data):
    files = members()
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(1, len(files) - 1))
        name, content = files[i]
        files[i] = (name, data.draw(mutated(content)))
    read_bytes(tmp_path, zipped(files))
    assert resident() - baseline < MEMORY_BOUND


@fuzz(300)
@given(data=st.binary(max_size=4000) | st.binary(max_size=200).map(lambda b: b'PK\x03\x04' + b))
def test_arbitrary_bytes(tmp_path, data):
    assert isinstance(read_bytes(tmp_path, data), UnreadableBook)


# the formats read through calibre's conversion: each made once from a small book by
# ebook-convert (AZW is MOBI by another name; calibre writes no ODT, so one is made here)
MADE_AS = {'AZW': 'mobi'}


def odt():
    content = ('<?xml version="1.0" encoding="UTF-8"?><office:document-content '
               'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
               'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2"><office:body>'
               '<office:text><text:h text:outline-level="1">One</text:h><text:p>Line one<text:line-break/>line two.'
               '</text:p></office:text></office:body></office:document-content>')
    manifest = ('<?xml version="1.0" encoding="UTF-8"?><manifest:manifest '
                'xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0">'
                '<manifest:file-entry manifest:full-path="/" '
                'manifest:media-type="application/vnd.oasis.opendocument.text"/>'
                '<manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
                '</manifest:manifest>')
    meta = ('<?xml version="1.0" encoding="UTF-8"?><office:document-meta '
            'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
            'xmlns:dc="http://purl.org/dc/elements/1.1/" office:version="1.2"><office:meta><dc:title>Sample'
            '</dc:title></office:meta></office:document-meta>')
    return zipped([('mimetype', b'application/vnd.oasis.opendocument.text'), ('content.xml', content.encode()),
                   ('meta.xml', meta.encode()), ('META-INF/manifest.xml', manifest.encode())], zipfile.ZIP_STORED)


@pytest.fixture(scope='module')
def samples(tmp_path_factory):
    """{format: the bytes of a small book in it}."""
    folder = tmp_path_factory.mktemp('formats')
    source = make_epub(folder / 'source.epub', CHAPTERS)
    sandbox = Sandbox(folder / 'sandbox')
    made = {'ODT': odt()}
    for fmt in CONVERTED_FIRST:
        if fmt in made:
            continue
        ext = MADE_AS.get(fmt, fmt.lower())
        made[fmt] = sandbox.convert(source, folder / f'sample.{ext}').read_bytes()
    return made


@pytest.mark.parametrize('fmt', CONVERTED_FIRST)
def test_mutated_files_of_each_converted_format(fmt, samples, tmp_path, baseline):
    original = samples[fmt]
    book = outcome(read_book, write(tmp_path, fmt, 'original', original), fmt, tmp_path, seconds=CONVERSION_GUARD)
    assert isinstance(book, Book) and book.paragraphs, book

    @fuzz(CONVERTED_EXAMPLES)
    @given(data=mutated(original) | st.binary(max_size=600))
    def run(data):
        outcome(read_book, write(tmp_path, fmt, 'mutated', data), fmt, tmp_path, seconds=CONVERSION_GUARD)
        assert resident() - baseline < MEMORY_BOUND
    run()


def write(folder, fmt, stem, data):
    path = folder / f'{stem}.{fmt.lower()}'
    path.write_bytes(data)
    return path
