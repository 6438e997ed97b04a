# License: GPLv3 Copyright: the Book AI developers
"""Each battery case in a process of its own, forked from the test's: a case that hangs is ended
by a watchdog and fails its test instead of hanging the suite (where it hung is said: every
thread's stack, by faulthandler), a case that balloons fails at a cap instead of taking the
machine, and whatever a case changes in memory (monkeypatched limits, the plugin's settings
object) dies with its process. The servers stay in the test's process, which waits.

The watchdog is no timed assertion of speed: it is many times what any case takes, and only
says that a case did not end. What a case took in memory is its peak growth over what it had
when it began (helpers.memory), measured in the case's own process.
"""

import faulthandler
import os
import pickle
import select
import signal
import time
import traceback
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from helpers.memory import MB

# the most a case's process may take in address space beyond what it had: a safety cap for the
# machine, well above every bound the battery checks (the bounds are checked on peak growth)
ADDRESS_SPACE_CAP = 3 * 1024 * MB


@dataclass
class Observed:
    """What came of a case, as plain data: how it ended, what a reader is told and shown."""
    ended: str = 'returned'        # returned, raised, hung, died, memory
    error_type: str = ''           # the exception's class, module-qualified, when it raised
    sentence: str = ''             # what the reader is told: an error's words, a problem said
    shown: list[str] = field(default_factory=list)    # every other text a reader may see
    details: list[str] = field(default_factory=list)  # what is kept for the curious (an error's details)
    facts: dict = field(default_factory=dict)         # what a surface found out, for its checks
    growth: int = 0                # peak resident growth, bytes
    seconds: float = 0.0           # for the report only; never asserted
    where: str = ''                # a hung case's threads, a died case's signal
    ctx_attack: str = ''           # the attack it came of (set by the battery)

    def texts(self) -> list[str]:
        return [self.sentence, *self.shown, *self.details]


def address_space() -> int:
    with open('/proc/self/status', 'rb') as f:
        for line in f:
            if line.startswith(b'VmSize:'):
                return int(line.split()[1]) * 1024
    return 0


def descendants(pid: int) -> list[int]:
    """The processes pid started, and theirs (Linux's /proc), found before any is ended."""
    children: dict[int, list[int]] = {}
    for name in os.listdir('/proc'):
        if not name.isdigit():
            continue
        try:
            with open(f'/proc/{name}/stat', 'rb') as f:
                ppid = int(f.read().rpartition(b')')[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            out.append(child)
            todo.append(child)
    return out


def case_stack(dump: str) -> str:
    """The threads of a faulthandler dump that were doing the case's work (not the memory sampler's),
    the innermost call first, their pytest frames left out."""
    threads = [t for t in dump.split('\n\n') if t.strip() and 'in sample' not in t]
    out = []
    for t in threads:
        lines = [ln for ln in t.splitlines() if '_pytest' not in ln and 'pluggy' not in ln]
        out.append('\n'.join(lines[:14]))
    return '\n\n'.join(out)[:4000]


def run_isolated(case: Callable[[], Observed], seconds: float, scratch: str) -> Observed:
    """case() in a forked process, ended after seconds. The case returns an Observed (or raises:
    then its exception is what came of it)."""
    stacks = os.path.join(scratch, f'stacks-{time.monotonic_ns()}.txt')
    r, w = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)  # Python 3.12+: fork of a process with threads
        pid = os.fork()
    if pid == 0:  # the case's process {{{
        code = 0
        try:
            os.close(r)
            with open(stacks, 'w') as out:
                faulthandler.dump_traceback_later(max(1.0, seconds - 2), exit=False, file=out)
                try:
                    import resource
                    cap = address_space() + ADDRESS_SPACE_CAP
                    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
                except (ImportError, ValueError, OSError):
                    pass
                start = time.monotonic()
                try:
                    outcome = case()
                except Exception as e:
                    outcome = e
                if isinstance(outcome, Observed):
                    seen = outcome
                elif isinstance(outcome, MemoryError):
                    seen = Observed('memory', 'MemoryError', where=''.join(traceback.format_exception(outcome))[-3000:])
                elif isinstance(outcome, BaseException):
                    seen = Observed('raised', f'{type(outcome).__module__}.{type(outcome).__qualname__}',
                                    str(outcome)[:2000], where=''.join(traceback.format_exception(outcome))[-3000:])
                else:
                    seen = Observed('returned', facts={'unexpected': repr(outcome)[:500]})
                seen.seconds = time.monotonic() - start
                faulthandler.cancel_dump_traceback_later()
            data = pickle.dumps(seen)
            view = memoryview(data)
            while view:
                view = view[os.write(w, view):]
        except BaseException:
            code = 3
        finally:
            os._exit(code)
    # }}}
    os.close(w)
    deadline = time.monotonic() + seconds
    data = bytearray()
    timed_out = False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            ready, _, _ = select.select([r], [], [], min(left, 1.0))
            if ready:
                piece = os.read(r, 1 << 20)
                if not piece:
                    break
                data += piece
    finally:
        os.close(r)
        if timed_out:  # the case's process and every process it started (calibre's workers) end with it
            for p in [pid] + descendants(pid):
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        _, status = os.waitpid(pid, 0)
    if timed_out:
        where = ''
        try:
            with open(stacks, errors='replace') as f:
                where = case_stack(f.read())
        except OSError:
            pass
        return Observed('hung', seconds=seconds, where=where)
    if not data:
        how = f'signal {os.WTERMSIG(status)}' if os.WIFSIGNALED(status) else f'exit {os.WEXITSTATUS(status)}'
        return Observed('died', where=how)
    return pickle.loads(bytes(data))
