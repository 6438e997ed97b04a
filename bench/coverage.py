# License: GPLv3 Copyright: the Book AI developers
"""Coverage of the whole book, up to where you are: for each question of the tests' question set
on the real novel (tests/books/pride-and-prejudice-questions.json, the reader at the end of the
chapter each names), whether every piece of evidence its answer rests on was in the book text
sent, and how many tokens went, and how long building the question took.

Baseline: today's default, the 1,500 tokens of passages that best match the question up to the
place ("position"). Against it, in the same run: "Everything up to where I am" as Book AI sends
it for a model that reads 32,768 tokens at once and for one that reads 200,000 (the whole text
read when it fits, else the best passages within the reader's budget, as conversation.question
decides), and the best passages with a budget of everything the 32k model has room for.

Run with: sudo python3 bench/run.py coverage
"""

import json
import statistics
import sys
import time
from pathlib import Path

from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.question import book_question, room_in
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.grounding.index import Index, passages
from calibre_plugins.bookai.grounding.so_far import tokens_of

BOOKS = Path(__file__).resolve().parent.parent / 'tests' / 'books'
EPUB = BOOKS / 'pride-and-prejudice.epub'
QUESTIONS = BOOKS / 'pride-and-prejudice-questions.json'


def flat(text):
    return ' '.join(text.split())


def main():
    book = read_epub(EPUB)
    index = Index(passages(book))
    questions = [q for q in json.loads(QUESTIONS.read_text(encoding='utf-8'))['questions'] if not q['spoiler_probe']]
    ends = {}
    for p in book.paragraphs:
        ends[p.chapter] = p.start + len(p.text)

    def position_of(q):  # the reader at the end of chapter q['position']
        return min(1.0, (ends[q['position']] + 1) / book.length)

    def room(window, q):
        return room_in(window, Conversation([]).messages_for(q['question'], ' ', spoiler_safe=True))

    ways = {
        'ranked 1,500 (today)': lambda q: book_question(q['question'], 'position', book, index, position_of(q),
                                                        budget=1500),
        'so-far, 32k model': lambda q: book_question(q['question'], 'so-far', book, index, position_of(q),
                                                     budget=1500, room=room(32_768, q)),
        'ranked, all 32k room': lambda q: book_question(q['question'], 'position', book, index, position_of(q),
                                                        budget=room(32_768, q).tokens),
        'so-far, 200k model': lambda q: book_question(q['question'], 'so-far', book, index, position_of(q),
                                                      budget=1500, room=room(200_000, q)),
    }
    print(f'{len(questions)} questions (spoiler probes left out), '
          f'{sum(q["multi_passage"] for q in questions)} needing more than one passage; '
          f'the book: {len(book.paragraphs):,} paragraphs, about {tokens_of(index.passages):,} tokens')
    results = {}
    for name, build in ways.items():
        covered, multi, tokens, times, whole = 0, 0, [], [], 0
        for q in questions:
            t0 = time.perf_counter()
            question = build(q)
            times.append(time.perf_counter() - t0)
            sent = flat(question.passages)
            found = all(flat(e['quote']) in sent for e in q['evidence'])
            covered += found
            multi += found and q['multi_passage']
            tokens.append(tokens_of(question.excerpt.passages) if question.excerpt else 0)
            whole += question.excerpt is not None and question.excerpt.scope == 'so-far'
        results[name] = (covered, multi, statistics.mean(tokens), statistics.median(times), whole)
    base = results['ranked 1,500 (today)']
    n, n_multi = len(questions), sum(q['multi_passage'] for q in questions)
    print(f'{"":24} {"covered":>9} {"multi":>7} {"whole text":>11} {"tokens/q":>9} {"ms/q":>7} '
          f'{"× coverage":>11} {"× tokens":>9}')
    for name, (covered, multi, tokens, ms, whole) in results.items():
        print(f'{name:24} {covered:>4}/{n:<4} {multi:>3}/{n_multi:<3} {whole:>6}/{n:<4} {tokens:>9,.0f} '
              f'{ms * 1000:>7.1f} {covered / max(1, base[0]):>11.2f} {tokens / max(1, base[2]):>9.1f}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
