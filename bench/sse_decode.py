#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Decoding speed: Book AI's SSE decoder against the official openai SDK's, on the
same large recorded-shape stream, both measured in this run.

    python3 bench/sse_decode.py            (the machine's Python, with the SDK
                                            dev/peers.py installs for it)

The stream is 200,000 OpenAI chat-completion chunk events (about 45 MB), read
in 64 KiB pieces (a fast network) and in one-event pieces (a local server that
flushes every token). Prints the median of 5 alternating runs and the ratio
ours/openai: below 1 means ours is faster.
"""

import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EVENTS = 200_000
RUNS = 5


def load_ours():
    core = HERE.parent / 'plugin' / 'core'
    spec = importlib.util.spec_from_file_location('calibre_plugins.bookai.core.limits', core / 'limits.py')
    limits = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(limits)
    for name in ('calibre_plugins', 'calibre_plugins.bookai', 'calibre_plugins.bookai.core'):
        sys.modules.setdefault(name, type(sys)(name))
    sys.modules['calibre_plugins.bookai.core'].limits = limits
    sys.modules['calibre_plugins.bookai.core.limits'] = limits
    spec = importlib.util.spec_from_file_location('bookai_streams', core / 'streams.py')
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SSEDecoder


def load_sdk():
    peers = Path(os.environ.get('BOOKAI_PEERS', '/var/cache/bookai-peers'))
    sys.path.insert(0, str(peers / 'sdk' / f'py{sys.version_info.major}{sys.version_info.minor}'))
    from openai._streaming import SSEDecoder
    import openai
    return SSEDecoder, openai.__version__


def make_stream():
    words = ['The', ' quick', ' brown', ' fox', ' jumps', ' over', ' the', ' lazy', ' dog', '.', ' Grüße', ' 世界']
    events = []
    for i in range(EVENTS):
        chunk = {'id': 'chatcmpl-123', 'object': 'chat.completion.chunk', 'created': 1764700000,
                 'model': 'tiny', 'choices': [{'index': 0, 'delta': {'content': words[i % len(words)]},
                                               'finish_reason': None}]}
        events.append(b'data: ' + json.dumps(chunk, ensure_ascii=False).encode() + b'\n\n')
    events.append(b'data: [DONE]\n\n')
    return events


def pieces(events, size):
    data = b''.join(events)
    return [data[i:i + size] for i in range(0, len(data), size)]


def run_ours(decoder_class, chunks):
    d, n = decoder_class(), 0
    for c in chunks:
        n += len(d.feed(c))
    return n + len(d.close())


def run_sdk(decoder_class, chunks):
    return sum(1 for _ in decoder_class().iter_bytes(iter(chunks)))


def timed(fn, *args):
    start = time.perf_counter()
    n = fn(*args)
    return time.perf_counter() - start, n


def main():
    ours_class = load_ours()
    sdk_class, sdk_version = load_sdk()
    events = make_stream()
    total = sum(map(len, events))
    print(f'stream: {len(events):,} events, {total / 1e6:.1f} MB; openai SDK {sdk_version}; Python {sys.version.split()[0]}')
    worst = 0
    for label, chunks in (('64 KiB reads', pieces(events, 65536)), ('one event per read', events)):
        ours, sdk = [], []
        for _ in range(RUNS):
            t, n1 = timed(run_ours, ours_class, chunks)
            ours.append(t)
            t, n2 = timed(run_sdk, sdk_class, chunks)
            sdk.append(t)
            assert n1 == n2 == len(events), (n1, n2)
        mo, ms = statistics.median(ours), statistics.median(sdk)
        worst = max(worst, mo / ms)
        print(f'{label:20} ours {mo * 1000:8.1f} ms   openai {ms * 1000:8.1f} ms   ratio ours/openai {mo / ms:.2f}')
    print(f'worst ratio: {worst:.2f} ({"at least as fast" if worst <= 1 else "SLOWER than the SDK"})')
    return 0 if worst <= 1 else 1


if __name__ == '__main__':
    sys.exit(main())
