# License: GPLv3 Copyright: the Book AI developers
"""Quick actions: a name, a label, and a prompt template.

The builtin library actions match calibre's own. A template may use {books_word}
("book" or "books"), {is_are}, and the {title}, {authors} and {series} of the
first book. Prompts stay in English (models follow English instructions best);
their labels are translated. The user's own actions and changes are stored as a
list of dicts in the preferences, in the order shown; builtin actions can be
disabled or edited, never deleted.
"""

import string
from dataclasses import dataclass

load_translations()


@dataclass(frozen=True)
class QuickAction:
    name: str
    label: str
    template: str
    builtin: bool = False
    enabled: bool = True

    def prompt(self, books):
        """The prompt for these books (BookInfo, the first one names title, authors, series)."""
        first = books[0] if books else None
        return fill_template(self.template, {
            'books_word': 'book' if len(books) < 2 else 'books',
            'is_are': 'is' if len(books) < 2 else 'are',
            'title': first.title if first else '',
            'authors': first.authors_text if first else '',
            'series': first.series if first else '',
        })


def library_actions_builtin():
    return (
        QuickAction('summarize', _('Summarize'),
                    'Provide a concise summary of the previously described {books_word}.', True),
        QuickAction('chapters', _('Chapters'),
                    'Provide a chapter by chapter summary of the previously described {books_word}.', True),
        QuickAction('read_next', _('Read next'),
                    'Suggest some good books to read after the previously described {books_word}.', True),
        QuickAction('universe', _('Universe'),
                    'Describe the fictional universe the previously described {books_word} {is_are} set in. '
                    'Outline major plots, themes and characters in the universe.', True),
        QuickAction('series', _('Series'),
                    'Give the series the previously described {books_word} {is_are} in. List all the books in '
                    'the series, in both published and internal chronological order. Also describe any '
                    'prominent spin-off series.', True),
    )


TEMPLATE_VARIABLES = ('books_word', 'is_are', 'title', 'authors', 'series')


def fill_template(template, values):
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


def merge_actions(builtin, saved):
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


def library_actions(include_disabled=False):
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    actions = merge_actions(library_actions_builtin(), plugin_prefs()['library_actions'])
    return actions if include_disabled else [a for a in actions if a.enabled]


def find_action(actions, name):
    """The action whose name or label (any case) is name, or None."""
    low = name.strip().lower()
    for a in actions:
        if a.name.lower() == low or a.label.lower() == low:
            return a
    return None
