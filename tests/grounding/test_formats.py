# License: GPLv3 Copyright: the Book AI developers
"""Books in any format calibre reads: calibre's Quick Start Guide converted by the real
ebook-convert to AZW3, DOCX, PDF and TXT, then read back through calibre's conversion,
in this process and as the calibre job the GUI runs; and the command line on a library
book that has no EPUB."""

import time
import zipfile
from pathlib import Path

import pytest

from calibre_plugins.bookai.grounding.extract import UnreadableBook, read_epub
from calibre_plugins.bookai.grounding.formats import (
    choose_format, conversion_job, conversion_recommendations, convert_to_epub, converted_path, job_error,
    read_book)
from calibre_plugins.bookai.grounding.index import Index, passages
from helpers.books import quick_start_epub
from helpers.sandbox import Sandbox

FORMATS = ('AZW3', 'DOCX', 'PDF', 'TXT')
QUESTION = 'How do I convert books to another format?'


@pytest.fixture(scope='session')
def guide_as(tmp_path_factory):
    """{format: calibre's Quick Start Guide converted to it by ebook-convert}, made once."""
    folder = tmp_path_factory.mktemp('guide-formats')
    sandbox = Sandbox(folder / 'sandbox')
    return {fmt: sandbox.convert(quick_start_epub(), folder / f'guide.{fmt.lower()}') for fmt in FORMATS}


@pytest.mark.parametrize('formats, chosen', [
    (('PDF', 'AZW3', 'EPUB'), 'EPUB'),
    (('PDF', 'KEPUB'), 'KEPUB'),
    (('pdf', 'mobi', 'txt'), 'MOBI'),
    (('PDF', 'TXT', 'DOCX'), 'DOCX'),
    (('PDF', 'TXT'), 'TXT'),
    (('PDF', 'CBZ'), 'PDF'),
    (('LIT', 'CBZ'), 'LIT'),       # not in the list, but calibre converts it
    (('CBZ', 'CBR'), None),        # pictures only
    (('ORIGINAL_EPUB', 'JPG'), None),
    ((), None),
    (None, None),
])
def test_the_format_read_is_the_best_one_the_book_has(formats, chosen):
    assert choose_format(formats) == chosen


@pytest.mark.parametrize('fmt', ['AZW3', 'DOCX'])
def test_formats_with_structure_keep_their_chapters(guide_as, fmt, tmp_path):
    book = read_book(guide_as[fmt], fmt, tmp_path)
    titles = [c.title for c in book.chapters]
    assert len(titles) > 5 and 'Task 2: Conversion' in titles, titles
    assert any('John Schember' in p.text for p in book.paragraphs)
    assert book.length > 20_000
    best = Index(passages(book)).search(QUESTION, k=1)[0]
    assert 'Conversion' in book.chapters[best.chapter].title
    converted = Path(converted_path(tmp_path, guide_as[fmt]))  # never the name of the book's own EPUB
    assert converted.name == f'guide.{fmt.lower()}.epub' and converted.exists()


@pytest.mark.parametrize('fmt', ['PDF', 'TXT'])
def test_flat_formats_give_their_text(guide_as, fmt, tmp_path):
    book = read_book(guide_as[fmt], fmt, tmp_path)
    assert book.chapters and book.length > 20_000
    text = ' '.join(p.text for p in book.paragraphs)
    assert 'John Schember' in text and 'Conversion' in text
    assert Index(passages(book)).search(QUESTION, k=3)


def test_an_epub_is_read_directly_and_nothing_is_converted(tmp_path):
    book = read_book(quick_start_epub(), 'epub', tmp_path)
    assert book.paragraphs == read_epub(quick_start_epub()).paragraphs
    assert list(tmp_path.iterdir()) == []


def test_conversion_for_reading_draws_no_cover(guide_as, tmp_path):
    """Plain text gets a generated cover from ebook-convert; the reading conversion makes none."""
    dest = tmp_path / 'guide.epub'
    convert_to_epub(guide_as['TXT'], dest)
    names = zipfile.ZipFile(dest).namelist()
    assert not [n for n in names if 'cover' in n or 'titlepage' in n], names
    assert ('no_default_epub_cover', True) in [(name, value) for name, value, level in conversion_recommendations()]


def test_without_a_workdir_nothing_is_left_behind(guide_as, tmp_path, monkeypatch):
    import tempfile
    monkeypatch.setattr(tempfile, 'tempdir', str(tmp_path))
    book = read_book(guide_as['AZW3'], 'AZW3')
    assert book.length > 20_000 and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize('name', ['broken.azw3', 'broken.docx', 'broken.pdf'])
