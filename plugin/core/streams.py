# License: GPLv3 Copyright: the Book AI developers
"""The two stream formats providers answer in, decoded incrementally from bytes.

SSEDecoder follows the WHATWG "server-sent events" parsing rules: UTF-8 with an
optional BOM; lines end in CRLF, LF or CR (also when a CR and its LF arrive in
different reads); `event`, `data` (several lines joined with LF), `id` (kept
for later events, ignored if it holds NUL) and `retry` (digits only) fields;
comment lines start with a colon; a blank line dispatches the event; an event
with no data is not dispatched; an unfinished event at the end of the stream
is dropped. A character split across two reads is decoded whole.

NDJSONDecoder yields one parsed JSON value per non-blank line.
"""

import codecs
import json
from typing import NamedTuple


class SSEEvent(NamedTuple):
    event: str = 'message'
    data: str = ''
    id: str = ''
    retry: int | None = None


class LineSplitter:
    """Bytes in, complete lines out (as str, without their ending)."""

    def __init__(self):
        self.decoder = codecs.getincrementaldecoder('utf-8')('replace')
        self.pending = ''
        self.at_start = True

    def feed(self, data):
        text = self.decoder.decode(data)
        if self.at_start and text:
            self.at_start = False
            if text[0] == '\ufeff':
                text = text[1:]
        text = self.pending + text
        if '\r' in text:
            if text[-1] == '\r':  # its LF may be in the next read
                text, self.pending = text[:-1], '\r'
            else:
                self.pending = ''
            text = text.replace('\r\n', '\n').replace('\r', '\n')
        else:
            self.pending = ''
        lines = text.split('\n')
        self.pending = lines.pop() + self.pending
        return lines

    def close(self):
        """The last line: one ended by a CR whose LF never came, or one with no ending."""
        rest = self.pending + self.decoder.decode(b'', True)
        self.pending = ''
        if not rest:
            return []
        return [rest[:-1] if rest.endswith('\r') else rest]


class SSEDecoder:

    def __init__(self):
        self.lines = LineSplitter()
        self.event = ''
        self.data = []
        self.last_id = ''
        self.retry = None

    def feed(self, data):
        """The events completed by these bytes."""
        return self._process(self.lines.feed(data))

    def close(self):
        """The end of the stream: the events its last line completes; an event not
        ended by a blank line is dropped."""
        events = self._process(self.lines.close())
        self.event, self.data = '', []
        return events

    def _process(self, lines):
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

    def __init__(self):
        self.lines = LineSplitter()

    def feed(self, data):
        """The JSON values completed by these bytes. Raises ValueError on a line that is not JSON."""
        return [self._parse(ln) for ln in self.lines.feed(data) if ln.strip()]

    def close(self):
        return [self._parse(ln) for ln in self.lines.close() if ln.strip()]

    @staticmethod
    def _parse(line):
        try:
            return json.loads(line)
        except ValueError:
            raise ValueError(f'not a JSON line: {line[:200]!r}') from None
