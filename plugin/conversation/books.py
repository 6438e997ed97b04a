# License: GPLv3 Copyright: the Book AI developers
"""The books of a conversation, and what may be said about them.

Title and authors always; any other field (standard or a custom column) only
when the user ticked it in the settings; nothing else by default. How they are
described to the model is conversation.prompts'; the answer's language is found
here (answer_language) and asked for there.
"""

import re
from collections.abc import Iterable
from dataclasses import dataclass
from html import unescape
from typing import TYPE_CHECKING

from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre.db.cache import Cache

load_translations()

# fields the settings offer besides title and authors (custom columns are added per library)
STANDARD_FIELDS = ('series', 'tags', 'publisher', 'pubdate', 'languages', 'rating', 'comments', 'identifiers')


@dataclass(frozen=True)
class BookInfo:
    book_id: int
    title: str
    authors: tuple[str, ...] = ()
    series: str = ''
    series_index: float | None = None
    tags: tuple[str, ...] = ()
    fields: tuple[tuple[str, str], ...] = ()  # (name, text) of the other allowed fields
    notes: tuple[str, ...] = ()      # comments and long-text columns, as plain text
    # the book's languages as calibre has them (ISO 639 codes): not sent, see answer_language()
    languages: tuple[str, ...] = ()

    @property
    def authors_text(self) -> str:
        return ' & '.join(self.authors)


def book_info(db: 'Cache', book_id: int, allowed: Iterable[str] = ()) -> BookInfo:
    """BookInfo for a book of a calibre library (db: the library's new_api), with the fields
    in allowed besides title and authors."""
    mi = db.get_metadata(book_id)
    allowed = set(allowed) - {'title', 'authors'}
    fields, notes = [], []
    series, series_index, tags = '', None, ()
    for name in sorted(allowed):
        if name == 'series_index' or mi.is_null(name):
            continue
        if name == 'series':
            series, series_index = mi.series or '', mi.series_index
            continue
        if name == 'tags':
            tags = tuple(mi.tags or ())
            continue
        meta = mi.metadata_for_field(name) or {}
        if name == 'comments' or meta.get('datatype') == 'comments':
            kind = (meta.get('display') or {}).get('interpret_as') or 'html'
            value = mi.get(name)
            notes.append(value if kind in ('long-text', 'short-text', 'markdown') else html_to_text(value))
            continue
        try:
            label, text = mi.format_field(name)
        except Exception:
            continue
        if text:
            fields.append((label or name, text))
    return BookInfo(book_id, mi.title or _('Unknown'), tuple(mi.authors or ()), series, series_index, tags,
                    tuple(fields), tuple(n.strip() for n in notes if n and n.strip()), tuple(mi.languages or ()))


def html_to_text(html: str) -> str:
    """A comment's HTML as plain text."""
    try:
        from calibre.utils.html2text import html2text  # guarded: a calibre build may lack it
        return html2text(html)
    except Exception:  # html2text missing: keep the words, drop the tags
        return unescape(re.sub(r'<[^>]+>', ' ', html or ''))


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
