# License: GPLv3 Copyright: the Book AI developers
"""Memory while streaming a very long answer through Book AI's provider: the tiny
model on llama-server, asked for more tokens than its context holds, so it
streams until the context is full (about 8,000 tokens, one chunk each). The
consumer throws each chunk away. Sampled every 1,000 chunks with tracemalloc:
all memory of the process, and the part allocated by Book AI's own code.
The baseline, measured in the same run, is the size of the text streamed so
far: what a client that kept everything would hold.

Run with: sudo python3 bench/run.py stream_memory
Target: flat (the provider holds no state that grows with the answer).
"""

import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path('tests').resolve()))
from helpers.peers import LlamaServer  # noqa: E402

from calibre_plugins.bookai.core.messages import Done, Message, Role, TextDelta  # noqa: E402
from calibre_plugins.bookai.providers.registry import get_provider  # noqa: E402

ASK_FOR = 100_000
OURS = [tracemalloc.Filter(True, 'calibre_plugins.bookai*')]  # calibre's loader names the code so


def ours_now() -> int:
    return sum(s.size for s in tracemalloc.take_snapshot().filter_traces(OURS).statistics('filename'))


def main() -> None:
    with LlamaServer('tiny', alias='tiny', ctx=8192) as server:
        provider = get_provider('openai_compatible', settings={
            'base_url': server.base_url + '/v1', 'model': 'tiny', 'temperature': 0.0})
        tracemalloc.start()
        samples, chars, chunks, done = [], 0, 0, None
        for chunk in provider.text_chat([Message(Role.USER, 'Go on and on.')], max_tokens=ASK_FOR):
            if isinstance(chunk, TextDelta):
                chunks += 1
                chars += len(chunk.text)
                if chunks % 1000 == 0:
                    samples.append((chunks, tracemalloc.get_traced_memory()[0], ours_now(), chars))
            elif isinstance(chunk, Done):
                done = chunk
        peak = tracemalloc.get_traced_memory()[1]
        from calibre_plugins.bookai.core.streams import SSEDecoder
        held_on_purpose = [SSEDecoder().feed(b'data: x\n\n') for _i in range(1000)]
        control = ours_now()
        del held_on_purpose
        tracemalloc.stop()
    print(f'streamed {chunks:,} chunks, {chars:,} characters; finish: {done.finish_reason if done else "?"}')
    print('   chunks   whole process   Book AI code   text so far (baseline)')
    for n, total, ours, text in samples:
        print(f'{n:9,} {total / 1024:10.1f} KiB {ours / 1024:10.1f} KiB {text / 1024:12.1f} KiB')
    first, last = samples[0], samples[-1]
    print(f'from the first to the last sample the text grew by {(last[3] - first[3]) / 1024:.1f} KiB; memory held by '
          f'Book AI\'s code changed by {(last[2] - first[2]) / 1024:+.2f} KiB, the whole process by '
          f'{(last[1] - first[1]) / 1024:+.1f} KiB; peak {peak / 1024:.0f} KiB')
    print(f'control: 1,000 decoded events held on purpose show as {control / 1024:.1f} KiB of Book AI\'s code')


main()
