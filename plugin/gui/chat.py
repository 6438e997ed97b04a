# License: GPLv3 Copyright: the Book AI developers
"""The conversation as the reader sees it: questions, rendered answers, errors, and
the links under each reply (Copy, Show reasoning, Save).

A streaming answer is not re-rendered as a whole on every chunk: its finished
blocks (render.stable_end) are rendered once and inserted; only the unfinished
tail is replaced, on a short timer, so the cost of an answer grows with its
length, not with its square. When the answer ends, only what is left of it, its
header and the links under it are rendered.

Links in the conversation are handled here: ours (scheme "bookai:") become the
link_activated signal, http and https ones open in the browser only when
clicked, and the document never loads a resource from anywhere.

What the model looked up while answering (gui/lookups.py) is shown under the answer: a line each
as the lookups come while it streams, then folded into one line that unfolds when clicked.

The web pages an answer used (web search) are listed under it, as calibre lists
them: each title a link to its page, its site beside it. They come from outside:
only what core.web_links keeps is shown (web addresses, each once, a bounded
number, titles escaped with their control characters shown), and only http and
https addresses are links.
"""

from collections.abc import Callable, Sequence
from html import escape
from typing import TYPE_CHECKING

from qt.core import (
    QFont, QFrame, QTextBlockFormat, QTextBrowser, QTextCharFormat, QTextCursor, QTimer, QUrl, QWidget, pyqtSignal,
)

from calibre_plugins.bookai.conversation.conversation import cache_text
from calibre_plugins.bookai.conversation.prompts import passage_texts
from calibre_plugins.bookai.conversation.render import markdown_to_html, renderer, stable_end
from calibre_plugins.bookai.core.web_links import is_web_address, kept_links, site
from calibre_plugins.bookai.grounding.citations import cited_numbers, repeated_passages
from calibre_plugins.bookai.gui.lookups import (  # link: ours, made there for both
    MUTED_COLOR, all_lookups, cited_place, lines_html, link, lookups_html, passage_count,
)
from calibre_plugins.bookai.settings.prefs import chat_text_size

if TYPE_CHECKING:
    from calibre_plugins.bookai.conversation.conversation import Turn
    from calibre_plugins.bookai.conversation.lookups import Lookup

load_translations()

FLUSH_INTERVAL = 40  # ms between two renders of a streaming tail
ERROR_COLOR = '#c0392b'


def question_html(text: str, note: str = '') -> str:
    body = escape(text).replace('\n', '<br>')
    note = f'<p style="margin-top:0; color:{MUTED_COLOR}"><i>{escape(note)}</i></p>' if note else ''
    return (f'<p style="margin-top:14px; margin-bottom:4px"><b>{escape(_("You"))}</b></p>'
            f'<p style="margin-top:0">{body}</p>{note}')


def sent_note(turn: 'Turn') -> str:
    """What of the book went with a question, in words ('' for nothing)."""
    firsts = [lookup.first for lookup in turn.lookups if lookup.first > 0]
    count = min([len(turn.places), *(first - 1 for first in firsts)])  # not those its lookups found
    if count <= 0:
        return ''
    if turn.places[0].book_id:  # found across the library
        return _('Sent with passages of your books: {count}.').format(count=count)
    if turn.spoiler_safe:
        return _('Sent with passages of the book: {count}, none after where you are.').format(count=count)
    return _('Sent with passages of the book: {count}.').format(count=count)


def header_html(text: str) -> str:
    return f'<p style="margin-top:10px; margin-bottom:4px"><b>{escape(text)}</b></p>'


def muted_html(text: str) -> str:
    return f'<p style="color:{MUTED_COLOR}"><i>{escape(text)}</i></p>'


