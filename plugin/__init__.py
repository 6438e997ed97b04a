# License: GPLv3 Copyright: the Book AI developers
"""Book AI: calibre's AI features as a plugin you choose to install.

This file is imported by every calibre process (the main window, the E-book
viewer, conversion workers, the command-line tools), and read without being run
by the calibre plugin index. So it only declares the wrapper class, with
literal metadata, and imports its real code lazily: no Qt, no AI code, no
network here.
"""

import sys
from typing import TYPE_CHECKING, NoReturn

from calibre.customize import InterfaceActionBase

if TYPE_CHECKING:
    from calibre_plugins.bookai.gui.settings_dialog import SettingsWidget


class BookAI(InterfaceActionBase):

    name = 'Book AI'
    description = ('Discuss your books with an AI of your choice, in the library and while '
                   'reading. Nothing is sent anywhere until you set up a provider.')
    author = 'The Book AI developers'
    version = (1, 5, 0)
    minimum_calibre_version = (6, 0, 0)
    supported_platforms = ['windows', 'osx', 'linux']
    actual_plugin = 'calibre_plugins.bookai.main_window.action:BookAIAction'

    def initialize(self) -> None:
        """Run by every calibre process. In the E-book viewer only, the Ask AI panel is added
        (viewer/hook.py); everywhere else this does nothing."""
        if 'calibre.gui2.viewer.main' in sys.modules:
            try:
                # late, as everything here: see the module's docstring
                from calibre_plugins.bookai.viewer.hook import install  # on use: importing the plugin costs nothing
                install()
            except Exception as e:  # the viewer must work, with or without us
                print(f'Book AI: no Ask AI panel in this E-book viewer: {e}', file=sys.stderr)

    def is_customizable(self) -> bool:
        return True

    def config_widget(self) -> 'SettingsWidget':
        """Preferences → Plugins → Customize: the same settings as the Book AI menu's."""
        # late, as everything here: see the module's docstring
        from calibre.gui2.ui import get_gui
        # on use: importing the plugin costs nothing
        from calibre_plugins.bookai.gui.settings_dialog import SettingsWidget
        gui = get_gui()
        return SettingsWidget(gui.current_db.new_api if gui is not None else None)

    def save_settings(self, config_widget: 'SettingsWidget') -> None:
        config_widget.commit()

    def cli_main(self, argv: list[str]) -> NoReturn:
        """calibre-debug -r "Book AI" -- COMMAND (see cli.py)."""
        # late, as everything here: see the module's docstring
        from calibre_plugins.bookai.cli import main  # on use: importing the plugin costs nothing
        sys.exit(main(argv[1:]))
