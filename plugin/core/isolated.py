# License: GPLv3 Copyright: the Book AI developers
"""Work on hostile bytes in calibre's worker process, bounded in time and memory.

Some work cannot be bounded from inside Book AI's own process: a decoder given a crafted image
(a PNG that inflates to gigabytes, a JPEG of a hundred thousand scans) or a calibre template
with a pathological regular expression runs in C, holding Python's lock, for as long as it
likes and with as much memory as it asks for. Such work runs here instead: in a calibre worker
process (calibre's own `fork_job`, through its two_part_fork_job, on every calibre Book AI
supports and every system), which is killed when it takes longer than its time, whose CPU time
and data segment are capped (where the system can cap them) to its time and to what it had when
it started plus its memory, and which writes no core file. The calling thread only waits on a
socket, so calibre's windows keep running. A worker that did not finish is told as Refused, in a
sentence: out of time, out of memory, or failed.

run() is called from a worker thread or the command line, never from the GUI thread; what it
runs is a function of Book AI's own (by module and name: the worker loads Book AI as calibre
loads any plugin) whose arguments and result are plain data. Nothing here imports Qt; the
function run may, in the worker.
"""

import math
import os
import time
from collections.abc import Callable
from typing import Any

load_translations()

# What a worker may take, past what it had when it started (Python, calibre and Qt loaded): the
# memory one image or template may cost. The system counts a process's data segment (its heap
# and private mappings); the decoder's own bounds (core/images.py) keep real work far below this.
WORKER_MEMORY = 320 * 1024 * 1024
# The work's own bound is its CPU time (bounded_here()); the clock only ends a worker that waits
# rather than works. So the clock allows what a slow, busy computer needs: a minute to start a
# worker (calibre loaded from a slow disk, the first time), and the work's time WALL_PER_CPU times
# over, as other programs share the processor.
WORKER_START_SECONDS = 60
WALL_PER_CPU = 3


class Refused(Exception):
    """The work did not finish: it took longer than its time, ran out of its memory, or failed.
    str() is a sentence for the reader; `details` what calibre's worker said."""

    def __init__(self, sentence: str, details: str = '') -> None:
        super().__init__(sentence)
        self.details = details


def run(module: str, function: str, args: tuple, seconds: float, memory: int = WORKER_MEMORY,
        abort: Any = None, started: Callable[[int], object] | None = None) -> Any:
    """function(*args) of Book AI's module `module` (its name below calibre_plugins.bookai, such as
    'covers.decoding'), run in a calibre worker process, killed after seconds of CPU time (or,
    waiting rather than working, WALL_PER_CPU times that on the clock, plus the worker's start)
    or when it takes more than memory bytes. abort: a threading.Event (anything with
    is_set()) that stops it: then None is returned. started(pid): told the worker's process id
    once it runs (a benchmark watches its memory). Raises Refused when it did not finish;
    returns what the function returned."""
    from calibre.utils.ipc.simple_worker import WorkerError, two_part_fork_job  # late: only when used
    job = two_part_fork_job({'BOOKAI_WORKER_MEMORY': str(int(memory)), 'BOOKAI_WORKER_SECONDS': str(float(seconds))})
    worker = job.worker
    if started is not None:
        started(worker.pid)
    watch = MemoryWatch(worker.pid)
    try:
        ans = job(f'calibre_plugins.bookai.{module}', function, args=args,
                  timeout=WALL_PER_CPU * seconds + WORKER_START_SECONDS, no_output=True, abort=abort,
                  module_is_source_code=False)
    except WorkerError as e:
        watch.stop()
        if watch.ended_it:
            raise Refused(out_of_memory(memory), 'ended at its memory limit, working without getting more') from None
        raise refusal(e, worker, seconds, memory) from None
    finally:
        watch.stop()
    if abort is not None and abort.is_set():
        return None
    return ans['result']


