# License: GPLv3 Copyright: the Book AI developers
"""Privacy, proven on calibre's real processes: every network connection the main window's and the
E-book viewer's process attempts is recorded (an audit hook installed before calibre's GUI starts,
tests/hosts/probes/sockets.py) while every feature of Book AI is used, and the prompts llama-server
received are read back from its own log of them.

calibre itself checks for updates of calibre and of its plugins (code.calibre-ebook.com) once
plugins are installed: the probes start calibre with its --no-update-check option, so that the
check is on the process as a whole.

- With no provider: no connection at all, and every feature says in words that none is set up.
- With only llama-server on 127.0.0.1: answers come, and every connection goes to loopback.
- With book text off (the default): no passage of the book is in anything sent, except, in the
  viewer, the text the reader selected and asked about (that is the reader's act: it is sent, and
  nothing of the book beyond it).
"""

import pytest

from helpers.books import library_epub
from helpers.peers import LlamaServer
from helpers.sandbox import probe_module, tracebacks

is_loopback = probe_module('sockets').is_loopback  # the probes' own reading of an address

NO_PROVIDER = 'No AI provider is chosen yet.'
NOT_SENT = 'Nothing was sent.'
VIEWER_ACTION = 'Explain'


@pytest.fixture
def llama(tmp_path):
    """llama-server on 127.0.0.1, keeping every prompt it evaluates in a file of its own."""
    prompts = tmp_path / 'prompts'
    with LlamaServer('tiny', alias='tiny', ctx=16384,
                     extra_args=('--temp', '0', '-n', '32', '--log-prompts-dir', str(prompts))) as server:
        server.prompts_dir = prompts
        yield server


def received(server):
    return [p.read_text(errors='replace') for p in sorted(server.prompts_dir.glob('*'))]


def configure(sandbox, server):
    r = sandbox.run(['calibre-debug', '-r', 'Book AI', '--', 'configure', 'openai_compatible',
                     f'base_url={server.base_url}/v1', 'model=tiny', 'temperature=0'])
    assert r.returncode == 0, r


def probe(sandbox, name, args, **env):
    report, r = sandbox.probe(name, args, env=dict(env, BOOKAI_PROBE_SOCKETS='1', BOOKAI_PROBE_NO_UPDATE_CHECK='1'))
    assert not report['timeout'] and 'waited_for' not in report, (report, r.output[-3000:])
    assert not tracebacks(r.output), r.output
    return report


def flat(text):
    return ' '.join(text.split())


def book_passages(library):
    """The book's paragraphs long enough to be its own words (its short headings are not)."""
    from calibre_plugins.bookai.grounding.extract import read_epub
    found = [flat(p.text) for p in read_epub(library_epub(library)).paragraphs]
    return [p for p in found if len(p) >= 60]


def sent_of(passages, prompts):
    prompts = [flat(p) for p in prompts]
    return [p for p in passages if any(p in prompt for prompt in prompts)]


MAIN_WINDOW_FEATURES = ['discuss', 'quick: Summarize', 'quick: Chapters', 'quick: Read next', 'quick: Universe',
                        'quick: Series', 'read_next', 'ask_library']


def test_main_window_without_a_provider_connects_nowhere(sandbox, plugin_zip, library):
    sandbox.install(plugin_zip)
    report = probe(sandbox, 'main_window', [library], BOOKAI_PROBE_FEATURES='1')
    f = report['features']
    assert report['sockets'] == [], report['sockets']
    assert [k for k in f if k in MAIN_WINDOW_FEATURES] == MAIN_WINDOW_FEATURES, list(f)
    assert len(f['quick_menu']) == 5 and len(f['menu']) == 17
    assert f['summaries'] == f'{NO_PROVIDER} {NOT_SENT} Set up a provider in the settings.', f['summaries']
    assert f['fill_metadata'] == f'{NO_PROVIDER} {NOT_SENT} Set up a provider in the settings.', f['fill_metadata']
    for name in ('search_by_meaning', 'more_like_this'):  # no provider that embeds: said how to set one up
        assert f[name].startswith('No provider that makes embeddings is chosen for the library.'), (name, f[name])
    assert NO_PROVIDER in f['discuss_opened']['chat']
    for name in MAIN_WINDOW_FEATURES:  # each said so, in words, and asked nothing
        assert f'{NO_PROVIDER} {NOT_SENT} Set up a provider in the settings.' in f[name]['chat'], (name, f[name])
        assert f[name]['answers'] == [], name
    assert f'{NO_PROVIDER} Nothing is sent anywhere until you set one up.' in f['preview_chat'].splitlines()[-1]
    assert f['history']['title'] and f['history']['count'] == 0
    assert report['settings'] == 'Book AI settings'
    assert report['open_windows'] == []


