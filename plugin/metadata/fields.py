# License: GPLv3 Copyright: the Book AI developers
"""The fields of a book that AI metadata fills, how each is asked for, and its answer checked.

A field is one of calibre's (tags, comments, languages) or a custom column of the library, with
the reader's own instruction for it ("the mood of the book in one word"). What the model answers
is hostile: answer_schema() asks for JSON of the fields' shapes where the service takes a schema
(providers.base.structured()), and checked() holds each value to its field whatever came: tags
that are one short line each, the library's own spelling of a tag it has, at most MAX_TAGS; a
description as plain paragraphs made into inert HTML (no markup of the model's survives); a
language calibre knows; a custom column's type and, for a fixed list of values, one of them.
What is refused or cut is said in words (Checked.notes), never written.

No Qt, no calibre database: the library's vocabulary and a custom column's description come in
as plain values (main_window and cli read them from calibre).
"""

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from html import escape

from calibre_plugins.bookai.core.printable import one_line, without_controls

load_translations()

MAX_TAGS = 10                 # tags kept of one answer
MAX_TAG_CHARS = 40            # a tag longer than this is a sentence, not a tag
MAX_TAG_WORDS = 5
MAX_TAGS_READ = 200           # the values of a list read at all: the rest is not looked at
MAX_DESCRIPTION_CHARS = 6000  # a description longer than this is cut at a paragraph
MAX_TEXT_CHARS = 200          # a custom text field of one value
MAX_INSTRUCTION_CHARS = 500   # the reader's own instruction for a field
MAX_LANGUAGES = 3

# calibre's fields AI metadata may fill, and the custom columns' types it can fill
STANDARD = ('tags', 'comments', 'languages')
CUSTOM_TYPES = ('text', 'comments', 'enumeration', 'int', 'float', 'rating', 'bool')
NAME = re.compile(r'[^a-z0-9_]')


@dataclass(frozen=True)
class Field:
    """One field to fill: its calibre lookup name ('tags', '#mood'), the name it has in the
    answer's JSON (safe for every service's schema), what the reader calls it, calibre's type
    of it, whether it holds many values, the values it may take (an enumeration), and the
    reader's instruction for it."""
    key: str
    name: str
    label: str
    datatype: str
    multiple: bool = False
    values: tuple[str, ...] = ()
    instruction: str = ''


class NotFillable(ValueError):
    """A field AI metadata cannot fill (a composite column, a date, a series...): why, in words."""


def standard_field(key: str, instruction: str = '') -> Field:
    """One of calibre's own fields AI metadata fills (STANDARD)."""
    labels = {'tags': _('Tags'), 'comments': _('Comments'), 'languages': _('Languages')}
    if key not in labels:
        raise NotFillable(_('{field} is not a field Book AI can fill.').format(field=one_line(str(key))[:60]))
    datatype = {'tags': 'text', 'comments': 'comments', 'languages': 'languages'}[key]
    return Field(key, {'comments': 'description'}.get(key, key), labels[key], datatype, key != 'comments',
                 instruction=bounded_instruction(instruction))


def custom_field(key: str, column: Mapping, instruction: str = '') -> Field:
    """A custom column of the library as calibre describes it (field_metadata's entry: 'datatype',
    'name', 'is_multiple', 'display'), with the reader's instruction for it."""
    datatype = column.get('datatype')
    label = one_line(str(column.get('name') or key))[:60]
    if datatype not in CUSTOM_TYPES:
        raise NotFillable(_('{field} is a column of a kind Book AI cannot fill.').format(field=label))
    multiple = bool(column.get('is_multiple')) and datatype == 'text'
    display = column.get('display')
    raw = display.get('enum_values') if datatype == 'enumeration' and isinstance(display, Mapping) else ()
    raw = raw[:MAX_TAGS_READ] if isinstance(raw, (list, tuple)) else ()
    values = tuple(one_line(v)[:MAX_TEXT_CHARS] for v in raw if isinstance(v, str) and v.strip())
    if datatype == 'enumeration' and not values:
        raise NotFillable(_('{field} has no values to choose from.').format(field=label))
    return Field(key, 'custom_' + NAME.sub('_', key.lstrip('#').lower())[:40], label, datatype, multiple, values,
                 bounded_instruction(instruction))


def bounded_instruction(text: str) -> str:
    return one_line(str(text or ''))[:MAX_INSTRUCTION_CHARS]


def value_schema(f: Field) -> dict:
    """The JSON Schema of f's value in the answer."""
    if f.datatype == 'enumeration':
        return {'type': 'string', 'enum': list(f.values)}
    if f.datatype in ('int', 'rating'):
        return {'type': 'integer'}
    if f.datatype == 'float':
        return {'type': 'number'}
    if f.datatype == 'bool':
        return {'type': 'boolean'}
    if f.multiple:
        return {'type': 'array', 'items': {'type': 'string'}}
    return {'type': 'string'}


