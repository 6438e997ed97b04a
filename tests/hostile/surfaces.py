# License: GPLv3 Copyright: the Book AI developers
"""How the battery feeds each kind of entry, and what a reader would be told and shown.

A Surface makes, in the test's process, the payloads of an attack in the shape its entry
takes (variants(): a list of (label, payload)); prepares each one (prepare(): routes on the
peer, a file put at its path), returns a handle of plain data; then, in the case's own
process, uses it as Book AI's callers do (use(): returns an Observed: the sentence the reader
is told, the texts shown, the numbers kept); then, back in the test's process, looks at what
was left (left(): the reader's files unchanged or set aside, never overwritten).

Every case's process first isolate()s itself: Book AI's settings, caches, History, Undo and
staging go to the case's own folder, the bounds it names lowered where the attack says.
"""

import os
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from helpers import images
from hostile.isolation import Observed

MB = 1 << 20
SSE = [('Content-Type', 'text/event-stream')]
JSON = [('Content-Type', 'application/json')]
NDJSON = [('Content-Type', 'application/x-ndjson')]
READ_TIMEOUT = 1.0           # a case's provider: the longest silence (trickling peers)
ANSWER_SECONDS = 3           # and the longest answer, lowered from an hour for the trickling peers
TRICKLE_DELAY = 0.05         # seconds between the bytes of a trickling peer
UNBOUNDED_FILE = 320 * MB    # a file for a reader that names no bound: more than any bound allows
NO_BOUND_SIZE = 16 * MB      # the size of "many tiny values" where a reader names no bound
PNG = images.png(8, 12)
GOOD_TITLE = 'The good chapter.'


def plugin(module: str) -> Any:
    """calibre_plugins.bookai.MODULE, imported when asked (in the case's process, mostly)."""
    import importlib
    return importlib.import_module(f'calibre_plugins.bookai.{module}')


def bound_value(name: str) -> int | None:
    """The value of a bound named 'module:NAME' (module below calibre_plugins.bookai), read now."""
    module, _sep, attr = name.partition(':')
    try:
        value = plugin(module)
        for part in attr.split('.'):
            value = getattr(value, part)
        return value
    except (ImportError, AttributeError):
        return None


# the case's own process {{{

def isolate(scratch: Path) -> None:
    """Book AI's own files, for this process, in scratch: its settings (a file of its own), its
    caches, History, Undo and staging. The key store never reaches a system keyring."""
    prefs = plugin('settings.prefs')
    rel = f'plugins/bookai-battery-{os.getpid()}'
    config = prefs.private_config(rel, prefs.PREF_KINDS)
    config.defaults.update(prefs.DEFAULTS)
    prefs._prefs = config
    secrets = plugin('settings.secrets')

    def no_keyring():
        from calibre_plugins.bookai.settings.keyring import Unavailable
        raise Unavailable('the battery keeps keys in a file')
    secrets._store = secrets.SecretStore(f'plugins/bookai-battery-secrets-{os.getpid()}', no_keyring)
    cache = scratch / 'cache'
    models = plugin('providers.models')
    models.cache_dir = lambda: str(cache)
    for module, name, where in (('covers.bulk', 'staging_root', 'covers-staged'),
                                ('covers.undo', 'default_root', 'covers-undo'),
                                ('grounding.cache', 'default_folder', 'text')):
        try:
            setattr(plugin(module), name, lambda where=where: str(cache / 'bookai' / where))
        except ImportError:
            pass


def settings_path(config_dir: str | None = None) -> str:
    """This process's own settings file (isolate())."""
    from calibre.utils.config import config_dir as cfg
    return os.path.join(config_dir or cfg, 'plugins', f'bookai-battery-{os.getpid()}.json')


def error_observed(e: BaseException) -> Observed:
    """What a reader is told of an exception a caller shows (its class and words)."""
    details = getattr(e, 'details', '') or ''
    message = getattr(e, 'provider_message', '') or ''
    return Observed('raised', f'{type(e).__module__}.{type(e).__qualname__}', str(e),
                    details=[str(details), str(message)])

# }}}


# payloads shared by the file and call surfaces {{{

