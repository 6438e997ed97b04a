# License: GPLv3 Copyright: the Book AI developers
"""Covers for many books: made a few at a time, staged for review, never written to the library here.

run_covers() is the whole run, without Qt, each book's image made by covers/making.py (as the cover
window and the command line make theirs): the calibre job (main_window/cover_actions.py wraps it in
calibre's ThreadedJob) and the benchmark call it the same way. It sends at most `at_once`
requests at a time (1 to 8), each in a thread of its own; Stop (the CancelToken) ends the
requests under way and starts no more: every book not made by then is 'stopped'. Each image
is staged as STAGING/<book id>.<ext>, written privately and in one step, so no half image is
ever there; a failure is the book's, in words (the provider's error), and the others go on.

STAGING/manifest.json says what the run made (the library's id and path, when it started,
each book's outcome), rewritten in one step after each book and at the end, so a review
interrupted (calibre closed, the library switched) can be reopened: load_run(). That file
is read as hostile: bounded, every value checked, a file name that is not <book id>.<ext>
refused; a damaged manifest is refused in words (UnreadableRun), never half used.
"""

import json
import os
import re
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.core.files import NotRegular, TooBig, read_regular, remove_where, write_private
from calibre_plugins.bookai.core.images import EXTENSIONS, ImageResult
from calibre_plugins.bookai.core.messages import Cost
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.covers.making import BookRequest, failure_text, make_image

load_translations()

MANIFEST = 'manifest.json'
MANIFEST_VERSION = 1
MAX_MANIFEST_BYTES = 8 * 1024 * 1024
MAX_BOOKS = 10_000           # books in one run
MAX_AT_ONCE = 8
MAX_TEXT = 2_000             # characters of a title, an error or a model kept in the manifest
STATUSES = ('made', 'failed', 'stopped')
IMAGE_NAME = re.compile(r'([1-9][0-9]{0,17})\.(' + '|'.join(sorted(set(EXTENSIONS.values()))) + ')')
RUN_NAME = re.compile(r'[0-9]{8}-[0-9]{6}-[A-Za-z0-9_]{1,16}')


@dataclass
class CoverOutcome:
    """What came of one book's request."""
    book_id: int
    title: str
    status: str                 # 'made', 'failed' or 'stopped'
    path: str = ''              # the staged image (made)
    error: str = ''             # why it failed, in words
    cost: Cost | None = None    # None: unknown (never free)
    model: str = ''


@dataclass
class StagedRun:
    """A run as its manifest says, to review (or review again)."""
    staging_dir: str
    library_id: str
    library_path: str
    started: float
    finished: bool
    outcomes: list[CoverOutcome] = field(default_factory=list)

    @property
    def made(self) -> list[CoverOutcome]:
        return [o for o in self.outcomes if o.status == 'made']


class UnreadableRun(Exception):
    """A manifest that cannot be read or holds what a run never writes (said in a sentence)."""


# the run {{{

def run_covers(requests: Iterable[BookRequest], provider, aspect: str, at_once: int, staging_dir: str,
               cancel: CancelToken, progress: Callable[[int, int, CoverOutcome], None] | None = None,
               library_id: str = '', library_path: str = '') -> list[CoverOutcome]:
    """Make the covers requests ask for with provider (an AIProviderPlugin that makes images),
    at most at_once (1 to 8) at a time, staged in staging_dir. Returns one outcome per book,
    in the requests' order (a book asked for twice is made once). progress(done, total,
    outcome) is called after each book, from the worker threads (one call at a time): the
    caller passes it on to its window. Nothing is written to the library."""
    wanted, seen = [], set()
    for r in requests:
        if r.book_id not in seen:
            seen.add(r.book_id)
            wanted.append(r)
    run = _Run(wanted, provider, aspect, max(1, min(MAX_AT_ONCE, int(at_once))), staging_dir, cancel, progress,
               library_id, library_path)
    return run.go()


