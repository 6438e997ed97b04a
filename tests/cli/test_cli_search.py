# License: GPLv3 Copyright: the Book AI developers
"""`search` and `similar` on the command line (calibre-debug -r "Book AI" -- search|similar), on a
real calibre library, with the real embedding model (all-MiniLM-L6-v2) in llama-server: the index
made on first use, the book a paraphrase describes found first with why, calibre's search
restricting it, --json; the books nearest the ones given; an online provider gets the library's
metadata only with --yes, the estimate said first and nothing sent before."""

import json

import pytest

from helpers.meaning_library import BOOKS, QUERIES, make_meaning_library
from helpers.peers import RecordingProxy


@pytest.fixture
def lib(sandbox):
    path, ids = make_meaning_library(sandbox.root)
    return path, ids


def configured(cli, embed, provider='openai_compatible', url=None, env=None):
    r = cli('configure', provider, f'base_url={url or embed.base_url}/v1', f'model={embed.model}',
            f'embedding_model={embed.model}', *(('api_key=env:BOOKAI_TEST_KEY',) if env else ()), '--use', env=env)
    assert r.returncode == 0, r


def test_a_paraphrase_finds_its_book_first_with_why(cli, embed, lib):
    path, ids = lib
    configured(cli, embed)
    words, i = QUERIES[0]
    r = cli('search', '--library', path, words, '--limit', '3')
    assert r.returncode == 0, r
    assert f'Embedding {len(BOOKS)} books with {embed.model}' in r.stderr
    first, why = r.stdout.splitlines()[:2]
    assert first.startswith(f'{ids[i]}\t{BOOKS[i][0]} by Ada Brine ('), r.stdout
    assert why.strip() in (BOOKS[i][4], f'Title: {BOOKS[i][0]}', 'Tags: Sea, Literary fiction'), r.stdout
    again = cli('search', '--library', path, QUERIES[2][0], '--json', '--limit', '2')
    assert again.returncode == 0 and 'Embedding' not in again.stderr, again  # kept: nothing embedded again
    found = [json.loads(line) for line in again.stdout.splitlines()]
    assert found[0]['id'] == ids[QUERIES[2][1]] and found[0]['title'] == BOOKS[2][0] and len(found) == 2
    restricted = cli('search', '--library', path, words, '--search', 'tags:"=Cookery"', '--json')
    assert [json.loads(line)['id'] for line in restricted.stdout.splitlines()] == [ids[2]], restricted


def test_similar_finds_the_nearest_and_says_what_they_share(cli, embed, lib):
    path, ids = lib
    configured(cli, embed)
    r = cli('similar', '--library', path, str(ids[0]), '--limit', '2')
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert lines[0].startswith(f'{ids[5]}\tReturn to Vesterholm'), r.stdout
    assert 'by Ada Brine' in lines[1] and 'Vesterholm' in lines[1] and 'tagged Sea' in lines[1]
    missing = cli('similar', '--library', path, '999')
    assert missing.returncode == 2 and 'no book with the id 999' in missing.stderr


def test_an_online_provider_gets_the_metadata_only_with_yes(cli, embed, lib):
    path, ids = lib
    key = {'BOOKAI_TEST_KEY': 'sk-test-key-0123456789'}
    with RecordingProxy(embed.base_url) as proxy:
        configured(cli, embed, 'openai', proxy.base_url, key)
        r = cli('search', '--library', path, 'a lighthouse', env=key)
        assert r.returncode == 2 and 'online' in r.stderr and 'Nothing was sent' in r.stderr, r
        assert f'{len(BOOKS)} books' in r.stderr and 'tokens' in r.stderr, r
        assert proxy.received == []
        yes = cli('search', '--library', path, 'a lighthouse', '--yes', '--limit', '1', env=key)
        assert yes.returncode == 0 and yes.stdout.startswith(f'{ids[0]}\t'), yes
        assert any(b'Vesterholm' in body for _m, _p, body in proxy.received)
        later = cli('search', '--library', path, 'wine', '--limit', '1', env=key)  # agreed for this library
        assert later.returncode == 0, later


def test_no_provider_that_embeds_is_said(cli, lib):
    path, _ids = lib
    r = cli('search', '--library', path, 'anything')
    assert r.returncode == 3 and 'embeddings' in r.stderr, r
