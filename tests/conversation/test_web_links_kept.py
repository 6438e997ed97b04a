# License: GPLv3 Copyright: the Book AI developers
"""The web pages an answer used stay with it: a finished turn keeps what the provider's Done
named (as core.web_links keeps them), the History saves them and gives them back after a
restart, and a History file edited by hand is held to the same rules, or set aside when its
pages are not pages at all."""

import json

import pytest

from calibre_plugins.bookai.conversation.books import BookInfo
from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.messages import Answer, Done, Failed, TextDelta, WebLink

LIBRARY = 'c3a1d9e2-6f0b-4c1e-9a57-0d6f2f1b7e11'
HOSTILE_TITLE = '<script>alert(1)</script>\x1b[2J\u202eevil'
LINKS = (WebLink('Rain in Spain', 'https://example.org/rain'), WebLink(HOSTILE_TITLE, 'https://evil.example/x'),
         WebLink('Rain again', 'https://example.org/rain'), WebLink('Click', 'javascript:alert(1)'))


def answered(links=LINKS, text='It rains mainly on the plain.'):
    conv = Conversation([BookInfo(1, 'Pygmalion', ('G. B. Shaw',))], LIBRARY)
    conv.ask('Where does it rain?')
    answer = Answer()
    answer.add(TextDelta(text))
    answer.add(Done(model='gpt-5-mini', web_links=links))
    conv.finish(answer, 'openai')
    return conv


def test_a_finished_turn_keeps_the_pages_as_core_web_links_does():
    turn = answered().turns[0]
    assert turn.web_links == (WebLink('Rain in Spain', 'https://example.org/rain'),
                              WebLink('<script>alert(1)</script>\\x1b[2J\\u202eevil', 'https://evil.example/x'))
    assert turn.web_links_left_out == 1  # the javascript: address; the repeat is no other page


def test_a_failed_turn_has_no_pages():
    conv = Conversation([], LIBRARY)
    conv.ask('q')
    answer = Answer()
    answer.add(Failed(RuntimeError('down')))
    turn = conv.finish(answer)
    assert turn.web_links == () and turn.web_links_left_out == 0


def test_the_history_keeps_the_pages_across_a_restart(tmp_path):
    conv = answered()
    History(str(tmp_path)).save(conv)
    again = History(str(tmp_path)).load(LIBRARY, conv.id)  # a new History over the same folder
    assert again.turns[0].web_links == conv.turns[0].web_links
    assert again.turns[0].web_links_left_out == 1
    raw = json.loads((tmp_path / LIBRARY / f'{conv.id}.json').read_text('utf-8'))
    assert raw['turns'][0]['web_links'][0] == ['Rain in Spain', 'https://example.org/rain']


def test_a_conversation_saved_before_pages_were_kept_opens_without_them(tmp_path):
    conv = answered()
    d = conv.as_dict()
    for t in d['turns']:
        del t['web_links'], t['web_links_left_out']
    again = Conversation.from_dict(json.loads(json.dumps(d)))
    assert again.turns[0].answer == conv.turns[0].answer and again.turns[0].web_links == ()


def test_pages_edited_into_a_saved_file_are_held_to_the_same_rules():
    d = answered(links=()).as_dict()
    pages = [[f'Page {i}', f'https://example.org/{i}'] for i in range(limits.MAX_WEB_LINKS + 3)]
    d['turns'][0]['web_links'] = [['Evil\x1b]0;title\x07', 'javascript:alert(1)'],
                                  ['A\nB', 'https://a.example/']] + pages
    d['turns'][0]['web_links_left_out'] = -5  # not a count: no fewer than none
    turn = Conversation.from_dict(json.loads(json.dumps(d))).turns[0]
    assert turn.web_links[0] == WebLink('A B', 'https://a.example/')
    assert len(turn.web_links) == limits.MAX_WEB_LINKS
    assert turn.web_links_left_out == 1 + 4


@pytest.mark.parametrize('pages', [5, 'https://example.org', [['only a title']], [['t', 5]], [{'t': 'u'}],
                                   [['t', 'https://example.org', 'more']]])
def test_pages_that_are_not_pages_make_the_file_damaged(tmp_path, pages):
    history = History(str(tmp_path))
    conv = answered()
    history.save(conv)
    path = tmp_path / LIBRARY / f'{conv.id}.json'
    d = json.loads(path.read_text('utf-8'))
    d['turns'][0]['web_links'] = pages
    path.write_text(json.dumps(d), 'utf-8')
    with pytest.raises(ValueError):
        history.load(LIBRARY, conv.id)
    assert not path.exists() and (tmp_path / LIBRARY / f'{conv.id}.json.damaged').exists()  # set aside, not lost
