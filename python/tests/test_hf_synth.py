"""Synthetic HF checkpoints (waste_ref.hf_synth) and the codecs of safetensors_io.

- every FP8 e4m3fn code decodes by the formula of other-families §1 and the
  encoder picks the nearest code; MXFP4 and INT4 round-trip their packing;
- the written checkpoints have the layout a release has (index naming every
  tensor once, shards that exist, nested text_config for K3) and decode back
  to the generating weights within each format's quantisation step;
- when the C++ build is present, `checkpoint_test` compares the C++ decoders
  with these ones bit for bit (tests/checkpoint_test.cpp); here only python.
"""

import json
import math
import os
import shutil
import tempfile
import unittest

try:
    from . import _paths  # noqa: F401
except ImportError:
    import _paths  # noqa: F401

import numpy as np

from waste_ref import hf_synth
from waste_ref import safetensors_io as st


class Codecs(unittest.TestCase):
    def test_fp8_every_code(self):
        vals = st.fp8_decode(np.arange(256))
        for c in range(256):
            s, e, m = c >> 7, (c >> 3) & 15, c & 7
            if e == 15 and m == 7:
                self.assertTrue(math.isnan(vals[c]), c)
                continue
            want = (m / 8 * 2.0 ** -6) if e == 0 else (1 + m / 8) * 2.0 ** (e - 7)
            self.assertEqual(float(vals[c]), -want if s else want, c)
        self.assertEqual(float(vals[0x7E]), 448.0)
        # encode(decode(c)) == c for every finite code except -0
        finite = [c for c in range(256) if not math.isnan(vals[c]) and c != 0x80]
        self.assertEqual(list(st.fp8_encode(vals[finite])), finite)

    def test_bf16_round_to_nearest_even(self):
        x = np.array([1.0, 1.0 + 2 ** -8, 1.0 + 3 * 2 ** -8, -2.5], dtype=np.float32)
        self.assertEqual(list(st.bf16_decode(st.bf16_encode(x))), [1.0, 1.0, 1.0 + 2 ** -6, -2.5])

    def test_mxfp4_pack_and_range(self):
        rng = np.random.default_rng(1)
        w = rng.standard_normal((5, 70))
        packed, scales = st.mxfp4_quantize(w)
        self.assertEqual(packed.shape, (5, 35))
        self.assertEqual(scales.shape, (5, 3))
        d = st.mxfp4_dequantize(packed, scales)
        # within half a step of the top FP4 interval (2 of 6) at each group's scale
        step = np.repeat(np.exp2(scales.astype(np.float64) - 127), 32, axis=1)[:, :70]
        self.assertTrue(np.all(np.abs(d - w) <= step + 1e-12))
        self.assertEqual(st.mxfp4_dequantize(np.array([[0x21]], dtype=np.uint8), np.array([[127]]))[0].tolist(), [0.5, 1.0])

    def test_int4_pack_layout(self):
        w = np.zeros((1, 8))
        w[0] = [-7, -6, -1, 0, 1, 2, 6, 7]
        packed, scale_bits, d = st.int4_quantize(w, group=32)
        self.assertEqual(float(st.bf16_decode(scale_bits)[0, 0]), 1.0)
        word = int(packed.view(np.uint32)[0, 0])
        self.assertEqual([(word >> (4 * j)) & 15 for j in range(8)], [1, 2, 7, 8, 9, 10, 14, 15])
        self.assertEqual(d[0].tolist(), w[0].tolist())
        # nibble 0 is -8
        self.assertEqual(st.int4_dequantize(np.array([[0x88888880]], dtype=np.uint32).view(np.int32), scale_bits, 8)[0, 0], -8.0)


