# License: GPLv3 Copyright: the Book AI developers
"""What to read next from the reader's own library, without Qt: the one way the main window's "Ask for
what to read next" (from this library) and the command line's `read-next --from-library` find the
books the model chooses from.

The books it starts from (seed_books()): the books selected; with none, the books the reader read
lately in the E-book viewer (conversation/last_read.py, the newest first) and those rated four stars
or more. The books it offers (candidates()): the books of the library's index by meaning nearest
them (finding.more_like(), those left out), the ones not read yet first, at most MAX_CANDIDATES. A
book is read (read_books()) as a calibre field the reader chose says (a yes/no column ticked, a date
or a number set, a text not empty), else when the viewer ever opened it. Then suggestion_question()
is what the model is asked (conversation/prompts.py): the candidates numbered, each described by the
fields the reader lets go (conversation/books.py), and the numbers kept with the turn, so that only
a number sent becomes a link to its book (gui/chat.py).
"""

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from calibre_plugins.bookai.conversation.books import book_info
from calibre_plugins.bookai.conversation.last_read import DAY, LastRead, LastReadRecord, book_key
from calibre_plugins.bookai.conversation.prompts import read_next_from_library
from calibre_plugins.bookai.library_search.finding import more_like
from calibre_plugins.bookai.library_search.vectors import BookVectors

load_translations()

MAX_CANDIDATES = 20   # books the model is given to choose from, at most
POOL = 60             # books found near the seeds, of which the unread go first
MAX_SEEDS = 10        # books started from when none is selected
MAX_SELECTED = 50     # selected books started from, at most
RECENT_DAYS = 180     # a book opened in the viewer since is read lately
HIGHLY_RATED = 8      # calibre's ratings are 0 to 10: four stars and more


@dataclass(frozen=True)
class Candidate:
    """A book the model may suggest: its id, whether the reader has not read it, how near the seeds
    (the cosine), and what it shares with them (finding.shared())."""
    book_id: int
    unread: bool
    score: float = 0.0
    why: str = ''


def viewer_record(record: LastReadRecord | None = None) -> dict[str, LastRead]:
    """The viewer's record of the books opened, by key ({} when none is kept or it cannot be read)."""
    return (record or LastReadRecord()).read()


def opened(db: Any, library_id: str, book_ids: Iterable[int], seen: dict[str, LastRead]) -> dict[int, float]:
    """When each of book_ids was last opened in the viewer (seconds since the epoch), for the books
    the record has: by any of their formats."""
    ids = list(book_ids)
    if not seen or not ids:
        return {}
    formats = db.all_field_for('formats', ids, default_value=())
    out: dict[int, float] = {}
    for b in ids:
        for fmt in formats.get(b) or ():
            entry = seen.get(book_key(library_id, b, str(fmt), ''))
            if entry is not None and entry.seen > out.get(b, -1.0):
                out[b] = entry.seen
    return out


def field_says_read(value: Any, datatype: str) -> bool:
    """Whether a value of the field the reader chose says the book was read: a yes/no column ticked,
    a date, a number or a rating set, any other value not empty."""
    if value is None:
        return False
    if datatype == 'bool':
        return value is True
    if datatype in ('int', 'float', 'rating'):
        return bool(value)
    if isinstance(value, (list, tuple, set, frozenset, dict, str)):
        return bool(value)
    return True  # a date, or another value set


def read_field_choices(db: Any) -> list[tuple[str, str]]:
    """(lookup name, its name as shown) of the fields that can say a book was read: the library's custom
    columns of yes/no, date, number, rating, text or fixed-choice kind."""
    fm = db.field_metadata
    out = []
    for key in fm.custom_field_keys():
        meta = fm[key]
        if meta.get('datatype') in ('bool', 'datetime', 'int', 'float', 'rating', 'text', 'enumeration'):
            out.append((key, str(meta.get('name') or key)))
    return sorted(out, key=lambda kv: kv[1].casefold())


def read_books(db: Any, library_id: str, book_ids: Sequence[int], read_field: str = '',
               seen: dict[str, LastRead] | None = None) -> set[int]:
    """Which of book_ids the reader has read: as read_field says (a calibre field's lookup name), or,
    without one (or one the library does not have), those the viewer ever opened."""
    ids = list(book_ids)
    fm = db.field_metadata
    if read_field and read_field in fm.all_field_keys():
        datatype = fm[read_field].get('datatype') or ''
        try:
            values = db.all_field_for(read_field, ids, default_value=None)
        except Exception:  # a field calibre cannot read for these books: as if none were chosen
            values = None
        if values is not None:
            return {b for b in ids if field_says_read(values.get(b), datatype)}
    return set(opened(db, library_id, ids, viewer_record() if seen is None else seen))


