# License: GPLv3 Copyright: the Book AI developers
"""One way to say a cost and one rule to add costs up, for answers and images alike
(providers.pricing.cost_text and total_cost): the chat's status line (conversation.usage_text and
Conversation.total_usage), the cover window and the many-books job (covers.making.image_summary) and
the command line's cover all say the same figure the same way."""

from types import SimpleNamespace

import pytest

from calibre_plugins.bookai import cli
from calibre_plugins.bookai.conversation.conversation import Conversation, usage_text
from calibre_plugins.bookai.core.images import Image, ImageResult
from calibre_plugins.bookai.core.messages import Cost, Usage
from calibre_plugins.bookai.covers.making import image_summary
from calibre_plugins.bookai.providers.pricing import PRICE_DATE, cost_text, total_cost

REPORTED = Cost(0.04)
ESTIMATED = Cost(0.0012, source='estimated', price_date=PRICE_DATE)


@pytest.mark.parametrize('cost, local, said', [
    (REPORTED, False, '$0.04'),
    (Cost(1.5), False, '$1.50'),
    (ESTIMATED, False, f'about $0.0012 (prices of {PRICE_DATE})'),
    (Cost(0.5, 'EUR'), False, '0.50 EUR'),
    (None, False, 'cost unknown'),
    (None, True, 'no cost: runs on this computer'),
    (REPORTED, True, '$0.04'),  # a cost reported is said, even from this computer
])
def test_a_cost_is_said_one_way(cost, local, said):
    assert cost_text(cost, local) == said


def test_costs_add_up_by_one_rule():
    assert total_cost([REPORTED, Cost(0.02)]) == Cost(pytest.approx(0.06))
    mixed = total_cost([REPORTED, ESTIMATED])  # one estimated: the total is, dated by its price table
    assert mixed.source == 'estimated' and mixed.price_date == PRICE_DATE
    assert cost_text(mixed) == f'about $0.04 (prices of {PRICE_DATE})'
    assert total_cost([REPORTED, None]) is None  # unknown as soon as one is: never free
    assert total_cost([REPORTED, Cost(1.0, 'EUR')]) is None
    assert total_cost([]) is None


def answered(conv, cost):
    from calibre_plugins.bookai.core.messages import Answer, Done, TextDelta
    conv.ask('a question')
    answer = Answer()
    answer.add(TextDelta('An answer.'))
    answer.add(Done(model='m', usage=Usage(10, 5, cost=cost)))
    conv.finish(answer)


def test_answers_images_and_the_command_line_say_the_same_figure_the_same_way():
    from calibre_plugins.bookai.conversation.books import BookInfo
    conv = Conversation([BookInfo(1, 'A book')])
    answered(conv, REPORTED)
    answered(conv, ESTIMATED)
    total = conv.total_usage()
    assert total.cost == total_cost([REPORTED, ESTIMATED])  # the chat's total: the same rule as the covers'
    # before, the chat's total lost the date: "about $0.04 (prices of )"
    assert usage_text(total) == f'20 tokens in, 10 out · about $0.04 (prices of {PRICE_DATE})'
    result = ImageResult(Image(b'', 'image/png', 1, 1), 'img-model', Usage(cost=ESTIMATED))
    said = f'Model: img-model · This image: about $0.0012 (prices of {PRICE_DATE})'
    assert image_summary(result, local=False) == said

    class Provider:
        display_name, connection = 'A service', SimpleNamespace(is_local=False)
    assert cli.cover_summary(Provider(), result) == said  # the command line says it as the window does
    unknown = ImageResult(Image(b'', 'image/png', 1, 1), '', Usage())
    assert cli.cover_summary(Provider(), unknown) == 'Model: A service · This image: cost unknown'
