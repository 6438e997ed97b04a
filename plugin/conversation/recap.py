# License: GPLv3 Copyright: the Book AI developers
"""The story so far: a recap of a book up to the reader's place, each paragraph citing the
passages it rests on; "Recap since you last read", what was read between an earlier place and
the current one; "Previously in the series", the earlier books of the book's calibre series.

The one way the viewer's panel, the discussion window and `recap` on the command line make one
(RecapJob), step by step, none waiting on a window:

1. prepare(): the model, what it reads at once (question.book_text_room: may ask the service,
   so not on the GUI thread) and the plan (RecapPlan): the whole text read when it fits in the
   model's room ("text"), else the earlier chapters as summaries (conversation/summaries.py) and
   the chapter the reader is inside in full ("summaries"; a chapter too long for what is left is
   cut: its beginning summarized up to the part sent in full). "since" always sends the text
   read before the earlier place as summaries, and what was read since in full.
2. estimate(): what will be sent, requests, tokens and cost, before anything is: the reader's
   consent (needs_consent(): an online provider, the first time for a book) comes after it.
3. summarize(): the summaries not kept yet, with progress and Stop; moving on costs only the
   new text.
4. question(): the Question (conversation/question.py) to send in the conversation as any other
   (exchange.Exchange): the recap request, the summaries and passages, and a Place for each
   number [n] they cite, so that the recap's citations open the viewer there. Numbers are given
   in the order sent: in "text", passage n is the book's passage n.
5. After a "context too long" answer (a model that reads less than it says), fall_back() plans
   again with less (from summaries), and says so.

Nothing after the reader's place is in any of it: the text is cut by grounding/so_far.py, the
summaries are of chapters read, the chapter the reader is inside only up to the place.
"""

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from calibre_plugins.bookai.conversation.prompts import (
    SUMMARIES_NOTE, numbered_block, recap_request, series_request, summaries_block,
)
from calibre_plugins.bookai.conversation.question import (
    ASSUMED_WINDOW, SO_FAR_CONSENT, Question, Room, book_text_room, room_in,
)
from calibre_plugins.bookai.conversation.summaries import (
    CITED, LEAST_PART_TOKENS, SUMMARY_TOKENS, BookKey, BookSummaries, Estimate, ProgressCallback, Segment,
    SummaryCache, SummaryRun, damaged_notice, estimate_of, estimate_summaries, model_key, part_tokens, parts_of,
    segment_of, summarize,
)
from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.core.messages import estimated_tokens
from calibre_plugins.bookai.grounding.index import Passage
from calibre_plugins.bookai.grounding.scopes import Excerpt, Place
from calibre_plugins.bookai.grounding.so_far import chapters_read, passage_tokens, passages_read, read_until, tokens_of
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre.db.cache import Cache

    from calibre_plugins.bookai.conversation.conversation import Conversation
    from calibre_plugins.bookai.grounding.extract import Book
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

load_translations()

RECAP_ANSWER_TOKENS = 1200  # what a recap's answer takes, about: for the estimate only
KINDS = ('story', 'since', 'series')


class NoRecap(ValueError):
    """No recap can be made (nothing read yet, nothing read since, no earlier book): str() says why."""


class NotInSeries(NoRecap):
    """The book is in no series: there is no "previously in the series"."""


@dataclass(frozen=True)
class Source:
    """A book a recap is made from, read up to until (a character offset)."""
    key: BookKey
    book: 'Book'
    until: int
    title: str = ''     # its title, as a series' recap names its books
    about: str = ''     # the book, as a summary request names it ("Emma by Jane Austen")


@dataclass(frozen=True)
class RecapPlan:
    """What a recap sends, before any summary is made."""
    kind: str                                   # 'story', 'since' or 'series'
    mode: str                                   # 'text': the whole text read; 'summaries': summaries and text
    segments: tuple[tuple[int, Segment], ...]   # (its source's index, the segment) summarized, in order
    detail: tuple[Passage, ...]                 # passages of the last source sent in full, in order
    room: Room                                  # what the model has room for, in tokens of book text
    part_tokens: int                            # book text in one summary request, at most
    notices: tuple[str, ...] = ()               # for the reader, before anything is sent


