# License: GPLv3 Copyright: the Book AI developers
"""The AI covers' windows: a cover for one book (CoverDialog), and the choices for the covers of
many (BulkCoverDialog), as calibre 9.17's "Generate cover with AI" (gui2/dialogs/llm_cover.py).

Both show the same choices (CoverChoicesWidget): the style (calibre's, and the reader's own,
saved by name), its prompt to edit, the text rendered on the cover, the book's description as
context (off, as calibre), the aspect ratio. The prompt itself is built by covers.prompt, never
here, so that what "What will be sent…" shows is what Generate sends.

Nothing is sent before Generate. The request runs in a thread (gui.worker), made as every cover
is made (covers.making: the provider's checks, the image, its decoding, its price); so does the decoding
of its image, which Book AI does itself, bounded in time and memory, in calibre's worker process
(core.images.decode_images): the window shows only Book AI's own picture of it (at most
DISPLAY_SIDE pixels a side, made into a QImage without a decoder), and Use this cover gives
Book AI's own JPEG of it (cover), never the bytes the service sent. Stop, Cancel and closing
the window stop it through its CancelToken, and a result that comes after is dropped.
The line at the bottom names the model, this image's cost and the total since the window opened,
as the chat does (estimated from dated prices, or unknown, never free).
"""

from collections.abc import Callable
from dataclasses import replace
from html import escape
from typing import TYPE_CHECKING

from qt.core import (
    QCheckBox, QCloseEvent, QComboBox, QDialog, QDialogButtonBox, QFont, QGroupBox, QHBoxLayout, QImage,
    QInputDialog, QLabel, QLineEdit, QPainter, QPixmap, QPlainTextEdit, QPushButton, QResizeEvent, QSize,
    QSizePolicy, QSplitter, QStackedWidget, Qt, QVBoxLayout, QWidget,
)

from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.images import ASPECTS, Decoded, Image, ImageResult
from calibre_plugins.bookai.core.messages import Cost
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.covers import styles
from calibre_plugins.bookai.covers.making import (
    chosen_image_provider, failure_text, image_model_shown, image_summary, make_cover, price_sentence, provider_problem,
)
from calibre_plugins.bookai.covers.prompt import (
    CoverChoices, CoverTexts, choices_from_prefs, cover_prompt, evaluate_texts, refine_prompt, remember,
)
from calibre_plugins.bookai.gui.image_decoding import qimage
from calibre_plugins.bookai.gui.preview import destination
from calibre_plugins.bookai.gui.worker import run_in_thread
from calibre_plugins.bookai.providers.capabilities import Capability
from calibre_plugins.bookai.providers.pricing import cost_text, total_cost
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre.ebooks.metadata.book.base import Metadata

    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()

DISPLAY_SIDE = 1600    # pixels a side, at most, of the image as the window shows it (decoded so, in calibre's worker)
ERROR_COLOR = '#c0392b'


def aspect_names() -> dict[str, str]:
    """The aspect ratios offered (core.images.ASPECTS), in words; calibre's where calibre has them."""
    return {'2:3': _('Portrait (2:3, a printed book\'s shape)'),
            '3:4': _('Portrait (3:4, typical of book covers)'),
            '1:1': _('Square (1:1)'),
            '9:16': _('Tall portrait (9:16)'),
            '4:3': _('Landscape (4:3)')}


def has_templates(choices: CoverChoices) -> bool:
    """Whether the choices put the title, authors or series through a calibre template."""
    return any(isinstance(t, str) and t.strip() for t in (choices.templates or {}).values())


PromptFor = Callable[[CoverTexts | None], str]  # the prompt, given the book's texts through its templates