class _Run:

    def __init__(self, requests: list[BookRequest], provider, aspect: str, at_once: int, staging_dir: str,
                 cancel: CancelToken, progress, library_id: str, library_path: str) -> None:
        self.requests, self.provider, self.aspect, self.at_once = requests, provider, aspect, at_once
        self.staging_dir, self.cancel, self.progress = staging_dir, cancel, progress
        self.library_id, self.library_path = library_id, library_path
        self.started = time.time()
        self.lock = threading.Lock()            # the outcomes, the next request, the tokens under way
        self.outcomes: dict[int, CoverOutcome] = {}
        self.next = 0
        self.under_way: set[CancelToken] = set()
        self.done = threading.Event()

    def go(self) -> list[CoverOutcome]:
        os.makedirs(self.staging_dir, mode=0o700, exist_ok=True)
        self.write_manifest(finished=False)
        watcher = threading.Thread(target=self.watch, name='BookAICoversStop', daemon=True)
        watcher.start()
        workers = [threading.Thread(target=self.work, name=f'BookAICovers{i}', daemon=True)
                   for i in range(min(self.at_once, len(self.requests)))]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        self.done.set()
        watcher.join()
        for r in self.requests:  # any not started (Stop came first)
            if r.book_id not in self.outcomes:
                self.record(r, CoverOutcome(r.book_id, r.title, 'stopped'))
        self.write_manifest(finished=True)
        return [self.outcomes[r.book_id] for r in self.requests]

    def watch(self) -> None:
        """Stop on the run's token ends every request under way (each has a token of its own:
        one token shuts down one connection)."""
        while not self.done.is_set():
            if self.cancel.wait(0.05):
                with self.lock:
                    tokens = list(self.under_way)
                for t in tokens:
                    t.cancel()
                if self.done.wait(0.05):
                    return
                continue  # requests that started meanwhile see cancel.cancelled before they send

    def take(self) -> tuple[BookRequest, CancelToken] | None:
        with self.lock:
            if self.cancel.cancelled or self.next >= len(self.requests):
                return None
            r = self.requests[self.next]
            self.next += 1
            token = CancelToken()
            self.under_way.add(token)
            return r, token

    def work(self) -> None:
        while (taken := self.take()) is not None:
            r, token = taken
            try:
                result, error = self.make(r, token), ''
            except _Failed as e:
                result, error = None, str(e)
            with self.lock:
                self.under_way.discard(token)
            self.finish(r, result, error, token)

    def make(self, r: BookRequest, token: CancelToken) -> ImageResult | None:
        """The image for one request; None when stopped; raises _Failed with the reason in words."""
        if self.cancel.cancelled:
            return None
        try:
            return make_image(self.provider, r.prompt, self.aspect, token)
        except Cancelled:
            return None
        except Exception as e:  # the service's refusal, a bug, the unexpected: this book's failure, in words
            raise _Failed(failure_text(e)) from None

    def finish(self, r: BookRequest, result: ImageResult | None, error: str, token: CancelToken) -> None:
        """Stage the image and record the outcome; once Stop came, what arrives is 'stopped' (and
        nothing of it is staged), so Stop after k books leaves exactly those k."""
        with self.lock:
            if self.cancel.cancelled or token.cancelled or (result is None and not error):
                outcome = CoverOutcome(r.book_id, r.title, 'stopped')
            elif result is None:
                outcome = CoverOutcome(r.book_id, r.title, 'failed', error=error)
            else:
                outcome = self.stage(r, result)
            self.record(r, outcome)

    def stage(self, r: BookRequest, result: ImageResult) -> CoverOutcome:
        image = result.image
        path = os.path.join(self.staging_dir, f'{int(r.book_id)}.{image.extension}')
        try:
            write_private(path, image.data)
        except OSError as e:
            return CoverOutcome(r.book_id, r.title, 'failed', error=_(
                'The cover was made but could not be kept in {folder}: {reason}').format(
                    folder=self.staging_dir, reason=e.strerror or e), cost=result.usage.cost, model=result.model)
        return CoverOutcome(r.book_id, r.title, 'made', path=path, cost=result.usage.cost, model=result.model)

    def record(self, r: BookRequest, outcome: CoverOutcome) -> None:
        """Under the lock (or once the workers are done): keep the outcome, write the manifest, tell."""
        self.outcomes[r.book_id] = outcome
        self.write_manifest(finished=False)
        if self.progress is not None:
            try:
                self.progress(len(self.outcomes), len(self.requests), outcome)
            except Exception:  # the caller's own bug must not stop the books after this one
                traceback.print_exc()

    def write_manifest(self, finished: bool) -> None:
        ordered = [self.outcomes[r.book_id] for r in self.requests if r.book_id in self.outcomes]
        data = {'version': MANIFEST_VERSION, 'library_id': self.library_id, 'library_path': self.library_path,
                'started': self.started, 'written': time.time(), 'finished': finished, 'aspect': self.aspect,
                'total': len(self.requests), 'outcomes': [outcome_json(o) for o in ordered]}
        try:
            write_private(os.path.join(self.staging_dir, MANIFEST), json.dumps(data, ensure_ascii=False, indent=1))
        except OSError:
            pass  # the run goes on; only reopening its review later needs the manifest


class _Failed(Exception):
    pass

# }}}


# the manifest {{{

def outcome_json(o: CoverOutcome) -> dict:
    cost = None if o.cost is None else {'amount': o.cost.amount, 'currency': o.cost.currency,
                                        'source': o.cost.source, 'price_date': o.cost.price_date}
    return {'book_id': o.book_id, 'title': o.title[:MAX_TEXT], 'status': o.status,
            'file': os.path.basename(o.path) if o.path else '', 'error': o.error[:MAX_TEXT], 'cost': cost,
            'model': o.model[:MAX_TEXT]}


def _text(value: object, name: str) -> str:
    """A text of the manifest: bounded, on one line, its control characters (as a hostile file could
    hold) inert (core/printable.py)."""
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        raise ValueError(name)
    return one_line(value)


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or abs(value) > 1e15:
        raise ValueError(name)
    return float(value)