# planning {{{

def summary_cost(segments: Iterable[Segment], most: int) -> int:
    """The tokens segments' summaries take in the recap request, at most (SUMMARY_TOKENS a part)."""
    return sum(len(parts_of(s.passages, most)) * SUMMARY_TOKENS for s in segments)


def segments_before(book: 'Book', until: int, before: Sequence[Passage]) -> list[Segment]:
    """The passages before the text sent in full as segments, a chapter each: complete when the
    chapter was read to its end and all of it is before; else its beginning."""
    whole = {c.number: c for c in chapters_read(book, until)}
    by_chapter: dict[int, list[Passage]] = {}
    for p in before:
        by_chapter.setdefault(p.chapter, []).append(p)
    out = []
    for number, chosen in sorted(by_chapter.items()):
        chapter = whole.get(number)
        complete = chapter is not None and chapter.complete and len(chosen) == len(chapter.passages)
        out.append(segment_of(book, chosen, complete))
    return out


def plan_one(source: Source, room: Room, most: int, kind: str = 'story', since: int = 0) -> RecapPlan:
    """The plan for the story so far (kind 'story') or since the earlier place since (a character
    offset, kind 'since') of one book, in room, summary requests of at most most tokens. Raises
    NoRecap when nothing was read (or nothing since)."""
    book = source.book
    read = passages_read(book, source.until)
    if not read:
        raise NoRecap(_('Nothing of this book has been read yet: there is no story so far to tell.'))
    if kind == 'story' and tokens_of(read) <= room.tokens:
        return RecapPlan(kind, 'text', (), tuple(read), room, most)
    if kind == 'since':
        first = next((i for i, p in enumerate(read) if p.end > since), len(read))
        if first == len(read):
            raise NoRecap(_('Nothing was read since that place: there is nothing to recap.'))
    else:
        last_chapter = read[-1].chapter
        first = next(i for i, p in enumerate(read) if p.chapter == last_chapter)
    while True:  # what is sent in full, from read[first:], within what the summaries before it leave
        segments = segments_before(book, source.until, read[:first])
        left = room.tokens - summary_cost(segments, most)
        detail = tokens_of(read[first:])
        if detail <= left or first >= len(read):
            break
        k = first
        while k < len(read) and detail > left - SUMMARY_TOKENS:  # one more summary: of what is cut
            detail -= passage_tokens(read[k].text)
            k += 1
        first = max(k, first + 1)
    notices: list[str] = []
    kept = fitting(segments, room.tokens, most)
    if len(kept) < len(segments):
        notices.append(LEFT_OUT.format(count=len(segments) - len(kept), chapter=kept[0].title if kept else ''))
    if not kept and first >= len(read):
        raise NoRecap(NO_ROOM.format(window=f'{room.window:,}'))
    return RecapPlan(kind, 'summaries', tuple((0, s) for s in kept), tuple(read[first:]), room, most, tuple(notices))


LEFT_OUT = _('The summaries of the first {count} chapters do not fit in what the model reads at once: the recap '
             'begins at {chapter}.')
NO_ROOM = _('The model reads too little at once ({window} tokens) for a recap of this book.')


def fitting(segments: Sequence[Segment], room: int, most: int) -> list[Segment]:
    """The last of segments whose summaries fit in room tokens, in order."""
    kept: list[Segment] = []
    used = 0
    for s in reversed(segments):
        used += summary_cost([s], most)
        if used > room:
            break
        kept.append(s)
    return kept[::-1]


def plan_series(sources: Sequence[Source], room: Room, most: int) -> RecapPlan:
    """The plan for previously in the series: every chapter of the earlier books (sources, in their
    order) as summaries, the latest ones that fit in room."""
    segments = [(i, s) for i, source in enumerate(sources)
                for s in segments_before(source.book, source.until, passages_read(source.book, source.until))]
    if not segments:
        raise NoRecap(_('The earlier books of the series in this library have no text that can be read.'))
    kept = fitting([s for _i, s in segments], room.tokens, most)
    if not kept:
        raise NoRecap(NO_ROOM.format(window=f'{room.window:,}'))
    chosen = tuple(segments[len(segments) - len(kept):])
    notices = (LEFT_OUT.format(count=len(segments) - len(kept), chapter=kept[0].title),) if len(kept) < len(
        segments) else ()
    return RecapPlan('series', 'summaries', chosen, (), room, most, notices)

