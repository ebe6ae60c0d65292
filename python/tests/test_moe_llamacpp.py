"""The Qwen3-MoE, DeepSeek-V3 and MiniMax-M2 PyTorch references, and the engine
on every family it runs, against llama.cpp (issues 16, 38).

Each case makes tiny seeded weights under Hugging Face names, runs the
reference (waste_ref/qwen3_moe.py, waste_ref/deepseek_v3.py), writes the same
weights as an F32 GGUF (waste_ref/gguf_moe.py), runs llama.cpp on the same 20
token ids (tools/llama-cpp/logits_dump.c against the prebuilt CPU libraries of
npm node-llama-cpp 3.21.1, installed by scripts/setup.sh) and compares every
position's logits. Two independent implementations of the same math: a
disagreement beyond float noise means one of them (or the GGUF mapping) is wrong.

Tolerance: max |llama.cpp - reference| <= 2e-5 * max|reference logit|.
Both sides are float32 end to end (F32 weights, F32 KV cache, flash attention
off); they differ only in summation order (ggml's SIMD dot products vs
PyTorch's BLAS) and in transcendental implementations (exp, silu, sin/cos).
Measured on this machine: at most 4.7e-6 absolute on logits of magnitude
3.2-4.0, i.e. <= 1.3e-6 relative, ten-odd float32 ulps after 1-3 layers. The bound is 20x
that, room for another CPU's SIMD width or thread split, and still 3-4 orders
of magnitude below the smallest real defect seen (the negative controls below
differ by 1e-2 to 1e0).

Routing is discontinuous: a float-noise difference in router scores could flip
an expert choice if two scores were nearly tied, which would look like a large
disagreement. Every case therefore first checks, from the reference's own
router scores, that each selection (top-k, and for DeepSeek the top groups)
wins by at least 1e-4 (except the deliberate exact ties of
RouterTiesVsLlamaCpp, which both engines compute bitwise equal), two orders above the noise in those scores, so that a
failure can only be a real difference.

Documented differences, each pinned down by a test that reproduces
llama.cpp's behaviour in the reference (see python/README.md):
  * Qwen3-MoE with norm_topk_prob false: llama.cpp's qwen3moe always
    renormalises the top-k weights (norm_w is hard-wired true in
    src/models/qwen3moe.cpp and the converter writes no such key). Real
    Qwen3-MoE checkpoints use true, so they are unaffected.
  * DeepSeek-V3 group-limited routing: HF sets the scores of experts in
    dropped groups to 0, llama.cpp to -inf. They pick differently when a kept
    expert's biased score s + bias is negative (then a zeroed, dropped expert
    outranks it in HF). With sigmoid scores that needs a correction bias
    below -s, so it can only matter for strongly negative biases.
  * gpt-oss YaRN with truncate false (the release's): llama.cpp always
    floors/ceils the correction range (GptOssYarnTruncateVsLlamaCpp).
  * DeepSeek YaRN with mscale_all_dim absent, or mscale != mscale_all_dim
    (YarnMscaleVsLlamaCpp): llama.cpp reads such configs as mscale_all_dim = 1,
    resp. mscale = mscale_all_dim. No shipped DeepSeek/Kimi config is either.

Exact ties (RouterTiesVsLlamaCpp): llama.cpp's CPU argsort gives them to the
lower expert/group id, as the references do; HF's torch.topk leaves it open.

Without WASTE_REQUIRE_ORACLES, a machine without llama.cpp (node_modules,
cc, git) skips with the reason; with it (scripts/test.sh) the tests fail.
"""
import os
import shutil
import subprocess
import tempfile
import unittest

import torch

try:
    from . import _paths  # noqa: F401  (puts python/ on sys.path)
except ImportError:
    import _paths  # noqa: F401
from waste_ref import deepseek_v3, glm4_moe, gguf_moe, gpt_oss, minimax_m2, mistral4, qwen3_moe, qwen35_moe

