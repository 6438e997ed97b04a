# License: GPLv3 Copyright: the Book AI developers
"""Ask my library with tools: what the model may look up in a calibre library while it answers (a
Toolbox of conversation/lookups.py), clamped to what the reader has read.

- search_library(query, k): the books whose details (title, authors, and the tags, series and
  comments the reader lets Book AI send) match, and the passages of their text that match, from
  calibre's full-text index where the library has it turned on;
- book_chapters(book_id): a book's chapters, by their titles;
- read_book(book_id, query | chapter | position): passages of one book, a bounded amount.

The clamp: a book the E-book viewer keeps a last-read place for (grounding/reading_position.py) is
read by Book AI itself (its text cache, grounding/cache.py), and nothing at or after that place
is in any result: its matches in the full-text index are never used (the index holds the whole
book), its own text is searched up to the place, its chapters not begun are not listed, a read is
cut at the place, and a request past it gets "The reader has not reached that part." A book whose
viewer file cannot be read, or whose place cannot be found in its text, gives none of its text.

Bounds: k, the characters of each result (RESULT_TOKENS), the books read for their own text in
one call (MAX_BOOKS_READ), a conversion's time (READ_SECONDS) and the books kept in memory
(KEPT_BOOKS). The model's arguments are outside bytes: anything but what each tool takes (not
JSON, a wrong type, a huge string or number, a book that is not there or not asked about) comes
back as a refused result in words, never as an exception.

The library (calibre.db.cache.Cache) is read in the caller's thread, as Ask my library reads it.
Passages are numbered from the call's first number, each with a Place whose chapter is its book's
title, so that the answer's citations open the book. What the model reads here is English, as
conversation/prompts.py's words are; what the reader is told (a result's summary) is translated.
"""

import html
import re
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from calibre_plugins.bookai.core.messages import CHARS_PER_TOKEN, Tool, ToolCall
from calibre_plugins.bookai.core.printable import one_line, without_controls
from calibre_plugins.bookai.grounding.book_tools import BadArguments, ToolResult, parsed_arguments
from calibre_plugins.bookai.grounding.cache import TextCache, default_folder
from calibre_plugins.bookai.grounding.extract import Book, UnreadableBook
from calibre_plugins.bookai.grounding.formats import choose_format, read_book
from calibre_plugins.bookai.grounding.index import Index, Passage
from calibre_plugins.bookai.grounding.library_passages import (
    PER_BOOK, WORD, best_passages, fts_available, fts_query, indexing_left, marked_texts, query_terms, ranked_files,
)
from calibre_plugins.bookai.grounding.reading_position import last_read_places, offset_of_place
from calibre_plugins.bookai.grounding.scopes import Place
from calibre_plugins.bookai.grounding.so_far import passages_read

if TYPE_CHECKING:
    from calibre.db.cache import Cache

load_translations()

SEARCH, CHAPTERS, READ = 'search_library', 'book_chapters', 'read_book'
MAX_K = 8                  # passages (and books by their details) one search gives at most
DEFAULT_K = 5
RESULT_TOKENS = 2000       # about the most one result holds
RESULT_CHARS = RESULT_TOKENS * CHARS_PER_TOKEN
PASSAGE_CHARS = 1200       # one passage's text at most (a longer paragraph: the stretch around the match)
MAX_QUERY_CHARS = 300      # a query's length at most
MAX_BOOKS_SEARCHED = 8     # books of the full-text index's ranking searched by one call, the best first
MAX_BOOKS_READ = 3         # books read for their own text by one call (those begun, in a search)
READ_SECONDS = 120         # a book's conversion for reading, at most (CPU seconds: formats.convert_to_epub)
KEPT_BOOKS = 4             # books' texts kept in memory between calls
MAX_TITLE_CHARS = 160      # a title, an author, a chapter's title, as they go into a result
MAX_DETAILS_CHARS = 600    # one book's details in a search's result
MAX_COMMENTS_READ = 20_000  # of a book's comments (HTML) searched
MAX_BOOK_ID = 2 ** 62
NOT_REACHED = 'The reader has not reached that part.'
TAG = re.compile(r'<[^<>]*>')

Numbered = Callable[[Iterable[tuple[str, str]], int], str]


