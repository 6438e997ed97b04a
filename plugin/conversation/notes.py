# License: GPLv3 Copyright: the Book AI developers
"""A reply, or a whole conversation, as a note to keep: Markdown with the date and
the model it came from, in the reader's language. Used by "Save to book" and
"Copy all" in the library, and by the viewer's notes.

Save to book appends a note to a book's comments, or to a custom column of the
comments type, after what the field already holds (append_note). Nothing is ever
replaced, and nothing of the reader's is ever lost: each book is written on its own,
under calibre's write lock, from the field as it is at that moment; a field that
another program changed in the library's database behind calibre's back is not
written at all; what was written is read back, from calibre and from the database
file, and when it is not what was meant, or anything fails, the old text is put back
(and, should even that fail, kept in a file of Book AI's cache), and NotSaved says so in
words, with the books that did get the note.
"""

import os
import re
import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from calibre_plugins.bookai.conversation.render import markdown_to_html
from calibre_plugins.bookai.core.files import write_private

if TYPE_CHECKING:
    from calibre.db.cache import Cache

    from calibre_plugins.bookai.conversation.conversation import Turn

load_translations()


def note_markdown(turns: 'Sequence[Turn]', assistant: str = '', when: float | None = None) -> str:
    """The answered turns as a note. assistant names the model when a turn does not."""
    day = time.strftime('%Y-%m-%d', time.localtime(when or time.time()))
    models = sorted({t.model or assistant for t in turns if t.answer} - {''})
    heading = ' · '.join(['**' + _('Book AI') + '**', day] + models)
    parts = [heading]
    for turn in turns:
        if not turn.answer:
            continue
        parts.append('**' + _('Question:') + '** ' + turn.question.strip())
        parts.append(turn.answer.strip())
    return '\n\n'.join(parts) + '\n'


def conversation_markdown(turns: 'Sequence[Turn]', assistant: str = '') -> str:
    """The whole conversation, errors included, as Markdown (for Copy all)."""
    parts = []
    for turn in turns:
        parts.append('**' + _('You') + ':** ' + turn.question.strip())
        if turn.answer:
            parts.append('**' + (turn.model or assistant or _('Assistant')) + ':**\n\n' + turn.answer.strip())
        if turn.error:
            parts.append('*' + turn.error + '*')
    return '\n\n'.join(parts) + '\n'


HTML_KINDS = ('html', '')  # how a comments field shows its text; the others hold plain or Markdown text


def save_targets(db: 'Cache') -> list[tuple[str, str, str]]:
    """[(field, name, kind)]: Comments, then every custom column that holds long text."""
    fm = db.field_metadata
    targets = [('comments', fm['comments'].get('name') or _('Comments'), 'html')]
    for key in sorted(fm.custom_field_keys(), key=lambda k: (fm[k].get('name') or k).lower()):
        meta = fm[key]
        if meta.get('datatype') == 'comments':
            kind = (meta.get('display') or {}).get('interpret_as') or 'html'
            targets.append((key, meta.get('name') or key, kind))
    return targets


def appended(current: str | None, note_md: str, kind: str) -> str:
    """The field's new value: what it held, then the note."""
    current = current or ''
    if kind in HTML_KINDS:
        addition = '<div class="bookai-note">' + markdown_to_html(note_md) + '</div>'
        return current + ('<hr>' if current.strip() else '') + addition
    return current.rstrip('\n') + ('\n\n' if current.strip() else '') + note_md


class NotSaved(Exception):
    """The note did not go to every book: str() says, in words, which books got it and what
    became of each of the others (nothing of theirs is lost); saved: the ids that got it."""

    def __init__(self, sentence: str, saved: list[int]) -> None:
        super().__init__(sentence)
        self.saved = saved


UNREAD = object()  # what on_disk() gives when the database cannot be asked
SQL_NAME = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')


def as_stored(value: str | None) -> str | None:
    """value as calibre stores a text field: stripped, None for nothing."""
    value = (value or '').strip()
    return value or None


def on_disk(db: 'Cache', field: str, book_id: int) -> object:
    """What the library's database file holds in field for book_id (None: nothing), read past
    calibre's copy in memory; UNREAD when it cannot be asked (a layout this code does not know)."""
    try:
        meta = db.fields[field].metadata
        table, column = meta['table'], meta['column']
        if not (isinstance(table, str) and isinstance(column, str) and SQL_NAME.fullmatch(table)
                and SQL_NAME.fullmatch(column)):
            return UNREAD
        rows = list(db.backend.execute(f'SELECT {column} FROM {table} WHERE book=?', (book_id,)))
    except Exception:
        return UNREAD
    if not rows:
        return None
    value = rows[0][0]
    return as_stored(value) if isinstance(value, str) or value is None else UNREAD


