# License: GPLv3 Copyright: the Book AI developers
"""The command line under a hostile service: what it prints cannot steer the terminal, Ctrl-C
keeps what came, and with no reading place known the scopes that keep to it send nothing.

A scripted server on loopback plays the service (tests/helpers/scripted_server.py): it sends
escape sequences no real server sends on demand, and stalls mid-answer."""

import json
import os
import select
import signal
import subprocess
import time

import pytest

from helpers.books import make_epub, quick_start_epub
from helpers.scripted_server import Reply, ScriptedServer, sse


# OSC 52 (writes the clipboard), OSC 0 (the window's title), CSI 2J (clears the screen), the C1
# CSI, BEL and DEL: each reaches a terminal that obeys it when printed raw.
HOSTILE = '\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned\x07\x1b[2J\x9b31m\x7f'
SHOWN = r'\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned\x07\x1b[2J\x9b31m\x7f'  # how plain output shows it
RAW = ('\x1b', '\x9b', '\x07', '\x7f')
SSE = [('Content-Type', 'text/event-stream')]
STOPPED_SENTENCE = 'Stopped: the part of the answer that came is kept in the history.'
NO_PLACE = 'Book AI does not know where you are in this book'


def chunk(delta=None, finish=None, model='tiny'):
    return json.dumps({'id': 'c1', 'model': model, 'choices': [{'index': 0, 'delta': delta or {},
                                                                 'finish_reason': finish}]})


def answer_stream(model='tiny' + HOSTILE):
    return Reply(200, headers=SSE, chunks=sse(chunk({'reasoning_content': 'Thinking' + HOSTILE}, model=model),
                                              chunk({'content': 'Answer' + HOSTILE}, model=model),
                                              chunk(finish='stop', model=model), '[DONE]'))


def raw_in(text):
    return [c for c in RAW if c in text]


def configure(cli, server):
    r = cli('configure', 'openai_compatible', f'base_url={server.url}/v1', 'model=tiny', 'timeout=30', '--use')
    assert r.returncode == 0, r


def test_the_terminal_never_obeys_the_service(cli, sandbox):
    lib = sandbox.make_library(quick_start_epub())
    models = {'data': [{'id': 'tiny' + HOSTILE, 'object': 'model'}]}
    in_stream_error = Reply(200, headers=SSE, chunks=sse(chunk({'content': 'Partial'}),
                                                         json.dumps({'error': {'message': 'Broken' + HOSTILE}})))
    http_error = Reply(400, json.dumps({'error': {'message': 'Refused' + HOSTILE}}).encode(),
                       headers=[('Content-Type', 'application/json')])
    with ScriptedServer([Reply(200, json.dumps(models).encode(), headers=[('Content-Type', 'application/json')]),
                         answer_stream(), answer_stream(), in_stream_error, http_error,
                         Reply(200, headers=SSE, chunks=sse(chunk({'content': 'x'}, model='m\u2028' + HOSTILE),
                                                           json.dumps({'error': {'message': 'E' + HOSTILE}})))
                         ]) as server:
        configure(cli, server)
        listed = cli('models', 'openai_compatible')
        plain = cli('ask', '--library', lib, '--book', '1', '--prompt', 'Hello?')
        as_json = cli('ask', '--library', lib, '--book', '1', '--prompt', 'Hello?', '--json')
        broken = cli('ask', '--library', lib, '--book', '1', '--prompt', 'Hello?')
        refused = cli('ask', '--library', lib, '--book', '1', '--prompt', 'Hello?')
        broken_json = cli('ask', '--library', lib, '--book', '1', '--prompt', 'Hello?', '--json')
    assert listed.returncode == 0 and listed.stdout == 'tiny' + SHOWN + '\n', listed
    assert plain.returncode == 0 and plain.stdout == 'Answer' + SHOWN + '\n', plain
    assert broken.returncode == 4 and broken.stdout == 'Partial\n' and 'Broken' + SHOWN in broken.stderr, broken
    assert refused.returncode == 4 and 'Refused' + SHOWN in refused.stderr, refused
    for r in (listed, plain, as_json, broken, refused, broken_json):
        assert not raw_in(r.stdout) and not raw_in(r.stderr), r
        assert 'Traceback' not in r.stderr, r
    # --json: every control character escaped (C1, DEL and U+2028 too), and nothing lost
    assert as_json.returncode == 0, as_json
    for r in (as_json, broken_json):
        assert not raw_in(r.stdout) and '\u2028' not in r.stdout
        assert all(ord(c) >= 0x20 and not 0x7f <= ord(c) <= 0x9f for c in r.stdout.replace('\n', ''))
    events = [json.loads(line) for line in as_json.stdout.splitlines()]
    assert [e['text'] for e in events if e['type'] == 'reasoning'] == ['Thinking' + HOSTILE]
    assert [e['text'] for e in events if e['type'] == 'text'] == ['Answer' + HOSTILE]
    # names and a service's words are made inert as they arrive (core/printable.py): --json gives them so
    assert [e['model'] for e in events if e['type'] == 'done'] == ['tiny' + SHOWN]
    errors = [json.loads(line) for line in broken_json.stdout.splitlines() if '"error"' in line]
    assert len(errors) == 1 and 'E' + SHOWN in errors[0]['message'], broken_json
    assert 'E' + SHOWN in broken_json.stderr


