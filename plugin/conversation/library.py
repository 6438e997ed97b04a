# License: GPLv3 Copyright: the Book AI developers
"""A calibre library as conversations see it: its books, described with the fields
the reader allows (conversation.books), the History of conversations about them, and the tools
the model may look things up in it with (library_toolbox())."""

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from calibre_plugins.bookai.conversation.books import BookInfo, allowed_fields, book_info
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.prompts import numbered_block
from calibre_plugins.bookai.grounding.library_tools import LibraryTools

if TYPE_CHECKING:
    from calibre.db.cache import Cache


class BookLibrary:
    """A calibre library as conversations see it: its books, described with the fields the
    user allows, and the history of conversations about them."""

    def __init__(self, db: 'Cache', history: 'History | None' = None) -> None:
        self.db = db  # the library's new_api
        self._history = history

    @classmethod
    def open(cls, path: str) -> 'BookLibrary | None':
        """The library at path, or None if there is none."""
        if not os.path.exists(os.path.join(path, 'metadata.db')):
            return None
        from calibre.library import db  # late: calibre's database code, for the command line only
        return cls(db(path).new_api)

    @property
    def library_id(self) -> str:
        return self.db.library_id

    @property
    def history(self) -> 'History':
        if self._history is None:
            self._history = History()
        return self._history

    def has_book(self, book_id: int) -> bool:
        return self.db.has_id(book_id)

    def books(self, book_ids: Iterable[int]) -> list[BookInfo]:
        allowed = allowed_fields(self.library_id)
        return [book_info(self.db, book_id, allowed) for book_id in book_ids]


def library_toolbox(db: 'Cache', book_ids: Iterable[int] | None = None) -> LibraryTools:
    """The tools the model may look things up with while it answers a question of Ask my library
    (conversation/lookups.py runs them): over the books of book_ids (the books selected), or the
    whole library (None); the books' details only in the fields the reader lets Book AI send, the
    passages numbered as the prompt numbers them, nothing past the reader's place in a book begun."""
    return LibraryTools(db, book_ids, numbered=numbered_block, fields=allowed_fields(db.library_id))
