# License: GPLv3 Copyright: the Book AI developers
"""A book's text with its structure: chapters (from the table of contents, else the
spine) and paragraphs, each with its position in the book as a fraction of all its
text, the same measure the viewer's reading position uses.

EPUB and KEPUB are read directly (a zip of XHTML files). Other formats go through
calibre's conversion first (later: as a calibre job).
"""

import posixpath
import re
import zipfile
from dataclasses import dataclass
from urllib.parse import unquote, urldefrag

load_translations()

BLOCKS = frozenset('p h1 h2 h3 h4 h5 h6 li blockquote pre dt dd td th figcaption caption'.split())
CONTAINERS = frozenset('div section article aside body main header footer nav'.split())
OPF_NS = 'http://www.idpf.org/2007/opf'
NCX_NS = 'http://www.daisy.org/z3986/2005/ncx/'
XHTML_NS = 'http://www.w3.org/1999/xhtml'
EPUB_NS = 'http://www.idpf.org/2007/ops'


class UnreadableBook(ValueError):
    """A book that cannot be read, with why in words."""


@dataclass(frozen=True)
class Paragraph:
    chapter: int        # index into Book.chapters
    start: int          # character offset in the book's text
    text: str
    path: tuple = ()    # where its element is, as the E-book viewer's CFI steps: (spine, 2, 4, ...)


@dataclass(frozen=True)
class Chapter:
    title: str
    start: int          # character offset of its first paragraph


@dataclass
class Book:
    chapters: list
    paragraphs: list

    @property
    def length(self):
        last = self.paragraphs[-1] if self.paragraphs else None
        return last.start + len(last.text) if last else 0

    def fraction(self, offset):
        return offset / self.length if self.length else 0.0

    def offset_of_cfi(self, cfi):
        """The character offset of a place the E-book viewer gave as a CFI (its reading
        position, say "epubcfi(/8/2/4/12/2/1:52)"), or None when it is not one."""
        steps, char = parse_cfi(cfi)
        if not steps:
            return None
        before = [p for p in self.paragraphs if p.path and p.path <= steps]
        if not before:
            later = next((p for p in self.paragraphs if p.path and p.path[0] >= steps[0]), None)
            return later.start if later else None
        p = before[-1]
        inside = steps[:len(p.path)] == p.path
        return p.start + (min(char, len(p.text)) if inside else len(p.text))

    def cfi_at(self, offset):
        """A CFI for the paragraph holding offset, for the E-book viewer to go to."""
        p = next((p for p in reversed(self.paragraphs) if p.start <= offset), None)
        return 'epubcfi(/' + '/'.join(map(str, p.path)) + ')' if p is not None and p.path else None

    def chapter_at(self, offset):
        """The chapter holding offset (the last one starting at or before it)."""
        found = 0
        for i, ch in enumerate(self.chapters):
            if ch.start <= offset:
                found = i
        return self.chapters[found] if self.chapters else None


CFI = re.compile(r'^epubcfi\((/[^)]*)\)$')


def parse_cfi(cfi):
    """The element steps of a CFI as a tuple of ints, and the character offset at its end
    (0 when none). Id assertions ([id]) and spatial offsets (@x:y) are dropped; text-node
    steps (odd numbers) end the element path."""
    m = CFI.match((cfi or '').strip())
    if not m:
        return (), 0
    steps, char = [], 0
    for part in m.group(1).replace('!', '').split('/')[1:]:
        part = re.sub(r'\[[^\]]*\]', '', part).split('@')[0]
        num, _sep, offset = part.partition(':')
        if not num.isdigit():
            return (), 0
        if int(num) % 2:
            char = int(offset) if offset.isdigit() else 0
            break
        steps.append(int(num))
    return tuple(steps), char


DEFLATE64 = 9  # the zip compression method some Windows tools use, which Python's zipfile cannot read
METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}


def read_epub(path):
    """The Book in an EPUB (or KEPUB) file. Raises UnreadableBook."""
    try:
        with zipfile.ZipFile(path) as zf:
            check_methods(zf, path)
            return EpubReader(zf).book()
    except UnreadableBook:
        raise
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, NotImplementedError) as e:
        raise UnreadableBook(_('{path} could not be read as an EPUB: {error}').format(path=path, error=e)) from None


def check_methods(zf, path):
    """Deflate64 members are read with the zipfile-deflate64 package where calibre's Python has
    it; otherwise, and for any other unknown method, say which file and why."""
    odd = [i for i in zf.infolist() if i.compress_type not in METHODS]
    if not odd:
        return
    if all(i.compress_type == DEFLATE64 for i in odd):
        try:
            import zipfile_deflate64  # noqa: F401 (teaches zipfile Deflate64 when it is there)
            return
        except ImportError:
            pass
    first = odd[0]
    method = 'Deflate64' if first.compress_type == DEFLATE64 else str(first.compress_type)
    raise UnreadableBook(_('{path} could not be read: its file {member} is compressed with {method}, which this '
                           'calibre cannot unpack.').format(path=path, member=first.filename, method=method))


