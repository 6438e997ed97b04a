# License: GPLv3 Copyright: the Book AI developers
"""Bulk covers: 50 covers made against aimock, whose image endpoint waits DELAY_MS before
each answer (a fixture's chaos latencyMs; a real image service takes a few seconds per image:
2 s here), through Book AI's OpenAI-compatible provider and covers/bulk.py's run_covers().

(a) The wall time of the whole run at 1, 2, 4 and 8 requests at once, each against the
    baseline of one at a time measured in the same run, and against the floor (rounds of n
    requests x the delay).
(b) The main window's pauses while a 50-cover job runs as the real one does: Book AI's job
    (main_window/cover_actions.py start_job) on calibre's own JobManager (ThreadedJob, its
    notifications polled on the GUI thread), in a throwaway library of 50 books with covers,
    then the review window the job's end opens, until its 100 thumbnails are in. A QTimer
    ticks every 5 ms on the GUI thread; the gaps between ticks are the pauses. Each of 3
    rounds is followed by an idle baseline: the same timer, as long, nothing running. At 3
    requests at once (Book AI's default) and 8 (the most). Reported: longest gap, 99th
    percentile, gaps over 50 ms, and their ratio to the idle baseline's; then the same with
    the time the GUI thread waited for a CPU taken out (the kernel's schedstat: that share is
    the machine's, other processes on 2 cores), and for each gap over 50 ms what the thread
    did (ran, waited, or was blocked: the GIL), whether an image had just come back to a
    worker, and any garbage collection in it.

(c) The crafted images of issue 26 (tests/helpers/images.py: an 89-byte PNG with damaged pixel
    data, a PNG of 8192x8192, a 64x64 PNG carrying 28 GB of zeros in 29 MB, progressive 8192x8192
    JPEGs of 1,000, 10,000 and 100,000 scans, plain progressive 8192x8192 JPEGs in RGB and CMYK,
    and costly ones within every bound), each against a real cover (a 1024x1536 PNG) measured the
    same way in the same run. Before, HEAD's way, in a process of its own stopped after
    HEAD_SECONDS: the review's thumbnail (QImageReader in calibre's process, on its GUI thread) and
    calibre's save_cover_data_to (what db.set_cover ran on the cover as the service sent it), its
    time and the memory the process grew by. After, Book AI's way: the structure checked here, the
    decoding in calibre's worker (core.images.decode_images): the time until it is accepted or
    refused, the worker's peak memory, and what this process grew by. Target: each accepted or
    refused within 2 s and 300 MB.
(d) The main window while the review of a run whose new covers are those crafted images (and two
    good ones) loads its thumbnails, then Apply all and Undo cover change: the same 5 ms timer,
    against the idle baseline. Before, every thumbnail was decoded on the GUI thread: the pause
    was (c)'s "before" thumbnail time. Target: no pause over 50 ms.

Run with: sudo python3 bench/run.py covers            (host bookworm by default)
          BOOKAI_BENCH_PAUSES_ONLY=1 sudo -E python3 bench/run.py covers   ((b) alone)
          BOOKAI_BENCH_CRAFTED_ONLY=1 sudo -E python3 bench/run.py covers  ((c) and (d) alone)
Target (issue 19): no pause of the main window over 50 ms. This prints its figures; it
asserts nothing about time. Each image is a 1024x1536 PNG of 1.5 MB (2 MB of base64 in the
JSON), the same bytes each time.
"""

import contextlib
import io
import json
import math
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path('tests').resolve()))
from helpers.peers import AiMock  # noqa: E402

from calibre_plugins.bookai.core.cancel import CancelToken  # noqa: E402
from calibre_plugins.bookai.covers.bulk import run_covers  # noqa: E402
from calibre_plugins.bookai.covers.making import BookRequest  # noqa: E402
from calibre_plugins.bookai.providers.registry import get_provider  # noqa: E402

BOOKS = 50
DELAY_MS = 2000
AT_ONCE = (1, 2, 4, 8)
TICK_MS = 5
REPEATS = 3
PAUSE_TARGET_MS = 50
ASPECT = '2:3'


# the image aimock sends {{{