class Checkpoints(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="waste_hf_synth_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def write(self, **kw):
        d = os.path.join(self.tmp, "_".join(f"{k}-{v}" for k, v in sorted(kw.items())))
        hf_synth.write_checkpoint(d, **kw)
        return d

    def test_layout_and_determinism(self):
        d = self.write(model="k3", experts_format="mxfp4", shards=4)
        with open(os.path.join(d, "model.safetensors.index.json")) as f:
            wm = json.load(f)["weight_map"]
        shards = sorted(set(wm.values()))
        self.assertEqual(shards, [f"model-{i:05d}-of-00004.safetensors" for i in range(1, 5)])
        seen = {}
        for s in shards:
            tensors, meta = st.read(os.path.join(d, s))
            for name in tensors:
                self.assertNotIn(name, seen)
                seen[name] = s
        self.assertEqual(seen, wm)
        cfg, text = hf_synth.load_config(d)
        self.assertIn("text_config", cfg)
        self.assertEqual(text["num_shared_experts"], 2)
        self.assertTrue(all(n.startswith(("language_model.", "vision_tower.", "mm_projector.")) for n in wm))
        self.assertIn("language_model.model.layers.1.block_sparse_moe.experts.3.w2.weight_packed", wm)
        with open(os.path.join(d, "tokenizer_config.json")) as f:
            tok = json.load(f)
        self.assertEqual(tok["added_tokens_decoder"][str(text["bos_token_id"])]["content"], "[BOS]")
        self.assertEqual(tok["added_tokens_decoder"][str(text["eos_token_id"])]["content"], tok["eos_token"])
        with open(os.path.join(d, "tiktoken.model")) as f:
            self.assertEqual(len(f.read().splitlines()), text["bos_token_id"])
        # same seed, same bytes
        d2 = os.path.join(self.tmp, "again")
        hf_synth.write_checkpoint(d2, model="k3", experts_format="mxfp4", shards=4)
        for s in shards:
            with open(os.path.join(d, s), "rb") as a, open(os.path.join(d2, s), "rb") as b:
                self.assertEqual(a.read(), b.read(), s)

    def test_formats_decode_near_the_generating_weights(self):
        ref = hf_synth.load_weights(self.write(model="kimi-linear", experts_format="bf16"))
        name = "model.layers.1.block_sparse_moe.experts.0.w1.weight"
        base = ref[name]
        # bf16 keeps 8 significant bits: relative error <= 2^-9
        for fmt, rel in (("fp8", 2.0 ** -4), ("mxfp4", 0.5), ("int4", 1.0 / 7)):
            w = hf_synth.load_weights(self.write(model="kimi-linear", experts_format=fmt))
            self.assertEqual(set(w), set(ref), fmt)
            err = np.abs(w[name] - base).max() / np.abs(base).max()
            self.assertLess(err, rel, fmt)
            self.assertGreater(err, 0, fmt)  # really quantised

    def test_mid_shape_is_waste_synths(self):
        # the dimensions of `waste synth --preset mid` (src/synth), which
        # scripts/compare-llama.sh writes as a checkpoint for both engines
        c = hf_synth.config_json("kimi-linear", hf_synth.SHAPES["mid"]["ranks"], shape="mid")
        lac = c["linear_attn_config"]
        self.assertEqual((c["hidden_size"], c["num_hidden_layers"], c["num_experts"], c["num_experts_per_token"],
                          c["moe_intermediate_size"], c["intermediate_size"], c["vocab_size"]),
                         (1024, 12, 64, 8, 512, 2048, 32768))
        self.assertEqual(lac["full_attn_layers"], [4, 8, 12])
        self.assertEqual((lac["num_heads"], lac["head_dim"], c["num_attention_heads"], c["kv_lora_rank"]),
                         (8, 128, 8, 128))

    def test_mapped_read_equals_read(self):
        d = self.write(model="kimi-linear", experts_format="bf16")
        with open(os.path.join(d, "model.safetensors.index.json")) as f:
            shard = os.path.join(d, sorted(set(json.load(f)["weight_map"].values()))[0])
        plain, meta = st.read(shard)
        mapped, meta2 = st.read(shard, mapped=True)
        self.assertEqual(meta, meta2)
        self.assertEqual({k: (v[0], v[1], bytes(v[2])) for k, v in mapped.items()}, plain)

    def test_router_spreads(self):
        w = hf_synth.load_weights(self.write(model="k3", experts_format="bf16"))
        g = w["language_model.model.layers.1.block_sparse_moe.gate.weight"]
        x = np.random.default_rng(0).standard_normal((256, g.shape[1]))
        top = np.argsort(-(x @ g.T), axis=1)[:, :4]
        counts = np.bincount(top.ravel(), minlength=g.shape[0])
        self.assertTrue(np.all(counts > 0), counts)


if __name__ == "__main__":
    unittest.main()