class EpubReader:

    def __init__(self, zf):
        self.zf = zf

    def xml(self, name):
        from lxml import etree
        return etree.fromstring(self.zf.read(name), parser=etree.XMLParser(recover=True, resolve_entities=False,
                                                                          no_network=True, huge_tree=True))

    def book(self):
        container = self.xml('META-INF/container.xml')
        opf_name = container.xpath('//*[local-name()="rootfile"]/@full-path')[0]
        opf = self.xml(opf_name)
        base = posixpath.dirname(opf_name)
        manifest = {}
        for item in opf.xpath('//*[local-name()="manifest"]/*[local-name()="item"]'):
            manifest[item.get('id')] = (posixpath.normpath(posixpath.join(base, unquote(item.get('href', '')))),
                                        item.get('media-type', ''), item.get('properties', '') or '')
        # numbered as the viewer numbers them in its CFIs: every spine item, from 1
        spine = [(n, manifest[i][0]) for n, i in enumerate(
            (i for i in opf.xpath('//*[local-name()="spine"]/*[local-name()="itemref"]/@idref') if i in manifest), 1)
            if 'html' in manifest[i][1]]
        titles = self.toc_titles(opf, manifest)
        chapters, paragraphs = [], []
        offset = 0
        for number, name in spine:
            try:
                root = self.xml(name)
            except KeyError:
                continue
            blocks = list(block_texts(root, (2 * number, 2)))
            if not blocks:
                continue
            title = titles.get(name)
            if title or not chapters:
                chapters.append(Chapter(title or blocks[0][0][:80], offset))
            for text, path in blocks:
                paragraphs.append(Paragraph(len(chapters) - 1, offset, text, path))
                offset += len(text) + 1
        return Book(chapters, paragraphs)

    def toc_titles(self, opf, manifest):
        """{file name: title of the first table-of-contents entry pointing into it}."""
        nav = next((href for href, mt, props in manifest.values() if 'nav' in props.split()), None)
        ncx_id = (opf.xpath('//*[local-name()="spine"]/@toc') or [''])[0]
        entries = []
        if nav:
            root = self.xml(nav)
            for a in root.xpath('//*[local-name()="nav"][@*[local-name()="type"]="toc"]//*[local-name()="a"]'):
                entries.append((posixpath.dirname(nav), a.get('href', ''), ' '.join(''.join(a.itertext()).split())))
        elif ncx_id in manifest:
            ncx = manifest[ncx_id][0]
            root = self.xml(ncx)
            for point in root.xpath('//*[local-name()="navPoint"]'):
                label = ' '.join(''.join(point.xpath('./*[local-name()="navLabel"]//text()')).split())
                src = (point.xpath('./*[local-name()="content"]/@src') or [''])[0]
                entries.append((posixpath.dirname(ncx), src, label))
        titles = {}
        for base, href, label in entries:
            name = posixpath.normpath(posixpath.join(base, unquote(urldefrag(href)[0])))
            if label and name not in titles:
                titles[name] = label
        return titles


def block_texts(root, path=()):
    """(text, CFI steps of its element) for each paragraph-like block of an XHTML document,
    in order; path: the steps of the document's root element."""
    for step, el in element_children(root):
        if local(el.tag) == 'body':
            yield from walk(el, path + (step,))
            return


def element_children(el):
    """(CFI step, child) for each child element: 2, 4, 6, ... (comments and the like do not count)."""
    return ((2 * (i + 1), c) for i, c in enumerate(c for c in el if isinstance(c.tag, str)))


def local(tag):
    return tag.rpartition('}')[2].lower() if isinstance(tag, str) else ''


def walk(el, path):
    tag = local(el.tag)
    if tag in ('script', 'style', 'head'):
        return
    if tag in BLOCKS or (tag in CONTAINERS and not any(local(c.tag) in BLOCKS | CONTAINERS for c in el)):
        text = ' '.join(''.join(el.itertext()).split())
        if text:
            yield text, path
        return
    if el.text and el.text.strip() and tag in CONTAINERS:
        yield ' '.join(el.text.split()), path
    n = 0
    for child in el:
        if isinstance(child.tag, str):
            n += 1
            yield from walk(child, path + (2 * n,))
        if child.tail and child.tail.strip() and tag in CONTAINERS:
            yield ' '.join(child.tail.split()), path
