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
