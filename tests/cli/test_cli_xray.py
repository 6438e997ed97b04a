# License: GPLv3 Copyright: the Book AI developers
"""`xray` on the command line, on the real novel in a calibre library of the test's own, with a
scripted model behind the OpenAI-compatible provider (helpers.scripted_model): entities as plain
text or --json events, --search, nothing after the place whatever the model claims, no place
known and nothing sent, the estimate and --yes before a book's text first goes to a provider on
the internet, and no control character of a model's reaching the terminal."""

import json

import pytest

from calibre_plugins.bookai.grounding.extract import read_epub
from helpers.novel import EPUB
from helpers.scripted_model import ScriptedModel, roster_answer

ROSTER = [
    {'name': 'Elizabeth Bennet', 'other_names': ['Elizabeth', 'Lizzy', 'Eliza'], 'description': 'The second daughter'},
    {'name': 'Mr. Bingley', 'other_names': ['Bingley'], 'description': 'A rich young man'},
    {'name': 'Pemberley', 'kind': 'place', 'description': 'Darcy\'s estate'},
    {'name': 'Mr. Wickham', 'other_names': ['Wickham'], 'description': 'An officer'},
]
SPOILERS = [{'name': 'Mr. Wickham', 'description': 'He will elope with Lydia.'}, {'name': 'Pemberley'}]
RAW = ('\x1b', '\x9b', '\x07', '\x7f')


@pytest.fixture(scope='module')
def novel():
    return read_epub(EPUB)


def before(novel, chapter):
    """The place just before the novel's chapter, as --position takes it (every digit of it)."""
    return repr((novel.chapters[chapter].start - 0.5) / novel.length)


def events(r):
    return [json.loads(line) for line in r.stdout.splitlines()]


def test_xray_as_json_and_as_text(cli, sandbox, novel):
    lib = sandbox.make_library(EPUB)
    spoiling, plain_model = roster_answer(ROSTER, SPOILERS), roster_answer(ROSTER)
    knows_the_book = [True]  # a model that claims what comes later, for the first run
    with ScriptedModel(lambda request: (spoiling if knows_the_book[0] else plain_model)(request)) as model:
        r = cli('configure', 'openai_compatible', f'base_url={model.url}/v1', 'model=tiny', '--use')
        assert r.returncode == 0, r
        early = cli('xray', '--library', lib, '--book', '1', '--position', before(novel, 6), '--json')
        asked = len(model.requests)
        knows_the_book[0] = False
        later = cli('xray', '--library', lib, '--book', '1', '--position', before(novel, 16), '--json')
        plain = cli('xray', '--library', lib, '--book', '1', '--position', before(novel, 16), '--search', 'lizzy')
        none = cli('xray', '--library', lib, '--book', '1', '--position', before(novel, 16), '--search', 'zzz')
    assert early.returncode == 0 and later.returncode == 0, (early, later)
    first = events(early)
    assert first[0]['type'] == 'estimate' and first[0]['chapters'] == 6 and first[0]['local'] is True
    assert [e['done'] for e in first if e['type'] == 'progress'] == [0, 1, 2, 3, 4, 5, 6]
    names = {e['name'] for e in first if e['type'] == 'entity'}
    assert 'Mr. Bingley' in names and not names & {'Mr. Wickham', 'Pemberley'}  # after the place: absent
    assert first[-1]['type'] == 'done' and first[-1]['requests'] == 6 and asked == 6
    # moving on: the chapters kept are not sent again
    got = events(later)
    assert got[0]['type'] == 'estimate' and got[0]['chapters'] == 10 and len(model.requests) == asked + 10
    wickham = next(e for e in got if e['type'] == 'entity' and e['name'] == 'Mr. Wickham')
    assert wickham['kind'] == 'character' and wickham['other_names'] == ['Wickham']
    assert wickham['first']['chapter'] == 'Chapter 15' and wickham['first']['cfi'].startswith('epubcfi(/')
    assert [c['title'] for c in wickham['chapters']] == ['Chapter 15'] and wickham['chapters'][0]['passages'] > 0
    assert wickham['citations'] and all(c['chapter'] == 'Chapter 15' for c in wickham['citations'])
    assert 0 < wickham['first']['position'] < float(before(novel, 16))
    assert wickham['description'] == 'An officer (as of Chapter 15)'
    # plain text, --search
    assert plain.returncode == 0 and plain.stdout.startswith('Elizabeth Bennet (character; also: '), plain
    assert 'First: Chapter 1 (' in plain.stdout and '█' in plain.stdout and 'Passages: ' in plain.stdout
    assert 'Mr. Bingley' not in plain.stdout and 'request' not in plain.stderr  # nothing sent: all kept
    assert none.returncode == 5 and 'Nothing in the X-Ray matches "zzz"' in none.stderr