# }}}


# what is sent {{{

def places_of(book: 'Book', chosen: Iterable[Passage], book_id: int = 0, fmt: str = '',
              title: str = '') -> list[Place]:
    """A Place for each of chosen (passages of book): its chapter (after title, for a book of a
    series), where it starts, and a CFI for the viewer (as Book.cfi_at, found by bisection)."""
    starts = [p.start for p in book.paragraphs]
    chapters = [c.title for c in book.chapters]
    out = []
    for p in chosen:
        at = bisect_right(starts, p.start) - 1
        steps = book.paragraphs[at].path if at >= 0 else ()
        chapter = chapters[p.chapter] if p.chapter < len(chapters) else ''
        out.append(Place(f'{title}: {chapter}' if title else chapter, book.fraction(p.start),
                         'epubcfi(/' + '/'.join(map(str, steps)) + ')' if steps else '', book_id, fmt))
    return out


def request_of(plan: RecapPlan, summaries: bool, since: int = 0, series: str = '', title: str = '') -> str:
    if plan.kind == 'series':
        return series_request(series, title)
    return recap_request(summaries, since if plan.kind == 'since' else 0)


def recap_question(plan: RecapPlan, sources: Sequence[Source], run: SummaryRun | None = None, series: str = '',
                   title: str = '', text: str = '') -> Question:
    """The Question a recap sends (exchange.Exchange sends it in the conversation): the request, the
    summaries (run's) and the passages sent in full, numbered in that order, and a Place for each
    number; said: what the plan and the run had to say, and the chapters whose summary is missing.
    text: another question to send with them instead of the recap request (the reader's own, with
    prompts.SUMMARIES_NOTE when the plan is "summaries")."""
    notices = list(plan.notices)
    if plan.mode == 'text':
        source = sources[0]
        block = numbered_block((title_of(source.book, p), p.text) for p in plan.detail)
        places = places_of(source.book, plan.detail)
        return Question(text or request_of(plan, False), block, True, tuple(places), tuple(notices),
                        excerpt_of(source, plan.detail, places))
    run = run or SummaryRun()
    notices += run.notices + run.failed
    numbers: dict[tuple[int, int], int] = {}
    cited: list[tuple[int, Passage]] = []
    items: list[tuple[str, str]] = []
    for j, (i, segment) in enumerate(plan.segments):
        summary = run.summaries.get(j)
        if summary is None:
            notices.append(_('{chapter} is left out of the recap: it has no summary.').format(chapter=segment.title))
            continue

        def renumber(m, i: int = i, segment: Segment = segment) -> str:
            sent = []
            for n in (int(d) for d in m.group(1).replace(' ', '').split(',')):
                p = segment.passage(n)
                if p is None:
                    continue
                if (i, n) not in numbers:
                    cited.append((i, p))
                    numbers[(i, n)] = len(cited)
                sent.append(str(numbers[(i, n)]))
            return f'[{", ".join(sent)}]' if sent else ''
        label = segment.title if segment.complete else f'{segment.title} (its beginning)'  # for the model: English
        if plan.kind == 'series':
            label = f'{sources[i].title}: {label}'
        items.append((label, CITED.sub(renumber, summary.text)))
    first_detail = len(cited) + 1
    last = sources[-1]
    parts = [summaries_block(items), numbered_block(((title_of(last.book, p), p.text) for p in plan.detail),
                                                    start=first_detail)]
    places = []
    for i, p in cited:
        s = sources[i]
        places += places_of(s.book, [p], s.key.book_id if plan.kind == 'series' else 0,
                            s.key.fmt if plan.kind == 'series' else '', s.title if plan.kind == 'series' else '')
    places += places_of(last.book, plan.detail)
    request = text or request_of(plan, bool(items), first_detail, series, title)
    excerpt = None if plan.kind == 'series' else excerpt_of(last, [p for _i, p in cited] + list(plan.detail), places)
    return Question(request, '\n\n'.join(p for p in parts if p), True, tuple(places), tuple(notices), excerpt)


