# License: GPLv3 Copyright: the Book AI developers
"""The E-book viewer's start with Book AI installed, against the same viewer without
it, in the same run: from starting the process to the book's first page shown
(tests/hosts/probes/viewer.py, headless), on calibre's Quick Start Guide.
Rounds alternate between the two configs; medians are compared.

Run with: sudo python3 bench/run.py viewer_start [--host HOST]
Target: the viewer starts as fast as without the plugin (nothing AI is imported
until the panel is shown).
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROUNDS = 10
PROBE = Path('tests/hosts/probes/viewer.py').resolve()
BOOK = Path('/usr/share/calibre/quick_start/eng.epub')


def start_once(config, book):
    out = Path(tempfile.mkstemp(suffix='.json')[1])
    env = dict(os.environ, CALIBRE_CONFIG_DIRECTORY=str(config), BOOKAI_PROBE_OUT=str(out),
               BOOKAI_PROBE_T0=repr(time.time()), QT_QPA_PLATFORM='offscreen')
    subprocess.run(['calibre-debug', '-e', str(PROBE), str(book)], env=env, capture_output=True, timeout=120)
    report = json.loads(out.read_text())
    out.unlink()
    return report['rendered_after'], report.get('has_panel')


def main():
    with_plugin = Path(os.environ['CALIBRE_CONFIG_DIRECTORY'])  # run.py installed the plugin here
    without = Path(tempfile.mkdtemp())
    work = Path(tempfile.mkdtemp())
    book = work / 'book.epub'
    shutil.copy(BOOK, book)
    for config in (with_plugin, without):  # first runs make caches: not measured
        start_once(config, book)
    times = {'with': [], 'without': []}
    panels = set()
    for _r in range(ROUNDS):
        for name, config in (('without', without), ('with', with_plugin)):
            t, has_panel = start_once(config, book)
            times[name].append(t)
            if name == 'with':
                panels.add(has_panel)
    a, b = statistics.median(times['without']), statistics.median(times['with'])
    print(f'E-book viewer, process start to first page shown, {ROUNDS} rounds each, medians:')
    print(f'  without Book AI: {a:.3f} s   (all: {", ".join(f"{t:.2f}" for t in times["without"])})')
    print(f'  with Book AI:    {b:.3f} s   (all: {", ".join(f"{t:.2f}" for t in times["with"])})')
    print(f'  with / without: {b / a:.3f} ({(b / a - 1) * 100:+.1f} %); the panel was added in every run: '
          f'{panels == {True}}')
    return 0 if panels == {True} else 1


if __name__ == '__main__':
    sys.exit(main())