def plain_numbered(items: Iterable[tuple[str, str]], start: int = 1) -> str:
    """(label, text) pairs numbered from start: for the tests; the conversation numbers them with
    conversation.prompts.numbered_block, which also delimits and defuses them."""
    return '\n\n'.join(f'[{n}] ({label})\n{text}' for n, (label, text) in enumerate(items, start))


class Refused(Exception):
    """A call that cannot be done: its text for the model, its summary for the reader."""

    def __init__(self, text: str, summary: str) -> None:
        super().__init__(text)
        self.text, self.summary = text, summary


def not_reached() -> Refused:
    return Refused(NOT_REACHED, _('the reader has not reached that part'))


def wrong(text: str) -> Refused:
    """A call whose arguments are not what its tool takes (or of a tool there is not)."""
    return Refused(text, _('a lookup with wrong arguments'))


def not_given(text: str, title: str) -> Refused:
    """A book none of whose text can be given: unreadable, its place unknown, one book too many."""
    return Refused(text, _('{title}: none of its text could be given').format(title=shown(title)))


@dataclass
class Opened:
    """A book read for its own text: its format, its Book and Index, and the reader's place."""
    book_id: int
    label: str                     # "Title, by Authors; book 3": where its passages are from
    title: str
    fmt: str
    book: Book
    index: Index
    until: int | None              # the reader's place (a character offset); None: no place, the whole book
    _readable: list[Passage] | None = None

    @property
    def readable(self) -> list[Passage]:
        """Its passages wholly before the reader's place (all of them, with no place), in order."""
        if self._readable is None:
            self._readable = self.index.passages if self.until is None else passages_read(self.book, self.until)
        return self._readable

    def place(self, start: int) -> Place:
        return Place(self.title, self.book.fraction(start), self.book.cfi_at(start) or '', self.book_id, self.fmt)


def schema(properties: dict, required: tuple[str, ...]) -> dict:
    return {'type': 'object', 'properties': properties, 'required': list(required), 'additionalProperties': False}


BOOK_ID = {'type': 'integer', 'description': 'The book, by the book_id search_library gives.'}
TOOLS = (
    Tool(SEARCH, 'Search the books of the library: the books whose title, authors, series, tags or description '
         "match the query, and passages of the books' text that match it, each numbered for citing as [n] and "
         'naming its book and book_id. Books the reader has begun are searched only up to where the reader is.',
         schema({'query': {'type': 'string', 'description': 'The words to look for.'},
                 'k': {'type': 'integer', 'minimum': 1, 'maximum': MAX_K,
                       'description': f'How many passages at most (default {DEFAULT_K}).'}}, ('query',))),
    Tool(CHAPTERS, "A book's chapters, numbered, with where each begins (a fraction of the book from 0 to 1); for "
         'a book the reader has begun, only the chapters up to where the reader is.',
         schema({'book_id': BOOK_ID}, ('book_id',))),
    Tool(READ, 'Read passages of one book, numbered for citing as [n]: those matching a query, or a chapter from '
         'its beginning (its number as book_chapters gives it), or the text from a position (a fraction of the '
         'book from 0 to 1); give one of query, chapter or position (none: from the beginning). For a book the '
         'reader has begun, nothing past where the reader is.',
         schema({'book_id': BOOK_ID, 'query': {'type': 'string', 'description': 'Words to look for in the book.'},
                 'chapter': {'type': 'integer', 'minimum': 1, 'description': 'A chapter number.'},
                 'position': {'type': 'number', 'minimum': 0, 'maximum': 1,
                              'description': 'Where to start reading, a fraction of the book.'}}, ('book_id',))),
)


