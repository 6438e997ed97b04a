# License: GPLv3 Copyright: the Book AI developers
"""Conversations without a display: quick actions and their templates, the book
description, what is sent for a question, retry after a failure, and history."""

import json
import os
import stat

import pytest

from calibre_plugins.bookai.conversation.actions import (
    QuickAction, fill_template, find_action, library_actions_builtin, merge_actions,
)
from calibre_plugins.bookai.conversation.books import BookInfo, book_info
from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.history import History
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.conversation.prompts import context_prompt
from calibre_plugins.bookai.core.errors import Unreachable
from calibre_plugins.bookai.core.messages import Answer, Cost, Done, Failed, Role, TextDelta, Usage
from helpers.books import quick_start_epub

DUNE = BookInfo(1, 'Dune', ('Frank Herbert',), 'Dune', 1.0)
MESSIAH = BookInfo(2, 'Dune Messiah', ('Frank Herbert',), 'Dune', 2.0)


def answer_of(*chunks):
    a = Answer()
    for c in chunks:
        a.add(c)
    return a


def test_builtin_actions_fill_their_templates_as_calibres_do():
    actions = {a.name: a for a in library_actions_builtin()}
    assert list(actions) == ['summarize', 'chapters', 'read_next', 'universe', 'series']
    assert actions['summarize'].prompt([DUNE]) == 'Provide a concise summary of the previously described book.'
    assert actions['universe'].prompt([DUNE, MESSIAH]).startswith(
        'Describe the fictional universe the previously described books are set in.')


def test_a_users_template_never_fails():
    values = {'title': 'Dune', 'authors': 'Frank Herbert'}
    assert fill_template('{title} by {authors}', values) == 'Dune by Frank Herbert'
    assert fill_template('Unknown {thing} stays', values) == 'Unknown {thing} stays'
    assert fill_template('A stray { brace', values) == 'A stray { brace'
    action = QuickAction('mine', 'Mine', 'Who is the hero of {title} ({series}) by {authors}?')
    assert action.prompt([DUNE]) == 'Who is the hero of Dune (Dune) by Frank Herbert?'


def test_builtin_actions_can_be_edited_disabled_and_reordered_but_not_deleted():
    builtin = library_actions_builtin()
    saved = [{'name': 'mine', 'label': 'Themes', 'template': 'Themes of {title}?', 'enabled': True},
             {'name': 'series', 'label': 'Series', 'template': '', 'enabled': False},
             {'name': 'broken'},  # damaged: skipped, the rest kept
             {'name': 'summarize', 'label': 'Short summary', 'template': 'Summarize {title}.'}]
    actions = merge_actions(builtin, saved)
    assert [a.name for a in actions] == ['mine', 'series', 'summarize', 'chapters', 'read_next', 'universe']
    assert actions[1].builtin and not actions[1].enabled and actions[1].template == builtin[4].template
    assert actions[2].label == 'Short summary' and actions[2].builtin
    assert not actions[0].builtin
    assert find_action(actions, 'themes') is actions[0] and find_action(actions, 'READ_NEXT').name == 'read_next'
    assert merge_actions(builtin, None) == list(builtin)


def test_the_context_says_title_and_authors_and_only_the_allowed_fields():
    text = context_prompt([DUNE])
    assert 'The book is: Dune by Frank Herbert.' in text and 'series' in text
    assert 'respond in' not in text
    assert 'If you can speak in German, then respond in German.' in context_prompt([DUNE], 'German')
    two = context_prompt([DUNE, MESSIAH])
    assert 'The first book is: Dune' in two and 'The next book is: Dune Messiah' in two


def test_what_is_sent_is_the_whole_conversation_and_a_failure_keeps_it():
    conv = Conversation([DUNE], 'lib')
    sent = conv.ask('Who is Paul?')
    assert [m.role for m in sent] == [Role.SYSTEM, Role.USER] and sent[1].text == 'Who is Paul?'
    conv.finish(answer_of(TextDelta('Paul is '), TextDelta('the heir.'), Done(model='m1', usage=Usage(10, 4))),
                'openai_compatible')
    assert (conv.provider, conv.model) == ('openai_compatible', 'm1')  # pinned by the first answer
    sent = conv.ask('And Jessica?')
    assert [(m.role, m.text) for m in sent[1:]] == [
        (Role.USER, 'Who is Paul?'), (Role.ASSISTANT, 'Paul is the heir.'), (Role.USER, 'And Jessica?')]
    conv.finish(answer_of(TextDelta('Jess'), Failed(Unreachable('Could not reach the server.'))))
    assert conv.turns[-1].error == 'Could not reach the server.' and conv.turns[-1].answer == 'Jess'
    assert conv.retry_question() == 'And Jessica?'
    assert len(conv.turns) == 2 and conv.turns[0].answer == 'Paul is the heir.'  # nothing lost
    sent = conv.ask(conv.retry_question())  # Retry replaces the failed turn
    assert len(conv.turns) == 2 and [m.text for m in sent[1:]] == ['Who is Paul?', 'Paul is the heir.',
                                                                   'And Jessica?']


