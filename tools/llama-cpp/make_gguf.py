#!/usr/bin/python3
"""Writes a tiny llama-architecture GGUF whose vocabulary is a WASTE tokenizer's.

    make_gguf.py VOCAB.tsv OUT.gguf [--add-end] [--n-embd 64] [--n-layer 1]
                 [--n-head 4] [--n-ff 128] [--seed 1]

VOCAB.tsv comes from waste_vocab (tools/llama-cpp/waste_vocab.c): one line per
id with its bytes and kind (n: ordinary bytes, s: a special, r: reserved).
Token i of the GGUF is WASTE's id i:
  - ordinary tokens: their bytes in GPT-2's byte-to-unicode encoding,
    token_type 1 (normal);
  - specials: their text, token_type 3 (control);
  - reserved ids (no bytes): "<|reserved_i|>", token_type 5 (unused), which
    llama.cpp detokenizes to nothing (never allowed by a grammar).
--add-end appends one control token "<|end|>" (for a rank file without
specials: it is then the EOS, as the extra end id WASTE's grammar benchmark
uses). Otherwise the tokenizer's EOS (and BOS) are the GGUF's.

Merges: tokenizer.ggml.model "gpt2" requires tokenizer.ggml.merges; this writes
only the merges of two-byte tokens whose halves are single-byte tokens (a
minimal valid list). llama.cpp's tokenization of text with this file is
therefore NOT WASTE's: give llama.cpp token ids, never text (the grammar
benchmark only detokenizes). tokenizer.ggml.pre is "default".

Weights: f32, N(0, 0.02) from a seeded generator (random.Random(seed)); the
model exists so that llama.cpp loads the vocabulary as it loads any model, and
so that later speed comparisons (issues 16, 19) can decode with it.
The format follows ggml's GGUF specification (version 3, little-endian,
alignment 32).
"""
import argparse
import array
import random
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from waste_ref.byte_level import byte_to_unicode  # noqa: E402

GGUF_UINT32, GGUF_INT32, GGUF_FLOAT32, GGUF_BOOL, GGUF_STRING, GGUF_ARRAY = 4, 5, 6, 7, 8, 9
GGML_TYPE_F32 = 0
ALIGNMENT = 32


def read_vocab(path):
    with open(path) as f:
        header = f.readline().split()
        assert header[0] == "#" and header[1] == "count", "not a waste_vocab file: " + path
        meta = {header[i]: int(header[i + 1]) for i in range(1, len(header), 2)}
        tokens = []
        for line in f:
            id_, kind, hexbytes = line.rstrip("\n").split("\t")
            assert int(id_) == len(tokens)
            tokens.append((kind, bytes.fromhex(hexbytes)))
    assert len(tokens) == meta["count"]
    return tokens, meta["bos"], meta["eos"]


