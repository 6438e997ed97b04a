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

"so-far, 32k + summaries": the same 32k model with a summary kept for every chapter read before the
one the reader is in (conversation.recap.SoFarSummaries), as "Everything up to where I am" sends them
when the text read does not fit: the summaries, then the chapter being read in full. The summaries are
scripted (about 200 words each, as a model is asked for, citing the chapter's first passage), not a
model's: what this condition measures is which text the model sees, not how good a summary is. So it
has two figures: "covered", every piece of evidence verbatim in what is sent (the chapter being read);
"covered or summarized", every piece either verbatim or in a chapter that went as its summary (what a
faithful summary could carry). Its tokens/q counts the summaries' text too.

Run with: sudo python3 bench/run.py coverage
"""

import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path('tests').resolve()))
from helpers.novel import EPUB, question_set  # noqa: E402

from calibre_plugins.bookai.conversation.conversation import Conversation  # noqa: E402
from calibre_plugins.bookai.conversation.question import book_question, room_in  # noqa: E402
from calibre_plugins.bookai.grounding.extract import read_epub  # noqa: E402
from calibre_plugins.bookai.grounding.index import Index, passages  # noqa: E402
from calibre_plugins.bookai.core.messages import CHARS_PER_TOKEN  # noqa: E402
from calibre_plugins.bookai.grounding.so_far import chapters_read, read_until, tokens_of  # noqa: E402



def flat(text):
    return ' '.join(text.split())


def main():
    book = read_epub(EPUB)
    index = Index(passages(book))
    questions, position_of = question_set(book)  # the reader at the end of the chapter each names

    def room(window, q):
        return room_in(window, Conversation([]).messages_for(q['question'], ' ', spoiler_safe=True))

    from calibre_plugins.bookai.conversation.recap import SoFarSummaries
    from calibre_plugins.bookai.conversation.summaries import (
        BookKey, BookSummaries, Summary, SummaryCache, chapter_segments,
    )
    from calibre_plugins.bookai.providers.registry import get_provider
    scripted = get_provider('openai_compatible', settings={'base_url': 'http://127.0.0.1:9/v1', 'model': 'scripted'})
    cache = SummaryCache(tempfile.mkdtemp(prefix='bookai-bench-summaries-'))
    key = BookKey('bench', 1, 'EPUB')
    kept = BookSummaries(cache, key)
    filler = ' '.join(['The chapter goes on as the people of the story talk, walk and write letters.'] * 14)
    for s in chapter_segments(book, book.length, current=False):  # each chapter, as it is when read to its end
        kept.keep(Summary('openai_compatible/scripted', s.chapter, s.title, s.first, s.last, True, s.end, s.digest,
                          f'In {s.title}, {filler} [{s.first}]', 1.0))
    summarized = {}  # question id -> the chapters that went as summaries

    def with_summaries(q):
        room = room_in(32_768, Conversation([]).messages_for(q['question'], ' ', spoiler_safe=True))
        question = book_question(q['question'], 'so-far', book, index, position_of(q), budget=1500,
                                 room=replace(room, model='scripted'),
                                 summaries=SoFarSummaries(scripted, key, cache=cache))
        until = read_until(book, position_of(q))
        current = max(c.number for c in chapters_read(book, until))
        summarized[q['id']] = set(range(current)) if question.excerpt.scope == 'so-far' and \
            '<chapter_summaries>' in question.passages else set()
        return question

    ways = {
        'ranked 1,500 (today)': lambda q: book_question(q['question'], 'position', book, index, position_of(q),
                                                        budget=1500),
        'so-far, 32k model': lambda q: book_question(q['question'], 'so-far', book, index, position_of(q),
                                                     budget=1500, room=room(32_768, q)),
        'ranked, all 32k room': lambda q: book_question(q['question'], 'position', book, index, position_of(q),
                                                        budget=room(32_768, q).tokens),
        'so-far, 32k + summaries': with_summaries,
        'so-far, 200k model': lambda q: book_question(q['question'], 'so-far', book, index, position_of(q),
                                                      budget=1500, room=room(200_000, q)),
    }
    print(f'{len(questions)} questions (spoiler probes left out), '
          f'{sum(q["multi_passage"] for q in questions)} needing more than one passage; '
          f'the book: {len(book.paragraphs):,} paragraphs, about {tokens_of(index.passages):,} tokens')
    results = {}
    for name, build in ways.items():
        covered, multi, tokens, times, whole, reached = 0, 0, [], [], 0, 0
        for q in questions:
            t0 = time.perf_counter()
            question = build(q)
            times.append(time.perf_counter() - t0)
            sent = flat(question.passages)
            found = all(flat(e['quote']) in sent for e in q['evidence'])
            covered += found
            multi += found and q['multi_passage']
            reached += all(flat(e['quote']) in sent or e['chapter'] in summarized.get(q['id'], ())
                           for e in q['evidence'])
            if name.endswith('summaries'):
                tokens.append(len(question.passages) // CHARS_PER_TOKEN)
            else:
                tokens.append(tokens_of(question.excerpt.passages) if question.excerpt else 0)
            whole += question.excerpt is not None and question.excerpt.scope == 'so-far'
        results[name] = (covered, multi, statistics.mean(tokens), statistics.median(times), whole, reached)
    base = results['ranked 1,500 (today)']
    n, n_multi = len(questions), sum(q['multi_passage'] for q in questions)
    print(f'{"":24} {"covered":>9} {"multi":>7} {"whole text":>11} {"tokens/q":>9} {"ms/q":>7} '
          f'{"× coverage":>11} {"× tokens":>9} {"covered or summarized":>22}')
    for name, (covered, multi, tokens, ms, whole, reached) in results.items():
        print(f'{name:24} {covered:>4}/{n:<4} {multi:>3}/{n_multi:<3} {whole:>6}/{n:<4} {tokens:>9,.0f} '
              f'{ms * 1000:>7.1f} {covered / max(1, base[0]):>11.2f} {tokens / max(1, base[2]):>9.1f} '
              f'{reached:>17}/{n:<4}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
