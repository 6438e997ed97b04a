# License: GPLv3 Copyright: the Book AI developers
"""recap on the command line: the story so far of the real novel (with a sentinel paragraph right
after the reader's place) from a real llama-server (the tiny model), since an earlier place, as
--json events; what will be sent and its cost said first; an online provider gets the book's
text only with --yes, once per book; what is wrong said in one sentence."""

import json

from calibre_plugins.bookai.grounding.extract import read_epub
from helpers.peers import LlamaServer, RecordingProxy
from helpers.sentinels import bodies_with_sentinels, epub_with_sentinel, place_before_sentinel

TINY = ('--temp', '0', '-n', '16', '--override-kv', 'llama.context_length=int:65536')


def novel_library(sandbox, tmp_path):
    """A library holding the novel with a sentinel right after the place; (library, the place)."""
    path, _before = epub_with_sentinel(tmp_path / 'pride-and-prejudice.epub', 0.02)
    return sandbox.make_library(path), place_before_sentinel(read_epub(path))


def events(r) -> list[dict]:
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_the_story_so_far_and_since_an_earlier_place(cli, sandbox, tmp_path):
    lib, place = novel_library(sandbox, tmp_path)
    with LlamaServer('tiny', alias='tiny', ctx=65536, extra_args=TINY) as server, \
            RecordingProxy(server.base_url) as proxy:
        assert cli('configure', 'openai_compatible', f'base_url={proxy.base_url}/v1', 'model=tiny',
                   'temperature=0').returncode == 0
        r = cli('recap', '--library', lib, '--book', '1', '--position', str(place), '--json')
        assert r.returncode == 0, r
        got = events(r)
        estimate = got[0]
        assert estimate['type'] == 'estimate' and estimate['mode'] == 'text' and estimate['requests'] == 1
        assert estimate['local'] and estimate['cost'] is None and estimate['input_tokens'] > 3000
        assert 'The whole text read so far goes to the model: about' in r.stderr
        assert 'no cost: runs on this computer' in r.stderr
        assert {e['type'] for e in got} >= {'estimate', 'text', 'usage', 'done'}
        assert len(proxy.chat_requests()) == 1
        (request,) = proxy.chat_requests()
        assert 'Tell me the story so far' in request['messages'][-1]['content']

        since = cli('recap', '--library', lib, '--book', '1', '--position', str(place), '--since', '0.008')
        assert since.returncode == 0, since
        assert 'go as summaries' in since.stderr and 'Summarizing' in since.stderr, since
        made = len(proxy.chat_requests()) - 2  # the summaries, then the recap
        assert made >= 2 and 'I stopped reading this book' in proxy.chat_requests()[-1]['messages'][-1]['content']
        again = cli('recap', '--library', lib, '--book', '1', '--position', str(place), '--since', '0.008',
                    '--json')
        assert again.returncode == 0, again
        assert len(proxy.chat_requests()) == made + 3  # the summaries were kept: only the recap is sent
        assert not [e for e in events(again) if e['type'] == 'progress']
        history = cli('history', 'search', '--library', lib, '--json')
        assert history.returncode == 0 and len(history.stdout.splitlines()) == 3, history
    assert bodies_with_sentinels(proxy.received) == []


def test_an_online_provider_gets_the_text_only_with_yes_once_per_book(cli, sandbox, tmp_path):
    lib, place = novel_library(sandbox, tmp_path)
    key = {'BOOKAI_TEST_KEY': 'xai-test-key-0123456789'}
    # priced from the dated table, at an address where nothing listens: nothing is sent anyway
    assert cli('configure', 'openai', 'base_url=http://127.0.0.1:9/v1', 'model=gpt-4o-mini',
               'api_key=env:BOOKAI_TEST_KEY', env=key).returncode == 0
    r = cli('recap', '--library', lib, '--book', '1', '--position', str(place), '--provider', 'openai')
    assert r.returncode == 2 and 'Add --yes' in r.stderr and 'Nothing was sent' in r.stderr, r
    assert 'about $0.0' in r.stderr and '(prices of ' in r.stderr, r
    with LlamaServer('tiny', alias='tiny', ctx=65536, extra_args=TINY) as server, \
            RecordingProxy(server.base_url) as proxy:
        assert cli('configure', 'grok', f'base_url={proxy.base_url}/v1', 'model=tiny', 'api_key=env:BOOKAI_TEST_KEY',
                   '--use', env=key).returncode == 0
        args = ('recap', '--library', lib, '--book', '1', '--position', str(place))
        r = cli(*args)
        assert r.returncode == 2 and 'online' in r.stderr and 'cost unknown' in r.stderr, r
        assert proxy.chat_requests() == []
        r = cli(*args, '--yes')
        assert r.returncode == 0, r
        sent = len(proxy.chat_requests())
        assert sent >= 1
        r = cli(*args)  # asked once for this book
        assert r.returncode == 0, r
        assert len(proxy.chat_requests()) == sent + 1  # any summaries kept: the recap only
    assert bodies_with_sentinels(proxy.received) == []


def test_what_is_wrong_is_said_in_a_sentence(cli, sandbox, tmp_path):
    lib, place = novel_library(sandbox, tmp_path)
    assert cli('configure', 'openai_compatible', 'base_url=http://127.0.0.1:9/v1', 'model=tiny').returncode == 0
    r = cli('recap', '--library', lib, '--book', '1')
    assert r.returncode == 2 and 'does not know where you are' in r.stderr, r
    r = cli('recap', '--library', lib, '--book', '1', '--position', '1.5')
    assert r.returncode == 2 and '--position is a fraction' in r.stderr, r
    r = cli('recap', '--library', lib, '--book', '1', '--position', '0.2', '--since', '0.3')
    assert r.returncode == 2 and 'earlier place' in r.stderr, r
    r = cli('recap', '--library', lib, '--book', '1', '--series')
    assert r.returncode == 2 and 'not in a series' in r.stderr, r
    r = cli('recap', '--library', lib, '--book', '9', '--position', '0.2')
    assert r.returncode == 2 and 'no book with the id 9' in r.stderr, r
    r = cli('recap', '--library', lib, '--book', '1', '--position', '0')
    assert r.returncode == 5 and 'Nothing of this book has been read' in r.stderr, r
    r = cli('recap', '--library', lib, '--book', '1', '--position', str(place))
    assert r.returncode == 4 and '127.0.0.1:9' in r.stderr and 'Traceback' not in r.stderr, r
