# License: GPLv3 Copyright: the Book AI developers
"""The command line's cover command, in a calibre of its own with a real library: the prompt
shown without sending anything, a cover made by an OpenAI-compatible server saved and put on
the book, the old cover put back by --undo byte for byte; every failure in one sentence, with
its exit code, and nothing written to the library."""

import json

from helpers.books import quick_start_epub
from helpers.images import images_answer, png
from helpers.scripted_server import Reply, ScriptedServer


PICTURE = png(30, 40, 0x60)
IMAGE = Reply(200, json.dumps(images_answer(PICTURE)).encode(), headers=[('Content-Type', 'application/json')])
REFUSED = Reply(400, json.dumps({'error': {'message': 'Rejected by our safety system.', 'type': 'invalid_request_error',
                                           'code': 'moderation_blocked'}}).encode(),
                headers=[('Content-Type', 'application/json')])


def cover_of(sandbox, lib) -> str:
    """The book's cover as calibre has it: its SHA-256, or 'none'."""
    r = sandbox.debug('import hashlib; from calibre.library import db; c = db({!r}).new_api.cover(1); '
                      'print(hashlib.sha256(c).hexdigest() if c else "none")'.format(str(lib)))
    assert r.returncode == 0, r
    return r.stdout.strip().splitlines()[-1]


def test_the_prompt_is_shown_and_nothing_is_sent(cli, sandbox):
    lib = sandbox.make_library(quick_start_epub())
    r = cli('cover', '--library', lib, '1', '--prompt-only')
    assert r.returncode == 0, r
    assert r.stdout.startswith('Design a book cover for the book "Quick Start Guide" by')
    assert 'A vintage 1950s pulp fiction paperback book cover.' in r.stdout  # calibre's default style
    assert 'Title: "Quick Start Guide"' in r.stdout and 'nothing was sent' in r.stdout
    r = cli('cover', '--library', lib, '1', '--prompt-only', '--style', 'thriller / NOIR')
    assert r.returncode == 0 and 'A tense thriller book cover in noir style.' in r.stdout, r
    r = cli('cover', '--library', lib, '1', '--prompt-only', '--style', 'cubism')
    assert r.returncode == 2 and 'There is no cover style "cubism"' in r.stderr and 'Horror (horror)' in r.stderr, r
    r = cli('cover', '--library', lib, '1', '--prompt-only', '--style', 'custom')
    assert r.returncode == 2 and 'has no prompt of its own' in r.stderr, r


def test_a_cover_is_made_saved_put_on_the_book_and_undone(cli, sandbox, tmp_path):
    lib = sandbox.make_library(quick_start_epub())
    original = cover_of(sandbox, lib)
    assert original != 'none'
    r = cli('cover', '--library', lib, '1', '--apply')
    assert r.returncode == 3 and 'No image provider is chosen' in r.stderr and '--provider' in r.stderr, r
    r = cli('cover', '--library', lib, '1', '--apply', '--provider', 'anthropic')
    assert r.returncode == 3 and 'Anthropic cannot make images.' in r.stderr, r
    with ScriptedServer([IMAGE, REFUSED]) as server:
        assert cli('configure', 'openai_compatible', f'base_url={server.url}/v1', 'image_model=sd-turbo').returncode == 0
        out = tmp_path / 'new-cover.png'
        r = cli('cover', '--library', lib, '1', '--apply', '--out', out, '--provider', 'OpenAI compatible')
        assert r.returncode == 0, r
        # said as the cover window says it: a server on this computer costs nothing
        assert 'Model: sd-turbo · This image: no cost: runs on this computer' in r.stdout and 'PNG, 30x40' in r.stdout
        assert 'cover --undo' in r.stdout
        assert out.read_bytes() == PICTURE
        sent = json.loads(server.received[0]['body'])
        assert server.received[0]['path'] == '/v1/images/generations' and sent['model'] == 'sd-turbo'
        assert sent['prompt'].startswith('Design a book cover for the book "Quick Start Guide"')
        replaced = cover_of(sandbox, lib)
        assert replaced not in (original, 'none')
        # a refusal: said in words, exit 4, the library as it was
        r = cli('cover', '--library', lib, '1', '--apply', '--provider', 'openai_compatible')
        assert r.returncode == 4 and 'refused the request for safety reasons' in r.stderr, r
        assert 'Traceback' not in r.stderr and cover_of(sandbox, lib) == replaced
    r = cli('cover', '--library', lib, '1', '--undo')
    assert r.returncode == 0 and 'is back' in r.stdout, r
    assert cover_of(sandbox, lib) == original
    r = cli('cover', '--library', lib, '1', '--undo')
    assert r.returncode == 5 and 'could put back' in r.stderr, r
    assert cover_of(sandbox, lib) == original


def test_bad_usage_is_told_in_one_sentence(cli, sandbox):
    lib = sandbox.make_library(quick_start_epub())
    for args, said in ((('1',), 'Say what to do with the cover'),
                       (('1', '--undo', '--apply'), '--undo puts the old cover back'),
                       (('99', '--prompt-only'), 'The library has no book with the id 99.')):
        r = cli('cover', '--library', lib, *args)
        assert r.returncode == 2 and said in r.stderr and 'Traceback' not in r.stderr, r
    r = cli('cover', '--library', sandbox.root / 'nowhere', '1', '--prompt-only')
    assert r.returncode == 2 and 'There is no calibre library' in r.stderr, r
