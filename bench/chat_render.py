# License: GPLv3 Copyright: the Book AI developers
"""Rendering a long streaming answer in the chat: Book AI's ChatView, which renders
finished blocks once and re-renders only the unfinished tail, against the baseline
of re-rendering the whole answer on every update (what calibre's own chat does on
each throttled tick), in the same run, on the same text and the same updates.

The answer is Markdown of 20,000 tokens (one token per chunk: paragraphs, lists,
tables, code), delivered 16 chunks per update (one 40 ms tick of a fast model).
Each update is timed: while it runs the event loop is blocked. A second round
renders on every single chunk, on a shorter answer (5,000 tokens): there the
baseline is exactly "re-render everything on each chunk".

Run with: sudo python3 bench/run.py chat_render
Targets: doubling the answer at most doubles the time (+15 %); no update blocks
the event loop for more than 50 ms. Book AI's times are the median of five runs
(after a warm-up run), the longest update the longest of all five.
"""

import os
import random
import sys
import time

from qt.core import QApplication

from calibre_plugins.bookai.conversation.render import markdown_to_html
from calibre_plugins.bookai.gui.chat import ChatView

TOKENS = 20_000
PER_UPDATE = 16
WORDS = ('the book reader chapter story voice river winter garden letter silence journey memory house '
         'night light city stranger promise war peace friend mother daughter secret island').split()


def answer_tokens(n, seed=7):
    """n tokens of Markdown, each a word with its spacing or a bit of syntax."""
    rnd = random.Random(seed)
    out = []
    section = 0
    while len(out) < n:
        section += 1
        out += [f'## Part {section}', '\n\n']
        for _p in range(3):
            out += [rnd.choice(WORDS) + ' ' for _w in range(60)] + ['**end**.', '\n\n']
        out += [f'- item {i} ' + rnd.choice(WORDS) + '\n' for i in range(6)] + ['\n']
        if section % 3 == 0:
            out += ['| Name | Year | Note |\n', '|---|---|---|\n']
            out += [f'| {rnd.choice(WORDS)} | {1900 + i} | {rnd.choice(WORDS)} |\n' for i in range(8)] + ['\n']
        if section % 4 == 0:
            out += ['```\n'] + [f'line {i} = {rnd.choice(WORDS)}\n' for i in range(6)] + ['```\n\n']
    return out[:n]


class WholeRerender:
    """The baseline: every update renders the whole answer again."""

    def __init__(self, view):
        self.view, self.text = view, []

    def begin(self):
        self.view.setHtml('')

    def add(self, t):
        self.text.append(t)

    def update(self):
        self.view.setHtml(markdown_to_html(''.join(self.text)))

    def end(self):
        self.update()


class Incremental:

    def __init__(self, view):
        self.view, self.text = view, []

    def begin(self):
        self.view.setHtml('')
        self.view.begin_answer('Tell me about the book.', 'model')

    def add(self, t):
        self.text.append(t)
        self.view.add_text(t)

    def update(self):
        self.view.flush()

    def end(self):
        from calibre_plugins.bookai.conversation.conversation import Turn
        turn = Turn('Tell me about the book.', ''.join(self.text), model='model', finish_reason='stop')
        self.view.end_answer(0, turn, 'model')


def run(kind, tokens, per_update=PER_UPDATE):
    app = QApplication.instance()
    view = ChatView()
    view.resize(760, 600)
    view.show()
    app.processEvents()
    r = kind(view)
    r.begin()
    updates = []
    start = time.perf_counter()
    for i, t in enumerate(tokens, 1):
        r.add(t)
        if i % per_update == 0:
            t0 = time.perf_counter()
            r.update()
            updates.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    r.end()  # the answer is complete: counted as an update too
    updates.append(time.perf_counter() - t0)
    total = time.perf_counter() - start
    text = ' '.join(view.toPlainText().split())
    view.close()
    view.deleteLater()
    app.processEvents()
    return total, max(updates), text


def compare(tokens, per_update):
    full = answer_tokens(tokens)
    half = full[:tokens // 2]
    print(f'\n{tokens:,} tokens of Markdown, {len("".join(full)):,} characters, {per_update} token(s) per update')
    results = {}
    for kind in KINDS:
        run(kind, full[:1000], per_update)  # warm up: first-use costs are not what is measured
        for label, part in (('half', half), ('full', full)):
            # Book AI's runs are short: the median of five; the baseline's are long enough alone
            runs = sorted(run(kind, part, per_update) for _r in range(5 if kind is Incremental else 1))
            total, worst, text = runs[len(runs) // 2]
            worst = max(r[1] for r in runs)
            results[kind.__name__, label] = (total, worst, text)
            print(f'  {kind.__name__:14} {len(part):6,} tokens: {total:8.2f} s in all, '
                  f'longest update {worst * 1000:7.1f} ms')
    ours_ratio = results['Incremental', 'full'][0] / results['Incremental', 'half'][0]
    if WholeRerender not in KINDS:
        print(f'  doubling the answer: Book AI x{ours_ratio:.2f} (target <= 2.30)')
        return True
    base_ratio = results['WholeRerender', 'full'][0] / results['WholeRerender', 'half'][0]
    speedup = results['WholeRerender', 'full'][0] / results['Incremental', 'full'][0]
    worst = max(results['Incremental', 'full'][1], results['Incremental', 'half'][1])
    same = results['WholeRerender', 'full'][2] in results['Incremental', 'full'][2]
    print(f'  doubling the answer: Book AI x{ours_ratio:.2f} (target <= 2.30), whole re-render x{base_ratio:.2f}')
    print(f'  longest update: Book AI {worst * 1000:.1f} ms (target <= 50), '
          f'whole re-render {results["WholeRerender", "full"][1] * 1000:.1f} ms')
    print(f'  whole re-render / Book AI, {tokens:,} tokens: {speedup:.1f}x the time')
    print(f'  same text shown at the end: {same}')
    return same


KINDS = [Incremental, WholeRerender]


def main():
    if 'BOOKAI_BENCH_OURS_ONLY' in os.environ:  # a quick look while working on the chat
        KINDS.remove(WholeRerender)
    from calibre.gui2 import Application
    Application([])
    ok = compare(TOKENS, PER_UPDATE)
    ok = compare(5_000, 1) and ok
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())
