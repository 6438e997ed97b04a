# License: GPLv3 Copyright: the Book AI developers
"""Text from outside as it may be shown (core.printable): every character that steers a terminal
or reorders text shown as an escape, wherever a peer's words arrive (a Done, an ImageResult, a
Model, a ProviderError, a book's names), the command line's plain and --json output included."""

import io
import json

import pytest

from calibre_plugins.bookai import cli
from calibre_plugins.bookai.conversation.books import BookInfo
from calibre_plugins.bookai.core.errors import ProviderError
from calibre_plugins.bookai.core.images import Image, ImageResult
from calibre_plugins.bookai.core.messages import Done
from calibre_plugins.bookai.core.printable import CONTROL, inert, one_line, without_controls
from calibre_plugins.bookai.providers.models import Model

HOSTILE = 'name\x1b]52;c;aG9zdGlsZQ==\x07\x1b[2J\x9b1m\r\x00\u202eevil\u2066\u200f\ud800end'
RTL_OVERRIDE = '\u202e'


def test_every_steering_character_is_shown_as_an_escape():
    shown = inert(HOSTILE)
    assert not CONTROL.search(shown) and shown.isprintable()
    assert shown == ('name\\x1b]52;c;aG9zdGlsZQ==\\x07\\x1b[2J\\x9b1m\\x0d\\x00\\u202eevil\\u2066\\u200f'
                     '\\ud800end')
    assert inert(shown) == shown and one_line(one_line(HOSTILE)) == one_line(HOSTILE)  # again: nothing changes


def test_line_feeds_and_tabs_stay_and_one_line_joins_them():
    assert inert('a\n\tb') == 'a\n\tb'
    assert one_line('  a\n\tb\r\nc\u2028d  ') == 'a b c d'
    assert without_controls(HOSTILE) == 'name]52;c;aG9zdGlsZQ==[2J1mevilend'


def test_text_of_a_right_to_left_language_keeps_its_letters():
    hebrew = 'שלום עולם'
    assert inert(hebrew) == hebrew and one_line(hebrew) == hebrew


@pytest.mark.parametrize('made', [
    lambda: Done(model=HOSTILE, response_id=HOSTILE).model,
    lambda: Done(model=HOSTILE, response_id=HOSTILE).response_id,
    lambda: ImageResult(Image(b'x', 'image/png', 1, 1), HOSTILE, revised_prompt=HOSTILE).model,
    lambda: ImageResult(Image(b'x', 'image/png', 1, 1), HOSTILE, revised_prompt=HOSTILE).revised_prompt,
    lambda: ImageResult(Image(b'x', 'image/png', 1, 1), 'm', text=HOSTILE).text,
    lambda: Model(HOSTILE).id,
    lambda: Model('m', HOSTILE).display_name,
    lambda: Model('m', description=HOSTILE).description,
    lambda: Model('m', traits=(HOSTILE,)).traits[0],
    lambda: ProviderError(HOSTILE, HOSTILE, HOSTILE).human(),
    lambda: ProviderError('x', details=HOSTILE).details,
    lambda: BookInfo(1, HOSTILE, (HOSTILE,), HOSTILE).title,
    lambda: BookInfo(1, HOSTILE, (HOSTILE,), HOSTILE).authors[0],
    lambda: BookInfo(1, HOSTILE, (HOSTILE,), HOSTILE).series,
], ids=['done model', 'done id', 'image model', 'revised prompt', 'image words', 'model id', 'model name',
        'model description', 'model trait', 'error words', 'error details', 'book title', 'book author',
        'book series'])
def test_a_peers_words_are_inert_as_they_arrive(made):
    text = made()
    assert not CONTROL.search(text), text
    assert '\\x1b' in text and '\\u202e' in text  # shown, not dropped: the reader sees something was there


def test_the_command_line_prints_them_inert_in_plain_and_json():
    plain, as_json = io.StringIO(), io.StringIO()
    cli.say(plain, HOSTILE)
    cli.emit(as_json, {'type': 'text', 'text': HOSTILE + '\u2028'})
    for out in (plain.getvalue(), as_json.getvalue()):
        assert not CONTROL.search(out) and '\u2028' not in out, out
    assert RTL_OVERRIDE not in plain.getvalue() and '\\u202e' in plain.getvalue()
    assert json.loads(as_json.getvalue())['text'] == HOSTILE + '\u2028'  # --json gives back what came, escaped
