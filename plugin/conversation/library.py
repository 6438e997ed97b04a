# License: GPLv3 Copyright: the Book AI developers
"""A calibre library as conversations see it: its books, described with the fields
the reader allows (conversation.books), and the History of conversations about them."""

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING

from calibre_plugins.bookai.conversation.books import BookInfo, allowed_fields, book_info
from calibre_plugins.bookai.conversation.history import History

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
