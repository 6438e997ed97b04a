# License: GPLv3 Copyright: the Book AI developers
"""Books found by meaning, without Qt: the search box, "More like this" and the command line's
`search --library` and `similar` call these, and show the books in calibre's book list, best first.

search(): the words the reader typed, embedded by the model that made the library's index, and
the books nearest them (vectors.BookVectors.search), restricted to the books calibre shows (its
current search and virtual library: `allowed`). Each book found says why, in one line: the part
of its entry (a field's line, or a sentence of its description) nearest the words in meaning,
asked of the same model for the first EXPLAINED books in one request; for the others, and when
that request fails, the first part that shares a word with them; else nothing but its score.

more_like(): the books nearest the selected ones (the mean of their vectors), the selected left
out; each says what it shares with them that the reader can see (authors, series, tags), else
that it is close in meaning.
"""

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.library_search.building import Embedder, entries_of
from calibre_plugins.bookai.library_search.vectors import BadVector, BookVectors, dot, unit_vector

load_translations()

MAX_QUERY_CHARS = 1000   # of the reader's words embedded (a small model reads 256 to 512 tokens)
DEFAULT_K = 50           # books shown in calibre's list, at most, for one search
EXPLAINED = 5            # books whose why is asked of the model, the best first: each costs its parts' embedding
                         # (about 20 ms a book with a small model on 2 cores: bench/library_50k.py)
MAX_PARTS = 12           # parts of one book's entry compared with the words
WHY_CHARS = 160          # a why as shown
MAX_SELECTED = 200       # selected books "More like this" starts from
SENTENCE = re.compile(r'(?<=[.!?\u3002])\s+')
WORD = re.compile(r'\w{3,}')


@dataclass(frozen=True)
class Found:
    """A book found, how near (the cosine of its vector and the words' or the selected books'), and why."""
    book_id: int
    score: float
    why: str = ''


class NoIndex(Exception):
    """The library has no index by meaning yet, or none made by this model, in one sentence."""


def parts(text: str) -> list[str]:
    """A book's entry cut into what a why may show: its fields' lines, then its description's
    sentences; at most MAX_PARTS, each at most WHY_CHARS."""
    head, _sep, about = text.partition('\n\n')
    out = [line for line in head.splitlines() if line.strip()]
    out += [s for s in SENTENCE.split(' '.join(about.split())) if len(s) > 20]
    return [p if len(p) <= WHY_CHARS else p[:WHY_CHARS - 1].rstrip() + '\u2026' for p in out[:MAX_PARTS]]


def words_of(text: str) -> set[str]:
    return {w[:6] for w in WORD.findall(text.casefold())}


def search(db: Any, library_id: str, index: BookVectors, e: Embedder, words: str, k: int = DEFAULT_K,
           allowed: Iterable[int] | None = None, cancel: CancelToken | None = None) -> list[Found]:
    """The k books of the index nearest words in meaning (of allowed, when given), best first, each
    with why. Raises ProviderError when the words cannot be embedded, Cancelled on Stop."""
    words = ' '.join(words.split())[:MAX_QUERY_CHARS]
    if not words or not len(index):
        return []
    query = e.embed([words], cancel)[0]
    try:
        found = index.search(query, k, allowed)
    except BadVector as err:
        raise ProviderError(_('{provider} sent a vector Book AI cannot use: {why}').format(
            provider=e.provider.display_name, why=str(err))) from None
    ids = [b for b, _s in found]
    entries = parts_of(db, library_id, ids)
    whys = explained(e, query, words, {b: entries[b] for b in ids[:EXPLAINED]}, cancel)
    whys.update(shared_words(words, {b: entries[b] for b in ids[EXPLAINED:]}))
    return [Found(b, score, whys.get(b, '')) for b, score in found]


def parts_of(db: Any, library_id: str, book_ids: list[int]) -> dict[int, list[str]]:
    """The parts() of the entries of book_ids, as the index embedded them."""
    return {x.book_id: parts(x.text) for x in entries_of(db, library_id, book_ids)} if book_ids else {}


def explained(e: Embedder, query: list[float], words: str, entries: dict[int, list[str]],
              cancel: CancelToken | None) -> dict[int, str]:
    """Why each book of entries (its parts, by book id) was found: the part nearest the query (one
    request for all), else the first that shares a word with words."""
    texts = [(b, p) for b, ps in entries.items() for p in ps]
    if not texts:
        return {}
    try:
        vectors = e.embed([p for _b, p in texts], cancel)
        q = unit_vector(query, len(query))
        best: dict[int, tuple[float, str]] = {}
        for (b, p), v in zip(texts, vectors):
            if len(v) != len(q):
                raise BadVector('length')
            score = dot(q, unit_vector(v, len(v)))
            if b not in best or score > best[b][0]:
                best[b] = (score, p)
        return {b: p for b, (_score, p) in best.items()}
    except (ProviderError, BadVector):
        return shared_words(words, entries)


def shared_words(words: str, entries: dict[int, list[str]]) -> dict[int, str]:
    """Why each book of entries was found, without asking the model: the first part that shares a
    word with words."""
    wanted = words_of(words)
    return {b: next((p for p in ps if words_of(p) & wanted), '') for b, ps in entries.items()}


def more_like(db: Any, index: BookVectors, book_ids: Sequence[int], k: int = DEFAULT_K,
              allowed: Iterable[int] | None = None) -> list[Found]:
    """The k books nearest the books of book_ids together (of allowed, when given), those left out,
    best first, each with what it shares with them. [] when none of them is in the index."""
    selected = [b for b in dict.fromkeys(book_ids) if b in index][:MAX_SELECTED]
    if not selected:
        return []
    mean = [0.0] * index.dim
    for b in selected:
        v = index.vector(b) or []
        for i, x in enumerate(v):
            mean[i] += x
    if not any(mean) or not all(math.isfinite(x) for x in mean):
        return []
    left_out = set(selected)
    pool = None if allowed is None else [b for b in allowed if b not in left_out]
    found = [(b, s) for b, s in index.search(mean, k + len(selected), pool) if b not in left_out][:k]
    shares = shared(db, selected, [b for b, _s in found])
    return [Found(b, s, shares.get(b, '')) for b, s in found]


def shared(db: Any, selected: Sequence[int], found: Sequence[int]) -> dict[int, str]:
    """What each found book shares with the selected ones, in one line: authors, series, tags."""
    fields = ('authors', 'series', 'tags')
    values: dict[str, dict[int, Any]] = {}
    for name in fields:
        try:
            values[name] = db.all_field_for(name, [*selected, *found], default_value=None)
        except Exception:  # not a field of this library
            values[name] = {}

    def of(name: str, book_id: int) -> set[str]:
        v = values[name].get(book_id)
        if not v:
            return set()
        return {str(x) for x in (v if isinstance(v, (list, tuple)) else [v])}

    theirs = {name: set().union(*(of(name, b) for b in selected)) for name in fields}
    out = {}
    for b in found:
        said = []
        if same := sorted(of('authors', b) & theirs['authors'])[:3]:
            said.append(_('by {authors}').format(authors=', '.join(same)))
        if same := sorted(of('series', b) & theirs['series'])[:1]:
            said.append(_('in the series {series}').format(series=same[0]))
        if same := sorted(of('tags', b) & theirs['tags'])[:5]:
            said.append(_('tagged {tags}').format(tags=', '.join(same)))
        why = '; '.join(said) or _('close in meaning')
        out[b] = why if len(why) <= WHY_CHARS else why[:WHY_CHARS - 1].rstrip() + '\u2026'
    return out