LLAMA_DIR = os.path.join(_paths.REPO_ROOT, "tools", "llama-cpp")
BINS = os.path.join(LLAMA_DIR, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64")
BUNDLE = os.path.join(LLAMA_DIR, "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle")
LIBS = ("libllama.v0.4.0.so", "libggml.v0.4.0.so", "libggml-base.so")

REL_TOL = 2e-5  # see the module docstring
MIN_MARGIN = 1e-4  # routing decisions must win by this much (module docstring)
N_IDS = 20


def build_llama_tools(work, tools):
    """Clones the package's llama.cpp source into work (the headers of the
    exact release the prebuilt libraries come from) and builds each tool of
    tools/llama-cpp (e.g. "logits_dump") against those libraries; -> the
    clone's path."""
    src = os.path.join(work, "llama.cpp")
    subprocess.run(["git", "-c", "advice.detachedHead=false", "clone", "-q", BUNDLE, src], check=True)
    for tool in tools:
        subprocess.run(["cc", "-O2", "-Wall", "-I" + os.path.join(src, "include"), "-I" + os.path.join(src, "ggml", "include"),
                        os.path.join(LLAMA_DIR, tool + ".c")] + [os.path.join(BINS, lib) for lib in LIBS] +
                       ["-Wl,-rpath," + BINS, "-o", os.path.join(work, tool)], check=True)
    return src


def oracles_required():
    return os.environ.get("WASTE_REQUIRE_ORACLES", "") not in ("", "0")


def prompt(vocab, seed=5):
    return [int(i) for i in torch.randint(0, vocab, (N_IDS,), generator=torch.Generator().manual_seed(seed))]


def margins_topk(scores, k):
    """Smallest gap, over rows, between the k-th and (k+1)-th largest score."""
    top = torch.sort(scores, dim=-1, descending=True).values
    return (top[..., k - 1] - top[..., k]).min().item()


class LlamaCppCase(unittest.TestCase):
    missing = None
    work = None

    @classmethod
    def setUpClass(cls):
        need = [os.path.join(BINS, lib) for lib in LIBS] + [BUNDLE]
        absent = [p for p in need if not os.path.exists(p)]
        tools = [t for t in ("cc", "git") if shutil.which(t) is None]
        if absent or tools:
            cls.missing = ("llama.cpp oracle missing (%s); scripts/setup.sh installs it"
                           % ", ".join([os.path.relpath(p, _paths.REPO_ROOT) for p in absent] + tools))
            return
        cls.work = tempfile.mkdtemp(prefix="waste-llamacpp-")
        build_llama_tools(cls.work, ["logits_dump"])
        cls.exe = os.path.join(cls.work, "logits_dump")

    @classmethod
    def tearDownClass(cls):
        if cls.work:
            shutil.rmtree(cls.work, ignore_errors=True)

    def setUp(self):
        if self.missing:
            if oracles_required():
                self.fail(self.missing + " (WASTE_REQUIRE_ORACLES is set)")
            self.skipTest(self.missing)

    def llama_logits(self, gguf_path, ids):
        out = gguf_path + ".f32"
        env = dict(os.environ, LOGITS_DUMP_BACKEND_DIR=BINS)
        r = subprocess.run([self.exe, gguf_path, out] + [str(i) for i in ids], env=env, capture_output=True, text=True)
        self.assertEqual(r.returncode, 0, r.stderr[-2000:])
        with open(out, "rb") as f:
            data = bytearray(f.read())
        return torch.frombuffer(data, dtype=torch.float32).view(len(ids), -1)

    def deepseek_reference(self, sd, cfg, ids, dropped_group_score=0.0):
        trace = []
        ref = deepseek_v3.forward(sd, cfg, ids, dropped_group_score, trace)
        for group_scores, scores in trace:
            if cfg["n_group"] > 1:
                self.assertGreater(margins_topk(group_scores, cfg["topk_group"]), MIN_MARGIN, "a near-tied group choice")
            self.assertGreater(margins_topk(scores, cfg["num_experts_per_tok"]), MIN_MARGIN, "a near-tied expert choice")
        return ref

    def routed_reference(self, forward, sd, cfg, ids):
        """forward(sd, cfg, ids, trace=...)'s logits (MiniMax-M2's and Mistral
        4's references), the selection scores it traces (sigmoid + bias,
        softmax) checked to win by MIN_MARGIN in every layer."""
        trace = []
        ref = forward(sd, cfg, ids, trace=trace)
        for scores in trace:
            self.assertGreater(margins_topk(scores, cfg["num_experts_per_tok"]), MIN_MARGIN, "a near-tied expert choice")
        return ref

    def assertAgrees(self, got, ref, label):
        diff = (got - ref).abs().max().item()
        scale = ref.abs().max().item()
        print("\n  %s: max|diff| %.3g, max|logit| %.3g, relative %.3g" % (label, diff, scale, diff / scale), end="")
        self.assertLessEqual(diff, REL_TOL * scale, label)

    def assertDiffers(self, got, ref, label, at_least=1e-2):
        diff = (got - ref).abs().max().item()
        print("\n  %s (must differ): max|diff| %.3g" % (label, diff), end="")
        self.assertGreater(diff, at_least * ref.abs().max().item(), label)


class Qwen3MoeVsLlamaCpp(LlamaCppCase):
    # seeds are chosen only for routing margins (run_case checks them); seed 1
    # has a near-tie of 2.7e-5 and is refused by that check
    def run_case(self, cfg, seed):
        sd = qwen3_moe.random_checkpoint(cfg, seed)
        ids = prompt(cfg["vocab_size"])
        trace = []
        ref = qwen3_moe.forward(sd, cfg, ids, trace=trace)
        for probs in trace:
            self.assertGreater(margins_topk(probs, cfg["num_experts_per_tok"]), MIN_MARGIN, "a near-tied expert choice")
        path = os.path.join(self.work, "qwen3moe-%d.gguf" % seed)
        gguf_moe.write_qwen3_moe(sd, cfg, path)
        return sd, ids, ref, self.llama_logits(path, ids)

    def test_norm_topk_prob_true(self):
        cfg = qwen3_moe.tiny_config(norm_topk_prob=True)
        _, _, ref, got = self.run_case(cfg, seed=3)
        self.assertAgrees(got, ref, "qwen3moe norm_topk_prob=true")

    def test_norm_topk_prob_false_is_renormalised_by_llamacpp(self):
        # llama.cpp ignores norm_topk_prob=false (module docstring): it must
        # differ from the reference as configured and equal the reference with
        # renormalisation, which pins the difference on that one flag.
        cfg = qwen3_moe.tiny_config(norm_topk_prob=False)
        sd, ids, ref, got = self.run_case(cfg, seed=2)
        self.assertDiffers(got, ref, "qwen3moe norm_topk_prob=false, reference as configured")
        self.assertAgrees(got, qwen3_moe.forward(sd, dict(cfg, norm_topk_prob=True), ids),
                          "qwen3moe norm_topk_prob=false, reference renormalised")

    def test_rope_pairing_is_seen(self):
        # negative control: a reference with the other RoPE pairing must be
        # caught, and only after position 0 (where RoPE is the identity)
        cfg = qwen3_moe.tiny_config()
        sd, ids, ref, got = self.run_case(cfg, seed=3)
        saved = qwen3_moe.rope_neox

        def rope_interleaved(x, positions, theta):
            d = x.shape[-1]
            y = saved(x.view(*x.shape[:-1], d // 2, 2).transpose(-1, -2).reshape(x.shape), positions, theta)
            return y.view(*x.shape[:-1], 2, d // 2).transpose(-1, -2).reshape(x.shape)

        qwen3_moe.rope_neox = rope_interleaved
        try:
            wrong = qwen3_moe.forward(sd, cfg, ids)
        finally:
            qwen3_moe.rope_neox = saved
        self.assertAgrees(got[:1], wrong[:1], "qwen3moe, interleaved RoPE at position 0")
        self.assertDiffers(got[1:], wrong[1:], "qwen3moe, interleaved RoPE after position 0")


class MinimaxM2VsLlamaCpp(LlamaCppCase):
    """The MiniMax-M2 reference (waste_ref/minimax_m2.py, from HF's modeling
    code) against llama.cpp's minimax-m2 on the same F32 weights, and the
    per-head q/k norm a reader might carry over from Qwen3 caught by both."""

    def test_whole_projection_norms_partial_rope_biased_router(self):
        cfg = minimax_m2.tiny_config()
        sd = minimax_m2.random_checkpoint(cfg, 2)
        ids = prompt(cfg["vocab_size"])
        ref = self.routed_reference(minimax_m2.forward, sd, cfg, ids)
        path = os.path.join(self.work, "minimax-m2.gguf")
        gguf_moe.write_minimax_m2(sd, cfg, path)
        got = self.llama_logits(path, ids)
        self.assertAgrees(got, ref, "minimax-m2")
        self.assertDiffers(got, minimax_m2.forward(sd, cfg, ids, qk_norm_per_head=True), "minimax-m2, per-head q/k norm")


class Mistral4VsLlamaCpp(LlamaCppCase):
    def test_softmax_router_query_temperature_yarn_mscale(self):
        # llama.cpp's mistral4 on the reference's weights: its softmax gating
        # (the key absent), the query temperature (L0 = 4: moving within the
        # prompt) and YaRN's mscale^2 on the softmax scale (where HF's
        # Mistral4Attention has none: families-2026.md §6.5's open CHECK; the
        # engine follows llama.cpp). Negative control: the reference without
        # the temperature must be caught from position L0 on.
        cfg = mistral4.tiny_config()
        sd = mistral4.random_checkpoint(cfg, 21)
        ids = prompt(cfg["vocab_size"])
        path = os.path.join(self.work, "mistral4.gguf")
        gguf_moe.write_mistral4(sd, cfg, path)
        got = self.llama_logits(path, ids)
        self.assertAgrees(got, self.routed_reference(mistral4.forward, sd, cfg, ids), "mistral4")
        no_temperature = dict(cfg, rope_scaling=dict(cfg["rope_scaling"], llama_4_scaling_beta=None))
        self.assertAgrees(got[:4], mistral4.forward(sd, no_temperature, ids)[:4], "mistral4, temperature 1 below L0")
        self.assertDiffers(got[4:], mistral4.forward(sd, no_temperature, ids)[4:], "mistral4 without the temperature")


class Qwen35VsLlamaCpp(LlamaCppCase):
    """The Qwen3.5 reference (waste_ref/qwen35_moe.py, from HF's modeling
    code) against llama.cpp's qwen35moe on the same F32 weights: Gated
    DeltaNet with 2 key heads over 4 value heads, gated attention with a
    quarter of each head rotated (IMROPE sections, one position for text),
    zero-centred norms, the gated shared expert. llama.cpp's L2 norm is x /
    max(|x|, eps) where HF's is x * rsqrt(|x|^2 + 1e-6): equal to ~1e-7 here.
    The GGUF's value heads are in llama.cpp's tiled order (families-2026.md
    §1.11); the same file in HF's grouped order must differ (the quirk is real)."""

    def test_gated_delta_net_gated_attention_shared_gate(self):
        cfg = qwen35_moe.tiny_config()
        sd = qwen35_moe.random_checkpoint(cfg, 23)  # (seeds 21, 22 have near-tied routes)
        ids = prompt(cfg["vocab_size"])
        ref = self.routed_reference(qwen35_moe.forward, {k: v.double() for k, v in sd.items()}, cfg, ids)
        path = os.path.join(self.work, "qwen35moe.gguf")
        gguf_moe.write_qwen35moe(sd, cfg, path)
        self.assertAgrees(self.llama_logits(path, ids).double(), ref, "qwen35moe")
        gguf_moe.write_qwen35moe(sd, cfg, path, tiled=False)
        self.assertDiffers(self.llama_logits(path, ids).double(), ref, "qwen35moe, value heads in HF's order")


class EngineVsLlamaCpp(LlamaCppCase):
    """The engine itself against llama.cpp on DeepSeek-V3 / Kimi K2,
    Qwen3-MoE (with norm_topk_prob true: llama.cpp always renormalises),
    GLM-4.5 (glm4moe) and gpt-oss (gpt-oss; its YaRN only with truncate true,
    which llama.cpp always applies): a tiny
    checkpoint converted by `waste convert`, its dequantised weights (the
    model the engine runs) written as an F32 GGUF; the engine's logits after
    the first id and after each of the 19 decode steps against llama.cpp's
    20 positions. Same tolerance and routing-margin check as above (the
    margins from the reference on the same weights)."""

    def engine_case(self, family, cfg, label, seed=11, name=None):
        import json
        from waste_ref import hf_families
        cli = os.environ.get("WASTE_CLI", os.path.join(_paths.REPO_ROOT, "build", "release", "waste"))
        name = name or family
        src, out = os.path.join(self.work, name + "-src"), os.path.join(self.work, name + ".waste")
        hf_families.write_checkpoint(src, family, cfg, seed=seed)
        subprocess.run([cli, "convert", src, out, "--sample-experts", "8", "--train-vectors", "8192",
                        "--iterations", "8"], check=True, capture_output=True)
        sd = {k: v.float() for k, v in hf_families.container_state_dict(out).items()}
        ids = prompt(cfg["vocab_size"])
        path = os.path.join(self.work, name + ".gguf")
        if family == "qwen3_moe":
            trace = []
            qwen3_moe.forward({k: v.double() for k, v in sd.items()}, cfg, ids, trace=trace)
            for probs in trace:
                self.assertGreater(margins_topk(probs, cfg["num_experts_per_tok"]), MIN_MARGIN, "a near-tied expert choice")
            gguf_moe.write_qwen3_moe(sd, cfg, path)
        elif family == "glm4_moe":
            trace = []
            glm4_moe.forward({k: v.double() for k, v in sd.items()}, cfg, ids, float("-inf"), trace)
            for group_scores, scores in trace:
                if cfg["n_group"] > 1:
                    self.assertGreater(margins_topk(group_scores, cfg["topk_group"]), MIN_MARGIN, "a near-tied group")
                self.assertGreater(margins_topk(scores, cfg["num_experts_per_tok"]), MIN_MARGIN, "a near-tied expert choice")
            gguf_moe.write_glm4_moe(sd, cfg, path)
        elif family == "minimax_m2":
            self.routed_reference(minimax_m2.forward, {k: v.double() for k, v in sd.items()}, cfg, ids)
            gguf_moe.write_minimax_m2(sd, cfg, path)
        elif family == "mistral4":
            self.routed_reference(mistral4.forward, {k: v.double() for k, v in sd.items()}, cfg, ids)
            gguf_moe.write_mistral4(sd, cfg, path)
        elif family == "qwen3_5_moe":
            self.routed_reference(qwen35_moe.forward, {k: v.double() for k, v in sd.items()}, cfg, ids)
            gguf_moe.write_qwen35moe(sd, cfg, path)
        elif family == "gpt_oss":
            trace = []  # top-k of the raw logits: the margin between the k-th and the (k+1)-th
            gpt_oss.forward({k: v.double() for k, v in sd.items()}, cfg, ids, router_trace=trace)
            for logits in trace:
                self.assertGreater(margins_topk(logits, cfg["num_experts_per_tok"]), MIN_MARGIN, "a near-tied expert choice")
            gguf_moe.write_gpt_oss(sd, cfg, path)
        else:
            self.deepseek_reference({k: v.double() for k, v in sd.items()}, cfg, ids, float("-inf"))
            gguf_moe.write_deepseek_v3(sd, cfg, path)
        got = self.llama_logits(path, ids)
        r = subprocess.run([cli, "eval", "--lut", "exact", out, "--ids", str(ids[0]), "--decode-ids", " ".join(map(str, ids[1:])),
                            "--top", "1", "--full", "--json"], check=True, capture_output=True, text=True)
        engine = torch.tensor(json.loads(r.stdout)["step_logits"], dtype=torch.float32)
        self.assertAgrees(engine, got, label)

    def test_deepseek_v3(self):
        cfg = deepseek_v3.tiny_config(moe_intermediate_size=24)
        self.engine_case("deepseek_v3", cfg, "engine vs llama.cpp, deepseek_v3")

    def test_kimi_k2(self):
        rs = dict(type="yarn", factor=32.0, original_max_position_embeddings=4096, beta_fast=32, beta_slow=1,
                  mscale=1.0, mscale_all_dim=1.0)
        cfg = deepseek_v3.tiny_config(moe_intermediate_size=24, n_group=1, topk_group=1, rope_theta=50000.0,
                                      rope_scaling=rs, routed_scaling_factor=2.827, max_position_embeddings=131072)
        self.engine_case("kimi_k2", cfg, "engine vs llama.cpp, kimi_k2")

    def test_qwen3_moe(self):
        # GQA 4:1, head_dim 16 != hidden / heads, NEOX RoPE, softmax top-3 of 8, renormalised
        cfg = qwen3_moe.tiny_config(moe_intermediate_size=24, norm_topk_prob=True)
        self.engine_case("qwen3_moe", cfg, "engine vs llama.cpp, qwen3_moe")


    def test_glm4_moe(self):
        # GLM-4.5-Air's shape: q/k/v biases, half the head rotated (NEOX), no q/k norm, a shared expert, a dense layer 0
        self.engine_case("glm4_moe", glm4_moe.tiny_config(), "engine vs llama.cpp, glm4_moe")

    def test_glm4_moe_qk_norm_groups(self):
        # use_qk_norm, a quarter of the head rotated, 2 groups of 4 with 1 kept, routed scaling 2.5
        cfg = glm4_moe.tiny_config(use_qk_norm=True, partial_rotary_factor=0.25, n_group=2, topk_group=1,
                                   routed_scaling_factor=2.5)
        self.engine_case("glm4_moe", cfg, "engine vs llama.cpp, glm4_moe (qk norm, groups)", name="glm4_moe-qk-groups")


    def test_minimax_m2(self):
        # whole-projection q/k norms, half of each head rotated (NEOX), sigmoid router with its correction bias
        self.engine_case("minimax_m2", minimax_m2.tiny_config(), "engine vs llama.cpp, minimax_m2", seed=17)

    def test_mistral4(self):
        # the query temperature moves from position 4 on (L0 = 4), YaRN factor 128
        self.engine_case("mistral4", mistral4.tiny_config(), "engine vs llama.cpp, mistral4")

    def test_qwen35moe(self):
        self.engine_case("qwen3_5_moe", qwen35_moe.tiny_config(), "engine vs llama.cpp, qwen35moe", seed=13)  # (11, 12: near-tied routes)

    def test_gpt_oss(self):
        # sinks, sliding window 8 on layer 0 (the 20 ids exceed it), q/k/v/o biases, router bias,
        # clamped SwiGLU with expert biases; no YaRN: llama.cpp's YaRN always floors/ceils the
        # correction range (ggml_rope_yarn_corr_dims), gpt-oss's truncate false does not
        cfg = gpt_oss.tiny_config(rope_scaling=None)
        self.engine_case("gpt_oss", cfg, "engine vs llama.cpp, gpt-oss")

    def test_gpt_oss_yarn_truncated(self):
        rs = dict(rope_type="yarn", factor=32.0, original_max_position_embeddings=4096, beta_fast=32.0, beta_slow=1.0,
                  truncate=True)
        self.engine_case("gpt_oss", gpt_oss.tiny_config(rope_scaling=rs), "engine vs llama.cpp, gpt-oss (YaRN, truncated)",
                         name="gpt_oss-yarn")


class GptOssYarnTruncateVsLlamaCpp(LlamaCppCase):
    """gpt-oss ships YaRN with truncate false (no floor/ceil of the correction
    range, HF _compute_yarn_parameters); llama.cpp's ggml_rope_yarn_corr_dims
    always floors/ceils. On the same weights llama.cpp agrees with the
    reference read as truncate true, and differs from the one with the
    release's truncate false."""

    def test_llama_cpp_always_truncates(self):
        rs = dict(rope_type="yarn", factor=32.0, original_max_position_embeddings=4096, beta_fast=32.0, beta_slow=1.0,
                  truncate=False)
        cfg = gpt_oss.tiny_config(rope_scaling=rs)
        sd = gpt_oss.random_checkpoint(cfg, 5)
        ids = prompt(cfg["vocab_size"])
        path = os.path.join(self.work, "gpt-oss-untruncated.gguf")
        gguf_moe.write_gpt_oss(sd, cfg, path)
        got = self.llama_logits(path, ids)
        as_truncated = dict(cfg, rope_scaling=dict(rs, truncate=True))
        trace = []
        ref = gpt_oss.forward(sd, as_truncated, ids, router_trace=trace)
        for logits in trace:
            self.assertGreater(margins_topk(logits, cfg["num_experts_per_tok"]), MIN_MARGIN, "a near-tied expert choice")
        self.assertAgrees(got, ref, "gpt-oss YaRN, reference read as truncate true")
        self.assertDiffers(got, gpt_oss.forward(sd, cfg, ids), "gpt-oss YaRN, truncate false", at_least=1e-3)


class DeepseekV3VsLlamaCpp(LlamaCppCase):
    def run_case(self, cfg, seed, **ckpt):
        sd = deepseek_v3.random_checkpoint(cfg, seed, **ckpt)
        ids = prompt(cfg["vocab_size"])
        path = os.path.join(self.work, "deepseek2-%d.gguf" % seed)
        gguf_moe.write_deepseek_v3(sd, cfg, path)
        return sd, ids, self.llama_logits(path, ids)

    def test_v3_shape_grouped_routing_yarn(self):
        # q-LoRA, YaRN f=40 (mscale correction of the softmax scale), 4 groups
        # of 2 experts with 2 kept, routed_scaling_factor 2.5, a dense first layer
        cfg = deepseek_v3.tiny_config()
        sd, ids, got = self.run_case(cfg, seed=1)
        self.assertAgrees(got, self.deepseek_reference(sd, cfg, ids), "deepseek2 V3-shaped, n_group 4")

    def test_no_q_lora_no_norm_no_yarn_one_group(self):
        # q_lora_rank None (V2-Lite's q_proj), norm_topk_prob false, plain RoPE, K2's n_group 1
        cfg = deepseek_v3.tiny_config(q_lora_rank=None, norm_topk_prob=False, rope_scaling=None, n_group=1,
                                      topk_group=1, routed_scaling_factor=2.827, first_k_dense_replace=2)
        sd, ids, got = self.run_case(cfg, seed=3)
        self.assertAgrees(got, self.deepseek_reference(sd, cfg, ids), "deepseek2 q_proj, unnormalised, no YaRN, 1 group")

    def test_k2_shape(self):
        # Kimi K2's differences from V3: one group, rope_theta 5e4, YaRN f=32, scale 2.827
        rs = dict(type="yarn", factor=32.0, original_max_position_embeddings=4096, beta_fast=32, beta_slow=1,
                  mscale=1.0, mscale_all_dim=1.0)
        cfg = deepseek_v3.tiny_config(n_group=1, topk_group=1, rope_theta=50000.0, rope_scaling=rs,
                                      routed_scaling_factor=2.827, max_position_embeddings=131072)
        sd, ids, got = self.run_case(cfg, seed=5)
        self.assertAgrees(got, self.deepseek_reference(sd, cfg, ids), "deepseek2 K2-shaped")

    def test_rope_pairing_and_yarn_are_seen(self):
        # negative controls: the reference with rotate_half pairing, or without
        # YaRN, must be caught (pairing only after position 0)
        cfg = deepseek_v3.tiny_config()
        sd, ids, got = self.run_case(cfg, seed=1)
        wrong = deepseek_v3.forward(sd, dict(cfg, rope_interleave=False), ids)
        self.assertAgrees(got[:1], wrong[:1], "deepseek2, rotate_half RoPE at position 0")
        self.assertDiffers(got[1:], wrong[1:], "deepseek2, rotate_half RoPE after position 0")
        self.assertDiffers(got, deepseek_v3.forward(sd, dict(cfg, rope_scaling=None), ids), "deepseek2 without YaRN")

    def test_dropped_groups_score_zero_in_hf_minus_inf_in_llamacpp(self):
        # correction biases near -1.5 make every biased score negative, so HF's
        # zeroed dropped groups outrank the kept ones while llama.cpp's -inf
        # never do (module docstring): llama.cpp must match the reference with
        # -inf and differ from HF's rule.
        cfg = deepseek_v3.tiny_config()
        sd, ids, got = self.run_case(cfg, seed=4, bias_mean=-1.5)
        self.assertAgrees(got, self.deepseek_reference(sd, cfg, ids, dropped_group_score=float("-inf")),
                          "deepseek2 negative biases, reference with -inf for dropped groups")
        self.assertDiffers(got, deepseek_v3.forward(sd, cfg, ids), "deepseek2 negative biases, HF's 0 for dropped groups")


class YarnMscaleVsLlamaCpp(LlamaCppCase):
    """YaRN configs outside the shipped DeepSeek/Kimi ones (which all have
    mscale == mscale_all_dim), where llama.cpp departs from HF's formulas
    (other-families.md §0; HF modeling_rope_utils._compute_yarn_parameters and
    DeepseekV3Attention.__init__). llama.cpp's GGUF carries only
    mscale_all_dim (as yarn_log_multiplier), and llama-context.cpp derives the
    rest: without mscale_all_dim its deepseek2 graph still multiplies the
    softmax scale by get_mscale(factor)^2, as if mscale_all_dim were 1 (HF:
    no correction); with mscale != mscale_all_dim it takes mscale =
    mscale_all_dim for deepseek2 (a TODO there), so cos/sin get 1.0 where HF
    gives get_mscale(f, mscale) / get_mscale(f, mscale_all_dim). Each test
    shows the difference and that the named substitution explains all of it."""

    BASE = dict(type="yarn", factor=40.0, original_max_position_embeddings=4096, beta_fast=32, beta_slow=1)

    def check(self, written, as_llamacpp_reads_it, label):
        cfg = deepseek_v3.tiny_config(rope_scaling=written)
        sd = deepseek_v3.random_checkpoint(cfg, 1)
        ids = prompt(cfg["vocab_size"])
        path = os.path.join(self.work, "deepseek2-yarn.gguf")
        gguf_moe.write_deepseek_v3(sd, cfg, path)
        got = self.llama_logits(path, ids)
        self.assertDiffers(got, deepseek_v3.forward(sd, cfg, ids), label + ", HF's formulas")
        self.assertAgrees(got, self.deepseek_reference(sd, dict(cfg, rope_scaling=as_llamacpp_reads_it), ids),
                          label + ", read as " + str({k: v for k, v in as_llamacpp_reads_it.items() if "mscale" in k}))

    def test_no_mscale_all_dim(self):
        self.check(dict(self.BASE), dict(self.BASE, mscale_all_dim=1.0), "deepseek2 YaRN without mscale keys")

    def test_mscale_differs_from_mscale_all_dim(self):
        self.check(dict(self.BASE, mscale=1.0, mscale_all_dim=0.5), dict(self.BASE, mscale=0.5, mscale_all_dim=0.5),
                   "deepseek2 YaRN mscale 1, mscale_all_dim 0.5")


def swap_experts(sd, prefix, pairs):
    """The checkpoint with the FFN weights of each (a, b) pair of experts exchanged."""
    out = dict(sd)
    for a, b in pairs:
        for proj in ("gate_proj", "up_proj", "down_proj"):
            ka, kb = "%sexperts.%d.%s.weight" % (prefix, a, proj), "%sexperts.%d.%s.weight" % (prefix, b, proj)
            out[ka], out[kb] = sd[kb], sd[ka]
    return out


class RouterTiesVsLlamaCpp(LlamaCppCase):
    """Exact router ties, made by giving experts (or whole groups) identical
    router rows and correction biases, so that both engines compute bitwise
    equal scores. HF leaves the winner to torch.topk (unspecified order); the
    references give ties to the lower expert or group id (moe_ops.py). This
    release of llama.cpp's CPU argsort does the same: these tests record that
    observed behaviour for the engine to match, and show each tie decides the
    output (the reference with the tie broken the other way, i.e. the tied
    experts' FFN weights exchanged, differs)."""

    def test_qwen3_expert_tie_goes_to_lower_id(self):
        cfg = qwen3_moe.tiny_config(num_hidden_layers=1)
        sd = qwen3_moe.random_checkpoint(cfg, 3)
        gate = "model.layers.0.mlp.gate.weight"
        w = sd[gate].clone()
        w[6] = w[2]  # experts 2 and 6 always tie
        sd[gate] = w
        ids = prompt(cfg["vocab_size"])
        trace = []
        ref = qwen3_moe.forward(sd, cfg, ids, trace=trace)
        top = torch.sort(trace[0], dim=-1, descending=True, stable=True).indices[:, :cfg["num_experts_per_tok"]]
        straddles = [t for t in range(len(ids)) if bool((top[t] == 2).any()) != bool((top[t] == 6).any())]
        self.assertTrue(straddles, "no token where the tie decides which expert runs")
        path = os.path.join(self.work, "qwen3moe-tie.gguf")
        gguf_moe.write_qwen3_moe(sd, cfg, path)
        got = self.llama_logits(path, ids)
        self.assertAgrees(got, ref, "qwen3moe experts 2 = 6 tied, lower id wins")
        other = qwen3_moe.forward(swap_experts(sd, "model.layers.0.mlp.", [(2, 6)]), cfg, ids)
        self.assertDiffers(got, other, "qwen3moe experts 2 = 6 tied, higher id wins")

    def test_deepseek_group_tie_goes_to_lower_id(self):
        cfg = deepseek_v3.tiny_config(num_hidden_layers=2)
        sd = deepseek_v3.random_checkpoint(cfg, 3)
        p = "model.layers.1.mlp."
        w, b = sd[p + "gate.weight"].clone(), sd[p + "gate.e_score_correction_bias"].clone()
        w[6:8], b[6:8] = w[2:4], b[2:4]  # group 3 (experts 6, 7) copies group 1 (2, 3)
        sd[p + "gate.weight"], sd[p + "gate.e_score_correction_bias"] = w, b
        ids = prompt(cfg["vocab_size"])
        trace = []
        ref = deepseek_v3.forward(sd, cfg, ids, trace=trace)
        kept = torch.sort(trace[0][0], dim=-1, descending=True, stable=True).indices[:, :cfg["topk_group"]]
        straddles = [t for t in range(len(ids)) if bool((kept[t] == 1).any()) != bool((kept[t] == 3).any())]
        self.assertTrue(straddles, "no token where the group tie decides")
        path = os.path.join(self.work, "deepseek2-tie.gguf")
        gguf_moe.write_deepseek_v3(sd, cfg, path)
        got = self.llama_logits(path, ids)
        self.assertAgrees(got, ref, "deepseek2 groups 1 = 3 tied, lower id wins")
        other = deepseek_v3.forward(swap_experts(sd, p, [(2, 6), (3, 7)]), cfg, ids)
        self.assertDiffers(got, other, "deepseek2 groups 1 = 3 tied, higher id wins")


if __name__ == "__main__":
    unittest.main()


class QualitySourceVsLlamaCpp(LlamaCppCase):
    """`python -m waste_ref.hf_families` (scripts/compare-llama.sh's source
    for every family but Kimi): the GGUF it writes holds the checkpoint it
    writes, weight for weight, so llama.cpp on it is the unquantised model
    both engines' files are measured against. The checkpoint is read back
    from its safetensors (bf16 decoded), run through the reference, and
    llama.cpp on the F32 GGUF must agree within REL_TOL; the reference on
    the weights before their bf16 rounding must not (the GGUF would hold the
    wrong weights if it took them)."""

    def test_qwen3_gguf_is_the_checkpoint(self):
        import json
        from waste_ref import hf_families, hf_synth
        cli = os.environ.get("WASTE_CLI", os.path.join(_paths.REPO_ROOT, "build", "release", "waste"))
        shape = os.path.join(self.work, "shape.waste")
        subprocess.run([cli, "synth", shape, "--preset", "tiny-qwen3", "--seed", "1"], check=True, capture_output=True)
        with open(os.path.join(shape, "manifest.json")) as f:
            cfg = json.load(f)["config"]
        ckpt, path = os.path.join(self.work, "quality-src"), os.path.join(self.work, "quality-src.gguf")
        seed = 3  # chosen for routing margins, checked below
        self.assertEqual(hf_families.main([ckpt, "--family", "qwen3_moe", "--config-from", shape, "--seed", str(seed),
                                           "--gguf", path]), 0)
        sd = {k: torch.from_numpy(v.astype("float32")) for k, v in hf_synth.load_weights(ckpt).items()}
        ids = prompt(cfg["vocab_size"])
        trace = []
        ref = qwen3_moe.forward(sd, cfg, ids, trace=trace)
        for probs in trace:
            self.assertGreater(margins_topk(probs, cfg["num_experts_per_tok"]), MIN_MARGIN, "a near-tied expert choice")
        got = self.llama_logits(path, ids)
        self.assertAgrees(got, ref, "hf_families' GGUF against its checkpoint")
        unrounded = qwen3_moe.forward(qwen3_moe.random_checkpoint(cfg, seed), cfg, ids)
        self.assertDiffers(got, unrounded, "the weights before bf16 rounding", at_least=1e-4)
