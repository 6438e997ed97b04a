# License: GPLv3 Copyright: the Book AI developers
"""The book's tools: what a model may look up in one book while it answers one question
(conversation/lookups.py runs them), each result clamped to what the reader has read.

- search_book: the passages that best match some words (and their meaning, where the question's
  ranking has embeddings), each with its chapter;
- read_around: the text around a passage already numbered, or around a place in the book, bounded;
- contents: the chapters begun before the reader's place, with the kept summary of each one
  finished before it;
- xray_entry: what the X-Ray says of a character, place or term (only when an X-Ray is kept).

THE CLAMP: in every scope but "book", nothing at or after the reader's place (the character
offset scopes.excerpt() stops at, `until`) is ever in a result. A request past the place is
refused in words ("the reader has not reached that part"); search results, text read around, the
contents and the summaries all stop before it. Every passage a result holds is numbered on from
the number the loop gives, as the passages sent with the question are, and comes with its Place so
that the answer's citations link. The model's arguments are hostile: anything but a JSON object of
the declared fields, of the right types and sizes, is refused in words, never raised.
"""

import bisect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from calibre_plugins.bookai.core.limits import load_json
from calibre_plugins.bookai.core.messages import CHARS_PER_TOKEN, Tool, ToolCall
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.grounding.embeddings import EmbeddingIndex, ranked
from calibre_plugins.bookai.grounding.extract import Book
from calibre_plugins.bookai.grounding.index import Index, Passage, passages
from calibre_plugins.bookai.grounding.scopes import Place

load_translations()

MOST_RESULTS = 8           # passages one search returns
DEFAULT_RESULTS = 5
MOST_QUERY_CHARS = 500     # of a search's words
MOST_NAME_CHARS = 200      # of an X-Ray entry's name
MOST_AROUND_WORDS = 600    # read around a place, before and after together
DEFAULT_AROUND_WORDS = 150  # on each side, when the model does not say
MOST_SUMMARY_CHARS = 1500  # of one chapter's summary in the contents
MOST_CONTENTS_CHARS = 12000
MOST_TITLE_CHARS = 200

NOT_REACHED = 'The reader has not reached that part of the book yet: it cannot be looked up.'
# a summary cites passages as the whole book numbers them: those numbers are not this answer's
BOOK_CITATION = re.compile(r'\s*\[\d+(?:\s*[-–,]\s*\d+)*\]')


@dataclass(frozen=True)
class ToolResult:
    """What running one call gave: the text that goes back to the model (numbered passages, or
    words saying why there are none), and what the reader is told of it."""
    text: str
    summary: str                     # for the reader, one line: "searched 'the keeper': 3 passages"
    places: tuple[Place, ...] = ()   # the passages the text holds, in their numbers' order
    refused: bool = False            # an error told in words: bad arguments, past the place, no such tool


@dataclass(frozen=True)
class KeptXRay:
    """An X-Ray kept for the book (conversation/xray.py), as the tools see it: the place it was made
    up to (a character offset) and the entry for a name (None: no such entry)."""
    until: int
    entry: Callable[[str], str | None]


@dataclass(frozen=True)
class Kept:
    """What was made of the book before and kept, that the tools show: the chapters' summaries by
    chapter index, and the X-Ray (conversation/lookup_sources.py reads them)."""
    summaries: Mapping[int, str] = field(default_factory=dict)
    xray: KeptXRay | None = None


class BadArguments(ValueError):
    """The model's arguments, refused: why, in words the model reads."""


def tool(name: str, description: str, properties: dict, required: Sequence[str] = ()) -> Tool:
    return Tool(name, description, {'type': 'object', 'properties': properties, 'required': list(required),
                                    'additionalProperties': False})


def plain_block(items: Iterable[tuple[str, str]], start: int = 1) -> str:
    """(label, text) pairs numbered from start, one passage after another: for the tests and the
    benchmark; the conversation numbers them with prompts.numbered_block, which also defuses them."""
    return '\n\n'.join(f'[{n}] ({label})\n{text}' for n, (label, text) in enumerate(items, start))