def title_of(book: 'Book', p: Passage) -> str:
    return book.chapters[p.chapter].title if p.chapter < len(book.chapters) else ''


def excerpt_of(source: Source, chosen: Sequence[Passage], places: Sequence[Place]) -> Excerpt:
    """The numbered passages as an Excerpt, for the answer's citations (grounding/citations.py)."""
    return Excerpt('recap', tuple(chosen), tuple(c.title for c in source.book.chapters), source.until,
                   source.book.length, tuple(places))

# }}}


# the job {{{

RECAP_TOO_LONG = _('The model could not read all of that at once ("context too long"), though it says it can: '
                   'the recap is made again from summaries of the chapters.')
SMALLER_AGAIN = _('The model could not read all of that at once ("context too long"): the recap is made again '
                  'with less of the book.')


class RecapJob:
    """One recap (see the module's doc): prepare(), estimate(), summarize(), question(), and
    fall_back() after a "context too long" answer. provider answers in conv (the conversation the
    recap is sent in, exchange.Exchange); sources are the books (one, or a series' earlier ones);
    kind is 'story', 'since' (since: the earlier place, a character offset) or 'series' (series:
    its name, title: the book about to be read). model: as the command line asks for it; else the
    conversation's, else the provider's."""

    def __init__(self, provider: 'AIProviderPlugin', conv: 'Conversation', sources: Sequence[Source],
                 kind: str = 'story', since: int = 0, model: str = '', series: str = '', title: str = '',
                 cache: SummaryCache | None = None) -> None:
        if kind not in KINDS:
            raise ValueError(f'unknown kind of recap {kind!r}')
        self.provider, self.conv, self.sources = provider, conv, tuple(sources)
        self.kind, self.since, self.model, self.series, self.title = kind, since, model, series, title
        self.cache = cache or SummaryCache()
        self.kept: list[BookSummaries] = []
        self.plan: RecapPlan | None = None
        self.run: SummaryRun | None = None

    @property
    def consent_keys(self) -> tuple[str, ...]:
        """The books whose text it sends, as the reader's consent names them."""
        return tuple(s.key.consent + SO_FAR_CONSENT for s in self.sources)

    def prepare(self, cancel: CancelToken | None = None) -> RecapPlan:
        """The plan: the model chosen (may ask the service for its list), what it reads at once
        (may ask the service), the summaries kept read. Raises NoRecap, ProviderError, Cancelled."""
        self.model = self.model or self.conv.model or self.provider.choose_model(cancel=cancel)
        wanted = sum(tokens_of(passages_read(s.book, s.until)) for s in self.sources)
        request = request_of(RecapPlan(self.kind, 'summaries', (), (), Room(0, 0), 0), True, 1, self.series,
                             self.title)
        room = book_text_room(self.provider, self.conv, request, self.model, cancel, wanted)
        assumed = room_in(ASSUMED_WINDOW, self.conv.messages_for(request, ' ', spoiler_safe=True))
        notices: tuple[str, ...] = ()
        if room is None or not room.window:
            if room is not None and room.why:
                notices = (_('Book AI could not learn how much the model reads at once ({why}); the recap keeps to '
                             'what every model reads.').format(why=room.why),)
            room = assumed
        most = part_tokens(room.window)
        if self.kind == 'series':
            plan = plan_series(self.sources, room, most)
        else:
            plan = plan_one(self.sources[0], room, most, self.kind, self.since)
        self.plan = replace(plan, notices=notices + plan.notices)
        self.kept = [BookSummaries(self.cache, s.key) for s in self.sources]
        return self.plan

    def missing(self) -> list[tuple[int, Segment]]:
        """The plan's segments whose summaries are not kept yet."""
        plan = self.ready_plan()
        name = model_key(self.provider, self.model)
        return [(i, s) for i, s in plan.segments if self.kept[i].find(name, s) is None]

    def estimate(self) -> Estimate:
        """What the recap will send: the summaries still to make, then the recap request (its summaries
        counted at their most), before any of it is sent."""
        plan = self.ready_plan()
        missing = self.missing()
        summaries = Estimate(0, 0, 0, None, self.provider.connection.is_local)
        for i, source in enumerate(self.sources):
            mine = [s for j, s in missing if j == i]
            if mine:
                summaries = summaries + estimate_summaries(self.provider, self.model, mine, plan.part_tokens,
                                                           source.about)
        request = request_of(plan, plan.mode == 'summaries', 1, self.series, self.title)
        tokens = (estimated_tokens(self.conv.messages_for(request, ' ', spoiler_safe=True)) + tokens_of(plan.detail)
                  + summary_cost((s for _i, s in plan.segments), plan.part_tokens) + 8 * len(plan.detail))
        return summaries + estimate_of(self.provider, self.model, 1, tokens, RECAP_ANSWER_TOKENS)

    def described(self, estimate: Estimate | None = None) -> str:
        """What will be sent, in words, with the estimate (estimate(), by default)."""
        plan = self.ready_plan()
        estimate = estimate or self.estimate()
        if plan.mode == 'text':
            return _('The whole text read so far goes to the model: {estimate}.').format(estimate=estimate.said())
        count, missing = len(plan.segments), len(self.missing())
        if plan.kind == 'series':
            return ngettext('The earlier books go as the summaries of their {count} chapter ({missing} to make): '
                            '{estimate}.',
                            'The earlier books go as the summaries of their {count} chapters ({missing} to make): '
                            '{estimate}.', count).format(count=count, missing=missing, estimate=estimate.said())
        return ngettext('{count} chapter goes as a summary ({missing} to make), the latest text in full: {estimate}.',
                        '{count} chapters go as summaries ({missing} to make), the latest text in full: {estimate}.',
                        count).format(count=count, missing=missing, estimate=estimate.said())

    def summarize(self, cancel: CancelToken | None = None, progress: ProgressCallback | None = None) -> SummaryRun:
        """The plan's summaries: those kept found, the others made (conversation/summaries.py:
        summarize). Raises Cancelled on Stop (those made are kept)."""
        plan = self.ready_plan()
        run = SummaryRun()
        total = sum(len(parts_of(s.passages, plan.part_tokens)) for _i, s in self.missing())
        done_before = [0]

        def step(done: int, count: int, chapter: str) -> None:
            if progress is not None:
                progress(done_before[0] + done, max(total, done_before[0] + count), chapter)
        for i, source in enumerate(self.sources):
            indices = [j for j, (k, _s) in enumerate(plan.segments) if k == i]
            if not indices:
                continue
            one = summarize(self.provider, self.model, [plan.segments[j][1] for j in indices], self.kept[i],
                            plan.part_tokens, source.about, cancel, step)
            done_before[0] += sum(1 for _u in one.usage) + len(one.failed)
            run.summaries.update({indices[k]: s for k, s in one.summaries.items()})
            run.made += one.made
            run.found += one.found
            run.failed += one.failed
            run.notices += [n for n in one.notices if n not in run.notices]
            run.usage += one.usage
            if one.error is not None:
                run.error = one.error
                break
        self.run = run
        return run

    def question(self) -> Question:
        """The Question to send: in "summaries", with the summaries summarize() made or found (without
        it, those kept only)."""
        plan = self.ready_plan()
        run = self.run
        if run is None and plan.mode == 'summaries':
            run = SummaryRun()
            name = model_key(self.provider, self.model)
            for j, (i, segment) in enumerate(plan.segments):
                if (found := self.kept[i].find(name, segment)) is not None:
                    run.summaries[j] = found
        return recap_question(plan, self.sources, run, self.series, self.title)

    def fall_back(self) -> str:
        """After a "context too long" answer to the question: plan again with less (from summaries, or
        fewer of them); the sentence that says so, '' when there is nothing less to send."""
        plan = self.ready_plan()
        sent = tokens_of(plan.detail) + summary_cost((s for _i, s in plan.segments), plan.part_tokens)
        tokens = min(plan.room.tokens, sent) // 2
        if tokens < LEAST_PART_TOKENS:
            return ''
        room = Room(plan.room.window, tokens)
        try:
            if self.kind == 'series':
                new = plan_series(self.sources, room, plan.part_tokens)
            else:
                new = plan_one(self.sources[0], room, plan.part_tokens, 'since' if self.kind == 'since' else 'story',
                               self.since)
        except NoRecap:
            return ''
        said = RECAP_TOO_LONG if plan.mode == 'text' else SMALLER_AGAIN
        self.plan, self.run = replace(new, notices=(said,) + new.notices), None
        return said

    def ready_plan(self) -> RecapPlan:
        if self.plan is None:
            raise RuntimeError('prepare() the recap first')
        return self.plan


