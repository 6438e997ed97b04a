# License: GPLv3 Copyright: the Book AI developers
"""The lookups' loop (conversation/lookups.py) and the Exchange that runs it, with a stand-in provider
(helpers.tool_turns) whose scripted turns call the book's tools (grounding/book_tools.py, over the
tests' novel): the bounds, wrong calls answered in words, Stop, a service refusing tools, the
numbering and the places citations link to, the History, and follow-up questions."""

import json

import pytest

from calibre_plugins.bookai.conversation.books import BookInfo
from calibre_plugins.bookai.conversation.conversation import Conversation, turn_as_dict, turn_from_dict
from calibre_plugins.bookai.conversation.exchange import Exchange
from calibre_plugins.bookai.conversation.lookups import (
    NO_MORE_LAST, Bounds, LookedUp, LookupNotice, answer_with_lookups,
)
from calibre_plugins.bookai.conversation.question import book_question
from calibre_plugins.bookai.core.errors import ProviderError, error_for_status
from calibre_plugins.bookai.core.messages import Done, Failed, Message, Role, TextDelta, Tool, Usage
from calibre_plugins.bookai.grounding.book_tools import BookTools
from calibre_plugins.bookai.grounding.extract import read_epub
from calibre_plugins.bookai.providers import tool_support
from helpers.novel import EPUB
from helpers.tool_turns import ToolTurns, Turn, answer, calls

BOOK = BookInfo(1, 'Pride and Prejudice', ('Jane Austen',))
POSITION = 0.4


@pytest.fixture(scope='module')
def novel():
    return read_epub(EPUB)


def loop(provider, toolbox, bounds=Bounds(), first_number=1, cancel=None):
    return list(answer_with_lookups(provider, [Message(Role.USER, 'Who is Mr. Collins?')], toolbox, bounds=bounds,
                                    first_number=first_number, cancel=cancel))


def lookups_of(out):
    return [c.lookup for c in out if isinstance(c, LookedUp)]


def answer_text(out):
    return ''.join(c.text for c in out if isinstance(c, TextDelta))


def tool_messages(provider, request=-1):
    return [m for m in provider.requests[request][0] if m.role == Role.TOOL]


def test_a_lookup_then_the_answer(novel):
    tools = BookTools(novel, POSITION, 'position')
    provider = ToolTurns([calls(('search_book', {'query': 'Mr. Collins clergyman', 'k': 3})),
                          answer('He is a clergyman [3].')])
    out = loop(provider, tools, first_number=2)
    (lookup,) = lookups_of(out)
    assert lookup.tool == 'search_book' and lookup.first == 2 and len(lookup.places) == 3
    assert lookup.summary == 'searched "Mr. Collins clergyman": 3 passages'
    assert lookup.shown_numbers() == ([2, 3, 4], False)  # the numbers every way of showing it adds
    assert answer_text(out).strip() == 'He is a clergyman [3].'
    assert isinstance(out[-1], Done) and out[-1].usage == Usage(20, 10)  # both requests added up
    assert not out[-1].tool_calls
    # the second request: the assistant's call, then its result, numbered on from 2
    sent = provider.requests[1][0]
    assert sent[-2].role == Role.ASSISTANT and sent[-2].tool_calls[0].name == 'search_book'
    assert sent[-1].role == Role.TOOL and sent[-1].tool_call_id == sent[-2].tool_calls[0].id
    assert '[2] (' in sent[-1].text and '[4] (' in sent[-1].text and '[5] (' not in sent[-1].text
    assert {t.name for t in provider.requests[0][1]} == {'search_book', 'read_around', 'contents'}


def test_the_text_of_a_reply_that_calls_tools_is_not_the_answer(novel):
    provider = ToolTurns([calls(('contents', {}), text='Let me look.'), answer('Here it is.')])
    out = loop(provider, BookTools(novel, POSITION, 'position'))
    assert answer_text(out).strip() == 'Here it is.'


def test_at_most_n_calls_then_one_request_without_tools(novel):
    turns = [calls(('search_book', {'query': f'word{i} Bennet'})) for i in range(10)]
    provider = ToolTurns(turns + [answer('Enough.')])
    out = loop(provider, BookTools(novel, POSITION, 'position'), Bounds(calls=3))
    assert len(lookups_of(out)) == 3
    assert len(provider.requests) == 4 and provider.requests[-1][1] == ()
    assert all(tools for _messages, tools in provider.requests[:3])
    last = provider.requests[-1][0]  # the question, then what was found as text: no call, no tool message
    assert not any(m.role == Role.TOOL or m.tool_calls for m in last)
    assert last[-1].role == Role.USER and last[-1].text.endswith(NO_MORE_LAST)
    assert 'What you looked up' in last[-1].text and all(lu.text in last[-1].text for lu in lookups_of(out))
    assert isinstance(out[-1], Done)