class BookTools:
    """The tools of one question about book (a Toolbox, conversation/lookups.py): position is the
    reader's place (a fraction, or None), scope the question's (grounding.scopes.SCOPES), index the
    book's passages ranked by words (made here when None); embedding_index and embed (the question's
    words to a vector) rank by meaning too where the question's ranking does; summaries are the kept
    summaries of the book's chapters by chapter index; xray the kept X-Ray; sent the passages that
    went with the question (numbered 1, 2, ... there: not sent again); numbered writes numbered
    passages as the prompt does (conversation.prompts.numbered_block)."""

    def __init__(self, book: Book, position: float | None, scope: str, index: Index | None = None, *,
                 embedding_index: EmbeddingIndex | None = None, embed: Callable[[str], list[float]] | None = None,
                 summaries: Mapping[int, str] | None = None, xray: KeptXRay | None = None,
                 sent: Sequence[Passage] = (), numbered: Callable[[Iterable[tuple[str, str]], int], str] = plain_block
                 ) -> None:
        self.book, self.scope = book, scope
        # the same `until` as scopes.excerpt(): none for "book", nor without a place
        self.until: int | None = None if position is None or scope == 'book' else int(
            max(0.0, min(1.0, position)) * book.length)
        self._index = index
        self.embedding_index, self.embed = embedding_index, embed
        self.summaries = dict(summaries or {})
        self.xray = xray if xray is not None and (self.until is None or xray.until <= self.until) else None
        self.numbered = numbered
        # every number the model has seen, to the text it stands for (a character span)
        self.shown: dict[int, tuple[int, int]] = {n: (p.start, p.end) for n, p in enumerate(sent, 1)}
        self.sent_spans = {(p.start, p.end) for p in sent}
        self.starts = [p.start for p in book.paragraphs]

    @property
    def index(self) -> Index:
        if self._index is None:
            self._index = Index(passages(self.book))
        return self._index

    # what the model is offered {{{

    def tools(self) -> tuple[Tool, ...]:
        offered = [
            tool('search_book', 'Search the book for passages that match some words. Returns the best passages, '
                 'numbered so that you can cite them as [n], each with its chapter.',
                 {'query': {'type': 'string', 'description': 'the words to look for'},
                  'k': {'type': 'integer', 'description': f'how many passages, 1 to {MOST_RESULTS}',
                        'minimum': 1, 'maximum': MOST_RESULTS}}, ('query',)),
            tool('read_around', 'Read the text around a numbered passage, or around a place in the book given as '
                 'a fraction from 0 (its start) to 1 (its end). Give passage or position.',
                 {'passage': {'type': 'integer', 'description': 'the number of a passage you were given'},
                  'position': {'type': 'number', 'description': 'a place in the book, from 0 to 1'},
                  'words_before': {'type': 'integer', 'minimum': 0, 'maximum': MOST_AROUND_WORDS},
                  'words_after': {'type': 'integer', 'minimum': 0, 'maximum': MOST_AROUND_WORDS}}),
            tool('contents', 'The table of contents of the book as far as the reader has read, with a summary of '
                 'each chapter where one exists.', {}),
        ]
        if self.xray is not None:
            offered.append(tool('xray_entry', 'What the X-Ray of the book says of a character, place or term, as '
                                'of the reader\'s place.', {'name': {'type': 'string'}}, ('name',)))
        return tuple(offered)

    def description(self) -> str:
        return description(self.until is not None)

    # }}}

    def run(self, call: ToolCall, first_number: int) -> ToolResult:
        names = {t.name for t in self.tools()}
        if call.name not in names:
            return ToolResult(f'There is no tool named {call.name!r}. The tools are: {", ".join(sorted(names))}.',
                              _('asked for a tool that does not exist'), refused=True)
        try:
            arguments = parsed_arguments(call)
            if call.name == 'search_book':
                return self.search_book(arguments, first_number)
            if call.name == 'read_around':
                return self.read_around(arguments, first_number)
            if call.name == 'contents':
                return self.contents()
            return self.xray_entry(arguments)
        except BadArguments as e:
            return ToolResult(f'The call was not run: {e}', _('a lookup with wrong arguments'), refused=True)

    def visible(self, p: Passage) -> bool:
        return self.until is None or p.end <= self.until

    def numbered_result(self, found: Sequence[tuple[int, int, str]], first_number: int) -> tuple[str, tuple[Place, ...]]:
        """found (start, end, text of each passage) numbered from first_number: the text and the Places."""
        places, items = [], []
        for n, (start, end, text) in enumerate(found, first_number):
            self.shown[n] = (start, end)
            title = self.chapter_title(start)
            items.append((title, text))
            places.append(Place(title, self.book.fraction(start), self.book.cfi_at(start) or ''))
        return self.numbered(items, first_number), tuple(places)

    def chapter_title(self, offset: int) -> str:
        ch = self.book.chapter_at(offset)
        return one_line(ch.title)[:MOST_TITLE_CHARS] if ch is not None else ''

    def search_book(self, arguments: dict, first_number: int) -> ToolResult:
        query = text_argument(arguments, 'query', MOST_QUERY_CHARS)
        k = int_argument(arguments, 'k', DEFAULT_RESULTS, 1, MOST_RESULTS)
        vector = None
        if self.embedding_index is not None and self.embed is not None:
            try:
                vector = self.embed(query)
            except Exception:  # by words, then, as the question's ranking does when meaning fails
                vector = None
        found = [p for p in ranked(self.index, self.embedding_index, query, vector, k=k + len(self.shown),
                                   until=self.until) if self.visible(p)]
        already = [n for n, span in self.shown.items() for p in found if (p.start, p.end) == span]
        fresh = [p for p in found if (p.start, p.end) not in self.shown.values()][:k]
        shown = one_line(query)[:60]
        if not fresh:
            words = 'No passage the reader has read matches these words.' if self.until is not None else \
                'No passage of the book matches these words.'
            if already:
                words += ' Passages you already have match them: ' + ', '.join(f'[{n}]' for n in sorted(already))
            return ToolResult(words, _('searched "{query}": nothing new').format(query=shown))
        text, places = self.numbered_result([(p.start, p.end, p.text) for p in fresh], first_number)
        if already:
            text += '\nPassages you already have match too: ' + ', '.join(f'[{n}]' for n in sorted(already))
        # the passages' numbers are not in the words: every way of showing a lookup adds them (as links)
        return ToolResult(text, ngettext('searched "{query}": {n} passage', 'searched "{query}": {n} passages',
                                         len(fresh)).format(query=shown, n=len(fresh)), places)

    def read_around(self, arguments: dict, first_number: int) -> ToolResult:
        before = int_argument(arguments, 'words_before', DEFAULT_AROUND_WORDS, 0, MOST_AROUND_WORDS)
        after = int_argument(arguments, 'words_after', DEFAULT_AROUND_WORDS, 0, MOST_AROUND_WORDS)
        if before + after > MOST_AROUND_WORDS:
            before, after = before * MOST_AROUND_WORDS // (before + after), after * MOST_AROUND_WORDS // (before + after)
        number = int_argument(arguments, 'passage', 0, -1, 10 ** 6) if arguments.get('passage') is not None else None
        if number is not None and number not in self.shown and arguments.get('position') is not None:
            number = None  # a passage that is none (0, say) beside a place: the place is what was meant
        if number is not None:
            if number not in self.shown:
                raise BadArguments(f'there is no passage [{number}]; give the number of a passage you were given.')
            start, end = self.shown[number]
            what = f'[{number}]'
        elif arguments.get('position') is not None:
            fraction = arguments['position']
            if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
                raise BadArguments('position must be a number from 0 to 1.')
            start = end = int(fraction * self.book.length)
            what = f'{fraction:.0%}'
        else:
            raise BadArguments('give passage (a number you were given) or position (from 0 to 1).')
        if self.until is not None and start >= self.until:
            return ToolResult(NOT_REACHED, _('asked to read past your place: refused'), refused=True)
        paras = self.book.paragraphs
        first = max(0, bisect.bisect_right(self.starts, start) - 1)
        last = max(first, bisect.bisect_left(self.starts, max(end, start + 1)) - 1)
        chosen = list(range(first, last + 1))
        count = 0
        i = first - 1
        while i >= 0 and count < before:
            count += len(paras[i].text.split())
            chosen.insert(0, i)
            i -= 1
        count = 0
        i = last + 1
        while i < len(paras) and count < after:
            count += len(paras[i].text.split())
            chosen.append(i)
            i += 1
        texts, begin, stop = [], None, 0
        for i in chosen:
            p = paras[i]
            text = p.text
            if self.until is not None:
                if p.start >= self.until:
                    break
                text = text[:self.until - p.start]
            if not text.strip():
                continue
            begin = p.start if begin is None else begin
            stop = p.start + len(text)
            texts.append(text)
        words = '\n'.join(texts).split()
        if begin is None or not words:
            return ToolResult('There is no text there.', _('read around {what}: no text').format(what=what))
        body = '\n'.join(texts)
        most = MOST_AROUND_WORDS + (last - first + 1) * 200  # the passage itself, and the words around it
        if len(words) > most:
            body = ' '.join(words[:most])
        text, places = self.numbered_result([(begin, stop, body)], first_number)
        return ToolResult(text, _('read around {what}').format(what=what), places)

    def contents(self) -> ToolResult:
        ends = chapter_ends(self.book)
        lines, length = [], 0
        for i, ch in enumerate(self.book.chapters):
            if self.until is not None and ch.start >= self.until:
                break
            line = f'{i + 1}. {one_line(ch.title)[:MOST_TITLE_CHARS] or "(untitled)"}'
            finished = self.until is None or ends.get(i, self.book.length) <= self.until
            summary = self.summaries.get(i)
            if summary and finished:
                line += ': ' + BOOK_CITATION.sub('', ' '.join(summary.split()))[:MOST_SUMMARY_CHARS]
            if length + len(line) > MOST_CONTENTS_CHARS:
                lines.append('(more chapters are not listed)')
                break
            lines.append(line)
            length += len(line) + 1
        if not lines:
            return ToolResult('The reader has not begun any chapter yet.', _('the contents: none read yet'))
        head = 'The chapters the reader has begun:' if self.until is not None else 'The chapters of the book:'
        return ToolResult(head + '\n' + '\n'.join(lines), ngettext('the contents: {n} chapter',
                                                                    'the contents: {n} chapters',
                                                                    len(lines)).format(n=len(lines)))

    def xray_entry(self, arguments: dict) -> ToolResult:
        name = text_argument(arguments, 'name', MOST_NAME_CHARS)
        entry = self.xray.entry(name) if self.xray is not None else None
        shown = one_line(name)[:60]
        if not entry:
            return ToolResult(f'The X-Ray has no entry for {shown!r}.', _('X-Ray: no entry for "{name}"').format(
                name=shown))
        return ToolResult(entry[:MOST_SUMMARY_CHARS * 2], _('X-Ray: "{name}"').format(name=shown))