class SoFarSummaries:
    """"Everything up to where I am" when the text read does not fit in what the model reads at once
    (question.so_far_question, through its SoFarFromSummaries): the summaries of the earlier chapters
    kept for the book (key) and the model that answers, then the chapter the reader is inside in full,
    planned and numbered as the story so far's (plan_one, recap_question), with the reader's own
    question. Only summaries kept are used: nothing is made, or sent, but the question. load() reads
    the book's summaries file (in a thread in the windows); question() reads it when it was not."""

    def __init__(self, provider: 'AIProviderPlugin', key: BookKey, model: str = '',
                 cache: SummaryCache | None = None) -> None:
        self.provider, self.key, self.model = provider, key, model
        self.cache = cache or SummaryCache()
        self.kept: BookSummaries | None = None

    def load(self) -> BookSummaries:
        if self.kept is None:
            self.kept = BookSummaries(self.cache, self.key)
        return self.kept

    def question(self, text: str, book: 'Book', position: float, room: Room) -> 'Question | str':
        """text with the summaries and the chapter being read (see the class), for the model room was
        learned for (else self.model, else the provider's configured one); why not, in words, when a
        summary the plan needs is not kept, or they do not fit."""
        source = book_source(self.key, book, position)
        model = room.model or self.model or self.provider.config.option('model') or ''
        try:
            plan = plan_one(source, room, part_tokens(room.window))
        except NoRecap:
            plan = None
        if plan is None or plan.mode != 'summaries' or plan.notices or not plan.segments:
            return _('Even the summaries of the earlier chapters do not fit in what the model reads at once.')
        kept = self.load()
        name = model_key(self.provider, model)
        run = SummaryRun()
        missing = 0
        for j, (_i, segment) in enumerate(plan.segments):
            found = kept.find(name, segment)
            if found is None:
                missing += 1
            else:
                run.summaries[j] = found
        damaged = damaged_notice(self.cache)  # a damaged summaries file, set aside: said
        if missing:
            why = ngettext('Summaries of the earlier chapters would let all of it go, but {count} of them is not '
                           'made yet for this model: The story so far makes them, and so does Make chapter '
                           'summaries in the Book AI menu of calibre\'s library.',
                           'Summaries of the earlier chapters would let all of it go, but {count} of them are not '
                           'made yet for this model: The story so far makes them, and so does Make chapter '
                           'summaries in the Book AI menu of calibre\'s library.', missing).format(count=missing)
            return f'{damaged} {why}' if damaged else why
        q = recap_question(plan, [source], run, text=text)
        passages = f'{SUMMARIES_NOTE}\n{q.passages}'
        ex = replace(q.excerpt, scope='so-far') if isinstance(q.excerpt, Excerpt) else q.excerpt
        count = len(plan.segments)
        if passages in room.sent:
            said = _('Everything up to where you are went with an earlier question of this conversation: it is not '
                     'sent again.')
        else:
            said = ngettext('Everything up to where you are is more than the model reads at once ({window} tokens): '
                            'the earlier chapter goes as its summary, and the chapter you are in in full.',
                            'Everything up to where you are is more than the model reads at once ({window} tokens): '
                            'the {count} earlier chapters go as their summaries, and the chapter you are in in full.',
                            count).format(window=f'{room.window:,}', count=count)
        return replace(q, passages=passages, excerpt=ex, notices=(said, *q.notices, *((damaged,) if damaged else ())))


