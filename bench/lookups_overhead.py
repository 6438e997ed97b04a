# License: GPLv3 Copyright: the Book AI developers
"""Book AI's own work per lookup (conversation/lookups.py, grounding/book_tools.py): searching the
book, reading around a passage or a place, the contents, each clamped to the reader's place and
numbered, on a book of about 5 MB of text (the tests' novel eight times over, made an EPUB by
calibre's ebook-convert, as bench/recap_incremental.py makes it). The baseline, in the same run:
ranking the passages of today's question (scopes.excerpt, scope "position", the default budget),
which a question does once whether or not the model looks anything up. No model, no network: the
index is built once beforehand, as the question's ranking has built it.

Run with: sudo python3 bench/run.py lookups_overhead
Target (issue 29): the median lookup under 20 ms. Prints figures and ratios; asserts nothing.
"""

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path('tests').resolve()))
from helpers.novel import many_copies_epub  # noqa: E402

from calibre_plugins.bookai.conversation.prompts import numbered_block  # noqa: E402
from calibre_plugins.bookai.core.messages import ToolCall  # noqa: E402
from calibre_plugins.bookai.grounding.book_tools import BookTools  # noqa: E402
from calibre_plugins.bookai.grounding.extract import read_epub  # noqa: E402
from calibre_plugins.bookai.grounding.index import Index, passages  # noqa: E402
from calibre_plugins.bookai.grounding.scopes import excerpt  # noqa: E402

COPIES = 8  # of the novel, for a book of about 5 MB of text
ROUNDS = 5
POSITION = 0.6
QUESTIONS = ('Who is Mr. Collins and why does he visit?', 'What did Darcy say at the ball?',
             'Where does Wickham come from?', 'Why did Jane go to London?', 'What happened at Netherfield?')


def five_mb_epub(folder: Path) -> Path:
    return many_copies_epub(folder, COPIES)


def timed(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        book = read_epub(five_mb_epub(Path(tmp)))
    index = Index(passages(book))
    chars = sum(len(p.text) for p in book.paragraphs)
    print(f'book: {chars / 1e6:.1f} M characters, {len(book.chapters)} chapters, {len(index.passages)} passages; '
          f'place at {POSITION:.0%}')
    baseline, kinds = [], {'search_book': [], 'read_around passage': [], 'read_around position': [], 'contents': []}
    summaries = {i: f'What happens in chapter {i + 1}, in a few sentences [{i}].' for i in range(len(book.chapters))}
    for _r in range(ROUNDS):
        for q in QUESTIONS:
            baseline.append(timed(lambda: excerpt(book, 'position', q, POSITION, index=index)))
            ex = excerpt(book, 'position', q, POSITION, index=index)
            tools = BookTools(book, POSITION, 'position', index, sent=ex.passages, summaries=summaries,
                              numbered=numbered_block)
            number = len(ex.passages) + 1
            calls = [('search_book', {'query': q, 'k': 5}), ('read_around passage', {'passage': 1}),
                     ('read_around position', {'position': POSITION - 0.1, 'words_after': 600}),
                     ('contents', {})]
            for kind, arguments in calls:
                call = ToolCall('c', kind.split()[0], json.dumps(arguments))
                result = None

                def run(call=call, number=number):
                    nonlocal result
                    result = tools.run(call, number)
                kinds[kind].append(timed(run))
                assert result is not None and not result.refused, result
                number += len(result.places)
    every = [t for ts in kinds.values() for t in ts]
    base = statistics.median(baseline)
    print(f'baseline, ranking the question\'s passages: median {base * 1000:.2f} ms')
    for kind, ts in kinds.items():
        m = statistics.median(ts)
        print(f'{kind}: median {m * 1000:.2f} ms ({m / base:.2f}x the baseline), worst {max(ts) * 1000:.2f} ms')
    m = statistics.median(every)
    print(f'per lookup, all kinds: median {m * 1000:.2f} ms ({m / base:.2f}x the baseline); target under 20 ms')


if __name__ == '__main__':
    main()
