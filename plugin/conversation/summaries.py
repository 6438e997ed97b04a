# License: GPLv3 Copyright: the Book AI developers
"""Chapter summaries: each chapter read summarized once per book and model, and kept.

What the story so far (conversation/recap.py), and the X-Ray, send when the text read does not
fit in what the model reads at once: the earlier chapters as summaries. A Segment is what one
summary covers: a chapter read to its end, or the chapter the reader is inside, up to their place
(grounding/so_far.py cuts the book there, so nothing after the place is ever sent). A summary
request sends that segment's passages, numbered as the whole book numbers them (so_far: passage
n is the book's passage n at every place), so the summary's citations [n] keep their places;
a segment too long for the model goes in parts, each summarized, and a "context too long" answer
from the service (a model that reads less than it claims) splits the part in two and tries again.

A model's answer is a summary only when checked_summary() says so: not empty, not the request
or the passages given back, not longer than MAX_SUMMARY_CHARS (reading stops there); anything
else is not kept, and said in a sentence.

Summaries are kept in Book AI's cache, one file per library, book and format
(FOLDER/<library id>/<book id>.<FORMAT>.json): JSON, written privately and whole
(core/files.py), read back as any file from outside is (at most MAX_FILE_BYTES, a regular file
only, bounded JSON, every entry checked: summary_from_dict); a damaged file is set aside, never
overwritten, and its summaries made again. An entry is keyed by the model (provider and model
id), the passages it covers and a digest of their text, so a book whose text changed is
summarized again; each is dated; at most MAX_ENTRIES are kept (the oldest go first). The summary
of the chapter the reader is inside is replaced when they move on. Forget everything removes
the folder (conversation/forget.py).

Nothing here waits on a window: summarize() runs in a thread in the windows (progress and Stop
through its callback and CancelToken), on the command line in its own.
"""

import hashlib
import math
import os
import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from calibre.constants import cache_dir

from calibre_plugins.bookai.conversation.prompts import numbered_block, summary_messages, summary_request
from calibre_plugins.bookai.conversation.question import ASSUMED_WINDOW, room_in
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.errors import ContextTooLong, ProviderError
from calibre_plugins.bookai.core.files import private_folder, read_kept, remove_where, set_aside_if_can, write_private
from calibre_plugins.bookai.core.messages import Cost, Done, Failed, Message, Usage, estimated_tokens
from calibre_plugins.bookai.core.printable import without_controls
from calibre_plugins.bookai.grounding.index import Passage
from calibre_plugins.bookai.grounding.so_far import chapters_read, passage_tokens, tokens_of
from calibre_plugins.bookai.providers.pricing import cost_text, total_cost
from calibre_plugins.bookai.providers.streaming import whole_answer

if TYPE_CHECKING:
    from calibre_plugins.bookai.grounding.extract import Book
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()

CACHE_VERSION = 1          # raise when what a summaries file holds changes meaning
KIND = 'bookai-summaries'  # what a summaries file says it is
SUFFIX = '.json'
SUMMARY_TOKENS = 400       # the most tokens a summary is asked to take (its request's max_tokens)
MAX_SUMMARY_CHARS = 8000   # an answer longer than this is not a summary (a service that ignores max_tokens)
MAX_KEPT_CHARS = 64_000    # a chapter summarized in parts: its parts' summaries kept together, at most
MAX_ENTRIES = 2000         # summaries kept per book file, the oldest dropped first
MAX_FILE_BYTES = 24 * 1024 * 1024  # a summaries file: MAX_ENTRIES summaries of MAX_SUMMARY_CHARS, and their keys
MAX_MODEL_CHARS = 600      # a model's name as kept (provider/model id)
MAX_TITLE_CHARS = 1000     # a chapter's title as kept
MOST_PART_TOKENS = 24_000  # book text summarized in one request, at most, whatever the model reads
LEAST_PART_TOKENS = 200    # a part is not split below this: the model cannot read it, said in words
MOST_NUMBER = 10_000_000   # passage numbers and offsets in a file: no book read has more (extract.MAX_BOOK_BYTES)
ECHO_RUN = 8               # words in a row an answer shares with the passages: copied
ECHO_SHARE = 0.6           # an answer whose runs are copied this much is the passages given back


