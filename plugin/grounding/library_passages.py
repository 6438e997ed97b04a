# License: GPLv3 Copyright: the Book AI developers
"""Ask my library: passages for a question from calibre's full-text index, over the
whole library or some of its books, numbered for the prompt and cited back.

calibre (6.0+) keeps the text of every book file in a full-text index once the
user turns indexing on for the library. A question in words becomes a safe
query (its words, each quoted, OR'ed: nothing the user types is FTS syntax);
the index ranks the book files; the best few are read with their matches marked,
and the paragraphs richest in the question's words, with their neighbours when
short, become the passages, a few per book, within a token budget: a
LibraryExcerpt. conversation.prompts puts them into the question's message,
delimited as data, each naming its book, and the model cites them as [n], which
library_citations() reads back.
"""

import math
import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from calibre_plugins.bookai.core.messages import CHARS_PER_TOKEN
from calibre_plugins.bookai.grounding.citations import cited_numbers, repeated_passages
from calibre_plugins.bookai.grounding.index import STOP

if TYPE_CHECKING:
    from calibre.db.cache import Cache

load_translations()

DEFAULT_BUDGET = 2000   # tokens of book text, over all the books
MAX_TERMS = 16          # words of the question searched for
MAX_BOOKS = 8           # book files read for passages, the best ranked first
PER_BOOK = 3            # passages from one book at most
PASSAGE_CHARS = 900     # a passage's longest, in characters
SHORT_CHARS = 300       # a passage shorter than this gets its neighbouring paragraphs
HIT_START, HIT_END = '\x02', '\x03'  # marks the index puts around matches (control characters no book text holds)
MOST_HITS = 20_000      # matches of one book read for its passages: the first ones

WORD = re.compile(r'[^\W_]+')   # letters and digits: no quote, bracket, star or dash of FTS syntax
HIT = re.compile(f'{HIT_START}(.*?){HIT_END}', re.DOTALL)
BLANK_LINE = re.compile(r'\n[^\S\n]*\n\s*')  # paragraphs of the indexed text are separated by blank lines
# words too common to find anything with, besides those the passage ranker drops
QUESTION_STOP = STOP | frozenset('''am been being can could would should shall may might must not no nor so if
then than there here these those such into onto out over under up down all any some each every other more most
also just only very me my we our us him hers theirs mine yours whom whose which while again ever near tell
know book books library please'''.split())


@dataclass(frozen=True)
class LibraryPassage:
    """Text of one book that matched a question."""
    book_id: int
    title: str
    authors: tuple[str, ...]
    format: str             # of the book file the index read ('EPUB', 'PDF', ...)
    text: str
    start: int              # character offsets in that file's indexed text
    end: int
    words: tuple[str, ...] = ()  # the matched words in it, as the book spells them (lower case)


@dataclass(frozen=True)
class LibraryExcerpt:
    """The passages sent with a question about the library, numbered from 1 in the prompt."""
    question: str
    query: str              # the full-text query they were found with ('' if the question has no word to search)
    passages: tuple[LibraryPassage, ...]
    matched_books: int = 0  # how many books the index matched (the best ranked were read)

    @property
    def book_ids(self) -> tuple[int, ...]:
        """The books the passages come from, in the order they first appear."""
        return tuple(dict.fromkeys(p.book_id for p in self.passages))

    def passage(self, number: int) -> LibraryPassage | None:
        """Passage number n (from 1), or None when no such passage was sent."""
        return self.passages[number - 1] if 0 < number <= len(self.passages) else None


@dataclass(frozen=True)
class LibraryCitation:
    number: int
    sent: bool              # False: the model cited a passage it was not given
    book_id: int = 0
    title: str = ''
    format: str = ''
    text: str = ''
    repeated: bool = False  # not cited by the model: the answer repeats this passage's words


class LibrarySearchError(Exception):
    """The library cannot be searched; the message says why, in words."""


# the index {{{

def fts_available(db: 'Cache') -> bool:
    """True when the library (db: its new_api) has full-text indexing turned on."""
    try:
        return bool(db.is_fts_enabled())
    except AttributeError:  # a calibre before 6.0
        return False


