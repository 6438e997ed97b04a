# License: GPLv3 Copyright: the Book AI developers
"""The books of a library as vectors, searched by meaning in pure Python, and kept in a file.

calibre carries no numpy, so the search is what Python's own types do fast. Each book's vector is
scaled to length 1 and kept twice, small:

- as signed 16-bit integers with one scale per book, for the exact score: a dot product with the
  question's vector, in floats. 384 dimensions take 768 bytes a book, half of 32-bit floats, and
  rank as the floats do: an exact scan of them finds the floats' top 10 (bench/library_search.py;
  signed bytes, a quarter of floats, lost about 1 in 75 of the floats' top 10, as ties among the
  nearest books came out in another order);
- as its signature: the sign of each dimension, one bit, all of them one Python int. Two vectors
  that point the same way share most signs, so the number of signs two books differ in (the
  Hamming distance, `(a ^ b).bit_count()`, one C call) is a rough distance between them.

A search reads every book's signature (about 10 ms for 50,000 books), keeps the CANDIDATES
nearest, scores those exactly (about 15 ms a thousand, of 384 dimensions), and returns the k best
as (book id, score), best first, the score the cosine of the question and the book. A question
near its book finds the exact top 10 from a few hundred candidates; one as far from its book as
the books of its topic are from each other needs more: 2,000 of 50,000 books find 19 of 20 of
them (bench/library_search.py). A search can be restricted to some books (calibre's
current search or virtual library); when they are fewer than CANDIDATES, all of them are scored
exactly.

A book's vector is added, replaced or removed by its calibre id; with it are kept calibre's
last-modified time of the book and a digest of the text embedded (entries.py), so that an update
embeds only the books added or changed since (changed()). A vector of the wrong length, with NaN
or an infinity in it, or of no length at all is refused with a BadVector that says why in words;
so are more than MAX_BOOKS books, more than MAX_DIMENSION dimensions or more than MAX_VALUES
numbers in all.

The file (one per library, in Book AI's cache): MAGIC, one line of JSON (its kind, version,
model, dimension, count and the SHA-256 of what follows), then the packed arrays: the book ids,
their modified times, their text digests, their scales and their values, little-endian. The
signatures are made again when it is read. It is read as every file from outside is (a regular
file only, at most MAX_FILE_BYTES, the JSON bounded) and checked whole: its sizes, its digest, its
ids and numbers; one that is not of this kind and version, is damaged or cut short is set aside
(renamed *.damaged, never over one set aside before) and taken as absent, never written over.
Nothing in it is ever unpickled or run. It is written whole, privately, in one step
(core/files.py write_private), so that a crash leaves the old file or the new one.
"""

import hashlib
import heapq
import json
import math
import os
import sys
from array import array
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import islice
from operator import mul

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.files import TooBig, private_folder, read_regular, set_aside_if_can, write_private
from calibre_plugins.bookai.core.printable import one_line

load_translations()

MAX_BOOKS = 200_000          # books in one index, at most
MAX_DIMENSION = 4096         # a vector's dimensions, at most (the largest embedding models make 4,096)
MAX_VALUES = 96 * 1024 * 1024   # books times dimensions, at most: 192 MB (200,000 books of 480, 50,000 of 1,920)
VALUE_BYTES = 2              # a value kept: a signed 16-bit integer
MAX_BOOK_ID = 2 ** 62        # calibre's ids are SQLite integers; no library has more
MAX_MODIFIED = 1e11          # a modified time (seconds since 1970) past the year 5000 is no time
MAX_MODEL_CHARS = 600        # the model's name as kept (provider/model id)
MAX_HEADER_BYTES = 4096
DIGEST_BYTES = 16            # a book's text digest as kept (entries.text_digest: 32 hex digits)
PER_BOOK_BYTES = 8 + 8 + DIGEST_BYTES + 4  # a book's id, modified time, digest and scale in the file
MAX_FILE_BYTES = MAX_HEADER_BYTES + MAX_BOOKS * PER_BOOK_BYTES + MAX_VALUES * VALUE_BYTES
CANDIDATES = 2000            # books scored exactly in a search, the nearest by their signatures
MAX_K = 1000                 # results one search gives, at most
CACHE_VERSION = 1            # raise when what a vectors file holds changes meaning
KIND = 'bookai-library-vectors'
MAGIC = b'BOOKAI-VECTORS\n'
SUFFIX = '.vectors'
LEVELS = 32767               # a scaled value's largest integer
# a dot product: in C from Python 3.12 (math.sumprod), else as fast as Python 3.10 goes
dot: Callable[[Iterable[float], Iterable[float]], float] = getattr(math, 'sumprod', None) or (
    lambda a, b: sum(map(mul, a, b)))