class ChatView(QTextBrowser):
    """The conversation, as it is read and as an answer streams into it."""

    link_activated = pyqtSignal(str, int)  # what ('copy', 'reasoning', 'lookups', 'save', 'retry', 'settings'), turn
    citation_activated = pyqtSignal(int, int)  # turn index, passage number
    book_activated = pyqtSignal(int, int)  # turn index, number of a book it offered (Turn.suggested)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.anchorClicked.connect(self.on_link)
        self.document().setUndoRedoEnabled(False)  # read-only: no undo history growing with every update
        self.reasoning_shown: set[int] = set()
        self.lookups_shown: set[int] = set()  # the turns whose lookups are unfolded
        self.save_text = ''  # the Save link under each reply ('' for none)
        self.stream: Stream | None = None
        self.flush_timer = t = QTimer(self)
        t.setSingleShot(True)
        t.setInterval(FLUSH_INTERVAL)
        t.timeout.connect(self.flush)
        renderer()  # python-markdown is loaded with the window, not during the first answer
        self.base_font = QFont(self.font())  # calibre's text, as this window has it
        self.text_size = 100  # percent of base_font the chat's text has now
        self.apply_text_size()

    def apply_text_size(self) -> None:
        """Give the chat's text the size the settings say (Settings → Reading), in percent of calibre's
        own text; the text shown is laid out again in it. Called on every render: a change in the settings
        shows with the next question."""
        percent = chat_text_size()
        if percent == self.text_size:
            return
        self.text_size = percent
        if percent == 100:
            self.setFont(QFont())  # nothing of its own: the window's font, as every other widget's
            return
        font = QFont(self.base_font)
        if font.pointSizeF() > 0:
            font.setPointSizeF(font.pointSizeF() * percent / 100)
        else:  # a font sized in pixels
            font.setPixelSize(max(1, round(font.pixelSize() * percent / 100)))
        self.setFont(font)

    # nothing is ever fetched: not a remote image, not a local file
    def loadResource(self, kind: int, url: QUrl) -> None:
        return None

    def on_link(self, url: QUrl) -> None:
        if url.scheme() == 'bookai':
            what, _sep, index = url.path().partition('/')
            if what in ('cite', 'book'):
                turn, _sep, number = index.partition('/')
                if turn.isdigit() and number.isdigit() and len(turn) < 7 and len(number) < 7:
                    (self.citation_activated if what == 'cite' else self.book_activated).emit(int(turn), int(number))
                return
            self.link_activated.emit(what, int(index) if index.isdigit() else -1)
        elif url.scheme() in ('http', 'https', 'mailto'):
            from calibre.gui2 import open_url  # late: calibre's GUI package, whose open_url tests replace
            open_url(url)

    # the whole conversation {{{

    def show_conversation(self, turns: Sequence['Turn'], assistant: str, intro_html: str = '') -> None:
        """Render everything (on opening, and when a reply's reasoning is shown or hidden)."""
        self.stop_stream()
        self.apply_text_size()
        parts = [intro_html] if intro_html else []
        for i, turn in enumerate(turns):
            parts.append(question_html(turn.question, sent_note(turn)))
            parts.append(self.turn_answer_html(i, turn, assistant))
        self.setHtml(''.join(parts))
        self.scroll_to_bottom()

    def turn_answer_html(self, index: int, turn: 'Turn', assistant: str) -> str:
        parts = [header_html(turn.model or assistant)]
        if turn.reasoning and index in self.reasoning_shown:
            parts.append(f'<blockquote style="color:{MUTED_COLOR}">{markdown_to_html(turn.reasoning)}</blockquote>')
        if turn.answer:
            parts.append(markdown_to_html(turn.answer, citing(index, turn)))
        parts.append(self.turn_footer_html(index, turn))
        return ''.join(parts)

    def turn_footer_html(self, index: int, turn: 'Turn', live: 'Sequence[Lookup]' = ()) -> str:
        """What follows an answer: what the model looked up (folded; live: those seen as it streamed
        that the turn does not hold), how it ended when that is worth saying, the tokens of its prompt
        read from the provider's cache, an error, the links."""
        parts = [lookups_html(index, all_lookups(turn, live), index in self.lookups_shown), sources_html(turn),
                 suggested_html(index, turn)]
        if turn.finish_reason == 'cancelled':
            parts.append(muted_html(_('Stopped.')))
        elif turn.finish_reason == 'length':
            parts.append(muted_html(_('The answer was cut off: it reached the length limit.')))
        if repeated := repeated_html(index, turn):
            parts.append(repeated)
        if turn.usage is not None and (cached := cache_text(turn.usage)):  # what the prompt cache saved
            parts.append(muted_html(cached))
        if turn.error:
            parts.append(f'<p style="color:{ERROR_COLOR}">{escape(turn.error)}</p>')
            parts.append('<p>' + link(f'retry/{index}', _('Retry'), _('Ask this question again')) + '</p>')
        links = []
        if turn.answer:
            links.append(link(f'copy/{index}', _('Copy'), _('Copy this reply')))
        if turn.reasoning:
            text = _('Hide reasoning') if index in self.reasoning_shown else _('Show reasoning')
            links.append(link(f'reasoning/{index}', text, _('What the model thought before answering')))
        if turn.answer and self.save_text:
            links.append(link(f'save/{index}', self.save_text.replace('&', ''), _('Save this reply')))
        if links:
            parts.append(f'<p style="margin-bottom:8px">{" &nbsp;·&nbsp; ".join(links)}</p>')
        return ''.join(parts)

    def toggle_reasoning(self, index: int) -> None:
        self.reasoning_shown ^= {index}

    def toggle_lookups(self, index: int) -> None:
        self.lookups_shown ^= {index}

    def append_html(self, html: str) -> None:
        c = self.end_cursor()
        c.insertBlock()
        c.insertHtml(html)

    # }}}

    # one answer as it streams {{{

    def begin_answer(self, question: str, header: str, cite: Callable[[int], str] | None = None,
                     note: str = '', index: int = -1) -> None:
        """Show the question and where the answer will come; the answer streams in after.
        cite: what its [n] citations become (citing()); note: what went with it (sent_note());
        index: the turn's, for the links of its lookups' passages."""
        self.stop_stream()
        self.apply_text_size()
        at_bottom = self.at_bottom()
        self.append_html(question_html(question, note))
        c = self.end_cursor()
        c.insertBlock()
        self.stream = Stream(c.position(), cite, index)  # the answer's region: header, finished blocks, tail
        c.insertHtml(header_html(header))
        c.insertBlock()
        self.stream.tail_start = self.stream.body_start = c.position()
        self.render_tail(muted_html(_('Waiting for the answer…')))
        if at_bottom:
            self.scroll_to_bottom()

    def add_text(self, text: str) -> None:
        if self.stream is not None and text:
            self.stream.arrived.append(text)
            self.stream.dirty = True
            if not self.flush_timer.isActive():
                self.flush_timer.start()

    def add_lookup(self, lookup: 'Lookup') -> None:
        """A lookup the model made while answering: its line shows under the answer as it streams."""
        s = self.stream
        if s is not None:
            s.lookups.append(lookup)
            s.dirty = True
            if not self.flush_timer.isActive():
                self.flush_timer.start()

    def add_reasoning(self, text: str) -> None:
        s = self.stream
        if s is not None and text:
            if not s.has_text:
                s.dirty = True
                if not self.flush_timer.isActive():
                    self.flush_timer.start()

    def flush(self) -> None:
        """Render what arrived: newly finished blocks once, then the tail again. Only the text not
        yet rendered as finished blocks is looked at, so each update costs what arrived plus the tail."""
        s = self.stream
        if s is None or not s.dirty:
            return
        s.dirty = False
        at_bottom = self.at_bottom()
        if not s.has_text and not s.arrived:
            self.render_tail(muted_html(_('Thinking…')) + self.live_lookups_html())
        else:
            s.has_text = True
            text = s.tail + ''.join(s.arrived)
            s.arrived = []
            end = stable_end(text)
            if end:
                self.render_tail(markdown_to_html(text[:end], s.cite))  # finished blocks, rendered once
                c = self.end_cursor()
                c.insertBlock()
                s.tail_start = c.position()
                text = text[end:]
            s.tail = text
            self.render_tail(markdown_to_html(text, s.cite) + self.live_lookups_html())
        if at_bottom:
            self.scroll_to_bottom()

    def live_lookups_html(self) -> str:
        """The lines of the lookups made so far, under the answer that streams ('' for none)."""
        s = self.stream
        return lines_html(s.index, s.lookups) if s is not None and s.lookups else ''

    def render_tail(self, html: str) -> None:
        """Replace what follows the stream's finished blocks with html."""
        stream = self.stream
        assert stream is not None  # called only while an answer streams in
        c = QTextCursor(self.document())
        c.setPosition(stream.tail_start)
        c.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        c.removeSelectedText()
        # the emptied block may keep the format of what was there (a list item, a heading): reset it
        if c.currentList() is not None:
            c.currentList().remove(c.block())
        c.setBlockFormat(QTextBlockFormat())
        c.setCharFormat(QTextCharFormat())
        if html:
            c.insertHtml(html)

    def end_answer(self, index: int, turn: 'Turn', assistant: str) -> None:
        """The answer is complete (or failed, or stopped). What was rendered as it streamed
        stays: only the rest of the text, the links under it and its header are rendered, so
        the end of a long answer costs no more than any update."""
        s = self.stream
        if s is None:
            return
        self.flush_timer.stop()
        at_bottom = self.at_bottom()
        live, s.lookups = tuple(s.lookups), []  # their lines go: the footer has them, folded
        if s.arrived or s.has_text:
            s.dirty = True
            self.flush()
        else:
            self.render_tail('')  # "Waiting…" or "Thinking…" goes
        footer = self.turn_footer_html(index, turn, live)
        if footer:
            c = self.end_cursor()
            c.insertBlock()
            c.insertHtml(footer)
        c = QTextCursor(self.document())
        c.setPosition(s.start)
        c.setPosition(s.body_start, QTextCursor.MoveMode.KeepAnchor)
        c.insertHtml(header_html(turn.model or assistant))
        c.insertBlock()
        self.stream = None
        if at_bottom:
            self.scroll_to_bottom()

    def stop_stream(self) -> None:
        self.flush_timer.stop()
        self.stream = None

    # }}}

    def end_cursor(self) -> QTextCursor:
        c = QTextCursor(self.document())
        c.movePosition(QTextCursor.MoveOperation.End)
        return c

    def at_bottom(self) -> bool:
        sb = self.verticalScrollBar()
        return sb.value() >= sb.maximum() - 4

    def scroll_to_bottom(self) -> None:
        sb = self.verticalScrollBar()
        sb.setValue(sb.maximum())