def default_folder() -> str:
    """Where summaries are kept: in calibre's cache folder, beside the books' text."""
    return os.path.join(cache_dir(), 'bookai', 'summaries')


@dataclass(frozen=True)
class BookKey:
    """Which book's summaries: its library, its id there and the format its text was read from."""
    library_id: str
    book_id: int
    fmt: str

    @property
    def consent(self) -> str:
        """The book as the reader's consent to send its text names it ("library id:book id")."""
        return f'{self.library_id}:{self.book_id}'


@dataclass(frozen=True)
class Segment:
    """What one summary covers: passages of one chapter, in order, from its start; the whole
    chapter read (complete), or the part of it before a place (the chapter the reader is inside)."""
    chapter: int                    # index into Book.chapters
    title: str
    passages: tuple[Passage, ...]
    complete: bool

    @property
    def first(self) -> int:
        """The number of its first passage, from 1, as the whole book numbers them."""
        return self.passages[0].number + 1

    @property
    def last(self) -> int:
        return self.passages[-1].number + 1

    @property
    def end(self) -> int:
        """Where what it covers ends (a character offset)."""
        return self.passages[-1].end

    @property
    def tokens(self) -> int:
        return tokens_of(self.passages)

    @property
    def digest(self) -> str:
        """What its text is: the same passages with other words (a book changed) are not it."""
        h = hashlib.sha256()
        for p in self.passages:
            h.update(p.text.encode('utf-8', 'surrogatepass') + b'\0')
        return h.hexdigest()[:32]

    def passage(self, number: int) -> Passage | None:
        """Its passage number (from 1, as the book numbers them), or None when it has no such one."""
        return self.passages[number - self.first] if self.first <= number <= self.last else None


def segment_of(book: 'Book', chosen: Sequence[Passage], complete: bool) -> Segment:
    chapter = chosen[0].chapter
    title = book.chapters[chapter].title if chapter < len(book.chapters) else ''
    # a title as the book gives it, else in English: it is sent to the model too (conversation/prompts.py)
    return Segment(chapter, ' '.join(title.split()) or f'Chapter {chapter + 1}', tuple(chosen), complete)


def chapter_segments(book: 'Book', until: int, current: bool = True) -> list[Segment]:
    """The chapters read up to until (a character offset), each a Segment: every chapter read to
    its end, and, when current, the one the reader is inside up to the place."""
    return [segment_of(book, c.passages, c.complete) for c in chapters_read(book, until)
            if c.passages and (c.complete or current)]


@dataclass(frozen=True)
class Summary:
    """A segment's summary, as kept: it cites passages as [n], numbered as the whole book numbers them."""
    model: str          # 'provider/model id'
    chapter: int
    title: str
    first: int          # the passages it covers, by number (from 1)
    last: int
    complete: bool
    end: int
    digest: str
    text: str
    made: float         # when (seconds since the epoch)

    def covers(self, segment: Segment) -> bool:
        return (self.chapter, self.first, self.last, self.complete, self.digest) == (
            segment.chapter, segment.first, segment.last, segment.complete, segment.digest)


def model_key(provider: 'AIProviderPlugin', model: str) -> str:
    """Which model a summary is by: the provider and the model's id."""
    return f'{provider.name}/{model}'[:MAX_MODEL_CHARS]


# the summaries file {{{

def whole_number(value: object, least: int = 0) -> int:
    if type(value) is not int or not least <= value <= MOST_NUMBER:
        raise ValueError(f'{value!r} is not a number of the book')
    return value


def text_of(value: object, most: int) -> str:
    if type(value) is not str or len(value) > most:
        raise ValueError('not a text of its size')
    return value


