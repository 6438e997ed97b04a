# License: GPLv3 Copyright: the Book AI developers
"""A reply, or a whole conversation, as a note to keep: Markdown with the date and
the model it came from, in the reader's language. Used by "Save to book" and
"Copy all" in the library, and by the viewer's notes.

Save to book appends a note to a book's comments, or to a custom column of the
comments type, after what the field already holds (append_note). Nothing is ever
replaced.
"""

import time
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from calibre_plugins.bookai.conversation.render import markdown_to_html

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


def append_note(db: 'Cache', book_ids: Iterable[int], field: str, note_md: str) -> list[int]:
    """Append the note to field of each book; the ids changed."""
    kinds = {f: kind for f, name, kind in save_targets(db)}
    if field not in kinds:
        raise ValueError(_('{field} is not a field that can hold notes.').format(field=field))
    values = {}
    with db.write_lock:  # read and write in one go: an edit made meanwhile is not lost
        for book_id in book_ids:
            values[book_id] = appended(db._field_for(field, book_id), note_md, kinds[field])
        db._set_field(field, values)
    return list(values)
