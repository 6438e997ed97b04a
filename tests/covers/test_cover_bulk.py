# License: GPLv3 Copyright: the Book AI developers
"""Covers for many books (covers/bulk.py) through the real OpenAI-compatible provider, against a
server on loopback that speaks OpenAI's /v1/images/generations with a delay per image and
counts the requests it is answering at once: a failure in the middle is that book's, in words,
and the others are made; Stop half-way leaves exactly what was made, the rest 'stopped', no
partial file; never more requests at once than asked; the manifest round-trips, and a damaged
or hostile one is refused in words."""

import json
import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from calibre_plugins.bookai.core.cancel import CancelToken
from helpers.images import images_answer, png


class ImageServer:
    """OpenAI's images API on loopback: each request answered after `latency` seconds with a real
    PNG (its grey from the book named in the prompt), or with the error the prompt asks for
    (REFUSE: a safety refusal, REJECT: a plain 400, NOTANIMAGE: base64 that is no image).
    .most: the most requests it was answering at once; .prompts: what it was asked. hold: the
    first requests wait until that many have come (1.5 s at most), so that a client sending that
    many at once is seen to, however slowly its threads start."""

    def __init__(self, latency: float = 0.25, hold: int = 0) -> None:
        self.latency, self.hold = latency, hold
        self.lock = threading.Condition()
        self.now = self.most = 0
        self.prompts: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get('Content-Length') or 0)) or b'{}')
                prompt = body.get('prompt', '')
                with server.lock:
                    server.now += 1
                    server.most = max(server.most, server.now)
                    server.prompts.append(prompt)
                    server.lock.notify_all()
                    server.lock.wait_for(lambda: len(server.prompts) >= server.hold, timeout=1.5)
                try:
                    time.sleep(server.latency)
                    status, answer = server.answer(self.path, body)
                finally:
                    with server.lock:  # before the answer goes: the client cannot ask again before it has it
                        server.now -= 1
                data = json.dumps(answer).encode()
                try:
                    self.send_response(status)
                    self.send_header('Content-Type', 'application/json')
                    self.send_header('Content-Length', str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client stopped (Stop): as it may
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f'http://127.0.0.1:{self.httpd.server_address[1]}'
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True)

    def answer(self, path: str, body: dict) -> tuple[int, dict]:
        prompt = body.get('prompt', '')
        if path != '/v1/images/generations':
            return 404, {'error': {'message': f'no route {path}', 'type': 'invalid_request_error'}}
        if 'REFUSE' in prompt:
            return 400, {'error': {'message': 'Your request was rejected as a result of our safety system.',
                                   'type': 'invalid_request_error', 'code': 'content_policy_violation'}}
        if 'REJECT' in prompt:
            return 400, {'error': {'message': 'Invalid size.', 'type': 'invalid_request_error', 'code': None}}
        if 'NOTANIMAGE' in prompt:
            return 200, images_answer(b'<html>nope</html>')
        grey = 0x10 + 7 * int(prompt.split('Book ')[1].split('"')[0]) if 'Book ' in prompt else 0x80
        return 200, images_answer(png(24, 32, grey))

    def __enter__(self) -> 'ImageServer':
        self.thread.start()
        return self

    def __exit__(self, *a) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    with ImageServer() as s:
        yield s


def provider_for(server: ImageServer):
    from calibre_plugins.bookai.providers.registry import get_provider
    return get_provider('openai_compatible', settings={'base_url': server.url + '/v1', 'image_model': 'sd-turbo'})


def requests(n: int, special: dict | None = None):
    from calibre_plugins.bookai.covers.making import BookRequest
    special = special or {}
    return [BookRequest(i, f'Book {i}', f'Design a book cover for the book "Book {i}" by A. {special.get(i, "")}')
            for i in range(1, n + 1)]


def run(server, reqs, staging, at_once=2, cancel=None, progress=None, **kw):
    from calibre_plugins.bookai.covers.bulk import run_covers
    return run_covers(reqs, provider_for(server), '2:3', at_once, str(staging), cancel or CancelToken(), progress,
                      **kw)