def test_main_window_with_a_local_provider_talks_to_it_only(sandbox, plugin_zip, library, llama):
    sandbox.install(plugin_zip)
    configure(sandbox, llama)
    report = probe(sandbox, 'main_window', [library], BOOKAI_PROBE_FEATURES='1')
    f = report['features']
    connects = [s for s in report['sockets'] if s['event'] == 'connect']
    assert connects and {s['port'] for s in connects} == {llama.port}, report['sockets']
    assert all(is_loopback(s['host']) for s in report['sockets']), report['sockets']
    for name in MAIN_WINDOW_FEATURES[:-1]:
        (answer,) = f[name]['answers']
        assert answer and NO_PROVIDER not in f[name]['chat'], (name, f[name])
    # Ask my library searches calibre's full-text index, off in this library: it says so, sends nothing
    assert f['ask_library']['answers'] == [] and NOT_SENT in f['ask_library']['chat']
    assert report['preview'] and report['settings'] == 'Book AI settings'
    assert f['fill_metadata'] == 'Fill in metadata with AI'  # its choices first: nothing asked before them
    # the server answers no embeddings (it was not started for them): said in words, asked of it only
    assert 'does not support embeddings' in f['search_by_meaning'], f['search_by_meaning']
    assert 'does not support embeddings' in f['more_like_this'], f['more_like_this']
    # book text off: the book's own words went nowhere
    prompts = received(llama)
    assert len(prompts) >= len(MAIN_WINDOW_FEATURES) - 1
    assert any('Quick Start Guide' in p for p in prompts)  # what was sent is read back
    assert sent_of(book_passages(library), prompts) == []


def test_viewer_without_a_provider_connects_nowhere(sandbox, plugin_zip, library):
    sandbox.install(plugin_zip)
    report = probe(sandbox, 'viewer', [library_epub(library)], BOOKAI_PROBE_FEATURES=VIEWER_ACTION)
    f = report['features']
    assert report['rendered'] and report['sockets'] == [], report['sockets']
    assert NO_PROVIDER in f['opened']
    assert f['quick_action_enabled']
    for name in ('question', 'quick_action'):
        assert f'{NO_PROVIDER} {NOT_SENT} Set up a provider in the settings.' in f[name]['chat'], (name, f[name])
        assert f[name]['answers'] == []
    assert f'{NO_PROVIDER} Nothing is sent anywhere until you set one up.' in f['preview_chat'].splitlines()[-1]
    assert f['settings'] == 'Book AI settings'


def test_viewer_with_a_local_provider_sends_only_what_the_reader_selected(sandbox, plugin_zip, library, llama):
    sandbox.install(plugin_zip)
    configure(sandbox, llama)
    report = probe(sandbox, 'viewer', [library_epub(library)], BOOKAI_PROBE_FEATURES=VIEWER_ACTION)
    f = report['features']
    connects = [s for s in report['sockets'] if s['event'] == 'connect']
    assert connects and {s['port'] for s in connects} == {llama.port}, report['sockets']
    assert all(is_loopback(s['host']) for s in report['sockets']), report['sockets']
    assert f['quick_action_enabled'] and f['question']['answers'][0] and f['quick_action']['answers'][0]
    assert f['preview'] and f['settings'] == 'Book AI settings'
    prompts = received(llama)
    (question_prompt,) = [p for p in prompts if 'Who wrote this book?' in p]
    action_prompts = [p for p in prompts if p != question_prompt]
    passages = book_passages(library)
    selected = flat(report['selected'])
    # the question typed before anything was selected: nothing of the book
    assert action_prompts and sent_of(passages, [question_prompt]) == []
    # the quick action on the selection: the selected text, and nothing of the book beyond it
    sent = sent_of(passages, action_prompts)
    assert sent and all(p in selected for p in sent), [p[:80] for p in sent if p not in selected]
