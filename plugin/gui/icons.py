# License: GPLv3 Copyright: the Book AI developers
"""The plugin's own icons, in a light and a dark variant.

A user's calibre icon theme or icon override wins: calibre looks up
"Book AI/images/<name>.png" there (choosing its own dark variant), as it does
for every plugin. Only without one do we pick the zip's variant for the
current light or dark theme.
"""

from qt.core import QIcon

PLUGIN_NAME = 'Book AI'


def plugin_icon(name: str) -> QIcon:
    """The icon images/<name>.png of the plugin, as the user's theme has it, else for the current theme."""
    themed = QIcon.ic(f'{PLUGIN_NAME}/images/{name}.png')
    if themed.is_ok():
        return themed
    # calibre.gui2 is imported once an icon is drawn: the viewer imports this module while it starts
    from calibre.gui2 import is_dark_theme
    suffix = '-for-dark-theme' if is_dark_theme() else ''
    return get_icons(f'images/{name}{suffix}.png')
