# License: GPLv3 Copyright: the Book AI developers
"""Which of a book's formats its text is read from, and the reading: EPUB and KEPUB
directly (extract.read_epub), every other format calibre can convert through calibre's
own conversion to EPUB first.

In calibre the conversion runs as a calibre job (progress in the Jobs panel,
cancellable): conversion_job() gives the job's function and arguments, converted_path()
where its EPUB goes, job_error() the words for a job that failed. On the command line
and in tests it runs in a calibre worker process of its own, bounded in time and memory
(core.isolated.run: CONVERSION_SECONDS, CONVERSION_MEMORY), since what calibre's input
plugins take for a crafted book cannot be bounded from outside them: convert_to_epub(), or
read_book() for both steps. The EPUB it makes is then read as any other, within
extract's limits.

calibre's input plugins and conversion pipeline are imported when first needed: an EPUB,
the common case, is read without them.
"""

import contextlib
import io
import os
import re
import tempfile
from collections.abc import Iterable
from os import PathLike
from typing import TYPE_CHECKING

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.files import is_regular
from calibre_plugins.bookai.core.printable import one_line
from calibre_plugins.bookai.grounding.extract import Book, UnreadableBook, not_a_file, read_epub

if TYPE_CHECKING:
    from calibre.utils.logging import Log

load_translations()

READ_DIRECTLY = ('EPUB', 'KEPUB')
# the formats converted for reading, best first: those that keep a book's structure best
CONVERTED_FIRST = ('AZW3', 'MOBI', 'AZW', 'DOCX', 'FB2', 'HTMLZ', 'ODT', 'RTF', 'TXT', 'TXTZ', 'PDF')
# input formats calibre converts that hold pictures or instructions, not a book's text
NOT_TEXT = frozenset(('CBZ', 'CBR', 'CB7', 'CBC', 'RECIPE', 'DOWNLOADED_RECIPE'))
JOB_FUNCTION = 'gui_convert'  # calibre's own conversion job (calibre.gui2.convert.gui_conversion)
# What converting one book for reading may take in its worker (convert_to_epub): a long PDF takes
# minutes and a few hundred MB; a crafted FB2 of millions of paragraphs would take gigabytes.
CONVERSION_SECONDS = 30 * 60
CONVERSION_MEMORY = 1536 * 1024 * 1024


def convertible_formats() -> set[str]:
    """The input formats calibre can convert here, upper case."""
    from calibre.customize.ui import available_input_formats  # late: see the module's docstring
    return {f.upper() for f in available_input_formats()}


def choose_format(formats: Iterable[str] | None) -> str | None:
    """The format to read a book's text from, given the book's formats; None when none holds
    readable text (no formats, or only pictures)."""
    have = {f.upper() for f in formats or ()}
    for fmt in READ_DIRECTLY + CONVERTED_FIRST:
        if fmt in have:
            return fmt
    others = sorted((have & convertible_formats()) - NOT_TEXT)
    return others[0] if others else None


def conversion_recommendations() -> list[tuple[str, bool, int]]:
    """calibre's conversion options for an EPUB read only for its text: no cover page, no
    images where the input format can leave them out; the table of contents and chapter
    detection keep calibre's defaults."""
    from calibre.customize.conversion import OptionRecommendation  # late: see the module's docstring
    high = OptionRecommendation.HIGH
    return [
        ('no_default_epub_cover', True, high),   # no cover drawn when the book has none
        ('no_svg_cover', True, high),
        ('no_images', True, high),               # PDF input: leave the images out
        ('disable_font_rescaling', True, high),  # sizes of fonts do not matter for text
    ]


def conversion_job(src: str | PathLike, dest: str | PathLike) -> tuple[str, list]:
    """The calibre job that converts src to the EPUB dest for reading: (function name,
    arguments), for gui.job_manager.run_job(Dispatcher(done), name, args=args, description=...).
    When the job is done, read dest with read_epub()."""
    return JOB_FUNCTION, [str(src), str(dest), conversion_recommendations()]


def converted_path(workdir: str | PathLike, src: str | PathLike) -> str:
    """Where the EPUB converted from src goes in workdir: its name with .epub added (book.azw3.epub),
    so that it never is a book's own EPUB, even in the book's folder."""
    return os.path.join(str(workdir), os.path.basename(str(src)) + '.epub')


def convert_to_epub(src: str | PathLike, dest: str | PathLike, seconds: float | None = None) -> None:
    """Convert src to the EPUB dest with calibre's conversion, in a calibre worker process
    (core.isolated.run of convert_in_worker), killed when it takes longer than seconds (default:
    CONVERSION_SECONDS; never more) or more memory than CONVERSION_MEMORY. From a worker thread or
    the command line, never the GUI thread. Raises UnreadableBook."""
    from calibre_plugins.bookai.core import isolated  # late: it imports calibre's worker machinery when used
    try:
        failed = isolated.run('grounding.formats', 'convert_in_worker', (str(src), str(dest)),
                              min(CONVERSION_SECONDS, seconds or CONVERSION_SECONDS), CONVERSION_MEMORY)
    except isolated.Refused as e:
        sentence = str(e)
        raise not_converted(src, sentence[:1].lower() + sentence[1:]) from None
    if failed:
        raise UnreadableBook(str(failed))