def cover_png(width: int = 1024, height: int = 1536) -> bytes:
    """A cover-like PNG: gradients, shapes and a grainy band, so it compresses as a real
    painting does (about 2 MB), not to a few kilobytes."""
    import random

    from qt.core import QBuffer, QByteArray, QColor, QImage, QIODevice, QLinearGradient, QPainter, QRectF
    img = QImage(width, height, QImage.Format.Format_RGB32)
    p = QPainter(img)
    g = QLinearGradient(0, 0, width, height)
    g.setColorAt(0, QColor(30, 40, 90))
    g.setColorAt(0.5, QColor(190, 120, 60))
    g.setColorAt(1, QColor(20, 20, 30))
    p.fillRect(0, 0, width, height, g)
    rnd = random.Random(19)
    for _i in range(400):
        p.setPen(QColor(rnd.randrange(256), rnd.randrange(256), rnd.randrange(256), 140))
        p.setBrush(QColor(rnd.randrange(256), rnd.randrange(256), rnd.randrange(256), 60))
        p.drawEllipse(QRectF(rnd.uniform(-100, width), rnd.uniform(-100, height), rnd.uniform(10, 300),
                             rnd.uniform(10, 300)))
    p.end()
    # grain over a third of the picture, as a painted or photographic texture has
    for y in range(height // 6, 5 * height // 6):
        for x in range(0, width, 2):
            c = img.pixel(x, y)
            n = rnd.randrange(-24, 25)
            r, gg, b = [max(0, min(255, ((c >> s) & 255) + n)) for s in (16, 8, 0)]
            img.setPixel(x, y, (255 << 24) | (r << 16) | (gg << 8) | b)
    ba = QByteArray()
    buf = QBuffer(ba)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    img.save(buf, 'PNG')
    buf.close()
    return bytes(ba.data())


def fixtures_file(folder: str, png: bytes) -> str:
    import base64
    path = os.path.join(folder, 'covers.json')
    with open(path, 'w') as f:
        json.dump({'fixtures': [{'match': {'endpoint': 'image'},
                                 'response': {'image': {'b64Json': base64.b64encode(png).decode('ascii')}},
                                 'chaos': {'latencyMs': DELAY_MS}}]}, f)
    return path

# }}}


def requests(n: int = BOOKS) -> list[BookRequest]:
    return [BookRequest(i, f'Book {i}', f'A painted cover for "Book {i}", a novel about the sea, no text.')
            for i in range(1, n + 1)]


def provider_for(mock: AiMock):
    return get_provider('openai_compatible', settings={'base_url': mock.base_url + '/v1', 'image_model': 'gpt-image-1'})


# (a) time against requests at once {{{

def one_run(provider, at_once: int, books: int = BOOKS) -> tuple[float, int]:
    staging = tempfile.mkdtemp(prefix='bookai-bench-covers-')
    try:
        start = time.perf_counter()
        outcomes = run_covers(requests(books), provider, ASPECT, at_once, staging, CancelToken())
        took = time.perf_counter() - start
        made = sum(o.status == 'made' for o in outcomes)
        failed = [o.error for o in outcomes if o.status != 'made']
        if failed:
            print(f'  !! {len(failed)} not made, the first: {failed[0]}')
        return took, made
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def time_against_at_once(provider) -> None:
    print(f'\n(a) {BOOKS} covers, aimock waits {DELAY_MS} ms before each image; wall time by requests at once')
    one_run(provider, 8, 8)  # warm up: imports, the connection path, aimock's JIT
    base = None
    for n in AT_ONCE:
        took, made = one_run(provider, n)
        base = base or took
        floor = math.ceil(BOOKS / n) * DELAY_MS / 1000  # rounds of n requests, the last one partly full
        print(f'  {n} at once: {took:7.2f} s ({made}/{BOOKS} made), x{base / took:5.2f} faster than 1 at once '
              f'(time ratio {took / base:.3f}); floor {floor:6.2f} s, overhead {(took / floor - 1) * 100:+.1f} %')

# }}}


# (b) the main window's pauses {{{

class Ticker:
    """A QTimer every TICK_MS on the GUI thread; the gaps between its ticks, in ms, and for each
    gap how much of it the GUI thread spent running and waiting for a CPU (the kernel's
    schedstat for the thread): a gap the thread spent waiting for a CPU is the machine's (other
    processes on the 2 cores), not the job's; what is left is the thread working, or blocked
    (the GIL held by another thread, a lock)."""

    def __init__(self):
        from qt.core import QTimer, Qt
        self.gaps: list[float] = []
        self.ends: list[float] = []      # when each gap ended
        self.waits: list[float] = []     # ms of each gap spent waiting for a CPU
        self.runs: list[float] = []      # ms of each gap spent running (the GUI thread's own work)
        self.last = self.last_wait = self.last_run = None
        self.stat = f'/proc/self/task/{threading.get_native_id()}/schedstat'
        self.timer = QTimer()
        self.timer.setTimerType(Qt.TimerType.PreciseTimer)
        self.timer.setInterval(TICK_MS)
        self.timer.timeout.connect(self.tick)

    def sched(self) -> tuple[float, float]:
        """(ms run, ms waited for a CPU) by the GUI thread so far."""
        try:
            with open(self.stat) as f:
                run, wait = f.read().split()[:2]
            return int(run) / 1e6, int(wait) / 1e6
        except (OSError, ValueError):
            return 0.0, 0.0

    def tick(self):
        now = time.perf_counter()
        run, wait = self.sched()
        if self.last is not None:
            self.gaps.append((now - self.last) * 1000)
            self.ends.append(now)
            self.waits.append(wait - self.last_wait)
            self.runs.append(run - self.last_run)
        self.last, self.last_wait, self.last_run = now, wait, run

    def start(self):
        self.gaps, self.ends, self.waits, self.runs, self.last = [], [], [], [], None
        self.timer.start()

    def stop(self) -> list[float]:
        self.timer.stop()
        return self.gaps

    def own(self) -> list[float]:
        """The gaps less the time the GUI thread waited for a CPU."""
        return [g - w for g, w in zip(self.gaps, self.waits)]


def spin(seconds: float, until=None) -> float:
    """Run the GUI thread's event loop, as calibre's main window does, for seconds or until
    until() is true (looked at every 20 ms); the time it ran."""
    from qt.core import QEventLoop, QTimer
    loop = QEventLoop()
    QTimer.singleShot(max(0, int(seconds * 1000)), loop.quit)
    poll = None
    if until is not None:
        poll = QTimer()
        poll.timeout.connect(lambda: until() and loop.quit())
        poll.start(20)
    start = time.perf_counter()
    loop.exec()
    if poll is not None:
        poll.stop()
    return time.perf_counter() - start


def summary(gaps: list[float]) -> tuple[float, float, int, int]:
    s = sorted(gaps)
    p99 = s[min(len(s) - 1, int(len(s) * 0.99))] if s else 0.0
    return (s[-1] if s else 0.0), p99, sum(g > PAUSE_TARGET_MS for g in s), len(s)


def jpeg(width: int, height: int, colour: tuple[int, int, int]) -> bytes:
    """A book's current cover: a plain JPEG."""
    from qt.core import QBuffer, QByteArray, QColor, QImage, QIODevice
    img = QImage(width, height, QImage.Format.Format_RGB32)
    img.fill(QColor(*colour))
    ba = QByteArray()
    buf = QBuffer(ba)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    img.save(buf, 'JPEG', 85)
    buf.close()
    return bytes(ba.data())


def library(folder: str):
    """A calibre library of BOOKS books, each with a cover of its own (the review shows them)."""
    from calibre.ebooks.metadata.book.base import Metadata
    from calibre.library import db as legacy_db
    db = legacy_db(folder)
    cache = db.new_api
    ids = [cache.create_book_entry(Metadata(f'Book {i}', [f'Author {i % 7}'])) for i in range(1, BOOKS + 1)]
    cache.set_cover({book_id: jpeg(600, 900, (40 + i * 4 % 200, 90, 140)) for i, book_id in enumerate(ids)})
    return db, ids


def main_window(db):
    """What main_window/cover_actions.py uses of calibre's main window: the library, the Jobs panel's
    JobManager (calibre's own), a status bar; a real top-level window, the review's parent."""
    from calibre.gui2.jobs import JobManager
    from qt.core import QMainWindow

    class StatusBar:
        def show_message(self, text, timeout=0):
            pass

    class Main(QMainWindow):
        def __init__(self):
            super().__init__()
            self.current_db = db
            self.job_manager = JobManager()
            self.status_bar = StatusBar()
            self.jobs_pointer = self.library_view = None
            self.failures = []

        def job_exception(self, job, dialog_title='', retry_func=None):
            self.failures.append(job.details)

    w = Main()
    w.resize(1000, 700)
    w.show()
    return w


class Arrivals:
    """When each image came back to a worker (generate_image returned), and how long after it the
    worker held on to it: to tell a pause the job caused from one the machine caused."""

    def __init__(self, provider):
        self.times: list[float] = []
        original = provider.generate_image

        def timed(*a, **kw):
            try:
                return original(*a, **kw)
            finally:
                self.times.append(time.perf_counter())
        provider.generate_image = timed
        self.provider, self.original = provider, original

    def near(self, t: float, before: float = 0.1) -> bool:
        """Did an image come back within `before` seconds before the end of a gap at t?"""
        return any(t - before <= x <= t for x in self.times)

    def restore(self) -> None:
        self.provider.generate_image = self.original


class Collections:
    """Python's garbage collections while watched (gc.callbacks): when, how long, which
    generation, in which thread. A collection holds the GIL, so the GUI thread waits for it
    whichever thread started it."""

    def __init__(self):
        self.runs: list[tuple[float, float, int, str]] = []  # start, end, generation, thread
        self.started = 0.0

    def __call__(self, phase, info):
        now = time.perf_counter()
        if phase == 'start':
            self.started = now
        else:
            self.runs.append((self.started, now, info.get('generation', -1), threading.current_thread().name))

    def __enter__(self):
        import gc
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc):
        import gc
        gc.callbacks.remove(self)

    def within(self, start: float, end: float) -> list[tuple[float, float, int, str]]:
        return [r for r in self.runs if r[0] < end and r[1] > start]


