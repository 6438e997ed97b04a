# License: GPLv3 Copyright: the Book AI developers
"""The books of a conversation, and what may be said about them.

Title and authors always; any other field (standard or a custom column) only
when the user ticked it in the settings; nothing else by default. The fields
offered are those calibre's own "Discuss book with AI" offers: every field of the
library calibre can display, but for title, authors and the ids (offered_fields).
Standard fields are chosen once for every library ('book_fields'), custom columns
for each library ('book_custom_fields', by the library's id); allowed_fields()
and set_allowed_fields() are the one way to read and write that choice.

Each field is written as calibre writes it for its own AI (format_book_for_query):
as calibre shows it (Metadata.format_field), long-text fields as Markdown or as they
are, the series with its number; every value cut to a bounded length and freed of
control characters and of the chat templates' control tokens, since a book's
metadata comes from outside too. How the book is described to the model is
conversation.prompts'; the answer's language is found here (answer_language) and
asked for there.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from html import unescape
from typing import TYPE_CHECKING, Any

from calibre_plugins.bookai.conversation.prompts import defused
from calibre_plugins.bookai.core.printable import CONTROL, one_line, without_controls
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre.db.cache import Cache

load_translations()

# never offered, as in calibre: title and authors always go; the others are sort keys and ids
NOT_OFFERED = frozenset(('title', 'authors', 'author_sort', 'sort', 'id', 'uuid'))

# The longest one field's value is sent, in characters (a list of tags, a publisher, a
# custom column...): the longest real ones are a few hundred. A longer one is cut.
MOST_FIELD_CHARS = 1000
# The longest one long-text field (comments, a long-text custom column) is sent, in
# characters, about 2,500 tokens: real book descriptions are rarely half as long.
MOST_NOTE_CHARS = 10_000
# The most characters of long-text fields sent about one book, all of them together.
MOST_NOTES_CHARS = 20_000
# The most characters of a comment's HTML read to make its text: far more than MOST_NOTE_CHARS of
# text takes, and what calibre's HTML converters get through in well under a second (a library's
# comments come from anywhere: 24 MB of paragraphs took them over 30 seconds).
MOST_COMMENTS_READ = 200_000


@dataclass(frozen=True)
class BookInfo:
    book_id: int
    title: str
    authors: tuple[str, ...] = ()
    series: str = ''
    series_index: float | None = None
    tags: tuple[str, ...] = ()
    fields: tuple[tuple[str, str], ...] = ()  # (name, text) of the other allowed fields
    notes: tuple[str, ...] = ()      # comments and long-text columns, as Markdown or plain text
    # the book's languages as calibre has them (ISO 639 codes): not sent, see answer_language()
    languages: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # names shown in lists, titles and the History (from calibre or a History file): on one line,
        # nothing in them obeyed (core/printable.py)
        object.__setattr__(self, 'title', one_line(self.title))
        object.__setattr__(self, 'series', one_line(self.series))
        if any(isinstance(a, str) and CONTROL.search(a) for a in self.authors):
            object.__setattr__(self, 'authors', tuple(one_line(a) for a in self.authors))

    @property
    def authors_text(self) -> str:
        return ' & '.join(self.authors)


# which fields may be sent {{{

def offered_fields(field_metadata: Any, custom: bool = True) -> list[str]:
    """The lookup names of the fields that may be sent besides title and authors, as calibre's
    own AI offers them: every field calibre can display, sorted by lookup name as calibre
    sorts; without the custom columns unless custom."""
    from calibre.utils.icu import primary_sort_key
    keys = [k for k in field_metadata.displayable_field_keys()
            if k not in NOT_OFFERED and (custom or not k.startswith('#'))]
    return sorted(keys, key=lambda k: primary_sort_key(field_metadata[k].get('label') or k))


def allowed_fields(library_id: str = '') -> set[str]:
    """The fields the books of a library may be described with besides title and authors: the
    standard fields chosen for every library and the custom columns chosen for this one (with
    no choice of its own, those Book AI 1.0.0 kept for every library). library_id: the
    library's id ('' for none: the standard fields only)."""
    prefs = plugin_prefs()
    chosen = [n for n in prefs['book_fields'] if isinstance(n, str)]
    standard = {n for n in chosen if not n.startswith('#')}
    if not library_id:
        return standard
    per_library = prefs['book_custom_fields']
    if library_id in per_library:
        custom = {n for n in per_library[library_id] if isinstance(n, str) and n.startswith('#')}
    else:
        custom = {n for n in chosen if n.startswith('#')}
    return standard | custom


def set_allowed_fields(library_id: str, names: Iterable[str]) -> None:
    """Allow exactly names (lookup names, besides title and authors): the standard fields for
    every library, the custom columns ('#name') for the library whose id is library_id (none
    with library_id ''). The custom columns of other libraries stay as they were. Raises
    OSError when the settings cannot be written."""
    names = {n for n in names if isinstance(n, str) and n and n not in ('title', 'authors')}
    prefs = plugin_prefs()
    old_custom = [n for n in prefs['book_fields'] if isinstance(n, str) and n.startswith('#')]  # Book AI 1.0.0's
    prefs['book_fields'] = sorted(n for n in names if not n.startswith('#')) + old_custom
    if library_id:
        prefs['book_custom_fields'] = dict(prefs['book_custom_fields'],
                                           **{library_id: sorted(n for n in names if n.startswith('#'))})

# }}}


# what is sent about a book {{{

