# License: GPLv3 Copyright: the Book AI developers
"""A book's text with its structure: chapters (from the table of contents, else the
spine) and paragraphs, each with its position in the book as a fraction of all its
text, the same measure the viewer's reading position uses.

EPUB and KEPUB are read directly (a zip of XHTML files). Other formats go through
calibre's conversion first (later: as a calibre job).

A book is data from outside: what is unpacked is counted while it is read, in bounded
pieces (never trusting the sizes the zip declares), against named limits on one file,
on the whole book and on its number of files; so are the elements, attributes and entity
references of each file (its '<', '=' and '&'), before it is parsed, and the attributes of
each tag. A chapter over a limit of one file is left out, and only it: named in
Book.skipped with why (Book.reasons), said by Book.skipped_note(), the rest of the book
read. Once the book itself is over its limits (bytes unpacked, paragraphs) the chapters
after are left out the same way. libxml2 parses with its own limits on (depth, text and
names, entity amplification: entities are never expanded in text, and an entity that grows
an attribute beyond them is dropped); a chapter it cannot read within them is parsed again
by calibre's HTML 5 parser, which expands no entity. Elements are walked without recursion,
down to a named depth. A book none of whose chapters could be read, or whose container or
package is damaged or over a limit, is an UnreadableBook with a sentence.
"""

import bz2
import copy
import lzma
import os
import posixpath
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from os import PathLike
from urllib.parse import unquote, urldefrag

from lxml import etree

from calibre_plugins.bookai.core.files import is_regular
from calibre_plugins.bookai.core.printable import one_line

load_translations()

BLOCKS = frozenset('p h1 h2 h3 h4 h5 h6 li blockquote pre dt dd td th figcaption caption'.split())
CONTAINERS = frozenset('div section article aside body main header footer nav'.split())
# inside a paragraph, these end a line or a block: their place becomes a space, not nothing
SEPARATORS = BLOCKS | CONTAINERS | frozenset('br hr tr table ul ol dl figure'.split())
SKIPPED_TAGS = frozenset(('script', 'style', 'head'))

MAX_MEMBER_BYTES = 64 * 1024 * 1024   # the most unpacked from one file of a book
MAX_BOOK_BYTES = 256 * 1024 * 1024    # the most unpacked from all the files of a book read together
MAX_MEMBERS = 10_000                  # the most files a book may hold
MAX_PARAGRAPHS = 1_000_000            # the most paragraphs read from a book
MAX_DEPTH = 256                       # deeper elements are read as one block with their contents
MAX_REPARSED_DEPTH = 10_000           # a file deeper than libxml2 reads is parsed again as HTML up to this depth
# The most elements, attributes and entity references one file of a book may hold, counted as its
# '<', '=' and '&' while it is unpacked, before it is parsed: parsed, each takes about 128 bytes
# (libxml2's node), so a file takes at most about 130 MB. A long chapter has a few thousand; a
# whole novel in one file, a few hundred thousand.
MAX_NODES = 1_000_000
# The most attributes one tag may have: libxml2 compares each with all the others before it
# (20,000 take 2 s, 200,000 minutes). Real tags have a handful.
MAX_ATTRIBUTES = 1_000
TAG = re.compile(rb'<(/?)[A-Za-z][^<>]*?(/?)>')
MANY_ATTRIBUTES = re.compile(rb'<[^<>=]*(?:=[^<>=]*){%d}' % (MAX_ATTRIBUTES + 1))
READ_PIECE = 256 * 1024               # unpacked in pieces of this size, each counted
# what libxml2 says when a file is beyond the limits it keeps without huge_tree (deeper than 256
# levels, a text, name or attribute longer than 10 MB, entities that grow too much)
LIBXML2_LIMITS = ('huge', 'excessive depth', 'too long', 'too big', 'limit', 'amplification', 'entity reference loop')

Steps = tuple[int, ...]  # where an element is, as the E-book viewer's CFI steps


