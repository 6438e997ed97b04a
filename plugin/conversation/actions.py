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

# While reading: the selected text drives the actions. {selected} is the selection, {language}
# the answer language, {title} and {authors} the book's. Prompts as calibre's viewer has them.
VIEWER_VARIABLES = ('selected', 'language', 'title', 'authors')
PROMPT_SEPARATOR = '\n------------\n\n'


def viewer_actions_builtin():
    return (
        QuickAction('explain', _('Explain'),
                    'Explain the following text in simple, easy to understand language. {selected}', True),
        QuickAction('define', _('Define'),
                    'Identify and define any technical or complex terms in the following text. {selected}', True),
        QuickAction('summarize', _('Summarize'), 'Provide a concise summary of the following text. {selected}', True),
        QuickAction('points', _('Key points'),
                    'Extract the key points from the following text as a bulleted list. {selected}', True),
        QuickAction('grammar', _('Fix grammar'),
                    'Correct any grammatical errors in the following text and provide the corrected version. '
                    '{selected}', True),
        QuickAction('translate', _('Translate'),
                    'Translate the following text into the language {language}. {selected}', True),
    )


# a single word selected: these builtin actions ask about the word instead
SINGLE_WORD_TEMPLATES = {
    'explain': 'Explain the meaning, etymology and common usages of the following word in simple, easy to '
               'understand language. {selected}',
    'define': 'Explain the meaning and common usages of the following word. {selected}',
    'translate': 'Translate the following word into the language {language}. {selected}',
}


def is_single_word(text):
    return len(text) <= 20 and ' ' not in text.strip()


def selected_for_prompt(text):
    if not text:
        return ''
    return PROMPT_SEPARATOR + ('Word to analyze: ' if is_single_word(text) else 'Text to analyze: ') + text


def selection_prompt(template, selected, book=None, language=''):
    """A prompt about the selected text: {selected}, {language}, {title}, {authors} filled in."""
    return fill_template(template, {
        'selected': selected_for_prompt(selected), 'language': language or 'English',
        'title': book.title if book else '', 'authors': book.authors_text if book else '',
    }).strip()


def viewer_action_prompt(action, selected, book=None, language=''):
    template = action.template
    if action.builtin and is_single_word(selected) and action.name in SINGLE_WORD_TEMPLATES and (
            action.template == next(a.template for a in viewer_actions_builtin() if a.name == action.name)):
        template = SINGLE_WORD_TEMPLATES[action.name]
    return selection_prompt(template, selected, book, language)


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


def viewer_actions(include_disabled=False):
    from calibre_plugins.bookai.settings.prefs import plugin_prefs
    actions = merge_actions(viewer_actions_builtin(), plugin_prefs()['viewer_actions'])
    return actions if include_disabled else [a for a in actions if a.enabled]


def find_action(actions, name):
    """The action whose name or label (any case) is name, or None."""
    low = name.strip().lower()
    for a in actions:
        if a.name.lower() == low or a.label.lower() == low:
            return a
    return None
