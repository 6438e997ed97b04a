# License: GPLv3 Copyright: the Book AI developers
"""Ranking passages by meaning, with a provider's embeddings: optional, off by default
(the 'retrieval' preference). BM25 (index.py) needs no network and ranks when it is off.

An EmbeddingIndex is made once per book and embedding model: the passages' vectors,
asked of the provider (its embed() asks in batches, Stop honoured between them). It is
small and picklable, for the text cache to keep: one flat array of 32-bit floats, each vector
scaled to length 1, each passage's end offset (for the reader's-position rule) and
the model that made them; no passage text. Its search() answers with passage
numbers; ranked() turns them back into the Index's passages.

ranked() is what scopes.excerpt() calls: BM25 alone, or with embeddings the
reciprocal rank fusion of the two rankings (a passage that either puts high comes
high, one that both put high comes higher).
"""

import heapq
import math
from array import array
from collections.abc import Callable
from operator import mul
from typing import TYPE_CHECKING

from calibre_plugins.bookai.core.cancel import CancelToken
from calibre_plugins.bookai.grounding.index import Index, Passage

if TYPE_CHECKING:  # for types only: ranking and the text cache need no provider code
    from calibre_plugins.bookai.providers.base import AIProviderPlugin

EMBED_CHARS = 1000   # a passage's start is embedded: a small local server takes 512 tokens at most by default
RRF_K = 60           # the usual constant of reciprocal rank fusion
FUSION_DEPTH = 100   # how far down each ranking counts in the fusion


def unit(vector: list[float]) -> list[float]:
    """vector scaled to length 1 (zeros stay zeros)."""
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else [0.0] * len(vector)


def text_for(text: str) -> str:
    """What is embedded of a passage's (or a question's) text."""
    return text[:EMBED_CHARS]


class EmbeddingIndex:
    """The vectors of a book's passages, made by one embedding model."""

    def __init__(self, model: str, vectors: list[list[float]], ends: list[int]):
        """vectors: one per passage, in passage order; ends: each passage's end offset."""
        self.model = model
        self.dim = len(vectors[0]) if vectors else 0
        self.vectors = array('f')
        for v in vectors:
            if len(v) != self.dim:
                raise ValueError(f'vectors of {len(v)} and {self.dim} dimensions')
            self.vectors.extend(unit(v))
        self.ends = array('q', ends)
        if len(self.ends) != len(vectors):
            raise ValueError(f'{len(vectors)} vectors for {len(self.ends)} passages')

    @classmethod
    def build(cls, provider: 'AIProviderPlugin', passages: list[Passage], model: str = '',
              cancel: CancelToken | None = None,
              progress: Callable[[int, int], None] | None = None) -> 'EmbeddingIndex':
        """The passages embedded by provider (with model, else its embedding model), in the
        provider's batches, progress(done, total) called after each batch. Raises
        ProviderError, or Cancelled on Stop."""
        model = model or provider.embedding.model(cancel)
        texts = [text_for(p.text) for p in passages]
        vectors = provider.embed(texts, model, cancel, progress) if texts else []  # no passage: nothing asked
        return cls(model, vectors, [p.end for p in passages])

    def __len__(self) -> int:
        return len(self.ends)

    def matches(self, passages: list[Passage]) -> bool:
        """Whether this index was made for these passages."""
        return len(passages) == len(self.ends) and all(p.end == end for p, end in zip(passages, self.ends))

    def search(self, question_vector: list[float], k: int = 5, until: int | None = None) -> list[int]:
        """The numbers of the k passages nearest in meaning to the question (by cosine
        similarity), best first; with until, only passages that end at or before that
        character offset."""
        if not self.ends:
            return []
        if len(question_vector) != self.dim:
            raise ValueError(f'a question of {len(question_vector)} dimensions for passages of {self.dim}')
        q, dim, view = unit(question_vector), self.dim, memoryview(self.vectors)
        scored = ((sum(map(mul, q, view[i * dim:(i + 1) * dim])), -i) for i, end in enumerate(self.ends)
                  if until is None or end <= until)
        return [-i for score, i in heapq.nlargest(k, scored)]


def embed_question(provider: 'AIProviderPlugin', embedding_index: EmbeddingIndex, question: str,
                   cancel: CancelToken | None = None) -> list[float]:
    """The question's vector, by the model that made embedding_index."""
    return provider.embed([text_for(question)], embedding_index.model, cancel)[0]


def ranked(index: Index, embedding_index: EmbeddingIndex | None, question: str, question_vector: list[float] | None,
           k: int = 50, until: int | None = None) -> list[Passage]:
    """The k passages of index (an index.Index over passages() of the book: a passage's number
    is its place) for question, best first, none ending past until. Without embeddings
    (embedding_index or question_vector None, or an embedding_index made for other passages):
    BM25 alone. With them: the reciprocal rank fusion of BM25 and embeddings."""
    if embedding_index is None or question_vector is None or not embedding_index.matches(index.passages):
        return index.search(question, k=k, until=until)
    depth = max(k, FUSION_DEPTH)
    lexical = [p.number for p in index.search(question, k=depth, until=until)]
    semantic = embedding_index.search(question_vector, k=depth, until=until)
    scores: dict[int, float] = {}
    for ranking in (lexical, semantic):
        for rank, n in enumerate(ranking, 1):
            scores[n] = scores.get(n, 0.0) + 1 / (RRF_K + rank)
    best = sorted(scores, key=lambda n: (-scores[n], n))[:k]
    return [index.passages[n] for n in best]
