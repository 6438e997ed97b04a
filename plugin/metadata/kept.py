# License: GPLv3 Copyright: the Book AI developers
"""AI metadata kept for later: the proposals of a run not yet applied nor discarded, one file per
library in Book AI's cache (cache/bookai/metadata-kept/LIBRARY.json), so that a review closed
without deciding, or a job that ends while another library is open, loses nothing.

The job keeps its proposals as soon as it has them (add()); Apply and Discard forget the ones done
with (forget()); Review metadata kept for later reads them back (proposals()). The file is read as
hostile, exactly as the Undo of AI metadata is (changes.LibraryFile: bounded, only a regular file,
versioned, set aside whole when anything in it is not what Book AI writes there). A proposal read
back is only ever written through changes.apply(), which writes nothing over a field changed since.

Also what the review shows of a value (shown()) and which proposals the reader has overtaken
(changed_since()). No Qt.
"""

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.metadata.changes import (
    FIELD_KEY, LibraryFile, Proposal, comparable, kept_value,
)

load_translations()

KIND, VERSION = 'metadata-kept', 1
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_PROPOSALS = 100_000       # proposals kept for one library
MAX_LABEL_CHARS = 200         # a field's label
MAX_TITLE_CHARS = 1000        # a book's title
MAX_NOTES = 20                # notes of one proposal
MAX_NOTE_CHARS = 1000
MAX_NEW_TAGS = 200
MAX_SHOWN_CHARS = 300         # a value as a row shows it


@dataclass
class KeptReview:
    """The proposals kept for a library, and the books' titles (by id) as the job read them."""
    proposals: list[Proposal] = field(default_factory=list)
    titles: dict[int, str] = field(default_factory=dict)


class KeptProposals(LibraryFile):
    """The proposals kept for later, per library (see the module's doc)."""

    kind, version, most_bytes, folder = KIND, VERSION, MAX_FILE_BYTES, 'metadata-kept'

    def review(self, library_id: str) -> KeptReview:
        """The proposals kept for library_id, oldest first; none when there is no file, or it was
        set aside (anything in it not what Book AI writes there: none of it is obeyed)."""
        data = self.read(library_id)
        if data is None:
            return KeptReview()
        raw, titles = data.get('proposals'), data.get('titles')
        if data.get('library') != library_id or not isinstance(raw, list) or not 0 < len(raw) <= MAX_PROPOSALS \
                or not isinstance(titles, dict) or len(titles) > MAX_PROPOSALS:
            self.set_aside(library_id)
            return KeptReview()
        found = [proposal_of(library_id, p) for p in raw]
        names = {book_id_of(k): v for k, v in titles.items()}
        if any(p is None for p in found) or any(k is None or not isinstance(v, str) or len(v) > MAX_TITLE_CHARS
                                                for k, v in names.items()):
            self.set_aside(library_id)
            return KeptReview()
        return KeptReview([p for p in found if p is not None], {k: v for k, v in names.items() if k is not None})

    def keep(self, library_id: str, review: KeptReview) -> None:
        """review kept as all that is kept for library_id (the file goes when it holds no proposal);
        OSError when it cannot be."""
        proposals = review.proposals[-MAX_PROPOSALS:]
        if not proposals:
            self.remove(library_id)
            return
        books = {p.book_id for p in proposals}
        self.write_data(library_id, {
            'library': library_id, 'when': time.time(),
            'titles': {str(b): one_line(t)[:MAX_TITLE_CHARS] for b, t in review.titles.items() if b in books},
            'proposals': [dict_of(p) for p in proposals]})

    def add(self, library_id: str, proposals: Sequence[Proposal], titles: Mapping[int, str]) -> KeptReview:
        """proposals kept with those kept already, a newer one of a book's field in place of the older;
        the whole review kept now. OSError when it cannot be kept."""
        kept = self.review(library_id)
        fresh = [p for p in proposals if p.library_id == library_id and storable(p)]
        newer = {(p.book_id, p.key) for p in fresh}
        merged = KeptReview([p for p in kept.proposals if (p.book_id, p.key) not in newer] + fresh,
                            dict(kept.titles))
        merged.titles.update(titles)
        self.keep(library_id, merged)
        return merged

    def forget(self, library_id: str, done: Iterable[tuple[int, str]]) -> KeptReview:
        """The proposals of done (book id, field) forgotten: applied, discarded, or overtaken. What is
        left is kept; OSError when it cannot be."""
        gone = set(done)
        kept = self.review(library_id)
        kept.proposals = [p for p in kept.proposals if (p.book_id, p.key) not in gone]
        self.keep(library_id, kept)
        return kept

    def remove(self, library_id: str) -> None:
        import os
        try:
            os.remove(self.path(library_id))
        except FileNotFoundError:
            pass

    def has(self, library_id: str) -> bool:
        """Whether a file of proposals is kept for library_id (not read: it may still be set aside)."""
        import os
        return os.path.exists(self.path(library_id))