def answer_schema(fields: Sequence[Field]) -> dict:
    """The JSON Schema of an answer filling fields: an object of each field's value by its name."""
    return {'type': 'object', 'properties': {f.name: value_schema(f) for f in fields},
            'required': [f.name for f in fields], 'additionalProperties': False}


@dataclass(frozen=True)
class Checked:
    """A field's value as it may be written (None: nothing to write), what of it is new to the
    library (tags it has never had), and what was refused or cut, in words for the reader."""
    value: object = None
    new: tuple[str, ...] = ()
    notes: tuple[str, ...] = field(default=())


def checked(f: Field, value: object, vocabulary: Iterable[str] = ()) -> Checked:
    """value, as the model answered it for f, held to f: see the module's doc. vocabulary: the
    values the library already has for f (its tags), whose spelling wins."""
    if value is None or value == '' or value == []:
        return Checked(notes=(_('{field}: no value was given.').format(field=f.label),))
    if f.datatype == 'languages':
        return checked_languages(f, value)
    if f.multiple:
        return checked_tags(f, value, vocabulary)
    if f.datatype == 'comments':
        return checked_description(f, value)
    if f.datatype == 'enumeration':
        return checked_choice(f, value)
    if f.datatype in ('int', 'float', 'rating'):
        return checked_number(f, value)
    if f.datatype == 'bool':
        if isinstance(value, bool):
            return Checked(value)
        if isinstance(value, str) and value.strip().lower() in ('true', 'yes', 'false', 'no'):
            return Checked(value.strip().lower() in ('true', 'yes'))
        return refused(f)
    if not isinstance(value, str):
        return refused(f)
    text = one_line(value)
    if len(text) > MAX_TEXT_CHARS:
        return Checked(notes=(_('{field}: the value given is longer than {n} characters: not kept.').format(
            field=f.label, n=MAX_TEXT_CHARS),))
    return Checked(text) if text else refused(f)


def refused(f: Field) -> Checked:
    return Checked(notes=(_('{field}: the value given is not of its kind: not kept.').format(field=f.label),))


def as_list(value: object) -> list[str] | None:
    """A list of strings as a model may give one: a JSON array, or one string of values separated
    by commas; at most MAX_TAGS_READ looked at. None for anything else."""
    if isinstance(value, str):
        value = value.split(',')
    if not isinstance(value, list):
        return None
    return [v for v in value[:MAX_TAGS_READ] if isinstance(v, str)]


def checked_tags(f: Field, value: object, vocabulary: Iterable[str]) -> Checked:
    items = as_list(value)
    if items is None:
        return refused(f)
    known: dict[str, str] = {}
    for tag in vocabulary:
        if isinstance(tag, str):
            known.setdefault(tag.casefold(), tag)
    kept: list[str] = []
    seen: set[str] = set()
    sentences = 0
    for raw in items:
        for part in raw.split(','):  # calibre's tags never hold a comma
            tag = one_line(without_controls(part)).strip(' .;:')
            if not tag:
                continue
            if len(tag) > MAX_TAG_CHARS or len(tag.split()) > MAX_TAG_WORDS:
                sentences += 1
                continue
            tag = known.get(tag.casefold(), tag)
            if tag.casefold() not in seen:
                seen.add(tag.casefold())
                kept.append(tag)
    notes = []
    if sentences:
        notes.append(ngettext('{field}: {n} value was a sentence, not a tag: left out.',
                              '{field}: {n} values were sentences, not tags: left out.', sentences).format(
            field=f.label, n=sentences))
    if len(kept) > MAX_TAGS:
        notes.append(_('{field}: {n} values were given; the first {most} are kept.').format(
            field=f.label, n=len(kept), most=MAX_TAGS))
        kept = kept[:MAX_TAGS]
    if not kept:
        return Checked(notes=tuple(notes) or refused(f).notes)
    new = tuple(t for t in kept if t.casefold() not in known)
    return Checked(tuple(kept), new, tuple(notes))


def checked_description(f: Field, value: object) -> Checked:
    if not isinstance(value, str):
        return refused(f)
    text = value[:MAX_DESCRIPTION_CHARS * 4]
    if HTML_TAG.search(text):  # HTML: its text only (Markdown), as calibre reads a comment
        from calibre_plugins.bookai.conversation.books import html_to_text
        text = html_to_text(text)
    text = LINK_OR_IMAGE.sub(lambda m: '' if m.group(1) else m.group(2), text)  # no address is kept
    paragraphs = [one_line(without_controls(p)) for p in re.split(r'\n\s*\n|\r\n\s*\r\n', text)]
    paragraphs = [p for p in paragraphs if p]
    notes: tuple[str, ...] = ()
    kept: list[str] = []
    size = 0
    for p in paragraphs:
        if size + len(p) > MAX_DESCRIPTION_CHARS:
            notes = (_('{field}: the text given was longer than {n} characters: cut after a paragraph.').format(
                field=f.label, n=f'{MAX_DESCRIPTION_CHARS:,}'),)
            if not kept:
                kept.append(p[:MAX_DESCRIPTION_CHARS].rsplit(' ', 1)[0] + '…')
            break
        kept.append(p)
        size += len(p)
    if not kept:
        return refused(f)
    return Checked(''.join(f'<p>{emphasis(escape(p))}</p>' for p in kept), notes=notes)


