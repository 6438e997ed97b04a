# License: GPLv3 Copyright: the Book AI developers
"""What the reader sees of the lookups the model made while answering (conversation/lookups.py):
under the answer, one line each ("Looked up: searched 'the keeper': 3 passages [5] [6] [7]"),
each passage number a link as the answer's citations are. While the answer streams the lines
come as the lookups do; once it has ended they are folded into one line ("3 lookups") that
unfolds when clicked.

A lookup's summary and arguments come from the model and from the book: they are shown as plain
text, on one line, their control characters visible (core.printable.one_line), bounded in length,
escaped. The passage numbers are Book AI's own.

A lookup's passages are cited as the passages sent with the question are: their places follow
the question's in Turn.places, numbered on from them (Lookup.first). cited_place() and
passage_text() find a number's place and text there, or in the lookups themselves when the turn
does not hold them yet (an answer still streaming).
"""

from collections.abc import Iterable, Sequence
from html import escape
from typing import TYPE_CHECKING

from calibre_plugins.bookai.conversation.lookups import Lookup
from calibre_plugins.bookai.conversation.prompts import passage_texts
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.grounding.scopes import Place

if TYPE_CHECKING:
    from calibre_plugins.bookai.conversation.conversation import Turn

load_translations()

MUTED_COLOR = '#7f8c8d'  # of what is said about an answer, rather than the answer (gui/chat.py too)
MOST_SUMMARY_CHARS = 300  # of a lookup's line, before "…"
MOST_LOOKUPS_SHOWN = 64  # lines under one answer (conversation.MOST_LOOKUPS_KEPT are kept)


def bounded(text: str, most: int = MOST_SUMMARY_CHARS) -> str:
    """text on one line, its control characters visible, at most most characters (and "…")."""
    text = one_line(text if isinstance(text, str) else str(text))
    return text if len(text) <= most else text[:most - 1] + '…'


def link(target: str, text: str, title: str = '') -> str:
    """One of our links (bookai:target), as HTML: gui/chat.py's ChatView makes them signals."""
    t = f' title="{escape(title)}"' if title else ''
    return f'<a href="bookai:{target}"{t} style="text-decoration:none">{escape(text)}</a>'


def lookup_line(lookup: Lookup) -> str:
    """One lookup, in words, as plain text: "Looked up: searched 'the keeper': 3 passages"."""
    summary = bounded(lookup.summary or lookup.tool or '?')
    if lookup.refused:
        return _('Looked up, refused: {what}').format(what=summary)
    return _('Looked up: {what}').format(what=summary)


def lookup_html(index: int, lookup: Lookup) -> str:
    """One lookup's line, its passages' numbers links to them (turn index's citations)."""
    line = escape(lookup_line(lookup))  # no tooltip of the arguments: Qt may show a tooltip as HTML
    shown, more = lookup.shown_numbers()
    numbers = ['[' + link(f'cite/{index}/{n}', str(n), place_title(n, lookup.places[n - lookup.first])) + ']'
               for n in shown]
    if more:
        numbers.append('…')
    return line + (' ' + ' '.join(numbers) if numbers else '')


def place_title(n: int, place: Place) -> str:
    """A passage's link's tooltip, as the answer's citations have it."""
    if place.book_id:
        return _('Passage {n}: {title}').format(n=n, title=bounded(place.chapter, 120))
    return _('Passage {n}: {chapter}, at {position:.0%}').format(n=n, chapter=bounded(place.chapter, 120),
                                                                  position=place.position)


def lines_html(index: int, lookups: Sequence[Lookup]) -> str:
    """The lookups' lines, in order (bounded in number)."""
    lines = [lookup_html(index, lookup) for lookup in lookups[:MOST_LOOKUPS_SHOWN]]
    if len(lookups) > MOST_LOOKUPS_SHOWN:
        left = len(lookups) - MOST_LOOKUPS_SHOWN
        lines.append(escape(ngettext('{count} more lookup is not shown.', '{count} more lookups are not shown.',
                                     left).format(count=left)))
    return f'<p style="margin-top:4px; margin-bottom:4px; color:{MUTED_COLOR}">' + '<br>'.join(lines) + '</p>'


def lookups_html(index: int, lookups: Sequence[Lookup], shown: bool) -> str:
    """Under a finished answer: "3 lookups", a link that unfolds (shown) or folds them; '' for none."""
    if not lookups:
        return ''
    count = len(lookups)
    text = ngettext('{count} lookup', '{count} lookups', count).format(count=count)
    tip = _('Hide what the model looked up') if shown else _('What the model looked up in the book while answering')
    head = (f'<p style="margin-top:8px; margin-bottom:2px; color:{MUTED_COLOR}">'
            + link(f'lookups/{index}', ('▾ ' if shown else '▸ ') + text, tip) + '</p>')
    return head + (lines_html(index, lookups) if shown else '')


def all_lookups(turn: 'Turn', live: Iterable[Lookup] = ()) -> tuple[Lookup, ...]:
    """The turn's lookups, and those of live (an answer still streaming) it does not hold yet."""
    kept = tuple(turn.lookups)
    return kept + tuple(lookup for lookup in live if lookup not in kept)


def cited_place(turn: 'Turn', n: int, live: Iterable[Lookup] = ()) -> Place | None:
    """The place of passage n of turn: sent with the question or found by a lookup; None for none."""
    if 0 < n <= len(turn.places):
        return turn.places[n - 1]
    for lookup in all_lookups(turn, live):
        if lookup.first > 0 and 0 <= n - lookup.first < len(lookup.places):
            return lookup.places[n - lookup.first]
    return None


def passage_text(turn: 'Turn', n: int, live: Iterable[Lookup] = ()) -> str:
    """The text of passage n of turn, as it was sent ('' when not kept)."""
    text = passage_texts(turn.passages).get(n, '')
    if text:
        return text
    for lookup in all_lookups(turn, live):
        if lookup.first > 0 and 0 <= n - lookup.first < len(lookup.places):
            return passage_texts(lookup.text).get(n, '')
    return ''


def number_of(turn: 'Turn', place: Place, live: Iterable[Lookup] = ()) -> int:
    """The number turn cites place by (sent with the question or found by a lookup); 0 for none."""
    if place in turn.places:
        return turn.places.index(place) + 1
    for lookup in all_lookups(turn, live):
        if lookup.first > 0 and place in lookup.places:
            return lookup.first + lookup.places.index(place)
    return 0


def passage_count(turn: 'Turn', live: Iterable[Lookup] = ()) -> int:
    """The highest passage number turn can cite: those sent with the question and its lookups'."""
    count = len(turn.places)
    for lookup in all_lookups(turn, live):
        if lookup.first > 0 and lookup.places:
            count = max(count, lookup.first + len(lookup.places) - 1)
    return count
