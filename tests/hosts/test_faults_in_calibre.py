# License: GPLv3 Copyright: the Book AI developers
"""Faults in calibre's real processes while an answer streams from llama-server: the library
switched, calibre quit, the E-book viewer closed."""

import json
import subprocess
import time

import pytest

from helpers.books import library_epub
from helpers.peers import LlamaServer
from helpers.sandbox import PROBES, tracebacks

# the bound, from the quit to the end of the process
QUIT_SECONDS = 2.0


@pytest.fixture(scope='module')
def endless():
    """An answer that goes on for longer than any of these tests waits: the tiny model never ends
    its turn, and the context is large enough for tens of seconds of it."""
    with LlamaServer('tiny', alias='tiny', ctx=32768, extra_args=('--temp', '0', '-n', '100000')) as server:
        yield server


def configure(sandbox, server):
    r = sandbox.run(['calibre-debug', '-r', 'Book AI', '--', 'configure', 'openai_compatible',
                     f'base_url={server.base_url}/v1', 'model=tiny', 'temperature=0'])
    assert r.returncode == 0, r


def run_probe(sandbox, name, args, **env):
    """A probe's report (with its process's returncode), its output, and the time its process ended
    (waited for as a process: helpers it started may hold its output open longer)."""
    out = sandbox.root / f'probe-{name}.json'
    out.unlink(missing_ok=True)
    logs = sandbox.root / f'probe-{name}.out'
    with open(logs, 'w') as f:
        proc = subprocess.Popen(['calibre-debug', '-e', str(PROBES / f'{name}.py')] + [str(a) for a in args],
                                env=sandbox.env(BOOKAI_PROBE_OUT=out, **env), stdout=f, stderr=subprocess.STDOUT)
        proc.wait(timeout=240)
    ended = time.time()
    return dict(json.loads(out.read_text()), returncode=proc.returncode), logs.read_text(), ended


def kept(sandbox, library_id=None):
    """The conversations in the History, of one library or all."""
    folder = sandbox.config / 'plugins' / 'bookai-history'
    files = (folder / library_id).glob('*.json') if library_id else folder.glob('*/*.json')
    return [json.loads(p.read_text()) for p in files]


def assert_kept_stopped(conversations, chars_before):
    """One conversation, whose answer was stopped with what had come kept."""
    (conv,) = conversations
    (turn,) = conv['turns']
    assert turn['question'] == 'Go on and on.' and turn['finish_reason'] == 'cancelled', turn
    assert len(turn['answer']) >= chars_before > 0 and not turn['error']


def test_library_switched_while_an_answer_streams(sandbox, plugin_zip, library, endless, tmp_path):
    """The discussion belongs to the library it was started in: its window (and the History's) close
    before calibre switches, the answer stops, and what came is kept in that library's History.
    calibre's status bar says so. Nothing is left running, nothing of it reaches the new library."""
    other = tmp_path / 'other library'
    r = sandbox.run(['calibredb', '--with-library', other, 'add', '--empty', '--title', 'Another book'])
    assert r.returncode == 0, r
    sandbox.install(plugin_zip)
    configure(sandbox, endless)
    log_start = len(endless.log())
    report, output, ended = run_probe(sandbox, 'main_window', [library], BOOKAI_PROBE_SWITCH_TO=other)
    assert report['probed'] and not report['timeout'] and 'waited_for' not in report, output[-3000:]
    assert not tracebacks(output), output
    assert report['threads_before'] == ['BookAI-stream'] and report['threads_after'] == []
    assert report['windows_after'] == []
    assert report['status_message'] == ('Book AI: the conversations of the previous library were closed. What was '
                                        'answered is kept in that library\'s History.')
    assert report['library_after'] != report['library_id'] and report['book_after'] == 'Another book'
    assert report['history_after'] == 0  # the new library's History does not hold it
    assert_kept_stopped(kept(sandbox, report['library_id']), report['chars_before'])
    assert len(kept(sandbox)) == 1
    endless.wait_log(r'cancel', start=log_start)  # the server was told to stop
    # the new library's book of the same id is untouched
    r = sandbox.debug('from calibre.library import db; '
                      f'print(repr(db({str(other)!r}).new_api.field_for("comments", 1)))')
    assert r.returncode == 0 and r.stdout.strip().splitlines()[-1] == 'None', r


def test_calibre_quit_while_an_answer_streams(sandbox, plugin_zip, library, endless):
    sandbox.install(plugin_zip)
    configure(sandbox, endless)
    log_start = len(endless.log())
    report, output, ended = run_probe(sandbox, 'main_window', [library], BOOKAI_PROBE_QUIT='1')
    assert report['probed'] and not report['timeout'] and 'waited_for' not in report, output[-3000:]
    assert not tracebacks(output), output
    assert report['threads_before'] == ['BookAI-stream'] and 'exit_code' in report and report['returncode'] == 0
    # calibre 6 and 8 themselves pause two seconds in their shutdown, with or without any plugin:
    # the bound is for all the rest
    assert ended - report['quit_at'] - report['calibre_paused'] < QUIT_SECONDS, (
        ended - report['quit_at'], report['calibre_paused'])
    assert_kept_stopped(kept(sandbox, report['library_id']), report['chars_before'])
    endless.wait_log(r'cancel', start=log_start)


def test_viewer_closed_while_its_panel_streams(sandbox, plugin_zip, library, endless):
    sandbox.install(plugin_zip)
    configure(sandbox, endless)
    log_start = len(endless.log())
    report, output, ended = run_probe(sandbox, 'viewer', [library_epub(library)], BOOKAI_PROBE_QUIT='1')
    assert report['rendered'] and not report['timeout'] and 'waited_for' not in report, output[-3000:]
    assert not tracebacks(output), output
    assert report['returncode'] == 0
    # the viewer's own exit (its web engine, Python's) takes a while of its own on a busy machine:
    # what an answer streaming adds to it is what must stay within the two seconds
    idle, idle_output, idle_ended = run_probe(sandbox, 'viewer', [library_epub(library)], BOOKAI_PROBE_QUIT='idle')
    assert idle['returncode'] == 0 and not tracebacks(idle_output), idle_output
    own_exit = idle_ended - idle['quit_at']
    assert ended - report['quit_at'] - own_exit < QUIT_SECONDS, (ended - report['quit_at'], own_exit)
    assert_kept_stopped(kept(sandbox), report['chars_before'])
    endless.wait_log(r'cancel', start=log_start)
