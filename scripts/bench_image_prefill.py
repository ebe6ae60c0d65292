#!/usr/bin/env python3
"""bench_image_prefill.py — the prefill cost of an image position against a
text position (issue 14), in one process through the C API (libwaste.so):

    scripts/bench_image_prefill.py LIBWASTE MODEL IMAGE [--runs R] [--budget BYTES] [--json]

MODEL must have a vision tower (e.g. `waste synth OUT --preset mid --overrides
'{"tensor_prefix": "language_model.", "vision": {"max_patches": 1024}}'`).
The model is opened with a budget that holds every expert, one warm-up
prompt fills the cache, then R rounds alternate: a fresh session evaluates
(a) IMAGE's media block and pads — the tower timed apart — and (b) as many
text ids. Prints the medians and the ratio of per-position prefill time,
image over text, as JSON with --json.
"""
import argparse
import ctypes
import json
import statistics
import time


class Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("message", ctypes.c_char * 1024)]


class OpenOptions(ctypes.Structure):  # waste_open_options
    _fields_ = [("flags", ctypes.c_uint32), ("budget_bytes", ctypes.c_uint64), ("context_length", ctypes.c_uint32),
                ("threads", ctypes.c_uint32), ("cache_policy", ctypes.c_uint32), ("io_backend", ctypes.c_uint32),
                ("usage_path", ctypes.c_char_p), ("lut_mode", ctypes.c_uint32), ("sessions", ctypes.c_uint32),
                ("snapshot_bytes", ctypes.c_uint64), ("grammars", ctypes.c_uint32), ("vision", ctypes.c_uint32),
                ("prefill_chunk", ctypes.c_uint32)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("model")
    ap.add_argument("image")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--budget", type=int, default=4 << 30)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    lib = ctypes.CDLL(a.lib)
    err = Error()

    def check(status, what):
        if status != 0:
            raise SystemExit(f"{what}: {err.message.decode()}")

    options = OpenOptions()
    lib.waste_open_options_init(ctypes.byref(options))
    options.vision, options.context_length, options.budget_bytes = 1, 4096, a.budget
    model = ctypes.c_void_p()
    check(lib.waste_model_open(a.model.encode(), ctypes.byref(options), ctypes.byref(model), ctypes.byref(err)), "open")
    tokenizer = ctypes.c_void_p()
    check(lib.waste_model_tokenizer(model, None, ctypes.byref(tokenizer), ctypes.byref(err)), "tokenizer")
    width, height = ctypes.c_uint32(), ctypes.c_uint32()
    check(lib.waste_image_dimensions(a.image.encode(), ctypes.byref(width), ctypes.byref(height), ctypes.byref(err)), "image")
    block = f"<|media_begin|>image {width.value}x{height.value}<|media_content|><|media_pad|><|media_end|>".encode()
    ids_p, count = ctypes.POINTER(ctypes.c_int32)(), ctypes.c_size_t()
    check(lib.waste_tokenizer_tokenize(tokenizer, block, ctypes.c_size_t(len(block)), 1, ctypes.byref(ids_p), ctypes.byref(count),
                                       ctypes.byref(err)), "tokenize")
    block_ids = [ids_p[i] for i in range(count.value)]
    lib.waste_tokens_free(ids_p)

    def fresh_session():
        s = ctypes.c_void_p()
        check(lib.waste_session_create(model, ctypes.byref(s), ctypes.byref(err)), "session")
        return s

    def evaluate(session, ids):
        arr = (ctypes.c_int32 * len(ids))(*ids)
        start = time.perf_counter()
        check(lib.waste_session_eval(session, arr, ctypes.c_size_t(len(ids)), ctypes.byref(err)), "eval")
        return time.perf_counter() - start

    def image_round():
        s = fresh_session()
        start = time.perf_counter()
        n = ctypes.c_size_t()
        check(lib.waste_session_image_add_file(s, a.image.encode(), ctypes.byref(n), ctypes.byref(err)), "image add")
        tower = time.perf_counter() - start
        arr = (ctypes.c_int32 * len(block_ids))(*block_ids)
        out, out_n = ctypes.POINTER(ctypes.c_int32)(), ctypes.c_size_t()
        check(lib.waste_session_image_expand(s, arr, ctypes.c_size_t(len(block_ids)), ctypes.byref(out), ctypes.byref(out_n),
                                             ctypes.byref(err)), "expand")
        ids = [out[i] for i in range(out_n.value)]
        lib.waste_tokens_free(out)
        seconds = evaluate(s, ids)
        lib.waste_session_free(s)
        return len(ids), n.value, tower, seconds

    positions, image_tokens, _, _ = image_round()  # warm-up: the cache fills
    text_ids = [(7 + 13 * i) % 200 + 20 for i in range(positions)]
    s = fresh_session()
    evaluate(s, text_ids)
    lib.waste_session_free(s)
    image_s, text_s, tower_s = [], [], []
    for _ in range(a.runs):
        _, _, tower, seconds = image_round()
        tower_s.append(tower)
        image_s.append(seconds)
        s = fresh_session()
        text_s.append(evaluate(s, text_ids))
        lib.waste_session_free(s)
    result = {"positions": positions, "image_positions": image_tokens, "runs": a.runs,
              "image_prefill_s_median": statistics.median(image_s), "text_prefill_s_median": statistics.median(text_s),
              "tower_s_median": statistics.median(tower_s),
              "image_over_text_per_position": statistics.median(image_s) / statistics.median(text_s)}
    lib.waste_tokenizer_free(tokenizer)
    lib.waste_model_close(model)
    if a.json:
        print(json.dumps(result))
    else:
        print(f"{positions} positions ({image_tokens} of them the image's), {a.runs} runs: prefill "
              f"{result['image_prefill_s_median'] * 1e3:.1f} ms with the image vs {result['text_prefill_s_median'] * 1e3:.1f} ms "
              f"of text (ratio {result['image_over_text_per_position']:.3f}); the tower apart: {result['tower_s_median'] * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