def citing(index: int, turn: 'Turn', live: 'Callable[[], Sequence[Lookup]] | None' = None
           ) -> Callable[[int], str] | None:
    """What the [n] citations of turn index become: a link to passage n when it was sent with
    the question or found by a lookup, flagged when it was not; None for a turn sent without
    passages that looked nothing up. live: the lookups of an answer still streaming (its [n]
    may cite what they found: until they do, a turn that has no passage leaves [n] as it is)."""
    if turn.suggested:
        return suggesting(index, turn)
    if not turn.places and not turn.lookups and live is None:
        return None

    def cite(n: int) -> str:
        found = live() if live is not None else ()
        place = cited_place(turn, n, found)
        if place is not None:
            return link(f'cite/{index}/{n}', str(n), _('Passage {n}: {chapter}, at {position:.0%}').format(
                n=n, chapter=place.chapter, position=place.position))
        if not passage_count(turn, found):
            return escape(str(n))  # nothing to cite yet
        return (f'<span style="color:{ERROR_COLOR}" title="{escape(_("Not a passage that was sent"))}">'
                f'{n}?</span>')
    return cite


def suggesting(index: int, turn: 'Turn') -> Callable[[int], str]:
    """What the [n] of an answer about what to read next become: a link that selects book n in calibre's
    list when it is one of the books the question offered, flagged when it is not. The link is made of
    the turn's own numbers: nothing the model wrote becomes a link's target."""
    def cite(n: int) -> str:
        if 0 < n <= len(turn.suggested):
            return link(f'book/{index}/{n}', str(n), _('Select {title} in the book list').format(
                title=turn.suggested[n - 1][1]))
        return (f'<span style="color:{ERROR_COLOR}" title="{escape(_("Not one of the books offered"))}">'
                f'{n}?</span>')
    return cite