def indexing_left(db: 'Cache') -> tuple[int, int]:
    """(book files not indexed yet, book files in all) of a library with indexing on."""
    try:
        left, total = db.fts_indexing_progress()[:2]
    except Exception:
        return 0, 0
    return max(0, left or 0), max(0, total or 0)


def not_enabled_message(db: 'Cache | None' = None) -> str:
    """Why the library cannot be searched, and how to turn its full-text index on."""
    path = getattr(getattr(db, 'backend', None), 'library_path', '') or _('LIBRARY')
    return _('This library has no full-text index: turn it on in calibre with "Search full text" (the icon at the '
             'left end of the search bar, or Ctrl+/) by ticking "Index books in this library to allow searching '
             'their full text", or with: calibredb fts_index enable --with-library "{path}".').format(path=path)


def fts_message(db: 'Cache') -> str:
    """What keeps the library's full-text index from finding everything, in words; '' when nothing does."""
    if not fts_available(db):
        return not_enabled_message(db)
    left, total = indexing_left(db)
    if left:
        return _('calibre is still indexing this library: {left} of {total} book files are not indexed yet, and '
                 'their text cannot be found until they are.').format(left=left, total=total)
    return ''

# }}}


# the question as a query {{{

def query_terms(question: str) -> list[str]:
    """The words of a question worth searching for, lower case, each once, in order."""
    terms = []
    for w in WORD.findall((question or '').lower()):
        if w in QUESTION_STOP or (len(w) < 2 and w.isascii()) or w in terms:
            continue
        terms.append(w)
    return terms[:MAX_TERMS]


def fts_query(question: str) -> str:
    """An FTS5 query that finds any of the question's words: '"lighthouse" OR "keeper"'. The
    words hold letters and digits only, and each is quoted, so no question is a syntax error."""
    return ' OR '.join(f'"{w}"' for w in query_terms(question))

# }}}