# the high byte of each of a book's values as text of '0' and '1', its signs (>= 0 is 1): int(text, 2)
# is its signature
SIGN_BITS = bytes(ord('1') if b < 128 else ord('0') for b in range(256))
HIGH_BYTE = 1 if sys.byteorder == 'little' else 0


class BadVector(ValueError):
    """A vector (or a book id, or a number kept with it) that the index does not take, and why, in
    one sentence."""


@dataclass(frozen=True)
class Stamp:
    """What a book's vector was made from: calibre's last-modified time of the book (seconds since
    1970) and the digest of the text embedded (entries.text_digest)."""
    modified: float = 0.0
    digest: str = ''


def checked_id(book_id: object) -> int:
    if type(book_id) is not int or not 0 < book_id < MAX_BOOK_ID:
        raise BadVector(_('{id} is not the id of a book of a calibre library.').format(id=one_line(repr(book_id))[:40]))
    return book_id


def checked_stamp(stamp: Stamp) -> Stamp:
    m = stamp.modified
    if type(m) not in (int, float) or not math.isfinite(m) or not 0 <= m < MAX_MODIFIED:
        raise BadVector(_('A modified time of {time} is not a time.').format(time=one_line(repr(m))[:40]))
    d = stamp.digest
    if d and (type(d) is not str or len(d) != 2 * DIGEST_BYTES or d.strip('0123456789abcdef')):
        raise BadVector(_('{digest} is not the digest of a text.').format(digest=one_line(repr(d))[:80]))
    return Stamp(float(m), d)


def digest_bytes(digest: str) -> bytes:
    return bytes.fromhex(digest) if digest else bytes(DIGEST_BYTES)


def unit_vector(vector: Iterable[float], dim: int) -> list[float]:
    """vector as floats scaled to length 1; BadVector when it is not of dim numbers, holds NaN or
    an infinity, or has no length (all zeros)."""
    if isinstance(vector, (str, bytes, bytearray)):
        raise BadVector(_('A vector holds something that is not a number.'))
    try:
        values = [float(x) for x in islice(vector, MAX_DIMENSION + 1)]
    except (TypeError, ValueError, OverflowError):
        raise BadVector(_('A vector holds something that is not a number.')) from None
    if len(values) != dim:
        raise BadVector(_('A vector of {got} numbers is not one of this index, whose vectors have {dim}.').format(
            got=len(values), dim=dim))
    if not all(map(math.isfinite, values)):
        raise BadVector(_('A vector holds a number that is no number (NaN) or an infinity.'))
    top = max(abs(x) for x in values)  # scaled to it first: the squares of huge or tiny values overflow or vanish
    if not top:
        raise BadVector(_('A vector of zeros points nowhere: it cannot be compared with others.'))
    values = [x / top for x in values]
    norm = math.sqrt(math.fsum(x * x for x in values))
    return [x / norm for x in values]


def quantised(unit: list[float]) -> tuple[array, float]:
    """A unit vector as signed 16-bit integers and the scale that turns them back into floats."""
    top = max(abs(x) for x in unit)
    scale = top / LEVELS
    return array('h', [round(x / scale) for x in unit]), scale


