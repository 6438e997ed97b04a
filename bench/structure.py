# License: GPLv3 Copyright: the Book AI developers
"""Memory and time bounded by structure, not only bytes (issue 26, findings 7 and 8), before and
after, in the same run: the crafted inputs of the issue and real ones, each read in a process
of its own (forked), its peak resident memory taken from the kernel's high-water mark (VmHWM,
reset first), its time from the clock.

JSON: limits.load_json as it was (the version in git's HEAD, loaded from there) and as it is,
on an image answer of 14 million empty objects (40 MB), a model list of 5.3 million (16 MB), and
real answers: OpenRouter's recorded list repeated to 15 MB, 64 embeddings of 4,096 numbers, a
30 MB image in base64. The baseline is json.loads of the same text.

Books: extract.read_epub as it was and as it is, on an EPUB of 3 million paragraphs (36 KB), of
7.5 million (88 KB), one with a chapter of 1 GB between two good ones, one whose attribute
holds a billion laughs, one with a tag of 20,000 attributes; the baseline is reading calibre's
Quick Start Guide.

JSON also: the costliest shapes ({}, [[[[0]]]], "ab", 1e5), each padded with one long string until
load_json just accepts it: what the bound lets through at most.

Run with: sudo python3 bench/run.py structure
Targets: every crafted input accepted or refused within about 10 times its size in memory
(JSON: the text's size; books: what the book unpacks to, which for a crafted one is far more
than its file), real JSON read as before.

Measured on this machine (calibre 6.13, Python 3.11): the image answer of empty objects, before
5 s and 77x its size (3.1 GB), after refused in 0.6 s at 4x (the text, decoded, its strings taken
out); the model list of empty objects 78x, now refused at 4x; real answers read at 3 to 6x in 2.5
to 3.7 times json.loads' time; the costliest accepted shapes at 5 to 11x (1x of it the text);
the EPUB of 3 million paragraphs before 8.5 s and 1.9 GB, of 7.5 million 24 s and 4.7 GB, the
billion laughs 10 s and 200 MB: now each in 0.02 s and under 5 MB, the rest of the book read.
"""

import base64
import json
import os
import pickle
import random
import subprocess
import sys
import tempfile
import time
import types
import zipfile
from pathlib import Path

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.grounding import extract

MB = 1 << 20
PROJECT = Path(__file__).resolve().parent.parent
FIXTURES = PROJECT / 'tests' / 'providers' / 'fixtures'
GUIDE = Path('/usr/share/calibre/quick_start/eng.epub')


def old_module(path: str, name: str) -> types.ModuleType:
    """The module at path as it is in git's HEAD (before these changes), loaded on its own."""
    source = subprocess.run(['git', '-C', str(PROJECT), 'show', f'HEAD:{path}'], capture_output=True, text=True,
                            check=True).stdout
    module = types.ModuleType(name)
    module.__dict__.update(load_translations=lambda: None, _=lambda text: text)
    exec(compile(source, f'HEAD:{path}', 'exec'), module.__dict__)
    return module


