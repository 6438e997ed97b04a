# License: GPLv3 Copyright: the Book AI developers
"""Cover styles: calibre 9.17's eight, "Custom (write your own)", and the reader's own.

A style is a stable key (kept in the settings), a name as shown (translated) and a prompt
template. The templates are English and not translated, as calibre's are and for calibre's
reason: image models follow English instructions most reliably, and the reader can rewrite
a template in any language.

The reader's own styles are kept in the setting 'cover_styles' as [{name, human_name,
template}]. That value is read as hostile: an entry that is not a dict of bounded texts,
or whose key is a built-in style's or an earlier entry's, is skipped, never an error.
"""

from collections.abc import Iterable
from typing import NamedTuple

from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.settings.prefs import plugin_prefs

load_translations()

CUSTOM = 'custom'          # the key of "Custom (write your own)": an empty template
MAX_KEY = 120              # characters of a style's key
MAX_NAME = 100             # characters of a style's name as shown
MAX_TEMPLATE = 10_000      # characters of a style's template
MAX_SAVED = 200            # the reader's own styles read from the settings



class CoverStyle(NamedTuple):
    name: str        # the stable key, kept in the settings
    human_name: str  # as shown (translated for calibre's styles)
    template: str    # the prompt, in English for calibre's styles


def builtin_styles() -> tuple[CoverStyle, ...]:
    """calibre's cover styles, in calibre's order, then "Custom (write your own)"."""
    # The templates are calibre 9.17's (gui2/dialogs/llm_cover.py), word for word, and untranslated.
    return (
        CoverStyle('pulp', _('Pulp fiction'), (
            'A vintage 1950s pulp fiction paperback book cover. Dramatic hand painted'
            ' illustration with bold saturated colors, exaggerated perspective and'
            ' strong chiaroscuro lighting. A lurid, action-filled scene on slightly'
            ' aged paper with subtle halftone printing artifacts. Leave clear space'
            ' near the top of the image for large title lettering.')),
        CoverStyle('romance', _('Romance'), (
            'A sweeping romance novel book cover. Soft, warm lighting with a dreamy'
            ' painterly feel, rich glowing colors and an emotional, intimate'
            ' atmosphere. Elegant composition with space at the top for flowing'
            ' script lettering.')),
        CoverStyle('scifi', _('Science fiction'), (
            'A grand science fiction book cover. Epic sense of scale, futuristic'
            ' technology, dramatic cosmic lighting and a vivid color palette of deep'
            ' blues and glowing accents. Detailed digital painting in the style of'
            ' classic sci-fi paperback art.')),
        CoverStyle('fantasy', _('Fantasy'), (
            'An epic fantasy book cover. Richly detailed painted artwork with'
            ' mythic atmosphere, dramatic natural lighting, ancient landscapes or'
            ' arcane symbols, and ornate decorative framing suitable for embossed'
            ' metallic lettering.')),
        CoverStyle('noir', _('Thriller / noir'), (
            'A tense thriller book cover in noir style. High contrast lighting,'
            ' deep shadows, a moody restricted color palette with one striking'
            ' accent color, rain-slicked urban textures and a cinematic sense of'
            ' menace. Bold minimal composition with space for stark title type.')),
        CoverStyle('literary', _('Literary / minimalist'), (
            'A minimalist literary fiction book cover. A single strong conceptual'
            ' image or abstract motif, generous negative space, a restrained'
            ' sophisticated color palette and a quiet, contemplative mood. Clean'
            ' modern design suitable for understated typography.')),
        CoverStyle('children', _("Children's picture book"), (
            "A charming children's picture book cover. Bright friendly colors,"
            ' whimsical hand-drawn illustration style, playful characters and a'
            ' warm, inviting scene full of gentle humor. Rounded, cheerful shapes'
            ' with space for large playful lettering.')),
        CoverStyle('horror', _('Horror'), (
            'A chilling horror novel book cover. Dark, unsettling atmosphere with'
            ' creeping shadows, desaturated colors broken by a single visceral'
            ' accent, distressed textures and an ominous focal image that hints at'
            ' dread rather than showing it outright.')),
        CoverStyle(CUSTOM, _('Custom (write your own)'), ''),
    )


