# License: GPLv3 Copyright: the Book AI developers
"""Reasoning effort, set per provider with configure, reaches that provider's request."""

import json

import pytest

from calibre_plugins.bookai.providers.registry import get_provider

from helpers.reasoning import EXPECTED, REASONING, TURNS


def saved_settings(sandbox, name):
    data = json.loads((sandbox.config / 'plugins' / 'bookai.json').read_text('utf-8'))
    return data['providers'][name]


def test_configure_sets_each_providers_reasoning_effort_and_it_reaches_the_wire(cli, sandbox):
    for name, efforts in EXPECTED.items():
        for effort in ('high', 'none'):
            r = cli('configure', name, f'reasoning_effort={effort}')
            assert r.returncode == 0, r
            settings = saved_settings(sandbox, name)
            assert settings['reasoning_effort'] == effort
            settings.update({'api_key': 'k' * 12, 'base_url': 'http://127.0.0.1:9'})
            body = json.loads(get_provider(name, settings=settings).chat_request(TURNS, 'model-x').body)
            assert REASONING[name](body) == efforts[effort], (name, effort)


@pytest.mark.parametrize('value, said', [('extreme', 'is not one of: auto, high, medium, low, none'),
                                         ('', 'is not one of')])
def test_an_effort_that_is_not_one_is_told_in_words(cli, sandbox, value, said):
    r = cli('configure', 'gemini', f'reasoning_effort={value}')
    assert r.returncode == 2 and said in r.stderr, r
