# License: GPLv3 Copyright: the Book AI developers
"""A cover's prompt is calibre's: the same words as calibre 9.17's build_generation_prompt for the
same book and choices (on forky, calibre's own function run beside ours; on the other hosts,
against the prompts recorded from that run, tests/covers/fixtures/calibre-9.17-prompts.json:
BOOKAI_RECORD_COVER_PROMPTS=1 on forky writes them again). Then what Book AI does beyond
calibre: a calibre template that fails, or that gives control characters, never reaches the
cover as it is."""

import json
import os

import pytest

from helpers.project import HOST, TESTS

RECORDED = TESTS / 'covers' / 'fixtures' / 'calibre-9.17-prompts.json'

TOYSHOP_COMMENTS = '''<div><p>Famous poet Richard Cadogan takes an impromptu holiday to <b>Oxford</b>, where he
studied at the university.</p><p>After finding himself in a high street, in the middle of the night, he stumbles
across a <i>toyshop</i> &amp; finds the murdered body of an elderly woman.</p>
<ul><li>A classic</li><li>Of the golden age</li></ul></div>'''


def metadata(case: str):
    from calibre.ebooks.metadata.book.base import Metadata
    if case == 'toyshop':
        mi = Metadata('The Moving Toyshop', ['Edmund Crispin'])
        mi.series, mi.series_index = 'Gervase Fen', 3
        mi.comments = TOYSHOP_COMMENTS
    elif case == 'two_authors':
        mi = Metadata('Le Comte de Monte-Cristo: “L’évasion”', ['Alexandre Dumas', 'Auguste Maquet'])
        mi.comments = 'Plain text comments, no HTML at all.\n\nA second paragraph.'
    elif case == 'fraction_series':
        mi = Metadata('Interlude', ['Ann Author'])
        mi.series, mi.series_index = 'The Long Saga', 2.5
        mi.comments = '<p>' + 'A very long description. ' * 150 + '</p>'  # over 2,000 characters: cut as calibre
    else:
        raise KeyError(case)
    return mi


CHOICES = {  # name: (style, title, authors, series, description, templates, instructions, refinements)
    'defaults': ('pulp', True, True, True, False, {}, '', ()),
    'no_text': ('noir', False, False, False, False, {}, '', ()),
    'only_title_with_description': ('literary', True, False, False, True, {}, '', ()),
    'everything': ('fantasy', True, True, True, True, {}, 'Use a warm palette.\nNo people.', ()),
    'templates': ('scifi', True, True, True, False,
                  {'title': 'program: uppercase($title)', 'authors': '{authors:sublist(0,1,&)}',
                   'series': '{series} #{series_index}'}, '', ()),
    'refinements': ('romance', True, True, True, True, {}, 'Extra words.',
                    ('make the background darker', 'add a moon')),
}
BOOKS = ('toyshop', 'two_authors', 'fraction_series')
CASES = [(book, choice) for book in BOOKS for choice in CHOICES]


def ours(book: str, choice: str, refine: str = '') -> str:
    from calibre_plugins.bookai.covers.prompt import CoverChoices, cover_prompt, cover_texts, refine_prompt
    from calibre_plugins.bookai.covers.styles import style_by_name
    style, title, authors, series, description, templates, instructions, refinements = CHOICES[choice]
    choices = CoverChoices(style_by_name(style).template, title, authors, series, description, '3:4',
                           dict(templates), instructions)
    mi = metadata(book)
    texts = cover_texts(mi, choices.templates)  # the templates, evaluated in calibre's worker
    if refine:
        return refine_prompt(mi, choices, refine, texts)
    return cover_prompt(mi, choices, refinements, texts)