def test_no_place_known_nothing_is_sent(cli, sandbox):
    lib = sandbox.make_library(EPUB)
    with ScriptedModel(roster_answer(ROSTER)) as model:
        assert cli('configure', 'openai_compatible', f'base_url={model.url}/v1', 'model=tiny', '--use').returncode == 0
        r = cli('xray', '--library', lib, '--book', '1')
        bad = cli('xray', '--library', lib, '--book', '1', '--position', '1.5')
        missing = cli('xray', '--library', lib, '--book', '7', '--position', '0.1')
    assert r.returncode == 2 and 'does not know where you are' in r.stderr and 'Nothing was sent' in r.stderr, r
    assert bad.returncode == 2 and missing.returncode == 2 and model.requests == []


def test_an_online_provider_needs_yes_once_per_book(cli, sandbox, novel):
    lib = sandbox.make_library(EPUB)
    with ScriptedModel(roster_answer(ROSTER), model='grok-test') as model:
        r = cli('configure', 'grok', f'base_url={model.url}/v1', 'model=grok-test', 'api_key=env:XKEY', '--use',
                env={'XKEY': 'xai-test-0123456789'})
        assert r.returncode == 0, r
        refused = cli('xray', '--library', lib, '--book', '1', '--position', before(novel, 3))
        assert model.requests == []
        agreed = cli('xray', '--library', lib, '--book', '1', '--position', before(novel, 3), '--yes')
        sent = len(model.requests)
        on = cli('xray', '--library', lib, '--book', '1', '--position', before(novel, 5), '--json')
    assert refused.returncode == 2, refused
    assert '3 chapters to read for the X-Ray: about' in refused.stderr and 'cost unknown' in refused.stderr
    assert '--yes' in refused.stderr and 'xAI Grok' in refused.stderr and 'Nothing was sent' in refused.stderr
    assert agreed.returncode == 0 and sent == 3 and 'Mr. Bingley' in agreed.stdout, agreed
    assert '3 requests sent' in agreed.stderr
    assert on.returncode == 0 and len(model.requests) == sent + 2, on  # asked once per book
    assert events(on)[0]['type'] == 'estimate' and events(on)[0]['local'] is False


HOSTILE = '\x1b]52;c;cHduZWQ=\x07\x1b]0;pwned\x07\x1b[2J\x9b31m\x7f'


def test_the_terminal_never_obeys_the_model(cli, sandbox, novel):
    lib = sandbox.make_library(EPUB)

    def answer(request):
        return json.dumps({'entities': [{'name': 'Bingley', 'kind': 'character' + HOSTILE,
                                         'other_names': ['Lizzy' + HOSTILE], 'description': 'Rich' + HOSTILE,
                                         'passages': [1]}]})
    with ScriptedModel(answer) as model:
        assert cli('configure', 'openai_compatible', f'base_url={model.url}/v1', 'model=tiny', '--use').returncode == 0
        plain = cli('xray', '--library', lib, '--book', '1', '--position', before(novel, 3))
        as_json = cli('xray', '--library', lib, '--book', '1', '--position', before(novel, 3), '--json')
    for r in (plain, as_json):
        assert r.returncode == 0, r
        assert not [c for c in RAW if c in r.stdout or c in r.stderr] and 'Traceback' not in r.stderr
    assert 'Bingley (term)' in plain.stdout and 'Rich' in plain.stdout
    entity = next(e for e in events(as_json) if e['type'] == 'entity')
    assert entity['name'] == 'Bingley' and entity['other_names'] == [] and entity['description'].startswith('Rich')