def summary_from_dict(d: object) -> Summary:
    """A Summary from what a summaries file holds for it; ValueError for anything that is not one
    as summaries_file() writes it (a damaged file is then set aside)."""
    if type(d) is not dict:
        raise ValueError('a summary is not an object')
    made, complete = d.get('made'), d.get('complete')
    if not isinstance(made, (int, float)) or type(made) is bool or not math.isfinite(made) or not 0 <= made < 1e11 \
            or type(complete) is not bool:
        raise ValueError('a summary has no date, or is not said to be complete or not')
    digest = text_of(d.get('digest'), 64)
    if not re.fullmatch('[0-9a-f]{32}', digest):
        raise ValueError('a summary has no digest')
    first, last = whole_number(d.get('first'), 1), whole_number(d.get('last'), 1)
    if last < first:
        raise ValueError('a summary covers no passage')
    text = text_of(d.get('text'), MAX_KEPT_CHARS)
    if not text.strip():
        raise ValueError('an empty summary')
    return Summary(without_controls(text_of(d.get('model'), MAX_MODEL_CHARS)), whole_number(d.get('chapter')),
                   without_controls(text_of(d.get('title'), MAX_TITLE_CHARS)), first, last, complete,
                   whole_number(d.get('end')), digest, without_controls(text), float(made))


def summary_as_dict(s: Summary) -> dict:
    return {'model': s.model, 'chapter': s.chapter, 'title': s.title, 'first': s.first, 'last': s.last,
            'complete': s.complete, 'end': s.end, 'digest': s.digest, 'text': s.text, 'made': s.made}


