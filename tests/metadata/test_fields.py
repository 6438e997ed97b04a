# License: GPLv3 Copyright: the Book AI developers
"""The fields AI metadata fills (metadata/fields.py): each asked for by a JSON Schema every service
takes, and each answer held to its field whatever the model sent: the library's spelling of its
tags, new tags marked, sentences and hundreds of tags refused or cut, a description whose markup
and script never survive, languages calibre knows, a custom column's type and values."""

import json

import pytest

from calibre_plugins.bookai.metadata.fields import (
    MAX_DESCRIPTION_CHARS, MAX_TAGS, NotFillable, answer_schema, checked, custom_field, standard_field,
)

TAGS = standard_field('tags')
DESCRIPTION = standard_field('comments')
LANGUAGES = standard_field('languages')
MOOD = custom_field('#mood', {'datatype': 'enumeration', 'name': 'Mood',
                              'display': {'enum_values': ['Dark', 'Hopeful', 'Funny']}}, 'the mood of the book')


def test_the_schema_names_every_field_by_a_name_any_service_takes():
    level = custom_field('#Reading-Level', {'datatype': 'int', 'name': 'Reading level'}, 'x' * 10_000)
    schema = answer_schema([TAGS, DESCRIPTION, LANGUAGES, MOOD, level])
    assert schema['required'] == ['tags', 'description', 'languages', 'custom_mood', 'custom_reading_level']
    assert schema['properties']['tags'] == {'type': 'array', 'items': {'type': 'string'}}
    assert schema['properties']['custom_mood'] == {'type': 'string', 'enum': ['Dark', 'Hopeful', 'Funny']}
    assert schema['properties']['custom_reading_level'] == {'type': 'integer'}
    assert schema['additionalProperties'] is False and json.loads(json.dumps(schema)) == schema
    assert len(level.instruction) == 500


@pytest.mark.parametrize('column', [{'datatype': 'composite', 'name': 'Computed'}, {'datatype': 'datetime'},
                                    {'datatype': 'series'}, {'datatype': 'enumeration', 'display': {}},
                                    {'datatype': None}])
def test_a_column_that_cannot_be_filled_says_so(column):
    with pytest.raises(NotFillable):
        custom_field('#x', column)
    with pytest.raises(NotFillable):
        standard_field('title')


def test_tags_take_the_librarys_spelling_and_new_ones_are_marked():
    got = checked(TAGS, ['science fiction', 'Space Opera', 'science FICTION', ' robots. ', ''],
                  ['Science Fiction', 'Classics'])
    assert got.value == ('Science Fiction', 'Space Opera', 'robots')
    assert got.new == ('Space Opera', 'robots') and got.notes == ()
    assert checked(TAGS, 'Fantasy, Dragons,,').value == ('Fantasy', 'Dragons')  # one string of tags


def test_sentences_and_hundreds_of_tags_are_left_out_in_words():
    sentence = 'This book is a sweeping tale of love and loss across the generations'
    got = checked(TAGS, [sentence, 'x' * 41] + [f'tag {n}' for n in range(500)])
    assert got.value == tuple(f'tag {n}' for n in range(MAX_TAGS))
    assert got.notes == ('Tags: 2 values were sentences, not tags: left out.',
                         f'Tags: 198 values were given; the first {MAX_TAGS} are kept.')
    assert checked(TAGS, [sentence]).value is None


@pytest.mark.parametrize('value', [42, {'a': 1}, [1, 2], None, '', [], True])
def test_a_value_of_another_kind_is_not_kept(value):
    for f in (TAGS, DESCRIPTION, LANGUAGES, MOOD):
        got = checked(f, value)
        assert got.value is None and got.notes, (f, value)


def test_control_characters_never_reach_a_tag():
    got = checked(TAGS, ['\x1b[31mred\x1b[0m', 'left\u202eright', 'a\nb'])
    assert all('\x1b' not in t and '\u202e' not in t and '\n' not in t for t in got.value)


