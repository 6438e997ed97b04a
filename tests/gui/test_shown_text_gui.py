# License: GPLv3 Copyright: the Book AI developers
"""What the windows show cannot lie, offscreen: the model chooser lists one row per id however
often a list names it, and a price of inf, 1e300, NaN or -5 as "Unknown" (never "$inf" or a
301-digit figure), nor sorts by it; the chat's Sources show a look-alike host as the punycode a
click opens and no user:password@, in the link, its tooltip and the site beside it; the cost
line says "cost unknown" for a cost that is not money."""

import math
import re

from qt.core import Qt

from calibre_plugins.bookai.conversation.conversation import Turn, usage_text
from calibre_plugins.bookai.core.messages import Cost, Usage, WebLink
from calibre_plugins.bookai.core.web_links import kept_links
from calibre_plugins.bookai.gui.chat import sources_html
from calibre_plugins.bookai.gui.model_chooser import ModelChooser, details_html, dollars, per_million
from calibre_plugins.bookai.providers.models import Model

UNTRUE = (math.inf, 1e300, math.nan, -5.0)


def hostile_models() -> list[Model]:
    models = []
    for i, price in enumerate(UNTRUE):
        models.append(Model(f'x/untrue-{i}', f'Untrue {i}', 1e9,
                            pricing=(('prompt', price), ('completion', price), ('request', price), ('image', price))))
    models += [Model('x/same', 'Same, first'), Model('x/same', 'Same, second'), Model('x/same', 'Same, third'),
               Model('x/cheap', 'Cheap', pricing=(('prompt', 1e-7), ('completion', 2e-7)))]
    return models


def test_the_chooser_lists_one_row_per_id_and_untrue_prices_as_unknown(qapp, prefs):
    d = ModelChooser(hostile_models(), 'x/same', 'OpenRouter')
    d.show()
    qapp.processEvents()
    ids = [d.list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(d.list.count())]
    assert sorted(ids) == sorted({m.id for m in hostile_models()}) and d.counts.text() == '6 models'
    assert d.list.currentItem().text() == 'Same, first'
    for key in ('cheapest', 'expensive'):  # an unknown price is neither the lowest nor the highest
        d.sort.setCurrentIndex(d.sort.findData(key))
        assert d.list.item(0).data(Qt.ItemDataRole.UserRole) == 'x/cheap'
    for row in range(d.list.count()):
        d.list.setCurrentRow(row)
        model_id, text = d.list.item(row).data(Qt.ItemDataRole.UserRole), d.details.toPlainText()
        assert model_id in text
        assert 'inf' not in text.lower() and 'nan' not in text.lower() and '$-' not in text
        assert not re.search(r'\d{20}', text)
        if model_id.startswith('x/untrue'):
            assert 'Unknown' in text
    d.close()


def test_price_figures_are_money_or_unknown():
    for price in UNTRUE + (1e6,):
        assert per_million(price) == dollars(price) == 'Unknown'
    assert per_million(2.5e-7) == '$0.25' and dollars(0.04) == '$0.04'
    html = details_html(Model('x/y', 'Y', pricing=(('prompt', math.inf), ('completion', 1e300))))
    assert 'Unknown' in html and 'inf' not in html


def test_the_chats_sources_show_what_a_click_opens(qapp):
    turn = Turn('q', 'An answer.', finish_reason='stop')
    turn.web_links, turn.web_links_left_out = kept_links([
        WebLink('PayPal', 'https://user:hunter2@раураl.com/login'), WebLink('', 'https://a:b@example.org/x')])
    html = sources_html(turn)
    assert 'hunter2' not in html and 'a:b@' not in html and 'раураl' not in html
    assert 'href="https://xn--l-7sba6dbr.com/login"' in html and '— xn--l-7sba6dbr.com' in html
    assert 'href="https://example.org/x"' in html
    # a History written before: held to the same rules when shown
    turn.web_links = (WebLink('PayPal', 'https://user:hunter2@раураl.com/login'),)
    html = sources_html(turn)
    assert 'hunter2' not in html and 'раураl' not in html and 'xn--l-7sba6dbr.com' in html


def test_a_cost_that_is_not_money_is_said_to_be_unknown():
    for amount in UNTRUE:
        text = usage_text(Usage(10, 2, cost=Cost(amount)))
        assert 'cost unknown' in text and '$' not in text
