# License: GPLv3 Copyright: the Book AI developers
"""The plugin's own icons, in a light and a dark variant.

A user's calibre icon theme or icon override wins: calibre looks up
"Book AI/images/<name>.png" there (choosing its own dark variant), as it does
for every plugin. Only without one do we pick the zip's variant for the
current light or dark theme.
"""

PLUGIN_NAME = 'Book AI'


def plugin_icon(name):
    from qt.core import QIcon
    themed = QIcon.ic(f'{PLUGIN_NAME}/images/{name}.png')
    if themed.is_ok():
        return themed
    from calibre.gui2 import is_dark_theme
    suffix = '-for-dark-theme' if is_dark_theme() else ''
    return get_icons(f'images/{name}{suffix}.png')