class UnreadableBook(ValueError):
    """A book that cannot be read, with why in words."""


@dataclass(frozen=True)
class Paragraph:
    chapter: int        # index into Book.chapters
    start: int          # character offset in the book's text
    text: str
    path: Steps = ()    # where its element is, as the E-book viewer's CFI steps: (spine, 2, 4, ...)


@dataclass(frozen=True)
class Chapter:
    title: str
    start: int          # character offset of its first paragraph


@dataclass
class Book:
    chapters: list[Chapter]
    paragraphs: list[Paragraph]
    skipped: list[str] = field(default_factory=list)  # names of chapter files left out, in order
    reasons: dict[str, str] = field(default_factory=dict)  # why each was left out (a file's name: words)

    @property
    def length(self) -> int:
        last = self.paragraphs[-1] if self.paragraphs else None
        return last.start + len(last.text) if last else 0

    def fraction(self, offset: int) -> float:
        return offset / self.length if self.length else 0.0

    def skipped_note(self) -> str:
        """The sentence that tells the reader which chapters were left out, and why, or ''."""
        if not self.skipped:
            return ''
        return _('Some chapters of this book could not be read and were left out: {files}').format(
            files=left_out(self.skipped, self.reasons))

    def offset_of_cfi(self, cfi: str) -> int | None:
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

    def cfi_at(self, offset: int) -> str | None:
        """A CFI for the paragraph holding offset, for the E-book viewer to go to."""
        p = next((p for p in reversed(self.paragraphs) if p.start <= offset), None)
        return 'epubcfi(/' + '/'.join(map(str, p.path)) + ')' if p is not None and p.path else None

    def chapter_at(self, offset: int) -> Chapter | None:
        """The chapter holding offset (the last one starting at or before it)."""
        found = 0
        for i, ch in enumerate(self.chapters):
            if ch.start <= offset:
                found = i
        return self.chapters[found] if self.chapters else None


def left_out(names: list[str], reasons: dict[str, str]) -> str:
    """The files left out, grouped by why (in parentheses), at most ten named of each: for a sentence."""
    groups: dict[str, list[str]] = {}
    for name in names:
        groups.setdefault(reasons.get(name, ''), []).append(name)
    parts = []
    for reason, group in groups.items():
        shown = ', '.join(map(shown_name, group[:10])) + (' …' if len(group) > 10 else '')
        parts.append(f'{shown} ({reason})' if reason else shown)
    return '; '.join(parts)


def shown_name(name: str) -> str:
    """A file's name from a book as it may be shown: on one line, no control character obeyed
    (core/printable.py), at most 200 characters."""
    name = one_line(name[:1000])
    return name if len(name) <= 200 else name[:199] + '…'


CFI = re.compile(r'^epubcfi\((/[^)]*)\)$')


def parse_cfi(cfi: str | None) -> tuple[Steps, int]:
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


# what unpacking one damaged or encrypted (RuntimeError) file of a zip raises
DAMAGED_FILE = (zipfile.BadZipFile, zlib.error, lzma.LZMAError, EOFError, NotImplementedError, RuntimeError, OSError)
DEFLATE64 = 9  # the zip compression method some Windows tools use, which Python's zipfile cannot read
METHODS = {zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA}


def not_a_file() -> str:
    """Why a book's path cannot be read when a FIFO, a device, a socket or a folder is in its place
    (opened, a FIFO would wait for a writer for ever and a device never end)."""
    return _('it is not a regular file (a folder, a FIFO, a device or a socket is in its place)')


