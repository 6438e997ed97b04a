# License: GPLv3 Copyright: the Book AI developers
"""A scripted model on loopback, speaking the OpenAI chat completions API as llama.cpp's server
does (/props, /v1/models, /v1/chat/completions streamed with usage), whose answers a test
computes from each request: for what no real model does on demand (the same entities named
chapter after chapter, a hostile answer in the middle of a run, entities the passages never
name). A real provider of Book AI's talks to it, so everything but the model is real.

    with ScriptedModel(answer) as model:      # answer(request JSON) -> str, or (status, JSON)
        use_server(prefs, model.url)          # helpers.peers
        ...
        model.requests                        # every chat request, as JSON

roster_answer(roster, claims) answers an X-Ray request (conversation/xray.py) as a good model
would: each entity of roster whose names the passages sent hold, with those passages; and, as a
model that knows the book would, every entity of claims, whatever the passages hold. NOVEL_ROSTER:
people and places of the tests' novel (helpers.novel), for the windows' X-Ray.
"""

import json
import re
import threading
from collections.abc import Callable, Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Answer = Callable[[dict], 'str | tuple[int, dict]']
PASSAGE = re.compile(r'^\[(\d+)\] \(([^\n]*)\)\n(.*?)(?=\n\n\[\d+\] \(|\n</book_passages>)', re.M | re.S)


def passages_of(request: dict) -> list[tuple[int, str, str]]:
    """(number, label, text) of each passage in the last user message of a chat request."""
    text = request['messages'][-1]['content']
    return [(int(m.group(1)), m.group(2), m.group(3)) for m in PASSAGE.finditer(text)]


def roster_answer(roster: Iterable[dict], claims: Iterable[dict] = ()) -> Answer:
    """An answer function: roster entries {'name', 'kind', 'other_names', 'description'} named by
    the passages sent (by any of their names), each citing the passages naming it, its description
    ending with the chapter of the last of them ("... (as of Chapter 3)"); then every claim."""
    roster, claims = list(roster), list(claims)

    def answer(request: dict) -> str:
        sent = passages_of(request)
        out = []
        for entry in roster:
            names = [entry['name'], *entry.get('other_names', ())]
            cited = [(n, label) for n, label, text in sent if any(name in text for name in names)]
            if cited:
                out.append({'name': entry['name'], 'kind': entry.get('kind', 'character'),
                            'other_names': list(entry.get('other_names', ())),
                            'description': f'{entry.get("description", "")} (as of {cited[-1][1]})',
                            'passages': [n for n, _label in cited[:3]]})
        out += [dict({'kind': 'character', 'other_names': [], 'description': '', 'passages': [1]}, **c)
                for c in claims]
        return json.dumps({'entities': out})
    return answer


# the novel's people and places, each with what a model would say of them (for the windows' X-Ray)
NOVEL_ROSTER = [
    {'name': 'Elizabeth Bennet', 'other_names': ['Elizabeth', 'Lizzy', 'Eliza'],
     'description': 'The second of the five Bennet daughters, lively and quick to judge'},
    {'name': 'Jane Bennet', 'other_names': ['Jane', 'Miss Bennet'],
     'description': 'The eldest Bennet daughter, gentle and admired by Mr. Bingley'},
    {'name': 'Mrs. Bennet', 'description': 'Their mother, set on marrying her daughters well'},
    {'name': 'Mr. Bennet', 'description': 'Their father, dry and ironic'},
    {'name': 'Mr. Bingley', 'other_names': ['Bingley'],
     'description': 'A rich young man who has taken Netherfield'},
    {'name': 'Mr. Darcy', 'other_names': ['Darcy'],
     'description': 'Bingley\'s proud friend, who slighted Elizabeth at the ball'},
    {'name': 'Lydia', 'description': 'The youngest Bennet daughter, loud and fond of officers'},
    {'name': 'Miss Bingley', 'other_names': ['Caroline Bingley'], 'description': 'Mr. Bingley\'s proud sister'},
    {'name': 'Charlotte Lucas', 'other_names': ['Charlotte', 'Miss Lucas'],
     'description': 'Elizabeth\'s sensible friend'},
    {'name': 'Sir William Lucas', 'other_names': ['Sir William'], 'description': 'Charlotte\'s father, a former mayor'},
    {'name': 'Mr. Collins', 'other_names': ['Collins'], 'description': 'Mr. Bennet\'s cousin, a clergyman'},
    {'name': 'Mr. Wickham', 'other_names': ['Wickham'], 'description': 'An agreeable officer of the militia'},
    {'name': 'Netherfield', 'kind': 'place', 'description': 'The house near Longbourn Bingley takes'},
    {'name': 'Longbourn', 'kind': 'place', 'description': 'The Bennets\' home'},
    {'name': 'Meryton', 'kind': 'place', 'description': 'The market town a mile from Longbourn'},
    {'name': 'Pemberley', 'kind': 'place', 'description': 'Mr. Darcy\'s estate in Derbyshire'},
    {'name': 'the assembly', 'other_names': ['assembly'], 'kind': 'term',
     'description': 'The public ball at Meryton where Mr. Darcy refused to dance'},
    {'name': 'the militia', 'other_names': ['militia', 'officers'], 'kind': 'term',
     'description': 'A regiment quartered at Meryton for the winter'},
    {'name': 'the entail', 'other_names': ['entail'], 'kind': 'term',
     'description': 'Why Longbourn goes to Mr. Collins, not the daughters'},
]


class ScriptedModel:
    """The server, in a thread, while in a with block; .url is its root (the API is under /v1)."""

    def __init__(self, answer: Answer, n_ctx: int = 32768, model: str = 'tiny') -> None:
        self.answer, self.requests = answer, []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):
                pass

            def send(self, status: int, body: bytes, kind: str = 'application/json') -> None:
                self.send_response(status)
                self.send_header('Content-Type', kind)
                self.send_header('Content-Length', str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                if self.path == '/props':
                    self.send(200, json.dumps({'default_generation_settings': {'n_ctx': n_ctx}}).encode())
                elif self.path == '/v1/models':
                    self.send(200, json.dumps({'data': [{'id': model, 'object': 'model'}]}).encode())
                else:
                    self.send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers.get('Content-Length') or 0)) or b'{}')
                if not self.path.endswith('/chat/completions'):
                    return self.send(404, b'{"error": {"message": "not found"}}')
                server.requests.append(body)
                got = server.answer(body)
                if isinstance(got, tuple):
                    return self.send(got[0], json.dumps(got[1]).encode())
                events = [{'choices': [{'index': 0, 'delta': {'content': got[i:i + 4096]}, 'finish_reason': None}]}
                          for i in range(0, len(got), 4096)]
                events.append({'choices': [{'index': 0, 'delta': {}, 'finish_reason': 'stop'}]})
                prompt = sum(len(m['content']) for m in body['messages']) // 4
                events.append({'choices': [], 'usage': {'prompt_tokens': prompt, 'completion_tokens': len(got) // 4,
                                                        'total_tokens': prompt + len(got) // 4}})
                data = b''.join(b'data: ' + json.dumps(dict(e, model=model)).encode() + b'\n\n' for e in events)
                self.send(200, data + b'data: [DONE]\n\n', 'text/event-stream')

        self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f'http://127.0.0.1:{self.httpd.server_address[1]}'
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={'poll_interval': 0.05}, daemon=True)

    def __enter__(self) -> 'ScriptedModel':
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
