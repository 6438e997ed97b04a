# License: GPLv3 Copyright: the Book AI developers
"""The battery's own eyes: a verdict that saw nothing would pass every case. Each check of
hostile/verdict.py, and the battery's detector of the key in every encoding, is shown here to see
what it must see, and to pass what is right."""

import math

import pytest

from hostile import payloads as P
from hostile import verdict
from hostile.isolation import Observed


class Entry:
    name = 'test/entry'
    surface = type('S', (), {'may_raise': ('calibre_plugins.bookai.',)})()


@pytest.mark.parametrize('form', list(P.key_forms()))
def test_the_key_is_seen_in_every_form_and_not_once_redacted(form):
    text = f'quota exceeded for {P.key_forms()[form]} (see the docs)'
    assert P.leaked(text), form
    assert not P.leaked(text.replace(P.key_forms()[form], '[redacted]'))


def test_a_case_that_ended_well_passes():
    seen = Observed(sentence='The service sent more than 16 MB, the most Book AI accepts.', growth=10 << 20)
    assert verdict.problems(Entry, 'oversized', '', seen, 16 << 20, False) == []


@pytest.mark.parametrize('seen, attack, word', [
    (Observed('hung', seconds=60.0, where='File "x.py", line 1'), 'trickle', 'did not end'),
    (Observed('died', where='signal 9'), 'oversized', 'died'),
    (Observed('raised', 'builtins.AttributeError', "'NoneType' object has no attribute 'get'"), 'wrong_types',
     'traceback'),
    (Observed('raised', 'builtins.ValueError', 'cannot convert float NaN to integer'), 'numbers', 'traceback'),
    (Observed(), 'damaged', 'told nothing'),
    (Observed(sentence='The service said no.', growth=900 << 20), 'many_values', 'more than its bound'),
    (Observed(sentence='The service said no.', shown=[f'model {P.KEY.lower()}']), 'key_echo', 'key leaks'),
    (Observed(sentence='The service said no.', facts={'files': {'manifest.json': P.key_forms()['hex']}}),
     'key_echo', 'into the file'),
    (Observed(sentence=f'The service said: no{P.ESCAPES}'), 'control_chars', 'control character'),
    (Observed(shown=['- A page <https://раураl.com/login>']), 'urls', 'look-alike'),
    (Observed(details=[P.USERINFO_URL]), 'urls', 'password'),
    (Observed(facts={'usage': {'cost': math.nan}}), 'numbers', 'no money'),
    (Observed(facts={'json_lines': ['{"cost": NaN}']}), 'numbers', 'not JSON'),
    (Observed(facts={'figures': ['about $-5.0000']}), 'numbers', 'no figure'),
    (Observed(facts={'ran': 'a sentinel was written'}), 'code', 'code from outside ran'),
    (Observed(sentence='The book was read.', facts={'lost': 'the old cover is gone'}), 'crafted_image', 'lost'),
])
def test_what_is_wrong_is_seen(seen, attack, word):
    found = verdict.problems(Entry, attack, '', seen, 0, False)
    assert any(word in p for p in found), found


def test_a_quiet_entry_may_fall_back_without_a_word_but_not_hang():
    assert verdict.problems(Entry, 'damaged', '', Observed(), 0, True) == []
    assert verdict.problems(Entry, 'damaged', '', Observed('hung', seconds=20.0), 0, True)
