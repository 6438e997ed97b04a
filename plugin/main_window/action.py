# License: GPLv3 Copyright: the Book AI developers
"""The "Book AI" button and menu of calibre's main window.

calibre imports this module as it starts: it imports only what the button and its menu
need. The books, the conversations and the windows are imported when a feature is first
used, so that the plugin costs nothing at calibre's start-up.

The keys of Discuss and Read next are calibre's own (Ctrl+Alt+A and Ctrl+Shift+A, those of
calibre's AI) where they are free in the calibre that runs, and Book AI's own (Ctrl+Alt+D and
Ctrl+Alt+N) where anything there holds them: calibre's AI, another plugin, a key the user gave
(none where both are held). That is decided from calibre's real shortcut map, once every
shortcut of calibre and its plugins is registered, just before calibre's keyboard manager first
gives out the keys (choose_keys()). The keys chosen become the shortcuts' default keys: a user
who set other keys in Preferences → Shortcuts keeps them, and Restore defaults gives back the
keys chosen.
"""

from typing import TYPE_CHECKING

from qt.core import QAction, QKeySequence, QMenu, QShortcut, Qt, QToolButton, QWidget

from calibre.gui2 import error_dialog, gprefs, info_dialog
from calibre.gui2.actions import InterfaceAction

from calibre_plugins.bookai.gui.icons import plugin_icon
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from types import ModuleType

    from calibre.db.legacy import LibraryDatabase

    from calibre_plugins.bookai.conversation.actions import QuickAction
    from calibre_plugins.bookai.conversation.conversation import Conversation
    from calibre_plugins.bookai.conversation.library import BookLibrary

load_translations()

LAYOUT_PREFIX = 'action-layout-'
# Where the first run puts the button: the main toolbar and the book list's
# context menu, right after calibre's "View" (reading is what Book AI is about),
# or at the end where a user removed "View".
FIRST_RUN_PLACES = ('toolbar', 'context-menu')
PLACE_AFTER = 'View'


# Keys (see the module's docstring): calibre's own where they are free, Book AI's where calibre holds
# them. Users change them in Preferences → Shortcuts, where they are listed under Book AI.
CALIBRES_DISCUSS_KEYS, DISCUSS_KEYS = ('Ctrl+Alt+A',), ('Ctrl+Alt+D',)
CALIBRES_READ_NEXT_KEYS, READ_NEXT_KEYS = ('Ctrl+Shift+A',), ('Ctrl+Alt+N',)