def suggested_html(index: int, turn: 'Turn') -> str:
    """The books of the library an answer about what to read next names by their numbers, each title (as
    calibre has it, not as the model wrote it) a link that selects the book; '' for none."""
    if not turn.answer or not turn.suggested:
        return ''
    numbers = [n for n in cited_numbers(turn.answer) if 0 < n <= len(turn.suggested)]
    if not numbers:
        return ''
    items = ''.join('<li>' + link(f'book/{index}/{n}', turn.suggested[n - 1][1] or str(n), _(
        'Select {title} in the book list').format(title=turn.suggested[n - 1][1])) + '</li>' for n in numbers)
    return (f'<p style="margin-top:8px; margin-bottom:2px; color:{MUTED_COLOR}"><b>'
            f'{escape(_("Suggested from your library"))}</b></p><ul style="margin-top:0; margin-bottom:4px">{items}</ul>')


def repeated_html(index: int, turn: 'Turn') -> str:
    """For an answer sent with passages that cites none of them: the passages whose words it
    repeats, linked as citations are; '' otherwise."""
    if not turn.answer or not turn.places:
        return ''
    texts = passage_texts(turn.passages)
    numbers = repeated_passages(turn.answer, [texts.get(n, '') for n in range(1, len(turn.places) + 1)])
    if not numbers:
        return ''
    cite = citing(index, turn)
    assert cite is not None  # a turn with places: citing gives its citations
    return muted_html(_('The model cited no passage; its answer repeats the words of {passages}.')).replace(
        '{passages}', ', '.join(f'[{cite(n)}]' for n in numbers))