class ImageView(QWidget):
    """An image, scaled to fit and centred; scaled once for each size, not on every paint."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.image = QImage()
        self.scaled: QPixmap | None = None
        self.message = ''
        self.setMinimumSize(200, 260)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)

    def set_image(self, image: QImage) -> None:
        self.image = image
        self.scaled = None
        self.update()

    def set_message(self, text: str) -> None:
        self.message = text
        self.update()

    def resizeEvent(self, ev: QResizeEvent) -> None:
        self.scaled = None
        super().resizeEvent(ev)

    def paintEvent(self, ev: object) -> None:
        p = QPainter(self)
        r = self.rect().adjusted(4, 4, -4, -4)
        p.setPen(self.palette().mid().color())
        p.drawRect(self.rect().adjusted(0, 0, -1, -1))
        if not self.image.isNull():
            if self.scaled is None:
                dpr = self.devicePixelRatioF()
                img = self.image.scaled(QSize(int(r.width() * dpr), int(r.height() * dpr)),
                                        Qt.AspectRatioMode.KeepAspectRatio,
                                        Qt.TransformationMode.SmoothTransformation)
                self.scaled = QPixmap.fromImage(img)
                self.scaled.setDevicePixelRatio(dpr)
            pm = self.scaled
            size = pm.deviceIndependentSize().toSize() if hasattr(pm, 'deviceIndependentSize') else pm.size()
            x = r.x() + (r.width() - size.width()) // 2
            y = r.y() + (r.height() - size.height()) // 2
            p.drawPixmap(x, y, pm)
        elif self.message:
            p.setPen(self.palette().text().color())
            p.drawText(r, Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap, self.message)
        p.end()


class CoverChoicesWidget(QWidget):
    """The choices of a cover, shared by the one-book and the many-books windows: the style, its
    prompt, the text rendered on the cover, the description as context and the aspect ratio."""

    def __init__(self, many: bool = False, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.many = many
        prefs = plugin_prefs()
        self.style_key = styles.style_by_name(prefs['cover_style']).name
        self.setup_ui(choices_from_prefs())

    def setup_ui(self, c: CoverChoices) -> None:
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        row = QHBoxLayout()
        label = QLabel(_('Cover &style:'), self)
        self.style_box = QComboBox(self)
        label.setBuddy(self.style_box)
        self.fill_styles()
        self.style_box.activated.connect(self.style_chosen)
        row.addWidget(label)
        row.addWidget(self.style_box, 1)
        self.save_style_button = QPushButton(_('Save st&yle…'), self)
        self.save_style_button.setToolTip(_('Keep this prompt as a style of your own, by name'))
        self.save_style_button.clicked.connect(self.save_style)
        row.addWidget(self.save_style_button)
        self.delete_style_button = QPushButton(_('Delete style'), self)
        self.delete_style_button.setToolTip(_('Forget this style of your own (calibre\'s cannot be deleted)'))
        self.delete_style_button.clicked.connect(self.delete_style)
        row.addWidget(self.delete_style_button)
        layout.addLayout(row)

        self.prompt_edit = QPlainTextEdit(self)
        self.prompt_edit.setPlaceholderText(_('Describe the cover you want the AI to create'))
        self.prompt_edit.setPlainText(styles.style_by_name(self.style_key).template)
        self.prompt_edit.setMinimumHeight(self.prompt_edit.fontMetrics().lineSpacing() * 5)
        layout.addWidget(self.prompt_edit, 1)

        self.text_group = QGroupBox(_('Render text on the cover'), self)
        tl = QHBoxLayout(self.text_group)
        self.include_title = QCheckBox(_('&Title'), self.text_group)
        self.include_authors = QCheckBox(_('&Author(s)'), self.text_group)
        self.include_series = QCheckBox(_('S&eries'), self.text_group)
        for box, on in ((self.include_title, c.title), (self.include_authors, c.authors),
                        (self.include_series, c.series)):
            box.setChecked(on)
            tl.addWidget(box)
        tl.addStretch(1)
        layout.addWidget(self.text_group)

        self.include_description = QCheckBox(
            _('Send book &descriptions to AI as context') if self.many else
            _('Send book &description to AI as context'), self)
        self.include_description.setToolTip(_('Include the book description/comments in the prompt so the AI can '
                                              'generate a more relevant cover'))
        self.include_description.setChecked(c.description)
        layout.addWidget(self.include_description)

        row = QHBoxLayout()
        label = QLabel(_('Aspect rat&io:'), self)
        self.aspect_box = QComboBox(self)
        label.setBuddy(self.aspect_box)
        for value, text in aspect_names().items():
            if value in ASPECTS:
                self.aspect_box.addItem(text, value)
        self.aspect_box.setCurrentIndex(max(0, self.aspect_box.findData(c.aspect)))
        row.addWidget(label)
        row.addWidget(self.aspect_box)
        row.addStretch(1)
        layout.addLayout(row)
        self.update_buttons()

    def fill_styles(self) -> None:
        """calibre's styles, the reader's own, then Custom (covers.styles.all_styles())."""
        box = self.style_box
        box.clear()
        saved = {s.name for s in styles.saved_styles()}
        for s in styles.all_styles():
            box.addItem(s.human_name, s.name)
            if s.name in saved:
                box.setItemData(box.count() - 1, _('A style of your own'), Qt.ItemDataRole.ToolTipRole)
        index = box.findData(self.style_key)
        if index < 0:
            index = box.findData(styles.builtin_styles()[0].name)
        box.setCurrentIndex(max(0, index))
        self.style_key = box.currentData()

    def update_buttons(self) -> None:
        self.delete_style_button.setEnabled(self.style_key in {s.name for s in styles.saved_styles()})

    def style_chosen(self) -> None:
        key = self.style_box.currentData()
        if key is None or key == self.style_key:
            return
        current = self.prompt_edit.toPlainText().strip()
        edited = current and current != styles.style_by_name(self.style_key).template.strip()
        if edited:
            from calibre.gui2 import question_dialog  # calibre's, looked up when called
            if not question_dialog(self, _('Replace your prompt?'), _(
                    'You changed the prompt. Replace it with the prompt of this style?')):
                self.style_box.setCurrentIndex(max(0, self.style_box.findData(self.style_key)))
                return
        self.style_key = key
        self.prompt_edit.setPlainText(styles.style_by_name(key).template)
        self.prompt_edit.setFocus(Qt.FocusReason.OtherFocusReason)
        self.update_buttons()

    def save_style(self) -> None:
        text = self.prompt_edit.toPlainText().strip()
        if not text:
            from calibre.gui2 import error_dialog
            error_dialog(self, _('Instructions required'), _('Please enter instructions for the custom style.'),
                         show=True)
            return
        name, ok = QInputDialog.getText(self, _('Save as custom style'), _('Name for this custom style:'))
        if not ok or not name.strip():
            return
        try:
            style = styles.save_style(name, text)
        except ValueError as e:
            from calibre.gui2 import error_dialog
            error_dialog(self, _('The style was not saved'), str(e), show=True)
            return
        self.style_key = style.name
        self.fill_styles()
        self.update_buttons()

    def delete_style(self) -> None:
        key = self.style_key
        if key not in {s.name for s in styles.saved_styles()}:
            return
        styles.delete_styles([key])
        self.style_key = styles.builtin_styles()[0].name
        self.fill_styles()
        self.prompt_edit.setPlainText(styles.style_by_name(self.style_key).template)
        self.update_buttons()

    def choices(self) -> CoverChoices:
        """The choices shown (templates and extra instructions: as in the settings)."""
        return replace(choices_from_prefs(self.prompt_edit.toPlainText()),
                       title=self.include_title.isChecked(), authors=self.include_authors.isChecked(),
                       series=self.include_series.isChecked(), description=self.include_description.isChecked(),
                       aspect=self.aspect_box.currentData())

    def remember(self) -> None:
        """Keep the choices for the next time (covers.prompt.remember)."""
        remember(self.choices(), self.style_key)

    def set_enabled(self, on: bool) -> None:
        for w in (self.style_box, self.save_style_button, self.prompt_edit, self.text_group,
                  self.include_description, self.aspect_box):
            w.setEnabled(on)
        if on:
            self.update_buttons()
        else:
            self.delete_style_button.setEnabled(False)


class CoverPreviewDialog(QDialog):
    """What will be sent: the exact prompt, where it goes (provider, model), whether the book's
    description is in it, whether an image goes with it, and the price of an image."""

    def __init__(self, provider: 'AIProviderPlugin', prompt: str, aspect: str, description: bool,
                 with_image: bool = False, count: int = 1, templates: bool = False,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(_('What will be sent'))
        self.prompt = prompt
        layout = QVBoxLayout(self)
        model = image_model_shown(provider)
        lines = [_('This goes to {where}, image model {model}.').format(
            where='<b>' + escape(destination(provider)) + '</b>',
            model='<b>' + escape(model or _('automatic')) + '</b>')]
        if count > 1:
            lines.append(escape(ngettext('One request for the selected book; below, its prompt.',
                                         'One request for each of the {count} selected books; below, the first '
                                         'one\'s prompt.', count).format(count=count)))
        lines.append(escape(_('The book\'s description is included.') if description else
                            _('The book\'s description is not included.')))
        if with_image:
            lines.append(escape(_('The current image goes with it, to be changed.')))
        lines.append(escape(price_sentence(provider, aspect, count)))
        if templates:  # a preview evaluates nothing a file brought in
            lines.append(escape(_('Your calibre templates for the title, authors and series are applied when the '
                                  'cover is made; here the fields are shown as they are.')))
        lines.append(escape(_('Nothing else is sent: no file of the book, nothing about your library.')))
        self.summary = QLabel('<p>' + '<br>'.join(lines) + '</p>', self)
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.view = QPlainTextEdit(self)
        self.view.setReadOnly(True)
        self.view.setPlainText(prompt)
        font = QFont(self.view.font())
        font.setStyleHint(QFont.StyleHint.Monospace)
        font.setFamily('monospace')
        self.view.setFont(font)
        layout.addWidget(self.view, 1)
        bb = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        bb.rejected.connect(self.reject)
        layout.addWidget(bb)
        self.resize(680, 520)


class ProviderMissing(QWidget):
    """Said instead of the choices when covers cannot be made: why, and a way to the settings."""

    def __init__(self, open_settings: Callable[[], None], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        self.text = QLabel(self)
        self.text.setWordWrap(True)
        self.text.setTextFormat(Qt.TextFormat.PlainText)
        layout.addWidget(self.text)
        self.settings_button = QPushButton(_('Open the &settings…'), self)
        self.settings_button.clicked.connect(open_settings)
        layout.addWidget(self.settings_button, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addStretch(1)


def default_settings_opener(parent: QWidget) -> Callable[[], None]:
    def open_settings() -> None:
        # on use: the settings or a provider only when asked for
        from calibre_plugins.bookai.gui.settings_dialog import show_settings
        show_settings(parent, None, tab='covers')
    return open_settings


class CoverWindow(QDialog):
    """What both cover windows share: the image provider chosen in the settings, a stack that shows
    why covers cannot be made (ProviderMissing, with a way to the settings) instead of main_page,
    and the buttons at the bottom, Cancel last."""

    def __init__(self, parent: QWidget | None, open_settings: Callable[[], None] | None) -> None:
        super().__init__(parent)
        self.open_settings_now = open_settings or default_settings_opener(self)
        self.provider = chosen_image_provider()

    def add_stack(self, layout: QVBoxLayout) -> None:
        """The stack, with the page said when covers cannot be made; main_page comes by add_main_page()."""
        self.stack = QStackedWidget(self)
        layout.addWidget(self.stack, 1)
        self.missing_page = ProviderMissing(self.open_settings, self)
        self.stack.addWidget(self.missing_page)

    def add_main_page(self, page: QWidget) -> None:
        self.stack.addWidget(page)
        self.main_page = page

    def add_buttons(self, layout: QVBoxLayout, *buttons: tuple[str, QDialogButtonBox.ButtonRole]) -> list[QPushButton]:
        """The buttons (text, role), in this order, then Cancel; the buttons made."""
        self.bb = QDialogButtonBox(self)
        made = [self.bb.addButton(text, role) for text, role in buttons]
        self.bb.addButton(QDialogButtonBox.StandardButton.Cancel)
        self.bb.accepted.connect(self.accept)
        self.bb.rejected.connect(self.reject)
        layout.addWidget(self.bb)
        return made

    def show_missing(self) -> str:
        """Why covers cannot be made ('' when they can), its page shown if so, else main_page."""
        problem = provider_problem(self.provider)
        self.missing_page.text.setText(problem)
        self.stack.setCurrentWidget(self.missing_page if problem else self.main_page)
        return problem

    def show_page(self) -> None:
        raise NotImplementedError

    def open_settings(self) -> None:
        self.open_settings_now()
        self.provider = chosen_image_provider()
        self.choices.fill_styles()
        self.show_page()


class CoverDialog(CoverWindow):
    """A cover for one book: Generate, Refine, Start over, Use this cover. After exec(), cover_data
    holds the image chosen (None when none was); the caller puts it on the book."""

    def __init__(self, mi: 'Metadata', book_id: int, library_id: str, parent: QWidget | None = None,
                 open_settings: Callable[[], None] | None = None) -> None:
        super().__init__(parent, open_settings)
        self.mi, self.book_id, self.library_id = mi, book_id, library_id
        self.cancel: CancelToken | None = None   # the request in flight
        self.image: Image | None = None          # the image shown, as the service sent it
        self.image_result: ImageResult | None = None
        self.first_choices: CoverChoices | None = None  # what the image shown was first made from
        self.refinements: list[str] = []         # the changes asked for since (for a provider that cannot edit)
        self.costs: list[Cost | None] = []       # of every image made while the window was open
        self.note = ''
        self.sent_prompt = ''  # the prompt of the last request sent
        self.texts: CoverTexts | None = None  # the title, authors and series through their templates, once evaluated
        self.template_notes: list[str] = []  # what became of the templates (one failed, took too long...)
        self.decoded: Decoded | None = None      # the image shown, as Book AI decoded it and wrote it anew
        self.cover: Decoded | None = None        # after Use this cover: what goes on the book
        self.closed = False
        self.setWindowTitle(_('Generate cover with AI'))
        self.setup_ui()
        self.show_page()
        self.resize(self.sizeHint())

    def sizeHint(self) -> QSize:
        return QSize(900, 680)

    def setup_ui(self) -> None:
        layout = QVBoxLayout(self)
        self.add_stack(layout)

        page = QWidget(self)
        v = QVBoxLayout(page)
        v.setContentsMargins(0, 0, 0, 0)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, page)
        v.addWidget(self.splitter, 1)
        left = QWidget(self.splitter)
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        title = escape(self.mi.title or _('Unknown'))
        authors = escape(self.mi.format_authors() if hasattr(self.mi, 'format_authors')
                         else ' & '.join(self.mi.authors or ()))
        self.book_label = QLabel(_('<b>{title}</b> by {authors}').format(title=title, authors=authors), left)
        self.book_label.setWordWrap(True)
        lv.addWidget(self.book_label)
        self.choices = CoverChoicesWidget(False, left)
        lv.addWidget(self.choices, 1)

        row = QHBoxLayout()
        self.generate_button = QPushButton(_('&Generate cover'), left)
        self.generate_button.clicked.connect(self.generate_or_stop)
        row.addWidget(self.generate_button)
        self.start_over_button = QPushButton(_('Start &over'), left)
        self.start_over_button.setToolTip(_('Forget the image and the changes asked for, and start again'))
        self.start_over_button.clicked.connect(self.start_over)
        row.addWidget(self.start_over_button)
        self.preview_button = QPushButton(_('&What will be sent…'), left)
        self.preview_button.setToolTip(_('The exact prompt the next request sends, where, and its price'))
        self.preview_button.clicked.connect(self.show_preview)
        row.addWidget(self.preview_button)
        row.addStretch(1)
        lv.addLayout(row)

        refine = QHBoxLayout()
        self.change_edit = QLineEdit(left)
        self.change_edit.setPlaceholderText(_('Describe the changes you want, e.g. "make the background darker"'))
        self.change_edit.returnPressed.connect(self.refine)
        self.change_edit.textChanged.connect(self.update_state)
        refine.addWidget(self.change_edit, 1)
        self.refine_button = QPushButton(_('&Refine cover'), left)
        self.refine_button.clicked.connect(self.refine)
        refine.addWidget(self.refine_button)
        lv.addLayout(refine)

        self.view = ImageView(self.splitter)
        self.view.set_message(_('The cover appears here. Nothing is sent before you click Generate.'))
        self.splitter.addWidget(left)
        self.splitter.addWidget(self.view)
        self.splitter.setStretchFactor(0, 1)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([500, 400])
        self.add_main_page(page)

        self.status = QLabel(self)
        self.status.setWordWrap(True)
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.status)

        self.use_button, = self.add_buttons(layout, (_('&Use this cover'), QDialogButtonBox.ButtonRole.AcceptRole))

    # state {{{

    @property
    def busy(self) -> bool:
        return self.cancel is not None

    @property
    def cover_data(self) -> bytes | None:
        """The cover chosen, as it goes into the library: Book AI's own JPEG (None when none was chosen)."""
        return self.cover.jpeg if self.cover is not None else None

    @property
    def can_edit(self) -> bool:
        return self.provider is not None and bool(self.provider.capabilities & Capability.IMAGE_EDITING)

    def show_page(self) -> None:
        self.show_missing()
        self.update_state()

    def update_state(self) -> None:
        ready = self.stack.currentWidget() is self.main_page
        busy = self.busy
        self.choices.set_enabled(ready and not busy)
        self.generate_button.setText(_('Sto&p') if busy else _('&Generate cover'))
        self.generate_button.setEnabled(ready)
        self.start_over_button.setEnabled(ready and not busy and (self.image is not None or bool(self.refinements)))
        self.preview_button.setEnabled(ready)
        self.change_edit.setEnabled(ready and not busy and self.image is not None)
        self.refine_button.setEnabled(ready and not busy and self.image is not None
                                      and bool(self.change_edit.text().strip()))
        self.use_button.setEnabled(ready and not busy and self.image is not None)

    # }}}

    # requests {{{

    def generate_request(self) -> tuple[PromptFor, Image | None, CoverChoices]:
        """(the prompt for the book's texts, source image, choices) of Generate: a new cover from the
        choices shown."""
        choices = self.choices.choices()
        return lambda texts: cover_prompt(self.mi, choices, texts=texts), None, choices

    def refine_request(self, change: str) -> tuple[PromptFor, Image | None, CoverChoices]:
        """(the prompt for the book's texts, source image, choices) of Refine: the image shown, changed,
        where the provider can change an image; else made again from scratch with every change asked
        for added, as calibre."""
        if self.can_edit and self.image is not None:
            choices = self.choices.choices()
            return lambda texts: refine_prompt(self.mi, choices, change, texts=texts), self.image, choices
        choices = self.first_choices or self.choices.choices()
        refinements = tuple(self.refinements + [change])
        return lambda texts: cover_prompt(self.mi, choices, refinements, texts=texts), None, choices

    def generate_or_stop(self) -> None:
        if self.busy:
            self.stop()
            return
        prompt_for, source, choices = self.generate_request()
        if not choices.style_text.strip():
            from calibre.gui2 import error_dialog
            error_dialog(self, _('No prompt'), _('Describe the cover you want in the prompt box before generating '
                                                 'it.'), show=True)
            return
        self.choices.remember()
        self.send(prompt_for, source, choices, change=None)

    def refine(self) -> None:
        change = self.change_edit.text().strip()
        if self.busy or self.image is None or not change:
            return
        prompt_for, source, choices = self.refine_request(change)
        self.note = '' if source is not None else _(
            'Note: the selected AI model cannot edit images, so the cover is regenerated from scratch with your '
            'refinements added to the prompt. Results may differ noticeably.')
        self.send(prompt_for, source, choices, change=change)

    def send(self, prompt_for: PromptFor, source: Image | None, choices: CoverChoices, change: str | None) -> None:
        """One request, in a thread: the book's title, authors and series through their templates the
        first time (in calibre's worker: covers.prompt.evaluate_texts), the prompt, the image; the
        answer comes to request_done(), which shows the image Book AI decoded."""
        chosen = self.provider
        if chosen is None or provider_problem(chosen):
            self.show_page()
            return
        provider = chosen  # not None, also in work() below, which the check above does not reach
        cancel = self.cancel = CancelToken()
        aspect, mi, texts = choices.aspect, self.mi, self.texts

        def work() -> tuple[CoverTexts, list[str], str, tuple[ImageResult, Decoded]]:
            notes: list[str] = []
            if texts is None:
                evaluated = evaluate_texts([mi], choices.templates, abort=cancel)
                book_texts, notes = evaluated.texts[0], evaluated.notes
            else:
                book_texts = texts
            prompt = prompt_for(book_texts)
            return book_texts, notes, prompt, make_cover(provider, prompt, aspect, cancel, source, DISPLAY_SIDE)

        run_in_thread(work, lambda out, exc: self.request_done(cancel, out, exc, choices, change), self)
        self.status.setStyleSheet('')
        self.status.setText((self.note + '\n' if change is not None and self.note else '') + _(
            'Generating cover, this can take a while...'))
        self.view.set_message(_('Generating cover, this can take a while...') if self.image is None else '')
        self.update_state()

    def stop(self) -> None:
        if self.cancel is not None:
            self.cancel.cancel()

    def request_done(self, cancel: CancelToken,
                     out: tuple[CoverTexts, list[str], str, tuple[ImageResult, Decoded]] | None,
                     exc: Exception | None, choices: CoverChoices, change: str | None) -> None:
        if self.closed or cancel is not self.cancel:
            return  # a request stopped, or of a window closed: its answer is dropped
        self.cancel = None
        made = None
        if out is not None:
            self.texts, notes, self.sent_prompt, made = out  # sent_prompt: what was sent last (tests, bug reports)
            self.template_notes = notes or self.template_notes
        if exc is None and cancel.cancelled:
            exc = Cancelled()
        if exc is not None or made is None:
            self.failed(exc)
            return
        result, decoded = made
        image = qimage(decoded.pixels) if decoded.ok else QImage()  # Book AI's own rows: no decoder here
        if image.isNull():
            # the provider that sent it: self.provider changes only on the settings' page, never shown
            # while a request is in flight (send() returns before one when there is no provider)
            assert self.provider is not None
            self.failed(None, decoded.problem or _('The image {provider} sent could not be read.').format(
                provider=self.provider.display_name))
            if not decoded.ok:  # the service was paid for an image Book AI will not use: its cost still counts
                self.costs.append(result.usage.cost)
            return
        self.image_result, self.image, self.decoded = result, result.image, decoded
        if change is None:
            self.first_choices, self.refinements = choices, []
        else:
            self.refinements.append(change)
            self.change_edit.clear()
        self.costs.append(result.usage.cost)
        self.view.set_image(image)
        self.show_status()
        self.update_state()

    def failed(self, exc: Exception | None, text: str = '') -> None:
        if exc is not None:
            text = failure_text(exc)
        self.status.setStyleSheet(f'QLabel {{ color: {ERROR_COLOR} }}' if not isinstance(exc, Cancelled) else '')
        self.status.setText(one_line(text))
        if self.image is None:
            self.view.set_message(_('The cover appears here. Nothing is sent before you click Generate.'))
        self.update_state()

    def show_status(self) -> None:
        """The model, this image's cost, the total since the window opened; the note, above."""
        local = self.provider is not None and self.provider.connection.is_local
        r = self.image_result
        parts = [image_summary(r, local)] if r is not None else []
        if len(self.costs) > 1:
            parts.append(_('Total since this window opened: {cost}').format(
                cost=cost_text(total_cost(self.costs), local)))
        text = ' · '.join(parts)
        if self.note and self.refinements and not self.can_edit:
            text = self.note + '\n' + text
        if self.template_notes:
            text = '\n'.join(self.template_notes) + '\n' + text
        self.status.setStyleSheet('')
        self.status.setText(text)

    def start_over(self) -> None:
        if self.busy:
            return
        self.image = self.image_result = self.first_choices = self.decoded = None
        self.refinements = []
        self.note = ''
        self.view.set_image(QImage())
        self.view.set_message(_('The cover appears here. Nothing is sent before you click Generate.'))
        self.change_edit.clear()
        self.choices.prompt_edit.setPlainText(styles.style_by_name(self.choices.style_key).template)
        local = self.provider is not None and self.provider.connection.is_local
        self.status.setText(_('Total since this window opened: {cost}').format(
            cost=cost_text(total_cost(self.costs), local)) if self.costs else '')
        self.update_state()

    def preview_request(self) -> tuple[PromptFor, Image | None, CoverChoices]:
        """What the next click sends: Refine's request when a change is typed under an image, else Generate's."""
        change = self.change_edit.text().strip()
        if self.image is not None and change:
            return self.refine_request(change)
        return self.generate_request()

    def show_preview(self) -> None:
        if self.provider is None:
            return
        prompt_for, source, choices = self.preview_request()
        self.preview = CoverPreviewDialog(
            self.provider, prompt_for(self.texts), choices.aspect, choices.description and bool(self.mi.comments),
            with_image=source is not None, templates=self.texts is None and has_templates(choices), parent=self)
        self.preview.exec()

    # }}}

    def accept(self) -> None:
        if self.image is None or self.decoded is None or self.busy:
            return
        self.cover = self.decoded
        self.finish()
        super().accept()

    def reject(self) -> None:
        self.finish()
        super().reject()

    def closeEvent(self, ev: QCloseEvent) -> None:
        self.finish()
        super().closeEvent(ev)

    def finish(self) -> None:
        """The window is going: a request in flight is stopped, its answer will be dropped."""
        self.closed = True
        if self.cancel is not None:
            self.cancel.cancel()
            self.cancel = None