def read_epub(path: str | PathLike) -> Book:
    """The Book in an EPUB (or KEPUB) file. Raises UnreadableBook."""
    if not is_regular(os.fspath(path)):
        raise UnreadableBook(_('{path} could not be read as an EPUB: {error}').format(path=path, error=not_a_file()))
    try:
        with zipfile.ZipFile(path) as zf:
            if len(zf.infolist()) > MAX_MEMBERS:
                raise UnreadableBook(_('{path} could not be read: it holds more than {count} files, the most Book AI '
                                       'reads in one book.').format(path=path, count=f'{MAX_MEMBERS:,}'))
            check_methods(zf, path)
            return EpubReader(zf, path).book()
    except UnreadableBook:
        raise
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, NotImplementedError, EOFError, RuntimeError,
            zlib.error, lzma.LZMAError, etree.LxmlError) as e:  # RuntimeError: an encrypted file, among others
        raise UnreadableBook(_('{path} could not be read as an EPUB: {error}').format(path=path, error=e)) from None


class LeftOut(Exception):
    """A file of a book not read, over a limit: why (words that follow its name), and whether the
    book itself is over its limits (rest: the files after it are not read either)."""

    def __init__(self, reason: str, rest: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.rest = rest


def member_too_big() -> LeftOut:
    return LeftOut(_('more than {limit} MB unpacked, the most Book AI reads of one file').format(
        limit=MAX_MEMBER_BYTES // 2**20))


def book_too_big() -> LeftOut:
    return LeftOut(_('the book unpacks to more than {limit} MB, the most Book AI reads of one book').format(
        limit=MAX_BOOK_BYTES // 2**20), rest=True)


def too_many_nodes() -> LeftOut:
    return LeftOut(_('more than {count} elements, attributes and entities, the most Book AI reads in one file').format(
        count=f'{MAX_NODES:,}'))


def too_many_attributes() -> LeftOut:
    return LeftOut(_('a tag with more than {count} attributes, the most Book AI reads in one tag').format(
        count=f'{MAX_ATTRIBUTES:,}'))


def too_many_paragraphs() -> LeftOut:
    return LeftOut(_('the book has more than {count} paragraphs, the most Book AI reads of one book').format(
        count=f'{MAX_PARAGRAPHS:,}'), rest=True)


def check_methods(zf: zipfile.ZipFile, path: str | PathLike) -> None:
    """Deflate64 members are read with the zipfile-deflate64 package where calibre's Python has
    it; otherwise, and for any other unknown method, say which file and why."""
    odd = [i for i in zf.infolist() if i.compress_type not in METHODS]
    if not odd:
        return
    if all(i.compress_type == DEFLATE64 for i in odd):
        try:
            import zipfile_deflate64  # noqa: F401 (teaches zipfile Deflate64 when it is there: not every calibre has it)
            return
        except ImportError:
            pass
    first = odd[0]
    method = 'Deflate64' if first.compress_type == DEFLATE64 else str(first.compress_type)
    raise UnreadableBook(_('{path} could not be read: its file {member} is compressed with {method}, which this '
                           'calibre cannot unpack.').format(path=path, member=first.filename, method=method))


class EpubReader:
    """Reads the Book in an open EPUB, counting what it unpacks against the limits."""

    def __init__(self, zf: zipfile.ZipFile, path: str | PathLike = '') -> None:
        self.zf = zf
        self.path = path
        self.unpacked = 0  # bytes unpacked so far, from all files
        self.too_deep = False  # the last file parsed nests deeper than libxml2 reads

    def read(self, name: str) -> bytes:
        """The unpacked bytes of the file name, counted piece by piece against the limits: its size
        (MAX_MEMBER_BYTES), the book's (MAX_BOOK_BYTES, then rest), its elements, attributes and
        entities (MAX_NODES) and the attributes of each of its tags (MAX_ATTRIBUTES). Raises
        LeftOut, KeyError when the book has no such file."""
        info = self.zf.getinfo(name)
        if info.file_size > MAX_MEMBER_BYTES:
            raise member_too_big()
        pieces, size, nodes = [], 0, 0
        for piece in self.pieces(info):
            pieces.append(piece)
            size += len(piece)
            self.unpacked += len(piece)
            if size > MAX_MEMBER_BYTES:
                raise member_too_big()
            if self.unpacked > MAX_BOOK_BYTES:
                raise book_too_big()
            nodes += piece.count(b'<') + piece.count(b'=') + piece.count(b'&')
            if nodes > MAX_NODES:
                raise too_many_nodes()
        data = b''.join(pieces)
        del pieces
        if MANY_ATTRIBUTES.search(data):
            raise too_many_attributes()
        return data

    def pieces(self, info: zipfile.ZipInfo) -> Iterator[bytes]:
        """The unpacked bytes of a file, READ_PIECE at a time. zipfile unpacks Deflate in bounded
        pieces itself, but unpacks bzip2 and LZMA a whole compressed chunk at a time, so
        that a small chunk can become gigabytes: those are unpacked here, boundedly."""
        if info.compress_type not in (zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA):
            with self.zf.open(info) as f:
                while piece := f.read(READ_PIECE):
                    yield piece
            return
        raw = copy.copy(info)  # the compressed bytes as they are stored; checked against the CRC below
        raw.compress_type, raw.file_size = zipfile.ZIP_STORED, info.compress_size
        del raw.CRC
        crc, size = 0, 0
        with self.zf.open(raw) as f:
            unpacker: bz2.BZ2Decompressor | lzma.LZMADecompressor
            if info.compress_type == zipfile.ZIP_BZIP2:
                unpacker = bz2.BZ2Decompressor()
            else:  # zip's LZMA: a version, the size of the properties, the properties, then raw LZMA1
                head = f.read(4)
                if len(head) < 4:
                    raise EOFError(info.filename)
                props = f.read(int.from_bytes(head[2:4], 'little'))
                unpacker = lzma.LZMADecompressor(lzma.FORMAT_RAW, filters=[
                    # CPython's own reading of the properties, which typeshed does not list (private)
                    lzma._decode_filter_properties(lzma.FILTER_LZMA1, props)])  # type: ignore[attr-defined]
            pending = b''
            while not unpacker.eof:
                if unpacker.needs_input:
                    pending = f.read(READ_PIECE)
                    if not pending:
                        break
                piece = unpacker.decompress(pending, READ_PIECE)
                pending = b''
                crc, size = zlib.crc32(piece, crc), size + len(piece)
                if piece:
                    yield piece
        if size != info.file_size or crc != info.CRC:
            raise zipfile.BadZipFile(f'Bad CRC-32 for file {info.filename!r}')

    def xml(self, name: str, data: bytes | None = None) -> etree._Element | None:
        """The root element of the XML file name; None when it holds no XML at all, or none that
        libxml2 reads within its own limits (then self.too_deep). Raises LeftOut, KeyError (read())."""
        parser = etree.XMLParser(recover=True, resolve_entities=False, no_network=True, huge_tree=False)
        try:
            root = etree.fromstring(self.read(name) if data is None else data, parser=parser)
        except etree.XMLSyntaxError:
            root = None
        self.too_deep = any(limit in e.message.lower() for e in parser.error_log for limit in LIBXML2_LIMITS)
        return None if self.too_deep else root

    def chapter(self, name: str) -> etree._Element | None:
        """The root element of the XHTML file name; None when it is missing or holds no XML. A
        file libxml2 does not read within its limits (deeper than 256 levels, a text longer than
        10 MB, entities that grow too much) is parsed again by calibre's HTML 5 parser, which has
        no such limit and expands no entity, but takes a time that grows with the square of the
        depth: so only up to MAX_REPARSED_DEPTH. A deeper one is left out (LeftOut), as are the
        files over the limits read() counts."""
        try:
            data = self.read(name)
        except KeyError:
            return None
        root = self.xml(name, data)
        if self.too_deep:
            if deepest(data) > MAX_REPARSED_DEPTH:
                raise LeftOut(_('nested deeper than {depth} levels').format(depth=f'{MAX_REPARSED_DEPTH:,}'))
            try:
                from html5_parser import parse  # for the rare file beyond libxml2's limits only
                root = parse(data, maybe_xhtml=True, keep_doctype=False)
            except Exception:  # not HTML either
                root = None
        return root

    def damaged(self, name: str) -> UnreadableBook:
        return UnreadableBook(_('{path} could not be read as an EPUB: {error}').format(
            path=self.path, error=_('its file {member} is damaged.').format(member=shown_name(name))))

    def package_file(self, name: str) -> etree._Element:
        """The root of the container or the package: without either there is no book (UnreadableBook)."""
        try:
            root = self.xml(name)
        except LeftOut as e:
            raise UnreadableBook(_('{path} could not be read: its file {member} is over a limit ({reason}).').format(
                path=self.path, member=shown_name(name), reason=e.reason)) from None
        if root is None:
            raise self.damaged(name)
        return root

    def book(self) -> Book:
        container = self.package_file('META-INF/container.xml')
        opf_name = next(iter(container.xpath('//*[local-name()="rootfile"]/@full-path')), '')
        if not opf_name:
            raise UnreadableBook(_('{path} could not be read as an EPUB: {error}').format(
                path=self.path, error=_('its META-INF/container.xml names no package file.')))
        opf = self.package_file(opf_name)
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
        del opf, container
        chapters: list[Chapter] = []
        paragraphs: list[Paragraph] = []
        skipped: list[str] = []
        reasons: dict[str, str] = {}
        offset, rest, seen = 0, '', set()
        for number, name in spine:
            if name in seen:  # a file listed twice in the spine (not allowed): read once
                continue
            seen.add(name)
            if rest:  # the book is over its limits: the chapters after are not read
                skipped.append(name)
                reasons[name] = rest
                continue
            try:
                root = self.chapter(name)
                if root is None:
                    skipped.append(name)
                    reasons[name] = _('missing') if name not in self.names else _('not XML')
                    continue
                blocks = []
                for block in block_texts(root, (2 * number, 2)):
                    blocks.append(block)
                    if len(paragraphs) + len(blocks) > MAX_PARAGRAPHS:
                        raise too_many_paragraphs()
            except LeftOut as e:
                skipped.append(name)
                reasons[name] = e.reason
                rest = e.reason if e.rest else ''
                continue
            except DAMAGED_FILE:  # this file's bytes only (its CRC, its compression): the others may be whole
                skipped.append(name)
                reasons[name] = _('damaged')
                continue
            finally:
                root = None  # the parsed chapter goes before the next one is read
            if not blocks:
                continue
            title = titles.get(name)
            if title or not chapters:
                chapters.append(Chapter(title or blocks[0][0][:80], offset))
            for text, path in blocks:
                paragraphs.append(Paragraph(len(chapters) - 1, offset, text, path))
                offset += len(text) + 1
        if not paragraphs and skipped:
            raise UnreadableBook(_('{path} could not be read: none of its text could be; left out: {files}.').format(
                path=self.path, files=left_out(skipped, reasons)))
        return Book(chapters, paragraphs, skipped, reasons)

    @cached_property
    def names(self) -> set[str]:
        """The names of the files in the book."""
        return set(self.zf.namelist())

    def table_of_contents(self, name: str) -> etree._Element:
        """The root of the table of contents name; an empty one when it is missing, not XML or
        over a limit (LeftOut): chapters are then named from their first lines, as for a book
        without one."""
        try:
            root = self.xml(name)
        except (KeyError, LeftOut):
            root = None
        return etree.Element('empty') if root is None else root

    def toc_titles(self, opf: etree._Element, manifest: dict[str, tuple[str, str, str]]) -> dict[str, str]:
        """{file name: title of the first table-of-contents entry pointing into it}."""
        nav = next((href for href, mt, props in manifest.values() if 'nav' in props.split()), None)
        ncx_id = (opf.xpath('//*[local-name()="spine"]/@toc') or [''])[0]
        entries = []
        if nav:
            root = self.table_of_contents(nav)
            for a in root.xpath('//*[local-name()="nav"][@*[local-name()="type"]="toc"]//*[local-name()="a"]'):
                entries.append((posixpath.dirname(nav), a.get('href', ''), ' '.join(''.join(a.itertext()).split())))
        elif ncx_id in manifest:
            ncx = manifest[ncx_id][0]
            root = self.table_of_contents(ncx)
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


def deepest(data: bytes) -> int:
    """How deep the tags of an XML file nest, counted from the tags alone (linear, no parser)."""
    depth = most = 0
    for m in TAG.finditer(data):
        if m.group(1):
            depth -= 1
        elif not m.group(2):
            depth += 1
            most = max(most, depth)
    return most


def block_texts(root: etree._Element, path: Steps = ()) -> Iterator[tuple[str, Steps]]:
    """(text, CFI steps of its element) for each paragraph-like block of an XHTML document,
    in order; path: the steps of the document's root element."""
    for step, el in element_children(root):
        if local(el.tag) == 'body':
            yield from walk(el, path + (step,))
            return


def element_children(el: etree._Element) -> Iterator[tuple[int, etree._Element]]:
    """(CFI step, child) for each child element: 2, 4, 6, ... (comments and the like do not count)."""
    return ((2 * (i + 1), c) for i, c in enumerate(c for c in el if isinstance(c.tag, str)))


def local(tag: object) -> str:
    """A tag's name without its namespace, lower case; '' for a comment and the like."""
    return tag.rpartition('}')[2].lower() if isinstance(tag, str) else ''


def walk(el: etree._Element, path: Steps) -> Iterator[tuple[str, Steps]]:
    """(text, steps) for each block under el, in document order; without recursion, so that
    however deep a book nests its elements the stack does not overflow. Below MAX_DEPTH an
    element is read as one block, with all it holds."""
    depth0 = len(path)
    todo = [(el, path)]  # elements to walk, and texts (a str in place of the element) to give
    while todo:
        el, path = todo.pop()
        if isinstance(el, str):
            yield el, path
            continue
        tag = local(el.tag)
        if tag in SKIPPED_TAGS:
            continue
        if tag in BLOCKS or len(path) - depth0 >= MAX_DEPTH or (
                tag in CONTAINERS and not any(local(c.tag) in BLOCKS | CONTAINERS for c in el)):
            text = text_of(el)
            if text:
                yield text, path
            continue
        container = tag in CONTAINERS
        after = []
        n = 0
        for child in el:
            if isinstance(child.tag, str):
                n += 1
                after.append((child, path + (2 * n,)))
            if container and child.tail and child.tail.strip():
                after.append((' '.join(child.tail.split()), path))
        todo.extend(reversed(after))
        if container and el.text and el.text.strip():
            yield ' '.join(el.text.split()), path


def text_of(el: etree._Element) -> str:
    """The text of el and all it holds, on one line: a line break or a block inside it
    becomes a space (not nothing: "one<br/>two" is two words); scripts, styles and
    comments give nothing. Without recursion."""
    parts = [el.text or '']
    todo = [(c, True) for c in reversed(el)]  # (node, True) to open it; (node, False) for what follows it
    while todo:
        node, opening = todo.pop()
        element = isinstance(node.tag, str)
        separates = element and local(node.tag) in SEPARATORS
        if not opening:
            parts.append(' ' if separates else '')
            parts.append(node.tail or '')
            continue
        todo.append((node, False))
        if not element or local(node.tag) in SKIPPED_TAGS:
            continue
        if separates:
            parts.append(' ')
        parts.append(node.text or '')
        todo.extend((c, True) for c in reversed(node))
    return ' '.join(''.join(parts).split())