def holds(db: 'Cache', field: str, book_id: int, value: str | None) -> bool:
    """Whether field of book_id holds value (as calibre stores it), in calibre and in the file."""
    wanted = as_stored(value)
    disk = on_disk(db, field, book_id)
    return as_stored(db._field_for(field, book_id)) == wanted and (disk is UNREAD or disk == wanted)


def kept_aside(db: 'Cache', field: str, book_id: int, old: str) -> str:
    """Keep old, the text a field held, in a private file of Book AI's cache; its path."""
    from calibre.constants import cache_dir
    name = f'{book_id}-{re.sub(r"[^A-Za-z0-9_]", "_", field)}-{time.strftime("%Y%m%d-%H%M%S")}.txt'
    library = re.sub(r'[^A-Za-z0-9_-]', '_', str(getattr(db, 'library_id', '') or 'library'))[:80]
    path = os.path.join(cache_dir(), 'bookai', 'saved-fields', library, name)
    write_private(path, old)
    return path


def append_note(db: 'Cache', book_ids: Iterable[int], field: str, note_md: str) -> list[int]:
    """Append the note to field of each book; the ids changed. Each book on its own, under
    calibre's write lock, from what the field holds then: a book whose field another program
    changed in the database file is left as it is; what is written is read back (holds()), and
    on any failure the old text is put back. NotSaved when a book did not get the note, saying
    what became of it; ValueError (nothing written) for a field that cannot hold notes."""
    targets = {f: (name, kind) for f, name, kind in save_targets(db)}
    if field not in targets:
        raise ValueError(_('{field} is not a field that can hold notes.').format(field=field))
    name, kind = targets[field]
    saved, problems = [], []
    for book_id in dict.fromkeys(book_ids):
        with db.write_lock:  # read and write in one go: an edit made meanwhile is not lost
            problem = append_to_one(db, book_id, field, name, kind, note_md)
        if problem:
            problems.append(problem)
        else:
            saved.append(book_id)
    if problems:
        done = [_('Saved to {field} of {count} book(s).').format(field=name, count=len(saved))] if saved else []
        raise NotSaved(' '.join(done + problems), saved)
    return saved


def append_to_one(db: 'Cache', book_id: int, field: str, name: str, kind: str, note_md: str) -> str:
    """Append the note to field of one book, under calibre's write lock; '' when it is there, read
    back, else what became of the book in a sentence."""
    try:
        title = db._field_for('title', book_id) or str(book_id)
        old = db._field_for(field, book_id)
        disk = on_disk(db, field, book_id)
    except Exception as e:
        return _('Book {id}: the note could not be saved ({reason}); nothing was changed.').format(
            id=book_id, reason=e)
    if disk is not UNREAD and disk != as_stored(old):
        return _('"{title}": its {field} was changed by another program meanwhile; the note was not added, so '
                 'nothing of that change is lost. Save again to add it.').format(title=title, field=name)
    new = appended(old, note_md, kind)
    try:
        db._set_field(field, {book_id: new})
        if holds(db, field, book_id, new):
            return ''
        reason = _('calibre kept something other than what was written')
    except Exception as e:
        reason = str(e) or type(e).__name__
    try:
        if not holds(db, field, book_id, old):
            db._set_field(field, {book_id: old})
    except Exception:  # what failed after the text was written may fail again: is it back?
        pass
    try:
        back = holds(db, field, book_id, old)
    except Exception:
        back = False
    if back:
        return _('"{title}": the note could not be saved ({reason}); what {field} held before is back.').format(
            title=title, reason=reason, field=name)
    try:
        where = kept_aside(db, field, book_id, old or '')
    except OSError as e:
        return _('"{title}": the note could not be saved ({reason}), and what {field} held before could neither '
                 'be put back nor kept in a file ({problem}).').format(
            title=title, reason=reason, field=name, problem=e.strerror or e)
    return _('"{title}": the note could not be saved ({reason}), and what {field} held before could not be put '
             'back; it is kept in {path}.').format(title=title, reason=reason, field=name, path=where)
