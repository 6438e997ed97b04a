# License: GPLv3 Copyright: the Book AI developers
"""What an embeddings service sends for the library's index is hostile (library_search/building.py):
vectors of different lengths, NaN, an infinity, fewer vectors than asked, or a refusal of every text
end the run in words, with the index as it was kept before; a text refused alone is tried again
shorter and, when still refused, left out and said. No real server sends these on demand: a
scripted one does, behind Book AI's real OpenAI-compatible provider."""

import json

import pytest

from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.library_search import building
from calibre_plugins.bookai.library_search.vectors import VectorFiles
from calibre_plugins.bookai.providers.registry import get_provider
from helpers.book_fields import open_library
from helpers.meaning_library import BOOKS, make_meaning_library
from helpers.scripted_server import Reply, ScriptedServer

TWO = BOOKS[:2]


def vectors(*vs):
    return Reply(200, json.dumps({'data': [{'index': i, 'embedding': v} for i, v in enumerate(vs)]}).encode(),
                 [('Content-Type', 'application/json')])


def raw(text):
    return Reply(200, text.encode(), [('Content-Type', 'application/json')])


@pytest.fixture
def lib(tmp_path):
    path, ids = make_meaning_library(tmp_path, books=TWO)
    db = open_library(path)
    yield db, ids
    db.close()


def run(lib, tmp_path, replies):
    db, _ids = lib
    files = VectorFiles(str(tmp_path / 'vectors'))
    with ScriptedServer(replies) as server:
        provider = get_provider('openai_compatible', settings={'base_url': server.url + '/v1', 'model': 'm'})
        e = building.embedder(provider, 'embed-model')
        return building.update_index(db, 'L', e, files, custom=()), files, e


@pytest.mark.parametrize('reply', [
    vectors([1.0, 0.0, 0.0], [1.0, 0.0]),                 # two lengths
    raw('{"data": [{"index": 0, "embedding": [NaN, 1]}, {"index": 1, "embedding": [1, 1]}]}'),
    raw('{"data": [{"index": 0, "embedding": [1e400, 1]}, {"index": 1, "embedding": [1, 1]}]}'),
    vectors([1.0, 0.0]),                                  # one vector for two books
    vectors([], []),                                      # no length
    vectors(*[[0.5] * 5000] * 2),                         # more dimensions than any model makes
])
def test_what_is_not_vectors_ends_the_run_in_words_and_keeps_nothing(lib, tmp_path, reply):
    with pytest.raises(ProviderError) as caught:
        run(lib, tmp_path, [reply])
    assert str(caught.value) and 'Traceback' not in str(caught.value)
    assert not (tmp_path / 'vectors').exists() or not list((tmp_path / 'vectors').iterdir())


def test_a_failed_update_leaves_the_index_kept_before(lib, tmp_path):
    db, ids = lib
    built, files, e = run(lib, tmp_path, [vectors([1.0, 0.0], [0.0, 1.0])])
    assert built.books == 2
    before = open(files.file_of('L'), 'rb').read()
    db.set_field('tags', {ids[0]: ('Changed',)})
    with ScriptedServer([raw('{"data": [{"index": 0, "embedding": [NaN, 1]}]}')]) as server:
        provider = get_provider('openai_compatible', settings={'base_url': server.url + '/v1', 'model': 'm'})
        with pytest.raises(ProviderError):
            building.update_index(db, 'L', building.embedder(provider, 'embed-model'), files, custom=())
    assert open(files.file_of('L'), 'rb').read() == before


def test_a_text_refused_is_tried_shorter_then_left_out_and_said(lib, tmp_path):
    refused = Reply(500, b'{"error": {"message": "input is too large to process"}}', [('Content-Type', 'application/json')])
    built, files, e = run(lib, tmp_path, [refused,                  # the batch of two
                                          vectors([1.0, 0.0]),      # the first book alone
                                          refused, refused])        # the second, then its shorter text
    _db, ids = lib
    assert built.embedded == 1 and built.left_out == [ids[1]] and built.books == 1
    built_again, _files, _e = run(lib, tmp_path, [vectors([0.0, 1.0])])  # tried again next time
    assert built_again.embedded == 1 and built_again.books == 2


def test_a_service_that_refuses_everything_ends_the_run_with_its_words(lib, tmp_path):
    refused = Reply(500, b'{"error": {"message": "the model is not loaded"}}', [('Content-Type', 'application/json')])
    with pytest.raises(ProviderError) as caught:
        run(lib, tmp_path, [refused] * 5)
    assert 'not loaded' in str(caught.value) or caught.value.provider_message