class SummaryCache:
    """The summaries files under folder (default_folder())."""

    def __init__(self, folder: str | None = None) -> None:
        self.folder = folder or default_folder()
        self.set_aside_as: list[str] = []  # the damaged files set aside while reading, as renamed

    def library_folder(self, library_id: str) -> str:
        return os.path.join(self.folder, safe(library_id))

    def file_of(self, key: BookKey) -> str:
        return os.path.join(self.library_folder(key.library_id), f'{int(key.book_id)}.{safe(key.fmt.upper())}{SUFFIX}')

    def read(self, key: BookKey) -> list[Summary]:
        """The summaries kept for a book, oldest first; [] when none are, or the file cannot be read
        (a damaged one is set aside first, its name added to set_aside_as)."""
        path = self.file_of(key)
        try:
            data = read_kept(path, MAX_FILE_BYTES, KIND, CACHE_VERSION)
            entries = data.get('summaries')
            if type(entries) is not list or len(entries) > MAX_ENTRIES:
                raise ValueError('no list of summaries, or too long a one')
            return sorted((summary_from_dict(e) for e in entries), key=lambda s: s.made)
        except FileNotFoundError:
            return []
        except (OSError, ValueError, RecursionError, UnicodeError):  # damaged, too large, not a file
            if (kept := set_aside_if_can(path)) is not None:
                self.set_aside_as.append(kept)
            return []

    def write(self, key: BookKey, summaries: Iterable[Summary]) -> None:
        """Keep summaries (at most MAX_ENTRIES, the newest) as the book's file, whole or not at all.
        Raises OSError when it cannot be written."""
        import json  # writing only
        kept = sorted(summaries, key=lambda s: s.made)[-MAX_ENTRIES:]
        while True:  # within MAX_FILE_BYTES too, the oldest dropped first
            data = json.dumps({'kind': KIND, 'version': CACHE_VERSION, 'written': time.time(),
                               'summaries': [summary_as_dict(s) for s in kept]}, ensure_ascii=False).encode('utf-8')
            if len(data) <= MAX_FILE_BYTES or not kept:
                break
            kept = kept[max(1, len(kept) // 4):]
        path = self.file_of(key)
        private_folder(os.path.dirname(path), self.folder)
        write_private(path, data)

    def drop(self, key: BookKey) -> None:
        """Forget a book's summaries."""
        try:
            os.remove(self.file_of(key))
        except OSError:
            pass

    def prune(self, library_id: str, existing_book_ids: Iterable[int]) -> int:
        """Forget the summaries of a library's books that are no longer in it; how many files went."""
        keep = {str(int(i)) for i in existing_book_ids}
        return remove_where(self.library_folder(library_id),
                            lambda name: name.endswith(SUFFIX) and name.partition('.')[0] not in keep)


def damaged_notice(cache: SummaryCache) -> str:
    """What the reader is told of the summaries files cache set aside, '' when it set none aside."""
    if not cache.set_aside_as:
        return ''
    return _('The summaries kept for this book could not be read; they were set aside as {files} and are made '
             'again.').format(files=', '.join(cache.set_aside_as))


def safe(name: object) -> str:
    """name as a part of a file name."""
    return re.sub(r'[^A-Za-z0-9_-]', '_', str(name))[:80] or '_'


class BookSummaries:
    """The summaries kept for one book, read once (SummaryCache.read), found by segment and model,
    and kept as they are made (the file written after each, so that Stop loses nothing)."""

    def __init__(self, cache: SummaryCache, key: BookKey) -> None:
        self.cache, self.key = cache, key
        self.summaries = cache.read(key)
        self.not_written = ''  # why the file could not be written, in words ('' when it was)

    def find(self, model: str, segment: Segment) -> Summary | None:
        return next((s for s in reversed(self.summaries) if s.model == model and s.covers(segment)), None)

    def keep(self, summary: Summary) -> None:
        """Add summary; the same model's summaries of its chapter that were not complete (the reader was
        inside it) go: it replaces them."""
        self.summaries = [s for s in self.summaries if not (s.model == summary.model and s.chapter == summary.chapter
                                                            and not s.complete)] + [summary]
        self.summaries = self.summaries[-MAX_ENTRIES:]
        try:
            self.cache.write(self.key, self.summaries)
            self.not_written = ''
        except OSError as e:
            self.not_written = _('The summaries could not be kept in {folder}: {reason}').format(
                folder=self.cache.folder, reason=e.strerror or e)

# }}}


# the model's answer {{{

class BadSummary(ValueError):
    """A model's answer that is not a summary: not kept; str() says why, in a sentence."""


CITED = re.compile(r'\[(\d{1,7}(?:\s*,\s*\d{1,7})*)\]')
WORD = re.compile(r'\w+')


def runs(text: str, size: int = ECHO_RUN) -> list[tuple[str, ...]]:
    words = [w.casefold() for w in WORD.findall(text)]
    return [tuple(words[i:i + size]) for i in range(len(words) - size + 1)]


def echoed(answer: str, sent: Sequence[str]) -> bool:
    """Whether answer gives back what was sent (the passages, the request) rather than a summary:
    most of its runs of ECHO_RUN words are theirs, or it holds the request's own markers."""
    if '<book_passages>' in answer or '</book_passages>' in answer:
        return True
    said = runs(answer)
    if len(said) < 3:
        return False
    given: set[tuple[str, ...]] = set()
    for text in sent:
        given.update(runs(text))
    return sum(r in given for r in said) >= ECHO_SHARE * len(said)


def checked_summary(answer: str, what: str, sent: Sequence[str], first: int, last: int) -> str:
    """answer, the model's summary of `what` (a chapter, in words) whose request sent the texts
    `sent` (the request and the passages numbered first to last), as it is kept: its citations of
    passages it was not given taken out, its control characters too, trimmed. BadSummary, saying
    why in a sentence, for an answer that is empty, longer than MAX_SUMMARY_CHARS, or gives back
    what was sent."""
    if len(answer) > MAX_SUMMARY_CHARS:
        raise BadSummary(_('The summary of {what} ran past {most} characters, longer than any summary asked for: '
                           'it was not kept.').format(what=what, most=f'{MAX_SUMMARY_CHARS:,}'))
    text = without_controls(answer).strip()
    if not text:
        raise BadSummary(_('The model answered the summary of {what} with nothing: no summary is kept for '
                           'it.').format(what=what))
    if echoed(text, sent):
        raise BadSummary(_('The model gave back the text it was sent rather than a summary of {what}: it was not '
                           'kept.').format(what=what))

    def cited(m: re.Match) -> str:
        kept = [n for n in re.findall(r'\d+', m.group(1)) if first <= int(n) <= last]
        return f'[{", ".join(kept)}]' if kept else ''
    return re.sub(r'[ \t]+([.,;:!?])', r'\1', CITED.sub(cited, text)).strip()

# }}}


# summarizing {{{

ProgressCallback = Callable[[int, int, str], None]  # (requests done, requests in all, the chapter now)


@dataclass(frozen=True)
class Estimate:
    """What a run will send, before it starts: requests, tokens in and out, and the cost."""
    requests: int
    input_tokens: int
    output_tokens: int
    cost: Cost | None
    local: bool

    def __add__(self, other: 'Estimate') -> 'Estimate':
        return Estimate(self.requests + other.requests, self.input_tokens + other.input_tokens,
                        self.output_tokens + other.output_tokens,
                        total_cost([self.cost, other.cost]) if self.requests and other.requests
                        else self.cost if self.requests else other.cost, self.local and other.local)

    def said(self) -> str:
        """"about 12,400 tokens in 3 requests, about $0.01 (prices of …)", the cost as every cost is said."""
        return ngettext('about {tokens} tokens sent in {count} request, {cost}',
                        'about {tokens} tokens sent in {count} requests, {cost}', self.requests).format(
            tokens=f'{self.input_tokens:,}', count=self.requests, cost=cost_text(self.cost, self.local))


def estimate_of(provider: 'AIProviderPlugin', model: str, requests: int, input_tokens: int,
                output_tokens: int) -> Estimate:
    cost = provider.estimate_cost(model, Usage(input_tokens, output_tokens)) if requests else None
    return Estimate(requests, input_tokens, output_tokens, cost, provider.connection.is_local)


def part_tokens(window: int | None) -> int:
    """The book text one summary request holds, in a model reading window tokens at once (None:
    unknown, ASSUMED_WINDOW): what is left after the request and the summary, within
    LEAST_PART_TOKENS and MOST_PART_TOKENS."""
    room = room_in(window or ASSUMED_WINDOW, summary_messages('', summary_request('', 'Chapter 10', 1, 2)))
    return max(LEAST_PART_TOKENS, min(MOST_PART_TOKENS, room.tokens - 64))


def parts_of(passages: Sequence[Passage], most: int) -> list[tuple[Passage, ...]]:
    """passages in runs of at most most tokens (a passage larger than that alone), in order."""
    out: list[tuple[Passage, ...]] = []
    current: list[Passage] = []
    used = 0
    for p in passages:
        cost = passage_tokens(p.text)
        if current and used + cost > most:
            out.append(tuple(current))
            current, used = [], 0
        current.append(p)
        used += cost
    if current:
        out.append(tuple(current))
    return out


def part_messages(segment: Segment, part: Sequence[Passage], index: int, count: int, about: str) -> list[Message]:
    """What one summary request sends: the part's passages, numbered as the book numbers them."""
    block = numbered_block(((segment.title, p.text) for p in part), start=part[0].number + 1)
    return summary_messages(block, summary_request(about, segment.title, index, count))


def estimate_summaries(provider: 'AIProviderPlugin', model: str, segments: Iterable[Segment], most: int,
                       about: str = '') -> Estimate:
    """What summarizing segments (those not kept yet) will send, in parts of at most most tokens."""
    requests = tokens = 0
    for segment in segments:
        parts = parts_of(segment.passages, most)
        for i, part in enumerate(parts, 1):
            requests += 1
            tokens += estimated_tokens(part_messages(segment, part, i, len(parts), about))
    return estimate_of(provider, model, requests, tokens, requests * SUMMARY_TOKENS)


@dataclass
class SummaryRun:
    """What a summarize() run did: each segment's summary, made or found kept, in order; what
    could not be made, in words; the usage of each request sent."""
    summaries: dict[int, Summary] = field(default_factory=dict)  # segment's index -> its summary
    made: int = 0
    found: int = 0
    failed: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    error: ProviderError | None = None  # the service failed: the run stopped there

    @property
    def input_tokens(self) -> int:
        return sum(u.input_tokens or 0 for u in self.usage)

    @property
    def cost(self) -> Cost | None:
        return total_cost(u.cost for u in self.usage) if self.usage else None


def ask_summary(provider: 'AIProviderPlugin', model: str, messages: list[Message], cancel: CancelToken,
                what: str, sent: Sequence[str], first: int, last: int) -> tuple[str, Usage]:
    """One summary request: (the summary as kept, the request's usage). Reading stops past
    MAX_SUMMARY_CHARS. Raises BadSummary, the service's ProviderError (ContextTooLong among
    them) or Cancelled."""
    read = whole_answer(provider.text_chat(messages, use_model=model, cancel=cancel, max_tokens=SUMMARY_TOKENS),
                        MAX_SUMMARY_CHARS, model)
    if isinstance(read.end, Failed):
        raise read.end.error if isinstance(read.end.error, ProviderError) else ProviderError(read.end.message)
    if isinstance(read.end, Done) and read.end.finish_reason == 'cancelled':
        raise Cancelled()
    usage = read.end.usage if isinstance(read.end, Done) else Usage()
    return checked_summary(read.text, what, sent, first, last), usage


def summarize(provider: 'AIProviderPlugin', model: str, segments: Sequence[Segment], kept: BookSummaries,
              most: int, about: str = '', cancel: CancelToken | None = None,
              progress: ProgressCallback | None = None) -> SummaryRun:
    """Each of segments summarized by model (the provider's), unless kept has its summary already:
    only the text not summarized yet is sent, each request at most most tokens of it (part_tokens()),
    and each summary kept as it is made. about: the book, in words ("Emma by Jane Austen"). A
    part the service says is too long is split in two and tried again (and the run's parts made
    smaller); an answer that is not a summary is not kept, and said (SummaryRun.failed); a service
    that fails otherwise stops the run (SummaryRun.error). Raises Cancelled on Stop: the summaries
    made by then are kept. progress(done, total, chapter) is called before each request."""
    cancel = cancel or CancelToken()
    name = model_key(provider, model)
    run = SummaryRun()
    if said := damaged_notice(kept.cache):
        run.notices.append(said)
    todo: list[tuple[int, Segment]] = []
    for i, segment in enumerate(segments):
        found = kept.find(name, segment)
        if found is not None:
            run.summaries[i] = found
            run.found += 1
        else:
            todo.append((i, segment))
    total = sum(len(parts_of(s.passages, most)) for _i, s in todo)
    done = 0
    for i, segment in todo:
        if cancel.cancelled:
            raise Cancelled()
        queue = parts_of(segment.passages, most)
        texts: list[str] = []
        failed = ''
        while queue and not failed:
            part = queue.pop(0)
            if progress is not None:
                progress(done, max(total, done + 1), segment.title)
            messages = part_messages(segment, part, len(texts) + 1, len(texts) + 1 + len(queue), about)
            try:
                text, usage = ask_summary(provider, model, messages, cancel, segment.title,
                                          [m.text for m in messages], part[0].number + 1, part[-1].number + 1)
            except ContextTooLong:
                if len(part) < 2 or tokens_of(part) // 2 < LEAST_PART_TOKENS:
                    failed = _('{chapter} could not be summarized: the model cannot read even a small part of it '
                               'at once.').format(chapter=segment.title)
                    break
                half = len(part) // 2
                queue[:0] = [part[:half], part[half:]]
                total += 1
                if most > tokens_of(part) // 2:
                    most = max(LEAST_PART_TOKENS, tokens_of(part) // 2)
                    if not any(n.startswith(SMALLER_NOTICE[:30]) for n in run.notices):
                        run.notices.append(SMALLER_NOTICE)
                continue
            except BadSummary as e:
                failed = str(e)
                break
            except ProviderError as e:
                run.error = e
                return run
            done += 1
            run.usage.append(usage)
            texts.append(text)
        if failed:
            run.failed.append(failed)
            done += len(queue)
            continue
        summary = Summary(name, segment.chapter, segment.title[:MAX_TITLE_CHARS], segment.first, segment.last,
                          segment.complete, segment.end, segment.digest, joined(texts), time.time())
        kept.keep(summary)
        run.summaries[i] = summary
        run.made += 1
    if progress is not None and total:
        progress(total, total, '')
    if kept.not_written:
        run.notices.append(kept.not_written)
    return run


def joined(texts: Sequence[str]) -> str:
    """The summaries of a chapter's parts as its summary: all of them, or, past MAX_KEPT_CHARS, the
    last ones that fit (what came just before the reader's place matters most)."""
    kept: list[str] = []
    size = 0
    for text in reversed(texts):
        size += len(text) + 2
        if size > MAX_KEPT_CHARS - 2:
            kept.append('\u2026')
            break
        kept.append(text)
    return '\n\n'.join(reversed(kept))


SMALLER_NOTICE = _('The model read less at once than it says it can ("context too long"): the chapters go to it in '
                   'smaller parts.')


def cited_numbers(text: str) -> Iterator[int]:
    """The passage numbers a summary cites, in order, each as often as it is cited."""
    for m in CITED.finditer(text):
        yield from (int(n) for n in re.findall(r'\d+', m.group(1)))

# }}}