def signature(codes: array) -> int:
    """The signs of a book's values as one int, the first the highest bit: set where the value is
    zero or above (read from each value's high byte, in C)."""
    return int(codes.tobytes()[HIGH_BYTE::2].translate(SIGN_BITS), 2)


def query_signature(unit: list[float]) -> int:
    return int(''.join('1' if x >= 0 else '0' for x in unit), 2)


class BookVectors:
    """The vectors of a library's books, made by one embedding model, of dim dimensions.

    Books are kept in slots 0 to len(self) - 1, in no order: a removed book's slot takes the last
    book, so that the arrays stay whole and a search reads nothing but books."""

    def __init__(self, dim: int, model: str = '') -> None:
        if type(dim) is not int or not 0 < dim <= MAX_DIMENSION:
            raise BadVector(_('Vectors of {dim} dimensions are not taken: at most {most}.').format(
                dim=one_line(repr(dim))[:40], most=MAX_DIMENSION))
        self.dim = dim
        self.model = one_line(model)[:MAX_MODEL_CHARS]
        self.ids = array('q')
        self.modified = array('d')
        self.digests = bytearray()  # DIGEST_BYTES a book; zeros for none
        self.scales = array('f')
        self.codes = array('h')
        self.signatures: list[int] = []
        self.slot: dict[int, int] = {}

    # books added, replaced, removed {{{

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, book_id: object) -> bool:
        return book_id in self.slot

    def book_ids(self) -> list[int]:
        return list(self.ids)

    def most_books(self) -> int:
        """How many books of this dimension the index takes."""
        return min(MAX_BOOKS, MAX_VALUES // self.dim)

    def put(self, book_id: int, vector: Iterable[float], stamp: Stamp = Stamp()) -> None:
        """Add the vector of a book, or replace the one it had; BadVector (nothing changed) for a
        vector, id or stamp it does not take, or a book more than it holds."""
        book_id = checked_id(book_id)
        stamp = checked_stamp(stamp)
        codes, scale = quantised(unit_vector(vector, self.dim))
        slot = self.slot.get(book_id)
        if slot is None:
            if len(self) >= self.most_books():
                raise BadVector(_('The index holds {count} books, the most it takes of {dim} dimensions.').format(
                    count=len(self), dim=self.dim))
            self.place(book_id, codes, scale, stamp)
            return
        d = self.dim
        self.codes[slot * d:(slot + 1) * d] = codes
        self.scales[slot] = scale
        self.modified[slot] = stamp.modified
        self.digests[slot * DIGEST_BYTES:(slot + 1) * DIGEST_BYTES] = digest_bytes(stamp.digest)
        self.signatures[slot] = signature(codes)

    def place(self, book_id: int, codes: array, scale: float, stamp: Stamp) -> None:
        """A new book in a new slot, its values checked."""
        self.slot[book_id] = len(self.ids)
        self.ids.append(book_id)
        self.modified.append(stamp.modified)
        self.digests += digest_bytes(stamp.digest)
        self.scales.append(scale)
        self.codes.extend(codes)
        self.signatures.append(signature(codes))

    def remove(self, book_id: int) -> bool:
        """Forget a book's vector; whether it had one."""
        slot = self.slot.pop(book_id, None)
        if slot is None:
            return False
        last, d = len(self.ids) - 1, self.dim
        if slot != last:  # the last book moves into the hole
            moved = self.ids[last]
            self.slot[moved] = slot
            self.ids[slot] = moved
            self.modified[slot] = self.modified[last]
            self.digests[slot * DIGEST_BYTES:(slot + 1) * DIGEST_BYTES] = self.digests[last * DIGEST_BYTES:]
            self.scales[slot] = self.scales[last]
            self.signatures[slot] = self.signatures[last]
            self.codes[slot * d:(slot + 1) * d] = self.codes[last * d:(last + 1) * d]
        del self.ids[last], self.modified[last], self.scales[last], self.signatures[last]
        del self.codes[last * d:]
        del self.digests[last * DIGEST_BYTES:]
        return True

    def restamp(self, book_id: int, stamp: Stamp) -> bool:
        """Take a new stamp for a book whose vector stays (its text is the same); whether it has one.
        BadVector for a stamp it does not take."""
        slot = self.slot.get(book_id)
        if slot is None:
            return False
        stamp = checked_stamp(stamp)
        self.modified[slot] = stamp.modified
        self.digests[slot * DIGEST_BYTES:(slot + 1) * DIGEST_BYTES] = digest_bytes(stamp.digest)
        return True

    def stamp(self, book_id: int) -> Stamp | None:
        """What a book's vector was made from, or None when it has none."""
        slot = self.slot.get(book_id)
        if slot is None:
            return None
        digest = self.digests[slot * DIGEST_BYTES:(slot + 1) * DIGEST_BYTES]
        return Stamp(self.modified[slot], digest.hex() if any(digest) else '')

    def vector(self, book_id: int) -> list[float] | None:
        """A book's vector as kept (of length about 1), or None: for "More like this"."""
        slot = self.slot.get(book_id)
        if slot is None:
            return None
        scale, d = self.scales[slot], self.dim
        return [c * scale for c in self.codes[slot * d:(slot + 1) * d]]

    def changed(self, current: Mapping[int, Stamp]) -> tuple[list[int], list[int]]:
        """(the books of current to embed: not in the index, or whose stamp differs; the books of
        the index no longer in current), for an update that embeds only what changed. A stamp whose
        digest is '' is compared by its modified time alone."""
        todo = []
        for book_id, stamp in current.items():
            kept = self.stamp(book_id)
            if kept is None or kept.modified != stamp.modified or (stamp.digest and kept.digest != stamp.digest):
                todo.append(book_id)
        gone = [b for b in self.ids if b not in current]
        return todo, gone

    # }}}

    # search {{{

    def search(self, query: Iterable[float], k: int = 10, allowed: Iterable[int] | None = None,
               candidates: int = CANDIDATES) -> list[tuple[int, float]]:
        """The k books nearest query, as (book id, cosine), best first; only those in allowed
        when it is given (None: every book). BadVector for a query the index does not take."""
        q = unit_vector(query, self.dim)
        k = max(0, min(int(k), MAX_K))
        if not k or not self.ids:
            return []
        candidates = max(k, int(candidates))
        slots: Iterable[int]
        if allowed is None:
            slots = range(len(self.ids))
            count = len(self.ids)
        else:
            found = self.slot
            slots = sorted({s for s in (found.get(b) for b in allowed) if s is not None})
            count = len(slots)
        if count > candidates:
            qs = query_signature(q)
            sigs = self.signatures
            if allowed is None:
                distances = [(s ^ qs).bit_count() for s in sigs]
                slots = heapq.nsmallest(candidates, slots, key=distances.__getitem__)
            else:
                slots = heapq.nsmallest(candidates, slots, key=lambda s: (sigs[s] ^ qs).bit_count())
        return self.scored(q, slots, k)

    def scored(self, q: list[float], slots: Iterable[int], k: int) -> list[tuple[int, float]]:
        """The k best of slots by their exact score against the unit vector q."""
        codes, scales, d = self.codes, self.scales, self.dim
        scores = ((dot(q, codes[s * d:(s + 1) * d]) * scales[s], s) for s in slots)
        best = heapq.nlargest(k, scores)
        return [(self.ids[s], min(1.0, max(-1.0, score))) for score, s in best]

    def exact_search(self, query: Iterable[float], k: int = 10,
                     allowed: Iterable[int] | None = None) -> list[tuple[int, float]]:
        """search() with every book (of allowed) scored exactly: slower, for comparison."""
        q = unit_vector(query, self.dim)
        k = max(0, min(int(k), MAX_K))
        if allowed is None:
            slots: Iterable[int] = range(len(self.ids))
        else:
            slots = sorted({s for s in (self.slot.get(b) for b in allowed) if s is not None})
        return self.scored(q, slots, k) if k else []

    # }}}

    # the file's bytes {{{

    def to_bytes(self) -> bytes:
        """The whole index as its file holds it."""
        data = b''.join((little_endian(self.ids), little_endian(self.modified), bytes(self.digests),
                         little_endian(self.scales), little_endian(self.codes)))
        header = {'kind': KIND, 'version': CACHE_VERSION, 'model': self.model, 'dimension': self.dim,
                  'count': len(self.ids), 'sha256': hashlib.sha256(data).hexdigest()}
        return MAGIC + json.dumps(header).encode('ascii') + b'\n' + data

    @classmethod
    def from_bytes(cls, data: bytes) -> 'BookVectors':
        """An index from its file's bytes; ValueError (in words) for bytes that are not a whole
        file of this kind and version, or hold an id or a number the index does not take."""
        end = data.find(b'\n', len(MAGIC), len(MAGIC) + MAX_HEADER_BYTES)
        if not data.startswith(MAGIC) or end < 0:
            raise ValueError('not a Book AI vectors file')
        header = limits.load_json(data[len(MAGIC):end])
        if type(header) is not dict or header.get('kind') != KIND or header.get('version') != CACHE_VERSION:
            raise ValueError(f'not a Book AI vectors file of version {CACHE_VERSION}')
        model, dim, count, digest = (header.get(k) for k in ('model', 'dimension', 'count', 'sha256'))
        if type(model) is not str or len(model) > MAX_MODEL_CHARS:
            raise ValueError('its model is not a name')
        if type(dim) is not int or not 0 < dim <= MAX_DIMENSION:
            raise ValueError('its dimension is not one the index takes')
        if type(count) is not int or not 0 <= count <= min(MAX_BOOKS, MAX_VALUES // dim):
            raise ValueError('its count is not one the index takes')
        body = memoryview(data)[end + 1:]
        if len(body) != count * (PER_BOOK_BYTES + VALUE_BYTES * dim):
            raise ValueError(f'{len(body)} bytes where {count} books of {dim} dimensions take '
                             f'{count * (PER_BOOK_BYTES + VALUE_BYTES * dim)}')
        if type(digest) is not str or hashlib.sha256(body).hexdigest() != digest:
            raise ValueError('its bytes are not those it was written with')
        index = cls(dim, model)
        at = 0

        def take(typecode: str, size: int) -> array:
            nonlocal at
            values = array(typecode)
            values.frombytes(body[at:at + size * values.itemsize])
            at += size * values.itemsize
            if sys.byteorder == 'big':
                values.byteswap()
            return values
        ids, modified = take('q', count), take('d', count)
        digests = bytearray(body[at:at + count * DIGEST_BYTES])
        at += count * DIGEST_BYTES
        scales, codes = take('f', count), take('h', count * dim)
        if len(set(ids)) != count or not all(0 < i < MAX_BOOK_ID for i in ids):
            raise ValueError('its book ids are not those of books, each once')
        if not all(math.isfinite(m) and 0 <= m < MAX_MODIFIED for m in modified):
            raise ValueError('its modified times are not times')
        if not all(math.isfinite(s) and 0 < s <= 1 / LEVELS * 1.001 for s in scales):
            raise ValueError('its scales are not those of vectors of length 1')
        index.ids, index.modified, index.digests, index.scales, index.codes = ids, modified, digests, scales, codes
        index.slot = {b: s for s, b in enumerate(ids)}
        index.signatures = [signature(codes[s * dim:(s + 1) * dim]) for s in range(count)]
        return index

    # }}}


def little_endian(values: array) -> bytes:
    if sys.byteorder == 'big':
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def default_folder() -> str:
    """Where the libraries' vectors are kept: in calibre's cache folder, beside the books' text."""
    from calibre.constants import cache_dir  # late: only when a file is read or written
    return os.path.join(cache_dir(), 'bookai', 'library-vectors')


def safe(name: object) -> str:
    """name as a part of a file name."""
    return ''.join(c if c.isascii() and (c.isalnum() or c in '_-') else '_' for c in str(name))[:80] or '_'


class VectorFiles:
    """The vectors files under folder, one per library."""

    def __init__(self, folder: str | None = None) -> None:
        self.folder = folder or default_folder()
        self.set_aside_as: list[str] = []  # the damaged files set aside while reading, as renamed
        self.known: dict[str, tuple] = {}  # path: identity() of the file read whole or written there

    def file_of(self, library_id: str) -> str:
        return os.path.join(self.folder, safe(library_id) + SUFFIX)

    def read(self, library_id: str, model: str | None = None, dim: int | None = None) -> BookVectors | None:
        """The library's index as kept, or None when there is none, or it was made by another model
        or of another dimension than those given (then it is made again, and written over). A file
        that cannot be read (not a regular file, larger than MAX_FILE_BYTES, damaged, of another
        kind or version) is set aside first, its new name added to set_aside_as."""
        path = self.file_of(library_id)
        try:
            st = os.stat(path)
            index = BookVectors.from_bytes(read_file(path))
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError, UnicodeError, OverflowError, MemoryError):
            if (kept := set_aside_if_can(path)) is not None:
                self.set_aside_as.append(kept)
            return None
        self.known[path] = identity(st)
        if (model is not None and index.model != one_line(model)[:MAX_MODEL_CHARS]) or (
                dim is not None and index.dim != dim):
            return None
        return index

    def write(self, library_id: str, index: BookVectors) -> None:
        """Keep the library's index: written whole, privately, in one step; OSError when it cannot be.
        A file at its path that does not read whole is never written over: it is set aside first
        (OSError, and it is left as it is, when it cannot be). One this object read whole or wrote,
        unchanged since, is not read again to know it."""
        path = self.file_of(library_id)
        try:
            there: tuple | None = identity(os.lstat(path))
        except FileNotFoundError:
            there = None
        if there is not None and there != self.known.get(path) and not is_whole(path):
            kept = set_aside_if_can(path)
            if kept is None:
                raise OSError(f'not written over a file that could not be read: {path}')
            self.set_aside_as.append(kept)
        private_folder(self.folder)
        write_private(path, index.to_bytes())
        try:
            self.known[path] = identity(os.lstat(path))
        except OSError:
            self.known.pop(path, None)

    def remove(self, library_id: str) -> bool:
        """Forget a library's index (the library is gone); whether there was one."""
        try:
            os.remove(self.file_of(library_id))
            return True
        except OSError:
            return False


def identity(st: os.stat_result) -> tuple:
    """Which file a stat is of, and in which state: another file, or this one changed, differs."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode)


def read_file(path: str) -> bytes:
    """The bytes of the regular file at path, at most MAX_FILE_BYTES (files.read_regular), asked for
    no more than its size: a read of the most a file may hold would take that much memory first.
    TooBig, without reading it, when its size is already larger."""
    size = os.stat(path).st_size
    if size > MAX_FILE_BYTES:
        raise TooBig(f'larger than {MAX_FILE_BYTES} bytes: {path}')
    return read_regular(path, max(size, len(MAGIC)))


def is_whole(path: str) -> bool:
    """Whether the file at path is a vectors file that reads whole (so it may be replaced)."""
    try:
        BookVectors.from_bytes(read_file(path))
        return True
    except Exception:
        return False


def forget_all(folder: str | None = None) -> int:
    """Forget every library's index (Forget everything): the folder removed; how many files it held.
    OSError when it cannot be removed."""
    import shutil
    folder = folder or default_folder()
    count = 0
    for _dir, _dirs, names in os.walk(folder):
        count += sum(name.endswith(SUFFIX) for name in names)
    shutil.rmtree(folder, ignore_errors=True)
    if os.path.exists(folder):
        raise OSError(_('{folder} could not be removed.').format(folder=folder))
    return count
