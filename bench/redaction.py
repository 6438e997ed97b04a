#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Redaction stays linear in the text, whatever the text: plain words, and text a hostile
service makes of near-misses of the key in every form Secrets knows (each first character of a
form, or the whole key but its last character, again and again), for which a matcher that
backtracks would take quadratic time.

    python3 bench/redaction.py            (the machine's Python: core/errors.py needs no calibre)

Prints, for each kind of text, the time per MB at 8 MB over the time per MB at 1 MB (about 1
when linear), and the time per MB against plain words; then a stream of one-character pieces
(as a local server flushes every token) through the stream's hold-back (unfinished_start), its
time per character at 200,000 characters over that at 25,000; and the time to make the Secrets
of a 4,000-character token against a 40-character key, per character. Medians of 5 runs.
"""

import builtins
import importlib.util
import statistics
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
KEY = 'sk-live-7f3Qz9/Xa+Lm2Kp0Vw8Rt5Yb'
RUNS = 5


def load_errors():
    builtins.load_translations = lambda: None
    builtins._ = lambda s: s
    spec = importlib.util.spec_from_file_location('bookai_errors', HERE.parent / 'plugin' / 'core' / 'errors.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def median_time(fn, *args):
    times = []
    for _ in range(RUNS):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def texts(size):
    words = 'The keeper climbed the one hundred and twelve steps to light the great brass lamp. '
    near = [KEY[:-1] + ' ', KEY.lower()[:-1] + ' ', '%73%6B%2D%6C%69%76%65%2D%37 ', '&#115;&#107;&#45;&#108; ',
            '\\u0073\\u006b\\u002d\\u006c ', '736b2d6c6976652d37 ', 'c2stbGl2ZS03ZjN ', 's%', '&', '\\', 'sk-']
    hostile = ''.join(near)
    return {'words': (words * (size // len(words) + 1))[:size],
            'near-misses': (hostile * (size // len(hostile) + 1))[:size],
            'first characters': ('s%&\\7c' * (size // 6 + 1))[:size]}


def stream(secrets, text):
    held = ''
    for c in text:
        redacted = secrets.redact(held + c)
        cut = secrets.unfinished_start(redacted)
        held = redacted[cut:]


def main():
    errors = load_errors()
    secrets = errors.Secrets([KEY])
    small, large = texts(1 << 20), texts(8 << 20)
    base = median_time(secrets.redact, small['words'])
    print(f'{"text":18} {"8 MB/1 MB per MB":>17} {"vs words":>9}')
    for kind in small:
        one = median_time(secrets.redact, small[kind])
        eight = median_time(secrets.redact, large[kind]) / 8
        print(f'{kind:18} {eight / one:17.2f} {one / base:9.2f}')
    piece = texts(200_000)['near-misses']
    short = median_time(stream, secrets, piece[:25_000]) / 25_000
    long_ = median_time(stream, secrets, piece) / 200_000
    print(f'stream of one-character pieces, per character at 200,000 over 25,000: {long_ / short:.2f}')
    token = 'eyJ' + 'aB3x' * 1000
    small_made = median_time(errors.Secrets, [KEY]) / len(KEY)
    large_made = median_time(errors.Secrets, [token]) / len(token)
    print(f'making Secrets, per character, 4,003-character token over 32-character key: {large_made / small_made:.2f}')


if __name__ == '__main__':
    main()
