# License: GPLv3 Copyright: the Book AI developers
"""The X-Ray in the windows: the characters, places and terms met up to the reader's place, as
the viewer's panel (its X-Ray tab) and the library's discussion window show them. Everything is
done by conversation.xray, the one Qt-free path `xray` on the command line calls too; this view
reads the book (gui.book_text), waits, asks and shows.

Shown, the view reads the X-Ray kept for the book (nothing is sent): a search box (names, then
descriptions, as `xray --search`), the entities grouped by kind, and the one chosen: its names,
its description as of the reader's place, where it first appears and the passages its
description rests on (links that go there in the E-book viewer), and a bar of the chapters read,
darker where it appears more. "Build X-Ray" (or "Update X-Ray", when chapters read are not in it
yet) says first what it would send; to a provider that is not on this computer, the first time
for a book, the reader agrees in a dialog; then the chapters are read in a thread, with progress
and Stop (what was read is kept either way). With no place known, nothing is sent, and the view
says so. Everything in an entity is plain text from a model: shown escaped, never as HTML.
"""

from collections.abc import Callable
from html import escape
from typing import TYPE_CHECKING

from qt.core import (
    QCheckBox, QColor, QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QLineEdit, QPalette, QProgressBar,
    QPushButton, QShowEvent, QSplitter, Qt, QTextBrowser, QTreeWidget, QTreeWidgetItem, QUrl, QVBoxLayout, QWidget,
    pyqtSignal,
)

from calibre_plugins.bookai.conversation.xray import (
    KINDS, Entity, Plan, XRay, XRayKey, build_xray, cached_xray, key_for, needs_consent, plan_xray, remember_consent,
)
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.grounding.scopes import NoPlace, Place
from calibre_plugins.bookai.gui.chat import MUTED_COLOR
from calibre_plugins.bookai.gui.preview import destination
from calibre_plugins.bookai.gui.worker import emitter, run_while
from calibre_plugins.bookai.providers.pricing import cost_text
from calibre_plugins.bookai.providers.registry import chosen_provider

if TYPE_CHECKING:
    from calibre_plugins.bookai.grounding.extract import Book
    from calibre_plugins.bookai.gui.book_text import BookText
    from calibre_plugins.bookai.gui.passages import Grounding
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()

QUOTED_CHARS = 220  # of a cited passage shown under an entity


def no_place_text() -> str:
    return _('Book AI does not know where you are in this book, so it cannot keep the X-Ray to what you have read: '
             'calibre\'s E-book viewer saves your place when you close the book. Nothing was sent.')


def kind_label(kind: str) -> str:
    return {'character': _('character'), 'place': _('place'), 'term': _('term')}.get(kind, kind)


def group_label(kind: str, count: int) -> str:
    """The heading of a kind's entities in the list."""
    return {'character': _('Characters ({count})'), 'place': _('Places ({count})'),
            'term': _('Terms ({count})')}.get(kind, '{count}').format(count=count)


def place_text(place: Place) -> str:
    return _('{chapter}, at {position:.0%} of the book').format(chapter=place.chapter or _('Untitled chapter'),
                                                                 position=place.position)


def mixed(paper: QColor, ink: QColor, share: float) -> str:
    """The colour share of the way from paper to ink, as HTML."""
    def channel(a: int, b: int) -> int:
        return round(a + (b - a) * share)
    return QColor(channel(paper.red(), ink.red()), channel(paper.green(), ink.green()),
                  channel(paper.blue(), ink.blue())).name()


def bar_html(entity: Entity, xray: XRay, paper: QColor, ink: QColor) -> str:
    """The bar of appearances: a cell per chapter read, darker where more passages name it, each
    chapter's title and count in its cell's tooltip."""
    counts = entity.appearances(xray.chapters_read)
    most = max(counts, default=0) or 1
    cells = []
    for number, count in zip(xray.chapters_read, counts):
        title = xray.titles[number] if 0 <= number < len(xray.titles) else ''
        tip = ngettext('{chapter}: named in {count} passage', '{chapter}: named in {count} passages', count).format(
            chapter=title or _('Untitled chapter'), count=count)
        colour = mixed(paper, ink, 0.12 + 0.88 * count / most if count else 0.08)
        cells.append(f'<td bgcolor="{colour}" title="{escape(tip)}" style="font-size:6pt">&nbsp;</td>')
    return '<table cellspacing="1" cellpadding="0" width="100%"><tr>' + ''.join(cells) + '</tr></table>'