class BookAIAction(InterfaceAction):

    name = 'Book AI'
    action_spec = (_('Book AI'), None, _('Discuss your books with AI'), None)
    popup_type = QToolButton.ToolButtonPopupMode.MenuButtonPopup
    action_type = 'current'
    dont_add_to = frozenset(('context-menu-device',))

    def genesis(self) -> None:
        self.windows: list[QWidget] = []
        self.left_behind = 0  # windows closed by a library switch, for a message once it is done
        self.qaction.setIcon(plugin_icon('bookai'))
        self.qaction.triggered.connect(self.discuss)
        self.menu = m = QMenu(self.gui)
        self.qaction.setMenu(m)
        cm = self.create_menu_action
        discuss = cm(m, 'bookai-discuss', _('&Discuss selected book(s)'), shortcut=DISCUSS_KEYS,
                     triggered=self.discuss, description=_('Open a conversation about the selected books'))
        self.quick_menu = m.addMenu(_('&Quick actions'))
        self.quick_menu.aboutToShow.connect(self.fill_quick_menu)
        read_next = cm(m, 'bookai-read-next', _('Ask for what to &read next'), shortcut=READ_NEXT_KEYS,
                       triggered=self.read_next, description=_('Ask for books to read after the selected ones'))
        read_next.setMenu(self.read_next_menu(m))  # where from; its key asks as last chosen
        # unique name in calibre's shortcut map: (calibre's keys, Book AI's own)
        self.keys_to_choose = {discuss.calibre_shortcut_unique_name: (CALIBRES_DISCUSS_KEYS, DISCUSS_KEYS),
                               read_next.calibre_shortcut_unique_name: (CALIBRES_READ_NEXT_KEYS, READ_NEXT_KEYS)}
        cm(m, 'bookai-ask-library', _('Ask my &library'), shortcut=None, triggered=self.ask_library,
           description=_('A question answered from the full text of your books'))
        cm(m, 'bookai-search-by-meaning', _('Search library by &meaning…'), shortcut=None,
           triggered=self.search_by_meaning, description=_('Books found by what they are about, in your words'))
        cm(m, 'bookai-more-like-this', _('More like t&his'), shortcut=None, triggered=self.more_like_this,
           description=_('The books of the library nearest the selected ones in meaning'))
        cm(m, 'bookai-make-summaries', _('Ma&ke chapter summaries'), shortcut=None, triggered=self.make_summaries,
           description=_('Summarize the chapters read of the selected books, up to where you are, as a job'))
        m.addSeparator()
        cm(m, 'bookai-generate-cover', _('&Generate cover…'), shortcut=None, triggered=self.generate_cover,
           description=_('Make a cover for the current book with an image model'))
        cm(m, 'bookai-generate-covers', _('Generate &covers for the selected books…'), shortcut=None,
           triggered=self.generate_covers, description=_('Make covers for the selected books, to review before '
                                                         'any replaces a cover'))
        cm(m, 'bookai-review-covers', _('Re&view generated covers…'), shortcut=None,
           triggered=self.review_covers, description=_('The covers made for many books, waiting to be kept or '
                                                       'discarded'))
        self.undo_cover_action = cm(m, 'bookai-undo-cover', _('&Undo cover change'), shortcut=None,
                                    triggered=self.undo_covers,
                                    description=_('Put back the cover Book AI last replaced on the selected books'))
        m.aboutToShow.connect(self.update_cover_actions)
        # its shortcut (if the reader gives it one) always works: Undo says when there is nothing to undo
        m.aboutToHide.connect(lambda: self.undo_cover_action.setEnabled(True))
        m.addSeparator()
        cm(m, 'bookai-fill-metadata', _('&Fill in metadata with AI…'), shortcut=None, triggered=self.fill_metadata,
           description=_('Tags, a description, languages and your own columns proposed for the selected books, '
                         'to review before anything is written'))
        self.review_metadata_action = cm(
            m, 'bookai-review-metadata', _('Review &metadata kept for later…'), shortcut=None,
            triggered=self.review_metadata, description=_('The metadata proposed by AI, waiting to be applied or '
                                                          'discarded'))
        cm(m, 'bookai-undo-metadata', _('Undo metadata c&hange'), shortcut=None, triggered=self.undo_metadata,
           description=_('Put back the values Book AI last wrote into the metadata of this library'))
        m.aboutToShow.connect(self.update_metadata_actions)
        m.aboutToHide.connect(lambda: self.review_metadata_action.setVisible(True))
        m.addSeparator()
        cm(m, 'bookai-history', _('&History'), shortcut=None, triggered=self.show_history,
           description=_('Conversations kept for this library'))
        cm(m, 'bookai-settings', _('&Settings'), shortcut=None, triggered=self.show_settings,
           description=_('Provider, quick actions, what is sent'))
        cm(m, 'bookai-about', _('About Book AI'), shortcut=False, triggered=self.show_about,
           description=_('What Book AI is, and what it sends where'))

    def fill_quick_menu(self) -> None:
        # late: see the module's docstring
        # on use: nothing of Book AI is imported until the reader opens it
        from calibre_plugins.bookai.conversation.actions import library_actions
        self.quick_menu.clear()
        for action in library_actions():
            self.quick_menu.addAction(action.label).triggered.connect(
                lambda checked=False, a=action: self.discuss(action=a))

    def initialization_complete(self) -> None:
        prefs = plugin_prefs()
        if not prefs['toolbar_placed']:
            self.place_once()
            prefs['toolbar_placed'] = True
        self.add_to_calibres_menus()
        self.choose_keys_before_calibre_gives_them()

    def add_to_calibres_menus(self) -> None:
        """An entry in calibre's View and Similar books menus. Where calibre has its own there
        (8.11 and later with its AI: View's llm_action, Similar books' ai), ours names Book AI
        and calibre's is left as it is; where it has none, ours takes calibre's name."""
        for name, own, unique, calibres_text, text, slot in (
                ('View', 'llm_action', 'bookai-view-discuss', _('Discuss selected book(s) with AI'),
                 _('Discuss selected book(s) with Book AI'), self.discuss),
                ('Similar Books', 'ai', 'bookai-similar-read-next', _('Ask AI for what to read next'),
                 _('Ask Book AI for what to read next'), self.read_next)):
            other = self.gui.iactions.get(name)
            menu = other.qaction.menu() if other is not None else None
            if menu is not None:
                menu.addSeparator()
                label = text if getattr(other, own, None) is not None else calibres_text
                ac = self.create_menu_action(menu, unique, label, shortcut=False, triggered=slot)
                ac.setIcon(plugin_icon('bookai'))
                if slot == self.read_next:
                    ac.setMenu(self.read_next_menu(menu))
                if name == 'Similar Books':
                    ac = self.create_menu_action(menu, 'bookai-similar-more-like-this', _('More like this (Book AI)'),
                                                 shortcut=False, triggered=self.more_like_this)
                    ac.setIcon(plugin_icon('bookai'))

    def choose_keys_before_calibre_gives_them(self) -> None:
        """choose_keys() just before calibre's keyboard manager first gives out the keys, after every
        plugin's initialization_complete(): then the map holds every shortcut of calibre and its plugins,
        "Open with" ones included."""
        keyboard = self.gui.keyboard
        finalize, wrapped = keyboard.finalize, vars(keyboard).get('finalize')  # another plugin's, perhaps

        def choose_then_finalize(*args: object, **kwargs: object) -> object:
            if vars(keyboard).get('finalize') is choose_then_finalize:  # once: then as it was
                if wrapped is None:
                    del keyboard.finalize
                else:
                    keyboard.finalize = wrapped
            try:
                self.choose_keys()
            except Exception:  # Book AI's own keys, as registered, rather than none
                import traceback
                traceback.print_exc()
            return finalize(*args, **kwargs)
        keyboard.finalize = choose_then_finalize

    def choose_keys(self) -> None:
        """Make calibre's keys the default keys of Discuss and Read next where nothing in calibre's
        shortcut map wants them, Book AI's own where anything does, and none where both are wanted
        (calibre 6.13 and 8.5 give a key to the shortcut registered first, even over the user's choice)."""
        fmt = QKeySequence.SequenceFormat.PortableText

        def portable(keys: object) -> set[str]:
            if not isinstance(keys, (list, tuple)):
                return set()
            return {QKeySequence(k, fmt).toString(fmt) for k in keys if isinstance(k, str)}

        keyboard = self.gui.keyboard
        custom = keyboard.config.get('map', {})
        custom = custom if isinstance(custom, dict) else {}
        wanted = set()  # the keys calibre's keyboard manager is to give to others (the user's own win)
        for unique, sc in keyboard.shortcuts.items():
            if unique in custom:
                wanted |= portable(custom[unique])
            elif unique not in self.keys_to_choose:
                wanted |= portable(sc['default_keys'])
        # and keys set on actions and shortcuts of the main window outside the keyboard manager
        wanted |= {k.toString(fmt) for a in self.gui.findChildren(QAction) for k in a.shortcuts()}
        wanted |= {s.key().toString(fmt) for s in self.gui.findChildren(QShortcut)}
        for unique, (calibres, own) in self.keys_to_choose.items():
            if unique in keyboard.shortcuts:
                keyboard.shortcuts[unique]['default_keys'] = next(
                    (keys for keys in (calibres, own) if not portable(keys) & wanted), ())

    def place_once(self) -> None:
        """Put the button on the main toolbar and in the book list's context menu.

        Done only on the first run: a user who removes the button later keeps it
        removed, and a user who chose places when installing keeps those.
        """
        from calibre.gui2.preferences.toolbar import ConfigWidget  # calibre's preferences: on the first run only
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

    # the features {{{

    def selected_ids(self) -> list[int]:
        """The books selected in the library; none, with a word to the user, when none is."""
        ids = list(self.gui.library_view.get_selected_ids())
        if not ids:
            error_dialog(self.gui, _('No books selected'), _('Select one or more books to discuss first.'),
                         show=True)
        return ids

    def library(self) -> 'BookLibrary':
        """The library calibre has open."""
        # late: see the module's docstring
        # on use: nothing of Book AI is imported until the reader opens it
        from calibre_plugins.bookai.conversation.library import BookLibrary
        return BookLibrary(self.gui.current_db.new_api)

    def discuss(self, checked: bool = False, action: 'QuickAction | None' = None) -> None:
        """A conversation about the selected books; with action, that quick action asked at once."""
        ids = self.selected_ids()
        if not ids:
            return
        # late: see the module's docstring
        # on use: nothing of Book AI is imported until the reader opens it
        from calibre_plugins.bookai.conversation.conversation import Conversation
        library = self.library()
        w = self.open_window(library, Conversation.about(library, ids))
        if action is not None:
            w.run_action(action)

    def read_next_menu(self, parent: QMenu) -> QMenu:
        """Where "Ask for what to read next" suggests from: anywhere (the model's own knowledge) or this
        library (main_window/read_next.py); the one chosen is remembered for its key."""
        menu = QMenu(parent)
        anywhere = menu.addAction(_('From &anywhere'), lambda: self.read_next(source='anywhere'))
        mine = menu.addAction(_('From this &library'), lambda: self.read_next(source='library'))
        menu.addSeparator()
        menu.addAction(_('Books I have &read are…'), lambda: self.read_next_module().choose_read_field(self))
        for ac in (anywhere, mine):
            ac.setCheckable(True)

        def show_choice() -> None:
            chosen = plugin_prefs()['read_next_from']
            anywhere.setChecked(chosen != 'library')
            mine.setChecked(chosen == 'library')
        menu.aboutToShow.connect(show_choice)
        return menu

    def read_next_module(self) -> 'ModuleType':
        from calibre_plugins.bookai.main_window import read_next  # late: see the module's docstring
        return read_next

    def read_next(self, checked: bool = False, source: str = '') -> None:
        """What to read next after the selected books: from anywhere, or from this library (source; ''
        for the one last chosen)."""
        prefs = plugin_prefs()
        if source:
            prefs['read_next_from'] = source
        if (source or prefs['read_next_from']) == 'library':
            return self.read_next_module().from_library(self, list(self.gui.library_view.get_selected_ids()))
        # late: see the module's docstring
        # on use: nothing of Book AI is imported until the reader opens it
        from calibre_plugins.bookai.conversation.actions import find_action, library_actions
        action = find_action(library_actions(include_disabled=True), 'read_next')
        self.discuss(action=action)

    def ask_library(self) -> QWidget:
        # late: see the module's docstring
        # on use: nothing of Book AI is imported until the reader opens it
        from calibre_plugins.bookai.conversation.books import answer_language
        from calibre_plugins.bookai.conversation.conversation import Conversation
        library = self.library()
        return self.open_window(library, Conversation([], library.library_id, language=answer_language()))

    def open_window(self, library: 'BookLibrary', conversation: 'Conversation') -> QWidget:
        """A window for a conversation: about books, or (about none) a question to the whole library."""
        # late: see the module's docstring
        # on use: nothing of Book AI is imported until the reader opens it
        from calibre_plugins.bookai.gui.carry_over_offer import offer_on_first_use
        offer_on_first_use(self.gui, [self.gui.current_db.library_path])
        if conversation.books:
            # on use: nothing of Book AI is imported until the reader opens it
            from calibre_plugins.bookai.main_window.discussion import DiscussionWindow
            w = DiscussionWindow(library, conversation, self.gui, on_saved=self.refresh_books)
        else:
            # on use: nothing of Book AI is imported until the reader opens it
            from calibre_plugins.bookai.main_window.ask_library import LibraryQuestionWindow
            w = LibraryQuestionWindow(library, conversation, self.gui.library_view.get_selected_ids(), self.gui)
        self.keep_window(w)
        w.show()
        w.raise_()
        return w

    def keep_window(self, w: QWidget) -> None:
        """Our windows, each of one library: they close when calibre switches library or quits."""
        self.windows.append(w)
        w.destroyed.connect(lambda obj=None, w=w: self.windows.remove(w) if w in self.windows else None)

    def refresh_books(self, ids: list[int]) -> None:
        """Show the books' new data (a reply saved to them) in the book list and the book details."""
        view = self.gui.library_view
        view.model().refresh_ids(ids, current_row=view.currentIndex().row())  # the book details too

    def show_history(self) -> None:
        # late: see the module's docstring
        # on use: nothing of Book AI is imported until the reader opens it
        from calibre_plugins.bookai.main_window.history_window import HistoryWindow
        library = self.library()
        ids = self.gui.library_view.get_selected_ids()
        w = HistoryWindow(library, lambda conv: self.open_window(library, conv), ids, self.gui)
        w.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.keep_window(w)
        w.show()  # not modal: the conversations it opens can be used while it stays open

    def show_settings(self) -> None:
        # late: see the module's docstring
        # on use: nothing of Book AI is imported until the reader opens it
        from calibre_plugins.bookai.gui.settings_dialog import show_settings
        show_settings(self.gui, self.gui.current_db.new_api)

    def make_summaries(self) -> None:
        """The chapters read of the selected books summarized, as a calibre job (main_window/summary_actions.py)."""
        ids = list(self.gui.library_view.get_selected_ids())
        # on use: nothing of Book AI is imported until the reader opens it
        from calibre_plugins.bookai.main_window.summary_actions import make_chapter_summaries
        make_chapter_summaries(self.gui, ids)

    def searching(self) -> 'ModuleType':
        from calibre_plugins.bookai.main_window import library_search_actions  # late: see the module's docstring
        return library_search_actions

    def search_by_meaning(self) -> None:
        self.searching().open_search(self.gui)

    def more_like_this(self) -> None:
        self.searching().more_like_this(self.gui, list(self.gui.library_view.get_selected_ids()))

    # AI covers (main_window/cover_actions.py, imported when one of them is chosen) {{{

    def covers(self) -> 'ModuleType':
        from calibre_plugins.bookai.main_window import cover_actions  # late: see the module's docstring
        return cover_actions

    def generate_cover(self) -> None:
        self.covers().generate_cover(self.gui)

    def generate_covers(self) -> None:
        ids = list(self.gui.library_view.get_selected_ids())
        if not ids:
            error_dialog(self.gui, _('Cannot generate covers'), _('No books selected'), show=True)
            return
        self.covers().generate_covers(self.gui, ids)

    def review_covers(self) -> None:
        self.covers().review_covers(self.gui)

    def undo_covers(self) -> None:
        self.covers().undo_covers(self.gui, list(self.gui.library_view.get_selected_ids()))

    def update_cover_actions(self) -> None:
        """Undo cover change, enabled only when a selected book has a cover Book AI replaced. Looked
        up only where covers were ever replaced (Book AI's cache has its folder for Undo): until then,
        only that folder's name is (covers.undo, a few lines of file handling, no AI)."""
        import os

        # on use: nothing of Book AI is imported until the reader opens it
        from calibre_plugins.bookai.covers.undo import default_root
        enabled = False
        if os.path.isdir(default_root()):
            try:
                enabled = self.covers().undoable(self.gui, list(self.gui.library_view.get_selected_ids()))
            except Exception:  # an unreadable cache: Undo says so when chosen
                enabled = True
        self.undo_cover_action.setEnabled(enabled)

    def covers_if_used(self) -> 'ModuleType | None':
        """The covers' module when it was used in this session, else None (and nothing imported)."""
        import sys
        return sys.modules.get('calibre_plugins.bookai.main_window.cover_actions')

    # }}}

    # AI metadata (main_window/metadata_actions.py, imported when one of them is chosen) {{{

    def metadata_actions(self) -> 'ModuleType':
        from calibre_plugins.bookai.main_window import metadata_actions  # late: see the module's docstring
        return metadata_actions

    def fill_metadata(self) -> None:
        ids = list(self.gui.library_view.get_selected_ids())
        if not ids:
            error_dialog(self.gui, _('Fill in metadata with AI'), _('No books selected'), show=True)
            return
        self.metadata_actions().fill_metadata(self.gui, ids)

    def review_metadata(self) -> None:
        self.metadata_actions().review_kept(self.gui)

    def undo_metadata(self) -> None:
        self.metadata_actions().undo_metadata(self.gui)

    def update_metadata_actions(self) -> None:
        """Review metadata kept for later, shown only when proposals are kept for the library open:
        only whether their file is there is looked at (metadata.kept, a few lines of file handling)."""
        shown = True
        try:
            # on use: nothing of Book AI is imported until the reader opens it
            from calibre_plugins.bookai.metadata.kept import KeptProposals
            shown = KeptProposals().has(str(self.gui.current_db.new_api.library_id))
        except Exception:  # an unreadable cache: the entry says so when chosen
            pass
        self.review_metadata_action.setVisible(shown)

    # }}}

    def library_about_to_change(self, olddb: 'LibraryDatabase', db: 'LibraryDatabase') -> None:
        """Windows of the library being left close while it is still open: an answer that is
        streaming stops, and what came of it is kept in that library's History. Nothing of
        theirs (Save to book, a citation opened) can then reach the other library's books.
        A review of new covers closes too: its covers are kept for when their library is open again."""
        self.left_behind = 0
        for w in list(self.windows):
            if w.library.library_id != db.library_id:
                w.close()
                self.left_behind += 1
        covers = self.covers_if_used()
        if covers is not None:
            covers.library_about_to_change(self.gui, str(db.library_id))
        import sys
        searching = sys.modules.get('calibre_plugins.bookai.main_window.library_search_actions')
        if searching is not None:  # used in this session: its windows of the library left close
            searching.library_about_to_change(self.gui, str(db.library_id))

    def library_changed(self, db: 'LibraryDatabase') -> None:
        # said after calibre has cleared its status bar for the new library
        if self.left_behind:
            self.gui.status_bar.show_message(_(
                'Book AI: the conversations of the previous library were closed. What was answered is kept in '
                'that library\'s History.'), 10000, show_notification=False)
        self.left_behind = 0
        covers = self.covers_if_used()
        if covers is not None:
            covers.library_changed(self.gui)

    def shutting_down(self) -> bool:
        """An answer that is streaming stops (its thread is told to, and is not waited for) and what
        came of it is kept in the History."""
        for w in list(self.windows):
            w.close()
        return True

    # }}}

    def show_about(self) -> None:
        version = '.'.join(map(str, self.interface_action_base_plugin.version))
        info_dialog(self.gui, _('About Book AI'), '<p>' + _(
            'Book AI {version} lets you discuss your books with an AI service of your choice.').format(
                version=version) + '</p><p>' + _(
            'Nothing is sent anywhere until you set up a provider, and then only what you ask for.') + '</p>',
            show=True)
