# License: GPLv3 Copyright: the Book AI developers
"""What is said about the books in a conversation, and nothing more.

Title and authors always; any other field (standard or a custom column) only
when the user ticked it in the settings; nothing else by default. The words
sent are English, as the prompts are; the answer's language is asked for
separately (language_instruction).
"""

from dataclasses import dataclass

load_translations()

# fields the settings offer besides title and authors (custom columns are added per library)
STANDARD_FIELDS = ('series', 'tags', 'publisher', 'pubdate', 'languages', 'rating', 'comments', 'identifiers')


@dataclass(frozen=True)
class BookInfo:
    book_id: int
    title: str
    authors: tuple = ()
    series: str = ''
    series_index: float | None = None
    tags: tuple = ()
    fields: tuple = ()      # (name, text) of the other allowed fields
    notes: tuple = ()       # comments and long-text columns, as plain text
    languages: tuple = ()   # the book's languages as calibre has them (ISO 639 codes): not sent, see answer_language()

    @property
    def authors_text(self):
        return ' & '.join(self.authors)


def book_info(db, book_id, allowed=()):
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


class BookLibrary:
    """A calibre library as conversations see it: its books, described with the fields the
    user allows, and the history of conversations about them."""

    def __init__(self, db, history=None):
        self.db = db  # the library's new_api
        self._history = history

    @classmethod
    def open(cls, path):
        """The library at path, or None if there is none."""
        import os
        if not os.path.exists(os.path.join(path, 'metadata.db')):
            return None
        from calibre.library import db
        return cls(db(path).new_api)

    @property
    def library_id(self):
        return self.db.library_id

    @property
    def history(self):
        if self._history is None:
            from calibre_plugins.bookai.conversation.history import History
            self._history = History()
        return self._history

    def has_book(self, book_id):
        return self.db.has_id(book_id)

    def books(self, book_ids):
        from calibre_plugins.bookai.settings.prefs import plugin_prefs
        allowed = plugin_prefs()['book_fields']
        return [book_info(self.db, book_id, allowed) for book_id in book_ids]


def html_to_text(html):
    try:
        from calibre.utils.html2text import html2text
        return html2text(html)
    except Exception:  # html2text missing: keep the words, drop the tags
        import re
        from html import unescape
        return unescape(re.sub(r'<[^>]+>', ' ', html or ''))


def describe_book(book, position, count):
    which = '' if count < 2 else ('first ' if position == 0 else 'next ')
    text = f'The {which}book is: {book.title} by {book.authors_text or "an unknown author"}.'
    if book.series:
        number = f' (number {book.series_index:g})' if book.series_index else ''
        text += f' It is in the series: {book.series}{number}.'
    if book.tags:
        text += ' It is tagged with the following tags: ' + ', '.join(book.tags) + '.'
    if book.fields:
        text += ' It has the following additional metadata.'
        for name, value in book.fields:
            text += f'\n{name}: {value}'
    if book.notes:
        text += '\nSome notes about this book:\n' + '\n'.join(book.notes)
    return text


def context_prompt(books, language='', grounded=False):
    """The system message that opens a conversation about books. grounded: passages of the book
    come with the questions, so the model does not need to know the book already."""
    if not books:  # a question about the library: the books come with the passages found
        text = ('I wish to ask about the books in my library. When you answer the questions use markdown '
                'formatting for the answers wherever possible.')
        return text + (' ' + language_instruction(language) if language else '')
    text = 'I wish to discuss the following book. ' if len(books) < 2 else 'I wish to discuss the following books. '
    for i, book in enumerate(books):
        text += describe_book(book, i, len(books)) + '\n---------------\n\n'
    text += 'When you answer the questions use markdown formatting for the answers wherever possible.'
    if grounded:
        pass
    elif len(books) > 1:
        text += (' If any of the specified books are unknown to you, instead of answering the following questions, '
                 'just say the books are unknown.')
    else:
        text += (' If the specified book is unknown to you instead of answering the following questions just say '
                 'the book is unknown.')
    if language:
        text += ' ' + language_instruction(language)
    return text


def reading_prompt(book, has_selection, language=''):
    """The system message of a conversation started while reading (as calibre's viewer words it)."""
    text = ''
    if book is not None and book.title:
        text = f'I am currently reading the book: {book.title}'
        if book.authors:
            text += f' by {book.authors_text}'
        text += ('. I have some questions about content from this book.' if has_selection
                 else '. I have some questions about this book.')
        text += ' '
    text += 'When you answer the questions use markdown formatting for the answers wherever possible.'
    if language:
        text += ' ' + language_instruction(language)
    return text


def language_instruction(language):
    return f'If you can speak in {language}, then respond in {language}.'


def answer_language(books=()):
    """The language answers are asked for, in English, as the settings say ('' for none):
    calibre's interface language, the language of the books (else the interface's), or a fixed one."""
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    choice = plugin_prefs()['answer_language']
    if choice == 'never':
        return ''
    if choice == 'book':
        return books_language(books) or interface_language()
    return interface_language() if choice == 'interface' else choice


def books_language(books):
    """The language of the first book that has one, in English ('French'), or ''."""
    for book in books:
        for code in book.languages:
            name = language_name(code)
            if name:
                return name
    return ''


def language_name(code, localize=False):
    """The name of a language code (ISO 639, 'fr' or 'fra'): in English, or as calibre shows it."""
    try:
        from calibre.utils.localization import calibre_langcode_to_name, canonicalize_lang
        code = canonicalize_lang(code)
        return calibre_langcode_to_name(code, localize=localize) if code and code != 'und' else ''
    except Exception:
        return ''


def interface_language():
    """calibre's interface language, in English ('German'), or '' for English."""
    try:
        from calibre.utils.localization import calibre_langcode_to_name, canonicalize_lang, get_lang
        name = calibre_langcode_to_name(canonicalize_lang(get_lang()) or 'eng', localize=False) or 'English'
    except Exception:
        return ''
    return '' if name == 'English' else name
