# License: GPLv3 Copyright: the Book AI developers
"""The book's tools (grounding/book_tools.py) keep to the reader's place: with sentinel text right
after the place, at the start of the next chapter and on the last page, every tool asked on purpose
past the place, in every scope but "book", gives none of it: not in a result, not in a request the
model is sent (the loop of conversation/lookups.py with a stand-in provider). And the model's
arguments, however wrong, come back as refusals in words."""

import json

import pytest

from calibre_plugins.bookai.conversation.lookups import Bounds, answer_with_lookups
from calibre_plugins.bookai.core.messages import Message, Role, ToolCall
from calibre_plugins.bookai.grounding.book_tools import NOT_REACHED, BookTools, KeptXRay
from calibre_plugins.bookai.grounding.extract import read_epub
from helpers.novel import EPUB
from helpers.sentinels import MARK, SENTINELS, with_sentinels
from helpers.tool_turns import ToolTurns, answer, calls

CLAMPED = ('selection', 'chapter', 'position', 'so-far')


@pytest.fixture(scope='module')
def sentinel_book():
    return with_sentinels(read_epub(EPUB), 0.3)


def run(tools, name, arguments, first=1):
    return tools.run(ToolCall('c', name, arguments if isinstance(arguments, str) else json.dumps(arguments)), first)


def chapter_of_place(book, position):
    return book.chapter_at(int(position * book.length))


def tools_for(book, position, scope):
    here = book.chapters.index(chapter_of_place(book, position))
    summaries = {i: (f'Summary of chapter {i + 1} [3].' if i < here else f'{SENTINELS[1]} [4]')
                 for i in range(len(book.chapters))}
    # an X-Ray made up to the place (it keeps to it itself: conversation/xray.py's tests)
    xray = KeptXRay(int(position * book.length), lambda name: f'{name}: a gentleman of the neighbourhood.')
    return BookTools(book, position, scope, summaries=summaries, xray=xray)


PAST = [('search_book', {'query': 'SENTINEL AFTER THE PLACE vicar eloped housekeeper', 'k': 8}),
        ('search_book', {'query': 'zeppelin landed Longbourn', 'k': 8}),
        ('search_book', {'query': 'everyone moved to Patagonia', 'k': 8}),
        ('read_around', {'position': 0.999, 'words_before': 600}),
        ('read_around', {'position': 1}),
        ('read_around', {'position': 0.9, 'words_after': 600}),
        ('contents', {}),
        ('xray_entry', {'name': 'the vicar'})]


@pytest.mark.parametrize('scope', CLAMPED)
def test_no_tool_gives_anything_past_the_place(sentinel_book, scope):
    book, position = sentinel_book
    tools = tools_for(book, position, scope)
    assert 'xray_entry' in {t.name for t in tools.tools()}  # made up to the place: offered
    texts = []
    for name, arguments in PAST:
        texts.append(run(tools, name, arguments).text)
    # right before the place, reading on past it: the text stops at the place
    just_before = run(tools, 'read_around', {'position': position - 0.0005, 'words_after': 600})
    texts.append(just_before.text)
    assert not just_before.refused and just_before.text.strip()
    # every passage numbered so far, read around with as much after it as allowed
    for n in sorted(tools.shown):
        texts.append(run(tools, 'read_around', {'passage': n, 'words_after': 600}).text)
    assert len(tools.shown) > 3  # searches found passages before the place
    joined = '\n'.join(texts)
    assert MARK not in joined
    assert 'Summary of chapter 1' in joined  # the contents do hold what was read


@pytest.mark.parametrize('scope', CLAMPED)
def test_asking_past_the_place_is_refused_in_words(sentinel_book, scope):
    book, position = sentinel_book
    tools = tools_for(book, position, scope)
    for arguments in ({'position': 0.999}, {'position': min(1.0, position + 0.01)}):
        result = run(tools, 'read_around', arguments)
        assert result.refused and result.text == NOT_REACHED and not result.places


def test_the_whole_book_scope_sees_it_all(sentinel_book):
    """What makes the test above able to fail: without the clamp, the sentinels are found."""
    book, position = sentinel_book
    tools = tools_for(book, position, 'book')
    found = '\n'.join(run(tools, name, arguments).text for name, arguments in PAST[:5])
    assert all(s.split(':')[0] in found or s in found for s in SENTINELS[:1])
    assert MARK in found


