# License: GPLv3 Copyright: the Book AI developers
"""The books' vectors in memory (library_search/vectors.py): exact results on small hand-made
vectors, a search restricted to some books, a book's vector replaced and removed, what changed
since, and every vector, id and stamp it refuses, in words."""

import math
import random

import pytest

from calibre_plugins.bookai.library_search import vectors as V
from calibre_plugins.bookai.library_search.vectors import BadVector, BookVectors, Stamp

AXES = {1: [1, 0, 0, 0], 2: [0, 1, 0, 0], 3: [0, 0, 1, 0], 4: [1, 1, 0, 0], 5: [0, 0, 0, -2]}


def index_of(books=AXES, dim=4):
    index = BookVectors(dim, 'local/embed')
    for book_id, v in books.items():
        index.put(book_id, v)
    return index


def ids(found):
    return [b for b, _s in found]


def test_the_nearest_books_best_first_with_their_cosines():
    index = index_of()
    found = index.search([2, 0.4, 0, 0], k=3)
    assert ids(found) == [1, 4, 2]
    cos = [1 / math.hypot(1, 0.2), 1.2 / math.hypot(1, 0.2) / math.sqrt(2), 0.2 / math.hypot(1, 0.2)]
    assert [s for _b, s in found] == pytest.approx(cos, abs=0.01)
    found = index.search([0, 0, 0, 1], k=5)
    assert found[-1][0] == 5 and found[-1][1] == pytest.approx(-1.0, abs=0.01)  # pointing away: last
    assert index.search([0, 0, 0, 1], k=0) == []
    assert len(index.search([1, 0, 0, 0], k=100)) == 5


def test_the_same_results_whether_the_signatures_choose_the_candidates_or_not():
    rng = random.Random(7)
    books = {b: [rng.gauss(0, 1) for _d in range(32)] for b in range(1, 301)}
    index = index_of(books, 32)
    for _q in range(10):
        q = [rng.gauss(0, 1) for _d in range(32)]
        exact = index.exact_search(q, 10)
        assert index.search(q, 10, candidates=1000) == exact  # every book a candidate: exactly the scan
        truth = sorted(books, key=lambda b: -sum(x * y for x, y in zip(q, V.unit_vector(books[b], 32))))[:10]
        assert set(ids(exact)) == set(truth)  # the 16-bit values rank as the floats do
        assert len(set(ids(index.search(q, 10, candidates=100))) & set(ids(exact))) >= 7


def test_a_search_restricted_to_some_books():
    index = index_of()
    assert ids(index.search([1, 0.2, 0.1, -0.05], k=3, allowed={2, 3, 5})) == [2, 3, 5]
    assert ids(index.search([1, 0.1, 0, 0], k=2, allowed=[4, 2, 99])) == [4, 2]  # a book it has not: passed over
    assert index.search([1, 0, 0, 0], allowed=[]) == []
    assert ids(index.search([1, 0.2, 0.1, 0], k=10, allowed=range(1, 4))) == [1, 2, 3]
    rng = random.Random(3)
    books = {b: [rng.gauss(0, 1) for _d in range(16)] for b in range(1, 1001)}
    big = index_of(books, 16)
    allowed = set(range(2, 1001, 2))
    q = books[500]
    for candidates in (10, 100, 2000):  # fewer allowed than candidates, and more
        found = big.search(q, 10, allowed=allowed, candidates=candidates)
        assert found and set(ids(found)) <= allowed and found[0][0] == 500
    assert big.search(q, 10, allowed=allowed, candidates=2000) == big.exact_search(q, 10, allowed=allowed)


def test_a_book_replaced_and_removed():
    index = index_of()
    index.put(1, [0, 0, 1, 0], Stamp(5.0, 'a' * 32))
    assert len(index) == 5 and ids(index.search([0, 0, 1, 0], k=2)) in ([1, 3], [3, 1])
    assert index.stamp(1) == Stamp(5.0, 'a' * 32) and index.stamp(2) == Stamp()
    assert index.remove(1) and not index.remove(1) and 1 not in index and len(index) == 4
    assert index.stamp(1) is None and index.vector(1) is None
    assert ids(index.search([0, 0, 1, 0], k=1)) == [3]
    index.remove(5)  # the last slot
    index.remove(2)  # a slot the last book moves into
    assert sorted(index.book_ids()) == [3, 4] and len(index.codes) == 2 * 4 and len(index.digests) == 2 * 16
    assert ids(index.search([1, 1, 0, 0], k=5)) == [4, 3]
    assert index.vector(4) == pytest.approx([math.sqrt(0.5), math.sqrt(0.5), 0, 0], abs=0.01)
    index.put(7, [0, 1, 0, 0])
    assert ids(index.search([0, 1, 0, 0], k=1)) == [7]
    for b in index.book_ids():
        index.remove(b)
    assert len(index) == 0 and index.search([1, 0, 0, 0]) == [] and not index.codes and not index.signatures