def one_job(provider, at_once: int, db, ids) -> dict:
    """The job started as Book AI's menu starts it (main_window/cover_actions.py start_job), on
    calibre's JobManager; then its review window, opened by the job's end as in calibre, until
    every thumbnail is in it. The gaps between ticks, each with the time it ended."""
    from qt.core import QApplication, QPixmap

    from calibre_plugins.bookai.covers.prompt import CoverChoices
    from calibre_plugins.bookai.main_window import cover_actions as mw
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    app = QApplication.instance()
    plugin_prefs()['cover_requests_at_once'] = at_once
    choices = CoverChoices('A painted cover, rich colours, no text but the title.', True, True, False, False, ASPECT)
    gui = main_window(db)
    spin(0.5)
    marks: dict[str, float] = {}
    loading = 'Loading…'  # the review's text until a thumbnail is in (the bench runs in English)

    def shown_all() -> bool:
        if not mw.reviews:
            return False
        marks.setdefault('review', time.perf_counter())
        w = mw.reviews[0]
        loaded = sum(1 for lbl in w.thumbs.values()
                     if not (lbl.pixmap() or QPixmap()).isNull() or lbl.text() != loading)
        if loaded == len(w.thumbs):
            marks.setdefault('thumbs', time.perf_counter())
            return True
        return False

    arrivals = Arrivals(provider)
    ticker = Ticker()
    with contextlib.redirect_stdout(io.StringIO()), Collections() as collections:  # the job's log lines stay in the job
        ticker.start()
        start = time.perf_counter()
        job = mw.start_job(gui, ids, choices, provider)
        spin(900, until=shown_all)
        end = time.perf_counter()
        gaps = list(ticker.stop())
        ends, own, runs = list(ticker.ends), ticker.own(), list(ticker.runs)
    arrivals.restore()
    result = getattr(job, 'result', None)
    outcomes = getattr(result, 'outcomes', [])
    review = mw.reviews[0] if mw.reviews else None
    if review is not None:
        review.close()
    gui.close()
    gui.deleteLater()
    app.processEvents()
    staging = getattr(result, 'staging_dir', '')
    if staging:
        shutil.rmtree(staging, ignore_errors=True)
    at_review = marks.get('review', end)
    return {'gaps': gaps, 'own': own, 'runs': runs, 'ends': ends, 'start': start, 'end': end, 'review': at_review,
            'thumbs': marks.get('thumbs'), 'made': sum(o.status == 'made' for o in outcomes),
            'failures': gui.failures, 'arrivals': arrivals, 'collections': collections}


