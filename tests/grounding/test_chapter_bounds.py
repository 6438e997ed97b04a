# License: GPLv3 Copyright: the Book AI developers
"""A book's structure bounded as it is read, one file at a time (issue 26, finding 8): a chapter
over a limit of one file (its size unpacked, its elements, attributes and entities, the
attributes of one tag, its depth) is left out, and only it: the reader is told which and why
(Book.skipped_note), the rest of the book is read. The crafted books of the issue (a 36 KB EPUB
of 3 million paragraphs, an 88 KB one of 7.5 million, a 1 GB chapter) are read in memory within
a few times what they unpack to, measured by the kernel's high-water mark. The same holds for
every file a reader parses (the package, the container, the table of contents), for entities
that would grow an attribute (never expanded beyond libxml2's own limits), for a spine that
names one chapter many times, and for a damaged chapter among whole ones."""

import zipfile

import pytest

from calibre_plugins.bookai.grounding import extract
from calibre_plugins.bookai.grounding.extract import UnreadableBook, read_epub
from helpers.books import CONTAINER, XHTML, make_epub, opf
from helpers.peak import MB, peak_growth

GOOD = '<p>The good chapter.</p>'
NOTE = 'Some chapters of this book could not be read and were left out: '
NODES = (f'more than {extract.MAX_NODES:,} elements, attributes and entities, the most Book AI reads in one '
         'file')


