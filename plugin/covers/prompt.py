# License: GPLv3 Copyright: the Book AI developers
"""The prompt of a cover: the ONE place it is built.

The cover windows, the many-books job, the command line and "What will be sent" all build
a cover's prompt here, from the book's metadata (a calibre Metadata) and the reader's
choices (CoverChoices), exactly as calibre 9.17 builds it (gui2/dialogs/llm_cover.py:
build_generation_prompt, text_rendering_block): the same English words, untranslated, as
calibre's, for calibre's reason (image models follow English instructions best), so a
reader gets the cover calibre would make.

Where Book AI does more than calibre: a calibre template that fails gives the field as
it is (calibre would put its error message on the cover), and what a template or the
library gives is bounded and rid of control characters before it is sent.
"""

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

from calibre_plugins.bookai.core.images import ASPECTS
from calibre_plugins.bookai.covers.styles import MAX_TEMPLATE, style_by_name
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre.ebooks.metadata.book.base import Metadata

load_translations()

DEFAULT_ASPECT = '3:4'          # calibre's
TEXT_FIELDS = ('title', 'authors', 'series')
MAX_FIELD = 500                 # characters of a title, authors or series put on a cover
MAX_CALIBRE_TEMPLATE = 5_000    # characters of one calibre template
MAX_INSTRUCTIONS = 10_000       # characters of the extra instructions
MAX_DESCRIPTION = 2_000         # characters of the description sent (calibre's bound)
MAX_COMMENTS_READ = 200_000     # characters of a book's comments (HTML) read to make it
MAX_REFINEMENTS = 50            # changes added to a prompt made again from scratch

# control characters (but line feed and tab in the description), and the line and paragraph separators
CONTROL = re.compile('[\x00-\x08\x0b-\x1f\x7f-\x9f]')
LINE_BREAKS = re.compile('[\t\n\u2028\u2029]')
TEMPLATE_FAILED = '\ue000bookai: template failed\ue000'  # what SafeFormat gives before its error message


@dataclass(frozen=True)
class CoverChoices:
    """What the reader chose for a cover (or for all the covers of a many-books job)."""
    style_text: str              # the style's prompt, as edited
    title: bool                  # render the title on the cover
    authors: bool                # render the authors
    series: bool                 # render the series
    description: bool            # send the book's description as context
    aspect: str                  # width:height, one of core.images.ASPECTS
    templates: dict[str, str] = field(default_factory=dict)  # calibre templates: title, authors, series
    instructions: str = ''       # added to every cover's prompt


class CoverTexts(NamedTuple):
    title: str
    authors: str
    series: str


def clean_templates(value: object) -> dict[str, str]:
    """{'title', 'authors', 'series': template} from a setting's value: texts only, bounded."""
    value = value if isinstance(value, dict) else {}
    out = {}
    for key in TEXT_FIELDS:
        t = value.get(key)
        out[key] = t if isinstance(t, str) and len(t) <= MAX_CALIBRE_TEMPLATE else ''
    return out


def choices_from_prefs(style_text: str | None = None) -> CoverChoices:
    """The choices as last remembered; style_text: the prompt (default: the last style's template)."""
    p = plugin_prefs()
    if style_text is None:
        style_text = style_by_name(p['cover_style']).template
    text = p['cover_text'] if isinstance(p['cover_text'], dict) else {}
    aspect = p['cover_aspect']
    instructions = p['cover_instructions'] if isinstance(p['cover_instructions'], str) else ''
    return CoverChoices(
        style_text=style_text[:MAX_TEMPLATE],
        title=bool(text.get('title', True)),
        authors=bool(text.get('authors', True)),
        series=bool(text.get('series', True)),
        description=p['cover_description'] is True,
        aspect=aspect if aspect in ASPECTS else DEFAULT_ASPECT,
        templates=clean_templates(p['cover_templates']),
        instructions=instructions[:MAX_INSTRUCTIONS],
    )


def remember(choices: CoverChoices, style_name: str) -> None:
    """Keep the choices (but the prompt text, as calibre) for the next cover."""
    p = plugin_prefs()
    p['cover_style'] = style_name
    p['cover_text'] = {'title': bool(choices.title), 'authors': bool(choices.authors),
                       'series': bool(choices.series)}
    p['cover_description'] = bool(choices.description)
    if choices.aspect in ASPECTS:
        p['cover_aspect'] = choices.aspect
    p['cover_templates'] = clean_templates(choices.templates)
    p['cover_instructions'] = choices.instructions[:MAX_INSTRUCTIONS]


def one_line(text: str, most: int = MAX_FIELD) -> str:
    """text put on a cover: on one line, without control characters, at most `most` characters."""
    text = CONTROL.sub('', LINE_BREAKS.sub(' ', text))
    return text if len(text) <= most else text[:most - 1].rstrip() + '…'