def idle_for(seconds: float) -> tuple[list[float], list[float]]:
    ticker = Ticker()
    ticker.start()
    spin(seconds)
    return list(ticker.stop()), ticker.own()


def line(label: str, g: list[float], idle: tuple | None = None) -> str:
    if not g:
        return f'  {label}: no ticks'
    mx, p99, over, n = summary(g)
    ratio = '' if idle is None else f'; x{mx / idle[0]:.2f} idle\'s longest, x{p99 / idle[1]:.2f} idle\'s p99'
    return (f'  {label:34} longest {mx:6.1f} ms, p99 {p99:5.1f} ms, median {statistics.median(g):4.1f} ms, '
            f'{over} of {n} over {PAUSE_TARGET_MS} ms{ratio}')


def pauses(provider, at_once: int, db, ids) -> None:
    print(f'\n(b) the main window while a {BOOKS}-cover job runs, {at_once} at once: Book AI\'s job (start_job) on '
          f'calibre\'s JobManager, then its review window until its {2 * BOOKS} thumbnails are in; a {TICK_MS} ms '
          f'timer on the GUI thread; {REPEATS} rounds, each followed by the idle baseline (the same timer, as long, '
          f'nothing running)')
    got = {k: [] for k in ('job', 'review', 'idle', 'job own', 'review own', 'idle own')}
    long_ones = []
    for r in range(REPEATS):
        j = one_job(provider, at_once, db, ids)
        idle, idle_own = idle_for(j['end'] - j['start'])
        rows = list(zip(j['ends'], j['gaps'], j['own']))
        ran = dict(zip(j['ends'], j['runs']))
        in_job = [(g, o) for t, g, o in rows if t <= j['review']]
        in_review = [(g, o) for t, g, o in rows if t > j['review']]
        got['job'] += [g for g, o in in_job]
        got['job own'] += [o for g, o in in_job]
        got['review'] += [g for g, o in in_review]
        got['review own'] += [o for g, o in in_review]
        got['idle'] += idle
        got['idle own'] += idle_own
        for t, g, o in rows:
            if g > PAUSE_TARGET_MS:
                long_ones.append((g, o, ran[t], j['arrivals'].near(t), j['collections'].within(t - g / 1000, t)))
        gen2 = [c for c in j['collections'].runs if c[2] == 2]
        worst = max(((c[1] - c[0]) * 1000 for c in j['collections'].runs), default=0)
        thumbs = f', thumbnails in {j["thumbs"] - j["review"]:.2f} s' if j['thumbs'] else ', thumbnails not all in'
        print(f'  round {r + 1}: job {j["review"] - j["start"]:.1f} s, {j["made"]}/{BOOKS} made{thumbs}; longest '
              f'gap: job {max((g for g, o in in_job), default=0):.1f} ms, review '
              f'{max((g for g, o in in_review), default=0):.1f} ms, idle {max(idle, default=0):.1f} ms; '
              f'{len(j["collections"].runs)} garbage collections ({len(gen2)} full), the longest {worst:.1f} ms'
              + (f'; job failed: {j["failures"][0][:200]}' if j['failures'] else ''))
    print('  gaps between ticks, as the reader sees them:')
    base = summary(got['idle'])
    print(line('idle baseline', got['idle']))
    print(line('the job', got['job'], base))
    print(line('the review window and thumbnails', got['review'], base))
    print('  the same less the time the GUI thread waited for a CPU (the machine\'s share):')
    base = summary(got['idle own'])
    print(line('idle baseline', got['idle own']))
    print(line('the job', got['job own'], base))
    print(line('the review window and thumbnails', got['review own'], base))
    if long_ones:
        def why(o, r, n, gcs):
            said = [f'{o:.0f} ms not waiting for a CPU, of which the GUI thread ran {r:.0f} ms']
            said += [f'gen-{c[2]} collection {(c[1] - c[0]) * 1000:.0f} ms in {c[3]}' for c in gcs]
            if n:
                said.append('an image came back to a worker in the 100 ms before')
            return f' ({"; ".join(said)})'
        print(f'  gaps over {PAUSE_TARGET_MS} ms during job or review: ' + ', '.join(
            f'{g:.0f} ms{why(o, r, n, gcs)}' for g, o, r, n, gcs in long_ones))
    print(f'  target: no pause over {PAUSE_TARGET_MS} ms')