def storable(p: Proposal) -> bool:
    try:
        kept_value(p.old)
        kept_value(p.new)
    except ValueError:
        return False
    return bool(FIELD_KEY.fullmatch(p.key)) and 0 < p.book_id < 2 ** 53


def dict_of(p: Proposal) -> dict:
    return {'book': p.book_id, 'field': p.key, 'label': one_line(p.label)[:MAX_LABEL_CHARS],
            'old': kept_value(p.old), 'new': kept_value(p.new), 'new_tags': list(p.new_tags)[:MAX_NEW_TAGS],
            'notes': [one_line(n)[:MAX_NOTE_CHARS] for n in p.notes[:MAX_NOTES]]}


def book_id_of(key: object) -> int | None:
    if not isinstance(key, str) or not key.isdigit() or len(key) > 16:
        return None
    n = int(key)
    return n if 0 < n < 2 ** 53 else None


def short_texts(value: object, most: int, longest: int) -> tuple[str, ...] | None:
    if not isinstance(value, list) or len(value) > most or not all(
            isinstance(v, str) and len(v) <= longest for v in value):
        return None
    return tuple(value)


def proposal_of(library_id: str, raw: object) -> Proposal | None:
    """One proposal as kept, checked whole; None for anything Book AI does not write there."""
    if not isinstance(raw, dict) or type(raw.get('book')) is not int or not 0 < raw['book'] < 2 ** 53:
        return None
    key, label = raw.get('field'), raw.get('label')
    if not isinstance(key, str) or not FIELD_KEY.fullmatch(key) or not isinstance(label, str) \
            or len(label) > MAX_LABEL_CHARS:
        return None
    try:
        old, new = kept_value(raw.get('old')), kept_value(raw.get('new'))
    except ValueError:
        return None
    if new is None:
        return None
    new_tags = short_texts(raw.get('new_tags'), MAX_NEW_TAGS, MAX_LABEL_CHARS)
    notes = short_texts(raw.get('notes'), MAX_NOTES, MAX_NOTE_CHARS)
    if new_tags is None or notes is None:
        return None
    as_read = (lambda v: tuple(v) if isinstance(v, list) else v)
    return Proposal(library_id, raw['book'], key, one_line(label), as_read(old), as_read(new),
                    tuple(one_line(t) for t in new_tags), tuple(one_line(n) for n in notes))


def changed_since(db: Any, proposals: Iterable[Proposal]) -> set[tuple[int, str]]:
    """The proposals (book id, field) whose field is not as the job read it any more (changed by the
    reader since, or the book gone): Apply would not write them (changes.apply). On calibre's
    new_api; in a thread."""
    found: set[tuple[int, str]] = set()
    have = db.all_book_ids()
    for p in proposals:
        try:
            now = db.field_for(p.key, p.book_id) if p.book_id in have else object()
        except Exception:  # the column is gone
            now = object()
        if comparable(now) != comparable(p.old):
            found.add((p.book_id, p.key))
    return found


def shown(key: str, value: Any, new_tags: Sequence[str] = ()) -> str:
    """A field's value in one line, as the review shows it: a list joined (tags new to the library
    marked), languages by their names, a description's text without its markup,
    at most MAX_SHOWN_CHARS."""
    if value is None or value == '' or value == () or value == []:
        return _('(none)')
    if key == 'languages' and isinstance(value, (list, tuple)):
        from calibre.utils.localization import calibre_langcode_to_name  # late: calibre's table of languages
        value = [calibre_langcode_to_name(str(v)) for v in value]
    if isinstance(value, (list, tuple)):
        new = {t.casefold() for t in new_tags}
        text = ', '.join(_('{tag} (new)').format(tag=v) if str(v).casefold() in new else str(v) for v in value)
    elif isinstance(value, bool):
        text = _('Yes') if value else _('No')
    elif isinstance(value, str) and value.lstrip().startswith('<'):
        import re
        from html import unescape
        text = unescape(re.sub(r'<[^>]+>', ' ', value))
    else:
        text = str(value)
    text = one_line(text)
    return text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS - 1].rstrip() + '…'