def calibres(monkeypatch, book: str, choice: str, refine: str = '') -> str:
    """What calibre 9.17's own code sends for the same book and choices (forky only)."""
    from calibre.gui2.dialogs import llm_cover
    style, title, authors, series, description, templates, instructions, refinements = CHOICES[choice]
    p = dict(llm_cover.PREFS_DEFAULTS, title_template=templates.get('title', ''),
             authors_template=templates.get('authors', ''), series_template=templates.get('series', ''),
             extra_instructions=instructions)
    monkeypatch.setattr(llm_cover, 'cover_prefs', lambda: dict(p))
    mi = metadata(book)
    if refine:  # as CoverCreateDialog.build_prompt_and_sources() builds it for a model that edits images
        tb = llm_cover.text_rendering_block(
            llm_cover.resolved_title(mi, p['title_template']), llm_cover.resolved_authors(mi, p['authors_template']),
            llm_cover.resolved_series(mi, p['series_template']), title, authors, series)
        extra = p['extra_instructions'].strip()
        return '\n\n'.join(([extra] if extra else []) + [refine, tb])
    return llm_cover.build_generation_prompt(mi, llm_cover.style_by_name(style).template, title, authors, series,
                                             description, refinements=refinements)


def all_cases(get) -> dict[str, str]:
    out = {f'{book}/{choice}': get(book, choice) for book, choice in CASES}
    for book in BOOKS:
        out[f'{book}/refine'] = get(book, 'everything', 'Make the title gold')
    return out


def test_prompts_are_calibres(monkeypatch):
    mine = all_cases(ours)
    if HOST == 'forky':
        theirs = all_cases(lambda *a: calibres(monkeypatch, *a))
        if os.environ.get('BOOKAI_RECORD_COVER_PROMPTS'):
            RECORDED.parent.mkdir(exist_ok=True)
            RECORDED.write_text(json.dumps(theirs, indent=1, ensure_ascii=False, sort_keys=True) + '\n', 'utf-8')
        assert json.loads(RECORDED.read_text('utf-8')) == theirs, 'calibre changed: record the prompts again'
    else:
        theirs = json.loads(RECORDED.read_text('utf-8'))
    assert set(theirs) == set(mine)
    for name in sorted(mine):
        assert mine[name] == theirs[name], name
    # what the cases are about is in them (not a tautology of two empty strings)
    assert 'Book description:\nFamous poet Richard Cadogan' in mine['toyshop/everything']
    assert 'Series: "Gervase Fen, book 3"' in mine['toyshop/defaults']
    assert 'Series: "The Long Saga, book 2.5"' in mine['fraction_series/defaults']
    assert 'Title: "THE MOVING TOYSHOP"' in mine['toyshop/templates']
    assert 'Series: "Gervase Fen #3"' in mine['toyshop/templates'] or 'Series: "Gervase Fen #3.0"' in mine[
        'toyshop/templates']
    assert mine['toyshop/no_text'].endswith('Do not render any text, words, letters or typography anywhere in the image.')
    assert '- make the background darker\n- add a moon' in mine['toyshop/refinements']
    assert mine['toyshop/refine'].startswith('Use a warm palette.\nNo people.\n\nMake the title gold\n\nRender')
    described = mine['fraction_series/only_title_with_description'].split('Book description:\n')[1].split('\n\n')[0]
    assert 1900 < len(described) <= 2001 and described.endswith('…')  # cut as calibre cuts it


def test_the_styles_are_calibres():
    from calibre_plugins.bookai.covers.styles import builtin_styles
    mine = [(s.name, s.template) for s in builtin_styles()]
    assert len(mine) == 9 and mine[-1] == ('custom', '')
    if HOST == 'forky':
        from calibre.gui2.dialogs import llm_cover
        assert mine == [(s.name, s.template) for s in llm_cover.builtin_styles()]
        assert llm_cover.PREFS_DEFAULTS['aspect_ratio'] == '3:4' and llm_cover.PREFS_DEFAULTS['last_style'] == 'pulp'
        assert llm_cover.PREFS_DEFAULTS['include_comments'] is False
    from calibre_plugins.bookai.settings.prefs import DEFAULTS
    assert DEFAULTS['cover_aspect'] == '3:4' and DEFAULTS['cover_style'] == 'pulp'
    assert DEFAULTS['cover_description'] is False


