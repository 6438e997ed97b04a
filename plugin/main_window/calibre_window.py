# License: GPLv3 Copyright: the Book AI developers
"""What Book AI's actions use of calibre's main window alike: the library open, and its status bar."""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from calibre.gui2.ui import Main


def current_db(gui: 'Main') -> Any:
    """The library open in calibre's main window (its new_api)."""
    return gui.current_db.new_api


def current_library_id(gui: 'Main') -> str:
    """The id Book AI keys the library open by (calibre's library_id)."""
    return str(current_db(gui).library_id)


def say(gui: 'Main', text: str, timeout: int = 10000) -> None:
    """A message in calibre's status bar, for timeout milliseconds (0: until the next one)."""
    bar = getattr(gui, 'status_bar', None)
    if bar is not None:
        bar.show_message(text, timeout)
