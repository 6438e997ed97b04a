# License: GPLv3 Copyright: the Book AI developers
"""The Ask AI panel of the E-book viewer's Lookup panel: the selected text drives it.

With book text on, passages of the book go with the questions (the selection
and around it, the chapter, or passages up to where the reader is), and the
answer's citations jump to their passages.

The quick actions (Explain, Define, Summarize, Key points, Fix grammar,
Translate, and the reader's own) ask about the selection; a typed question may
use {selected}, and the first one of a conversation gets the selection anyway. A
new selection starts a new conversation, unless the current one has answers:
then it stays, and the next quick action (or New chat) is about the new text.

"Who or what is this?" asks about the selection from the X-Ray kept for the book
(conversation.xray.who_is: what it says of the entity the selection names) and the
passages before the reader's place that name it; the X-Ray tab shows that entity too.
The X-Ray tab (gui.xray_view) holds the characters, places and terms met so far.

A book opened after a break (the reader's days, conversation.last_read) gets a line offering
"Recap since you last read": nothing is sent until the reader clicks it. A book of a library in a
series gets "Previously in the series" beside Story so far (gui.recap_flow).

Save as note: the conversation, or one reply, becomes the note of the highlight
under the selection; without one, a highlight is made. An existing note is
appended to, never replaced.
"""

import os
import time
from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING

from qt.core import (
    QApplication, QEvent, QGridLayout, QHBoxLayout, QKeyEvent, QLabel, QPushButton, Qt, QTabWidget, QTimer,
    QToolButton, QVBoxLayout, QWidget,
)

from calibre_plugins.bookai.conversation.actions import (
    QuickAction, selection_prompt, viewer_action_prompt, viewer_actions,
)
from calibre_plugins.bookai.conversation.books import BookInfo, answer_language
from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.last_read import LastRead, Offer, recap_offer
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.notes import note_markdown
from calibre_plugins.bookai.conversation.prompts import selected_for_prompt
from calibre_plugins.bookai.conversation.question import Question
from calibre_plugins.bookai.conversation.xray import XRay, cached_xray, key_for, who_is
from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.grounding.scopes import SCOPES
from calibre_plugins.bookai.gui import settings_dialog
from calibre_plugins.bookai.gui.book_text import ViewerBook
from calibre_plugins.bookai.gui.conversation_panel import ConversationPanel
from calibre_plugins.bookai.gui.passages import Grounding
from calibre_plugins.bookai.gui.worker import run_in_thread
from calibre_plugins.bookai.gui.xray_view import XRayView, no_place_text
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre.db.cache import Cache
    from calibre.gui2.viewer.ui import EbookViewer

    from calibre_plugins.bookai.gui.book_text import BookText

load_translations()

COLUMNS = 3
SHOWN_CHARS = 200
NOTE_SEPARATOR = '\n\n------------------------------------\n\n'