def book_source(key: BookKey, book: 'Book', position: float | None, about: str = '', title: str = '') -> Source:
    """The book read up to position (a fraction of it; None: all of it)."""
    return Source(key, book, read_until(book, position), title, about)


def series_sources(db: 'Cache', book_id: int,
                   read: 'Callable[[Cache, int, str], tuple[Book, object]] | None' = None
                   ) -> tuple[str, list[Source], list[str]]:
    """(the series of book_id, the earlier books of it the library holds as Sources, read to their
    end, in their order; what was left out, in words) by calibre's series and series index. Only a
    book with text that can be read counts (read: question.library_book_text, by default)."""
    from calibre_plugins.bookai.conversation.question import library_book_text  # the series only
    from calibre_plugins.bookai.grounding.extract import UnreadableBook
    from calibre_plugins.bookai.grounding.formats import choose_format
    read = read or library_book_text
    series = db.field_for('series', book_id)
    if not series:
        return '', [], []
    index = db.field_for('series_index', book_id) or 0.0
    earlier = sorted((db.field_for('series_index', i) or 0.0, i) for i in books_of_series(db, series)
                     if i != book_id and (db.field_for('series_index', i) or 0.0) < index)
    sources, left_out = [], []
    for _index, i in earlier:
        title = db.field_for('title', i) or ''
        authors = ' & '.join(db.field_for('authors', i) or ())
        fmt = choose_format(db.formats(i) or ())
        if fmt is None:
            left_out.append(_('{title} is left out: it has no file with text that can be read.').format(title=title))
            continue
        try:
            book, _index_of_book = read(db, i, fmt)
        except UnreadableBook as e:
            left_out.append(_('{title} is left out: {reason}').format(title=title, reason=e))
            continue
        if not book.length:
            left_out.append(_('{title} is left out: it has no text.').format(title=title))
            continue
        sources.append(Source(BookKey(db.library_id, i, fmt), book, book.length, title,
                              f'{title} by {authors}' if authors else title))
    return series, sources, left_out


