# License: GPLv3 Copyright: the Book AI developers
"""A reply, or a whole conversation, as a note to keep: Markdown with the date and
the model it came from, in the reader's language. Used by "Save to book" and
"Copy all" in the library, and by the viewer's notes."""

import time

load_translations()


def note_markdown(turns, assistant='', when=None):
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


def conversation_markdown(turns, assistant=''):
    """The whole conversation, errors included, as Markdown (for Copy all)."""
    parts = []
    for turn in turns:
        parts.append('**' + _('You') + ':** ' + turn.question.strip())
        if turn.answer:
            parts.append('**' + (turn.model or assistant or _('Assistant')) + ':**\n\n' + turn.answer.strip())
        if turn.error:
            parts.append('*' + turn.error + '*')
    return '\n\n'.join(parts) + '\n'