# }}}


# (c) the crafted images, before and after {{{

HEAD_SECONDS = 30          # HEAD's way is stopped after this (the 100,000 scans took 634 s)
TARGET_SECONDS, TARGET_MB = 2.0, 300

# HEAD's way, in a process of its own: the review's thumbnail (gui/cover_dialog.py's decoded() at
# HEAD: QImageReader in calibre's process, the format guessed, scaled while read), or calibre's
# save_cover_data_to (what db.set_cover ran on the bytes the service sent); calibre's Application
# first, as the main window has it (its image allocation limit)
HEAD_WAY = r"""
import resource, struct, sys, time
from calibre.gui2 import Application
from qt.core import QBuffer, QByteArray, QImageReader, QIODevice, QSize, Qt
app = Application([])
with open(sys.argv[1], 'rb') as f:
    data = f.read()
def kb():
    with open('/proc/self/status') as f:
        return next(int(l.split()[1]) for l in f if l.startswith('VmHWM:'))
before = kb()
print('READY', before / 1024, flush=True)
start = time.perf_counter()
if sys.argv[2] == 'thumbnail':
    buf = QBuffer()
    buf.setData(QByteArray(data))
    buf.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buf)
    reader.setAutoTransform(True)
    width, height = reader.size().width(), reader.size().height()  # from the header, as HEAD's sniff() read it
    if width > 0 and height > 0 and max(width, height) > 180:
        scale = 180 / max(width, height)
        reader.setScaledSize(QSize(max(1, round(width * scale)), max(1, round(height * scale))))
    image = reader.read()
    ok = not image.isNull()
else:
    from calibre.utils.img import save_cover_data_to
    try:
        save_cover_data_to(data)
        ok = True
    except Exception:
        ok = False
took = time.perf_counter() - start
print('RESULT', took, ok, (kb() - before) / 1024)
"""


