# License: GPLv3 Copyright: the Book AI developers
"""A saved conversation of any wrong shape is "not a saved conversation" (a ValueError the History
sets aside and says), never another exception (issue 26, found by the hostile battery)."""

import pytest

from calibre_plugins.bookai.conversation.conversation import BookInfo, Conversation


def saved() -> dict:
    conv = Conversation([BookInfo(1, 'Dune', ('Frank Herbert',), 'Dune', 1.0)], 'lib')
    conv.turns = []
    d = conv.as_dict()
    d['turns'] = [{'question': 'q', 'answer': 'a', 'places': [['One', 0.5, '', 1, 'EPUB']]}]
    return d


def test_the_good_shape_reads():
    assert Conversation.from_dict(saved()).books[0].title == 'Dune'


@pytest.mark.parametrize('damage', [
    lambda d: d['books'][0].__setitem__('book_id', float('inf')),  # int(inf): OverflowError
    lambda d: d['turns'][0].__setitem__('places', [{}]),            # a place as an object
    lambda d: d['turns'][0].__setitem__('places', [[]]),            # a place with nothing in it
    lambda d: d.__setitem__('created', 'soon'),
    lambda d: d.__setitem__('books', 7),
    lambda d: d['books'][0].__setitem__('authors', [0]),           # an author that is no text: not searchable
    lambda d: d['books'][0].__setitem__('tags', 'x'),
])
def test_every_wrong_shape_is_not_a_saved_conversation(damage):
    d = saved()
    damage(d)
    with pytest.raises(ValueError, match='not a saved conversation'):
        Conversation.from_dict(d)