def status(field: str) -> int:
    with open('/proc/self/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1]) * 1024
    return 0


def measured(fn, *args) -> tuple[str, float, int]:
    """(what fn(*args) gave: 'read' or the exception's name, seconds, peak memory growth), in a forked process."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            with open('/proc/self/clear_refs', 'w') as f:
                f.write('5')
            base = status('VmRSS')
            t0 = time.perf_counter()
            try:
                fn(*args)
                outcome = 'read'
            except Exception as e:
                outcome = type(e).__name__
            result = (outcome, time.perf_counter() - t0, status('VmHWM') - base)
        except BaseException as e:
            result = (f'failed: {e}', 0.0, 0)
        os.write(w, pickle.dumps(result))
        os._exit(0)
    os.close(w)
    with os.fdopen(r, 'rb') as f:
        data = f.read()
    os.waitpid(pid, 0)
    return pickle.loads(data) if data else ('killed', 0.0, 0)


def json_inputs(folder: Path) -> list[tuple[str, Path, float | None]]:
    """(what, file, memory per byte it is read with) for each JSON input."""
    random.seed(26)
    made = []

    def write(name, data, per_byte=None):
        path = folder / name
        path.write_bytes(data)
        made.append((name, path, per_byte))

    write('crafted: image answer, 14M empty objects', b'{"created":1,"data":[' + b'{},' * 14_000_000 + b'{}]}',
          limits.IMAGE_JSON_MEMORY_PER_BYTE)
    write('crafted: model list, 5.3M empty objects', b'{"data":[' + b'{},' * 5_300_000 + b'{}]}')
    models = json.loads((FIXTURES / 'openrouter' / 'models-2026-05-01.json').read_bytes())['data']
    out, n = [], 0
    while len(out) < 12_000:  # about 15 MB: under MAX_JSON_BYTES
        for m in models:
            out.append(dict(m, id=f'{m["id"]}-{n}'))
            n += 1
    write('real: OpenRouter list, repeated', json.dumps({'data': out}).encode())
    write('real: 64 embeddings of 4,096 (OpenAI)', json.dumps({'object': 'list', 'data': [
        {'object': 'embedding', 'index': i, 'embedding': [random.uniform(-0.1, 0.1) for _ in range(4096)]}
        for i in range(64)], 'model': 'text-embedding-3-large'}, indent=2).encode())
    write('real: a 30 MB image in base64', json.dumps({'created': 1, 'data': [
        {'b64_json': base64.b64encode(random.randbytes(22 * MB)).decode()}]}).encode(),
        limits.IMAGE_JSON_MEMORY_PER_BYTE)
    for unit in ('{}', '[[[[0]]]]', '"ab"', '1e5'):
        write(f'crafted: {unit} padded to just within the bound', just_within(unit))
    return made


def just_within(unit: str) -> bytes:
    """The costliest document load_json accepts of unit: 8 MB of it, padded with one long string
    until the estimate is just under the bound."""
    values = '[' + ','.join([unit] * (8 * MB // len(unit))) + ']'

    def document(padding):
        return ('{"padding":"' + 'x' * padding + '","values":' + values + '}').encode()

    def accepted(doc):
        return limits.json_memory(doc) <= limits.JSON_MEMORY_PER_BYTE * len(doc) + limits.JSON_MEMORY_FLOOR
    low, high = 0, 256 * MB
    while high - low > 256 * 1024:
        middle = (low + high) // 2
        low, high = (low, middle) if accepted(document(middle)) else (middle, high)
    return document(high)


CONTAINER = ('<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
             '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
             '</rootfiles></container>')
HEAD = (b'<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml"><head><title>t</title>'
        b'</head><body>')
TAIL = b'</body></html>'
GOOD = (HEAD + b'<p>The good chapter.</p>', b'', 0, TAIL)


def epub(path: Path, chapters: list) -> Path:
    """An EPUB of chapters (head, unit, count, tail), each written as it goes."""
    items = ''.join(f'<item id="c{i}" href="c{i}.xhtml" media-type="application/xhtml+xml"/>'
                    for i in range(len(chapters)))
    refs = ''.join(f'<itemref idref="c{i}"/>' for i in range(len(chapters)))
    package = (f'<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0"><metadata/>'
               f'<manifest>{items}</manifest><spine>{refs}</spine></package>')
    with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        zf.writestr('mimetype', 'application/epub+zip', compress_type=zipfile.ZIP_STORED)
        zf.writestr('META-INF/container.xml', CONTAINER)
        zf.writestr('OEBPS/content.opf', package)
        for i, (head, unit, count, tail) in enumerate(chapters):
            info = zipfile.ZipInfo(f'OEBPS/c{i}.xhtml')
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, 'w', force_zip64=True) as f:
                f.write(head)
                if unit:
                    block = unit * ((1 << 20) // len(unit))
                    left = count
                    while left > 0:
                        n = min(left, len(block) // len(unit))
                        f.write(block[:n * len(unit)])
                        left -= n
                f.write(tail)
    return path


def book_inputs(folder: Path) -> list[tuple[str, Path, bool]]:
    """(what, file, whether the old reader is measured too: not when it takes minutes)."""
    entities = '<!ENTITY a0 "ha">' + ''.join(f'<!ENTITY a{i} "{("&a%d;" % (i - 1)) * 10}">' for i in range(1, 9))
    laughs = (f'<?xml version="1.0"?><!DOCTYPE html [{entities}]><html xmlns="http://www.w3.org/1999/xhtml">'
              f'<body><p title="&a8;">Laughs.</p></body></html>').encode()
    return [
        ('real: calibre\'s Quick Start Guide', GUIDE, True),
        ('crafted: 3M paragraphs', epub(folder / 'p3m.epub', [GOOD, (HEAD, b'<p>a</p>', 3_000_000, TAIL), GOOD]), True),
        ('crafted: 7.5M paragraphs', epub(folder / 'p7m.epub', [GOOD, (HEAD, b'<p>a</p>', 7_500_000, TAIL), GOOD]),
         True),
        ('crafted: a chapter of 1 GB', epub(folder / 'gb.epub', [GOOD, (HEAD + b'<p>', b' ', 1024 * MB, b'</p>' + TAIL),
                                                                 GOOD]), True),
        ('crafted: a billion laughs in an attribute', epub(folder / 'laughs.epub', [GOOD, (laughs, b'', 0, b'')]),
         True),
        ('crafted: a tag of 20,000 attributes', epub(folder / 'attrs.epub', [GOOD, (
            HEAD + b'<p ' + b' '.join(b'a%d="v"' % i for i in range(20_000)) + b'>x</p>' + TAIL, b'', 0, b'')]), True),
        ('crafted: a tag of 500,000 attributes', epub(folder / 'attrs5.epub', [GOOD, (
            HEAD + b'<p ' + b' '.join(b'a%d="v"' % i for i in range(500_000)) + b'>x</p>' + TAIL, b'', 0, b'')]),
         False),
    ]


def unpacked(path: Path) -> int:
    with zipfile.ZipFile(path) as zf:
        return sum(i.file_size for i in zf.infolist())


def main() -> int:
    old_limits = old_module('plugin/core/limits.py', 'old_limits')
    old_extract = old_module('plugin/grounding/extract.py', 'old_extract')
    folder = Path(tempfile.mkdtemp(prefix='bookai-bench-'))
    print('JSON: size; json.loads (the baseline); before; after: outcome, seconds, peak memory / size (the text '
          'read from its file is in it: 1x)')
    for what, path, per_byte in json_inputs(folder):
        size = path.stat().st_size

        def load(fn, **kw):
            return lambda: fn(path.read_bytes(), **kw)
        base = measured(load(json.loads))
        before = measured(load(old_limits.load_json))
        after = measured(load(limits.load_json, memory_per_byte=per_byte))
        print(f'  {what}: {size / MB:.1f} MB')
        for name, (outcome, seconds, peak) in (('json.loads', base), ('before', before), ('after', after)):
            print(f'    {name:10} {outcome:14} {seconds:6.2f} s ({seconds / max(base[1], 1e-3):5.2f}x json.loads)  '
                  f'peak {peak / MB:7.1f} MB = {peak / size:5.1f}x its size')
    print('Books: file size, unpacked; before; after: outcome, seconds, peak memory / unpacked size and / file size')
    for what, path, old_too in book_inputs(folder):
        size, inside = path.stat().st_size, unpacked(path)
        print(f'  {what}: {size / 1024:.0f} KB, {inside / MB:.1f} MB unpacked')
        rows = [('after', measured(extract.read_epub, path))]
        if old_too:
            rows.insert(0, ('before', measured(old_extract.read_epub, path)))
        else:
            rows.insert(0, ('before', ('not run: minutes (libxml2 compares each attribute with all others)', 0, 0)))
        for name, (outcome, seconds, peak) in rows:
            print(f'    {name:10} {outcome:14} {seconds:6.2f} s  peak {peak / MB:7.1f} MB = '
                  f'{peak / max(inside, 1):5.2f}x unpacked, {peak / size:7.1f}x the file')
    return 0


if __name__ == '__main__':
    sys.exit(main())