def crafted_images() -> list[tuple[str, bytes]]:
    from helpers import images as crafted
    return [('89-byte PNG, damaged pixel data', crafted.png_damaged()),
            ('8192x8192 PNG', crafted.png_of_side(8192, 8192)),
            ('64x64 PNG, 28 GB of zeros', crafted.png_bomb()),
            ('progressive 8192² JPEG, 1,000 scans', crafted.jpeg_progressive(8192, 8192, 3, 1_000)),
            ('progressive 8192² JPEG, 10,000 scans', crafted.jpeg_progressive(8192, 8192, 3, 10_000)),
            ('progressive 8192² JPEG, 100,000 scans', crafted.jpeg_progressive(8192, 8192, 3, 100_000)),
            ('progressive 8192² JPEG, RGB', crafted.jpeg_progressive(8192, 8192, 3)),
            ('progressive 8192² JPEG, CMYK', crafted.jpeg_progressive(8192, 8192, 4)),
            ('progressive 2048² JPEG, 10,000 scans', crafted.jpeg_progressive(2048, 2048, 3, 10_000)),
            ('within bounds: progressive 4096² CMYK', crafted.jpeg_progressive(4096, 4096, 4)),
            ('within bounds: 97 scans of 4096²', crafted.jpeg_progressive(4096, 4096, 1, 97)),
            ('within bounds: 6000x4000 PNG', crafted.png_of_side(6000, 4000))]


def head_way(path: str, how: str) -> tuple[float | None, bool, float]:
    """(seconds, decoded?, MB the process grew by past its start) of HEAD's way in a process of its
    own; seconds None when it was stopped after HEAD_SECONDS (its memory then as watched until then)."""
    import subprocess
    script = os.path.join(os.path.dirname(path), 'head_way.py')
    with open(script, 'w') as f:
        f.write(HEAD_WAY)
    env = dict(os.environ, QT_QPA_PLATFORM='offscreen')
    p = subprocess.Popen(['calibre-debug', '-e', script, path, how], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, env=env)
    ready = p.stdout.readline()
    start_mb = float(ready.split()[1]) if ready.startswith('READY ') else 0.0
    peak = Peak()
    peak(p.pid)
    timer = threading.Timer(HEAD_SECONDS, p.kill)
    timer.start()
    out = p.stdout.read()
    p.wait()
    timer.cancel()
    grew = max(0.0, peak.done() - start_mb)
    for text in out.splitlines():
        if text.startswith('RESULT '):
            _w, took, ok, grew = text.split()
            return float(took), ok == 'True', float(grew)
    return (None if p.returncode == -9 else 0.0), False, grew


class Peak:
    """The most memory a process used (its VmHWM), read every 5 ms while it lives."""

    def __init__(self):
        self.mb = 0.0
        self.threads = []

    def __call__(self, pid: int) -> None:
        def watch():
            while True:
                try:
                    with open(f'/proc/{pid}/status') as f:
                        hwm = next(int(t.split()[1]) for t in f if t.startswith('VmHWM:'))
                except (OSError, StopIteration, ValueError):
                    return
                self.mb = max(self.mb, hwm / 1024)
                time.sleep(0.005)
        t = threading.Thread(target=watch, daemon=True)
        t.start()
        self.threads.append(t)

    def done(self) -> float:
        for t in self.threads:
            t.join(5)
        return self.mb


