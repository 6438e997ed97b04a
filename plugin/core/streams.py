# License: GPLv3 Copyright: the Book AI developers
"""The two stream formats providers answer in, decoded incrementally from bytes.

SSEDecoder follows the WHATWG "server-sent events" parsing rules: UTF-8 with an
optional BOM; lines end in CRLF, LF or CR (also when a CR and its LF arrive in
different reads); `event`, `data` (several lines joined with LF), `id` (kept
for later events, ignored if it holds NUL) and `retry` (digits only) fields;
comment lines start with a colon; a blank line dispatches the event; an event
with no data is not dispatched; an unfinished event at the end of the stream
is dropped. A character split across two reads is decoded whole. A line longer
than limits.MAX_LINE_CHARS raises LineTooLong; time is linear in the input,
however the lines are cut into reads.

NDJSONDecoder yields one parsed JSON value per non-blank line (limits.load_json:
nested too deep raises TooDeep, too many values for its size TooManyValues).
"""

import codecs
from typing import Any, NamedTuple

from calibre_plugins.bookai.core import limits
from calibre_plugins.bookai.core.limits import LineTooLong


class SSEEvent(NamedTuple):
    """One server-sent event: its type, its data lines joined with LF, the last id, the retry time."""
    event: str = 'message'
    data: str = ''
    id: str = ''
    retry: int | None = None


class LineSplitter:
    """Bytes in, complete lines out (as str, without their ending), in time linear in the
    input: an unfinished line is kept as a list of its parts, and only new text is searched
    for line ends. A line longer than max_chars raises LineTooLong (a ValueError)."""

    def __init__(self, max_chars: int | None = None) -> None:
        self.decoder = codecs.getincrementaldecoder('utf-8')('replace')
        self.pending: list[str] = []  # the parts of the unfinished line; pending_chars is 0 when it is empty
        self.pending_chars = 0
        self.at_start = True
        self.skip_lf = False    # the last read ended in a CR: an LF starting the next one ends nothing
        self.begin = True       # at_start or skip_lf: the next text needs a look at its first character
        self.max_chars = limits.MAX_LINE_CHARS if max_chars is None else max_chars

    def feed(self, data: bytes) -> list[str]:
        """The lines these bytes complete."""
        text = self.decoder.decode(data)
        if self.begin and text:
            text = self._begin(text)
        if '\r' in text:
            if text[-1] == '\r':  # its LF may be in the next read
                self.skip_lf = self.begin = True
            text = text.replace('\r\n', '\n').replace('\r', '\n')
        lines = text.split('\n')
        rest = lines.pop()
        if self.pending or rest or not lines or len(text) > self.max_chars:
            return self._joined(lines, rest, len(text))
        return lines  # the common case: whole lines, nothing left over

    def _joined(self, lines: list[str], rest: str, new_chars: int) -> list[str]:
        """lines, the first one completed by what was pending; rest kept for later. Checks the limit."""
        if not lines:  # no line ends in the new text
            if rest:
                self.pending.append(rest)
                self.pending_chars += len(rest)
                if self.pending_chars > self.max_chars:
                    raise LineTooLong(self.max_chars)
            return lines
        if self.pending:
            lines[0] = ''.join(self.pending) + lines[0]
            self.pending = []
            if len(lines[0]) > self.max_chars:
                raise LineTooLong(self.max_chars)
        if rest:
            self.pending = [rest]
        self.pending_chars = len(rest)
        if new_chars > self.max_chars and max(len(rest), *map(len, lines)) > self.max_chars:
            raise LineTooLong(self.max_chars)
        return lines

    def _begin(self, text: str) -> str:
        """text without the BOM that may start a stream, or the LF of a CR that ended the last read."""
        self.begin = False
        if self.at_start:
            self.at_start = False
            if text[0] == '\ufeff':
                text = text[1:]
        if self.skip_lf and text:
            self.skip_lf = False
            if text[0] == '\n':
                text = text[1:]
        return text

    def close(self) -> list[str]:
        """The last line: one with no ending."""
        rest = ''.join(self.pending) + self.decoder.decode(b'', True)
        self.pending, self.pending_chars = [], 0
        return [rest] if rest else []


class SSEDecoder:
    """Server-sent events, from the bytes of a stream as they arrive."""

    def __init__(self) -> None:
        self.lines = LineSplitter()
        self.event = ''
        self.data: list[str] = []
        self.last_id = ''
        self.retry: int | None = None

    def feed(self, data: bytes) -> list[SSEEvent]:
        """The events completed by these bytes."""
        return self._process(self.lines.feed(data))

    def close(self) -> list[SSEEvent]:
        """The end of the stream: the events its last line completes; an event not
        ended by a blank line is dropped."""
        events = self._process(self.lines.close())
        self.event, self.data = '', []
        return events

    def _process(self, lines: list[str]) -> list[SSEEvent]:
        events = []
        for line in lines:
            if not line:
                if self.data:
                    events.append(SSEEvent(self.event or 'message', '\n'.join(self.data), self.last_id, self.retry))
                self.event, self.data = '', []
                continue
            if line.startswith('data:'):  # the common case first
                value = line[5:]
                self.data.append(value[1:] if value[:1] == ' ' else value)
                continue
            if line[0] == ':':
                continue
            name, colon, value = line.partition(':')
            if colon and value[:1] == ' ':
                value = value[1:]
            if name == 'data':
                self.data.append(value)
            elif name == 'event':
                self.event = value
            elif name == 'id':
                if '\0' not in value:
                    self.last_id = value
            elif name == 'retry':
                if value.isascii() and value.isdigit():
                    self.retry = int(value)
        return events


class NDJSONDecoder:
    """JSON values, one a line, from the bytes of a stream as they arrive."""

    def __init__(self) -> None:
        self.lines = LineSplitter()

    def feed(self, data: bytes) -> list[Any]:
        """The JSON values completed by these bytes. Raises ValueError on a line that is not JSON."""
        return [self._parse(ln) for ln in self.lines.feed(data) if ln.strip()]

    def close(self) -> list[Any]:
        """The end of the stream: the value on its last line, if that line has no ending."""
        return [self._parse(ln) for ln in self.lines.close() if ln.strip()]

    @staticmethod
    def _parse(line: str) -> Any:
        try:
            return limits.load_json(line)
        except limits.TooComplex:
            raise
        except ValueError:
            raise ValueError(f'not a JSON line: {line[:200]!r}') from None