def sources_html(turn: 'Turn') -> str:
    """The web pages an answer used, as a list of links under it ('' for none)."""
    if not turn.answer:
        return ''
    links, left_out = kept_links(turn.web_links)  # kept so already: held to the rules however the turn was made
    left_out += turn.web_links_left_out
    if not links and not left_out:
        return ''
    items = []
    for w in links:
        host = site(w.url)
        title = escape(w.title or host or w.url)
        if is_web_address(w.url):
            title = f'<a href="{escape(w.url)}" title="{escape(w.url)}">{title}</a>'
        items.append(f'<li>{title}' + (f' <span style="color:{MUTED_COLOR}">— {escape(host)}</span>' if host else '')
                     + '</li>')
    parts = [f'<p style="margin-top:8px; margin-bottom:2px; color:{MUTED_COLOR}"><b>{escape(_("Sources"))}</b></p>']
    if items:
        parts.append(f'<ul style="margin-top:0; margin-bottom:4px">{"".join(items)}</ul>')
    if left_out:
        parts.append(muted_html(ngettext('{count} more page the answer named is not shown.',
                                         '{count} more pages the answer named are not shown.',
                                         left_out).format(count=left_out)))
    return ''.join(parts)


class Stream:
    """Where the answer that is streaming sits in the document, and what of it is not rendered yet."""

    def __init__(self, start: int, cite: Callable[[int], str] | None = None, index: int = -1) -> None:
        self.cite = cite
        self.index = index          # the turn's
        self.lookups: list['Lookup'] = []  # what the model looked up so far, shown under the answer
        self.start = start          # where the answer's region begins in the document
        self.body_start = start     # where the answer's text begins, after its header
        self.tail_start = start     # where the unfinished tail begins
        self.tail = ''              # the text of the unfinished tail (finished blocks are not kept)
        self.arrived: list[str] = []  # text that came since the last update
        self.has_text = False
        self.dirty = False

