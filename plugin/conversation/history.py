# License: GPLv3 Copyright: the Book AI developers
"""Conversations kept across restarts: one JSON file per conversation, in
<calibre config>/plugins/bookai-history/<library id>/, readable by the user only.

A file that cannot be read is never deleted or overwritten: it is renamed to
*.damaged beside the others, and the list reports it, so nothing is lost silently.
A conversation that cannot be saved (the folder is a file, the disk is full, it is
not writable) raises ConversationNotKept, whose text says why: the callers say it, and keep the
conversation they hold; what was saved before is left as it was.
"""

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

from calibre.constants import config_dir

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.files import read_regular, set_aside_if_can, write_private

load_translations()


class ConversationNotKept(OSError):
    """A conversation could not be saved; str() says why, in words."""

    def __str__(self) -> str:
        return f'{self.strerror} ({self.filename})' if self.filename else str(self.strerror)


@dataclass(frozen=True)
class Summary:
    """A kept conversation as the History lists it."""
    id: str
    title: str
    book_ids: tuple[int, ...]
    updated: float
    turns: int
    provider: str
    model: str
    books: tuple[str, ...] = ()  # each book as "Title by Authors", for a list and the command line


def summary_of(conv: Conversation) -> Summary:
    return Summary(conv.id, conv.title, conv.book_ids, conv.updated, len(conv.turns), conv.provider, conv.model,
                   tuple(book_line(b.title, b.authors_text) for b in conv.books))


def book_line(title: str, authors: str) -> str:
    return _('{title} by {authors}').format(title=title, authors=authors) if authors else title


class History:
    """The conversations kept in folder (default: calibre's), one subfolder per library."""

    def __init__(self, folder: str | None = None) -> None:
        if folder is None:
            folder = os.path.join(config_dir, 'plugins', 'bookai-history')
        self.folder = folder
        self.damaged: list[str] = []  # files set aside while listing, for a message
        self.unreadable = ''  # why the last listing could not read the folder, in a sentence

    def library_folder(self, library_id: str | None) -> str:
        return os.path.join(self.folder, safe_name(library_id or 'unknown'))

    def path(self, library_id: str | None, conversation_id: str) -> str:
        return os.path.join(self.library_folder(library_id), safe_name(conversation_id) + '.json')

    def save(self, conv: Conversation) -> None:
        """Keep conv, replacing its earlier copy at once or not at all. Raises ConversationNotKept."""
        if not conv.turns:
            return  # nothing said yet: nothing to keep
        path = self.path(conv.library_id, conv.id)
        try:
            write_private(path, json.dumps(conv.as_dict(), ensure_ascii=False, indent=1))
        except OSError as e:
            raise ConversationNotKept(e.errno, e.strerror or str(e), e.filename or path) from None

    def load(self, library_id: str | None, conversation_id: str) -> Conversation | None:
        """The conversation, or None if it is gone. Raises ValueError (and sets the file aside) if damaged."""
        path = self.path(library_id, conversation_id)
        try:
            return read(path)
        except FileNotFoundError:
            return None
        except OSError as e:
            raise ValueError(_('The saved conversation in {path} could not be read: {reason}').format(
                path=path, reason=e.strerror or e)) from None
        except ValueError:
            kept = self.set_aside(path)
            raise ValueError(_('The saved conversation in {path} could not be read. It was kept as {kept}.').format(
                path=path, kept=kept)) from None

    def delete(self, library_id: str | None, conversation_id: str) -> None:
        try:
            os.remove(self.path(library_id, conversation_id))
        except FileNotFoundError:
            pass

    def summaries(self, library_id: str | None, book_id: int | None = None) -> list[Summary]:
        """The conversations of a library (about book_id, when given), newest first."""
        found = [summary_of(conv) for conv in self.conversations(library_id)
                 if book_id is None or book_id in conv.book_ids]
        found.sort(key=lambda s: s.updated, reverse=True)
        return found

    def search(self, library_id: str | None, text: str) -> list[Summary]:
        """The conversations of a library that text's words all find (match()), the best
        first: those whose title or books hold the words before those whose questions and answers
        alone do, then the newest. No words: every conversation, newest first."""
        words = search_words(text)
        if not words:
            return self.summaries(library_id)
        found = []
        for conv in self.conversations(library_id):
            score = match(conv, words)
            if score is not None:
                found.append((score, summary_of(conv)))
        found.sort(key=lambda f: (-f[0], -f[1].updated))
        return [s for _score, s in found]

    def conversations(self, library_id: str | None) -> Iterator[Conversation]:
        """Each conversation of a library, read one at a time (read(): bounded); a damaged file is set
        aside (self.damaged), one that cannot be read is passed over, and a folder that cannot be
        listed is said in self.unreadable."""
        folder = self.library_folder(library_id)
        self.unreadable = ''
        try:
            names = sorted(os.listdir(folder))
        except FileNotFoundError:  # none yet
            return
        except OSError as e:  # a file in the folder's place, say: said, and nothing touched
            self.unreadable = _('The History in {folder} could not be read: {reason}').format(
                folder=folder, reason=e.strerror or e)
            return
        for name in names:
            if not name.endswith('.json'):
                continue
            path = os.path.join(folder, name)
            try:
                conv = read(path)
            except OSError:
                continue
            except ValueError:
                self.set_aside(path)
                continue
            yield conv

    def set_aside(self, path: str) -> str:
        """Rename a damaged file out of the way, never over one set aside before; returns where it is."""
        kept = set_aside_if_can(path) or path
        self.damaged.append(kept)
        return kept


def read(path: str) -> Conversation:
    """The conversation saved in the file at path. Raises ValueError for anything but a saved
    conversation (bytes that are not UTF-8 text included; JSON beyond limits.load_json's bounds),
    OSError if it cannot be read: a FIFO, device or folder in its place is not waited on, and a
    file larger than limits.MAX_CONVERSATION_BYTES is not read (core.files.read_regular)."""
    raw = read_regular(path, limits.MAX_CONVERSATION_BYTES)
    return Conversation.from_dict(limits.load_json(raw.decode('utf-8')))


def safe_name(text: object) -> str:
    """text as a file name."""
    return re.sub(r'[^\w.-]', '_', str(text))[:100]


# a search of the History: at most this many words, each cut at this many characters (typed, or given
# on the command line: a search is never made of a whole file's worth of words)
MAX_SEARCH_WORDS = 16
MAX_SEARCH_WORD_CHARS = 100


def search_words(text: str) -> list[str]:
    """The words of a search, case folded, each once (at most MAX_SEARCH_WORDS of them)."""
    words: list[str] = []
    for word in str(text or '').casefold().split():
        word = word[:MAX_SEARCH_WORD_CHARS]
        if word not in words:
            words.append(word)
    return words[:MAX_SEARCH_WORDS]


def match(conv: Conversation, words: list[str]) -> int | None:
    """How well conv matches words (search_words()): None unless each word is in its title, its
    books' titles and authors, or the text of a question or an answer (in any case); else how many
    of the words its title and books hold, so that those rank first."""
    about = '\n'.join([conv.title] + [f'{b.title}\n{b.authors_text}' for b in conv.books]).casefold()
    in_about = [w for w in words if w in about]
    rest = [w for w in words if w not in about]
    for turn in conv.turns:
        if not rest:
            break
        for text in (turn.question, turn.answer):
            folded = text.casefold()
            rest = [w for w in rest if w not in folded]
    return None if rest else len(in_about)