def seed_books(db: Any, library_id: str, selected: Sequence[int] = (), seen: dict[str, LastRead] | None = None,
               now: float | None = None) -> list[int]:
    """The books what to read next starts from: those selected (at most MAX_SELECTED); with none, the
    books opened in the viewer in the last RECENT_DAYS, the newest first, then the books rated four
    stars or more, the best first: at most MAX_SEEDS."""
    if selected:
        return list(dict.fromkeys(selected))[:MAX_SELECTED]
    now = time.time() if now is None else now
    ids = sorted(db.all_book_ids())
    when = opened(db, library_id, ids, viewer_record() if seen is None else seen)
    recent = sorted((b for b, t in when.items() if 0 <= now - t <= RECENT_DAYS * DAY), key=lambda b: -when[b])
    ratings = db.all_field_for('rating', ids, default_value=None)
    rated = sorted((b for b in ids if isinstance(ratings.get(b), (int, float)) and ratings[b] >= HIGHLY_RATED),
                   key=lambda b: (-ratings[b], -b))
    return list(dict.fromkeys([*recent, *rated]))[:MAX_SEEDS]


def candidates(db: Any, library_id: str, index: BookVectors, seeds: Sequence[int], read_field: str = '',
               allowed: Iterable[int] | None = None, seen: dict[str, LastRead] | None = None,
               most: int = MAX_CANDIDATES) -> list[Candidate]:
    """The books nearest the seeds in meaning (of allowed, when given; the seeds left out), the ones
    the reader has not read first, each group the nearest first: at most most of them."""
    found = more_like(db, index, seeds, POOL, allowed)
    read = read_books(db, library_id, [f.book_id for f in found], read_field, seen)
    out = [Candidate(f.book_id, f.book_id not in read, f.score, f.why) for f in found]
    return sorted(out, key=lambda c: not c.unread)[:max(0, most)]


def suggestion_question(db: Any, library_id: str, chosen: Sequence[Candidate], books_word: str = 'books',
                        allowed_fields: Iterable[str] | None = None) -> tuple[str, tuple[tuple[int, str], ...]]:
    """What the model is asked: the candidates numbered from 1, each with the fields the reader lets go
    (allowed_fields, None: as the settings say for the library); and (book id, title) of each, in that
    order: what the answer's numbers link to."""
    fields = None if allowed_fields is None else set(allowed_fields)
    infos = [book_info(db, c.book_id, fields) for c in chosen[:MAX_CANDIDATES]]
    return read_next_from_library(infos, books_word), tuple((b.book_id, b.title) for b in infos)


@dataclass(frozen=True)
class Prepared:
    """What to read next, ready to ask: the books it starts from, the books offered, the question, and
    (book id, title) of the books offered, numbered from 1 (Question.suggested). No seeds: nothing to
    start from; no candidates: nothing near them in the index."""
    seeds: list[int]
    candidates: list[Candidate]
    question: str = ''
    suggested: tuple[tuple[int, str], ...] = ()


def prepare(db: Any, library_id: str, index: BookVectors, selected: Sequence[int] = (), read_field: str = '',
            allowed: Iterable[int] | None = None, seen: dict[str, LastRead] | None = None) -> Prepared:
    """The seeds (seed_books()), the candidates near them, not read first (candidates()), and the question
    about them (suggestion_question()); the viewer's record read once (seen, None: from its file)."""
    seen = viewer_record() if seen is None else seen
    seeds = seed_books(db, library_id, selected, seen)
    if not seeds:
        return Prepared([], [])
    chosen = candidates(db, library_id, index, seeds, read_field, allowed, seen)
    if not chosen:
        return Prepared(seeds, [])
    question, suggested = suggestion_question(db, library_id, chosen, 'book' if len(seeds) < 2 else 'books')
    return Prepared(seeds, chosen, question, suggested)


def read_field_for(library_id: str) -> str:
    """The field the reader chose to say which books of the library were read ('' for none: the books
    opened in the E-book viewer)."""
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    value = plugin_prefs()['read_next_read_field'].get(library_id, '')
    return value if isinstance(value, str) else ''


def set_read_field(library_id: str, name: str) -> None:
    """Keep the field that says which books of the library were read ('' for the viewer's record).
    OSError when the settings cannot be written."""
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    prefs = plugin_prefs()
    kept = {k: v for k, v in prefs['read_next_read_field'].items() if k != library_id}
    if name:
        kept[library_id] = name
    prefs['read_next_read_field'] = kept
