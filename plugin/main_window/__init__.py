# License: GPLv3 Copyright: the Book AI developers
"""Book AI in calibre's main window: action.py is the button and its menu, which calibre
imports as it starts; the windows it opens (discussion.py, ask_library.py,
history_window.py) are imported when first used."""