def resident_mb() -> float:
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / 2 ** 20


def book_ais_way(data: bytes) -> tuple[float, str, float, float]:
    """(seconds, what came of it, the worker's peak MB or 0 when none ran, MB this process grew by)."""
    from calibre_plugins.bookai.core.images import decode_images
    peak = Peak()
    base, most, done = resident_mb(), [0.0], threading.Event()

    def sample():
        while not done.is_set():
            most[0] = max(most[0], resident_mb() - base)
            time.sleep(0.005)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    start = time.perf_counter()
    (d,) = decode_images([data], ['It'], cover=True, side=THUMB_SIDE, started=peak)
    took = time.perf_counter() - start
    done.set()
    sampler.join()
    said = 'accepted' if d.ok else 'refused: ' + d.problem[3:80] + ('…' if len(d.problem) > 83 else '')
    return took, said, peak.done(), most[0]


THUMB_SIDE = 180


def crafted_before_and_after(folder: str) -> None:
    print(f'\n(c) the crafted images of issue 26, one at a time. Before: HEAD\'s way in a process of its own, stopped '
          f'after {HEAD_SECONDS} s (the review\'s thumbnail, decoded on the GUI thread; calibre\'s save_cover_data_to '
          f'on the bytes sent, as db.set_cover ran it). After: Book AI\'s way (the structure checked here, decoded in '
          f'calibre\'s worker). Against a real cover (1024x1536 PNG) measured the same way.')
    cases = [('a real cover: 1024x1536 PNG (the baseline)', cover_png())] + crafted_images()
    base = None
    for name, data in cases:
        path = os.path.join(folder, 'image')
        with open(path, 'wb') as f:
            f.write(data)
        thumb = head_way(path, 'thumbnail')
        store = head_way(path, 'library')
        took, said, worker_mb, grew = book_ais_way(data)
        if base is None:
            base = (thumb[0] or 1e-9, took)

        def before(r):
            t, ok, mb = r
            when = f'more than {HEAD_SECONDS} s (stopped)' if t is None else f'{t:7.2f} s (x{t / base[0]:8.1f})'
            return f'{when}, +{mb:4.0f} MB, {"decoded" if ok else "not decoded" if t is not None else "still decoding"}'
        ok = took <= TARGET_SECONDS and worker_mb <= TARGET_MB and grew <= TARGET_MB
        print(f'  {name} ({len(data) / 1e6:.2f} MB)\n'
              f'    before: thumbnail {before(thumb)}; library {before(store)}\n'
              f'    after:  {took:5.2f} s (x{took / base[1]:5.2f} the real cover\'s), worker peak '
              f'{worker_mb:4.0f} MB{" (no worker: refused before any decoder)" if not worker_mb else ""}, this '
              f'process +{grew:4.0f} MB; {said}  '
              f'[{"within" if ok else "OVER"} {TARGET_SECONDS:g} s and {TARGET_MB} MB]')

# }}}


# (d) the main window while the review loads crafted covers, applies them and undoes {{{

