# License: GPLv3 Copyright: the Book AI developers
"""Cover styles: the reader's own saved under unique keys made as calibre makes them, listed
after calibre's with "Custom" last, deleted; a damaged or hostile 'cover_styles' value is
skipped entry by entry, never an error."""

import pytest


def test_saved_styles_get_unique_keys_as_calibre_makes_them(prefs):
    from calibre_plugins.bookai.covers.styles import (
        CoverStyle, all_styles, builtin_styles, save_style, saved_styles, style_by_name,
    )
    assert saved_styles() == []
    a = save_style('Water colour', 'Soft watercolour washes.')
    b = save_style('  Water colour ', 'Another one.')
    c = save_style('Water colour', 'A third.')
    assert (a.name, b.name, c.name) == ('custom_water_colour', 'custom_water_colour_1', 'custom_water_colour_2')
    assert b == CoverStyle('custom_water_colour_1', 'Water colour', 'Another one.')
    assert saved_styles() == [a, b, c]
    assert prefs['cover_styles'][0] == {'name': 'custom_water_colour', 'human_name': 'Water colour',
                                        'template': 'Soft watercolour washes.'}
    names = [s.name for s in all_styles()]
    builtin = [s.name for s in builtin_styles()]
    assert names == builtin[:-1] + [a.name, b.name, c.name, 'custom']
    assert style_by_name(b.name) == b
    assert style_by_name('horror').human_name == 'Horror'
    assert style_by_name('no such style') == builtin_styles()[0]


@pytest.mark.parametrize('name, template', [('', 'x'), ('   ', 'x'), ('Name', ''), ('Name', '  \n'),
                                            ('N' * 101, 'x'), ('Name', 'x' * 10_001)])
def test_a_style_without_a_name_or_instructions_is_refused_in_words(prefs, name, template):
    from calibre_plugins.bookai.covers.styles import save_style, saved_styles
    with pytest.raises(ValueError) as e:
        save_style(name, template)
    assert len(str(e.value).split()) > 3
    assert saved_styles() == []


def test_a_name_that_is_a_builtin_key_gets_another(prefs):
    from calibre_plugins.bookai.covers.styles import save_style, style_by_name
    s = save_style('Custom', 'mine')  # custom_custom: no clash; and a key equal to calibre's is never made
    assert s.name == 'custom_custom'
    prefs['cover_styles'] = [{'name': 'pulp', 'human_name': 'Hijack', 'template': 'evil'}]
    assert style_by_name('pulp').human_name == 'Pulp fiction'


def test_styles_are_deleted(prefs):
    from calibre_plugins.bookai.covers.styles import delete_styles, save_style, saved_styles
    a, b, c = (save_style(n, 't') for n in ('One', 'Two', 'Three'))
    delete_styles([b.name, 'pulp', 'unknown'])
    assert saved_styles() == [a, c]
    delete_styles(iter([a.name]))
    assert saved_styles() == [c]


def test_damaged_and_hostile_entries_are_skipped(prefs):
    from calibre_plugins.bookai.covers.styles import CoverStyle, all_styles, save_style, saved_styles
    good = {'name': 'custom_good', 'human_name': 'Good', 'template': 'fine'}
    prefs['cover_styles'] = [
        'not a dict', 42, None, ['list'],
        {'name': 'custom_a'},                                            # fields missing
        {'name': 5, 'human_name': 'x', 'template': 'y'},                 # not text
        {'name': 'custom_b', 'human_name': ['x'], 'template': 'y'},
        {'name': '', 'human_name': 'x', 'template': 'y'},                 # no key
        {'name': 'custom_c', 'human_name': ' \n\t', 'template': 'y'},    # no name once on one line
        {'name': 'custom\x1b[2J', 'human_name': 'x', 'template': 'y'},   # control characters in the key
        {'name': 'k' * 121, 'human_name': 'x', 'template': 'y'},         # too long
        {'name': 'custom_d', 'human_name': 'x' * 101, 'template': 'y'},
        {'name': 'custom_e', 'human_name': 'x', 'template': 'y' * 10_001},
        {'name': 'noir', 'human_name': 'Not noir', 'template': 'hijack'},  # a built-in key
        good,
        dict(good, human_name='Duplicate'),                              # a key taken earlier
        {'name': 'custom_ctl', 'human_name': 'Two\nlines\x1b[31m', 'template': 't', 'extra': 1},
    ]
    assert saved_styles() == [CoverStyle('custom_good', 'Good', 'fine'),
                              CoverStyle('custom_ctl', 'Two lines\\x1b[31m', 't')]  # shown, not obeyed
    assert [s.name for s in all_styles()][-3:] == ['custom_good', 'custom_ctl', 'custom']
    s = save_style('Good', 'again')  # the damaged entries do not stop saving
    assert s.name == 'custom_good_1' and saved_styles()[-1] == s


def test_a_settings_value_of_the_wrong_kind_gives_no_styles(prefs):
    from calibre_plugins.bookai.covers.styles import all_styles, saved_styles
    for bad in ({'a': 'dict'}, 'text', 3):
        prefs['cover_styles'] = bad  # as a damaged file could hold
        assert saved_styles() == []
        assert len(all_styles()) == 9
