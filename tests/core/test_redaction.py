# License: GPLv3 Copyright: the Book AI developers
"""Secrets: every form a service may echo a secret in is redacted, and only secrets are."""

import base64
from urllib.parse import quote

import pytest

from calibre_plugins.bookai.core.errors import (
    REDACTED, NoCredit, Secrets, redact, secrets_in_header, secrets_in_url, without_userinfo,
)
from helpers.secret_forms import forms_of, leaks

KEY = 'sk-live-7f3Qz9/Xa+Lm2Kp0Vw8Rt5Yb~é'


@pytest.mark.parametrize('form', list(forms_of(KEY)))
def test_every_form_of_a_key_is_redacted(form):
    text = f'quota exceeded for Bearer {forms_of(KEY)[form]} (see docs)'
    redacted = Secrets([KEY]).redact(text)
    assert leaks(redacted, KEY) == [] and REDACTED in redacted and redacted.startswith('quota exceeded for')
    assert leaks(text, KEY)  # the test's own check does see the form before


def test_basic_auth_of_user_and_password_is_redacted():
    secrets = Secrets(secrets_in_url('http://reader:pa55-w0rd@host/v1'))
    for text in ('Authorization: Basic ' + base64.b64encode(b'reader:pa55-w0rd').decode(),
                 'http://reader:pa55-w0rd@host/v1', 'reader%3Apa55-w0rd pa55-w0rd'):
        redacted = secrets.redact(text)
        assert 'pa55-w0rd' not in redacted
        assert base64.b64encode(b'reader:pa55-w0rd').decode()[:-4] not in redacted


def test_a_token_given_as_the_user_of_an_address_is_a_secret():
    assert 'ghp_token123456' in secrets_in_url('https://ghp_token123456@host/v1')
    assert secrets_in_url('https://host/v1') == [] and secrets_in_url('http://[::1') == []
    assert without_userinfo('https://me:pw@host:8/v1?x#y') == 'https://host:8/v1?x#y'
    assert without_userinfo('https://host/v1') == 'https://host/v1'


def test_header_values_their_tokens_and_basic_credentials():
    basic = base64.b64encode(b'me:hunter2-long').decode()
    assert set(secrets_in_header('Basic ' + basic)) >= {'Basic ' + basic, basic, 'me:hunter2-long', 'hunter2-long'}
    assert set(secrets_in_header('Bearer abcdefgh')) == {'Bearer abcdefgh', 'abcdefgh'}


def test_short_values_are_not_secrets_and_text_is_otherwise_untouched():
    assert not Secrets(['abc', '', None, 'five5'])
    text = 'An answer about abc and five5.'
    assert Secrets(['abc', 'five5']).redact(text) == text and redact(text, ('abc',)) == text
    assert Secrets([KEY]).redact('Nothing secret here, not even sk-live.') == 'Nothing secret here, not even sk-live.'


def test_redact_with_plain_values_knows_every_form():
    assert leaks(redact('x ' + base64.b64encode(KEY.encode()).decode(), (KEY,)), KEY) == []


def test_the_beginning_of_a_secret_at_the_end_of_a_piece_is_found():
    secrets = Secrets([KEY])
    assert secrets.unfinished_start('The key is sk-li') == len('The key is ')
    assert secrets.unfinished_start('Nothing to hold') == len('Nothing to hold')
    assert secrets.unfinished_start('') == 0
    token = 'eyJ' + 'aB3x' * 1000  # a long header value (a JWT): its beginnings are not all kept in memory
    secrets = Secrets([token])
    assert secrets.unfinished_start('text ' + token[:2500]) == 5 and secrets.unfinished_start('text eyJ') == 5
    assert secrets.unfinished_start('text ' + token[:2500] + '!') == len(token[:2500]) + 6


def test_an_error_keeps_nothing_secret():
    try:
        try:
            raise ValueError(KEY)
        except ValueError:
            raise NoCredit('Your account has no credit left.', provider_message=f'quota for {KEY}',
                           details=f'Traceback ... {quote(KEY, safe="")}')
    except NoCredit as e:
        error = Secrets([KEY]).redact_error(e)
    for text in (str(error), repr(error), error.provider_message, error.details, error.sentence, error.human()):
        assert leaks(text, KEY) == [], text
    assert error.__context__ is None and error.__cause__ is None
    assert str(error) == f'Your account has no credit left. The service said: quota for {REDACTED}'


# issue 26: the key in another case and re-encoded; every field of a value; a text cut short