def entity_html(entity: Entity, xray: XRay, paper: QColor, ink: QColor) -> str:
    """What the details pane shows of entity; links: bookai:first (where it first appears) and
    bookai:cite/N (its Nth cited passage)."""
    muted = f' style="color:{MUTED_COLOR}"'
    also = _('; also: {names}').format(names=', '.join(entity.other_names)) if entity.other_names else ''
    out = [f'<h3 style="margin-bottom:2px">{escape(entity.name)}</h3>',
           f'<p style="margin-top:0; color:{MUTED_COLOR}">{escape(kind_label(entity.kind) + also)}</p>']
    if entity.description:
        out.append(f'<p><b>{escape(_("As far as you have read:"))}</b> {escape(entity.description)}</p>')
    first = f'<a href="bookai:first" style="text-decoration:none">{escape(place_text(entity.first))}</a>'
    out.append('<p>' + escape(_('First appears: {place}')).format(place=first) + '</p>')
    read = xray.chapters_read
    out.append('<p style="margin-bottom:2px">' + escape(_('In {count} of {total} chapters read:').format(
        count=len(entity.chapters), total=len(read))) + '</p>')
    out.append(bar_html(entity, xray, paper, ink))
    if read:
        def title(n: int) -> str:
            return (xray.titles[n] if 0 <= n < len(xray.titles) else '') or _('Untitled chapter')
        out.append(f'<p{muted}><small>' + escape(_('A cell for each chapter you have read, from {first} to {last}; '
                                                   'the darker, the more passages name it.').format(
            first=title(read[0]), last=title(read[-1]))) + '</small></p>')
    if entity.citations:
        out.append('<p style="margin-bottom:2px"><b>' + escape(_('Passages it rests on:')) + '</b></p>')
        for k, c in enumerate(entity.citations):
            text = ' '.join(c.text.split())
            quoted = text if len(text) <= QUOTED_CHARS else text[:QUOTED_CHARS].rsplit(' ', 1)[0] + '…'
            out.append(f'<p style="margin-top:2px"><a href="bookai:cite/{k}" style="text-decoration:none">'
                       f'{escape(place_text(c.place))}</a><br><span{muted}>{escape(quoted)}</span></p>')
    return ''.join(out)


def summary_text(xray: XRay) -> str:
    """What the X-Ray holds, and what it lacks, in words."""
    read, missing = len(xray.chapters_read), len(xray.missing)
    if read and missing == read:
        return ngettext('No X-Ray is kept for this book yet. Build X-Ray reads the chapter you have read, and '
                        'nothing after your place.',
                        'No X-Ray is kept for this book yet. Build X-Ray reads the {count} chapters you have read, '
                        'and nothing after your place.', read).format(count=read)
    parts = [ngettext('{count} character, place or term met in the chapters you have read.',
                      '{count} characters, places and terms met in the chapters you have read.',
                      len(xray.entities)).format(count=len(xray.entities))
             if xray.entities else _('The X-Ray has no character, place or term yet.')]
    if missing:
        parts.append(ngettext('{count} chapter you have read is not in the X-Ray yet: Update X-Ray reads it.',
                              '{count} chapters you have read are not in the X-Ray yet: Update X-Ray reads them.',
                              missing).format(count=missing))
    return ' '.join(parts)


