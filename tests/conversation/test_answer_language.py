# License: GPLv3 Copyright: the Book AI developers
"""The language answers are asked for: calibre's interface language, the book's language
(from its calibre metadata), or a fixed one; the instructions themselves stay English."""

import pytest

from calibre_plugins.bookai.conversation.books import BookInfo, answer_language, interface_language
from calibre_plugins.bookai.conversation.conversation import Conversation
from calibre_plugins.bookai.conversation.library import BookLibrary
from calibre_plugins.bookai.settings.prefs import plugin_prefs
from helpers.books import quick_start_epub

FRENCH = BookInfo(1, 'Le Petit Prince', ('Antoine de Saint-Exupéry',), languages=('fra',))
UNKNOWN = BookInfo(2, 'Untitled', languages=())
GERMAN_TWO_LETTERS = BookInfo(3, 'Der Prozess', ('Franz Kafka',), languages=('de',))


@pytest.fixture
def choice():
    prefs = plugin_prefs()
    before = prefs['answer_language']
    yield lambda value: prefs.__setitem__('answer_language', value)
    prefs['answer_language'] = before


def test_the_books_language_is_named_in_english(choice):
    choice('book')
    assert answer_language([FRENCH]) == 'French'
    assert answer_language([GERMAN_TWO_LETTERS]) == 'German'
    assert answer_language([UNKNOWN, FRENCH]) == 'French'  # the first book that has a language


def test_a_book_without_a_language_falls_back_to_the_interface(choice):
    choice('book')
    assert answer_language([UNKNOWN]) == interface_language()
    assert answer_language([]) == interface_language()  # a question about the library


def test_interface_fixed_and_none(choice):
    choice('interface')
    assert answer_language([FRENCH]) == interface_language()
    choice('Japanese')
    assert answer_language([FRENCH]) == 'Japanese'
    choice('never')
    assert answer_language([FRENCH]) == ''


def test_the_instruction_is_english_and_names_the_books_language(choice, sandbox):
    lib = sandbox.make_library(quick_start_epub())
    library = BookLibrary.open(str(lib))
    book_id = next(iter(library.db.all_book_ids()))
    library.db.set_field('languages', {book_id: ('spa',)})
    choice('book')
    conv = Conversation.about(library, [book_id])
    assert conv.books[0].languages == ('spa',) and conv.language == 'Spanish'
    system = conv.messages_for('What is this book about?')[0].text
    assert system.startswith('I wish to discuss the following book.')
    assert 'If you can speak in Spanish, then respond in Spanish.' in system
    assert 'spa' not in system.split('Spanish')[0]  # the code itself is not sent
    # kept with the conversation
    again = Conversation.from_dict(conv.as_dict())
    assert again.books[0].languages == ('spa',) and again.language == 'Spanish'
