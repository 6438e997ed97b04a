#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Write a tiny, deterministic llama-architecture GGUF model with random weights.

    python dev/make_tiny_model.py OUT.gguf

Needs PyPI's gguf and numpy (dev/peers.py runs this with its venv, pinned there).
The weights come from a fixed seed, so the file is the same to the byte every time
(dev/peers.py checks its sha256). llama-server loads it in a blink and writes
nonsense that is valid UTF-8 and the same at temperature 0 for the same request,
and at temperature 0 it never ends its turn by itself (see output_weights): end a
stream with max_tokens or a stop string. For exact and fast protocol tests, never
for meaning.

    architecture  llama, 2 layers, 64-wide, 4 heads of 16, feed-forward 128, float32
    vocabulary    100 tokens: the printable ASCII characters (a space is 'Ġ', as in
                  GPT-2's byte-level BPE), '\\n' ('Ċ'), one merge ('Ġt'), and the
                  control tokens <|endoftext|>, <|im_start|>, <|im_end|>
    tokenizer     gpt2 with the 'gpt-2' pre-tokenizer, a ChatML chat template
"""

import sys

import gguf
import numpy as np

SEED = 20240611
N_LAYERS, N_EMBD, N_HEAD, N_FF, N_CTX = 2, 64, 4, 128, 8192
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def vocabulary():
    """(tokens, types, merges). GPT-2 byte-level BPE writes ' ' as 'Ġ' and '\\n' as 'Ċ'."""
    tokens = ['Ġ'] + [chr(c) for c in range(0x21, 0x7f)] + ['Ċ', 'Ġt']
    types = [gguf.TokenType.NORMAL] * len(tokens)
    control = ['<|endoftext|>', '<|im_start|>', '<|im_end|>']
    tokens += control
    types += [gguf.TokenType.CONTROL] * len(control)
    return tokens, types, ['Ġ t']  # gguf cannot write an empty array, llama.cpp wants merges


def output_weights(rng, types):
    """The output projection, made so that at temperature 0 the model never ends its turn.

    A control token's row is zero, so its logit is 0. Among the normal tokens' rows are
    8·e_k for every axis k and the all-minus-ones vector: for any hidden state h (never 0
    after RMS norm) one of their logits is positive, so a normal token always beats
    <|im_end|> and <|endoftext|>. Exact arithmetic only (no BLAS): the same bytes anywhere.
    """
    normal = [i for i, t in enumerate(types) if t == gguf.TokenType.NORMAL]
    rows = rng.standard_normal((len(types), N_EMBD))
    chosen = rng.permutation(normal)[:N_EMBD + 1]
    for k, i in enumerate(chosen[:N_EMBD]):
        rows[i] = 0.0
        rows[i, k] = 8.0
    rows[chosen[N_EMBD]] = -1.0
    for i, t in enumerate(types):
        if t != gguf.TokenType.NORMAL:
            rows[i] = 0.0
    return rows.astype(np.float32)


def main(out):
    tokens, types, merges = vocabulary()
    n_vocab = len(tokens)
    rng = np.random.default_rng(SEED)

    def weights(*shape, scale=None):  # numpy shape is GGUF's dimensions reversed
        scale = scale if scale is not None else 1 / np.sqrt(shape[-1])
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def ones(n):
        return np.ones(n, dtype=np.float32)

    w = gguf.GGUFWriter(out, 'llama')
    w.add_name('Book AI tiny test model')
    w.add_context_length(N_CTX)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYERS)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)

    w.add_tokenizer_model('gpt2')
    w.add_tokenizer_pre('gpt-2')
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(tokens.index('<|endoftext|>'))
    w.add_eos_token_id(tokens.index('<|im_end|>'))
    w.add_pad_token_id(tokens.index('<|endoftext|>'))
    w.add_add_bos_token(False)
    w.add_chat_template(CHAT_TEMPLATE)

    w.add_tensor('token_embd.weight', weights(n_vocab, N_EMBD, scale=1.0))
    for i in range(N_LAYERS):
        b = f'blk.{i}.'
        w.add_tensor(b + 'attn_norm.weight', ones(N_EMBD))
        w.add_tensor(b + 'attn_q.weight', weights(N_EMBD, N_EMBD))
        w.add_tensor(b + 'attn_k.weight', weights(N_EMBD, N_EMBD))
        w.add_tensor(b + 'attn_v.weight', weights(N_EMBD, N_EMBD))
        w.add_tensor(b + 'attn_output.weight', weights(N_EMBD, N_EMBD))
        w.add_tensor(b + 'ffn_norm.weight', ones(N_EMBD))
        w.add_tensor(b + 'ffn_gate.weight', weights(N_FF, N_EMBD))
        w.add_tensor(b + 'ffn_up.weight', weights(N_FF, N_EMBD))
        w.add_tensor(b + 'ffn_down.weight', weights(N_EMBD, N_FF))
    w.add_tensor('output_norm.weight', ones(N_EMBD))
    w.add_tensor('output.weight', output_weights(rng, types))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file(progress=False)
    w.close()


if __name__ == '__main__':
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
