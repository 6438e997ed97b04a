# License: GPLv3 Copyright: the Book AI developers
"""summaries on the command line (conversation/library_summaries.py, as the library's job): the
chapters read of the real novel (a sentinel paragraph right after the reader's place) summarized
by a real llama-server (the tiny model) and kept; a second run sends nothing; a book with no place
known gets nothing; an online provider gets the text only with --yes."""

import json

from calibre_plugins.bookai.grounding.extract import read_epub
from helpers.peers import LlamaServer, RecordingProxy
from helpers.sentinels import bodies_with_sentinels, epub_with_sentinel, place_before_sentinel

TINY = ('--temp', '0', '-n', '16', '--override-kv', 'llama.context_length=int:65536')


def events(r) -> list[dict]:
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_the_chapters_read_are_summarized_once_and_nothing_after_the_place(cli, sandbox, tmp_path):
    path, _before = epub_with_sentinel(tmp_path / 'pride-and-prejudice.epub', 0.02)
    lib, place = sandbox.make_library(path), place_before_sentinel(read_epub(path))
    with LlamaServer('tiny', alias='tiny', ctx=65536, extra_args=TINY) as server, \
            RecordingProxy(server.base_url) as proxy:
        assert cli('configure', 'openai_compatible', f'base_url={proxy.base_url}/v1', 'model=tiny',
                   'temperature=0', '--use').returncode == 0
        r = cli('summaries', '--library', lib, '--book', '1')  # no place known: nothing
        assert r.returncode == 5 and 'does not know where you are' in r.stderr, r
        assert proxy.chat_requests() == []
        r = cli('summaries', '--library', lib, '--book', '1', '--position', str(place), '--json')
        assert r.returncode == 0, r
        got = events(r)
        assert got[0]['type'] == 'estimate' and got[0]['local'] and got[0]['requests'] >= 2
        assert 'no cost: runs on this computer' in r.stderr
        progress = [e for e in got if e['type'] == 'progress']
        assert progress and progress[-1]['fraction'] == 1 and 'Summarizing ' in progress[0]['text']
        done = got[-1]
        assert done['type'] == 'done' and done['made'] >= 2 and not done['stopped'] and not done['failed']
        sent = len(proxy.chat_requests())
        assert sent == got[0]['requests']
        again = cli('summaries', '--library', lib, '--book', '1', '--position', str(place))
        assert again.returncode == 0 and len(proxy.chat_requests()) == sent, again  # kept: nothing sent
        assert 'have a summary already' in again.stderr and '0 chapter summaries made' in again.stdout
    assert bodies_with_sentinels(proxy.received) == []


def test_an_online_provider_gets_the_text_only_with_yes(cli, sandbox, tmp_path):
    path, _before = epub_with_sentinel(tmp_path / 'pride-and-prejudice.epub', 0.02)
    lib, place = sandbox.make_library(path), place_before_sentinel(read_epub(path))
    key = {'BOOKAI_TEST_KEY': 'xai-test-key-0123456789'}
    # priced from the dated table, at an address where nothing listens: nothing is sent anyway
    assert cli('configure', 'openai', 'base_url=http://127.0.0.1:9/v1', 'model=gpt-4o-mini',
               'api_key=env:BOOKAI_TEST_KEY', '--use', env=key).returncode == 0
    r = cli('summaries', '--library', lib, '--book', '1', '--position', str(place))
    assert r.returncode == 2 and 'Add --yes' in r.stderr and 'Nothing was sent' in r.stderr, r
    assert 'chapters to summarize in 1 book: about' in r.stderr and '(prices of ' in r.stderr, r