# what Book AI does beyond calibre: templates that fail or give control characters

def texts(templates, **fields):
    from calibre.ebooks.metadata.book.base import Metadata
    from calibre_plugins.bookai.covers.prompt import cover_texts
    mi = Metadata(fields.pop('title', 'The Moving Toyshop'), fields.pop('authors', ['Edmund Crispin']))
    mi.series, mi.series_index = fields.pop('series', 'Gervase Fen'), 3
    return cover_texts(mi, templates)


def test_good_templates_are_used():
    t = texts({'title': '{title} ({series})', 'authors': 'program: uppercase($authors)', 'series': ''})
    assert t.title == 'The Moving Toyshop (Gervase Fen)'
    assert t.authors == 'EDMUND CRISPIN'
    assert t.series == 'Gervase Fen, book 3'


@pytest.mark.parametrize('template', ['{title', '{nonexistent}', 'program: 1/0', '{#nope}', "program: raise('x')",
                                      'program: ' + 'if 1 then ' * 500])
def test_a_broken_template_gives_the_field_as_it_is(template):
    t = texts({'title': template, 'authors': template, 'series': template})
    assert t == ('The Moving Toyshop', 'Edmund Crispin', 'Gervase Fen, book 3')


def test_control_characters_and_length_are_taken_out():
    t = texts({'title': "program: strcat('Evil', '\x1b[2J', '\x07 title\nsecond line\u2028third', '\x9b31m')"},
              authors=['A\x00uthor\tName'], series='S' * 5000)
    assert t.title == 'Evil[2J title second line third31m'
    assert t.authors == 'Author Name'
    assert len(t.series) == 500 and t.series.endswith('…')
    from calibre_plugins.bookai.covers.prompt import CONTROL
    for value in t:
        assert not CONTROL.search(value) and '\n' not in value


def test_description_is_bounded_and_plain():
    from calibre.ebooks.metadata.book.base import Metadata
    from calibre_plugins.bookai.covers.prompt import description_text
    mi = Metadata('x', ['y'])
    assert description_text(mi) == ''
    mi.comments = '<p>One \x1b[31m<b>bold</b> word.</p>' + '<p>more</p>' * 2000
    text = description_text(mi)
    assert text.startswith('One [31m') and '**bold** word.' in text and '\x1b' not in text  # html2text's bold
    assert 1900 < len(text) <= 2001 and text.endswith('…')


def test_choices_from_prefs_and_remembered(prefs):
    from calibre_plugins.bookai.covers.prompt import CoverChoices, choices_from_prefs, remember
    from calibre_plugins.bookai.covers.styles import style_by_name
    c = choices_from_prefs()
    assert c == CoverChoices(style_by_name('pulp').template, True, True, True, False, '3:4',
                             {'title': '', 'authors': '', 'series': ''}, '')
    chosen = CoverChoices('my text', False, True, False, True, '2:3', {'title': '{title}', 'authors': '',
                                                                      'series': 'x' * 99999}, 'be bold')
    remember(chosen, 'noir')
    again = choices_from_prefs()
    assert again.style_text == style_by_name('noir').template  # the prompt text is not remembered, as calibre
    assert (again.title, again.authors, again.series, again.description, again.aspect) == (False, True, False, True,
                                                                                          '2:3')
    assert again.templates == {'title': '{title}', 'authors': '', 'series': ''}  # the over-long one dropped
    assert again.instructions == 'be bold'
    assert choices_from_prefs('given').style_text == 'given'
    prefs['cover_aspect'] = '7:1'  # not one calibre offers
    prefs['cover_text'] = {'title': False}
    assert choices_from_prefs().aspect == '3:4'
    assert choices_from_prefs().title is False and choices_from_prefs().series is True