def chapter_ends(book: Book) -> dict[int, int]:
    """Where each chapter's text ends (a character offset), by chapter index."""
    ends: dict[int, int] = {}
    for p in book.paragraphs:
        ends[p.chapter] = max(ends.get(p.chapter, 0), p.start + len(p.text))
    return ends


def parsed_arguments(call: ToolCall) -> dict:
    """The call's arguments: a JSON object (no arguments at all: an empty one). Raises BadArguments."""
    if call.cut:
        raise BadArguments('the arguments are too long.')
    text = call.arguments.strip() or '{}'
    try:
        value = load_json(text)
    except (ValueError, RecursionError):  # limits.TooComplex is a ValueError
        raise BadArguments('the arguments are not JSON.') from None
    if not isinstance(value, dict):
        raise BadArguments('the arguments must be a JSON object.')
    return value


def text_argument(arguments: dict, name: str, most: int) -> str:
    value = arguments.get(name)
    if not isinstance(value, str) or not value.strip():
        raise BadArguments(f'{name} must be some words.')
    if len(value) > most:
        raise BadArguments(f'{name} is too long (at most {most} characters).')
    return value


def int_argument(arguments: dict, name: str, default: int, least: int, most: int) -> int:
    value = arguments.get(name)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadArguments(f'{name} must be a whole number.')
    return max(least, min(most, value))


def tokens(text: str) -> int:
    return len(text) // CHARS_PER_TOKEN + 1


def description(clamped: bool) -> str:
    """What the model can see through the book's tools, in a sentence for What will be sent: up to
    the reader's place (clamped), or the whole book."""
    if not clamped:
        return _('The model may search the whole book, read around its passages and see its contents.')
    return _('The model may search the book up to where you are, read around its passages and see its '
             'contents; nothing after your place.')