LINK_OR_IMAGE = re.compile(r'(!?)\[([^\]\n]{0,500})\]\([^)\n]{0,2000}\)')  # Markdown's, as html2text writes them
HTML_TAG = re.compile(r'</?[a-zA-Z][a-zA-Z0-9]*(?:\s[^<>]*)?/?>')
STRONG = re.compile(r'(\*\*|__)(?=\S)(.+?)(?<=\S)\1')
EMPHASIS = re.compile(r'(?<![\w*])([*_])(?=\S)(.+?)(?<=\S)\1(?![\w*])')


def emphasis(escaped: str) -> str:
    """Markdown's strong and emphasis in escaped text as HTML's: the only markup a description keeps."""
    return EMPHASIS.sub(r'<i>\2</i>', STRONG.sub(r'<b>\2</b>', escaped))


def checked_choice(f: Field, value: object) -> Checked:
    if isinstance(value, str):
        by_fold = {v.casefold(): v for v in f.values}
        if (choice := by_fold.get(one_line(value).casefold())) is not None:
            return Checked(choice)
    return Checked(notes=(_('{field}: the value given is not one of its values: not kept.').format(field=f.label),))


def checked_number(f: Field, value: object) -> Checked:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return refused(f)
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return refused(f)
    if not math.isfinite(number) or abs(number) > 2 ** 53:
        return refused(f)
    if f.datatype == 'rating':  # stars, 0 to 5; calibre keeps twice that
        if not 0 <= number <= 5:
            return Checked(notes=(_('{field}: a rating is from 0 to 5 stars: not kept.').format(field=f.label),))
        return Checked(int(round(number * 2)))
    if f.datatype == 'int':
        if number != int(number):
            return refused(f)
        return Checked(int(number))
    return Checked(number)


def checked_languages(f: Field, value: object) -> Checked:
    items = as_list(value)
    if items is None:
        return refused(f)
    from calibre.utils.localization import canonicalize_lang  # late: calibre's table of languages
    codes: list[str] = []
    unknown = 0
    for raw in items:
        name = one_line(without_controls(raw))[:60]
        code = canonicalize_lang(name) if name else None
        if code is None:
            unknown += 1
        elif code not in codes:
            codes.append(code)
    notes: tuple[str, ...] = ()
    if unknown:
        notes = (ngettext('{field}: {n} value is not a language calibre knows: left out.',
                          '{field}: {n} values are not languages calibre knows: left out.', unknown).format(
            field=f.label, n=unknown),)
    if not codes:
        return Checked(notes=notes or refused(f).notes)
    return Checked(tuple(codes[:MAX_LANGUAGES]), notes=notes)


# The commonest words of the languages a description is most often asked in: a text that holds many
# of one language's and few of the one asked for was likely written in the other.
COMMON_WORDS = {
    'English': frozenset('the and of to is in that with his her for on as was are by from this their'.split()),
    'French': frozenset('le la les et des est une dans que qui pour sur avec du au ses son pas il elle'.split()),
    'German': frozenset('der die und das ist nicht mit ein eine sich den auf für von zu dem des sie er'.split()),
    'Spanish': frozenset('el los las y que en un una es por con para del su se al lo como más'.split()),
    'Italian': frozenset('il che di un una per con non sono gli del della nel alla si le lo è'.split()),
    'Dutch': frozenset('de het een en van is dat niet met op voor zijn naar ook bij haar hij ze'.split()),
    'Portuguese': frozenset('o os as e que um uma não com para por do da dos das seu sua em'.split()),
}
LEAST_COMMON_WORDS = 4  # a text with fewer of any language's is too short to tell


def seems_written_in(text: str) -> str:
    """The language of COMMON_WORDS text most likely is in ('' when it cannot be told: too short, or
    two languages alike)."""
    words = re.findall(r"[^\W\d_]+", text.casefold())[:2000]
    hits = sorted(((sum(w in common for w in words), name) for name, common in COMMON_WORDS.items()), reverse=True)
    (best, name), second = hits[0], hits[1][0]
    return name if best >= LEAST_COMMON_WORDS and best >= 2 * second else ''


def language_note(f: Field, value: object, wanted: str) -> str:
    """Words for the reader when a text field's value seems written in another language than wanted
    (a language named in English, as the request asks for it); '' otherwise, and when either cannot
    be told."""
    if wanted not in COMMON_WORDS or not isinstance(value, str) or f.datatype not in ('comments', 'text'):
        return ''
    found = seems_written_in(HTML_TAG.sub(' ', value))
    if not found or found == wanted:
        return ''
    return _('{field}: it seems written in {found}, not in {wanted}: read it before you apply it.').format(
        field=f.label, found=found, wanted=wanted)