def convert_in_worker(src: str, dest: str) -> str:
    """convert_here(src, dest), in calibre's worker process (run by convert_to_epub, through
    core.isolated.run): bounded first. '' when done, else the UnreadableBook's sentence."""
    from calibre_plugins.bookai.core import isolated  # on use: it imports calibre's worker machinery
    isolated.bounded_here()
    memory = int(os.environ.get('BOOKAI_WORKER_MEMORY') or CONVERSION_MEMORY)
    start = isolated.process_memory('VmHWM') or 0
    try:
        convert_here(src, dest)
    except (UnreadableBook, MemoryError) as e:
        # out of its memory, calibre's parsers say "unknown error", or nothing: said as what it is
        if isinstance(e, MemoryError) or (isolated.process_memory('VmHWM') or 0) - start > memory * 0.8:
            reason = _('it needed more memory than Book AI allows a conversion ({megabytes} MB).')
            return str(not_converted(src, reason.format(megabytes=memory // 2**20)))
        return str(e)
    return ''


def convert_here(src: str | PathLike, dest: str | PathLike, log: 'Log | None' = None) -> None:
    """Convert src to the EPUB dest with calibre's conversion, in this process (what the
    calibre job of conversion_job() does in a worker, and convert_in_worker in Book AI's).
    log: a calibre Log; by default calibre's messages are kept in memory, and its last line
    is the reason given when calibre's error has no words of its own. What calibre prints is
    kept off standard output. Raises UnreadableBook."""
    from calibre.ebooks.conversion.plumber import Plumber  # late: see the module's docstring
    from calibre.utils.logging import Log, Stream
    if log is None:
        log = Log()
        log.outputs = [Stream(io.StringIO())]
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # some input plugins print (PDF: pdftohtml's log)
            plumber = Plumber(str(src), str(dest), log)
            plumber.merge_ui_recommendations(conversion_recommendations())
            plumber.run()
    except MemoryError:
        raise
    except Exception as e:
        raise not_converted(src, reason_of(e) or last_line(log)) from None
    if not os.path.exists(dest):
        raise not_converted(src, _('calibre made no EPUB of it.'))


def not_converted(src: str | PathLike, reason: str | None) -> UnreadableBook:
    """The UnreadableBook for src, with calibre's reason (HTML and all) in plain words."""
    reason = ' '.join(re.sub(r'<[^>]+>', ' ', reason or '').split()) or _('calibre stopped without saying why.')
    return UnreadableBook(_('{path} could not be converted for reading: {reason}').format(path=src, reason=reason))


def reason_of(error: Exception) -> str:
    """Why a conversion failed, in calibre's words."""
    from calibre.ebooks import DRMError  # late: see the module's docstring
    from calibre.ebooks.conversion import ConversionUserFeedBack
    if isinstance(error, DRMError):
        return _('it is locked with DRM.')
    if isinstance(error, ConversionUserFeedBack):
        return ' '.join(part for part in (error.title, error.msg) if part)
    return str(error)


def last_line(log: 'Log') -> str:
    """The last line of calibre's in-memory log, if it has one."""
    for output in getattr(log, 'outputs', ()):
        stream = getattr(output, 'stream', None)
        if isinstance(stream, io.StringIO):
            lines = [line.strip() for line in stream.getvalue().splitlines() if line.strip()]
            return lines[-1] if lines else ''
    return ''


def job_error(src: str | PathLike, details: str | None) -> UnreadableBook:
    """The UnreadableBook for a failed conversion job of src, from the job's log (job.details):
    calibre's reason in words (the exception the worker ended with), not the traceback."""
    details = details or ''
    last = next((line.strip() for line in reversed(details.splitlines()) if line.strip()), '')
    name, _sep, message = last.partition(': ')
    if 'Traceback (most recent call last):' not in details or not re.fullmatch(r'[A-Za-z_][\w.]*', name):
        return not_converted(src, '')  # killed, or ended some other way
    if name.endswith('DRMError'):
        return not_converted(src, _('it is locked with DRM.'))
    if name.endswith('ConversionUserFeedBack'):
        return not_converted(src, feedback_text(message))
    return not_converted(src, message or name.rpartition('.')[2])


def feedback_text(message: str) -> str:
    """The words of a ConversionUserFeedBack, which the worker's log shows as JSON, on one line and
    inert (core/printable.py): they are shown to the reader."""
    try:
        feedback = limits.load_json(message)
        said = ' '.join(part for part in (feedback.get('title'), feedback.get('msg')) if isinstance(part, str) and part)
    except (ValueError, AttributeError):
        said = message
    return one_line(said)


def read_book(path: str | PathLike, fmt: str, workdir: str | PathLike | None = None,
              seconds: float | None = None) -> Book:
    """The Book in path, a file of format fmt: EPUB and KEPUB read directly, any other
    format converted to an EPUB in workdir first (a temporary folder, removed after,
    when workdir is None), within seconds (convert_to_epub). Raises UnreadableBook."""
    if fmt.upper() in READ_DIRECTLY:
        return read_epub(path)
    if not is_regular(os.fspath(path)):  # never handed to calibre's conversion, which would wait on it
        raise not_converted(path, not_a_file())
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix='bookai-') as tmp:
            return read_book(path, fmt, tmp, seconds)
    dest = converted_path(workdir, path)
    convert_to_epub(path, dest, seconds)
    return read_epub(dest)