def earlier_in_series(db: 'Cache', book_id: int) -> tuple[str, int]:
    """(the series of book_id, how many books of it the library holds before it) by calibre's
    series and series index, from the library's fields only: nothing is read."""
    series = db.field_for('series', book_id)
    if not series:
        return '', 0
    index = db.field_for('series_index', book_id) or 0.0
    return series, sum(1 for i in books_of_series(db, series) if i != book_id
                       and (db.field_for('series_index', i) or 0.0) < index)


def books_of_series(db: 'Cache', series: str) -> set[int]:
    """The ids of the books of series, from calibre's own link table (not a walk over every book)."""
    item_id = db.get_item_id('series', series)
    return set(db.books_for_field('series', item_id)) if item_id is not None else set()


def series_job(provider: 'AIProviderPlugin', conv: 'Conversation', db: 'Cache', book_id: int, title: str,
               model: str = '', read: 'Callable[[Cache, int, str], tuple[Book, object]] | None' = None
               ) -> tuple[RecapJob, list[str]]:
    """Previously in the series of book_id (title: its title), as the windows and the command line
    make it: (the RecapJob, what was left out, in words). Raises NotInSeries, or NoRecap when the
    library holds no earlier book of it whose text can be read (saying why each was left out)."""
    series, sources, left_out = series_sources(db, book_id, read)
    if not series:
        raise NotInSeries(_('This book is not in a series.'))
    if not sources:  # why each was left out, first
        raise NoRecap(' '.join(left_out + [_('The library holds no earlier book of the series {series} whose text '
                                             'can be read.').format(series=series)]))
    return RecapJob(provider, conv, sources, 'series', model=model, series=series, title=title), left_out


def needs_consent(provider: 'AIProviderPlugin', books: Iterable[str]) -> bool:
    """Whether the reader must see and confirm before the text of books ("library id:book id") goes
    to provider: an online one, the first time for a book (as gui/passages.py keeps it)."""
    if provider.connection.is_local:
        return False
    given = set(plugin_prefs()['book_text_consent'])
    return any(f'{b}|{provider.name}' not in given for b in books)


def remember_consent(provider: 'AIProviderPlugin', books: Iterable[str]) -> None:
    """The reader consented: their text goes to provider without asking again."""
    prefs = plugin_prefs()
    prefs['book_text_consent'] = sorted(set(prefs['book_text_consent']) | {f'{b}|{provider.name}' for b in books})

# }}}