def evaluated(template: str, mi: 'Metadata') -> str | None:
    """What a calibre template gives for the book, or None when it fails (never raises)."""
    from calibre.ebooks.metadata.book.formatter import SafeFormat  # calibre's template language, when used
    try:
        ans = SafeFormat().safe_format(template[:MAX_CALIBRE_TEMPLATE], mi, TEMPLATE_FAILED, mi)
    except Exception:  # SafeFormat reports its errors in its answer; whatever else goes wrong, the field
        return None
    if not isinstance(ans, str) or ans.startswith(TEMPLATE_FAILED):
        return None
    return ans


def plain_title(mi: 'Metadata') -> str:
    return mi.title or ''


def plain_authors(mi: 'Metadata') -> str:
    return mi.format_authors()


def plain_series(mi: 'Metadata') -> str:
    if mi.is_null('series'):
        return ''
    s = mi.series
    if mi.series_index is not None:
        s += f', book {mi.format_series_index()}'
    return s


def cover_texts(mi: 'Metadata', templates: dict[str, str]) -> CoverTexts:
    """The title, authors and series as put on the cover: each through its calibre template
    when there is one (as calibre), else the field as it is; a template that fails gives the
    field as it is. Each bounded and on one line, without control characters."""
    out = []
    for key, plain in (('title', plain_title), ('authors', plain_authors), ('series', plain_series)):
        template = templates.get(key) if isinstance(templates, dict) else None
        value = None
        if isinstance(template, str) and template.strip():
            value = evaluated(template, mi)
        if value is None:
            value = plain(mi)
        out.append(one_line(value))
    return CoverTexts(*out)


def description_text(mi: 'Metadata') -> str:
    """The book's description (its comments) as plain text, as calibre sends it: at most 2,000
    characters, without control characters; '' when it has none."""
    comments = mi.comments
    if not comments or not isinstance(comments, str):
        return ''
    from calibre.utils.html2text import html2text  # calibre's, as calibre does
    try:
        text = html2text(comments[:MAX_COMMENTS_READ], single_line_break=True).strip()
    except Exception:  # comments html2text cannot read: what it reads of them is not worth sending
        return ''
    text = CONTROL.sub('', text.replace('\r\n', '\n'))
    if len(text) > MAX_DESCRIPTION:
        text = text[:MAX_DESCRIPTION].rstrip() + '…'
    return text


def context_line(texts: CoverTexts) -> str:
    return f'Design a book cover for the book "{texts.title}" by {texts.authors}.'


def text_block(texts: CoverTexts, choices: CoverChoices) -> str:
    """The instructions on the text the cover shows (calibre's text_rendering_block)."""
    lines = []
    if choices.title and texts.title:
        lines.append(f'Title: "{texts.title}"')
    if choices.authors and texts.authors:
        lines.append(f'Author: "{texts.authors}"')
    if choices.series and texts.series:
        lines.append(f'Series: "{texts.series}"')
    if not lines:
        return 'Do not render any text, words, letters or typography anywhere in the image.'
    return ('Render the following text on the cover as part of the design, spelled'
            ' EXACTLY as given between the quotes, character for character, without'
            ' translating, correcting or omitting anything:\n' + '\n'.join(lines) +
            '\nThe title should be the most prominent text. Do not render any other text on the image.')


def cover_prompt(mi: 'Metadata', choices: CoverChoices, refinements: tuple[str, ...] = ()) -> str:
    """The prompt that asks for a new cover for the book, as calibre's build_generation_prompt.
    refinements: the changes asked for since, when a provider that cannot change an image makes
    it again from scratch."""
    texts = cover_texts(mi, choices.templates)
    parts = [context_line(texts), choices.style_text.strip()[:MAX_TEMPLATE]]
    extra = choices.instructions.strip()[:MAX_INSTRUCTIONS]
    if extra:
        parts.insert(1, extra)
    if choices.description:
        description = description_text(mi)
        if description:
            parts.insert(1, 'Book description:\n' + description)
    changes = [r.strip()[:MAX_TEMPLATE] for r in refinements[:MAX_REFINEMENTS] if r.strip()]
    if changes:
        parts.append('Additionally apply the following refinements:\n- ' + '\n- '.join(changes))
    parts.append(text_block(texts, choices))
    return '\n\n'.join(parts)


def refine_prompt(mi: 'Metadata', choices: CoverChoices, change: str) -> str:
    """The prompt sent with the current image to a provider that can change it (Refine): the
    extra instructions, the change asked for and the text to render, as calibre."""
    texts = cover_texts(mi, choices.templates)
    parts = [change.strip()[:MAX_TEMPLATE]]
    extra = choices.instructions.strip()[:MAX_INSTRUCTIONS]
    if extra:
        parts.insert(0, extra)
    parts.append(text_block(texts, choices))
    return '\n\n'.join(parts)