def test_what_changed_since():
    index = BookVectors(2)
    index.put(1, [1, 0], Stamp(10.0, '1' * 32))
    index.put(2, [0, 1], Stamp(20.0, '2' * 32))
    index.put(3, [1, 1], Stamp(30.0, '3' * 32))
    now = {1: Stamp(10.0, '1' * 32), 2: Stamp(21.0, '2' * 32), 3: Stamp(30.0, '9' * 32), 4: Stamp(40.0, '4' * 32)}
    assert index.changed(now) == ([2, 3, 4], [])
    assert index.changed({1: Stamp(10.0)}) == ([], [2, 3])  # a digest not given: the time alone


@pytest.mark.parametrize('vector, words', [
    ([1, 2, 3], 'of 3 numbers is not one of this index'),
    ([1, 2, 3, 4, 5], 'of 5 numbers'),
    ([], 'of 0 numbers'),
    ([1, math.nan, 0, 0], 'no number (NaN) or an infinity'),
    ([1, math.inf, 0, 0], 'no number (NaN) or an infinity'),
    ([-math.inf, 0, 0, 0], 'no number (NaN) or an infinity'),
    ([0, 0, 0, 0], 'points nowhere'),
    ([0.0, -0.0, 0, 0], 'points nowhere'),
    (['a', 0, 0, 0], 'not a number'),
    ('abcd', 'not a number'),
    ([None, 1, 2, 3], 'not a number'),
    ([10 ** 400, 0, 0, 0], 'not a number'),
    (iter(range(1, 10 ** 9)), 'of 4097 numbers'),  # an endless vector is not read to its end
])
def test_bad_vectors_are_refused_in_words(vector, words):
    index = index_of()
    before = (index.book_ids(), bytes(index.codes), list(index.signatures))
    for call in (lambda: index.put(9, vector), lambda: index.put(1, vector), lambda: index.search(vector)):
        with pytest.raises(BadVector) as e:
            call()
        assert words in str(e.value)
    assert (index.book_ids(), bytes(index.codes), list(index.signatures)) == before  # nothing changed


def test_huge_and_tiny_values_are_directions_as_any_other():
    index = BookVectors(3)
    index.put(1, [1e308, 1e308, 0])
    index.put(2, [5e-324, 0, 0])
    assert index.vector(1) == pytest.approx([math.sqrt(0.5), math.sqrt(0.5), 0], abs=0.01)
    assert index.vector(2) == pytest.approx([1, 0, 0], abs=0.01)


@pytest.mark.parametrize('book_id', [0, -1, 2 ** 62, 1.0, '1', None, True])
def test_bad_book_ids_are_refused(book_id):
    with pytest.raises(BadVector, match='not the id of a book'):
        index_of().put(book_id, [1, 0, 0, 0])


@pytest.mark.parametrize('stamp, words', [
    (Stamp(math.nan), 'not a time'), (Stamp(-1.0), 'not a time'), (Stamp(1e12), 'not a time'),
    (Stamp(1.0, 'xyz'), 'not the digest'), (Stamp(1.0, 'A' * 32), 'not the digest'),
])
def test_bad_stamps_are_refused(stamp, words):
    with pytest.raises(BadVector, match=words):
        index_of().put(9, [1, 0, 0, 0], stamp)


def test_the_bounds_on_books_and_dimensions(monkeypatch):
    for dim in (0, -3, V.MAX_DIMENSION + 1, 2.0):
        with pytest.raises(BadVector, match='dimensions are not taken'):
            BookVectors(dim)
    assert BookVectors(V.MAX_DIMENSION).most_books() == V.MAX_VALUES // V.MAX_DIMENSION
    assert BookVectors(8).most_books() == V.MAX_BOOKS
    monkeypatch.setattr(V, 'MAX_BOOKS', 3)
    index = index_of({1: [1, 0], 2: [0, 1], 3: [1, 1]}, 2)
    with pytest.raises(BadVector, match='holds 3 books, the most it takes'):
        index.put(4, [1, 0])
    index.put(3, [1, -1])  # replacing one is no more books
    assert len(index) == 3