def test_a_broken_file_is_said_in_words(tmp_path, name):
    bad = tmp_path / name
    bad.write_bytes(bytes(range(256)) * 20)
    with pytest.raises(UnreadableBook) as e:
        read_book(bad, bad.suffix[1:].upper(), tmp_path)
    message = str(e.value)
    assert name in message and 'could not be converted for reading' in message, message
    assert 'Traceback' not in message and '\n' not in message


def run_job(server, src, dest):
    """Run the conversion job as calibre's job manager does: a ParallelJob on calibre's job server."""
    from calibre.utils.ipc.job import ParallelJob
    name, args = conversion_job(src, dest)
    job = ParallelJob(name, 'Book AI: reading a book', lambda job: None, args=args)
    server.add_job(job)
    deadline = time.monotonic() + 240
    while job.duration is None and time.monotonic() < deadline:
        time.sleep(0.1)
        job.update()
    assert job.duration is not None, 'the conversion job did not finish'
    return job


def test_the_calibre_job_converts_and_a_failed_one_says_why(guide_as, tmp_path):
    from calibre.utils.ipc.server import Server
    server = Server()
    try:
        dest = tmp_path / 'guide.epub'
        job = run_job(server, guide_as['AZW3'], dest)
        assert not job.failed, job.details
        book = read_epub(dest)
        assert 'Task 2: Conversion' in [c.title for c in book.chapters]
        bad = tmp_path / 'broken.azw3'
        bad.write_bytes(bytes(range(256)) * 20)
        job = run_job(server, bad, tmp_path / 'broken.epub')
        assert job.failed
    finally:
        server.close()
    error = job_error(bad, job.details)
    message = str(error)
    assert isinstance(error, UnreadableBook) and 'broken.azw3' in message, message
    assert 'Unknown book type' in message and 'Traceback' not in message, message


def test_a_failed_jobs_log_without_a_reason_still_says_which_file():
    message = str(job_error('/books/x.mobi', 'Killed\n'))
    assert '/books/x.mobi' in message and 'without saying why' in message
    feedback = ('Traceback (most recent call last):\n  File "x.py", line 1\ncalibre.ebooks.conversion.'
                'ConversionUserFeedBack: {"msg": "This is an <b>Amazon Topaz</b> book.", "level": "error", '
                '"det_msg": "", "title": "Cannot convert"}\n')
    assert str(job_error('/books/y.azw', feedback)).endswith('Cannot convert This is an Amazon Topaz book.')
    drm = 'Traceback (most recent call last):\n  File "x.py", line 1\ncalibre.ebooks.DRMError\n'
    assert str(job_error('/books/z.azw', drm)).endswith('it is locked with DRM.')


def test_ask_about_a_book_that_has_no_epub(sandbox, plugin_zip, guide_as):
    """The command line converts an AZW3-only book, once: the text cache keeps it, and forgets it
    when the book leaves the library."""
    sandbox.install(plugin_zip)
    lib = sandbox.root / 'library'  # book 1: the guide as AZW3 only; book 2: the guide as EPUB
    r = sandbox.run(['calibredb', '--with-library', lib, 'add', '--duplicates', guide_as['AZW3'], quick_start_epub()])
    assert r.returncode == 0, r

    def ask(book_id):
        r = sandbox.run(['calibre-debug', '-r', 'Book AI', '--', 'ask', '--library', lib, '--book', str(book_id),
                         '--prompt', QUESTION, '--scope', 'book', '--show-sent'])
        assert r.returncode == 0 and 'nothing was sent' in r.stdout, r
        return r.stdout
    shown = ask(1)
    assert '<book_passages>\n[1] (Task 2: Conversion)\n' in shown, shown
    assert 'pdftohtml' not in shown and 'InputFormatPlugin' not in shown
    (cached,) = (sandbox.cache / 'bookai' / 'text').glob('*/1.AZW3.bookai')
    written = cached.stat().st_mtime_ns
    assert ask(1) == shown and cached.stat().st_mtime_ns == written  # read from the cache
    r = sandbox.run(['calibredb', '--with-library', lib, 'remove', '--permanent', '1'])
    assert r.returncode == 0, r
    assert '<book_passages>\n[1] (' in ask(2)
    assert not cached.exists() and list(cached.parent.glob('2.EPUB.bookai'))
