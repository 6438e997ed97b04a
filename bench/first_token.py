# License: GPLv3 Copyright: the Book AI developers
"""Time to first token and to the whole answer through Book AI's OpenAI-compatible
provider, against a minimal direct HTTP client, on the same llama-server request
(the deterministic tiny model, 64 tokens), 100 alternating pairs (30, as measured
for calibre's own provider, leave the median too noisy at 3 ms to judge 5 %).

Run with: sudo python3 bench/run.py first_token
Target: median overhead to the first token within 5 %.
"""

import http.client
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path('tests').resolve()))
from peers import LlamaServer  # noqa: E402

from calibre_plugins.bookai.core.messages import Message, Role, TextDelta  # noqa: E402
from calibre_plugins.bookai.providers.registry import get_provider  # noqa: E402

PAIRS = 100
TOKENS = 64
FIRST_CONTENT = re.compile(rb'"content":"[^"]')  # the first delta with text in it, as the provider waits for
MESSAGES = [{'role': 'user', 'content': 'Tell me about the sea.'}]


def direct(port, request):
    """The least a client can do with the same request: one connection, one POST of the
    same bytes, reading until the first content and then [DONE]; no parsing."""
    start = time.perf_counter()
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    conn.request('POST', '/v1/chat/completions', request.body, request.headers)
    resp = conn.getresponse()
    first = None
    buf = b''
    while True:
        data = resp.read1(65536)
        if not data:
            break
        buf += data
        if first is None and FIRST_CONTENT.search(buf):
            first = time.perf_counter() - start
        if b'[DONE]' in buf:
            break
    conn.close()
    return first, time.perf_counter() - start


def through_provider(provider):
    messages = [Message(Role.USER, m['content']) for m in MESSAGES]
    start = time.perf_counter()
    first = None
    for chunk in provider.text_chat(messages, max_tokens=TOKENS):
        if first is None and isinstance(chunk, TextDelta):
            first = time.perf_counter() - start
    return first, time.perf_counter() - start


def main():
    # one server thread: on this 2-core machine the client keeps a core of its own, so what
    # is measured is the client, not which process the kernel runs after each send
    with LlamaServer('tiny', alias='tiny', extra_args=('-t', '1')) as server:
        port = int(server.base_url.rsplit(':', 1)[1])
        provider = get_provider('openai_compatible', settings={
            'base_url': server.base_url + '/v1', 'model': 'tiny', 'temperature': 0.0})
        request = provider.chat_request([Message(Role.USER, m['content']) for m in MESSAGES], 'tiny', TOKENS)
        for _i in range(3):  # warm up both paths and the server's prompt cache
            direct(port, request)
            through_provider(provider)
        d_first, d_total, p_first, p_total = [], [], [], []
        for i in range(PAIRS):
            order = (direct, through_provider) if i % 2 == 0 else (through_provider, direct)
            for fn in order:
                f, t = fn(port, request) if fn is direct else fn(provider)
                (d_first if fn is direct else p_first).append(f)
                (d_total if fn is direct else p_total).append(t)
    med = statistics.median
    print(f'llama-server (1 thread), tiny model, {TOKENS} tokens, {PAIRS} alternating pairs')
    print(f'first token: direct {med(d_first) * 1000:6.2f} ms   Book AI {med(p_first) * 1000:6.2f} ms   '
          f'ratio {med(p_first) / med(d_first):.3f}')
    print(f'whole answer: direct {med(d_total) * 1000:6.2f} ms   Book AI {med(p_total) * 1000:6.2f} ms   '
          f'ratio {med(p_total) / med(d_total):.3f}')
    overhead = (med(p_first) / med(d_first) - 1) * 100
    paired = (med([p / d for p, d in zip(p_first, d_first)]) - 1) * 100
    print(f'median overhead to the first token: {overhead:+.1f} % (ratio of medians), {paired:+.1f} % (median of '
          f'the {PAIRS} paired ratios); target: within 5 %')


main()