def test_a_last_reply_that_is_only_more_calls_is_not_shown_as_the_answer(novel):
    """As the demo's model does: told to answer, it writes one more call as text."""
    written = answer('{"name": "read_around", "arguments": {"passage": 0, "position": 0.5}}')
    provider = ToolTurns([calls(('search_book', {'query': 'Collins'})), written])
    out = loop(provider, BookTools(novel, POSITION, 'position'), Bounds(calls=1))
    assert provider.requests[-1][1] == () and '"name"' not in answer_text(out)
    assert answer_text(out).startswith('The model did not answer in words: after 1 lookup it')


def test_more_calls_in_one_reply_than_allowed_are_answered_but_not_run(novel):
    provider = ToolTurns([calls(*[('search_book', {'query': f'Bennet {i}'}) for i in range(5)]), answer('ok')])
    out = loop(provider, BookTools(novel, POSITION, 'position'), Bounds(calls=2))
    found = lookups_of(out)
    assert [lu.refused for lu in found] == [False, False, True, True, True]
    assert provider.requests[-1][1] == () and not tool_messages(provider)  # the last: what was found, as text
    assert all(lu.text in provider.requests[-1][0][-1].text for lu in found if not lu.refused)


def test_each_result_and_all_of_them_are_bounded(novel):
    provider = ToolTurns([calls(('search_book', {'query': 'Elizabeth Darcy', 'k': 8})),
                          calls(('search_book', {'query': 'Jane Bingley', 'k': 8})),
                          calls(('search_book', {'query': 'Lydia Wickham', 'k': 8})), answer('ok')])
    out = loop(provider, BookTools(novel, POSITION, 'position'), Bounds(result_tokens=300, total_tokens=500))
    first, second, *rest = lookups_of(out)
    assert len(first.text) <= 300 * 4 + 10 and first.text.endswith('(cut)')
    assert 0 < len(first.places) < 8 and f'[{len(first.places)}] (' in first.text
    assert second.first == 1 + len(first.places)
    assert provider.requests[-1][1] == ()  # all results together reached their bound
    assert sum(len(lu.text) for lu in lookups_of(out) if not lu.refused) <= 500 * 4 + 20


def test_a_repeated_call_is_answered_already_looked_up_and_counted(novel):
    same = ('search_book', {'query': 'Netherfield'})
    provider = ToolTurns([calls(same), calls(same), calls(same), answer('ok')])
    out = loop(provider, BookTools(novel, POSITION, 'position'), Bounds(calls=3))
    found = lookups_of(out)
    assert [lu.refused for lu in found] == [False, True, True]
    assert found[1].summary == 'already looked up' and 'Already looked up' in tool_messages(provider, -2)[-1].text
    assert provider.requests[-1][1] == ()  # the repeats counted toward the bound


@pytest.mark.parametrize('name,arguments,said', [
    ('delete_book', '{}', 'There is no tool named'), ('', '{}', 'There is no tool named'),
    ('search_book', 'not json', 'not JSON'), ('search_book', '[1]', 'JSON object'),
    ('search_book', '{"query": 3}', 'query must be some words'), ('read_around', '{"passage": 1}', 'no passage [1]'),
])
def test_wrong_calls_get_words_back(novel, name, arguments, said):
    provider = ToolTurns([Turn(calls=(calls((name, arguments)).calls)), answer('ok')])
    out = loop(provider, BookTools(novel, POSITION, 'position'))
    (lookup,) = lookups_of(out)
    assert lookup.refused and said in tool_messages(provider)[0].text
    assert answer_text(out).strip() == 'ok'


def test_a_tool_written_as_text_is_told_and_not_shown(novel):
    provider = ToolTurns([answer('search_book({"query": "Collins"})'), answer('He is a cousin.')])
    out = loop(provider, BookTools(novel, POSITION, 'position'))
    assert answer_text(out).strip() == 'He is a cousin.'
    told = provider.requests[1][0]
    assert told[-2].role == Role.ASSISTANT and told[-1].role == Role.USER and 'call the tool' in told[-1].text