class ConsentDialog(QDialog):
    """Before the X-Ray sends the book's text to a provider not on this computer: what it sends
    (plan.said(): chapters, tokens, cost), where, and "Don't ask again for this book"."""

    def __init__(self, plan: Plan, provider: 'AIProviderPlugin', model: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(_('Send the book for the X-Ray?'))
        layout = QVBoxLayout(self)
        lines = [escape(plan.said()),
                 _('The text of this book up to your place goes to {where}, model {model}. Nothing after your place '
                   'is sent.').format(where='<b>' + escape(destination(provider)) + '</b>',
                                      model='<b>' + escape(model) + '</b>')]
        self.summary = QLabel('<p>' + '<br>'.join(lines) + '</p>', self)
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.dont_ask = QCheckBox(_('Don\'t ask again for this book'), self)
        layout.addWidget(self.dont_ask)
        bb = QDialogButtonBox(self)
        self.send_button = bb.addButton(_('&Send'), QDialogButtonBox.ButtonRole.AcceptRole)
        bb.addButton(QDialogButtonBox.StandardButton.Cancel)
        bb.accepted.connect(self.accept)
        bb.rejected.connect(self.reject)
        layout.addWidget(bb)
        self.resize(520, 200)


Found = tuple['AIProviderPlugin', 'BookText', float]  # the provider, the book's text, the reader's place


class XRayView(QWidget):
    """grounding: the window's book (gui.passages.Grounding: its text, the reader's place, go_to);
    language(): the answer language of the book's conversations (conversation.books.answer_language);
    settings(): opens the settings, for a reader with no provider set up; vertical: the list above
    the details (a narrow panel) rather than beside them."""

    progressed = pyqtSignal(int, int, str)  # from build_xray()'s thread: chapters done, to do, the one read now
    shown_xray = pyqtSignal()  # an X-Ray was shown (kept or made)

    def __init__(self, grounding: 'Grounding', language: Callable[[], str],
                 settings: Callable[[], None] | None = None, vertical: bool = True,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.grounding, self.language, self.open_settings = grounding, language, settings
        self.xray: XRay | None = None
        self.key: XRayKey | None = None
        self.shown: list[Entity] = []       # the entities the list shows (the search's)
        self.entity: Entity | None = None   # the one whose details are shown
        self.wanted = ''                    # the name of an entity to show once the X-Ray is there
        self.work: object | None = None     # the token of the work in hand (current())
        self.building = False               # that work may send: Stop stops it
        self.making = False                 # build_xray() is running (else: the book read, or the plan made)
        self.cancel: CancelToken | None = None
        self.closed = False
        self.setup_ui(vertical)
        self.progressed.connect(self.show_progress, type=Qt.ConnectionType.QueuedConnection)

    def setup_ui(self, vertical: bool) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.search = QLineEdit(self)
        self.search.setPlaceholderText(_('Search names and descriptions'))
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self.fill_list)
        layout.addWidget(self.search)
        self.splitter = QSplitter(Qt.Orientation.Vertical if vertical else Qt.Orientation.Horizontal, self)
        self.list = QTreeWidget(self.splitter)
        self.list.setHeaderHidden(True)
        self.list.setRootIsDecorated(False)
        self.list.setIndentation(8)
        self.list.currentItemChanged.connect(self.on_current)
        self.details = QTextBrowser(self.splitter)
        self.details.setOpenLinks(False)
        self.details.setOpenExternalLinks(False)
        self.details.anchorClicked.connect(self.on_link)
        self.details.document().setUndoRedoEnabled(False)
        self.splitter.addWidget(self.list)
        self.splitter.addWidget(self.details)
        self.splitter.setStretchFactor(0, 2)
        self.splitter.setStretchFactor(1, 3)
        layout.addWidget(self.splitter, 1)
        self.summary = QLabel(self)
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(self.summary)
        self.progress = QProgressBar(self)
        self.progress.setVisible(False)
        layout.addWidget(self.progress)
        row = QHBoxLayout()
        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.RichText)  # its text escaped (say()), or with the settings' link
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.status.linkActivated.connect(self.on_status_link)
        row.addWidget(self.status, 1)
        self.build_button = QPushButton(_('Build X-Ray'), self)
        self.build_button.setAutoDefault(False)
        self.build_button.setToolTip(_('Read the chapters you have read for the X-Ray: what will be sent, and what '
                                       'it costs, is said first'))
        self.build_button.clicked.connect(self.build_or_stop)
        row.addWidget(self.build_button, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(row)
        self.show_entity(None)

    def showEvent(self, ev: QShowEvent) -> None:
        super().showEvent(ev)
        if self.work is None:
            self.refresh()  # the reader may have moved on since: the X-Ray at the place now

    # the work in hand {{{

    def begin(self, building: bool) -> object:
        """Work starts (refresh() or build()): returns its token; Build becomes Stop while it may send."""
        self.work = token = object()
        self.building = building
        self.cancel = CancelToken()
        self.update_state()
        return token

    def current(self, token: object) -> bool:
        """Whether that work still matters: not stopped, nor replaced, the view not closed."""
        return self.work is token and not self.closed

    def end(self, token: object) -> bool:
        if not self.current(token):
            return False
        self.work, self.building, self.making, self.cancel = None, False, False, None
        self.progress.setVisible(False)
        self.update_state()
        return True

    def update_state(self) -> None:
        b = self.build_button
        if self.building:
            b.setText(_('&Stop'))
            b.setToolTip(_('Stop reading: the chapters read so far are kept'))
            b.setEnabled(True)
            return
        b.setText(_('Update X-Ray') if self.xray is not None and len(self.xray.missing) < len(self.xray.chapters_read)
                  else _('Build X-Ray'))
        b.setEnabled(self.work is None)

    def say(self, text: str) -> None:
        self.status.setText(escape(text, quote=False))

    def closing(self) -> None:
        """The window closes: a build stops (what it read is kept), and nothing more is shown."""
        if self.cancel is not None:
            self.cancel.cancel()
        if self.work is not None:
            self.grounding.source.cancel()
        self.closed = True

    # }}}

    # the book, the place and the provider {{{

    def with_book(self, token: object, then: Callable[[Found], None]) -> None:
        """The provider, the book's text and the reader's place, then then(them); or said why not
        (no provider set up, the book unreadable, no place known): nothing is sent."""
        provider = chosen_provider()
        problem = _('No AI provider is chosen yet.') if provider is None else provider.config.missing_setup()
        if problem or provider is None:
            self.end(token)
            link = ' <a href="settings">' + escape(_('Open the settings')) + '</a>' if self.open_settings else ''
            self.status.setText(escape(problem + ' ' + _('Nothing is sent anywhere until you set one up.'), quote=False)
                                + link)
            return
        source = self.grounding.source
        if source.loaded is None:
            self.say(_('Reading the text of the book…'))
        ready = provider  # not None, in the closure too

        def loaded(text: 'BookText | None', error: str) -> None:
            if not self.current(token):
                return
            if text is None:
                self.end(token)
                return self.say(error + ' ' + _('Nothing was sent.'))
            position = self.grounding.position(text)
            if position is None:
                self.end(token)
                return self.say(no_place_text())
            then((ready, text, position))
        source.load(loaded)

    # }}}

    # the X-Ray kept, shown {{{

    def refresh(self, said: str = '') -> None:
        """Show the X-Ray kept for the book at the reader's place now (nothing is sent); said: what
        the status line says then (what just happened), else nothing."""
        if self.building or self.closed:
            return
        token = self.begin(False)
        language = self.language()
        book_key = self.grounding.key

        def found(what: Found) -> None:
            provider, text, position = what
            cancel = self.cancel

            def work() -> tuple[XRayKey, XRay]:
                key = key_for(book_key, provider, '', language, cancel)
                return key, cached_xray(text.book, position, key)

            def done(result: tuple[XRayKey, XRay] | None, exc: Exception | None) -> None:
                if exc is not None or result is None:
                    return self.say(self.error_text(exc))
                self.key = result[0]
                self.show_xray(result[1])
                self.say(said)
            run_while(lambda: self.end(token), work, done, self)
        self.with_book(token, found)

    def error_text(self, exc: Exception | None) -> str:
        if isinstance(exc, NoPlace):
            return no_place_text()
        if isinstance(exc, Cancelled):
            return _('Stopped: the chapters read so far are kept for the X-Ray.')
        return str(exc) if isinstance(exc, ProviderError) else _('The X-Ray could not be read: {error}').format(
            error=exc)

    def show_xray(self, xray: XRay) -> None:
        self.xray = xray
        self.summary.setText(' '.join([summary_text(xray), *xray.notices]))
        self.fill_list()
        self.update_state()
        self.shown_xray.emit()

    def fill_list(self) -> None:
        """The entities the search finds (all for none), grouped by kind, each in the order it first appears."""
        self.list.blockSignals(True)
        self.list.clear()
        xray = self.xray
        words = self.search.text().strip()
        self.shown = (xray.search(words) if words else list(xray.entities)) if xray is not None else []
        keep = self.entity.name if self.entity is not None else ''
        chosen = first = None
        for kind in (*KINDS, *sorted({e.kind for e in self.shown} - set(KINDS))):
            of_kind = [(i, e) for i, e in enumerate(self.shown) if e.kind == kind]
            if not of_kind:
                continue
            group = QTreeWidgetItem(self.list, [group_label(kind, len(of_kind))])
            group.setFlags(Qt.ItemFlag.ItemIsEnabled)
            font = group.font(0)
            font.setBold(True)
            group.setFont(0, font)
            for i, e in of_kind:
                item = QTreeWidgetItem(group, [e.name])
                item.setData(0, Qt.ItemDataRole.UserRole, i)
                if e.other_names:
                    item.setToolTip(0, ', '.join(e.other_names))
                if e.name == keep:
                    chosen = item
                if first is None:
                    first = item
            group.setExpanded(True)
        self.list.blockSignals(False)
        if words and xray is not None and not self.shown:
            self.details.setHtml('<p>' + escape(_('Nothing in the X-Ray matches "{words}".').format(words=words))
                                 + '</p>')
            self.entity = None
            return
        if self.wanted and self.select(self.wanted):
            return
        chosen = chosen if chosen is not None else first
        if chosen is not None:
            self.list.setCurrentItem(chosen)
        self.on_current(chosen)

    def select(self, name: str) -> bool:
        """Show the entity a selection names (XRay.find), if it is in the list; False when it is not."""
        entity = self.xray.find(name) if self.xray is not None else None
        if entity is None or entity not in self.shown:
            return False
        self.wanted = ''
        index = self.shown.index(entity)
        for g in range(self.list.topLevelItemCount()):
            group = self.list.topLevelItem(g)
            for i in range(group.childCount()):
                if group.child(i).data(0, Qt.ItemDataRole.UserRole) == index:
                    self.list.setCurrentItem(group.child(i))
                    self.show_entity(entity)
                    return True
        return False

    def show_named(self, name: str) -> None:
        """Show the entity name names: now if the X-Ray is shown and holds it, else once it is."""
        self.wanted = name
        if self.xray is not None:
            if self.search.text() and self.xray.find(name) not in self.shown:
                self.search.clear()  # fills the list again, and shows it
            else:
                self.select(name)

    def on_current(self, item: QTreeWidgetItem | None, previous: QTreeWidgetItem | None = None) -> None:
        index = item.data(0, Qt.ItemDataRole.UserRole) if item is not None else None
        self.show_entity(self.shown[index] if isinstance(index, int) and 0 <= index < len(self.shown) else None)

    def show_entity(self, entity: Entity | None) -> None:
        self.entity = entity
        if entity is None or self.xray is None:
            self.details.setHtml('<p style="color:%s"><i>%s</i></p>' % (MUTED_COLOR, escape(_(
                'The characters, places and terms you have met so far, each described as of your place: nothing '
                'after it.'))))
            return
        palette = self.details.palette()
        self.details.setHtml(entity_html(entity, self.xray, palette.color(QPalette.ColorRole.Base),
                                         palette.color(QPalette.ColorRole.Highlight)))

    def on_link(self, url: QUrl) -> None:
        """Where an entity first appears, or a passage it rests on: that place of the book."""
        what = url.toString()
        entity, go_to = self.entity, self.grounding.go_to
        if entity is None or go_to is None or not what.startswith('bookai:'):
            return
        target = what[len('bookai:'):]
        if target == 'first':
            return go_to(entity.first)
        if target.startswith('cite/'):
            try:
                k = int(target[len('cite/'):])
            except ValueError:
                return
            if 0 <= k < len(entity.citations):
                go_to(entity.citations[k].place)

    def on_status_link(self, link: str) -> None:
        if link == 'settings' and self.open_settings is not None:
            self.open_settings()
            self.refresh()

    # }}}

    # building {{{

    def build_or_stop(self) -> None:
        if self.building:
            self.stop()
        elif self.work is None:
            self.build()

    def stop(self) -> None:
        if self.cancel is not None:
            self.cancel.cancel()  # the build ends with Cancelled: what it read is kept, then shown
        if self.work is not None and not self.making:  # still reading the book, or planning: nothing sent
            self.grounding.source.cancel()
            token = self.work
            self.end(token)
            self.refresh(_('Stopped. Nothing was sent.'))

    def build(self) -> None:
        """Plan, ask the reader's consent where needed, then make the X-Ray (see the module's docstring)."""
        token = self.begin(True)
        language = self.language()
        book_key = self.grounding.key

        def found(what: Found) -> None:
            provider, text, position = what
            cancel = self.cancel

            def work() -> tuple[XRayKey, Plan]:
                key = key_for(book_key, provider, '', language, cancel)
                return key, plan_xray(text.book, position, provider, key)

            def planned(result: tuple[XRayKey, Plan] | None, exc: Exception | None) -> None:
                if exc is not None or result is None:
                    self.end(token)
                    return self.refresh(self.error_text(exc))
                key, plan = result
                self.key = key
                if not plan.nothing_to_send and needs_consent(book_key, provider):
                    d = ConsentDialog(plan, provider, key.model, self)
                    agreed = d.exec() == QDialog.DialogCode.Accepted
                    if not self.current(token):
                        return
                    if not agreed:
                        self.end(token)
                        return self.say(_('Nothing was sent.'))
                    if d.dont_ask.isChecked():
                        remember_consent(book_key, provider)
                self.make(token, provider, text.book, position, key, plan)
            run_while(lambda: self.current(token), work, planned, self)
        self.with_book(token, found)

    def make(self, token: object, provider: 'AIProviderPlugin', book: 'Book', position: float, key: XRayKey,
             plan: Plan) -> None:
        """build_xray() in a thread, its progress shown, then the X-Ray it made."""
        cancel = self.cancel
        self.making = True
        self.say(plan.said())
        if not plan.nothing_to_send:
            self.progress.setRange(0, len(plan.chapters))
            self.progress.setValue(0)
            self.progress.setVisible(True)

        progress = emitter(self.progressed)  # in the thread: only emits

        def work() -> XRay:
            return build_xray(book, position, provider, key, cancel=cancel, progress=progress)

        def made(xray: XRay | None, exc: Exception | None) -> None:
            if exc is not None or xray is None:
                return self.refresh(self.error_text(exc))  # what was read is kept: shown
            self.show_xray(xray)
            if xray.requests:
                self.say(ngettext('{count} request sent: {cost}.', '{count} requests sent: {cost}.',
                                  xray.requests).format(count=xray.requests,
                                                        cost=cost_text(xray.usage.cost, provider.connection.is_local)))
            else:
                self.say(plan.said())
        run_while(lambda: self.end(token), work, made, self)

    def show_progress(self, done: int, total: int, title: str) -> None:
        if not self.building or self.closed:
            return
        self.progress.setRange(0, max(total, 1))
        self.progress.setValue(done)
        if title:
            self.say(_('Reading {chapter} ({number} of {total})…').format(chapter=title, number=done + 1,
                                                                           total=total))

    # }}}
