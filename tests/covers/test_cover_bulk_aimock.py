# License: GPLv3 Copyright: the Book AI developers
"""Covers for many books against aimock's own /v1/images/generations, with a delay per image
(aimock's chaos latency), through the real OpenAI-compatible provider: a safety refusal in the
middle is that book's failure in words and the others are made with aimock's image; Stop
half-way leaves exactly what was made and no partial file; requests at once shorten the run.
(The requests at once are counted at a server of the test's own, in test_cover_bulk.py: aimock
does not say how many it answers at once.)"""

import json
import os
import time

import pytest

from calibre_plugins.bookai.core.cancel import CancelToken
from helpers.images import b64, png
from helpers.peers import AiMock

LATENCY_MS = 300


PICTURE = png(30, 40)


@pytest.fixture(scope='module')
def aimock(tmp_path_factory):
    folder = tmp_path_factory.mktemp('aimock-covers')
    # an error answer on the image route needs match.endpoint 'image': without it, aimock lets only
    # image answers match an image request
    (folder / 'covers.json').write_text(json.dumps({'fixtures': [
        {'match': {'userMessage': 'FORBIDDEN', 'endpoint': 'image'}, 'chaos': {'latencyMs': LATENCY_MS},
         'response': {'status': 400, 'error': {
             'message': 'Your request was rejected as a result of our safety system.',
             'type': 'image_generation_user_error', 'code': 'moderation_blocked'}}},
        {'match': {'userMessage': 'Design a book cover'}, 'chaos': {'latencyMs': LATENCY_MS},
         'response': {'image': {'b64Json': b64(PICTURE)}}},
    ]}))
    with AiMock(folder) as server:
        yield server


def provider(aimock):
    from calibre_plugins.bookai.providers.registry import get_provider
    return get_provider('openai_compatible', settings={'base_url': aimock.base_url + '/v1', 'image_model': 'sd-turbo'})


def requests(n: int, forbidden: int = 0):
    from calibre_plugins.bookai.covers.making import BookRequest
    return [BookRequest(i, f'Book {i}', f'Design a book cover for the book "Book {i}".'
                        + (' FORBIDDEN' if i == forbidden else '')) for i in range(1, n + 1)]


def generations(aimock) -> list[dict]:
    return [e for e in aimock.journal() if e['path'] == '/v1/images/generations']


def test_a_refusal_in_the_middle_against_aimock(aimock, tmp_path):
    from calibre_plugins.bookai.covers.bulk import load_run, run_covers
    aimock.reset_journal()
    outcomes = run_covers(requests(5, forbidden=3), provider(aimock), '2:3', 2, str(tmp_path / 'run'), CancelToken(),
                          library_id='lib')
    assert [o.status for o in outcomes] == ['made', 'made', 'failed', 'made', 'made']
    assert outcomes[2].error == ('OpenAI compatible refused the request for safety reasons. The service said: Your '
                                 'request was rejected as a result of our safety system.')
    for o in outcomes:
        if o.status == 'made':
            assert (tmp_path / 'run' / f'{o.book_id}.png').read_bytes() == PICTURE
    journal = generations(aimock)
    assert len(journal) == 5
    assert sorted(e['response']['status'] for e in journal) == [200, 200, 200, 200, 400]
    assert sorted(os.listdir(tmp_path / 'run')) == ['1.png', '2.png', '4.png', '5.png', 'manifest.json']
    assert [o.status for o in load_run(str(tmp_path / 'run')).outcomes] == [o.status for o in outcomes]


def test_stop_half_way_against_aimock(aimock, tmp_path):
    from calibre_plugins.bookai.covers.bulk import run_covers
    aimock.reset_journal()
    cancel = CancelToken()

    def progress(done, total, outcome):
        if done == 3:
            cancel.cancel()
    outcomes = run_covers(requests(10), provider(aimock), '2:3', 2, str(tmp_path / 'run'), cancel, progress)
    made = [o.book_id for o in outcomes if o.status == 'made']
    assert len(made) == 3 and [o.status for o in outcomes].count('stopped') == 7
    assert len(generations(aimock)) <= 3 + 2
    assert sorted(os.listdir(tmp_path / 'run')) == sorted([f'{b}.png' for b in made] + ['manifest.json'])


def test_requests_at_once_shorten_the_run(aimock, tmp_path):
    from calibre_plugins.bookai.covers.bulk import run_covers
    seconds = {}
    for at_once in (1, 4):
        start = time.monotonic()
        outcomes = run_covers(requests(8), provider(aimock), '2:3', at_once, str(tmp_path / f'run{at_once}'),
                              CancelToken())
        seconds[at_once] = time.monotonic() - start
        assert [o.status for o in outcomes] == ['made'] * 8
    assert seconds[1] >= 8 * LATENCY_MS / 1000  # one after another: aimock's delay eight times
    assert seconds[4] < seconds[1] / 2