@pytest.mark.parametrize('written', [
    '{"name": "search_book", "arguments": {"query": "Collins"}}',  # Qwen2.5's form, bare
    '<tool_call>\n{"name": "search_book", "arguments": {"query": "Collins"}}\n</tool_call>',
    '```json\n{"name": "search_book", "arguments": {"query": "Collins"}}\n```',
    '[{"name": "search_book", "arguments": "{\\"query\\": \\"Collins\\"}"}]',
])
def test_a_small_models_call_written_as_text_is_run_as_the_call(novel, written):
    provider = ToolTurns([answer(written), answer('He is a cousin [1].')])
    out = loop(provider, BookTools(novel, POSITION, 'position'))
    (lookup,) = lookups_of(out)
    assert lookup.tool == 'search_book' and not lookup.refused and lookup.places and lookup.first == 1
    assert answer_text(out).strip() == 'He is a cousin [1].'  # the call is not shown as the answer
    sent = provider.requests[1][0]
    assert sent[-2].role == Role.ASSISTANT and sent[-2].text == '' and sent[-2].tool_calls[0].name == 'search_book'
    assert sent[-1].role == Role.TOOL and sent[-1].tool_call_id == sent[-2].tool_calls[0].id
    assert 'Collins' in sent[-1].text


def test_calls_written_one_after_another_until_the_tokens_ran_out():
    """As the demo's model writes them: one per line, the same ones again, the last cut off."""
    from calibre_plugins.bookai.conversation.lookups import MOST_WRITTEN_CALLS, calls_written
    lines = ['{"name": "search_book", "arguments": {"query": "convert"}}', '{"name": "contents", "arguments": {}}']
    found = calls_written('\n'.join(lines * 6) + '\n{"name": "search_bo', {'search_book', 'contents'})
    assert [(c.name, json.loads(c.arguments)) for c in found] == [('search_book', {'query': 'convert'}),
                                                                  ('contents', {})]
    many = '\n'.join(f'{{"name": "search_book", "arguments": {{"query": "q{i}"}}}}' for i in range(9))
    assert len(calls_written(many, {'search_book'})) == MOST_WRITTEN_CALLS


def test_what_may_still_be_calls_is_told_from_prose():
    from calibre_plugins.bookai.conversation.lookups import may_be_calls
    assert not may_be_calls('Mr. Collins')
    assert may_be_calls('') and may_be_calls('  {"na') and may_be_calls('<tool') and may_be_calls('```json')


@pytest.mark.parametrize('reply', [
    '{"name": "search_book", "arguments": {"query": "Collins"}} and then I will answer',  # more than the call
    '{"name": "delete_everything", "arguments": {}}',  # not an offered tool
    '{"name": "search_book", "arguments": {"query": "x"}, "extra": 1}',  # not the form
    '{"name": ["search_book"], "arguments": {}}',
    '<tool_call>{"name": "search_book"}</tool_call> trailing words',
    '{"a": 1}', '[]', 'Mr. Collins is a cousin. {"name": "contents"}', '{"name": "contents"}\nHe is a cousin.',
])
def test_what_is_not_only_a_call_is_an_answer(reply):
    from calibre_plugins.bookai.conversation.lookups import calls_written
    assert calls_written(reply, {'search_book', 'contents'}) == ()


class Stopping:
    """A toolbox that presses Stop while it runs."""

    def __init__(self, tools, cancel):
        self.inner, self.cancel = tools, cancel

    def tools(self):
        return self.inner.tools()

    def description(self):
        return ''

    def run(self, call, first_number):
        self.cancel.cancel()
        return self.inner.run(call, first_number)


def test_stop_mid_loop_ends_at_once_keeping_what_came(novel):
    from calibre_plugins.bookai.core.cancel import CancelToken
    cancel = CancelToken()
    provider = ToolTurns([calls(('contents', {}), ('search_book', {'query': 'Collins'})), answer('never')])
    out = loop(provider, Stopping(BookTools(novel, POSITION, 'position'), cancel), cancel=cancel)
    assert len(provider.requests) == 1 and len(lookups_of(out)) == 1
    assert isinstance(out[-1], Done) and out[-1].finish_reason == 'cancelled'


def test_stop_while_the_answer_streams(novel):
    from calibre_plugins.bookai.core.cancel import CancelToken
    cancel = CancelToken()
    provider = ToolTurns([calls(('contents', {})), Turn('He is a cousin of theirs', cancel_after=True)])
    out = loop(provider, BookTools(novel, POSITION, 'position'), cancel=cancel)
    assert out[-1].finish_reason == 'cancelled' and answer_text(out).startswith('He')


def test_a_service_refusing_tools_is_asked_again_without_them(novel):
    refusal = error_for_status(400, 'ToolTurns', message='tools param requires --jinja flag')
    provider = ToolTurns([Turn(error=refusal), answer('From the passages.')])
    out = loop(provider, BookTools(novel, POSITION, 'position'))
    assert [type(c) for c in out if not isinstance(c, TextDelta)] == [LookupNotice, Done]
    assert provider.requests[0][1] and provider.requests[1][1] == ()
    assert answer_text(out).strip() == 'From the passages.'
    # kept, so that the next question does not offer tools to that model of that service
    assert tool_support.refused(provider.name, provider.config.base_url, 'stand-in-model')


