# License: GPLv3 Copyright: the Book AI developers
"""Ranking passages by meaning: an EmbeddingIndex of real passages of calibre's Quick
Start Guide, embedded by SmolLM2 through a real llama-server (--embeddings, mean
pooling) and the OpenAI-compatible provider, never past the reader's position.

SmolLM2 is a small chat model, not an embedding model: its vectors tell topics apart
only roughly. The ranking assertions are for questions it does place, and they hold
on every run: a text gets the same vector every time."""

import pickle
from dataclasses import replace

import pytest

from calibre_plugins.bookai.core.cancel import Cancelled, CancelToken
from calibre_plugins.bookai.grounding.embeddings import EmbeddingIndex, embed_question, ranked
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.grounding.index import Index, passages
from calibre_plugins.bookai.providers import operations
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.books import quick_start_epub
from helpers.peers import LlamaServer

CHAPTERS = ('Installing calibre', 'Task 1: Organizing', 'Task 2: Conversion', 'Task 3: The e-book editor',
            'Task 4: Downloading News', 'Task 5: Interacting with e-book readers', 'Task 6: The e-book viewer',
            'Where to get help')
READERS = 5  # the place of the passage about e-book readers
SEND = 'How do I send books to my e-book reader?'


@pytest.fixture(scope='module')
def guide():
    return read_epub(quick_start_epub())


@pytest.fixture(scope='module')
def small_set(guide):
    """The first passage of some length of each of eight chapters, in book order, numbered
    as passages() numbers a book's."""
    everything = passages(guide)
    chosen = [next(p for p in everything if guide.chapters[p.chapter].title == title and len(p.text) >= 300)
              for title in CHAPTERS]
    return [replace(p, number=i) for i, p in enumerate(chosen)]


@pytest.fixture(scope='module')
def smol():
    with LlamaServer('smollm2', alias='smollm2', extra_args=('--embeddings', '--pooling', 'mean')) as server:
        yield server


@pytest.fixture(scope='module')
def provider(smol):
    return get_provider('openai_compatible', settings={'base_url': smol.base_url + '/v1', 'model': smol.model})


@pytest.fixture(scope='module')
def embedded(provider, small_set):
    return EmbeddingIndex.build(provider, small_set)


def title(guide, p):
    return guide.chapters[p.chapter].title


@pytest.mark.parametrize('question, expected', [(SEND, 'Task 5: Interacting with e-book readers'),
                                                ('Where can I get help?', 'Where to get help')])
def test_the_passage_about_the_question_comes_first(guide, provider, small_set, embedded, question, expected):
    order = embedded.search(embed_question(provider, embedded, question), k=len(small_set))
    assert title(guide, small_set[order[0]]) == expected
    assert sorted(order) == list(range(len(small_set)))  # every passage, once


def test_the_same_text_gives_the_same_vector(provider, small_set, embedded):
    assert embedded.model == 'smollm2' and len(embedded) == len(small_set) and embedded.dim > 100
    again = EmbeddingIndex.build(provider, small_set[:3])  # alone, in another batch
    assert again.vectors == embedded.vectors[:3 * embedded.dim]
    own_text = provider.embed([small_set[4].text])[0]
    assert embedded.search(own_text, k=1) == [4]


def test_nothing_past_the_readers_position(provider, small_set, embedded):
    question = embed_question(provider, embedded, SEND)
    until = small_set[READERS].end - 1  # just before the end of the best passage
    found = embedded.search(question, k=len(small_set), until=until)
    assert sorted(found) == list(range(READERS))  # only the passages that end before it
    assert all(small_set[n].end <= until for n in found)
    assert embedded.search(question, k=1, until=small_set[READERS].end) == [READERS]
    fused = ranked(Index(small_set), embedded, SEND, question, k=len(small_set), until=until)
    assert fused and all(p.end <= until for p in fused)


def test_picklable_and_compact(provider, embedded):
    data = pickle.dumps(embedded)
    back = pickle.loads(data)
    question = embed_question(provider, embedded, SEND)
    assert back.search(question, k=8) == embedded.search(question, k=8) and back.model == embedded.model
    assert len(data) < len(embedded) * embedded.dim * 4 + 1000  # 32-bit floats and little else


def test_ranked_fuses_bm25_and_embeddings(guide, provider, small_set, embedded):
    index = Index(small_set)
    question = embed_question(provider, embedded, SEND)
    assert ranked(index, None, SEND, None, k=8) == index.search(SEND, k=8)  # off: BM25 alone
    fused = ranked(index, embedded, SEND, question, k=8)
    assert title(guide, fused[0]) == 'Task 5: Interacting with e-book readers'
    assert len(fused) == 8 and set(index.search(SEND, k=8)) <= set(fused)
    # words the book does not have (another language): BM25 finds nothing, embeddings still rank
    spanish = '¿Cómo envío libros a mi lector?'
    assert index.search(spanish, k=8) == []
    vector = embed_question(provider, embedded, spanish)
    assert ranked(index, embedded, spanish, vector, k=8) == [small_set[n] for n in embedded.search(vector, k=8)]
    stale = EmbeddingIndex('smollm2', [[1.0, 0.0]], [10])  # made for other passages: not used
    assert ranked(index, stale, SEND, [1.0, 0.0], k=8) == index.search(SEND, k=8)


def test_building_tells_its_progress_and_stops(monkeypatch, provider, small_set, embedded):
    monkeypatch.setattr(operations, 'EMBED_BATCH', 3)  # the batches the provider asks in
    seen = []
    built = EmbeddingIndex.build(provider, small_set, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(3, 8), (6, 8), (8, 8)] and built.vectors == embedded.vectors
    seen.clear()
    cancel = CancelToken()

    def progress(done, total):
        seen.append((done, total))
        cancel.cancel()  # Stop, once the first batch is in
    with pytest.raises(Cancelled):
        EmbeddingIndex.build(provider, small_set, cancel=cancel, progress=progress)
    assert seen == [(3, 8)]


def test_the_books_search_tool_searches_by_meaning_too(guide, provider, small_set, embedded):
    """The model's search_book lookup ranks by meaning as the question's passages were ranked
    (book_question(embed=embedder(...))): words the book does not have still find passages by their
    meaning, and never one past the reader's place."""
    import json
    from calibre_plugins.bookai.conversation.question import book_tools, embedder
    from calibre_plugins.bookai.core.messages import ToolCall
    index = Index(small_set)
    call = ToolCall('1', 'search_book', json.dumps({'query': '¿Cómo envío libros a mi lector?', 'k': 8}))
    by_words = book_tools(guide, None, 'book', index, None).run(call, 1)
    assert by_words.places == () and 'No passage' in by_words.text
    found = book_tools(guide, None, 'book', index, None, None, embedded, embedder(provider, embedded)).run(call, 1)
    assert not found.refused and len(found.places) == len(small_set)
    place = (small_set[READERS].end - 1) / guide.length  # just before the end of the passage about readers
    clamped = book_tools(guide, place, 'position', index, None, None, embedded,
                         embedder(provider, embedded)).run(call, 1)
    assert len(clamped.places) == READERS and all(p.position < place for p in clamped.places)
    assert small_set[READERS].text not in clamped.text