def test_the_text_around_a_key_keeps_its_case_and_its_place():
    secrets = Secrets([KEY])
    text = f'ÉCOLE İstanbul ΣΟΦΟΣ said {KEY.upper()}; then Straße and {KEY.lower()}!'
    assert secrets.redact(text) == f'ÉCOLE İstanbul ΣΟΦΟΣ said {REDACTED}; then Straße and {REDACTED}!'


def test_a_short_value_is_no_secret_in_any_case_or_form():
    secrets = Secrets(['Abc12', 'ab'])
    text = 'abc12 ABC12 %41%62%63%31%32 &#65;&#98;&#99;&#49;&#50; 4162633132'
    assert not secrets and secrets.redact(text) == text


def test_what_only_looks_like_a_form_is_left_alone():
    secrets = Secrets([KEY])
    text = 'sk-live-7f3Qz9 is how keys begin; %73%6B%2D and &#115;&#107; and 736b2d6c are not keys.'
    assert secrets.redact(text) == text


@pytest.mark.parametrize('form', ['lower', 'percent-every-byte', 'json-u', 'html-hex', 'hex', 'bearer-lower'])
def test_a_form_inside_a_longer_word_is_still_found(form):
    echoed = forms_of(KEY)[form]
    redacted = Secrets([KEY]).redact(f'abc{echoed}xyz')
    assert leaks(redacted, KEY) == [] and REDACTED in redacted


def test_every_beginning_of_every_form_at_the_end_of_a_piece_is_held_back():
    """Where a piece of a stream may stop inside the key, in any form: all of what may be the key
    is held back (from where the form begins), none of what comes before it."""
    secrets = Secrets([KEY])
    for name, form in forms_of(KEY).items():
        if name.startswith(('base64', 'bearer')):  # base64's first characters depend on what is before it
            continue
        for n in range(1, len(form)):
            assert secrets.unfinished_start('Before. ' + form[:n]) == len('Before. '), (name, n)


def test_redacted_reaches_every_string_of_a_value_and_keeps_the_rest():
    from calibre_plugins.bookai.core.messages import Cost, Done, Usage, WebLink
    secrets = Secrets([KEY])
    done = Done(model=f'model-{KEY.lower()}', finish_reason=quote(KEY, safe=''), usage=Usage(1, 2, cost=Cost(
        0.5, 'USD', 'reported')), web_links=(WebLink(f'Page {KEY}', f'https://e.com/?k={KEY}'),),
        response_id=KEY.encode().hex())
    got = secrets.redacted(done)
    assert got.model == f'model-{REDACTED}' and got.finish_reason == REDACTED and got.response_id == REDACTED
    assert got.web_links == (WebLink(f'Page {REDACTED}', f'https://e.com/?k={REDACTED}'),)
    assert got.usage is done.usage  # nothing secret in it: the same object
    value = {'a': [KEY, (1, 2.5, None, b'bytes ' + KEY.encode())], KEY: {'b': 'plain'}}
    assert secrets.redacted(value) == {'a': [REDACTED, (1, 2.5, None, b'bytes ' + KEY.encode())],
                                       REDACTED: {'b': 'plain'}}
    plain = {'a': ['nothing', ('here',)]}
    assert secrets.redacted(plain) is plain
    data = 'A' * 70000 + KEY  # longer than LONGEST_FIELD: data (an image's base64), not words
    assert secrets.redacted(data) is data and secrets.redacted(data, longest=len(data)).endswith(REDACTED)
    assert Secrets([]).redacted(value) is value


def test_a_field_cut_inside_a_key_keeps_no_beginning_of_it():
    secrets = Secrets([KEY])
    for n in range(1, len(KEY)):
        for cut in (f'The model model-{KEY[:n]}', f'The model model-{KEY[:n]}…', f'x {quote(KEY, safe="")[:n]}'):
            field = secrets.redact_field(cut)
            if n >= 6:
                assert KEY[:6] not in field, field
                assert field.endswith(REDACTED) or field.endswith(REDACTED + '…'), field
            else:
                assert field == cut  # too short to be told from words
    assert secrets.redact_field('Ends with words.…') == 'Ends with words.…'


def test_an_errors_cut_texts_keep_no_beginning_of_a_key():
    error = NoCredit('No credit.', provider_message=f'quota for {KEY[:20]}…', details='x' * 10 + KEY[:12])
    Secrets([KEY]).redact_error(error)
    for text in (str(error), error.provider_message, error.details):
        assert KEY[:6] not in text, text
    assert error.provider_message == f'quota for {REDACTED}…' and error.details == 'x' * 10 + REDACTED
