# License: GPLv3 Copyright: the Book AI developers
"""Reading calibre's Quick Start Guide EPUBs into chapters and passages, and finding
passages for a question, never past the reader's position."""

import json
import zipfile

import pytest

from calibre_plugins.bookai.grounding.extract import UnreadableBook, read_epub
from calibre_plugins.bookai.grounding.index import Index, passages
from helpers.books import quick_start_epub
from helpers.peers import peers_dir


@pytest.fixture(scope='module')
def guide():
    return read_epub(quick_start_epub())


def test_chapters_come_from_the_table_of_contents(guide):
    titles = [c.title for c in guide.chapters]
    assert titles[:4] == ['Calibre Quick Start Guide', 'Table of Contents', 'Introduction', 'Installing calibre']
    assert 'Task 2: Conversion' in titles
    starts = [c.start for c in guide.chapters]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)


def test_paragraphs_and_positions(guide):
    assert len(guide.paragraphs) > 100
    texts = [p.text for p in guide.paragraphs]
    assert any('John Schember' in t for t in texts)
    for a, b in zip(guide.paragraphs, guide.paragraphs[1:]):
        assert b.start == a.start + len(a.text) + 1 and b.chapter >= a.chapter
    assert guide.fraction(guide.length) == 1.0
    intro = next(p for p in guide.paragraphs if guide.chapters[p.chapter].title == 'Introduction')
    assert guide.chapter_at(intro.start).title == 'Introduction'


@pytest.mark.parametrize('lang', ['deu', 'fra'])
def test_other_languages(lang):
    book = read_epub(quick_start_epub(lang))
    assert len(book.chapters) > 10 and book.length > 10_000


def test_passages_stay_within_chapters(guide):
    ps = passages(guide)
    assert ps and all(len(p.text.split()) <= 400 for p in ps)
    for p in ps:
        assert guide.chapter_at(p.start) == guide.chapters[p.chapter]
    assert [p.number for p in ps] == list(range(len(ps)))


def test_search_finds_the_chapter_that_answers(guide):
    index = Index(passages(guide))
    (best, *rest) = index.search('How do I convert an ebook to another format?', k=3)
    assert 'Conversion' in guide.chapters[best.chapter].title, guide.chapters[best.chapter].title
    assert index.search('zzzz qqqq') == []


def test_nothing_after_the_readers_position(guide):
    index = Index(passages(guide))
    position = guide.length // 3
    found = index.search('conversion format library metadata news', k=50, until=position)
    assert found and all(p.end <= position for p in found)
    assert any(p.end > position for p in index.search('conversion format library metadata news', k=50))


def test_a_file_that_is_not_an_epub_is_said_so(tmp_path):
    bad = tmp_path / 'bad.epub'
    bad.write_bytes(b'not a zip')
    with pytest.raises(UnreadableBook) as e:
        read_epub(bad)
    assert 'could not be read as an EPUB' in str(e.value)
    empty = tmp_path / 'empty.epub'
    with zipfile.ZipFile(empty, 'w') as zf:
        zf.writestr('mimetype', 'application/epub+zip')
    with pytest.raises(UnreadableBook):
        read_epub(empty)


def test_deflate64_is_said_in_words_when_it_cannot_be_read():
    """The fixture: the Quick Start Guide zipped with 7z -mm=Deflate64. calibre's Python has no
    Deflate64 here (zipfile-deflate64 is not installed on these hosts)."""
    from pathlib import Path
    fixture = Path(__file__).parent / 'fixtures' / 'guide-deflate64.epub'
    with pytest.raises(ImportError):
        import zipfile_deflate64  # noqa: F401
    with pytest.raises(UnreadableBook) as e:
        read_epub(fixture)
    message = str(e.value)
    assert 'guide-deflate64.epub' in message and 'META-INF/container.xml' in message and 'Deflate64' in message


def test_deflate64_is_read_where_calibres_python_has_the_package(host, sandbox, plugin_zip):
    """The same fixture, read by calibre with zipfile-deflate64 on its path (dev/peers.py builds it
    for bookworm's Python; the chroot hosts have no compiler to build it): the same book as the
    Quick Start Guide itself. Where calibre cannot import it, the test above holds instead."""
    from pathlib import Path
    package = peers_dir() / 'deflate64' / 'py311'
    if host != 'bookworm':  # no package for this host's Python: calibre cannot import it there
        r = sandbox.debug('import zipfile_deflate64')
        assert r.returncode != 0 and 'zipfile_deflate64' in r.stderr + r.stdout, r
        return
    assert package.is_dir(), f'dev/peers.py setup deflate64 makes {package}'
    sandbox.install(plugin_zip)
    fixture = Path(__file__).parent / 'fixtures' / 'guide-deflate64.epub'
    code = ('import json, calibre.customize.ui; from calibre_plugins.bookai.grounding.extract import read_epub; '
            f'b = read_epub({str(fixture)!r}); '
            'print(json.dumps([[c.title for c in b.chapters], b.length, b.paragraphs[5].text]))')
    r = sandbox.debug(code, env={'PYTHONPATH': str(package)})
    assert r.returncode == 0, r
    titles, length, text = json.loads(r.stdout.strip().splitlines()[-1])
    guide = read_epub(quick_start_epub())
    assert titles == [c.title for c in guide.chapters] and length == guide.length
    assert text == guide.paragraphs[5].text
