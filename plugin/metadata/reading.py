# License: GPLv3 Copyright: the Book AI developers
"""What AI metadata reads from a calibre library before it asks: the fields it may fill there
(fields_of()), the books as they are when the job begins (books_read(): their details as Book AI
sends a book's details, with only the fields the reader lets go, and the values of the fields to
fill), and the library's own tags, the most used first (known_tags()). No Qt: the calibre job and
`metadata` call these on the library's new_api.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from calibre_plugins.bookai.conversation.books import book_info
from calibre_plugins.bookai.conversation.prompts import describe_book
from calibre_plugins.bookai.metadata.asking import MAX_KNOWN_TAGS, MAX_TEXT_CHARS, BookRead
from calibre_plugins.bookai.metadata.fields import STANDARD, Field, NotFillable, custom_field, standard_field

load_translations()

MAX_BOOKS = 50_000       # books in one run


def fields_of(db: Any, keys: Iterable[str], instructions: Mapping[str, str] | None = None) -> list[Field]:
    """The fields named by keys (calibre lookup names: 'tags', 'comments', 'languages', '#mood'), as
    the library at db has them, each with the reader's instruction for it. Raises NotFillable, in
    words, for one the library has not or that AI metadata cannot fill."""
    instructions = instructions or {}
    found: list[Field] = []
    for key in keys:
        key = str(key).strip()
        if not key or any(f.key == key for f in found):
            continue
        if key in STANDARD:
            found.append(standard_field(key, instructions.get(key, '')))
            continue
        column = db.field_metadata.custom_field_metadata().get(key) if key.startswith('#') else None
        if column is None:
            raise NotFillable(_('The library has no field {name} that Book AI can fill.').format(name=key[:60]))
        found.append(custom_field(key, column, instructions.get(key, '')))
    return found


def books_read(db: Any, library_id: str, book_ids: Sequence[int], fields: Sequence[Field],
               with_text: bool = False) -> list[BookRead]:
    """The books of book_ids (at most MAX_BOOKS; ids the library does not have are left out) as the
    job reads them when it begins: their details as the model is sent a book's details, and the
    values of fields then; with_text (the reader agreed, as to the scope Whole book): the opening
    of each book's text too (opening())."""
    have = db.all_book_ids()
    read = []
    for book_id in [b for b in dict.fromkeys(book_ids) if b in have][:MAX_BOOKS]:
        info = book_info(db, book_id)
        values = {f.key: db.field_for(f.key, book_id) for f in fields}
        read.append(BookRead(library_id, book_id, info.title, describe_book(info, 0, 1), values,
                             opening(db, book_id) if with_text else ''))
    return read


def opening(db: Any, book_id: int, most: int = MAX_TEXT_CHARS) -> str:
    """The first most characters of a book's text, its paragraphs in order, read as every question
    reads it (from the text cache, else read now: conversation.question.library_book_text); '' for
    a book with no readable format, or one that cannot be read."""
    from calibre_plugins.bookai.conversation.question import library_book_text
    from calibre_plugins.bookai.grounding.extract import UnreadableBook
    from calibre_plugins.bookai.grounding.formats import choose_format
    fmt = choose_format(db.formats(book_id))
    if fmt is None:
        return ''
    try:
        book, _index = library_book_text(db, book_id, fmt)
    except UnreadableBook:
        return ''
    out: list[str] = []
    size = 0
    for p in book.paragraphs:
        if size >= most:
            break
        out.append(p.text[:most - size])
        size += len(out[-1]) + 2
    return '\n\n'.join(out)[:most]


def known_tags(db: Any) -> list[str]:
    """The library's tags, the most used first, at most MAX_KNOWN_TAGS."""
    try:
        counts = db.get_usage_count_by_id('tags')
        names = db.get_id_map('tags')
    except Exception:  # a library whose tags cannot be read: none told
        return []
    ranked = sorted(names, key=lambda i: (-counts.get(i, 0), str(names[i]).lower()))
    return [str(names[i]) for i in ranked[:MAX_KNOWN_TAGS]]


def fillable_columns(db: Any) -> list[Field]:
    """The library's custom columns AI metadata can fill, in the order of their names (those of a
    kind it cannot fill left out)."""
    found = []
    for key, column in db.field_metadata.custom_field_metadata().items():
        try:
            found.append(custom_field(key, column))
        except NotFillable:
            continue
    return sorted(found, key=lambda f: f.label.casefold())