class BulkCoverDialog(CoverWindow):
    """The choices for the covers of count books, once; after exec(), choices and style_key."""

    def __init__(self, count: int, parent: QWidget | None = None, sample: 'Metadata | None' = None,
                 open_settings: Callable[[], None] | None = None) -> None:
        super().__init__(parent, open_settings)
        self.count, self.sample = count, sample
        self.result_choices: CoverChoices | None = None
        self.setWindowTitle(_('Generate covers with AI'))
        layout = QVBoxLayout(self)
        self.add_stack(layout)
        page = QWidget(self)
        v = QVBoxLayout(page)
        v.setContentsMargins(0, 0, 0, 0)
        self.count_label = QLabel(self)
        self.count_label.setWordWrap(True)
        v.addWidget(self.count_label)
        self.choices = CoverChoicesWidget(True, page)
        v.addWidget(self.choices, 1)
        self.price_label = QLabel(page)
        self.price_label.setWordWrap(True)
        self.price_label.setTextFormat(Qt.TextFormat.PlainText)
        v.addWidget(self.price_label)
        self.choices.aspect_box.currentIndexChanged.connect(self.show_price)
        self.add_main_page(page)
        self.generate_button, self.preview_button = self.add_buttons(
            layout, (_('&Generate covers'), QDialogButtonBox.ButtonRole.AcceptRole),
            (_('&What will be sent…'), QDialogButtonBox.ButtonRole.ActionRole))
        self.preview_button.clicked.connect(self.show_preview)
        self.preview_button.setVisible(sample is not None)
        self.show_page()
        self.resize(self.sizeHint())

    def sizeHint(self) -> QSize:
        return QSize(640, 560)

    def show_page(self) -> None:
        problem = self.show_missing()
        self.generate_button.setEnabled(not problem)
        self.preview_button.setEnabled(not problem)
        at_once = plugin_prefs()['cover_requests_at_once']
        self.count_label.setText(ngettext(
            'A cover will be made for the selected book, as a job in calibre\'s Jobs panel. You see it beside the '
            'old one before it replaces it.',
            'Covers will be made for the {count} selected books, by one job in calibre\'s Jobs panel, at most '
            '{at_once} at a time. You see the new covers beside the old ones, and choose which to keep, before any '
            'replaces one.', self.count).format(count=self.count, at_once=at_once))
        self.show_price()

    def show_price(self) -> None:
        if self.provider is None or provider_problem(self.provider):
            self.price_label.setText('')
            return
        model = image_model_shown(self.provider)
        self.price_label.setText(_('To {where}, image model {model}.').format(
            where=destination(self.provider), model=model or _('automatic')) + ' ' + price_sentence(
            self.provider, self.choices.aspect_box.currentData(), self.count))

    def show_preview(self) -> None:
        if self.provider is None or self.sample is None:
            return
        choices = self.choices.choices()
        self.preview = CoverPreviewDialog(self.provider, cover_prompt(self.sample, choices), choices.aspect,
                                          choices.description and bool(self.sample.comments), count=self.count,
                                          templates=has_templates(choices), parent=self)
        self.preview.exec()

    @property
    def style_key(self) -> str:
        return self.choices.style_key

    def accept(self) -> None:
        if self.stack.currentWidget() is not self.main_page:
            return
        choices = self.choices.choices()
        if not choices.style_text.strip():
            from calibre.gui2 import error_dialog
            error_dialog(self, _('No prompt'), _('Describe the covers you want in the prompt box before generating '
                                                 'them.'), show=True)
            return
        self.result_choices = choices
        self.choices.remember()
        super().accept()