def staged(folder) -> list[str]:
    return sorted(os.listdir(folder))


def test_a_failure_in_the_middle_is_that_books_in_words(server, tmp_path):
    staging = tmp_path / 'run'
    seen = []
    outcomes = run(server, requests(6, {3: 'REFUSE', 4: 'REJECT', 5: 'NOTANIMAGE'}), staging, at_once=3,
                   progress=lambda done, total, o: seen.append((done, total, o.book_id, o.status)),
                   library_id='lib-1', library_path='/books/Calibre Library')
    assert [o.book_id for o in outcomes] == [1, 2, 3, 4, 5, 6]
    assert [o.status for o in outcomes] == ['made', 'made', 'failed', 'failed', 'failed', 'made']
    assert outcomes[2].error.startswith('OpenAI compatible refused the request for safety reasons.')
    assert 'safety system' in outcomes[2].error
    assert outcomes[3].error.startswith('OpenAI compatible did not accept the request (HTTP 400).')
    assert 'Invalid size.' in outcomes[3].error
    assert 'not an image' in outcomes[4].error
    for o in outcomes:
        assert o.title == f'Book {o.book_id}'
        if o.status == 'made':
            assert o.path == str(staging / f'{o.book_id}.png') and o.error == ''
            data = (staging / f'{o.book_id}.png').read_bytes()
            assert data == png(24, 32, 0x10 + 7 * o.book_id)  # each book's own image
            assert o.cost is None  # a local server says nothing of a price: unknown, never free
        else:
            assert o.path == '' and o.error.isprintable()
    assert staged(staging) == ['1.png', '2.png', '6.png', 'manifest.json']
    assert sorted(b for _d, _t, b, _s in seen) == [1, 2, 3, 4, 5, 6]
    assert [d for d, *_ in seen] == [1, 2, 3, 4, 5, 6] and {t for _d, t, *_ in seen} == {6}
    assert len(server.prompts) == 6