def not_a_file(path: Path, kind: str) -> None:
    """Put what is not a regular file at path: a FIFO (no writer: opening it waits for ever), a
    device (a link to /dev/zero: endless zeros), a socket, a link to a FIFO."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == 'fifo':
        os.mkfifo(path)
    elif kind == 'device':
        os.symlink('/dev/zero', path)
    elif kind == 'socket':
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(str(path))
        s.close()  # the socket file stays, nobody listens
    elif kind == 'symlink to a FIFO':
        fifo = path.parent / (path.name + '.fifo-target')
        os.mkfifo(fifo)
        os.symlink(fifo, path)
    elif kind == 'folder':
        path.mkdir()
        (path / 'inside').write_text('kept')
    else:
        raise ValueError(kind)


NOT_A_FILE = ('fifo', 'device', 'socket', 'symlink to a FIFO', 'folder')


def sparse(path: Path, size: int) -> None:
    """A file of size zero bytes that takes no room on disk."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, 'wb') as f:
        f.truncate(size)


def damaged_variants(good: bytes, empty: bool = True) -> list[tuple[str, bytes]]:
    """good, damaged in the ways a crash, a full disk or a copy gone wrong damage a file. empty:
    whether an empty file is damaged (for a settings file it is no settings, as the file's absence)."""
    half = max(1, len(good) // 2)
    flipped = bytearray(good)
    for i in range(len(flipped) // 3, len(flipped), max(1, len(flipped) // 7)):
        flipped[i] ^= 0xA5
    return [('cut short', good[:half]), ('bytes changed', bytes(flipped))] + ([('empty', b'')] if empty else []) + [
        ('not UTF-8', b'\xff\xfe' + good[2:]), ('NUL bytes', b'\x00' * 64)]


def node_kept(path: Path) -> list[str]:
    """The paths that now hold what was at path (it, or it set aside as *.damaged)."""
    found = []
    for p in [path] + sorted(path.parent.glob(path.name + '*.damaged')):
        if os.path.lexists(p):
            found.append(str(p))
    return found


def bytes_kept(path: Path, data: bytes) -> bool:
    """Whether data is still at path, or set aside beside it, byte for byte."""
    for p in [path] + sorted(path.parent.glob(path.name + '*.damaged')):
        try:
            if p.is_file() and not p.is_symlink() and p.stat().st_size == len(data) and p.read_bytes() == data:
                return True
        except OSError:
            pass
    return False


def sparse_kept(path: Path, size: int) -> bool:
    for p in [path] + sorted(path.parent.glob(path.name + '*.damaged')):
        try:
            if p.is_file() and p.stat().st_size == size:
                return True
        except OSError:
            pass
    return False

# }}}


@dataclass
class Payload:
    """One variant of an attack, as a surface makes it."""
    label: str
    data: Any = None                     # bytes, JSON value, text: what the surface takes
    size: int = 0                        # its size in bytes, for the memory bound (0: small)
    extra: dict = field(default_factory=dict)


class Surface:
    """How one kind of entry is fed (see the module's docstring)."""

    quiet = False  # a cache or an optional reading: may fall back without a word, if nothing is lost
    quiet_for: tuple[str, ...] = ()  # the attacks after which it may (its documented silence)
    # the errors its callers show in words: Book AI's own (calibre_plugins.bookai.*), and those a
    # surface's function documents (history's ValueError with a sentence)
    may_raise: tuple[str, ...] = ('calibre_plugins.bookai.',)
    attacks: tuple[str, ...] = ()

    def variants(self, attack: str, variant: str, ctx: 'Context') -> list[Payload]:
        raise NotImplementedError

    def prepare(self, payload: Payload, ctx: 'Context', where: Path) -> Any:
        return payload.data

    def use(self, handle: Any, ctx: 'Context', where: Path) -> Observed:
        raise NotImplementedError

    def left(self, payload: Payload, handle: Any, where: Path, observed: Observed) -> list[str]:
        """What is wrong with what the case left (nothing of the reader's lost)."""
        return []


@dataclass
class Context:
    """What a case's surface may use: the peer (in the test's process), the attack, scratch."""
    peer: Any
    attack: str
    variant: str
    scratch: Path