def test_an_xray_made_past_the_place_is_not_offered(sentinel_book):
    book, position = sentinel_book
    xray = KeptXRay(int(position * book.length) + 1000, lambda name: SENTINELS[0])
    tools = BookTools(book, position, 'position', xray=xray)
    assert 'xray_entry' not in {t.name for t in tools.tools()}
    result = run(tools, 'xray_entry', {'name': 'the vicar'})
    assert result.refused and MARK not in result.text


@pytest.mark.parametrize('scope', CLAMPED)
def test_the_loop_sends_nothing_past_the_place(sentinel_book, scope):
    """Every request the model is sent while it looks up past the place on purpose, through the loop."""
    book, position = sentinel_book
    tools = tools_for(book, position, scope)

    def read_everything(messages):  # read around every passage it was given
        numbers = sorted(tools.shown)[:6]
        return calls(*[('read_around', {'passage': n, 'words_after': 600}) for n in numbers])
    provider = ToolTurns([calls(*PAST[:4]), calls(*PAST[4:]), read_everything, answer('Nothing more [1].')])
    everything = Bounds(calls=32, result_tokens=10 ** 6, total_tokens=10 ** 6)  # nothing cut: all of it sent
    out = list(answer_with_lookups(provider, [Message(Role.USER, 'Who is the vicar?')], tools, bounds=everything))
    assert len(provider.requests) == 4
    assert MARK not in provider.sent_text()
    assert MARK not in repr(out)


def test_numbering_goes_on_and_each_passage_has_its_place(sentinel_book):
    book, position = sentinel_book
    tools = BookTools(book, position, 'position')
    found = run(tools, 'search_book', {'query': 'Netherfield Bingley', 'k': 3}, first=4)
    assert [line.split(']')[0] for line in found.text.split('\n') if line.startswith('[')] == ['[4', '[5', '[6']
    assert len(found.places) == 3 and all(0 < p.position < position for p in found.places)
    assert found.summary == 'searched "Netherfield Bingley": 3 passages'
    again = run(tools, 'search_book', {'query': 'Netherfield Bingley', 'k': 3}, first=7)
    assert '[4]' not in again.text.split('\n')[0] and again.places != found.places  # not sent twice
    around = run(tools, 'read_around', {'passage': 5, 'words_before': 0, 'words_after': 0}, first=10)
    assert around.text.startswith('[10]') and len(around.places) == 1
    assert around.places[0].position <= found.places[1].position


BAD = ['', 'not json', '[1, 2]', '"text"', '{"query": 12}', '{"query": ""}', '{"query": "' + 'x' * 600 + '"}',
       '{"query": "keeper", "k": "many"}', '{"query": "keeper", "k": true}', '[' * 5000 + ']' * 5000,
       '{"query": {"nested": [1, 2]}}']


@pytest.mark.parametrize('arguments', BAD)
def test_bad_arguments_are_refused_in_words(sentinel_book, arguments):
    book, position = sentinel_book
    tools = BookTools(book, position, 'position')
    result = tools.run(ToolCall('c', 'search_book', arguments), 1)
    assert result.refused and result.text.startswith('The call was not run:') and not result.places


@pytest.mark.parametrize('name,arguments', [('read_around', '{}'), ('read_around', '{"passage": 99}'),
                                            ('read_around', '{"position": "half"}'),
                                            ('read_around', '{"position": 2}'), ('xray_entry', '{"name": "x"}'),
                                            ('delete_book', '{}'), ('', '{}')])
def test_wrong_calls_are_refused_in_words(sentinel_book, name, arguments):
    book, position = sentinel_book
    result = BookTools(book, position, 'position').run(ToolCall('c', name, arguments), 1)
    assert result.refused and result.text and not result.places


def test_the_contents_stop_at_the_place(sentinel_book):
    book, position = sentinel_book
    tools = tools_for(book, position, 'position')
    text = run(tools, 'contents', {}).text
    here = book.chapters.index(chapter_of_place(book, position))
    assert f'{here + 1}. ' in text and f'\n{here + 2}. ' not in text
    assert '[3]' not in text  # a summary's own citations are not this answer's numbers


def test_a_passage_that_is_none_beside_a_place_reads_the_place(sentinel_book):
    """As the demo's model asks: {"passage": 0, "position": 0.99}. The place is what was meant, and it is
    past the reader's: refused, not read around passage [1] instead."""
    book, position = sentinel_book
    tools = BookTools(book, position, 'position')
    result = run(tools, 'read_around', {'passage': 0, 'position': 0.99, 'words_after': 600})
    assert result.refused and result.text == NOT_REACHED and not result.places
    result = run(tools, 'read_around', {'passage': 0})
    assert result.refused and 'there is no passage [0]' in result.text