class Writer:
    def __init__(self):
        self.kv = bytearray()
        self.n_kv = 0

    @staticmethod
    def string(s):
        b = s.encode("utf-8") if isinstance(s, str) else s
        return struct.pack("<Q", len(b)) + b

    def add(self, key, type_, value):
        self.n_kv += 1
        self.kv += self.string(key) + struct.pack("<I", type_)
        if type_ == GGUF_STRING:
            self.kv += self.string(value)
        elif type_ == GGUF_UINT32:
            self.kv += struct.pack("<I", value)
        elif type_ == GGUF_FLOAT32:
            self.kv += struct.pack("<f", value)
        elif type_ == GGUF_BOOL:
            self.kv += struct.pack("<B", 1 if value else 0)
        else:
            raise ValueError(type_)

    def add_array(self, key, elem_type, values):
        self.n_kv += 1
        self.kv += self.string(key) + struct.pack("<IIQ", GGUF_ARRAY, elem_type, len(values))
        if elem_type == GGUF_STRING:
            self.kv += b"".join(self.string(v) for v in values)
        elif elem_type == GGUF_INT32:
            self.kv += array.array("i", values).tobytes()
        else:
            raise ValueError(elem_type)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("vocab")
    ap.add_argument("out")
    ap.add_argument("--add-end", action="store_true")
    ap.add_argument("--n-embd", type=int, default=64)
    ap.add_argument("--n-layer", type=int, default=1)
    ap.add_argument("--n-head", type=int, default=4)
    ap.add_argument("--n-ff", type=int, default=128)
    ap.add_argument("--context", type=int, default=4096)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    assert sys.byteorder == "little"

    entries, bos, eos = read_vocab(args.vocab)
    b2u = byte_to_unicode()
    texts, types = [], []
    for i, (kind, raw) in enumerate(entries):
        if kind == "n":
            texts.append("".join(b2u[b] for b in raw))
            types.append(1)
        elif kind == "s":
            texts.append(raw.decode("utf-8"))
            types.append(3)
        else:
            texts.append("<|reserved_%d|>" % i)
            types.append(5)
    if args.add_end:
        texts.append("<|end|>")
        types.append(3)
        eos = len(texts) - 1
    if len(set(texts)) != len(texts):  # llama.cpp asserts one id per token text
        seen, dups = {}, []
        for i, t in enumerate(texts):
            if t in seen:
                dups.append((seen[t], i))
            seen[t] = i
        sys.exit("duplicate token texts (ids %s): llama.cpp would refuse them" % dups[:5])
    single = {t for t, ty in zip(texts, types) if ty == 1 and len(t) == 1}
    merges = [t[0] + " " + t[1] for t, ty in zip(texts, types) if ty == 1 and len(t) == 2 and t[0] in single and t[1] in single]
    n_vocab = len(texts)

    w = Writer()
    w.add("general.architecture", GGUF_STRING, "llama")
    w.add("general.name", GGUF_STRING, "waste-vocab-%d" % n_vocab)
    w.add("general.alignment", GGUF_UINT32, ALIGNMENT)
    w.add("llama.vocab_size", GGUF_UINT32, n_vocab)
    w.add("llama.context_length", GGUF_UINT32, args.context)
    w.add("llama.embedding_length", GGUF_UINT32, args.n_embd)
    w.add("llama.block_count", GGUF_UINT32, args.n_layer)
    w.add("llama.feed_forward_length", GGUF_UINT32, args.n_ff)
    w.add("llama.attention.head_count", GGUF_UINT32, args.n_head)
    w.add("llama.attention.head_count_kv", GGUF_UINT32, args.n_head)
    w.add("llama.rope.dimension_count", GGUF_UINT32, args.n_embd // args.n_head)
    w.add("llama.attention.layer_norm_rms_epsilon", GGUF_FLOAT32, 1e-5)
    w.add("tokenizer.ggml.model", GGUF_STRING, "gpt2")
    w.add("tokenizer.ggml.pre", GGUF_STRING, "default")
    w.add_array("tokenizer.ggml.tokens", GGUF_STRING, texts)
    w.add_array("tokenizer.ggml.token_type", GGUF_INT32, types)
    w.add_array("tokenizer.ggml.merges", GGUF_STRING, merges)
    if bos >= 0:
        w.add("tokenizer.ggml.bos_token_id", GGUF_UINT32, bos)
    if eos >= 0:
        w.add("tokenizer.ggml.eos_token_id", GGUF_UINT32, eos)
    w.add("tokenizer.ggml.add_bos_token", GGUF_BOOL, False)

    e, ff = args.n_embd, args.n_ff
    shapes = [("token_embd.weight", (e, n_vocab)), ("output_norm.weight", (e,)), ("output.weight", (e, n_vocab))]
    for l in range(args.n_layer):
        p = "blk.%d." % l
        shapes += [(p + "attn_norm.weight", (e,)), (p + "attn_q.weight", (e, e)), (p + "attn_k.weight", (e, e)),
                   (p + "attn_v.weight", (e, e)), (p + "attn_output.weight", (e, e)), (p + "ffn_norm.weight", (e,)),
                   (p + "ffn_gate.weight", (e, ff)), (p + "ffn_down.weight", (ff, e)), (p + "ffn_up.weight", (e, ff))]
    infos, offset = bytearray(), 0
    for name, dims in shapes:  # dims: ggml's ne, innermost first
        infos += w.string(name) + struct.pack("<I", len(dims)) + struct.pack("<%dQ" % len(dims), *dims)
        infos += struct.pack("<IQ", GGML_TYPE_F32, offset)
        n = 1
        for d in dims:
            n *= d
        offset += -(-n * 4 // ALIGNMENT) * ALIGNMENT

    rng = random.Random(args.seed)
    with open(args.out, "wb") as f:
        f.write(b"GGUF" + struct.pack("<IQQ", 3, len(shapes), w.n_kv))
        f.write(w.kv)
        f.write(infos)
        f.write(b"\0" * (-f.tell() % ALIGNMENT))
        for name, dims in shapes:
            n = 1
            for d in dims:
                n *= d
            if name.endswith("norm.weight"):
                data = array.array("f", [1.0] * n)
            else:  # a cheap seeded N(0, 0.02)-like draw: a fixed block of normals repeated at random offsets
                block = array.array("f", (rng.gauss(0.0, 0.02) for _ in range(4096)))
                data = array.array("f")
                while len(data) < n:
                    start = rng.randrange(4096)
                    data += block[start:] + block[:start]
                del data[n:]
            f.write(data.tobytes())
            f.write(b"\0" * (-f.tell() % ALIGNMENT))
    print("%s: %d tokens (%d merges), eos %d, %d tensors" % (args.out, n_vocab, len(merges), eos, len(shapes)))


if __name__ == "__main__":
    main()