class LibraryTools:
    """The library's tools for one question: over the books of book_ids (None: the whole library)
    of db (the library's new_api). numbered: how numbered passages are written for the model
    (conversation.prompts.numbered_block(items, start)); fields: the fields besides title and
    authors the reader lets Book AI send (conversation.books.allowed_fields: of tags, series and
    comments, those allowed are searched and shown). read(book_id, fmt): (Book, Index) of a book's
    file (default: from the text cache, else read now, converted within READ_SECONDS)."""

    def __init__(self, db: 'Cache', book_ids: Iterable[int] | None, *, numbered: Numbered = plain_numbered,
                 fields: Iterable[str] = (), read: Callable[[int, str], tuple[Book, Index]] | None = None) -> None:
        self.db = db
        self.book_ids = None if book_ids is None else frozenset(int(b) for b in book_ids)
        self.numbered = numbered
        self.fields = frozenset(f for f in fields if f in ('tags', 'series', 'comments'))
        self.read = read or self.cached_text
        self.kept: OrderedDict[int, Opened] = OrderedDict()
        self.reads_left = MAX_BOOKS_READ

    # the Toolbox {{{

    def tools(self) -> tuple[Tool, ...]:
        return TOOLS

    def description(self) -> str:
        return _("The model may search your library's books and read their passages, up to where you are in the "
                 'books you have begun.')

    def run(self, call: ToolCall, first_number: int) -> ToolResult:
        """call run, its passages numbered from first_number; what it cannot do is a refused result in words."""
        self.reads_left = MAX_BOOKS_READ
        try:
            args = call_arguments(call)
            if call.name == SEARCH:
                return self.search(args, first_number)
            if call.name == CHAPTERS:
                return self.chapters(args)
            if call.name == READ:
                return self.read_passages(args, first_number)
            raise wrong(f'There is no tool named {call.name[:64]!r}: the tools are {SEARCH}, {CHAPTERS} and {READ}.')
        except Refused as e:
            return ToolResult(e.text, e.summary, refused=True)

    # }}}

    # search_library {{{

    def search(self, args: dict, first: int) -> ToolResult:
        query = text_argument(args, 'query', required=True) or ''
        k = count_argument(args, 'k', DEFAULT_K, MAX_K)
        terms = query_terms(query)
        if not terms:
            raise wrong('The query has no word to search for: give the words to look for.')
        details = self.details_matching(terms, k)
        passages, note = self.passages_matching(query, terms, k)
        parts = []
        if details:
            parts.append(f'Books whose details match {one_line(query)!r}:\n' + '\n'.join(details))
        if passages:
            block = self.numbered(((label, t) for label, t, _p in passages), first)
            parts.append(f"Passages of the books' text that match {one_line(query)!r} (cite them as [n]; read more "
                         f'of a book with read_book and its book_id):\n{block}')
        if note:
            parts.append(note)
        if not details and not passages:
            parts.insert(0, f'Nothing in the library matches {one_line(query)!r}.')
        summary = ngettext('searched "{query}": {count} passage', 'searched "{query}": {count} passages',
                           len(passages)).format(query=shown(query), count=len(passages))
        return ToolResult(fitted('\n\n'.join(parts)), summary, tuple(p for _l, _t, p in passages))

    def details_matching(self, terms: list[str], k: int) -> list[str]:
        """The details of the k books whose title, authors (and the other fields allowed) hold the
        most of terms, one line each, best first."""
        ids = self.scope()
        if not ids:
            return []
        weights = {'title': 3, 'authors': 3, 'series': 2, 'tags': 2, 'comments': 1}
        fields = [f for f in weights if f in ('title', 'authors') or f in self.fields]
        values = {f: self.db.all_field_for(f, ids, default_value=None) for f in fields}
        wanted = set(terms)
        scored = []
        for book_id in ids:
            best: dict[str, int] = {}
            for f in fields:
                found = wanted & set(WORD.findall(field_text(f, values[f].get(book_id)).lower()))
                for w in found:
                    best[w] = max(best.get(w, 0), weights[f])
            if best:
                scored.append((-sum(best.values()), book_id))
        scored.sort()
        return [self.details_line(book_id, {f: values[f].get(book_id) for f in fields}, terms)
                for _s, book_id in scored[:k]]

    def details_line(self, book_id: int, values: dict[str, Any], terms: list[str]) -> str:
        line = f'- book_id {book_id}: {self.name(book_id, values.get("title"), values.get("authors"))}'
        for f, name in (('series', 'series'), ('tags', 'tags')):
            text = cut(one_line(field_text(f, values.get(f))), MAX_TITLE_CHARS)
            if text:
                line += f'; {name}: {text}'
        comments = one_line(field_text('comments', values.get('comments')))
        if comments:
            lower = comments.lower()
            at = min((i for w in terms if (i := lower.find(w)) >= 0), default=0)
            start = max(0, at - 150)
            line += '; description: ' + ('…' if start else '') + cut(comments[start:], 300)
        return cut(without_controls(line), MAX_DETAILS_CHARS)

    def passages_matching(self, query: str, terms: list[str], k: int) -> tuple[list[tuple[str, str, Place]], str]:
        """(label, text, Place) of the k passages that best match, by book in the order the full-text
        index ranks the books (of a book begun: its own text searched up to the place), and a note
        for the model ('' for none)."""
        note = ''
        candidates: list[tuple[int, str | None]] = []  # (book id, the indexed format; None: not from the index)
        if fts_available(self.db):
            restrict = None if self.book_ids is None else set(self.scope())
            left, total = indexing_left(self.db)
            if left:
                note = (f'calibre is still indexing this library: the text of {left} of its {total} book files was '
                        'not searched.')
            if restrict != set():
                try:
                    candidates = [(b, f) for b, f in ranked_files(self.db, fts_query(query), restrict)]
                except Exception as e:  # calibre's index database: damaged, locked, gone
                    note = "calibre's full-text index could not be searched: " + cut(one_line(str(e)), 200)
        else:
            note = ("This library has no full-text index turned on in calibre: only the books' details were "
                    'searched' + (', and the text of the books asked about.' if self.book_ids is not None else '.')
                    + ' read_book reads the text of a book.')
            if self.book_ids is not None:  # the few books asked about: their own text, up to the places
                candidates = [(b, None) for b in sorted(self.scope())[:MAX_BOOKS_READ]]
        candidates = candidates[:MAX_BOOKS_SEARCHED]
        begun = {b for b, _f in candidates if self.begun_formats(b)}
        from_index = [(b, f) for b, f in candidates if f is not None and b not in begun]
        marked: dict[tuple[int, str], str] = {}
        if from_index:
            try:
                marked = marked_texts(self.db, fts_query(query), from_index)
            except Exception as e:  # see above
                note = "calibre's full-text index could not be read: " + cut(one_line(str(e)), 200)
        per_book: list[list[tuple[str, str, Place]]] = []
        for book_id, fmt in candidates:
            if book_id not in begun and fmt is not None:
                text = marked.get((book_id, fmt))
                if text:
                    label = self.label(book_id)
                    title = cut(one_line(self.db.field_for('title', book_id) or ''), MAX_TITLE_CHARS)
                    per_book.append([(label, t, Place(title, 0.0, '', book_id, fmt))
                                     for _s, _e, t, _w in best_passages(text)])
                continue
            if self.reads_left <= 0 and book_id not in self.kept:
                continue
            try:
                opened = self.open(book_id)
            except Refused:
                continue
            per_book.append([self.passage(opened, p, terms) for p in opened.index.search(
                query, k=PER_BOOK, until=opened.until)])
        return round_robin(per_book, k), note

    # }}}

    # book_chapters {{{

    def chapters(self, args: dict) -> ToolResult:
        opened = self.open(self.book_argument(args))
        chapters = opened.book.chapters
        until = opened.until
        shown_chapters = [(n, c) for n, c in enumerate(chapters, 1) if until is None or c.start < until]
        lines = []
        for i, (n, c) in enumerate(shown_chapters):
            line = f'{n}. {cut(one_line(c.title), MAX_TITLE_CHARS)} (begins at {opened.book.fraction(c.start):.3f})'
            if until is not None and i == len(shown_chapters) - 1:
                line += ' (the reader is in this chapter)'
            lines.append(line)
        head = f'The chapters of {opened.label}' + (
            ', up to where the reader is:' if until is not None else ':')
        if not lines:
            body = ('The reader has not begun it yet.' if until is not None
                    else 'Book AI cannot tell its chapters apart: read it by position.')
        else:
            body, room = '', RESULT_CHARS - len(head) - 100
            for i, line in enumerate(lines):
                if len(body) + len(line) + 1 > room:
                    body += f'… and {len(lines) - i} more chapters: read_book by position reads on.'
                    break
                body += line + '\n'
        summary = ngettext('listed the chapters of {title}: {count} chapter',
                           'listed the chapters of {title}: {count} chapters', len(lines)).format(
            title=shown(opened.title), count=len(lines))
        return ToolResult(fitted(head + '\n' + body.rstrip('\n')), summary)

    # }}}

    # read_book {{{

    def read_passages(self, args: dict, first: int) -> ToolResult:
        book_id = self.book_argument(args)
        query = text_argument(args, 'query')
        chapter = count_argument(args, 'chapter', None, MAX_BOOK_ID) if args.get('chapter') is not None else None
        position = fraction_argument(args, 'position')
        opened = self.open(book_id)
        until, book = opened.until, opened.book
        more = ''
        if query is not None and query.strip():
            terms = query_terms(query)
            found = [self.passage(opened, p, terms) for p in opened.index.search(query, k=MAX_K, until=until)]
            chosen = round_robin([found], MAX_K)
            what = shown(opened.title)
            if not chosen:
                head = f'Nothing in {opened.label} matches {one_line(query)!r}' + (
                    ' in what the reader has read.' if until is not None else '.')
                return ToolResult(head, read_summary(what, 0))
        else:
            if chapter is not None:
                if chapter > len(book.chapters):
                    raise wrong(f'{opened.label} has {len(book.chapters)} chapters: there is no chapter {chapter}.')
                c = book.chapters[chapter - 1]
                if until is not None and c.start >= until:
                    raise not_reached()
                start = c.start
                what = shown(opened.title)
                in_chapter = chapter - 1
            else:
                start = int((position or 0.0) * book.length)
                if until is not None and start >= until:
                    raise not_reached()
                what = shown(opened.title)
                in_chapter = None
            chosen, next_start = self.from_place(opened, start, in_chapter)
            if not chosen:
                if until is not None:
                    raise not_reached()
                head = f'There is no text of {opened.label} there.'
                return ToolResult(head, read_summary(what, 0))
            if next_start is not None:
                more = (f'\n\nThe text goes on: read_book with position {book.fraction(next_start):.6f} reads the next '
                        'part.')
            elif until is not None and chosen:
                more = '\n\nThe reader has read no further than this.'
        text = (f'Passages of {opened.label} (cite them as [n]):\n'
                + self.numbered(((label, t) for label, t, p in chosen), first) + more)
        summary = read_summary(what, len(chosen))
        return ToolResult(fitted(text), summary, tuple(p for _l, _t, p in chosen))

    def from_place(self, opened: Opened, start: int, chapter: int | None) -> tuple[list[tuple[str, str, Place]],
                                                                                       int | None]:
        """The passages readable from start (of chapter only, when given), in order, within a result's
        room; and where the next one begins, when the text goes on (None: it ends, or the reader's place)."""
        readable = opened.readable
        lo, hi = 0, len(readable)
        while lo < hi:  # the first passage that ends after start
            mid = (lo + hi) // 2
            if readable[mid].end <= start:
                lo = mid + 1
            else:
                hi = mid
        chosen: list[tuple[str, str, Place]] = []
        used = 0
        for p in readable[lo:]:
            if chapter is not None and p.chapter != chapter:
                return chosen, None
            at = max(p.start, start)
            text = p.text[at - p.start:at - p.start + PASSAGE_CHARS]
            if chosen and used + len(text) > RESULT_CHARS - 1000:
                return chosen, at
            chosen.append((opened.label, text + ('…' if at + len(text) < p.end else ''), opened.place(at)))
            used += len(text) + len(opened.label) + 10
            if at + len(text) < p.end:  # a long paragraph: the rest of it next time
                return chosen, at + len(text)
        return chosen, None

    # }}}

    # books {{{

    def scope(self) -> list[int]:
        """The ids of the books the tools are over that are in the library, in order."""
        every = self.db.all_book_ids()
        return sorted(every if self.book_ids is None else (b for b in self.book_ids if b in every))

    def book_argument(self, args: dict) -> int:
        """The book_id argument, checked: a book of the library, among those asked about."""
        value = args.get('book_id')
        if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 18:
            value = int(value.strip())
        if type(value) is not int:
            raise wrong(f'book_id must be a whole number (a book_id search_library gives), not {kind(value)}.')
        if not 0 < value < MAX_BOOK_ID or not self.db.has_id(value):
            raise wrong(f'There is no book with book_id {value if abs(value) < 10 ** 18 else "that large"} in the '
                        'library.')
        if self.book_ids is not None and value not in self.book_ids:
            raise wrong(f'The book with book_id {value} is not among the books this question is about.')
        return value

    def name(self, book_id: int, title: object = None, authors: object = None) -> str:
        """How a book is named to the model: "Title, by Authors"."""
        title = title if isinstance(title, str) else self.db.field_for('title', book_id)
        authors = authors if isinstance(authors, (tuple, list)) else self.db.field_for('authors', book_id) or ()
        name = cut(one_line(str(title or '')), MAX_TITLE_CHARS) or 'Unknown'
        who = cut(' & '.join(one_line(str(a)) for a in authors), MAX_TITLE_CHARS)
        return f'{name}, by {who}' if who else name

    def label(self, book_id: int) -> str:
        """Where a passage is from, for the model: "Title, by Authors; book_id 3"."""
        return f'{self.name(book_id)}; book_id {book_id}'

    def begun_formats(self, book_id: int) -> dict[str, list[tuple[float, str]] | None]:
        """begun_formats() of book_id in this library."""
        return begun_formats(self.db, book_id)

    def open(self, book_id: int) -> Opened:
        """The book's own text and the reader's place in it, kept for the next calls; reading one
        (not kept) counts toward MAX_BOOKS_READ. Raises Refused."""
        if book_id in self.kept:
            self.kept.move_to_end(book_id)
            return self.kept[book_id]
        title = cut(one_line(self.db.field_for('title', book_id) or ''), MAX_TITLE_CHARS) or 'Unknown'
        label = self.label(book_id)
        begun = self.begun_formats(book_id)
        fmt = choose_format(begun or self.db.formats(book_id) or ())
        if fmt is None:
            if begun:
                raise not_given(f'Book AI cannot tell where the reader is in {label}: none of its text can be given.',
                                title)
            raise not_given(f'{label} has no file whose text Book AI can read.', title)
        if self.reads_left <= 0:
            raise not_given(f'Only {MAX_BOOKS_READ} books can be read in one call: ask for {label} in a call of its '
                            'own.', title)
        self.reads_left -= 1
        try:
            book, index = self.read(book_id, fmt)
        except (UnreadableBook, OSError) as e:
            raise not_given(f'{label} could not be read: ' + cut(one_line(str(e)), 300), title) from None
        until = None
        if fmt in begun:  # nothing at or after the place; none of it where the place cannot be found
            places = begun[fmt]
            offset = offset_of_place(book, places) if places else None
            if offset is None:
                raise not_given(f'Book AI cannot tell where the reader is in {label}: none of its text can be given.',
                                title)
            until = max(0, min(offset, book.length))
        opened = Opened(book_id, label, title, fmt, book, index, until)
        self.kept[book_id] = opened
        while len(self.kept) > KEPT_BOOKS:
            self.kept.popitem(last=False)
        return opened

    def cached_text(self, book_id: int, fmt: str) -> tuple[Book, Index]:
        """(Book, Index) of a book's fmt file: from the text cache, else read (converted within
        READ_SECONDS) and kept. Raises UnreadableBook, OSError."""
        path = self.db.format_abspath(book_id, fmt)
        if not path:
            raise UnreadableBook(f'its {fmt} file is missing from the library folder.')
        return TextCache(default_folder()).text_of(self.db.library_id, book_id, fmt, path,
                                                   lambda p: read_book(p, fmt, seconds=READ_SECONDS))

    def passage(self, opened: Opened, p: Passage, terms: Iterable[str]) -> tuple[str, str, Place]:
        """(label, text, Place) of a passage of an opened book: a long one, the stretch around its match."""
        start, text = p.start, p.text
        if len(text) > PASSAGE_CHARS:
            lower = text.lower()
            at = min((i for w in terms if (i := lower.find(w)) >= 0), default=0)
            lo = max(0, min(at - PASSAGE_CHARS // 3, len(text) - PASSAGE_CHARS))
            text = ('…' if lo else '') + text[lo:lo + PASSAGE_CHARS] + (
                '…' if lo + PASSAGE_CHARS < len(p.text) else '')
            start += lo
        return opened.label, text, opened.place(start)

    # }}}


# the model's arguments {{{

def begun_formats(db: 'Cache', book_id: int) -> dict[str, list[tuple[float, str]] | None]:
    """{format: its last-read places (None: the viewer's file of them cannot be read)} of the book's
    formats the E-book viewer keeps a place for, or a file of places: {} for a book never opened."""
    found: dict[str, list[tuple[float, str]] | None] = {}
    for fmt in db.formats(book_id) or ():
        path = db.format_abspath(book_id, fmt)
        if path:
            places = last_read_places(path)
            if places is None or places:
                found[fmt.upper()] = places
    return found


def call_arguments(call: ToolCall) -> dict:
    """The arguments of a call, as a JSON object (book_tools.parsed_arguments). Raises Refused."""
    try:
        return parsed_arguments(call)
    except BadArguments as e:
        raise wrong(f'{str(e)[:1].upper()}{str(e)[1:]} Give them as a JSON object, such as {{"query": "lighthouse"}}.'
                    ) from None


def text_argument(args: dict, name: str, required: bool = False) -> str | None:
    value = args.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise wrong(f'{name} must be a string of words, not {kind(value)}.')
    if len(value) > MAX_QUERY_CHARS:
        raise wrong(f'{name} is too long: {MAX_QUERY_CHARS} characters at most.')
    return value


def count_argument(args: dict, name: str, default: int | None, most: int) -> int:
    """A whole number of at least 1 (at most most: more is most), or default when not given."""
    value = args.get(name)
    if value is None and default is not None:
        return default
    if isinstance(value, float) and value.is_integer() and abs(value) < MAX_BOOK_ID:
        value = int(value)
    if type(value) is not int or value < 1:
        raise wrong(f'{name} must be a whole number from 1, not {kind(value)}.')
    return min(value, most)


def fraction_argument(args: dict, name: str) -> float | None:
    value = args.get(name)
    if value is None:
        return None
    if type(value) not in (int, float) or not 0 <= value <= 1:  # NaN is not
        raise wrong(f'{name} must be a number from 0 (the beginning of the book) to 1 (its end), not '
                    f'{kind(value)}.')
    return float(value)


def kind(value: object) -> str:
    """What a wrong argument is, in a few words (never all of it)."""
    if value is None:
        return 'nothing'
    if isinstance(value, bool):
        return 'true or false'
    if isinstance(value, int):
        return str(value) if abs(value) < 10 ** 20 else 'a number that large'
    if isinstance(value, float):
        return repr(value) if len(repr(value)) <= 24 else 'a number that large'
    if isinstance(value, str):
        return 'an empty string' if not value.strip() else 'a string'
    return 'a list' if isinstance(value, list) else 'an object' if isinstance(value, dict) else 'that'

# }}}


# text {{{

def field_text(field: str, value: object) -> str:
    """A book's field as text to search and show: authors and tags joined, comments without their HTML."""
    if value is None:
        return ''
    if isinstance(value, (tuple, list, frozenset, set)):
        return ', '.join(str(v) for v in value)
    text = str(value)
    if field == 'comments':
        text = html.unescape(TAG.sub(' ', text[:MAX_COMMENTS_READ]))
    return text


def read_summary(title: str, count: int) -> str:
    """What the reader is told of a read: "read TITLE: 3 passages"."""
    return ngettext('read {title}: {count} passage', 'read {title}: {count} passages', count).format(
        title=title, count=count)


def cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[:most - 1].rstrip() + '…'


def shown(text: str, most: int = 60) -> str:
    """A model's words as the reader sees them: one inert line, short."""
    return cut(one_line(text if isinstance(text, str) else ''), most)


def fitted(text: str) -> str:
    """A result within RESULT_CHARS."""
    return text if len(text) <= RESULT_CHARS else text[:RESULT_CHARS - 40].rstrip() + '\n… (the rest is left out)'


def round_robin(per_book: list[list[tuple[str, str, Place]]], k: int) -> list[tuple[str, str, Place]]:
    """At most k passages within a result's room: each book's best, then each one's second best, and so on."""
    chosen: list[tuple[str, str, Place]] = []
    used = 0
    for rank in range(max((len(b) for b in per_book), default=0)):
        for passages in per_book:
            if rank < len(passages) and len(chosen) < k:
                label, text, place = passages[rank]
                cost = len(text) + len(label) + 10
                if used + cost <= RESULT_CHARS - 1500:
                    chosen.append(passages[rank])
                    used += cost
    return chosen

# }}}