def test_usage_adds_up_and_an_unknown_cost_stays_unknown():
    conv = Conversation([DUNE])
    conv.ask('a')
    conv.finish(answer_of(TextDelta('x'), Done(model='m', usage=Usage(10, 5, cost=Cost(0.01)))))
    conv.ask('b')
    conv.finish(answer_of(TextDelta('y'), Done(model='m', usage=Usage(20, 5, cost=Cost(0.02)))))
    total = conv.total_usage()
    assert (total.input_tokens, total.output_tokens) == (30, 10) and total.cost.amount == pytest.approx(0.03)
    conv.ask('c')
    conv.finish(answer_of(TextDelta('z'), Done(model='m', usage=Usage(1, 1))))
    assert conv.total_usage().cost is None and conv.total_usage().input_tokens == 31


def test_history_keeps_conversations_per_book_privately_and_sets_damaged_files_aside(tmp_path):
    history = History(str(tmp_path))
    conv = Conversation([DUNE, MESSIAH], 'lib-1')
    history.save(conv)
    assert history.summaries('lib-1') == []  # nothing said yet, nothing kept
    conv.ask('Who is Paul?')
    conv.finish(answer_of(TextDelta('The heir.'), Done(model='m', usage=Usage(3, 2, cost=Cost(0.5)))), 'p')
    history.save(conv)
    path = history.path('lib-1', conv.id)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    (summary,) = history.summaries('lib-1', book_id=2)
    assert summary.title == 'Dune (+1)' and summary.turns == 1 and history.summaries('lib-1', book_id=3) == []
    again = history.load('lib-1', conv.id)
    assert again.turns[0].answer == 'The heir.' and again.turns[0].usage.cost.amount == 0.5
    assert again.messages_for('Next?') == conv.messages_for('Next?')
    with open(path, 'w') as f:
        f.write('{"id": ')  # damaged
    with pytest.raises(ValueError, match='could not be read'):
        history.load('lib-1', conv.id)
    assert os.path.exists(path + '.damaged') and not os.path.exists(path)
    other = Conversation([DUNE], 'lib-1')
    other.ask('q')
    other.finish(answer_of(TextDelta('a'), Done()))
    history.save(other)
    with open(history.path('lib-1', 'broken'), 'w') as f:
        json.dump({'not': 'a conversation'}, f)
    assert [s.id for s in history.summaries('lib-1')] == [other.id]
    assert history.damaged and all(p.endswith('.damaged') for p in history.damaged)
    history.delete('lib-1', other.id)
    assert history.summaries('lib-1') == []


def test_books_are_described_from_a_real_library_with_only_the_allowed_fields(sandbox):
    lib = sandbox.make_library(quick_start_epub())
    library = BookLibrary.open(str(lib))
    db = library.db
    book_id = next(iter(db.all_book_ids()))
    db.set_field('tags', {book_id: ('Manual', 'Software')})
    db.set_field('comments', {book_id: '<p>A <b>friendly</b> guide.</p>'})
    plain = book_info(db, book_id)
    assert plain.title and plain.authors and plain.tags == () and plain.notes == ()
    rich = book_info(db, book_id, ('tags', 'comments', 'publisher'))
    assert rich.tags == ('Manual', 'Software') and 'friendly' in rich.notes[0] and '<b>' not in rich.notes[0]
    assert library.has_book(book_id) and not library.has_book(10 ** 6)
    assert library.library_id
    assert BookLibrary.open(str(sandbox.root / 'nowhere')) is None


def test_viewer_actions_ask_about_the_selection():
    from calibre_plugins.bookai.conversation.actions import viewer_action_prompt, viewer_actions_builtin
    actions = {a.name: a for a in viewer_actions_builtin()}
    assert list(actions) == ['explain', 'define', 'summarize', 'points', 'grammar', 'translate']
    book = BookInfo(1, 'Dune', ('Frank Herbert',))
    text = 'The spice must flow, and the worms must be kept.'
    p = viewer_action_prompt(actions['explain'], text, book, 'German')
    assert p == ('Explain the following text in simple, easy to understand language. \n------------\n\n'
                 'Text to analyze: ' + text)
    # a single word: the word variants of Explain, Define and Translate
    assert viewer_action_prompt(actions['define'], 'melange', book).startswith(
        'Explain the meaning and common usages of the following word.')
    assert viewer_action_prompt(actions['translate'], 'melange', book, 'German').startswith(
        'Translate the following word into the language German.')
    assert 'Word to analyze: melange' in viewer_action_prompt(actions['summarize'], 'melange', book)


def test_a_conversation_while_reading():
    conv = Conversation([BookInfo(3, 'Dune', ('Frank Herbert',))], 'lib', language='French', selection='melange')
    system = conv.messages_for('q')[0].text
    assert system.startswith('I am currently reading the book: Dune by Frank Herbert. I have some questions about '
                             'content from this book.')
    assert system.endswith('If you can speak in French, then respond in French.')
    again = Conversation.from_dict(conv.as_dict())
    assert again.selection == 'melange' and again.messages_for('q')[0].text == system


def test_a_new_actions_name_is_made_from_its_label():
    from calibre_plugins.bookai.conversation.actions import action_name
    assert action_name('Plot holes!', set()) == 'plot_holes'
    assert action_name('Plot holes!', {'plot_holes', 'plot_holes_2'}) == 'plot_holes_3'
    assert action_name(' ?? ', set()) == 'action'
    assert action_name('Résumé', set()) == 'résumé'