def _cost(value: object) -> Cost | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ValueError('cost')
    amount = _number(value.get('amount'), 'cost')
    if amount < 0:
        raise ValueError('cost')
    return Cost(amount, _text(value.get('currency', 'USD'), 'cost')[:8], _text(value.get('source', 'reported'), 'cost'),
                _text(value.get('price_date', ''), 'cost'))


def _outcome(value: object, staging_dir: str) -> CoverOutcome:
    if not isinstance(value, dict):
        raise ValueError('outcome')
    book_id = value.get('book_id')
    if isinstance(book_id, bool) or not isinstance(book_id, int) or not 0 < book_id < 2 ** 63:
        raise ValueError('book_id')
    status = value.get('status')
    if status not in STATUSES:
        raise ValueError('status')
    name = _text(value.get('file', ''), 'file')
    o = CoverOutcome(book_id, _text(value.get('title', ''), 'title'), status, error=_text(value.get('error', ''), 'error'),
                     cost=_cost(value.get('cost')), model=_text(value.get('model', ''), 'model'))
    if status == 'made':
        m = IMAGE_NAME.fullmatch(name)
        if m is None or int(m.group(1)) != book_id:
            raise ValueError('file')
        path = os.path.join(staging_dir, name)
        try:
            st = os.lstat(path)
            ok = os.path.isfile(path) and not os.path.islink(path) and 0 < st.st_size <= limits.MAX_IMAGE_BYTES
        except OSError:
            ok = False
        if ok:
            o.path = path
        else:  # the image went (a cache cleaner): told as this book's failure, not the run's
            o.status, o.error = 'failed', _('The cover made for this book is no longer in {folder}.').format(
                folder=staging_dir)
    elif name:
        raise ValueError('file')
    return o


def load_run(staging_dir: str) -> StagedRun | None:
    """The run staged in staging_dir, from its manifest; None when there is no manifest.
    Raises UnreadableRun, in words, when the manifest is damaged or not one a run writes."""
    path = os.path.join(staging_dir, MANIFEST)
    damaged = _('The covers made earlier cannot be reviewed: the list of them ({path}) is damaged.').format(path=path)
    try:  # a regular file only, opened without waiting (a FIFO in its place cannot hang the review)
        raw = read_regular(path, MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        return None
    except (NotRegular, TooBig):
        raise UnreadableRun(damaged) from None
    except OSError as e:
        raise UnreadableRun(_('The covers made earlier cannot be reviewed: {path} could not be read ({reason}).').format(
            path=path, reason=e.strerror or e)) from None
    try:
        data = limits.load_json(raw, max_depth=8)
        if not isinstance(data, dict) or data.get('version') != MANIFEST_VERSION:
            raise ValueError('version')
        outcomes = data.get('outcomes')
        if not isinstance(outcomes, list) or len(outcomes) > MAX_BOOKS:
            raise ValueError('outcomes')
        finished = data.get('finished')
        if not isinstance(finished, bool):
            raise ValueError('finished')
        run = StagedRun(staging_dir, _text(data.get('library_id', ''), 'library_id'),
                        _text(data.get('library_path', ''), 'library_path'), _number(data.get('started'), 'started'),
                        finished, [_outcome(o, staging_dir) for o in outcomes])
    except (ValueError, TypeError, UnicodeDecodeError):
        raise UnreadableRun(damaged) from None
    if len({o.book_id for o in run.outcomes}) != len(run.outcomes):
        raise UnreadableRun(damaged)
    return run


def discard_run(staging_dir: str) -> None:
    """Remove a run's staged images and manifest, and its folder once empty (only the files a
    run writes are removed: anything else, and the folder, is left)."""
    remove_where(staging_dir, lambda n: n == MANIFEST or bool(IMAGE_NAME.fullmatch(n))
                 or n.startswith('.') and n.endswith('.tmp'))
    try:
        os.rmdir(staging_dir)
    except OSError:
        pass

# }}}


# where {{{

def staging_root() -> str:
    """Where runs are staged: calibre's cache/bookai/covers-staged."""
    from calibre.constants import cache_dir
    return os.path.join(cache_dir(), 'bookai', 'covers-staged')


def new_staging_dir() -> str:
    """A new, empty, private folder for one run, under staging_root()."""
    root = staging_root()
    os.makedirs(root, mode=0o700, exist_ok=True)
    return tempfile.mkdtemp(prefix=time.strftime('%Y%m%d-%H%M%S-'), dir=root)  # mode 0700


def staged_runs() -> list[StagedRun]:
    """The runs staged under staging_root() that can be reviewed, newest first (a damaged one is
    left out: load_run() on its folder says why)."""
    root = staging_root()
    try:
        names = os.listdir(root)
    except OSError:
        return []
    runs = []
    for n in names:
        folder = os.path.join(root, n)
        if not RUN_NAME.fullmatch(n) or os.path.islink(folder) or not os.path.isdir(folder):
            continue
        try:
            run = load_run(folder)
        except UnreadableRun:
            continue
        if run is not None:
            runs.append(run)
    return sorted(runs, key=lambda r: r.started, reverse=True)

# }}}