def c1_epub(path):
    """A small EPUB whose chapter title and text carry the C1 control CSI (XML allows it, not ESC)."""
    return make_epub(path, ['<h1>The lamp \u009b2J</h1>'
                            '<p>The lamp keeper lit the lamp \u009b31m every night, and the lamp burned until dawn.</p>'
                            '<p>The lamp keeper wrote of the lamp in his log, every night, by the light of the lamp.</p>'])


def test_the_books_text_shown_cannot_steer_the_terminal(cli, sandbox, tmp_path):
    """--show-sent prints the book's passages and chapter titles: their control characters are shown escaped."""
    lib = sandbox.make_library(c1_epub(tmp_path / 'lamp.epub'))
    r = cli('ask', '--library', lib, '--book', '1', '--prompt', 'What does the lamp keeper do?', '--scope', 'book',
            '--show-sent')
    assert r.returncode == 0 and '<book_passages>' in r.stdout, r
    assert not raw_in(r.stdout) and r'\x9b31m' in r.stdout, r


def read_until(proc, wanted, seconds=120):
    """proc's standard output as it comes, until it holds wanted (bytes)."""
    got, deadline = b'', time.monotonic() + seconds
    while wanted not in got and time.monotonic() < deadline:
        if select.select([proc.stdout], [], [], 1)[0]:
            data = os.read(proc.stdout.fileno(), 65536)
            if not data:
                break
            got += data
    return got


@pytest.mark.parametrize('as_json', [False, True])
def test_ctrl_c_stops_the_answer_and_keeps_what_came(cli, sandbox, as_json):
    lib = sandbox.make_library(quick_start_epub())
    words = [f'word{i} ' for i in range(8)]
    # four words, then the server stalls with the connection open, as a slow model does
    stalling = Reply(200, headers=SSE, chunks=sse(*[chunk({'content': w}) for w in words]), stall_after=4)
    with ScriptedServer([stalling]) as server:
        configure(cli, server)
        argv = ['calibre-debug', '-r', 'Book AI', '--', 'ask', '--library', str(lib), '--book', '1',
                '--prompt', 'Tell me a long story.'] + (['--json'] if as_json else [])
        proc = subprocess.Popen(argv, env=sandbox.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            before = read_until(proc, b'word3')
            assert b'word3' in before, before
            proc.send_signal(signal.SIGINT)
            rest, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    out, err = (before + rest).decode(), err.decode()
    assert proc.returncode == 130, (out, err)
    assert STOPPED_SENTENCE in err and 'Traceback' not in err, err
    came = ''.join(words[:4])
    if as_json:
        events = [json.loads(line) for line in out.splitlines()]
        assert ''.join(e['text'] for e in events if e['type'] == 'text') == came
        assert events[-1]['type'] == 'done' and events[-1]['finish_reason'] == 'cancelled', events
    else:
        assert out == came + '\n'
    # kept as a Stop in a window keeps it: the answer so far, marked as stopped
    history = list((sandbox.config / 'plugins' / 'bookai-history').glob('*/*.json'))
    assert len(history) == 1, history
    turn = json.loads(history[0].read_text())['turns'][-1]
    assert turn['question'] == 'Tell me a long story.' and turn['answer'] == came
    assert turn['finish_reason'] == 'cancelled' and not turn['error']


@pytest.mark.parametrize('scope', ['position', 'chapter'])
def test_with_no_saved_place_nothing_is_sent(cli, sandbox, scope):
    """No reading place saved and no --position: the scopes that keep to the place send nothing, and say so."""
    lib = sandbox.make_library(quick_start_epub())
    with ScriptedServer([answer_stream(), answer_stream()]) as server:
        configure(cli, server)
        r = cli('ask', '--library', lib, '--book', '1', '--prompt', 'How do I convert a book?', '--scope', scope)
        shown = cli('ask', '--library', lib, '--book', '1', '--prompt', 'How do I convert a book?', '--scope', scope,
                    '--show-sent')
        assert server.received == []  # not a passage, not even the question
        placed = cli('ask', '--library', lib, '--book', '1', '--prompt', 'How do I convert a book?', '--scope', scope,
                     '--position', '0.5')
        assert placed.returncode == 0 and len(server.received) == 1, placed
        assert b'<book_passages>' in server.received[0]['body']
    for r in (r, shown):
        assert r.returncode == 2 and NO_PLACE in r.stderr and 'Nothing was sent.' in r.stderr, r
        assert '<book_passages>' not in r.stdout and 'Traceback' not in r.stderr
