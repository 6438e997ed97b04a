# License: GPLv3 Copyright: the Book AI developers
"""Quick actions: a name, a label, and a prompt template.

The builtin library actions match calibre's own. A template may use {books_word}
("book" or "books"), {is_are}, and the {title}, {authors} and {series} of the
first book. The builtin prompts, and what the variables are filled with, are
text the model reads, in English (conversation.prompts); their labels are
translated. The user's own actions and changes are stored as a list of dicts in
the preferences, in the order shown; builtin actions can be disabled or edited,
never deleted.
"""

import re
import string
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from calibre_plugins.bookai.conversation.prompts import (
    LIBRARY_TEMPLATES, SINGLE_WORD_TEMPLATES, VIEWER_TEMPLATES, book_values, is_single_word, selection_values,
)
from calibre_plugins.bookai.settings.prefs import plugin_prefs

if TYPE_CHECKING:
    from calibre_plugins.bookai.conversation.books import BookInfo

load_translations()


@dataclass(frozen=True)
class QuickAction:
    name: str
    label: str
    template: str
    builtin: bool = False
    enabled: bool = True

    def prompt(self, books: 'Sequence[BookInfo]') -> str:
        """The prompt for these books (BookInfo, the first one names title, authors, series)."""
        return fill_template(self.template, book_values(books))


def library_actions_builtin() -> tuple[QuickAction, ...]:
    return (
        QuickAction('summarize', _('Summarize'), LIBRARY_TEMPLATES['summarize'], True),
        QuickAction('chapters', _('Chapters'), LIBRARY_TEMPLATES['chapters'], True),
        QuickAction('read_next', _('Read next'), LIBRARY_TEMPLATES['read_next'], True),
        QuickAction('universe', _('Universe'), LIBRARY_TEMPLATES['universe'], True),
        QuickAction('series', _('Series'), LIBRARY_TEMPLATES['series'], True),
    )


TEMPLATE_VARIABLES = ('books_word', 'is_are', 'title', 'authors', 'series')

# While reading: the selected text drives the actions. {selected} is the selection, {language}
# the answer language, {title} and {authors} the book's.
VIEWER_VARIABLES = ('selected', 'language', 'title', 'authors')


def viewer_actions_builtin() -> tuple[QuickAction, ...]:
    return (
        QuickAction('explain', _('Explain'), VIEWER_TEMPLATES['explain'], True),
        QuickAction('define', _('Define'), VIEWER_TEMPLATES['define'], True),
        QuickAction('summarize', _('Summarize'), VIEWER_TEMPLATES['summarize'], True),
        QuickAction('points', _('Key points'), VIEWER_TEMPLATES['points'], True),
        QuickAction('grammar', _('Fix grammar'), VIEWER_TEMPLATES['grammar'], True),
        QuickAction('translate', _('Translate'), VIEWER_TEMPLATES['translate'], True),
    )


def selection_prompt(template: str, selected: str, book: 'BookInfo | None' = None, language: str = '') -> str:
    """A prompt about the selected text: {selected}, {language}, {title}, {authors} filled in."""
    return fill_template(template, selection_values(selected, book, language)).strip()


def viewer_action_prompt(action: QuickAction, selected: str, book: 'BookInfo | None' = None,
                         language: str = '') -> str:
    """The prompt of a viewer action about the selected text; a builtin one that asks about a
    text asks about a single word selected in its own words, unless the reader changed it."""
    template = action.template
    if action.builtin and is_single_word(selected) and action.name in SINGLE_WORD_TEMPLATES and (
            action.template == VIEWER_TEMPLATES.get(action.name)):
        template = SINGLE_WORD_TEMPLATES[action.name]
    return selection_prompt(template, selected, book, language)


def fill_template(template: str, values: Mapping[str, object]) -> str:
    """The template with its known {variables} filled in. Anything else, a stray brace or an
    unknown {name}, is left as written: a user's template never fails."""
    out = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError:  # unbalanced braces
        return template
    for literal, field, spec, conversion in parsed:
        out.append(literal)
        if field is None:
            continue
        if field in values and not spec and not conversion:
            out.append(str(values[field]))
        else:
            out.append('{' + field + ('!' + conversion if conversion else '') + (':' + spec if spec else '') + '}')
    return ''.join(out)


def merge_actions(builtin: Sequence[QuickAction], saved: Iterable[dict] | None) -> list[QuickAction]:
    """The actions in the user's order: saved is the preference's list of dicts (may be
    empty or damaged). Builtin actions missing from it come at the end; a saved builtin keeps
    its builtin flag, so it cannot be deleted."""
    known = {a.name: a for a in builtin}
    result, seen = [], set()
    for item in saved or ():
        try:
            name = str(item['name'])
            if name in seen:
                continue
            if name in known:
                base = known[name]
                action = QuickAction(name, str(item.get('label') or base.label),
                                     str(item.get('template') or base.template), True, bool(item.get('enabled', True)))
            else:
                action = QuickAction(name, str(item['label']), str(item['template']), False,
                                     bool(item.get('enabled', True)))
        except (KeyError, TypeError, AttributeError):
            continue  # a damaged entry is skipped, the rest is kept
        seen.add(name)
        result.append(action)
    result.extend(a for a in builtin if a.name not in seen)
    return result


def library_actions(include_disabled: bool = False) -> list[QuickAction]:
    actions = merge_actions(library_actions_builtin(), plugin_prefs()['library_actions'])
    return actions if include_disabled else [a for a in actions if a.enabled]


def viewer_actions(include_disabled: bool = False) -> list[QuickAction]:
    actions = merge_actions(viewer_actions_builtin(), plugin_prefs()['viewer_actions'])
    return actions if include_disabled else [a for a in actions if a.enabled]


def action_name(label: str, taken: set[str]) -> str:
    """A unique action name made from its label: lower case letters, digits and underscores."""
    base = re.sub(r'\W+', '_', label.strip().lower()).strip('_') or 'action'
    name, n = base, 2
    while name in taken:
        name, n = f'{base}_{n}', n + 1
    return name


def find_action(actions: Iterable[QuickAction], name: str) -> QuickAction | None:
    """The action whose name or label (any case) is name, or None."""
    low = name.strip().lower()
    for a in actions:
        if a.name.lower() == low or a.label.lower() == low:
            return a
    return None
