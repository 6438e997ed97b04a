# License: GPLv3 Copyright: the Book AI developers
"""The plugin's own icons, in a light and a dark variant.

A user's calibre icon theme overrides them: calibre looks for
"Book AI/images/<name>.png" in the theme before using the zip's copy.
"""

PLUGIN_NAME = 'Book AI'


def plugin_icon(name):
    from calibre.gui2 import is_dark_theme
    suffix = '-for-dark-theme' if is_dark_theme() else ''
    return get_icons(f'images/{name}{suffix}.png', PLUGIN_NAME)