def builtin_names() -> frozenset[str]:
    return frozenset(s.name for s in builtin_styles())


def checked_style(entry: object) -> CoverStyle | None:
    """The style a saved entry holds, or None when it is not a dict of bounded texts with a
    key and a name."""
    if not isinstance(entry, dict):
        return None
    name, human_name, template = entry.get('name'), entry.get('human_name'), entry.get('template')
    if not (isinstance(name, str) and isinstance(human_name, str) and isinstance(template, str)):
        return None
    if not (0 < len(name) <= MAX_KEY and len(human_name) <= MAX_NAME and len(template) <= MAX_TEMPLATE):
        return None
    if name != one_line(name) or not name.strip():  # a key: nothing unprintable, no break or run of spaces
        return None
    human_name = one_line(human_name)  # shown in a list: one line, nothing that steers it
    if not human_name:
        return None
    return CoverStyle(name, human_name, template)


def saved_styles() -> list[CoverStyle]:
    """The reader's own styles, as saved; a damaged entry, or one whose key is taken, is skipped."""
    raw = plugin_prefs()['cover_styles']
    if not isinstance(raw, list):
        return []
    taken, out = set(builtin_names()), []
    for entry in raw[:MAX_SAVED]:
        style = checked_style(entry)
        if style is not None and style.name not in taken:
            taken.add(style.name)
            out.append(style)
    return out


def _store(styles: list[CoverStyle]) -> None:
    plugin_prefs()['cover_styles'] = [
        {'name': s.name, 'human_name': s.human_name, 'template': s.template} for s in styles]


def save_style(human_name: str, template: str) -> CoverStyle:
    """Save a style of the reader's own, under a key made from its name as calibre makes it
    (custom_<name in lower case, spaces as _>, then _1, _2... when taken). Raises ValueError,
    in words, for an empty name or template, or one too long."""
    human_name = one_line(human_name)
    template = template.strip()
    if not human_name:
        raise ValueError(_('Please enter a name for the custom style.'))
    if not template:
        raise ValueError(_('Please enter instructions for the custom style.'))
    if len(human_name) > MAX_NAME:
        raise ValueError(_('A style\'s name can have at most {count} characters.').format(count=MAX_NAME))
    if len(template) > MAX_TEMPLATE:
        raise ValueError(_('A style\'s instructions can have at most {count} characters.').format(
            count=MAX_TEMPLATE))
    styles = saved_styles()
    taken = {s.name for s in styles} | builtin_names()
    base = 'custom_' + human_name.lower().replace(' ', '_')
    base = base[:MAX_KEY - 6]  # room for a counter
    name, counter = base, 1
    while name in taken:
        name = f'{base}_{counter}'
        counter += 1
    style = CoverStyle(name, human_name, template)
    _store(styles + [style])
    return style


def delete_styles(names: Iterable[str]) -> None:
    """Forget the reader's styles of these keys (calibre's own cannot be deleted)."""
    gone = set(names)
    styles = saved_styles()
    kept = [s for s in styles if s.name not in gone]
    if len(kept) != len(styles):
        _store(kept)  # the damaged entries go too


def style_by_name(name: str) -> CoverStyle:
    """The style of this key; calibre's first (Pulp fiction) when there is none."""
    for s in builtin_styles() + tuple(saved_styles()):
        if s.name == name:
            return s
    return builtin_styles()[0]


def all_styles() -> list[CoverStyle]:
    """Every style as the style chooser lists them: calibre's, the reader's, "Custom" last."""
    builtin = builtin_styles()
    return [s for s in builtin if s.name != CUSTOM] + saved_styles() + [s for s in builtin if s.name == CUSTOM]