def library_excerpt(db: 'Cache', question: str, book_ids: Iterable[int] | None = None,
                    budget: int = DEFAULT_BUDGET) -> LibraryExcerpt:
    """The passages of the library's books (db: its new_api) that best match question,
    from the books in book_ids only when given, within budget tokens. Raises
    LibrarySearchError when the library has no full-text index."""
    if not fts_available(db):
        raise LibrarySearchError(not_enabled_message(db))
    query = fts_query(question)
    restrict = None if book_ids is None else {int(b) for b in book_ids}
    if not query or restrict == set():
        return LibraryExcerpt(question, query, ())
    ranked = ranked_files(db, query, restrict)
    read = ranked[:max(1, min(MAX_BOOKS, budget // 150))]
    texts = marked_texts(db, query, read)
    per_book = []
    for book_id, fmt in read:
        marked = texts.get((book_id, fmt))
        if marked:
            title, authors = book_names(db, book_id)
            per_book.append([LibraryPassage(book_id, title, authors, fmt, text, start, end, words)
                             for start, end, text, words in best_passages(marked)])
    return LibraryExcerpt(question, query, fit_budget(per_book, budget), len(ranked))


def ranked_files(db: 'Cache', query: str, restrict: set[int] | None) -> list[tuple[int, str]]:
    """(book id, format) of the best matching file of each matching book, best book first."""
    rows = db.fts_search(query, restrict_to_book_ids=restrict, return_text=False, result_type=list)
    best: dict[int, str] = {}
    for r in rows:
        best.setdefault(r['book_id'], r['format'])
    return list(best.items())


def marked_texts(db: 'Cache', query: str, files: list[tuple[int, str]]) -> dict[tuple[int, str], str]:
    """{(book id, format): the file's whole indexed text with every match marked}."""
    if not files:
        return {}
    wanted = set(files)

    def keep(result):  # the text of other formats of these books is dropped as it comes
        return result if (result['book_id'], result['format']) in wanted else None
    rows = db.fts_search(query, highlight_start=HIT_START, highlight_end=HIT_END, snippet_size=None,
                         restrict_to_book_ids={b for b, f in files}, return_text=True, result_type=list,
                         process_each_result=keep)
    return {(r['book_id'], r['format']): r['text'] for r in rows if r is not None}


def book_names(db: 'Cache', book_id: int) -> tuple[str, tuple[str, ...]]:
    """The book's title and authors."""
    return db.field_for('title', book_id) or _('Unknown'), tuple(db.field_for('authors', book_id) or ())


# passages of one book {{{

def unmark(marked: str) -> tuple[str, list[tuple[int, int, str]]]:
    """(text, hits): the text without the marks, and (start, end, word) of its first MOST_HITS
    matches (a book matched in every word costs no more than that)."""
    text = marked.replace(HIT_START, '').replace(HIT_END, '')
    hits: list[tuple[int, int, str]] = []
    removed = at = 0  # marks before the match, in marked: the match is that much earlier in text
    for m in HIT.finditer(marked):
        if len(hits) >= MOST_HITS:
            break
        removed += marked.count(HIT_START, at, m.start()) + marked.count(HIT_END, at, m.start())
        word = m.group(1)
        inner = word.count(HIT_START)  # a stray mark inside a match: not in the text either
        start = m.start() - removed
        hits.append((start, start + len(word) - inner, word.replace(HIT_START, '').lower()))
        removed += len(HIT_START) + inner + len(HIT_END)
        at = m.end()
    return text, hits


class Spans:
    """(start, end) of each paragraph of a text, as two arrays of integers: a text of millions
    of paragraphs costs 16 bytes a paragraph."""

    def __init__(self) -> None:
        self.starts, self.ends = array('q'), array('q')

    def append(self, span: tuple[int, int]) -> None:
        self.starts.append(span[0])
        self.ends.append(span[1])

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i: int) -> tuple[int, int]:
        return self.starts[i], self.ends[i]


def paragraphs(text: str) -> Spans:
    """(start, end) of each paragraph of the text."""
    spans, at = Spans(), 0
    for m in BLANK_LINE.finditer(text):
        if not text[at:m.start()].isspace() and m.start() > at:
            spans.append((at, m.start()))
        at = m.end()
    if text[at:].strip():
        spans.append((at, len(text)))
    return spans


def best_passages(marked: str, count: int = PER_BOOK) -> list[tuple[int, int, str, tuple[str, ...]]]:
    """(start, end, text, words) of the count passages of a book's marked text that hold the
    most of the question's rarer words, best first, none overlapping."""
    text, hits = unmark(marked)
    if not hits:
        return []
    weights = word_weights(hits)
    paras = paragraphs(text)
    hits_of: dict[int, list[tuple[int, int, str]]] = {}
    for hit in hits:
        i = bisect_right(paras.starts, hit[0]) - 1
        if i >= 0:
            hits_of.setdefault(i, []).append(hit)
    candidates = []
    for i, inside in hits_of.items():
        start, end = paras[i]
        if end - start > PASSAGE_CHARS:
            start, end = densest_window(start, end, inside, weights)
            inside = [h for h in inside if start <= h[0] and h[1] <= end]
            cut = (start > paras[i][0], end < paras[i][1])
        else:
            (start, end), cut = with_neighbours(paras, i), (False, False)
        words = {h[2] for h in inside}
        candidates.append((sum(weights[w] for w in words) + 0.01 * len(inside), start, end, cut, words))
    candidates.sort(key=lambda c: (-c[0], c[1]))
    chosen: list[tuple[int, int, str, tuple[str, ...]]] = []
    for score, start, end, cut, words in candidates:
        if any(start < e and s < end for s, e, *rest in chosen):
            continue
        chosen.append((start, end, passage_text(text, start, end, *cut), tuple(sorted(words))))
        if len(chosen) == count:
            break
    return chosen


def word_weights(hits: list[tuple[int, int, str]]) -> dict[str, float]:
    """Each matched word's weight: the rarer in the book, the more a passage holding it counts."""
    counts: dict[str, int] = {}
    for h in hits:
        counts[h[2]] = counts.get(h[2], 0) + 1
    total = len(hits)
    return {w: math.log(1 + total / n) for w, n in counts.items()}


def densest_window(start: int, end: int, hits: list[tuple[int, int, str]], weights: dict[str, float],
                   size: int = PASSAGE_CHARS) -> tuple[int, int]:
    """(start, end) of the stretch of size characters of a long paragraph (from start to end)
    whose distinct matched words weigh the most (hits: in the order of the text)."""
    counts: dict[str, int] = {}
    score, j = 0.0, 0
    best, best_score = (hits[0][0], hits[0][1]), -1.0
    for i, (lo, _hi, word) in enumerate(hits):  # the stretch that begins at hit i
        while j < len(hits) and hits[j][1] <= lo + size:
            w = hits[j][2]
            counts[w] = counts.get(w, 0) + 1
            score += weights[w] if counts[w] == 1 else 0
            j += 1
        if score > best_score:
            best, best_score = (lo, hits[j - 1][1]), score
        counts[word] -= 1
        score -= weights[word] if not counts[word] else 0
    middle = (best[0] + best[1]) // 2
    lo = max(start, min(middle - size // 2, end - size))
    return lo, min(end, lo + size)


def with_neighbours(paras: Spans, i: int) -> tuple[int, int]:
    """(start, end) of paragraph i, with the paragraphs around it while it is short."""
    first = last = i
    while paras[last][1] - paras[first][0] < SHORT_CHARS:
        grown = False
        if first > 0 and paras[last][1] - paras[first - 1][0] <= PASSAGE_CHARS:
            first, grown = first - 1, True
        if last + 1 < len(paras) and paras[last + 1][1] - paras[first][0] <= PASSAGE_CHARS:
            last, grown = last + 1, True
        if not grown:
            break
    return paras[first][0], paras[last][1]


def passage_text(text: str, start: int, end: int, cut_start: bool = False, cut_end: bool = False) -> str:
    """The passage's text: its paragraphs one a line, whitespace within them made single spaces;
    where it cuts a paragraph, it cuts at a word and says so with "…"."""
    if cut_start:
        space = text.find(' ', start, start + 40)
        start = space + 1 if space != -1 else start
    if cut_end:
        space = text.rfind(' ', end - 40, end)
        end = space if space > start else end
    paras = [' '.join(p.split()) for p in BLANK_LINE.split(text[start:end])]
    return ('…' if cut_start else '') + '\n'.join(p for p in paras if p) + ('…' if cut_end else '')

# }}}


def fit_budget(per_book: list[list[LibraryPassage]], budget: int) -> tuple[LibraryPassage, ...]:
    """The passages that fit in budget tokens: each book's best first, then each one's second
    best, and so on; in the prompt, a book's passages together and in the book's order."""
    kept, used = [], 0
    for rank in range(max((len(b) for b in per_book), default=0)):
        for book in per_book:
            if rank < len(book):
                cost = len(book[rank].text) // CHARS_PER_TOKEN + 1
                if used + cost <= budget:
                    kept.append(book[rank])
                    used += cost
    order = {p.book_id: i for i, p in enumerate(b[0] for b in per_book if b)}
    return tuple(sorted(kept, key=lambda p: (order[p.book_id], p.start)))


# citations {{{

def library_citations(answer: str, ex: LibraryExcerpt) -> list[LibraryCitation]:
    """The distinct [n] citations in answer, in the order they first appear, each tied to
    the book and text of passage n; a number that was not sent is flagged (sent=False). For
    an answer that cites none, the passages it repeats (citations.repeated_passages), marked
    repeated."""
    found = []
    for number in cited_numbers(answer):
        p = ex.passage(number)
        found.append(LibraryCitation(number, False) if p is None else
                     LibraryCitation(number, True, p.book_id, p.title, p.format, p.text))
    for number in repeated_passages(answer, [p.text for p in ex.passages]):  # none when it cites any
        p = ex.passages[number - 1]
        found.append(LibraryCitation(number, True, p.book_id, p.title, p.format, p.text, repeated=True))
    return found

# }}}
