# License: GPLv3 Copyright: the Book AI developers
"""ask's lookups (plugin/cli.py): each one printed on standard error as it happens, before the answer,
a --json "lookup" event with its numbered passages, and --no-lookups; with the stand-in provider of
helpers.tool_turns (no wire format offers tools to a scripted server yet: the providers' own tests
read tool calls), run in this process through stream_answer(), as ask runs it."""

import argparse
import io
import json

import pytest

from calibre_plugins.bookai.conversation.books import BookInfo
from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.exchange import Exchange
from calibre_plugins.bookai.conversation.question import book_question
from calibre_plugins.bookai.grounding.extract import read_epub
from helpers.novel import EPUB
from helpers.tool_turns import ToolTurns, answer, calls

BOOK = BookInfo(1, 'Pride and Prejudice', ('Jane Austen',))
POSITION = 0.4


@pytest.fixture(scope='module')
def novel():
    return read_epub(EPUB)


@pytest.fixture
def lookups_on(monkeypatch):
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    prefs = dict(plugin_prefs(), lookups=True, lookup_calls=8)
    monkeypatch.setattr('calibre_plugins.bookai.conversation.exchange.plugin_prefs', lambda: prefs)
    return prefs


def test_the_command_line_prints_each_lookup_before_the_answer(novel, lookups_on, capsys):
    from calibre_plugins.bookai.cli import stream_answer
    question = book_question('Who is Mr. Collins?', 'position', novel, position=POSITION, budget=300)
    for as_json in (False, True):
        provider = ToolTurns([calls(('search_book', {'query': 'Collins', 'k': 3})), answer('A cousin.')])
        out = io.StringIO()
        stream_answer(Exchange(Conversation([BOOK], 'lib'), provider, question), argparse.Namespace(json=as_json), out)
        err = capsys.readouterr().err
        n = len(question.places) + 1
        if as_json:
            events = [json.loads(line) for line in out.getvalue().splitlines()]
            assert [e['type'] for e in events][0] == 'lookup'
            lookup = events[0]
            assert lookup['tool'] == 'search_book' and lookup['first'] == n
            assert [p['number'] for p in lookup['passages']] == [n, n + 1, n + 2]
        else:
            # the passages' numbers, as the windows show them
            assert f'looked up: searched "Collins": 3 passages [{n}] [{n + 1}] [{n + 2}]' in err
            assert out.getvalue().strip() == 'A cousin.'


def test_no_lookups_on_the_command_line():
    from calibre_plugins.bookai.cli import parser
    args = parser().parse_args(['ask', '--library', '/x', '--book', '1', '--prompt', 'q', '--no-lookups'])
    assert args.no_lookups
    assert not parser().parse_args(['ask', '--library', '/x', '--book', '1', '--prompt', 'q']).no_lookups



def test_no_lookups_sends_no_tools(novel, lookups_on):
    from calibre_plugins.bookai.cli import stream_answer
    question = book_question('Who is Mr. Collins?', 'position', novel, position=POSITION, budget=300)
    provider = ToolTurns([answer('A cousin.')])
    stream_answer(Exchange(Conversation([BOOK], 'lib'), provider, question, lookups=False),
                  argparse.Namespace(json=False), io.StringIO())
    assert provider.requests[0][1] == ()


def test_a_citation_of_a_passage_looked_up_has_its_place(novel, capsys):
    from calibre_plugins.bookai.cli import show_citations
    from calibre_plugins.bookai.grounding.scopes import Place
    question = book_question('Who is Mr. Collins?', 'position', novel, position=POSITION, budget=300)
    sent = len(question.places)
    out = io.StringIO()
    show_citations(f'A clergyman [{sent + 2}], and [{sent + 9}].', question.excerpt, True, out,
                   (Place('Chapter 13', 0.1), Place('Chapter 14', 0.12)))
    events = [json.loads(line) for line in out.getvalue().splitlines()]
    assert events[0] == {'type': 'citation', 'number': sent + 2, 'sent': True, 'chapter': 'Chapter 14',
                         'position': 0.12, 'repeated': False}
    assert events[1]['number'] == sent + 9 and not events[1]['sent']  # neither sent nor looked up