def test_another_failure_is_the_answers_failure(novel):
    provider = ToolTurns([Turn(error=ProviderError('The service is overloaded.')), answer('never')])
    out = loop(provider, BookTools(novel, POSITION, 'position'))
    assert len(provider.requests) == 1 and isinstance(out[-1], Failed)


class Breaking:
    def tools(self):
        return (Tool('x', 'breaks', {'type': 'object', 'properties': {}}),)

    def description(self):
        return ''

    def run(self, call, first_number):
        raise RuntimeError('broken')


def test_a_toolbox_that_raises_is_a_refusal_not_a_crash():
    provider = ToolTurns([calls(('x', {})), answer('ok')])
    out = list(answer_with_lookups(provider, [Message(Role.USER, 'q')], Breaking()))
    assert lookups_of(out)[0].refused and isinstance(out[-1], Done)


# the Exchange {{{

@pytest.fixture
def lookups_on(monkeypatch):
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    prefs = dict(plugin_prefs(), lookups=True, lookup_calls=8)
    monkeypatch.setattr('calibre_plugins.bookai.conversation.exchange.plugin_prefs', lambda: prefs)
    return prefs


def exchanged(conv, provider, question, lookups=None):
    ex = Exchange(conv, provider, question, lookups=lookups)
    for chunk in ex.chunks():
        ex.take(chunk)
    ex.finish(None)
    return ex


def test_the_lookups_keep_to_the_room_the_models_window_has_left(novel, lookups_on):
    """A result past the model's window would be refused as too long: with the window learned, all the
    results together hold to what is left of it; with too little left, no tool is offered."""
    from calibre_plugins.bookai.providers.context import ContextWindow
    question = book_question('Who is Mr. Collins?', 'position', novel, position=POSITION, budget=300)
    provider = ToolTurns([])
    unknown = Exchange(Conversation([BOOK], 'lib'), provider, question)
    assert unknown.toolbox is not None and unknown.bounds() == Bounds(calls=8)
    provider.context_windows = {'stand-in-model': ContextWindow(4096, 'service')}
    small = Exchange(Conversation([BOOK], 'lib'), provider, question)
    room = 4096 - 1024 - sum(len(m.text) for m in small.messages) // 4
    assert small.toolbox is not None and small.bounds().total_tokens == room < 8000
    provider.context_windows = {'stand-in-model': ContextWindow(700, 'service')}
    assert Exchange(Conversation([BOOK], 'lib'), provider, question).toolbox is None


def test_the_exchange_keeps_lookups_and_their_places_for_citations(novel, lookups_on):
    conv = Conversation([BOOK], 'lib')
    question = book_question('Who is Mr. Collins?', 'position', novel, position=POSITION, budget=300)
    asked = len(question.places)
    assert asked > 0 and question.tools is not None
    provider = ToolTurns([calls(('search_book', {'query': 'Collins Rosings', 'k': 2})),
                          answer(f'A clergyman [{asked + 1}].')])
    ex = exchanged(conv, provider, question)
    turn = conv.turns[-1]
    (lookup,) = turn.lookups
    assert lookup.first == asked + 1 and len(turn.places) == asked + 2
    assert turn.places[asked:] == lookup.places and turn.answer.strip() == f'A clergyman [{asked + 1}].'
    assert turn.usage == Usage(20, 10) and ex.index == 0
    # kept in the History and read back the same
    assert turn_from_dict(turn_as_dict(turn)).lookups == turn.lookups
    # a follow-up: the lookup's text goes after the first question, with no tool message
    follow = ToolTurns([answer('Yes.')])
    exchanged(conv, follow, book_question('Is he married?', 'position', novel, position=POSITION, budget=300))
    sent = follow.requests[0][0]
    assert all(m.role != Role.TOOL and not m.tool_calls for m in sent)
    assert lookup.text in sent[1].text and sent[1].text.index('Who is Mr. Collins?') < sent[1].text.index(lookup.text)


def test_no_lookups_when_off_when_the_provider_cannot_or_without_book_text(novel, lookups_on):
    question = book_question('Who?', 'position', novel, position=POSITION, budget=300)
    for provider, lookups in ((ToolTurns([]), False), (ToolTurns([], takes=False), None)):
        exchanged(Conversation([BOOK], 'lib'), provider, question, lookups)
        assert provider.requests[0][1] == ()
    lookups_on['lookups'] = False
    provider = ToolTurns([])
    exchanged(Conversation([BOOK], 'lib'), provider, question)
    assert provider.requests[0][1] == ()
    lookups_on['lookups'] = True
    assert book_question('Who?', 'metadata', novel).tools is None


# }}}
