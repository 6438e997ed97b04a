# License: GPLv3 Copyright: the Book AI developers
"""Each host is the calibre it claims to be: the plugin's targets, for real."""

import importlib.util

import pytest

from helpers.project import HOST

EXPECTED = {  # host: (calibre major.minor, calibre's own AI present)
    'bookworm': ((6, 13), False),
    'trixie': ((8, 5), False),
    'forky': ((9, 17), True),
    'noai': ((9, 17), False),
}


@pytest.mark.skipif(HOST not in EXPECTED, reason=f'not one of the project\'s hosts: {HOST}')
def test_host_is_the_calibre_it_claims():
    from calibre.constants import numeric_version
    version, has_ai = EXPECTED[HOST]
    assert tuple(numeric_version[:2]) == version
    assert (importlib.util.find_spec('calibre.ai') is not None) == has_ai
    import calibre.customize
    assert hasattr(calibre.customize, 'AIProviderPlugin') == has_ai
    from calibre.customize.builtins import plugins
    builtin_ai_actions = {p.name for p in plugins} & {'Discuss book with AI', 'AI Generate Cover'}
    assert bool(builtin_ai_actions) == has_ai
