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
    try:
        ans = job(f'calibre_plugins.bookai.{module}', function, args=args,
                  timeout=WALL_PER_CPU * seconds + WORKER_START_SECONDS, no_output=True, abort=abort,
                  module_is_source_code=False)
    except WorkerError as e:
        raise refusal(e, worker, seconds, memory) from None
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
        return Refused(_('It needed more memory than Book AI allows it ({megabytes} MB).').format(
            megabytes=memory // 2 ** 20), details)
    if code in (-signal.SIGKILL, -signal.SIGSEGV, -signal.SIGABRT, -getattr(signal, 'SIGBUS', -1000)):
        return Refused(_('It stopped before it was done: it may have needed more memory than Book AI allows it '
                         '({megabytes} MB).').format(megabytes=memory // 2 ** 20), details)
    return Refused(_('It could not be done in a separate process.'), details)


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


def exercise(seconds: float, megabytes: int) -> int:
    """A worker's work that takes `megabytes` of memory, then `seconds` of CPU time: how the tests
    and the benchmark see that run()'s bounds hold. Returns the megabytes it took."""
    bounded_here()
    kept = bytearray(megabytes * 2 ** 20)
    for i in range(0, len(kept), 4096):  # touched: resident, not only reserved
        kept[i] = 1
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return len(kept) // 2 ** 20
