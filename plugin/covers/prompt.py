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

Templates are evaluated in ONE place, evaluate_texts(), and never in Book AI's own process:
calibre's template language can loop, or backtrack in a regular expression, in C, for as
long as it likes, and a template that begins with "python:" (or hands such a string to
template(), eval(), re_group() or list_re_group()) runs as Python. So all the templates of a
request, or of a many-books run, are evaluated in one calibre worker process
(core/isolated.py), stopped after TEMPLATE_SECONDS a template (TEMPLATES_MOST_SECONDS for all)
and capped in memory; a template that fails or runs out of time gives the field as it is,
with a sentence. evaluate_texts() waits for that worker: it is called from a thread or the
command line, never from the GUI thread. What is only shown and never sent (cover
--prompt-only, What will be sent) runs no Python at all: a template that may run Python
(runs_code()) is not evaluated for it, and the worker refuses Python for the others.
cover_prompt() itself evaluates nothing: given no texts, it uses the fields as they are.
"""

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from calibre_plugins.bookai.core.images import ASPECTS
from calibre_plugins.bookai.core.printable import CONTROL
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
LINE_BREAKS = re.compile('[\t\n\u2028\u2029]')
TEMPLATE_FAILED = '\ue000bookai: template failed\ue000'  # what SafeFormat gives before its error message
TEMPLATE_SECONDS = 2.0          # one template for one book, in the worker: a loop of the template language stops then
TEMPLATES_MOST_SECONDS = 60.0   # all the templates of a request or run, in one worker (a loop in C stops then)
MAX_TEMPLATE_RESULT = 4 * MAX_FIELD  # characters of what one template gives, taken back from the worker
MAX_FAILURE = 200               # characters of calibre's words for a template that failed
# the functions of calibre's template language that evaluate a string as another template: with one,
# a template can build "python:" from pieces (calibre 6.13 to 9.17's formatter_functions.py)
EVALUATING = re.compile(r'\b(?:template|eval|re_group|list_re_group)\s*\(', re.IGNORECASE)


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


def cover_line(text: str, most: int = MAX_FIELD) -> str:
    """text put on a cover: on one line, without control characters, at most `most` characters."""
    text = CONTROL.sub('', LINE_BREAKS.sub(' ', text))
    return text if len(text) <= most else text[:most - 1].rstrip() + '…'


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


def plain_texts(mi: 'Metadata') -> CoverTexts:
    """The title, authors and series as they are (no template), as put on the cover."""
    return CoverTexts(cover_line(plain_title(mi)), cover_line(plain_authors(mi)), cover_line(plain_series(mi)))


def runs_code(template: str) -> bool:
    """Whether calibre would, or could, run template (or part of it) as Python: it begins with
    "python:", names Python anywhere, or uses a function that evaluates a string as a template
    (which can be given "python:" built from pieces). Erring on the side of yes."""
    return 'python' in template.casefold() or bool(EVALUATING.search(template))


def field_word(key: str) -> str:
    return {'title': _('title'), 'authors': _('authors'), 'series': _('series')}.get(key, key)


class EvaluatedTexts(NamedTuple):
    texts: list[CoverTexts]  # per book, in the order given
    notes: list[str]         # what could not be used as asked, a sentence each


def evaluate_texts(books: Sequence['Metadata'], templates: dict[str, str] | None, preview: bool = False,
                   abort: Any = None) -> EvaluatedTexts:
    """The title, authors and series of each book as put on the cover: each through its calibre
    template when there is one (as calibre), else the field as it is. All the templates of all
    the books are evaluated in one calibre worker (bounded in time and memory); a template that
    fails or runs out of time gives the field as it is, with a sentence in notes. preview: for
    what is only shown, never sent: no Python is run (a template that may run some is not
    evaluated, and said). Waits for the worker: call it from a thread or the command line,
    never from the GUI thread. abort: a threading.Event that stops the worker."""
    books = list(books)
    plain = [plain_texts(mi) for mi in books]
    wanted = {key: t[:MAX_CALIBRE_TEMPLATE] for key in TEXT_FIELDS
              if isinstance(templates, dict) and isinstance(t := templates.get(key), str) and t.strip()}
    notes = []
    if preview:
        for key in [k for k, t in wanted.items() if runs_code(t)]:
            del wanted[key]
            notes.append(_('The {field} template may run Python code: nothing is run for a preview, so the {field} '
                           'is shown as it is. It is used when the cover is made.').format(field=field_word(key)))
    if not wanted or not books:
        return EvaluatedTexts(plain, notes)
    from calibre_plugins.bookai.core import isolated  # on use: it imports calibre's worker machinery
    evaluations = len(wanted) * len(books)
    seconds = min(TEMPLATES_MOST_SECONDS, 2 + TEMPLATE_SECONDS * evaluations)
    try:
        rows = isolated.run('covers.prompt', 'evaluate_in_worker', ([as_plain_data(mi) for mi in books], wanted,
                                                                    not preview, TEMPLATE_SECONDS), seconds, abort=abort)
    except isolated.Refused as e:
        notes.append(_('The templates for the title, authors and series could not be evaluated: {reason} The '
                       'fields are used as they are.').format(reason=str(e)))
        return EvaluatedTexts(plain, notes)
    if not isinstance(rows, list) or len(rows) != len(books):  # the worker was stopped (abort): nothing of it
        return EvaluatedTexts(plain, notes)
    texts: list[CoverTexts] = []
    failed: dict[str, list] = {}  # key: [how many failed, the first reason]
    slow: dict[str, int] = {}
    for row, as_is in zip(rows, plain):
        row = row if isinstance(row, dict) else {}
        values = as_is._asdict()
        for key in wanted:
            status, text = row.get(key, ('failed', ''))
            if status == 'ok' and isinstance(text, str):
                values[key] = cover_line(text)
            elif status == 'slow':
                slow[key] = slow.get(key, 0) + 1
            else:
                failed.setdefault(key, [0, text if isinstance(text, str) else ''])[0] += 1
        texts.append(CoverTexts(**values))
    total = len(books)
    for key, (count, reason) in failed.items():
        reason = cover_line(reason, MAX_FAILURE) or _('no reason given')
        if total == 1:
            notes.append(_('The {field} template failed ({reason}): the {field} is used as it is.').format(
                field=field_word(key), reason=reason))
        else:
            notes.append(_('The {field} template failed for {count} of {total} books (the first time: {reason}): '
                           'their {field} is used as it is.').format(field=field_word(key), count=count,
                                                                     total=total, reason=reason))
    for key, count in slow.items():
        notes.append(_('The {field} template took longer than Book AI allows ({seconds:g} seconds): the {field} is '
                       'used as it is{books}.').format(
            field=field_word(key), seconds=TEMPLATE_SECONDS,
            books='' if total == 1 else ' ' + _('for {count} of {total} books').format(count=count, total=total)))
    return EvaluatedTexts(texts, notes)


def cover_texts(mi: 'Metadata', templates: dict[str, str] | None, preview: bool = False) -> CoverTexts:
    """One book's title, authors and series through their templates (evaluate_texts(), whose
    notes are left out): from a thread or the command line only."""
    return evaluate_texts([mi], templates, preview).texts[0]


def as_plain_data(mi: 'Metadata') -> dict:
    """A book's metadata as the worker is given it (a calibre Metadata cannot be pickled): calibre's
    own serialization, without a cover, its description bounded."""
    from calibre.ebooks.metadata.book.serialize import metadata_as_dict
    data = metadata_as_dict(mi)
    data.pop('cover_data', None)
    if isinstance(data.get('comments'), str):
        data['comments'] = data['comments'][:MAX_COMMENTS_READ]
    return data


# in calibre's worker process (core/isolated.py) {{{

class OutOfTime(BaseException):
    """A template ran out of its time (a BaseException: calibre's SafeFormat catches Exception)."""


def evaluate_in_worker(books: list[dict], templates: dict[str, str], allow_code: bool, seconds_each: float) -> list:
    """Run by evaluate_texts() in calibre's worker: for each book (as_plain_data()), {key: (status, text)} for
    each template, status 'ok' (text: what it gave), 'failed' (text: calibre's words) or 'slow'
    (it ran out of seconds_each; the same template is then not tried for the next books).
    allow_code: whether Python templates may run (never for a preview)."""
    from calibre_plugins.bookai.core import isolated  # on use: it imports calibre's worker machinery
    isolated.bounded_here()
    if not allow_code:
        refuse_python()
    from calibre.ebooks.metadata.book.serialize import metadata_from_dict
    alarm = alarm_clock()
    out, slow = [], set()
    for data in books:
        mi = metadata_from_dict(data)
        row = {}
        for key, template in templates.items():
            if key in slow:
                row[key] = ('slow', '')
                continue
            row[key] = one_evaluation(str(template)[:MAX_CALIBRE_TEMPLATE], mi, seconds_each, alarm)
            if row[key][0] == 'slow':
                slow.add(key)
        out.append(row)
    return out


def refuse_python() -> None:
    """No Python template runs in this (worker) process: calibre's formatter compiles every one,
    at the top, through template(), eval(), the regular expressions' templates or a stored
    template, in TemplateFormatter.compile_python_template (calibre 6.13 to 9.17), replaced here;
    and the environment variable calibre 6.13 and 9.x check, for good measure."""
    os.environ['CALIBRE_ALLOW_PYTHON_TEMPLATES'] = '0'
    from calibre.utils import formatter, formatter_functions

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise ValueError('Book AI runs no Python template here')
    formatter.TemplateFormatter.compile_python_template = refused
    if hasattr(formatter_functions, 'compile_user_function'):
        formatter_functions.compile_user_function = refused


def alarm_clock() -> Any:
    """set(seconds): OutOfTime is raised in this thread after seconds (0: not); None where the
    system has no such alarm (then the worker's own time limit alone)."""
    import signal
    if not hasattr(signal, 'setitimer'):
        return None

    def ring(signum: int, frame: Any) -> None:
        raise OutOfTime()
    try:
        signal.signal(signal.SIGALRM, ring)
    except ValueError:  # not the main thread
        return None
    return lambda seconds: signal.setitimer(signal.ITIMER_REAL, seconds)


def one_evaluation(template: str, mi: 'Metadata', seconds: float, alarm: Any) -> tuple[str, str]:
    from calibre.ebooks.metadata.book.formatter import SafeFormat  # calibre's template language
    try:
        try:
            if alarm is not None:
                alarm(seconds)
            ans = SafeFormat().safe_format(template, mi, TEMPLATE_FAILED, mi)
        finally:
            if alarm is not None:
                alarm(0)
    except OutOfTime:
        return 'slow', ''
    except Exception as e:  # SafeFormat reports its errors in its answer; whatever else goes wrong, the field
        return 'failed', str(e)[:MAX_FAILURE]
    if not isinstance(ans, str):
        return 'failed', ''
    if ans.startswith(TEMPLATE_FAILED):
        return 'failed', ans[len(TEMPLATE_FAILED):].strip()[:MAX_FAILURE]
    return 'ok', ans[:MAX_TEMPLATE_RESULT]

# }}}


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


def cover_prompt(mi: 'Metadata', choices: CoverChoices, refinements: tuple[str, ...] = (),
                 texts: CoverTexts | None = None) -> str:
    """The prompt that asks for a new cover for the book, as calibre's build_generation_prompt.
    refinements: the changes asked for since, when a provider that cannot change an image makes
    it again from scratch. texts: the title, authors and series through choices.templates
    (evaluate_texts(), off the GUI thread); without them, the fields as they are: nothing is
    evaluated here."""
    texts = texts or plain_texts(mi)
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


def refine_prompt(mi: 'Metadata', choices: CoverChoices, change: str, texts: CoverTexts | None = None) -> str:
    """The prompt sent with the current image to a provider that can change it (Refine): the
    extra instructions, the change asked for and the text to render, as calibre. texts: as
    cover_prompt's."""
    texts = texts or plain_texts(mi)
    parts = [change.strip()[:MAX_TEMPLATE]]
    extra = choices.instructions.strip()[:MAX_INSTRUCTIONS]
    if extra:
        parts.insert(0, extra)
    parts.append(text_block(texts, choices))
    return '\n\n'.join(parts)


def cover_prompts(books: Sequence['Metadata'], choices: CoverChoices, preview: bool = False,
                  abort: Any = None) -> tuple[list[str], list[str]]:
    """(the prompt of each book, the notes on its templates): all the books' templates evaluated
    in one worker (evaluate_texts()). From a thread or the command line only."""
    books = list(books)
    evaluated = evaluate_texts(books, choices.templates, preview, abort)
    return [cover_prompt(mi, choices, texts=t) for mi, t in zip(books, evaluated.texts)], evaluated.notes