def test_a_description_is_inert_html_of_its_paragraphs():
    got = checked(DESCRIPTION, 'I <3 books & 2 > 1, **truly** *so*.\n\nSecond\x1b[2J paragraph.')
    assert got.value == '<p>I &lt;3 books &amp; 2 &gt; 1, <b>truly</b> <i>so</i>.</p><p>Second[2J paragraph.</p>'


def test_a_description_in_html_keeps_its_words_and_never_its_script():
    html = ('<div onclick="steal()"><p>A <i>quiet</i> story.</p><script>alert(1)</script>'
            '<img src="javascript:x" onerror="y"><a href="javascript:z">link</a><style>p{}</style></div>')
    got = checked(DESCRIPTION, html)
    assert '<i>quiet</i> story' in got.value and 'link' in got.value  # its words, and its emphasis
    for bad in ('<script', 'alert', 'onclick', 'javascript', 'onerror', '<img', '<a ', '<style', 'Unnamed'):
        assert bad not in got.value, bad


def test_a_description_too_long_is_cut_after_a_paragraph():
    para = 'word ' * 400
    got = checked(DESCRIPTION, '\n\n'.join([para] * 10))
    assert got.value.count('<p>') == MAX_DESCRIPTION_CHARS // len(para.strip()) and got.notes
    one = checked(DESCRIPTION, 'x ' * 100_000)
    assert len(one.value) < MAX_DESCRIPTION_CHARS + 20 and one.value.endswith('…</p>') and one.notes


def test_languages_are_calibres_codes():
    got = checked(LANGUAGES, ['English', 'fr', 'Gibberishese', 'eng'])
    assert got.value == ('eng', 'fra') and got.notes == ('Languages: 1 value is not a language calibre knows: '
                                                         'left out.',)
    assert checked(LANGUAGES, 'German').value == ('deu',)


def test_a_fixed_list_takes_only_its_values():
    assert checked(MOOD, 'hopeful').value == 'Hopeful'
    assert checked(MOOD, 'Melancholy').value is None


@pytest.mark.parametrize('datatype, value, expected', [
    ('int', 7, 7), ('int', '12', 12), ('int', 7.5, None), ('int', float('nan'), None), ('int', '1e400', None),
    ('int', True, None), ('float', 2.5, 2.5), ('float', 'inf', None), ('rating', 4.5, 9), ('rating', 6, None),
    ('rating', -1, None), ('bool', True, True), ('bool', 'no', False), ('bool', 'maybe', None),
    ('text', 'Adult', 'Adult'), ('text', 'x' * 201, None), ('text', 'a\nb', 'a b'),
])
def test_a_custom_columns_type_holds(datatype, value, expected):
    f = custom_field('#c', {'datatype': datatype, 'name': 'C'})
    assert checked(f, value).value == expected


def test_a_description_in_another_language_than_asked_is_said():
    from calibre_plugins.bookai.metadata.fields import language_note, seems_written_in, standard_field
    french = ("<p>Une jeune femme et sa sœur arrivent dans la maison de leur tante, qui les accueille avec "
              "des secrets pour chacune et une lettre que personne n'a lue.</p>")
    english = '<p>A young woman and her sister arrive at the house of their aunt, who has a secret for each of them.</p>'
    f = standard_field('comments')
    assert seems_written_in(french) == 'French' and seems_written_in(english) == 'English'
    assert language_note(f, french, 'English') == (
        'Comments: it seems written in French, not in English: read it before you apply it.')
    assert language_note(f, english, 'English') == '' and language_note(f, french, 'French') == ''
    assert language_note(f, 'Short.', 'English') == ''        # too short to tell
    assert language_note(f, french, 'Klingon') == ''          # a language it cannot tell
    assert language_note(standard_field('tags'), ['Roman'], 'English') == ''
