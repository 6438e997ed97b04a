# License: GPLv3 Copyright: the Book AI developers
"""Coverage with lookups: on the question set of bench/coverage.py (the real novel, the reader at the
end of the chapter each question names), whether every piece of evidence the answer rests on reached
the model, when the model may look things up (the book's tools, clamped to the place) against today's
1,500 tokens of ranked passages and against the text sized to a 32k model, all in the same run.

The model is the demo's, Qwen2.5-Coder-0.5B-Instruct, in llama.cpp's llama-server, answering through
the one path every way in takes (conversation.exchange): what it saw is the passages sent with the
question and the results of the lookups it made. It writes its calls as text, which Book AI reads
(conversation.lookups.calls_written). A 0.5B model chooses its lookups poorly: this shows the
mechanics, the lookups made and the tokens they cost, not what a capable model gets from them.

Run with: sudo python3 bench/run.py lookups_coverage [N]   (N: the first N questions; all by default)

A run of the first 5 questions (bookworm host, 2 cores shared with a full test run; 2026-12-06):

                                       covered  × coverage  tokens/q  × tokens  lookups/q  s/answer  failed
    ranked 1,500 (today)                3/5           1.00     1,242       1.0        0.0       0.0       0
    so-far, 32k model                   5/5           1.67     7,415       6.0        0.0       0.0       0
    ranked 1,500 + lookups (Qwen 0.5B)  3/5           1.00     3,145       2.5        1.2      48.0       0

The 0.5B model looked things up for one question of the five (six searches, for evidence the
ranked passages already held) and answered the other four from the passages alone: with it,
lookups cost tokens and find nothing the ranking missed. The loop, the clamp and the numbering are
what this shows to work; a model that chooses its lookups well is what makes them pay.
"""

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path('tests').resolve()))
from helpers.novel import EPUB, question_set  # noqa: E402
from helpers.peers import LlamaServer  # noqa: E402

from calibre_plugins.bookai.conversation.conversation import Conversation  # noqa: E402
from calibre_plugins.bookai.conversation.exchange import Exchange  # noqa: E402
from calibre_plugins.bookai.conversation.question import book_question, room_in  # noqa: E402
from calibre_plugins.bookai.grounding.extract import read_epub  # noqa: E402
from calibre_plugins.bookai.grounding.index import Index, passages  # noqa: E402
from calibre_plugins.bookai.grounding.so_far import tokens_of  # noqa: E402
from calibre_plugins.bookai.providers.registry import get_provider  # noqa: E402



def flat(text):
    return ' '.join(text.split())


def main():
    book = read_epub(EPUB)
    index = Index(passages(book))
    questions, position_of = question_set(book)
    if len(sys.argv) > 1:
        questions = questions[:int(sys.argv[1])]

    def covered(q, seen):
        return all(flat(e['quote']) in seen for e in q['evidence'])

    rows = {'ranked 1,500 (today)': [], 'so-far, 32k model': [], 'ranked 1,500 + lookups (Qwen 0.5B)': []}
    with LlamaServer('qwen', ctx=32768, extra_args=('--temp', '0', '-n', '300')) as server:
        provider = get_provider('openai_compatible', settings={'base_url': server.base_url + '/v1',
                                                               'model': server.model, 'temperature': 0.0})
        for q in questions:
            position = position_of(q)
            ranked = book_question(q['question'], 'position', book, index, position, budget=1500)
            rows['ranked 1,500 (today)'].append((covered(q, flat(ranked.passages)), tokens_of(ranked.excerpt.passages),
                                                 0, 0.0, None))
            room = room_in(32_768, Conversation([]).messages_for(q['question'], ' ', spoiler_safe=True))
            sized = book_question(q['question'], 'so-far', book, index, position, budget=1500, room=room)
            rows['so-far, 32k model'].append((covered(q, flat(sized.passages)), tokens_of(sized.excerpt.passages),
                                              0, 0.0, None))
            conv = Conversation([])
            exchange = Exchange(conv, provider, ranked, lookups=True)
            t0 = time.perf_counter()
            for chunk in exchange.chunks():
                exchange.take(chunk)
            seconds = time.perf_counter() - t0
            exchange.finish(None)
            turn = conv.turns[-1]
            seen = flat(ranked.passages + ' ' + ' '.join(lookup.text for lookup in turn.lookups))
            prompt = turn.usage.input_tokens if turn.usage is not None else None
            rows['ranked 1,500 + lookups (Qwen 0.5B)'].append((covered(q, seen), prompt or 0, len(turn.lookups),
                                                              seconds, turn.error or None))
            print(f'  {q["id"]}: {len(turn.lookups)} lookups '
                  f'({", ".join(lookup.tool for lookup in turn.lookups)}), covered: {covered(q, seen)}', flush=True)
    n = len(questions)
    base_covered = max(1, sum(r[0] for r in rows['ranked 1,500 (today)']))
    base_tokens = max(1, statistics.mean(r[1] for r in rows['ranked 1,500 (today)']))
    print(f'{n} questions; tokens/q: book text sent for the first two, every request\'s prompt added up with lookups')
    print(f'{"":36} {"covered":>9} {"× coverage":>11} {"tokens/q":>9} {"× tokens":>9} {"lookups/q":>10} '
          f'{"s/answer":>9} {"failed":>7}')
    for name, got in rows.items():
        c = sum(r[0] for r in got)
        tokens = statistics.mean(r[1] for r in got)
        print(f'{name:36} {c:>4}/{n:<4} {c / base_covered:>11.2f} {tokens:>9,.0f} {tokens / base_tokens:>9.1f} '
              f'{statistics.mean(r[2] for r in got):>10.1f} {statistics.median(r[3] for r in got):>9.1f} '
              f'{sum(1 for r in got if r[4]):>7}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