@pytest.mark.parametrize('at_once', [1, 3])
def test_never_more_requests_at_once_than_asked(tmp_path, at_once):
    with ImageServer(hold=at_once + 1) as server:  # were there one more at once, it would be seen
        start = time.monotonic()
        outcomes = run(server, requests(7), tmp_path / 'run', at_once=at_once)
        elapsed = time.monotonic() - start
    assert [o.status for o in outcomes] == ['made'] * 7
    assert server.most == at_once
    assert elapsed >= 0.25 * -(-7 // at_once) - 0.05  # the server's delay, batch after batch


@pytest.mark.parametrize('at_once', [3, 4])
def test_as_many_at_once_as_asked(tmp_path, at_once):
    with ImageServer(hold=at_once) as server:
        outcomes = run(server, requests(7), tmp_path / 'run', at_once=at_once)
    assert [o.status for o in outcomes] == ['made'] * 7 and server.most == at_once


def test_at_once_is_bounded_to_eight(tmp_path):
    with ImageServer(hold=9) as server:
        outcomes = run(server, requests(11), tmp_path / 'run', at_once=50)
    assert [o.status for o in outcomes] == ['made'] * 11 and server.most == 8


@pytest.mark.parametrize('at_once, k', [(1, 2), (3, 3), (2, 1)])
def test_stop_half_way(tmp_path, at_once, k):
    cancel = CancelToken()
    told = []

    def progress(done, total, outcome):
        told.append(outcome)
        if done == k:
            cancel.cancel()
    with ImageServer(latency=0.4) as server:
        start = time.monotonic()
        outcomes = run(server, requests(9), tmp_path / 'run', at_once=at_once, cancel=cancel, progress=progress)
        elapsed = time.monotonic() - start
        asked = len(server.prompts)
    made = [o for o in outcomes if o.status == 'made']
    assert len(made) == k
    assert all(o.status == 'stopped' and o.path == '' and o.error == '' for o in outcomes if o not in made)
    assert len(outcomes) == 9 and len(told) == 9
    assert asked <= k + at_once  # no request was started after Stop
    assert staged(tmp_path / 'run') == sorted([f'{o.book_id}.png' for o in made] + ['manifest.json'])
    # the requests under way ended at Stop, not after their answers came
    assert elapsed < 0.4 * (-(-k // at_once) + 1) + 0.3


def test_stop_before_anything_starts(server, tmp_path):
    cancel = CancelToken()
    cancel.cancel()
    outcomes = run(server, requests(4), tmp_path / 'run', cancel=cancel)
    assert [o.status for o in outcomes] == ['stopped'] * 4 and server.prompts == []
    assert staged(tmp_path / 'run') == ['manifest.json']


def test_a_book_asked_for_twice_is_made_once(server, tmp_path):
    reqs = requests(3)
    outcomes = run(server, reqs + [reqs[0]], tmp_path / 'run')
    assert [o.book_id for o in outcomes] == [1, 2, 3] and len(server.prompts) == 3


# the manifest

def same(a, b) -> bool:
    return (a.book_id, a.title, a.status, a.path, a.error, a.cost, a.model) == (
        b.book_id, b.title, b.status, b.path, b.error, b.cost, b.model)


def test_the_manifest_round_trips(server, tmp_path):
    from calibre_plugins.bookai.covers.bulk import load_run
    staging = tmp_path / 'run'
    before = time.time()
    outcomes = run(server, requests(4, {2: 'REFUSE'}), staging, library_id='lib-1', library_path='/books/Lib')
    loaded = load_run(str(staging))
    assert loaded.library_id == 'lib-1' and loaded.library_path == '/books/Lib' and loaded.finished is True
    assert before - 1 <= loaded.started <= time.time()
    assert len(loaded.outcomes) == 4 and all(same(a, b) for a, b in zip(loaded.outcomes, outcomes))
    assert [o.book_id for o in loaded.made] == [1, 3, 4]
    raw = json.loads((staging / 'manifest.json').read_text())
    assert raw['outcomes'][0]['file'] == '1.png'  # a name in the folder, never a path
    assert load_run(str(tmp_path / 'nothing here')) is None


def test_the_manifest_is_written_after_each_book(server, tmp_path):
    from calibre_plugins.bookai.covers.bulk import load_run
    staging = tmp_path / 'run'
    seen = []
    run(server, requests(3), staging, at_once=1,
        progress=lambda done, total, o: seen.append((done, len(load_run(str(staging)).outcomes),
                                                     load_run(str(staging)).finished)))
    assert seen == [(1, 1, False), (2, 2, False), (3, 3, False)]
    assert load_run(str(staging)).finished


def test_costs_and_models_round_trip(tmp_path):
    from calibre_plugins.bookai.core.images import ImageResult, image_from_bytes
    from calibre_plugins.bookai.core.messages import Cost, Usage
    from calibre_plugins.bookai.covers.bulk import load_run, run_covers

    class Priced:  # a provider that says what each image cost
        def generate_image(self, prompt, aspect='2:3', source=None, model='', cancel=None):
            return ImageResult(image_from_bytes(png(4, 6), 'Priced'), 'pricey-1',
                               Usage(cost=Cost(0.04, 'USD', 'estimated', '2026-11-01')))
    outcomes = run_covers(requests(2), Priced(), '3:4', 2, str(tmp_path / 'run'), CancelToken())
    assert outcomes[0].cost == Cost(0.04, 'USD', 'estimated', '2026-11-01') and outcomes[0].model == 'pricey-1'
    loaded = load_run(str(tmp_path / 'run'))
    assert all(same(a, b) for a, b in zip(loaded.outcomes, outcomes))


def test_a_progress_callback_that_fails_does_not_stop_the_run(server, tmp_path):
    def progress(done, total, outcome):
        raise RuntimeError('a bug of the caller')
    outcomes = run(server, requests(3), tmp_path / 'run', at_once=1, progress=progress)
    assert [o.status for o in outcomes] == ['made'] * 3


def test_an_unexpected_error_is_the_books_in_words(tmp_path):
    from calibre_plugins.bookai.covers.bulk import run_covers

    class Broken:
        def generate_image(self, prompt, aspect='2:3', source=None, model='', cancel=None):
            raise KeyError('surprise')
    (o,) = run_covers(requests(1), Broken(), '3:4', 1, str(tmp_path / 'run'), CancelToken())
    assert o.status == 'failed' and o.error == "The cover could not be made: KeyError: 'surprise'"


def good_manifest(tmp_path):
    folder = tmp_path / 'run'
    folder.mkdir()
    (folder / '1.png').write_bytes(png(4, 6))
    data = {'version': 1, 'library_id': 'lib', 'library_path': '', 'started': 1.0, 'finished': True,
            'outcomes': [{'book_id': 1, 'title': 'One', 'status': 'made', 'file': '1.png', 'error': '',
                          'cost': None, 'model': 'm'},
                         {'book_id': 2, 'title': 'Two', 'status': 'failed', 'file': '', 'error': 'why',
                          'cost': {'amount': 0.5, 'currency': 'USD', 'source': 'reported', 'price_date': ''},
                          'model': ''}]}
    return folder, data


def test_a_good_handmade_manifest_is_read(tmp_path):
    from calibre_plugins.bookai.covers.bulk import load_run
    folder, data = good_manifest(tmp_path)
    data['outcomes'][1]['error'] = 'a\x1b[2Jb\nc\u2028d'  # what a hostile file could hold: shown inert
    (folder / 'manifest.json').write_text(json.dumps(data))
    run = load_run(str(folder))
    assert [o.status for o in run.outcomes] == ['made', 'failed'] and run.outcomes[0].path == str(folder / '1.png')
    assert run.outcomes[1].cost.amount == 0.5
    assert run.outcomes[1].error == 'a\\x1b[2Jb c d'  # shown, not obeyed (core/printable.py)


HOSTILE = {
    'not json': b'{"version": 1, ',
    'not an object': b'[1, 2]',
    'another version': {'version': 2},
    'too deep': b'{"version": 1, "outcomes": ' + b'[' * 100 + b']' * 100 + b'}',
    'outcomes not a list': {'outcomes': {'1': 'x'}},
    'a path out of the folder': {'outcomes.0.file': '../../../etc/passwd'},
    'an absolute path': {'outcomes.0.file': '/etc/passwd'},
    'another book\'s image': {'outcomes.0.file': '2.png'},
    'an image type never staged': {'outcomes.0.file': '1.exe'},
    'a file for a failed book': {'outcomes.1.file': '1.png'},
    'an unknown status': {'outcomes.0.status': 'applied'},
    'a book id that is no id': {'outcomes.0.book_id': True},
    'a negative book id': {'outcomes.0.book_id': -1},
    'a book twice': {'outcomes.1': 'copy of 0'},
    'a title too long': {'outcomes.0.title': 'x' * 5000},
    'a title of the wrong kind': {'outcomes.0.title': ['x']},
    'a negative cost': {'outcomes.1.cost': {'amount': -1}},
    'a cost that is no number': {'outcomes.1.cost': {'amount': 'NaN'}},
    'started missing': {'started': None},
    'finished not a bool': {'finished': 'yes'},
    'too many books': {'outcomes': [{}] * 10_001},
    'too large': b'{"version": 1, "pad": "' + b'x' * (8 * 1024 * 1024) + b'"}',
}


@pytest.mark.parametrize('case', list(HOSTILE))
def test_a_damaged_or_hostile_manifest_is_refused_in_words(tmp_path, case):
    from calibre_plugins.bookai.covers.bulk import UnreadableRun, load_run, staged_runs
    folder, data = good_manifest(tmp_path)
    change = HOSTILE[case]
    if isinstance(change, bytes):
        raw = change
    else:
        for key, value in change.items():
            *path, last = key.split('.')
            target = data
            for p in path:
                target = target[int(p)] if p.isdigit() else target[p]
            if value == 'copy of 0':
                value = dict(data['outcomes'][0])
            target[int(last) if last.isdigit() else last] = value
        raw = json.dumps(data).encode()
    (folder / 'manifest.json').write_bytes(raw)
    with pytest.raises(UnreadableRun) as e:
        load_run(str(folder))
    assert str(e.value).startswith('The covers made earlier cannot be reviewed') and 'damaged' in str(e.value)
    assert staged_runs() == [] or all(r.staging_dir != str(folder) for r in staged_runs())


def test_an_image_gone_since_is_that_books_failure(tmp_path):
    from calibre_plugins.bookai.covers.bulk import load_run
    folder, data = good_manifest(tmp_path)
    (folder / 'manifest.json').write_text(json.dumps(data))
    (folder / '1.png').unlink()
    (folder / '1.png').symlink_to('/etc/passwd')  # nor is a link followed
    o = load_run(str(folder)).outcomes[0]
    assert o.status == 'failed' and o.path == '' and 'no longer in' in o.error


@pytest.mark.real_cover_cache
def test_runs_are_staged_in_the_cache_listed_and_discarded(server):
    from calibre.constants import cache_dir
    from calibre_plugins.bookai.covers.bulk import discard_run, new_staging_dir, staged_runs, staging_root
    assert staging_root() == os.path.join(cache_dir(), 'bookai', 'covers-staged')
    first, second = new_staging_dir(), new_staging_dir()
    assert first != second and os.path.dirname(first) == staging_root() and os.stat(first).st_mode & 0o077 == 0
    run(server, requests(2), first, library_id='lib-a')
    time.sleep(0.01)
    run(server, requests(1), second, library_id='lib-b')
    damaged = new_staging_dir()
    with open(os.path.join(damaged, 'manifest.json'), 'w') as f:
        f.write('{')
    assert [r.library_id for r in staged_runs()] == ['lib-b', 'lib-a']  # newest first, the damaged one left out
    with open(os.path.join(first, 'not ours.txt'), 'w') as f:
        f.write('a file Book AI did not write')
    discard_run(first)
    assert os.listdir(first) == ['not ours.txt']  # only a run's own files are removed
    discard_run(second)
    assert not os.path.exists(second)
    assert [r.library_id for r in staged_runs()] == []
    discard_run(damaged)
    assert not os.path.exists(damaged)
    os.remove(os.path.join(first, 'not ours.txt'))
    discard_run(first)
    assert not os.path.exists(first)


@pytest.mark.parametrize('kind', ['fifo', 'link to a fifo', 'folder'])
def test_a_manifest_that_is_not_a_file_is_refused_at_once(tmp_path, kind):
    """A FIFO in the manifest's place (or a link to one) is never opened to wait on: refused in
    words at once, never hanging Review generated covers… (its folder is read in a thread, which
    would wait for ever)."""
    from pathlib import Path

    from calibre_plugins.bookai.covers.bulk import UnreadableRun, load_run, staged_runs, staging_root
    folder = Path(staging_root()) / '20260101-000000-abcdef'  # where runs are staged, named as a run's folder
    folder.mkdir(parents=True)
    manifest = folder / 'manifest.json'
    if kind == 'fifo':
        os.mkfifo(manifest)
    elif kind == 'link to a fifo':
        os.mkfifo(tmp_path / 'pipe')
        os.symlink(tmp_path / 'pipe', manifest)
    else:
        manifest.mkdir()
    outcome = {}

    def read():
        try:
            load_run(str(folder))
        except UnreadableRun as e:
            outcome['said'] = str(e)
        outcome['listed'] = [r.staging_dir for r in staged_runs()]
    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(30)
    assert not t.is_alive(), 'it hangs'
    assert outcome['said'].startswith('The covers made earlier cannot be reviewed')
    assert str(folder) not in outcome['listed']
