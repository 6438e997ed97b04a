#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Write a deterministic Stable Diffusion 1.x GGUF model with random weights.

    python dev/make_sd_model.py OUT.gguf

Needs PyPI's gguf and numpy (dev/peers.py runs this with its venv, pinned there).
No registry Book AI may use ships an image model (the smallest real one, SD-Turbo, is
about 2 GB and lives only on Hugging Face), so stable-diffusion.cpp's sd-server is fed
this one instead: the weights come from a fixed seed, so the file is the same to the
byte every time (dev/peers.py checks its sha256). sd-server takes it for "SD 1.x"
and makes real PNGs through its real routes; the picture is a flat grey, so a test
can check the wire, the size and the PNG, never the content.

The tensors' names and dimensions are dev/sd1-tensors.txt, the list sd-server itself
asked for (stable-diffusion-cpp-python 0.4.7): 1,130 tensors, 1.07 billion parameters.
Weights of two dimensions or more are float16, the rest (norms, biases, scalars)
float32: about 2.1 GB. Norm weights are ones, biases zeros, the rest N(0, 0.02).
"""

import re
import sys
from pathlib import Path

import gguf
import numpy as np

SEED = 20261204
TENSORS = Path(__file__).resolve().parent / 'sd1-tensors.txt'
NORM = re.compile(r'(norm\w*|ln_\w+)\.weight$')


def tensors():
    """(name, numpy shape) in the file's order; the list gives GGML's order (ne0 first)."""
    for line in TENSORS.read_text().splitlines():
        if line and not line.startswith('#'):
            name, dims = line.split()
            yield name, tuple(reversed([int(d) for d in dims.split(',')]))


def dtype_of(shape):
    return np.float16 if len(shape) > 1 else np.float32


def values(rng, name, shape):
    dtype = dtype_of(shape)
    if NORM.search(name):
        return np.ones(shape, dtype)
    if name.endswith('.bias'):
        return np.zeros(shape, dtype)
    return (rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)).astype(dtype)


def main(out):
    items = list(tensors())
    w = gguf.GGUFWriter(out, 'sd')
    for name, shape in items:  # the header first, then each tensor's bytes as it is made
        dtype = np.dtype(dtype_of(shape))
        w.add_tensor_info(name, shape, dtype, int(np.prod(shape)) * dtype.itemsize)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(SEED)
    params = 0
    for name, shape in items:
        a = values(rng, name, shape)
        w.write_tensor_data(a)
        params += a.size
    w.close()
    print(f'{out}: {len(items)} tensors, {params:,} parameters')


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
