# License: GPLv3 Copyright: the Book AI developers
"""The text embedded for one book, from its metadata, and the digest that says it changed.

A book's entry is its title, authors, series (with its number), tags, publisher, the custom fields
the reader allows (lookup names given by the caller: conversation/books.py allowed_fields()), one
line each, then its description (calibre's comments, HTML made plain text as conversation/books.py
makes it, at most MAX_COMMENTS_READ characters of its HTML read). Every value is metadata from
outside: freed of control characters and of the chat templates' control tokens (books.clipped),
each field at most MAX_FIELD_CHARS, a list at most MAX_LIST_ITEMS values, the description at most
what is left of MAX_ENTRY_CHARS, the whole entry at most MAX_ENTRY_CHARS. The labels are English,
as every word a model reads is (conversation/prompts.py).

Its digest (text_digest) is what vectors.Stamp keeps: an entry whose text is the same needs no new
vector, whatever calibre's last-modified time says (a format added, a rating changed).

The values come as plain mappings, field name to value, as calibre's `db.new_api` gives them
(library_values(): all_field_for), so that an entry is made and tested without calibre.
"""

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from calibre_plugins.bookai.conversation.books import clipped, html_to_text

MAX_ENTRY_CHARS = 2000      # a book's whole entry, at most: small embedding models read 256 to 512 tokens
MAX_FIELD_CHARS = 300       # one field's value (a title, the tags together, a custom field)
MAX_LIST_ITEMS = 50         # values of a list (authors, tags) at most
MAX_CUSTOM_FIELDS = 20      # custom fields in one entry, at most
MAX_COMMENTS_READ = 20_000  # of a description's HTML read to make its text (as grounding/library_tools.py)
STANDARD = ('title', 'authors', 'series', 'series_index', 'tags', 'publisher', 'comments', 'last_modified')
LABELS = {'title': 'Title', 'authors': 'Authors', 'series': 'Series', 'tags': 'Tags', 'publisher': 'Publisher'}


@dataclass(frozen=True)
class Entry:
    """A book's text to embed, and its digest."""
    book_id: int
    text: str
    digest: str


def text_digest(text: str) -> str:
    """What a text is, as 32 hex digits (vectors.DIGEST_BYTES bytes of its SHA-256)."""
    return hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:32]


def one_value(value: Any, most: int = MAX_FIELD_CHARS) -> str:
    """A field's value as one line of text: a list joined by commas, a number as written, a date
    as its day, yes or no; '' for nothing or for what is none of these."""
    if value is None or value == '':
        return ''
    if isinstance(value, bool):
        return 'yes' if value else 'no'
    if isinstance(value, (int, float)):
        return f'{value:g}' if isinstance(value, float) and math.isfinite(value) else (
            str(value) if isinstance(value, int) and abs(value) < 10 ** 18 else '')
    if isinstance(value, (datetime, date)):
        if value.year <= 101:  # calibre's undefined date
            return ''
        try:
            return value.date().isoformat() if isinstance(value, datetime) else value.isoformat()
        except (ValueError, OverflowError):
            return ''
    if isinstance(value, (list, tuple)):
        items = [one_value(v, most) for v in value[:MAX_LIST_ITEMS] if not isinstance(v, (list, tuple, dict))]
        return clipped(', '.join(i for i in items if i), most)
    if isinstance(value, str):
        return clipped(' '.join(value[:most * 4].split()), most)
    return ''


def series_text(series: Any, index: Any) -> str:
    name = one_value(series)
    if not name:
        return ''
    if type(index) in (int, float) and math.isfinite(index) and 0 <= index < 1e6:
        return f'{name} [{index:g}]'
    return name


def description(html: Any, most: int) -> str:
    """A comment's HTML as plain text on few lines, at most most characters."""
    if not isinstance(html, str) or most < 2:
        return ''
    text = html_to_text(html[:MAX_COMMENTS_READ])
    lines = [' '.join(line.split()) for line in text.splitlines()]
    return clipped('\n'.join(line for line in lines if line), most)