def book_info(db: 'Cache', book_id: int, allowed: Iterable[str] | None = None) -> BookInfo:
    """BookInfo for a book of a calibre library (db: the library's new_api), with the fields
    in allowed besides title and authors (None: those allowed_fields() gives for the library),
    each as calibre's own AI writes it."""
    mi = db.get_metadata(book_id)
    if allowed is None:
        allowed = allowed_fields(db.library_id)
    fm = db.field_metadata
    allowed = set(allowed)
    fields, notes = [], []
    series, series_index = '', None
    tags: tuple[str, ...] = ()
    # in the order the settings show them; never the ids, nor a column the library does not have
    for name in (k for k in offered_fields(fm) if k in allowed):
        if mi.is_null(name) and not name.startswith('#'):
            fill_in(mi, db, book_id, name)
        if mi.is_null(name):
            continue
        if name == 'series':
            series, series_index = clipped(mi.series or ''), mi.series_index
            continue
        if name == 'tags':
            tags = bounded_list(mi.tags or ())
            continue
        meta = fm[name]
        if name == 'comments' or meta.get('datatype') == 'comments':
            kind = (meta.get('display') or {}).get('interpret_as') or 'html'
            value = mi.get(name)
            if not isinstance(value, str):
                continue
            notes.append(value if name != 'comments' and kind in ('long-text', 'short-text', 'markdown')
                         else comments_as_markdown(value))
            continue
        try:
            label, text = mi.format_field(name)
        except Exception:  # a value calibre itself cannot show
            continue
        text = clipped(' '.join(str(text or '').split()))
        if text:
            fields.append((clipped(' '.join(str(label or name).split()), 100), text))
    kept, room = [], MOST_NOTES_CHARS
    for note in notes:
        if room < 2:
            break
        note = clipped(note.strip(), min(MOST_NOTE_CHARS, room))
        if note:
            kept.append(note)
            room -= len(note)
    return BookInfo(book_id, clipped(mi.title or _('Unknown')), bounded_list(mi.authors or ()), series, series_index,
                    tags, tuple(fields), tuple(kept), tuple(mi.languages or ()))


def fill_in(mi: Any, db: 'Cache', book_id: int, name: str) -> None:
    """Set a standard field calibre's get_metadata() leaves out (the size, the path) on mi,
    from the library."""
    try:
        value = db.field_for(name, book_id)
    except Exception:  # not a field of this library
        return
    if value not in (None, '', (), []):
        try:
            mi.set(name, value)
        except Exception:
            pass


def clipped(text: str, most: int = MOST_FIELD_CHARS) -> str:
    """text as it may be sent: without control characters or control tokens, at most most
    characters (cut with an ellipsis)."""
    text = defused(without_controls(text))
    return text if len(text) <= most else text[:max(0, most - 1)].rstrip() + '\u2026'


def bounded_list(values: Iterable[str]) -> tuple[str, ...]:
    """The values (tags, authors) that fit in MOST_FIELD_CHARS together, each as clipped()."""
    kept, room = [], MOST_FIELD_CHARS
    for value in values:
        value = clipped(' '.join(str(value).split()))
        if not value:
            continue
        if len(value) + 2 > room:
            break
        kept.append(value)
        room -= len(value) + 2
    return tuple(kept)


def comments_as_markdown(html: str) -> str:
    """A comment's HTML as Markdown, as calibre's own AI sends it: of its first MOST_COMMENTS_READ
    characters."""
    html = (html or '')[:MOST_COMMENTS_READ]
    try:
        from calibre.library.comments import comments_as_markdown as as_markdown  # calibre 8.16 and later
    except ImportError:
        as_markdown = None
    try:
        if as_markdown is not None:
            return as_markdown(html)
        from calibre.library.comments import comments_to_html  # the same, on older calibre
        from calibre.utils.html2text import html2text
        return html2text(comments_to_html(html), single_line_break=False)
    except Exception:  # html2text missing, or HTML it cannot read
        return html_to_text(html)

# }}}


def html_to_text(html: str) -> str:
    """A comment's HTML as plain text: of its first MOST_COMMENTS_READ characters."""
    html = (html or '')[:MOST_COMMENTS_READ]
    try:
        from calibre.utils.html2text import html2text  # guarded: a calibre build may lack it
        return html2text(html)
    except Exception:  # html2text missing: keep the words, drop the tags
        return unescape(re.sub(r'<[^>]+>', ' ', html))


def answer_language(books: Iterable[BookInfo] = ()) -> str:
    """The language answers are asked for, in English, as the settings say ('' for none):
    calibre's interface language, the language of the books (else the interface's), or a fixed one."""
    choice = plugin_prefs()['answer_language']
    if choice == 'never':
        return ''
    if choice == 'book':
        return books_language(books) or interface_language()
    return interface_language() if choice == 'interface' else choice


def books_language(books: Iterable[BookInfo]) -> str:
    """The language of the first book that has one, in English ('French'), or ''."""
    for book in books:
        for code in book.languages:
            name = language_name(code)
            if name:
                return name
    return ''


def language_name(code: str, localize: bool = False) -> str:
    """The name of a language code (ISO 639, 'fr' or 'fra'): in English, or as calibre shows it."""
    try:
        from calibre.utils.localization import calibre_langcode_to_name, canonicalize_lang  # guarded, as above
        code = canonicalize_lang(code)
        return calibre_langcode_to_name(code, localize=localize) if code and code != 'und' else ''
    except Exception:
        return ''


def interface_language() -> str:
    """calibre's interface language, in English ('German'), or '' for English."""
    try:
        from calibre.utils.localization import calibre_langcode_to_name, canonicalize_lang, get_lang  # guarded
        name = calibre_langcode_to_name(canonicalize_lang(get_lang()) or 'eng', localize=False) or 'English'
    except Exception:
        return ''
    return '' if name == 'English' else name
