# License: GPLv3 Copyright: the Book AI developers
"""Time to first token and to the whole answer through Book AI's OpenAI-compatible
provider, against a minimal direct HTTP client, on the same llama-server request
(the deterministic tiny model, 64 tokens), 100 alternating pairs (30, as measured
for calibre's own provider, leave the median too noisy at 3 ms to judge 5 %).

Run with: sudo python3 bench/run.py first_token
Target: median overhead to the first token within 5 % of the plain urllib client (the
client calibre's own provider was measured against). The bare http.client loop, which
does not even parse the stream, is shown too, as the floor.
"""

import http.client
import re
import statistics
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path('tests').resolve()))
from helpers.peers import LlamaServer  # noqa: E402

from calibre_plugins.bookai.core.messages import Message, Role, TextDelta  # noqa: E402
from calibre_plugins.bookai.core.transport import Request  # noqa: E402
from calibre_plugins.bookai.providers.registry import get_provider  # noqa: E402

if TYPE_CHECKING:
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

# (time to the first content, time to the whole answer), in seconds
Timing = tuple[float | None, float]

PAIRS = 100
TOKENS = 64
FIRST_CONTENT = re.compile(rb'"content":"[^"]')  # the first delta with text in it, as the provider waits for
MESSAGES = [{'role': 'user', 'content': 'Tell me about the sea.'}]


def read_until_done(resp: http.client.HTTPResponse, start: float) -> float | None:
    """Read raw bytes until [DONE], without parsing them; the time the first content came."""
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
            return first


def direct(port: int, request: Request) -> Timing:
    """The least a client can do with the same request: one connection, one POST of the
    same bytes, reading until the first content and then [DONE]; no parsing."""
    start = time.perf_counter()
    conn = http.client.HTTPConnection('127.0.0.1', port, timeout=60)
    conn.request('POST', '/v1/chat/completions', request.body, request.headers)
    first = read_until_done(conn.getresponse(), start)
    conn.close()
    return first, time.perf_counter() - start


def plain_urllib(port: int, request: Request) -> Timing:
    """A plain urllib client, as calibre's own provider was measured against."""
    start = time.perf_counter()
    rq = urllib.request.Request(f'http://127.0.0.1:{port}/v1/chat/completions', data=request.body,
                                headers=request.headers, method='POST')
    with urllib.request.urlopen(rq, timeout=60) as resp:
        first = read_until_done(resp, start)
    return first, time.perf_counter() - start


def through_provider(provider: 'AIProviderPlugin') -> Timing:
    """Book AI's own client: the provider's text_chat(), its transport and stream decoding."""
    messages = [Message(Role.USER, m['content']) for m in MESSAGES]
    start = time.perf_counter()
    first = None
    for chunk in provider.text_chat(messages, max_tokens=TOKENS):
        if first is None and isinstance(chunk, TextDelta):
            first = time.perf_counter() - start
    return first, time.perf_counter() - start


def main() -> None:
    # one server thread: on this 2-core machine the client keeps a core of its own, so what
    # is measured is the client, not which process the kernel runs after each send
    with LlamaServer('tiny', alias='tiny', extra_args=('-t', '1')) as server:
        port = int(server.base_url.rsplit(':', 1)[1])
        provider = get_provider('openai_compatible', settings={
            'base_url': server.base_url + '/v1', 'model': 'tiny', 'temperature': 0.0})
        request = provider.chat_request([Message(Role.USER, m['content']) for m in MESSAGES], 'tiny', TOKENS)
        clients: dict[str, Callable[[], Timing]] = {'plain urllib': lambda: plain_urllib(port, request),
                   'bare http.client': lambda: direct(port, request),
                   'Book AI': lambda: through_provider(provider)}
        for _i in range(3):  # warm up every path and the server's prompt cache
            for fn in clients.values():
                fn()
        first, total = {k: [] for k in clients}, {k: [] for k in clients}
        names = list(clients)
        for i in range(PAIRS):
            for name in names[i % 3:] + names[:i % 3]:  # every order in turn
                f, t = clients[name]()
                first[name].append(f)
                total[name].append(t)
    med = statistics.median
    print(f'llama-server (1 thread), tiny model, {TOKENS} tokens, {PAIRS} rounds, each client in turn')
    for name in clients:
        print(f'{name:17} first token {med(first[name]) * 1000:6.2f} ms   whole answer {med(total[name]) * 1000:6.2f} ms')
    for base in ('plain urllib', 'bare http.client'):
        overhead = (med(first['Book AI']) / med(first[base]) - 1) * 100
        paired = (med([p / d for p, d in zip(first['Book AI'], first[base])]) - 1) * 100
        print(f'overhead to the first token against {base}: {overhead:+.1f} % (ratio of medians), '
              f'{paired:+.1f} % (median of paired ratios)')
    print('target: within 5 % of plain urllib; bare http.client is the floor (it parses nothing)')


main()