def refusal(e: Exception, worker: Any, seconds: float, memory: int) -> Refused:
    """Why the worker did not finish, in a sentence: its time (calibre's timeout, or the CPU time
    bounded_here() set, which the system ends with SIGXCPU), its memory, or anything else."""
    import signal
    details = f'{e}\n{getattr(e, "orig_tb", "") or ""}'.strip()
    code = None
    for _i in range(50):  # a worker the system ended has ended by now; give its exit a moment to be seen
        code = worker.returncode
        if code is not None:
            break
        time.sleep(0.01)
    details += f'\n(exit status {code})'
    took_too_long = _('It took longer than Book AI allows it ({seconds:g} seconds).').format(seconds=seconds)
    if 'hung' in str(e) or code == -getattr(signal, 'SIGXCPU', -1000):
        return Refused(took_too_long, details)
    if 'MemoryError' in details:
        return Refused(out_of_memory(memory), details)
    if code in (-signal.SIGKILL, -signal.SIGSEGV, -signal.SIGABRT, -getattr(signal, 'SIGBUS', -1000)):
        return Refused(_('It stopped before it was done: it may have needed more memory than Book AI allows it '
                         '({megabytes} MB).').format(megabytes=memory // 2 ** 20), details)
    return Refused(_('It could not be done in a separate process.'), details)


def out_of_memory(memory: int) -> str:
    return _('It needed more memory than Book AI allows it ({megabytes} MB).').format(megabytes=memory // 2 ** 20)


class MemoryWatch:
    """Ends a worker that spins at its memory limit. A worker whose allocations all fail may not
    raise MemoryError: calibre's conversion on Python 3.13 was seen trying again and again, every
    mmap refused, until its CPU time ran out (30 minutes for a conversion). Watched from here (on
    Linux, from /proc): a worker whose data segment has stayed within LIMIT_SLACK of its limit for
    AT_LIMIT_SECONDS while it worked (its CPU time grew by at least half of that) is killed, and told
    as out of memory."""

    AT_LIMIT_SECONDS = 10.0
    LIMIT_SLACK = 0.03    # of the limit
    EVERY = 0.5           # seconds between two looks

    def __init__(self, pid: int) -> None:
        import threading
        self.pid, self.ended_it = pid, False
        self.done = threading.Event()
        self.thread: threading.Thread | None = None
        if os.path.exists(f'/proc/{pid}/status'):
            self.thread = threading.Thread(target=self.watch, name='bookai-worker-memory', daemon=True)
            self.thread.start()

    def stop(self) -> None:
        self.done.set()
        if self.thread is not None:
            self.thread.join()
            self.thread = None

    def watch(self) -> None:
        since: tuple[float, float] | None = None  # (when, CPU time) it was first seen at its limit
        while not self.done.wait(self.EVERY):
            figures = worker_figures(self.pid)
            if figures is None:
                return
            data, limit, cpu = figures
            if limit is None or data < limit * (1 - self.LIMIT_SLACK):
                since = None
                continue
            now = time.monotonic()
            if since is None:
                since = (now, cpu)
            elif now - since[0] >= self.AT_LIMIT_SECONDS and cpu - since[1] >= self.AT_LIMIT_SECONDS / 2:
                import signal
                try:
                    os.kill(self.pid, signal.SIGKILL)
                    self.ended_it = True
                except OSError:
                    pass
                return


def worker_figures(pid: int) -> tuple[int, int | None, float] | None:
    """(data segment bytes, its limit or None, CPU seconds) of process pid, from Linux's /proc; None
    when it cannot be read (it has ended)."""
    try:
        with open(f'/proc/{pid}/status', 'rb') as f:
            data = next(int(line.split()[1]) * 1024 for line in f if line.startswith(b'VmData:'))
        with open(f'/proc/{pid}/limits', 'rb') as f:
            row = next(line for line in f if line.startswith(b'Max data size'))
        soft = row.split()[3]
        limit = None if soft == b'unlimited' else int(soft)
        with open(f'/proc/{pid}/stat', 'rb') as f:
            fields = f.read().rsplit(b')', 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return data, limit, cpu


def bounded_here() -> None:
    """Called first by every function run(): caps this worker's memory and CPU time to what run()
    was given, where the system allows (hard limits the work cannot lift; past its CPU time the
    system ends it with SIGXCPU), and writes no core file of it."""
    memory = int(os.environ.get('BOOKAI_WORKER_MEMORY') or WORKER_MEMORY)
    seconds = float(os.environ.get('BOOKAI_WORKER_SECONDS') or 60)
    try:
        import resource
    except ImportError:  # Windows: the time limit alone (the process is killed), and the decoder's bounds
        return
    if hasattr(resource, 'RLIMIT_CORE'):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    used = process_memory('VmData')
    if used is not None and hasattr(resource, 'RLIMIT_DATA'):
        limit = used + memory
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    spent = resource.getrusage(resource.RUSAGE_SELF)
    cpu = math.ceil(spent.ru_utime + spent.ru_stime + seconds)
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def process_memory(field: str) -> int | None:
    """One of this process's memory figures in bytes, from Linux's /proc/self/status (VmData, its
    data segment; VmHWM, the most it has had resident), or None where it is not known."""
    key = field.encode('ascii') + b':'
    try:
        with open('/proc/self/status', 'rb') as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def exercise(seconds: float, megabytes: int, spin: bool = False) -> int:
    """A worker's work that takes `megabytes` of memory, then `seconds` of CPU time: how the tests
    and the benchmark see that run()'s bounds hold. Returns the megabytes it took. spin: it then
    asks for more memory, again and again, each MemoryError ignored (as a worker seen spinning at
    its limit did: MemoryWatch)."""
    bounded_here()
    if spin:
        held = []
        end = time.process_time() + seconds
        while time.process_time() < end:
            try:
                held.append(bytearray(2 ** 20))
            except MemoryError:
                pass
        return len(held)
    kept = bytearray(megabytes * 2 ** 20)
    for i in range(0, len(kept), 4096):  # touched: resident, not only reserved
        kept[i] = 1
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return len(kept) // 2 ** 20