class AskPanel(QWidget):
    """The panel, in the viewer's Lookup panel; viewer: calibre's E-book viewer."""

    def __init__(self, viewer: 'EbookViewer', parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.viewer = viewer
        self.selected = ''
        self.annot: dict | str | None = None
        self.history: History | None = None
        self.setup_ui()
        QTimer.singleShot(0, self.offer_calibre_settings)

    def offer_calibre_settings(self) -> None:
        """The first time Book AI is opened where calibre's AI settings exist: the offer to carry them over."""
        from calibre_plugins.bookai.gui.carry_over_offer import offer_on_first_use  # on first use only
        offer_on_first_use(self.window())

    def setup_ui(self) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.tabs = QTabWidget(self)
        self.tabs.setDocumentMode(True)
        layout.addWidget(self.tabs)
        self.chat_tab = chat = QWidget(self.tabs)
        chat_layout = QVBoxLayout(chat)
        chat_layout.setContentsMargins(0, 4, 0, 0)
        self.setup_offer(chat, chat_layout)
        self.selection_label = QLabel(chat)
        self.selection_label.setWordWrap(True)
        chat_layout.addWidget(self.selection_label)
        self.actions_grid = QGridLayout()
        chat_layout.addLayout(self.actions_grid)
        self.action_buttons: list[QPushButton] = []
        self.series_in_grid: QPushButton | None = None  # "Previously in the series", for a book in one
        self.who_button = QPushButton(_('Who or what is this?'), chat)
        self.who_button.setAutoDefault(False)
        self.who_button.setToolTip(_('Ask about the selected name, from the X-Ray and the passages you have read '
                                     'that name it: nothing after your place'))
        self.who_button.clicked.connect(self.ask_who_is)
        grounding = self.grounding()
        self.panel = ConversationPanel(
            Conversation([self.book()]), keep=self.keep, save=self.save_as_note, save_text=_('Save as &note'),
            settings=self.show_settings, placeholder=_('Ask about the selection or the book (Enter sends)'),
            intro=self.intro, prepare=self.prepare, grounding=grounding, parent=chat)
        self.panel.state_changed.connect(self.streaming_changed)
        chat_layout.addWidget(self.panel, 1)
        self.offer_series()
        self.tabs.addTab(chat, _('Chat'))
        self.xray = XRayView(grounding, lambda: answer_language([self.book()]), settings=self.show_settings,
                             parent=self.tabs)
        self.tabs.addTab(self.xray, _('X-Ray'))
        # the viewer closed mid-answer: the answer stops and what came is kept in the History; a build stops
        QApplication.instance().aboutToQuit.connect(self.panel.closing)
        QApplication.instance().aboutToQuit.connect(self.xray.closing)
        self.fill_quick_actions()
        self.panel.show_conversation()
        self.show_selection()

    def setup_offer(self, parent: QWidget, layout: QVBoxLayout) -> None:
        """The line that offers "Recap since you last read" after a break (book_opened): hidden until then."""
        self.offered: Offer | None = None
        self.offer_row = row = QWidget(parent)
        h = QHBoxLayout(row)
        h.setContentsMargins(0, 0, 0, 0)
        self.offer_label = QLabel(row)
        self.offer_label.setWordWrap(True)
        h.addWidget(self.offer_label, 1)
        self.offer_button = QPushButton(_('Recap since you last read'), row)
        self.offer_button.setAutoDefault(False)
        self.offer_button.setToolTip(_('A recap of the story up to where you are, citing its passages: nothing is '
                                       'sent until you click'))
        self.offer_button.clicked.connect(self.recap_since)
        h.addWidget(self.offer_button)
        self.offer_dismiss = QToolButton(row)
        self.offer_dismiss.setText('\u2715')
        self.offer_dismiss.setToolTip(_('Not now'))
        self.offer_dismiss.clicked.connect(self.dismiss_offer)
        h.addWidget(self.offer_dismiss)
        row.setVisible(False)
        layout.addWidget(row)

    def offer_series(self) -> None:
        """A book of a library in a series (as the viewer's metadata of it says): "Previously in the
        series", beside "Who or what is this?" (the row of buttons under the chat is as wide as the
        panel can be beside the book). The library is opened only when the reader asks, in the recap's
        thread, read-only (calibre works on a copy of its database: the library is not changed); a
        book in no series, or from outside a library, has none."""
        data = getattr(self.viewer, 'current_book_data', None) or {}
        details, mi = data.get('book_library_details') or {}, data.get('metadata') or {}
        dbpath, book_id = details.get('dbpath') or '', int(details.get('book_id') or 0)
        if not dbpath or not book_id:
            return
        series = mi.get('series') if isinstance(mi, dict) else getattr(mi, 'series', '')
        if not series or not isinstance(series, str):
            return

        def library() -> 'Cache':
            from calibre.library import db  # late: only when the reader asks
            return db(os.path.dirname(dbpath), read_only=True).new_api

        def place(b: QPushButton) -> None:
            self.series_in_grid = b
            self.fill_quick_actions()
        self.panel.offer_series(library, book_id, series, None, place)

    def book_opened(self, earlier: 'LastRead | None') -> None:
        """A book was opened, last read earlier (None: not known): the offer of a recap, after a
        break as long as the reader's setting (last_read.recap_offer); nothing is sent."""
        self.offered = recap_offer(earlier, time.time(), plugin_prefs()['recap_offer_days'])
        if self.offered is not None:
            self.offer_label.setText(ngettext('You last read this book {days} day ago.',
                                              'You last read this book {days} days ago.',
                                              self.offered.days).format(days=self.offered.days))
        self.offer_row.setVisible(self.offered is not None)

    def recap_since(self) -> None:
        """The reader took the offer: the recap since the place they were at last time (the story so
        far when it is not before the place now), sent as Story so far sends it."""
        if self.offered is not None and self.panel.recap.start(since_cfi=self.offered.cfi):
            self.dismiss_offer()

    def dismiss_offer(self) -> None:
        self.offered = None
        self.offer_row.setVisible(False)

    # the book and the selection {{{

    def grounding(self) -> Grounding:
        """The book's own text with questions: the selection and around it, the chapter, passages up
        to where the viewer is (or anywhere); a citation clicked goes to its passage in the book."""
        source = ViewerBook(self.viewer, self)
        return Grounding(source, SCOPES, source.position, selection=lambda: self.selected, go_to=source.go_to,
                         jumps=True)

    def book(self) -> BookInfo:
        """BookInfo for the book the viewer shows (the library's id when it is a library book)."""
        data = getattr(self.viewer, 'current_book_data', None) or {}
        mi = data.get('metadata') or {}
        details = data.get('book_library_details') or {}
        title = mi.get('title') if isinstance(mi, dict) else getattr(mi, 'title', '')
        authors = mi.get('authors') if isinstance(mi, dict) else getattr(mi, 'authors', ())
        languages = mi.get('languages') if isinstance(mi, dict) else getattr(mi, 'languages', ())
        return BookInfo(int(details.get('book_id') or 0), title or _('Unknown'), tuple(authors or ()),
                        languages=tuple(languages or ()))

    @property
    def library_id(self) -> str:
        data = getattr(self.viewer, 'current_book_data', None) or {}
        return (data.get('book_library_details') or {}).get('library_id') or 'e-book-viewer'

    def selection_changed(self, text: str, annot: dict | str | None = None) -> None:
        text = (text or '').replace('\u00ad', '')
        if not text:
            return  # the selection went away: what is shown stays
        self.selected, self.annot = text, annot
        if not self.panel.conv.turns and not self.panel.streaming:
            self.panel.set_conversation(self.new_conversation(text))
        self.show_selection()
        self.streaming_changed(self.panel.streaming)  # the quick actions, now that there is text for them

    def new_conversation(self, selection: str) -> Conversation:
        book = self.book()
        return Conversation([book], self.library_id, language=answer_language([book]), selection=selection)

    def show_selection(self) -> None:
        conv_text = self.panel.conv.selection
        if not self.selected:
            text = _('Select text in the book to ask about it, or ask about the book.')
        else:
            shown = self.selected if len(self.selected) <= SHOWN_CHARS else self.selected[:SHOWN_CHARS] + '…'
            text = '<b>' + escape(_('Selected:')) + '</b> <i>' + escape(shown) + '</i>'
            if conv_text and conv_text != self.selected and self.panel.conv.turns:
                text += '<br>' + escape(_('The conversation below is about an earlier selection. A quick action, '
                                          'or New chat, starts one about this text.'))
        self.selection_label.setText(text)

    def intro(self) -> str:
        if not self.selected:
            return ''
        return '<p>' + escape(_('Choose a quick action above, or type a question below. {selected} in a question '
                                'stands for the selected text.')) + '</p>'

    # }}}

    # asking {{{

    def fill_quick_actions(self) -> None:
        for b in self.action_buttons:
            self.actions_grid.removeWidget(b)
            b.deleteLater()
        self.actions_grid.removeWidget(self.who_button)
        if self.series_in_grid is not None:
            self.actions_grid.removeWidget(self.series_in_grid)
        self.action_buttons = []
        actions = viewer_actions()
        for i, action in enumerate(actions):
            b = QPushButton(action.label, self.chat_tab)
            b.setAutoDefault(False)
            b.clicked.connect(lambda checked=False, a=action: self.run_action(a))
            self.actions_grid.addWidget(b, i // COLUMNS, i % COLUMNS)
            self.action_buttons.append(b)
        # beside them: on their last row where there is room, else on a row of its own
        row, column = divmod(len(actions), COLUMNS)
        series = self.series_in_grid  # "Previously in the series" last: beside it, else on a row below
        if series is not None and COLUMNS - column >= 2:
            self.actions_grid.addWidget(self.who_button, row, column, 1, COLUMNS - column - 1)
            self.actions_grid.addWidget(series, row, COLUMNS - 1)
        else:
            self.actions_grid.addWidget(self.who_button, row, column, 1, COLUMNS - column)
            if series is not None:
                self.actions_grid.addWidget(series, row + 1, 0, 1, COLUMNS)
        self.streaming_changed(self.panel.streaming)

    def streaming_changed(self, streaming: bool) -> None:
        for b in (*self.action_buttons, self.who_button):
            b.setEnabled(not streaming and bool(self.selected))

    def run_action(self, action: QuickAction) -> None:
        if not self.selected or self.panel.streaming:
            return
        if self.panel.conv.selection != self.selected or not self.panel.conv.selection:
            self.panel.set_conversation(self.new_conversation(self.selected))
            self.show_selection()
        conv = self.panel.conv
        self.panel.ask(viewer_action_prompt(action, self.selected, conv.books[0], conv.language or 'English'))

    def ask_who_is(self) -> None:
        """"Who or what is this?" about the selection: from the X-Ray kept for the book (the provider's,
        as the X-Ray tab shows it; nothing is made for it) and the passages before the reader's place
        that name it (conversation.xray.who_is), sent as every question is (ConversationPanel.send).
        The X-Ray tab shows the entity it names, if it has one."""
        if not self.selected or self.panel.streaming:
            return
        if self.panel.conv.selection != self.selected or not self.panel.conv.selection:
            self.panel.set_conversation(self.new_conversation(self.selected))
            self.show_selection()
        p = self.panel
        provider = p.ready_provider()
        if provider is None or p.grounding is None:
            return
        grounding: Grounding = p.grounding  # not None, in the closures too
        ready, selection, language = provider, self.selected, answer_language([self.book()])  # in the closures too
        token = p.start_waiting(_('Reading the text of the book…') if grounding.source.loaded is None else '')

        def loaded(text: 'BookText | None', error: str) -> None:
            if not p.waiting_for(token):
                return  # stopped, or the panel closed, while the book was read
            if text is None:
                p.stop_waiting(token)
                return p.show_notice(error + ' ' + _('Nothing was sent.'))
            position = grounding.position(text)
            if position is None:  # nothing goes: not even the X-Ray is read
                p.stop_waiting(token)
                return p.show_notice(no_place_text())
            p.loading_cancel = cancel = CancelToken()
            book_key, read = grounding.key, text  # not None, in the closures too

            def work() -> tuple[Question, XRay | None]:
                try:  # the X-Ray kept by this provider and model, if any; without it, the passages alone
                    xray: XRay | None = cached_xray(read.book, position, key_for(book_key, ready, '', language,
                                                                                   cancel))
                except ProviderError:
                    xray = None
                return who_is(selection, read.book, position, xray, read.index), xray

            def done(result: tuple[Question, XRay | None] | None, exc: Exception | None) -> None:
                if not p.stop_waiting(token):
                    return
                p.loading_cancel = None
                if exc is not None or result is None:
                    return p.show_notice(_('Nothing was sent: {error}').format(error=exc))
                question, xray = result
                entity = xray.find(selection) if xray is not None else None
                if entity is not None:
                    self.xray.show_named(entity.name)
                p.send(ready, question)
            run_in_thread(work, done, self)
        grounding.source.load(loaded)

    def prepare(self, question: str) -> str:
        """A typed question: {selected} becomes the selection; the first question of a conversation
        about a selection carries it anyway."""
        conv = self.panel.conv
        if '{selected}' in question:
            if conv.selection != self.selected and self.selected:
                self.panel.set_conversation(self.new_conversation(self.selected))
                self.show_selection()
                conv = self.panel.conv
            return selection_prompt(question, conv.selection, conv.books[0], conv.language or 'English')
        if conv.selection and not conv.turns:
            return question + selected_for_prompt(conv.selection)
        return question

    def keep(self, conv: Conversation) -> None:
        if self.history is None:
            self.history = History()
        self.history.save(conv)

    # }}}

    # save as note {{{

    def save_as_note(self, index: int | None) -> None:
        """Save a reply (index: its turn), or the whole conversation (None), as the note of the highlight."""
        conv = self.panel.conv
        turns = conv.turns if index is None else [conv.turns[index]]
        note = note_markdown(turns, self.panel.assistant(self.panel.provider))
        save_note(self.viewer, note, self.annot,
                  lambda problem: self.panel.show_notice(problem or _('Saved as the note of the highlight.')))

    def show_settings(self) -> None:
        settings_dialog.show_settings(self, None)
        if not self.panel.streaming:
            self.fill_quick_actions()

    # }}}


def highlight_uuid(annot: dict | str | None) -> str:
    """The uuid of the highlight a selection is on, from what the viewer sent with it."""
    if isinstance(annot, dict):
        return annot.get('uuid') or ''
    if isinstance(annot, str) and annot:
        try:
            data = limits.load_json(annot)
        except ValueError:
            return annot
        return data.get('uuid', '') if isinstance(data, dict) else ''
    return ''


def save_note(viewer: 'EbookViewer', note: str, annot: dict | str | None, done: Callable[[str], None]) -> None:
    """Put note on the highlight under the selection, after its existing note; then done(problem),
    problem '' when it worked.

    calibre 8.11+ does it in one step, making a highlight in the chosen style if there is none.
    Before (and in builds without calibre's AI), the viewer can only set the note of an existing
    highlight: a selection that has none is first highlighted with the selection bar's quick
    highlight (its Q key, in the viewer's current style), and the note goes on the new highlight.
    """
    if hasattr(viewer, 'add_notes_or_create_highlight'):
        style = plugin_prefs()['highlight_style']
        current = None if style else viewer_current_style()
        if current:  # "the viewer's current style": its definition, as the viewer keeps it
            viewer.web_view.generic_action('add-notes-or-create-highlight', {'style': current, 'notes': note})
        else:
            viewer.add_notes_or_create_highlight(note, style)
        return done('')
    uuid = highlight_uuid(annot)
    if uuid:
        set_note(viewer, uuid, note)
        return done('')

    def highlighted(uuid: str) -> None:
        if uuid:
            set_note(viewer, uuid, note)
            done('')
        else:
            done(_('The selection could not be highlighted. Highlight it in the viewer, then save again.'))
    quick_highlight(viewer, highlighted)


def viewer_current_style() -> dict | None:
    """The highlight style the reader last used in the viewer (a style definition), or None."""
    try:
        from calibre.gui2.viewer.config import get_session_pref
        return get_session_pref('highlight_style', None, '')  # kept by the viewer's own code, at the top
    except Exception:
        return None


def highlights(viewer: 'EbookViewer') -> list[dict]:
    """The highlights of the book the viewer shows."""
    return (viewer.current_book_data.get('annotations_map') or {}).get('highlight') or []


def set_note(viewer: 'EbookViewer', uuid: str, note: str) -> None:
    """Append note to the note of highlight uuid."""
    existing = next((h.get('notes') or '' for h in highlights(viewer) if h.get('uuid') == uuid), '')
    notes = existing + NOTE_SEPARATOR + note if existing.strip() else note
    viewer.web_view.generic_action('set-notes-in-highlight', {'uuid': uuid, 'notes': notes})  # the book's view
    if hasattr(viewer, 'notes_edited'):
        viewer.notes_edited(uuid, notes)  # recorded and saved, as the viewer's own notes editor does


def quick_highlight(viewer: 'EbookViewer', then: Callable[[str], None], timeout_ms: int = 5000) -> None:
    """Highlight the selection as the selection bar's Q key does; then(uuid of the new highlight, or '')."""
    before = {h.get('uuid') for h in highlights(viewer)}
    state = {'done': False}

    def finish(uuid: str) -> None:
        if state['done']:
            return
        state['done'] = True
        try:
            viewer.web_view.highlights_changed.disconnect(changed)
        except (TypeError, RuntimeError):
            pass
        then(uuid)

    def look() -> None:
        new = next((h.get('uuid') for h in highlights(viewer) if h.get('uuid') not in before), '')
        if new:
            finish(new)

    def changed(*args: object) -> None:
        QTimer.singleShot(0, look)  # after the viewer's own slot has recorded the highlight

    viewer.web_view.highlights_changed.connect(changed)
    target = viewer.web_view.focusProxy() or viewer.web_view
    viewer.web_view.setFocus(Qt.FocusReason.OtherFocusReason)
    for kind in (QEvent.Type.KeyPress, QEvent.Type.KeyRelease):
        QApplication.sendEvent(target, QKeyEvent(kind, Qt.Key.Key_Q, Qt.KeyboardModifier.NoModifier, 'q'))
    QTimer.singleShot(timeout_ms, lambda: finish(''))
