# License: GPLv3 Copyright: the Book AI developers
"""Each host is the calibre it claims to be: the plugin's targets, for real."""

import importlib.util

import pytest

from helpers.books import library_epub
from helpers.project import HOST
from helpers.sandbox import tracebacks

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


# What Book AI decides its names and keys from, on each host without Book AI: the viewer's Lookup panel
# (a tab widget from 8.11, with calibre's "Ask AI" where calibre has its AI) and who holds calibre's AI keys
LOOKUP_TABS = {'bookworm': None, 'trixie': None, 'forky': ['Dictionary', 'Ask AI'], 'noai': ['Dictionary']}
CALIBRES_AI_KEYS = {'Ctrl+Alt+A': 'Discuss book with AI', 'Ctrl+Shift+A': 'Ask AI for what to read next'}


@pytest.mark.skipif(HOST not in EXPECTED, reason=f'not one of the project\'s hosts: {HOST}')
def test_calibres_own_ai_tab_and_keys_are_where_the_host_has_its_ai(sandbox, library):
    """Nothing of calibre's AI is left in the viewer or the keyboard map where calibre's AI was removed."""
    report, r = sandbox.probe('viewer', [library_epub(library)])
    assert report['rendered'] and not report['timeout'] and not tracebacks(r.output), r
    assert report['lookup_tabs'] == LOOKUP_TABS[HOST]
    report, r = sandbox.probe('main_window', [library])
    assert report['probed'] and not report['timeout'] and not tracebacks(r.output), r
    has_ai = EXPECTED[HOST][1]
    for key, name in CALIBRES_AI_KEYS.items():
        assert report['keymap'][key]['bound_to'] == ([name] if has_ai else []), (key, report['keymap'][key])
        assert report['keymap'][key]['wanted_by_others'] == ([name] if has_ai else []), report['keymap'][key]