def entry_text(values: Mapping[str, Any], custom: Iterable[str] = (),
               labels: Mapping[str, str] | None = None, read: str = '') -> str:
    """A book's text to embed from its values (field name to value, as calibre gives them: title a
    text, authors and tags lists, series_index a number, comments HTML), with the custom fields
    named in custom ('#mood'), labelled as labels say (lookup name to the column's name; default:
    the lookup name without its '#'); read: what the reader has read of it, summarized
    (read_so_far.py), after the description, in what is left of MAX_ENTRY_CHARS."""
    labels = labels or {}
    lines = []
    for name in ('title', 'authors', 'series', 'tags', 'publisher'):
        text = series_text(values.get('series'), values.get('series_index')) if name == 'series' else one_value(
            values.get(name))
        if text:
            lines.append(f'{LABELS[name]}: {text}')
    for name in list(dict.fromkeys(n for n in custom if isinstance(n, str) and n.startswith('#')))[:MAX_CUSTOM_FIELDS]:
        text = one_value(values.get(name))
        if text:
            label = one_value(labels.get(name) or name[1:], 100) or name[1:100]
            lines.append(f'{label}: {text}')
    head = clipped('\n'.join(lines), MAX_ENTRY_CHARS)
    about = description(values.get('comments'), MAX_ENTRY_CHARS - len(head) - 2)
    room = MAX_ENTRY_CHARS - len(head) - len(about) - 4
    if read and room > 40:
        read_text = clipped(' '.join(read.split()), room)
        about = f'{about}\n{read_text}' if about else read_text
    return f'{head}\n\n{about}' if about and head else head or about


def book_entry(book_id: int, values: Mapping[str, Any], custom: Iterable[str] = (),
               labels: Mapping[str, str] | None = None, read: str = '') -> Entry:
    """A book's Entry: its text (entry_text) and the text's digest."""
    text = entry_text(values, custom, labels, read)
    return Entry(book_id, text, text_digest(text))


def modified_time(value: Any) -> float:
    """calibre's last_modified (a datetime, aware or not) as seconds since 1970; 0.0 for none."""
    if isinstance(value, datetime):
        try:
            t = value.timestamp()
        except (ValueError, OverflowError, OSError):
            return 0.0
        return t if math.isfinite(t) and 0 <= t < 1e11 else 0.0
    if type(value) in (int, float) and math.isfinite(value) and 0 <= value < 1e11:
        return float(value)
    return 0.0


def library_values(db: Any, book_ids: Iterable[int], custom: Iterable[str] = ()) -> dict[int, dict[str, Any]]:
    """The values an entry is made of, for each of book_ids, from a calibre library (db: its
    new_api): one all_field_for() per field, as calibre reads a column; a custom column of HTML
    made plain text, as the description is. A custom field the library does not have is left out."""
    ids = list(book_ids)
    out: dict[int, dict[str, Any]] = {b: {} for b in ids}
    for name in (*STANDARD, *dict.fromkeys(n for n in custom if isinstance(n, str) and n.startswith('#'))):
        try:
            found = db.all_field_for(name, ids, default_value=None)
        except Exception:  # not a field of this library
            continue
        html = name.startswith('#') and is_html(db, name)
        for b in ids:
            value = found.get(b)
            out[b][name] = description(value, MAX_FIELD_CHARS).replace('\n', ' ') if html else value
    return out


def is_html(db: Any, name: str) -> bool:
    """Whether a custom field of the library (db: its new_api) holds HTML: a long-text column shown
    as HTML, as calibre's comments are."""
    try:
        meta = db.field_metadata[name]
        return meta.get('datatype') == 'comments' and (meta.get('display') or {}).get('interpret_as', 'html') == 'html'
    except Exception:  # not a field of this library
        return False


def custom_labels(db: Any, custom: Iterable[str]) -> dict[str, str]:
    """The names the custom fields have in the library (db: its new_api), by lookup name."""
    labels = {}
    for name in custom:
        try:
            label = db.field_metadata[name].get('name')
        except Exception:  # not a field of this library
            continue
        if isinstance(label, str) and label:
            labels[name] = label
    return labels
