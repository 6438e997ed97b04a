# License: GPLv3 Copyright: the Book AI developers
"""AI metadata written to a library, only as the reader chose, and undone exactly.

A Proposal is one field of one book: the value the job read when it began (old) and the value
the model gave, checked (metadata/fields.py). apply() writes the proposals the reader ticked:

- a field the reader (or anything else) changed since the job read it is not written: it is a
  conflict, shown, and the reader's value stays;
- before anything is written, the values it replaces are kept for Undo (MetadataUndo), so that
  nothing is lost if calibre or the computer stops halfway; then each value is written through
  calibre's own API and read back, and one calibre did not keep is said;
- proposals made in another library than the one open are never written (the library was
  switched while the job ran).

undo_last() puts back the exact values the last Apply replaced, but where the reader changed a
field since: that one stays, and is said. The kept values live in Book AI's cache, one private
file per library (cache/bookai/metadata-undo/LIBRARY.json), read as hostile (core.files.read_kept:
bounded, only a regular file, a damaged one set aside and never overwritten).

No Qt: the review window and `metadata --apply/--undo` both call these.
"""

import hashlib
import os
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from calibre_plugins.bookai.core.files import read_kept, set_aside_if_can, write_private
from calibre_plugins.bookai.core.printable import one_line

load_translations()

KIND, VERSION = 'metadata-undo', 1
MAX_FILE_BYTES = 64 * 1024 * 1024
MAX_SETS = 20                 # the Applies that can be undone, newest last
MAX_CHANGES = 100_000         # changes in one Apply
MAX_VALUE_CHARS = 200_000     # a text value kept (a description); longer ones are not written either
MAX_LIST_VALUES = 1_000
PLAIN_ID = re.compile(r'[A-Za-z0-9][A-Za-z0-9_-]{0,79}')
FIELD_KEY = re.compile(r'(?:tags|comments|languages|#[a-z0-9_]{1,60})')


@dataclass(frozen=True)
class Proposal:
    """One field of one book to write: its library, book, calibre lookup name and label, the
    value read when the job began, the value to write, and what the reader is told of it."""
    library_id: str
    book_id: int
    key: str
    label: str
    old: Any
    new: Any
    new_tags: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass
class Applied:
    """What apply() did: the proposals written, the conflicts left as the reader has them, and
    the ones not written, each with why in words."""
    written: list[Proposal] = field(default_factory=list)
    conflicts: list[Proposal] = field(default_factory=list)
    failed: list[tuple[Proposal, str]] = field(default_factory=list)


@dataclass
class Undone:
    """What undo_last() did: the changes put back, and those left because the field was changed
    since (book id, field)."""
    restored: list[tuple[int, str]] = field(default_factory=list)
    conflicts: list[tuple[int, str]] = field(default_factory=list)


def comparable(value: Any) -> Any:
    """A field's value as two reads of it compare: lists and tuples as tuples (tags compared
    without regard to case, as calibre matches them), '' and empty lists as None."""
    if isinstance(value, (list, tuple)):
        return tuple(v.casefold() if isinstance(v, str) else v for v in value) or None
    if value == '':
        return None
    return value


def kept_value(value: Any) -> Any:
    """value as it is kept for Undo (JSON), or ValueError for one that cannot be kept whole."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        if len(value) > MAX_VALUE_CHARS:
            raise ValueError('a value too long to keep')
        return value
    if isinstance(value, (list, tuple)) and len(value) <= MAX_LIST_VALUES and all(
            isinstance(v, str) and len(v) <= MAX_VALUE_CHARS for v in value):
        return list(value)
    raise ValueError('a value of a kind that cannot be kept')


def calibre_value(key: str, value: Any) -> Any:
    """A kept value as calibre's set_field takes it for key."""
    if isinstance(value, list):
        return tuple(value)
    return value


class LibraryFile:
    """One JSON file of Book AI's cache per library (ROOT/LIBRARY.json), of one kind and version,
    written privately (core.files.write_private) and read back as hostile (core.files.read_kept:
    bounded, only a regular file); one that cannot be read, or holds what Book AI does not write
    there, is set aside whole (never overwritten). The Undo of AI metadata and its proposals kept
    for later (metadata/kept.py) are such files."""

    kind, version, most_bytes, folder = KIND, VERSION, MAX_FILE_BYTES, 'metadata-undo'

    def __init__(self, root: str | None = None) -> None:
        self.root = root or default_root(self.folder)

    def path(self, library_id: str) -> str:
        name = library_id if PLAIN_ID.fullmatch(library_id or '') else hashlib.sha256(
            str(library_id).encode('utf-8', 'replace')).hexdigest()[:32]
        return os.path.join(self.root, name + '.json')

    def read(self, library_id: str) -> dict | None:
        """The file's object; None when there is none, or it was set aside (damaged)."""
        path = self.path(library_id)
        try:
            return read_kept(path, self.most_bytes, self.kind, self.version)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError, UnicodeError):
            set_aside_if_can(path)
            return None

    def set_aside(self, library_id: str) -> None:
        """The file holds what Book AI does not write there: none of it is obeyed, all kept aside."""
        set_aside_if_can(self.path(library_id))

    def write_data(self, library_id: str, data: dict) -> None:
        import json
        write_private(self.path(library_id), json.dumps(
            dict(data, kind=self.kind, version=self.version), ensure_ascii=False).encode('utf-8'))


