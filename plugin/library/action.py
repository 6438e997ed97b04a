# License: GPLv3 Copyright: the Book AI developers
"""The "Book AI" button and menu of calibre's main window."""

from qt.core import QMenu, QToolButton

from calibre.gui2.actions import InterfaceAction

from calibre_plugins.bookai.gui.icons import plugin_icon
from calibre_plugins.bookai.settings.prefs import plugin_prefs

load_translations()

LAYOUT_PREFIX = 'action-layout-'
# Where the first run puts the button: the main toolbar and the book list's
# context menu, right after calibre's "View" (reading is what Book AI is about),
# or at the end where a user removed "View".
FIRST_RUN_PLACES = ('toolbar', 'context-menu')
PLACE_AFTER = 'View'


class BookAIAction(InterfaceAction):

    name = 'Book AI'
    action_spec = (_('Book AI'), None, _('Discuss your books with AI'), None)
    popup_type = QToolButton.ToolButtonPopupMode.InstantPopup
    action_type = 'current'

    def genesis(self):
        self.qaction.setIcon(plugin_icon('bookai'))
        self.menu = QMenu(self.gui)
        self.qaction.setMenu(self.menu)
        self.create_menu_action(
            self.menu, 'bookai-about', _('About Book AI'), triggered=self.show_about,
            description=_('What Book AI is, and what it sends where'))

    def initialization_complete(self):
        prefs = plugin_prefs()
        if not prefs['toolbar_placed']:
            self.place_once()
            prefs['toolbar_placed'] = True

    def place_once(self):
        """Put the button on the main toolbar and in the book list's context menu.

        Done only on the first run: a user who removes the button later keeps it
        removed, and a user who chose places when installing keeps those.
        """
        from calibre.gui2 import gprefs
        from calibre.gui2.preferences.toolbar import ConfigWidget
        keys = [LAYOUT_PREFIX + key for key, text in ConfigWidget.LOCATIONS]
        if any(self.name in (gprefs.get(key) or ()) for key in keys):
            return
        for place in FIRST_RUN_PLACES:
            key = LAYOUT_PREFIX + place
            names = list(gprefs.get(key) or ())
            at = names.index(PLACE_AFTER) + 1 if PLACE_AFTER in names else len(names)
            gprefs[key] = tuple(names[:at] + [self.name] + names[at:])
        self.gui.bars_manager.init_bars()
        self.gui.bars_manager.update_bars()
        self.gui.build_context_menus()

    def show_about(self):
        from calibre.gui2 import info_dialog
        version = '.'.join(map(str, self.interface_action_base_plugin.version))
        info_dialog(self.gui, _('About Book AI'), '<p>' + _(
            'Book AI {version} lets you discuss your books with an AI service of your choice.').format(
                version=version) + '</p><p>' + _(
            'Nothing is sent anywhere until you set up a provider, and then only what you ask for.') + '</p>',
            show=True)