def review_pauses(folder: str) -> None:
    import calibre.gui2 as gui2
    from qt.core import QApplication

    from calibre_plugins.bookai.covers.bulk import MANIFEST, MANIFEST_VERSION, CoverOutcome, load_run, outcome_json
    from calibre_plugins.bookai.main_window import cover_actions as mw
    print('\n(d) the main window while a review of crafted new covers (the images of (c), and two good ones) loads '
          'its thumbnails, then Apply all, then Undo cover change; a 5 ms timer on the GUI thread, against the idle '
          'baseline (the same timer, as long, nothing running)')
    db, ids = library(os.path.join(folder, 'library-d'))
    cache = db.new_api
    said = []
    gui2.question_dialog = lambda *a, **k: True
    gui2.error_dialog = lambda parent, title, msg, **k: said.append(msg)
    gui2.info_dialog = lambda parent, title, msg, **k: said.append(msg)
    images = crafted_images() + [('good', cover_png()), ('good', cover_png(800, 1200))]
    staging = os.path.join(folder, 'staged')
    os.makedirs(staging)
    outcomes = []
    for book_id, (name, data) in zip(ids, images):
        ext = 'jpg' if data.startswith(b'\xff\xd8') else 'png'
        path = os.path.join(staging, f'{book_id}.{ext}')
        with open(path, 'wb') as f:
            f.write(data)
        outcomes.append(CoverOutcome(book_id, name, 'made', path))
    with open(os.path.join(staging, MANIFEST), 'w') as f:
        json.dump({'version': MANIFEST_VERSION, 'library_id': str(cache.library_id), 'library_path': folder,
                   'started': time.time(), 'written': time.time(), 'finished': True, 'aspect': ASPECT,
                   'total': len(outcomes), 'outcomes': [outcome_json(o) for o in outcomes]}, f)
    run = load_run(staging)
    gui = main_window(db)
    gui.library_view = None
    spin(0.5)
    before = {book_id: cache.cover(book_id) for book_id in ids[:len(images)]}
    ticker = Ticker()
    marks = {}
    ticker.start()
    start = time.perf_counter()
    w = mw.open_review(gui, run)
    marks['opened'] = time.perf_counter()  # the window made and shown: its widgets, not image work

    def loaded() -> bool:
        return all(lbl.text() != 'Loading…' for lbl in w.thumbs.values())
    spin(300, until=loaded)
    marks['thumbnails'] = time.perf_counter()
    w.apply_all_button.click()
    spin(300, until=lambda: not mw.reviews)
    spin(60, until=lambda: bool(said))
    marks['applied'] = time.perf_counter()
    applied = [b for b in ids[:len(images)] if cache.cover(b) != before[b]]
    mw.undo_covers(gui, ids[:len(images)])
    spin(60, until=lambda: all(cache.cover(b) == before[b] for b in ids[:len(images)]))
    end = time.perf_counter()
    gaps, ends, own = list(ticker.stop()), list(ticker.ends), ticker.own()
    idle, idle_own = idle_for(end - start)
    base = summary(idle)
    parts = {'opening the review window': [g for g, t in zip(gaps, ends) if t <= marks['opened'] + 0.1],
             'thumbnails': [g for g, t in zip(gaps, ends) if marks['opened'] + 0.1 < t <= marks['thumbnails']],
             'apply all': [g for g, t in zip(gaps, ends) if marks['thumbnails'] < t <= marks['applied']],
             'undo': [g for g, t in zip(gaps, ends) if t > marks['applied']]}
    back = all(cache.cover(b) == before[b] for b in ids[:len(images)])
    print(f'  thumbnails in {marks["thumbnails"] - start:.1f} s, applied in '
          f'{marks["applied"] - marks["thumbnails"]:.1f} s ({len(applied)} of {len(images)} covers put on: the good '
          f'ones), undone in {end - marks["applied"]:.1f} s; every book\'s old cover back: {back}')
    print(line('idle baseline', idle))
    for label, g in parts.items():
        print(line(label, g, base))
    print('  the same less the time the GUI thread waited for a CPU (the machine\'s share):')
    print(line('idle baseline', idle_own))
    base = summary(idle_own)
    bounds = [0.0, marks['opened'] + 0.1, marks['thumbnails'], marks['applied'], float('inf')]
    for (label, _g), low, high in zip(parts.items(), bounds, bounds[1:]):
        print(line(label, [o for o, t in zip(own, ends) if low < t <= high], base))
    print(f'  before (HEAD): each thumbnail was decoded on the GUI thread, and each cover stored by calibre as sent: '
          f'the window paused for the "before" times of (c), minutes for the worst; target: no pause over '
          f'{PAUSE_TARGET_MS} ms')
    gui.close()
    QApplication.instance().processEvents()
    db.close()

# }}}


def main() -> int:
    from calibre.gui2 import Application
    Application([])
    folder = tempfile.mkdtemp(prefix='bookai-bench-covers-')
    try:
        if 'BOOKAI_BENCH_CRAFTED_ONLY' in os.environ:
            crafted_before_and_after(folder)
            review_pauses(folder)
            return 0
        png = cover_png()
        print(f'image: 1024x1536 PNG, {len(png) / 1e6:.2f} MB ({len(png) * 4 / 3 / 1e6:.2f} MB as base64 in JSON); '
              f'aimock waits {DELAY_MS} ms before each (a fixture\'s chaos latencyMs)')
        with AiMock(fixtures_file(folder, png)) as mock:
            provider = provider_for(mock)
            if 'BOOKAI_BENCH_PAUSES_ONLY' not in os.environ:  # a quick look at (b) alone
                time_against_at_once(provider)
            db, ids = library(os.path.join(folder, 'library'))
            for n in (3, 8):  # Book AI's default, and the most it allows
                pauses(provider, n, db, ids)
            db.close()
        crafted_before_and_after(folder)
        review_pauses(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