def streamed_epub(path, chapters, method=zipfile.ZIP_DEFLATED):
    """An EPUB whose chapters are (head, unit, count, tail): head, then unit count times, then
    tail, written as it goes (no chapter is ever whole in memory here)."""
    with zipfile.ZipFile(path, 'w', method, compresslevel=9) as zf:
        zf.writestr('mimetype', 'application/epub+zip', compress_type=zipfile.ZIP_STORED)
        zf.writestr('META-INF/container.xml', CONTAINER)
        zf.writestr('OEBPS/content.opf', opf(['x'] * len(chapters)))
        for i, (head, unit, count, tail) in enumerate(chapters):
            info = zipfile.ZipInfo(f'OEBPS/c{i}.xhtml')
            info.compress_type = method
            with zf.open(info, 'w', force_zip64=True) as f:
                f.write(head)
                block = unit * max(1, (1 << 20) // max(len(unit), 1))
                left = count if unit else 0
                while left > 0:
                    n = min(left, len(block) // len(unit))
                    f.write(block[:n * len(unit)])
                    left -= n
                f.write(tail)
    return path


HEAD = (b'<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title>'
        b'</head><body>')
TAIL = b'</body></html>'


def good_chapter():
    return (HEAD + GOOD.encode(), b'', 0, TAIL)


def paragraphs(count, unit=b'<p>a</p>'):
    return (HEAD, unit, count, TAIL)


@pytest.mark.parametrize('count, most_kb', [(3_000_000, 40), (7_500_000, 95)])
def test_millions_of_paragraphs_leave_their_chapter_out_not_the_book(tmp_path, count, most_kb):
    path = streamed_epub(tmp_path / 'paragraphs.epub', [good_chapter(), paragraphs(count), good_chapter()])
    assert path.stat().st_size < most_kb * 1024  # the 36 KB and 88 KB
    book, growth = peak_growth(lambda: read_epub(path))
    assert not isinstance(book, Exception), book
    assert [p.text for p in book.paragraphs] == ['The good chapter.'] * 2
    assert book.skipped == ['OEBPS/c1.xhtml']
    assert book.skipped_note() == f'{NOTE}OEBPS/c1.xhtml ({NODES})'
    # the chapter is not unpacked past its limit, nor parsed: was 2.0 and 4.9 GB
    assert growth < 32 * MB, growth // MB


def test_a_chapter_at_the_limit_is_read_and_one_past_it_is_left_out(tmp_path, monkeypatch):
    monkeypatch.setattr(extract, 'MAX_NODES', 100)
    page = XHTML.format(body='').encode()
    fits = (100 - page.count(b'<') - page.count(b'=')) // 2  # <p>a</p> is two '<'
    path = make_epub(tmp_path / 'limit.epub', ['<p>a</p>' * fits, '<p>b</p>' * (fits + 1)])
    book = read_epub(path)
    assert [p.text for p in book.paragraphs] == ['a'] * fits
    assert book.skipped == ['OEBPS/c1.xhtml'] and 'more than 100 elements' in book.skipped_note()


def test_attributes_and_entities_count_as_elements(tmp_path, monkeypatch):
    monkeypatch.setattr(extract, 'MAX_NODES', 100)
    path = make_epub(tmp_path / 'attributes.epub', [GOOD, '<p ' + ' '.join(f'a{i}="v"' for i in range(200)) + '>x</p>',
                                                   '<p>' + '&amp;' * 200 + '</p>'])
    book = read_epub(path)
    assert [p.text for p in book.paragraphs] == ['The good chapter.']
    assert book.skipped == ['OEBPS/c1.xhtml', 'OEBPS/c2.xhtml'] and 'more than 100 elements' in book.skipped_note()


def test_a_tag_with_too_many_attributes_is_left_out_in_bounded_time(tmp_path):
    many = '<p ' + ' '.join(f'a{i}="v"' for i in range(500_000)) + '>x</p>'  # libxml2: minutes
    few = '<p ' + ' '.join(f'a{i}="v"' for i in range(extract.MAX_ATTRIBUTES)) + '>Few attributes.</p>'
    path = make_epub(tmp_path / 'attributes.epub', [GOOD, many, few])
    book, growth = peak_growth(lambda: read_epub(path))
    assert [p.text for p in book.paragraphs] == ['The good chapter.', 'Few attributes.']
    assert book.skipped == ['OEBPS/c1.xhtml']
    assert book.skipped_note() == (f'{NOTE}OEBPS/c1.xhtml (a tag with more than {extract.MAX_ATTRIBUTES:,} '
                                   'attributes, the most Book AI reads in one tag)')
    assert growth < 64 * MB, growth // MB


def test_a_chapter_of_a_gigabyte_leaves_only_itself_out(tmp_path):
    chapters = [good_chapter(), (HEAD + b'<p>', b' ', 1024 * MB, b'</p>' + TAIL), good_chapter()]
    path = streamed_epub(tmp_path / 'huge.epub', chapters)
    assert path.stat().st_size < 4 * MB
    book, growth = peak_growth(lambda: read_epub(path))
    assert [p.text for p in book.paragraphs] == ['The good chapter.'] * 2
    assert book.skipped_note() == (f'{NOTE}OEBPS/c1.xhtml (more than {extract.MAX_MEMBER_BYTES // MB} MB unpacked, '
                                   'the most Book AI reads of one file)')
    assert growth < 3 * extract.MAX_MEMBER_BYTES, growth // MB


def test_a_book_of_nothing_but_an_over_limit_chapter_is_unreadable_in_a_sentence(tmp_path):
    path = streamed_epub(tmp_path / 'only.epub', [paragraphs(3_000_000)])
    with pytest.raises(UnreadableBook) as e:
        read_epub(path)
    assert str(e.value) == f'{path} could not be read: none of its text could be; left out: OEBPS/c0.xhtml ({NODES}).'


def laughs(levels=9):
    """A billion laughs: entities, each ten of the one before, used in an attribute (where
    libxml2 expands them) and in text (where Book AI never has them expanded)."""
    entities = '<!ENTITY a0 "ha">' + ''.join(f'<!ENTITY a{i} "{("&a%d;" % (i - 1)) * 10}">' for i in range(1, levels))
    return (f'<?xml version="1.0"?><!DOCTYPE html [{entities}]><html xmlns="http://www.w3.org/1999/xhtml">'
            f'<body><p title="&a{levels - 1};">Laughs &a{levels - 1}; aside.</p></body></html>').encode()


def test_entities_are_never_expanded_beyond_bounds(tmp_path):
    path = make_epub(tmp_path / 'laughs.epub', [GOOD, laughs(), '<p>After.</p>'])
    book, growth = peak_growth(lambda: read_epub(path))  # with libxml2's limits off: 25 s, 400 MB, 2 GB with a9
    assert not isinstance(book, Exception), book
    texts = [p.text for p in book.paragraphs]
    assert texts[0] == 'The good chapter.' and texts[-1] == 'After.'
    assert all(len(t) < 1000 for t in texts)
    assert growth < 64 * MB, growth // MB


def test_a_huge_table_of_contents_is_not_read_and_the_chapters_are(tmp_path):
    nav = (b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops">'
           b'<body><nav epub:type="toc"><ol>' + b'<li><a href="c0.xhtml">One</a></li>' * 1_000_000 +
           b'</ol></nav></body></html>')
    package = opf([GOOD]).replace('<manifest>', '<manifest><item id="nav" href="nav.xhtml" properties="nav" '
                                  'media-type="application/xhtml+xml"/>')
    path = make_epub(tmp_path / 'nav.epub', [GOOD], package=package)
    with zipfile.ZipFile(path, 'a') as zf:
        zf.writestr('OEBPS/nav.xhtml', nav)
    book, growth = peak_growth(lambda: read_epub(path))
    assert [p.text for p in book.paragraphs] == ['The good chapter.']
    assert [c.title for c in book.chapters] == ['The good chapter.']  # named from its first line
    assert growth < 64 * MB, growth // MB


@pytest.mark.parametrize('which', ['package', 'container'])
def test_a_package_or_container_over_the_limit_is_said(tmp_path, which):
    items = ''.join(f'<item id="x{i}" href="x{i}.xhtml" media-type="application/xhtml+xml"/>' for i in range(400_000))
    package = opf([GOOD]).replace('<manifest>', '<manifest>' + items) if which == 'package' else None
    container = CONTAINER.replace('<rootfiles>', '<rootfiles>' + '<x a="b"/>' * 600_000) if which == 'container' \
        else CONTAINER
    path = make_epub(tmp_path / f'{which}.epub', [GOOD], container=container, package=package)
    member = 'OEBPS/content.opf' if which == 'package' else 'META-INF/container.xml'
    with pytest.raises(UnreadableBook) as e:
        read_epub(path)
    assert str(e.value) == f'{path} could not be read: its file {member} is over a limit ({NODES}).'


def test_a_chapter_named_many_times_in_the_spine_is_read_once(tmp_path):
    package = opf([GOOD, '<p>Two.</p>']).replace('<itemref idref="c1"/>', '<itemref idref="c1"/>' * 100_000)
    book = read_epub(make_epub(tmp_path / 'spine.epub', [GOOD, '<p>Two.</p>'], package=package))
    assert [p.text for p in book.paragraphs] == ['The good chapter.', 'Two.']


def test_a_damaged_chapter_leaves_only_itself_out(tmp_path):
    path = make_epub(tmp_path / 'crc.epub', [GOOD, '<p>' + 'Damaged. ' * 1000 + '</p>', '<p>After.</p>'],
                     method=zipfile.ZIP_STORED)
    data = bytearray(path.read_bytes())
    at = data.index(b'Damaged. Damaged.')
    data[at] ^= 0x20  # its CRC no longer matches
    path.write_bytes(bytes(data))
    book = read_epub(path)
    assert [p.text for p in book.paragraphs] == ['The good chapter.', 'After.']
    assert book.skipped_note() == f'{NOTE}OEBPS/c1.xhtml (damaged)'


def test_a_text_longer_than_libxml2_reads_is_read_whole(tmp_path):
    words = 'word ' * (3 * MB)  # 15 MB in one paragraph: over libxml2's 10 MB for one text
    book = read_epub(make_epub(tmp_path / 'long.epub', [GOOD, f'<p>{words}</p>']))
    assert [len(p.text) for p in book.paragraphs] == [len('The good chapter.'), len(words) - 1]


def test_names_are_shown_without_control_characters(tmp_path):
    package = opf([GOOD]).replace('href="c0.xhtml"', 'href="c0.xhtml"').replace(
        '</manifest>', '<item id="bad" href="ev%1B%5B31mil.xhtml" media-type="application/xhtml+xml"/></manifest>'
    ).replace('</spine>', '<itemref idref="bad"/></spine>')
    book = read_epub(make_epub(tmp_path / 'names.epub', [GOOD], package=package))
    assert book.skipped == ['OEBPS/ev\x1b[31mil.xhtml']
    assert book.skipped_note() == f'{NOTE}OEBPS/ev\\x1b[31mil.xhtml (missing)'  # shown, not obeyed