class MetadataUndo(LibraryFile):
    """The values Apply replaced, per library, newest last (see the module's doc)."""

    def sets(self, library_id: str) -> list[list[dict]]:
        """The kept Applies of library, oldest first: each its changes ({'book', 'field', 'before',
        'after'}). A file that cannot be read, or holds anything Book AI does not write there, is
        set aside whole, and there is nothing to undo."""
        data = self.read(library_id)
        if data is None:
            return []
        raw = data.get('sets')
        found = [s.get('changes') for s in raw] if isinstance(raw, list) and len(raw) <= MAX_SETS and all(
            isinstance(s, dict) for s in raw) else None
        if found is None or not all(isinstance(c, list) and 0 < len(c) <= MAX_CHANGES and all(map(change_ok, c))
                                    for c in found):
            self.set_aside(library_id)  # one change that is not one Book AI wrote: none is obeyed, all kept aside
            return []
        return found

    def write(self, library_id: str, sets: Sequence[list[dict]]) -> None:
        self.write_data(library_id, {'sets': [{'when': time.time(), 'changes': s} for s in list(sets)[-MAX_SETS:]]})

    def keep(self, library_id: str, changes: list[dict]) -> None:
        """changes kept as the newest Apply; raises OSError when they cannot be (nothing is written
        then)."""
        self.write(library_id, self.sets(library_id) + [changes])


def change_ok(c: object) -> bool:
    if not isinstance(c, dict) or type(c.get('book')) is not int or not 0 < c['book'] < 2 ** 53:
        return False
    if not isinstance(c.get('field'), str) or not FIELD_KEY.fullmatch(c['field']):
        return False
    try:
        kept_value(c.get('before'))
        kept_value(c.get('after'))
    except ValueError:
        return False
    return True


def default_root(folder: str = 'metadata-undo') -> str:
    from calibre.constants import cache_dir  # late: only when Undo is used
    return os.path.join(cache_dir(), 'bookai', folder)


def apply(db: Any, library_id: str, proposals: Iterable[Proposal], undo: MetadataUndo) -> Applied:
    """Write proposals into db (calibre's Cache, db.new_api) of library_id: see the module's doc.
    Raises OSError when the values replaced cannot be kept for Undo: then nothing is written."""
    done = Applied()
    todo: list[tuple[Proposal, Any]] = []
    for p in proposals:
        if p.library_id != library_id:
            done.failed.append((p, _('It was made in another library than the one open: not written.')))
            continue
        try:
            current = db.field_for(p.key, p.book_id)
        except Exception as e:
            done.failed.append((p, _('calibre could not read {field}: {error}').format(
                field=p.label, error=one_line(str(e))[:200])))
            continue
        if comparable(current) != comparable(p.old):
            done.conflicts.append(p)
            continue
        try:
            kept_value(current)
            kept_value(p.new)
        except ValueError:
            done.failed.append((p, _('{field} holds a value too large to keep for Undo: not written.').format(
                field=p.label)))
            continue
        todo.append((p, current))
    if not todo:
        return done
    undo.keep(library_id, [{'book': p.book_id, 'field': p.key, 'before': kept_value(current),
                            'after': kept_value(p.new)} for p, current in todo])
    for p, _current in todo:
        try:
            db.set_field(p.key, {p.book_id: calibre_value(p.key, kept_value(p.new))})
            back = db.field_for(p.key, p.book_id)
        except Exception as e:
            done.failed.append((p, _('calibre could not write {field}: {error}').format(
                field=p.label, error=one_line(str(e))[:200])))
            continue
        if comparable(back) != comparable(kept_value(p.new)):
            done.failed.append((p, _('calibre kept another value of {field} than the one given.').format(
                field=p.label)))
            continue
        done.written.append(p)
    return done


def undo_last(db: Any, library_id: str, undo: MetadataUndo) -> Undone | None:
    """Put back the values the last Apply in library_id replaced (see the module's doc); None when
    there is nothing to undo. The Apply is forgotten once it is undone."""
    sets = undo.sets(library_id)
    if not sets:
        return None
    last = sets.pop()
    done = Undone()
    for c in reversed(last):
        book, key = c['book'], c['field']
        try:
            current = db.field_for(key, book)
        except Exception:  # the book is gone, or the column: nothing to put back
            done.conflicts.append((book, key))
            continue
        if comparable(current) != comparable(c['after']):
            done.conflicts.append((book, key))
            continue
        try:
            db.set_field(key, {book: calibre_value(key, c['before'])})
        except Exception:  # calibre refused it: left as it is, and said
            done.conflicts.append((book, key))
            continue
        done.restored.append((book, key))
    undo.write(library_id, sets)
    return done
