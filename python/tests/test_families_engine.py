"""The engine on the other families (issue 16), end to end: a Hugging Face
checkpoint written from the family's reference weights (hf_families) ->
`waste convert` -> engine logits, against that family's PyTorch reference
(waste_ref/deepseek_v3.py, qwen3_moe.py, glm4_moe.py, gpt_oss.py, each
written from HF's modeling code, not from the engine), and each family's
`waste synth` preset against the same reference. FamilyCase holds what the
four share (conversion once per model and format, eval, the logits/greedy,
decode-step, chunking, placement and quantisation checks).

DeepSeek-V3 (q-LoRA MLA with YaRN RoPE on interleaved pairs, sigmoid router
with selection-only bias, 4 groups of 2 with 2 kept, routed scaling 2.5, one
shared expert, a leading dense layer) and Kimi K2 (the same architecture,
model_type kimi_k2: one group, YaRN factor 32); Qwen3-MoE, GLM-4.5 and
gpt-oss with their own cases (each class says which), all tiny.

Tolerances, and why (as test_engine_vs_reference.py):
- engine vs the reference on the container's own dequantised weights
  (float64): max|diff| <= 1e-5 * max|logit| at the last position, for prompts
  of 1, 20 and 100 tokens (100 spans two 64-token prefill chunks) and at every
  step of a 16-step decode. The engine is f32 with f32 accumulation; measured
  differences are ~1e-7..1e-6; a formula error (a RoPE pairing, the YaRN
  mscale, a routing rule) shows at 1e-2 or more.
- greedy continuation: every one of 16 tokens is the reference's argmax.
- engine vs the unquantised checkpoint: the engine's distance equals the
  reference's own distance between dequantised and unquantised weights to
  1e-4 (the difference is the quantisation's and nothing else).

Routing groups: HF's DeepseekV3MoE scores the experts of dropped groups 0.0,
DeepSeek's own inference code (inference/model.py, Gate.forward) and
llama.cpp -inf; they differ only when a kept expert's biased score is
negative. The engine follows the model's authors (-inf); a checkpoint with
strongly negative correction biases pins that down (engine = reference with
-inf, and != HF's rule, so the case is really exercised). Ties: a router
whose groups 0 and 1 hold identical rows and biases makes group and expert
scores tie exactly; engine and reference both keep the lower id.

Qwen3-MoE (Qwen3Family below): GQA with per-head q/k RMSNorm before NEOX
RoPE, softmax router over all experts then top-k, optional renormalisation
(norm_topk_prob), dense layers from decoder_sparse_step / mlp_only_layers;
the same tolerances against waste_ref/qwen3_moe.py.

GLM-4.5 (Glm4Family below): GQA with q/k/v biases, NEOX RoPE on the first
half of each head (partial_rotary_factor), q/k norms only with use_qk_norm,
DeepSeek's sigmoid router with correction bias and groups, a shared expert,
a leading dense layer, the MTP layer skipped; the same tolerances against
waste_ref/glm4_moe.py.

gpt-oss (GptOssFamily below): GQA with biases on q/k/v/o, a sink logit per
head, alternating sliding (window 8 in the tiny config, shorter than the
prompts) and full layers, YaRN NEOX RoPE with truncate false; top-k of the
raw router logits then a softmax over the k; the clamped SwiGLU with
per-expert biases; experts from MXFP4 blocks, fused and gate/up
interleaved. The same tolerances against waste_ref/gpt_oss.py, plus sinks
that dominate the softmax and activations that really clamp.

MiniMax-M2 (MiniMaxM2Family below): GQA whose q/k RMSNorms span the whole
projections (q_proj's head slices scaled differently, so a per-head norm
would differ), NEOX RoPE on half of each head, every layer MoE under
block_sparse_moe with experts w1/w3/w2, the sigmoid router with its
correction bias beside gate; the same tolerances against
waste_ref/minimax_m2.py, and each of those three parts shown to matter.

Qwen3.5 (Qwen35Family below; Qwen3-Next, the same model with grouped GDN
projections, in Qwen3NextFamily): Gated DeltaNet on three layers of four (2
key heads over 4 value heads, so the head grouping shows; one conv over q,
k and v; a scalar decay per value head; RMSNorm(o)·silu(z)) and gated full
attention on the fourth (q_proj's [q | gate] per head, RoPE on a quarter of
each head), zero-centred norms, the softmax router with a sigmoid-gated
shared expert; from a Qwen3_5MoeForConditionalGeneration checkpoint (nested
text config, model.language_model., stacked or per-expert experts, a vision
tensor and an MTP block left out). The same tolerances against
waste_ref/qwen35_moe.py, and each new part shown to matter.

Converter: FP8 e4m3 128x128-block checkpoints convert to the same model (the
dequantised comparison above, and `verify --source`); V3's multi-token-
prediction layer (model.layers.<L>.*) is skipped and reported; a kill -9
during conversion followed by a rerun gives byte-identical files.
"""
import json
import os
import random
import shutil
import subprocess
import tempfile
import unittest

import numpy as np
import torch

try:
    from ._convert_support import assert_kill_and_resume_byte_identical
    from ._paths import REPO_ROOT
except ImportError:
    from _convert_support import assert_kill_and_resume_byte_identical
    from _paths import REPO_ROOT
from waste_ref import deepseek_v3, glm4_moe, gpt_oss, hf_families, minimax_m2, mistral4, qwen3_moe, qwen35_moe
from waste_ref.moe_ops import topk_lowest_index

CLI = os.environ.get("WASTE_CLI", os.path.join(REPO_ROOT, "build", "release", "waste"))
FAST = ["--sample-experts", "8", "--train-vectors", "8192", "--iterations", "8"]
NEG_INF = float("-inf")


def run(args, timeout=600):
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return done.stdout


def prompt(n, vocab, seed):
    rng = random.Random(seed)
    return [rng.randrange(vocab) for _ in range(n)]


def relative(got, ref):
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


def check_synth_preset(case, preset, forward):
    """`waste synth --preset PRESET` (the C++ writer: its own config and random
    tensors) is the model the family's reference computes from that config,
    over a 70-token prompt (two prefill chunks; past tiny-gpt-oss's window)."""
    out = os.path.join(case.tmp.name, "synth-" + preset)
    run([CLI, "synth", out, "--preset", preset, "--seed", "4"])
    with open(os.path.join(out, "manifest.json")) as f:
        cfg = json.load(f)["config"]
    dq = hf_families.container_state_dict(out)
    ids = prompt(70, cfg["vocab_size"], 4)
    ref = forward(dq, cfg, ids)[-1].double().numpy()
    got = np.array(case.engine_eval(out, ids)["logits"], dtype=np.float64)
    case.assertLessEqual(relative(got, ref), 1e-5, preset)


def tiny_config(**overrides):
    """deepseek_v3.tiny_config with an expert width of whole 8-value VQ vectors
    (the reference's 20 is not)."""
    return deepseek_v3.tiny_config(**dict(dict(moe_intermediate_size=24), **overrides))


def k2_config():
    return tiny_config(n_group=1, topk_group=1, routed_scaling_factor=2.827, rope_theta=50000.0,
                                   max_position_embeddings=131072,
                                   rope_scaling=dict(type="yarn", factor=32.0, original_max_position_embeddings=4096,
                                                     beta_fast=32, beta_slow=1, mscale=1.0, mscale_all_dim=1.0))


def negative_bias(sd, cfg):
    # correction biases around -1.2: most biased scores s + b are negative,
    # so HF's 0.0 for dropped groups would outrank kept experts
    g = torch.Generator().manual_seed(5)
    for name in sd:
        if name.endswith("e_score_correction_bias"):
            sd[name] = -1.2 + 0.3 * torch.randn(sd[name].shape, generator=g)


def tie_groups_0_and_1(sd, cfg):
    # groups 0 and 1 (experts 0-1 and 2-3) get identical router rows and biases
    for name in list(sd):
        if name.endswith("mlp.gate.weight") or name.endswith("e_score_correction_bias"):
            sd[name][2:4] = sd[name][0:2]


class FamilyCase(unittest.TestCase):
    """What every family's tests share: tiny checkpoints written from the
    family's reference weights (hf_families), converted once per (name,
    format) and kept for the class, the engine's eval, and logits plus greedy
    continuation against the family's reference on the dequantised weights.
    A family sets `family`, `seed`, `mtp_layers` and `models` (name -> config,
    or (config, tweak), or (config, tweak, model_type)) and `reference`."""
    family = None
    seed = 11
    mtp_layers = 0
    models = {}

    @classmethod
    def setUpClass(cls):
        if not os.path.exists(CLI):
            raise AssertionError(f"the waste binary {CLI} is missing: build it first (scripts/test.sh does)")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.built = {}

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def reference(self, sd, cfg, ids):
        """The family's reference logits [T, vocab], float64."""
        raise NotImplementedError

    def model(self, name, fmt="bf16"):
        """-> (checkpoint dir, container dir, convert summary, config.json (its text_config), checkpoint sd,
        dequantised sd)."""
        key = (name, fmt)
        if key in self.built:
            return self.built[key]
        entry = self.models[name]
        cfg, tweak, family = (entry + (None, None))[:3] if isinstance(entry, tuple) else (entry, None, None)
        src = os.path.join(self.tmp.name, f"{name}-{fmt}-src")
        out = os.path.join(self.tmp.name, f"{name}-{fmt}.waste")
        full, sd = hf_families.write_checkpoint(src, family or self.family, cfg, seed=self.seed, fmt=fmt,
                                                mtp_layers=self.mtp_layers, tweak=tweak)
        summary = json.loads(run([CLI, "convert", src, out, "--json", *FAST]))
        verify = json.loads(run([CLI, "verify", out, "--source", src, "--json"]))
        self.assertTrue(verify["ok"], verify.get("failures"))
        text = full.get("text_config", full)  # a multimodal wrapper's (Mistral 4's) text model
        self.built[key] = (src, out, summary, text, sd, hf_families.container_state_dict(out))
        return self.built[key]

    def engine_eval(self, path, ids, *extra):
        out = run([CLI, "eval", path, "--ids", " ".join(map(str, ids)), "--top", "1", "--full", "--json", *extra, *([] if "--lut" in extra else ["--lut", "exact"])])
        return json.loads(out)

    def check_logits_and_greedy(self, name, lengths=(1, 20, 100), fmt="bf16"):
        _, out, _, cfg, _, dq = self.model(name, fmt)
        errors = []
        for n in lengths:
            with self.subTest(model=name, tokens=n):
                ids = prompt(n, cfg["vocab_size"], seed=n)
                tokens = json.loads(run([CLI, "run", "--lut", "exact", out, "--ids", " ".join(map(str, ids)), "-n", "16", "--temp", "0",
                                         "--ignore-eos", "--json"]))["tokens"]
                ref = self.reference(dq, cfg, ids + tokens)
                got = np.array(self.engine_eval(out, ids)["logits"], dtype=np.float64)
                rel = relative(got, ref[n - 1].numpy())
                errors.append(rel)
                self.assertLessEqual(rel, 1e-5, f"{name}, {n} tokens: relative max|diff| {rel:.3g}")
                want = [int(topk_lowest_index(ref[n - 1 + k], 1)[1]) for k in range(16)]
                self.assertEqual(tokens, want, f"{name}, {n} tokens: greedy continuation")
        print(f"\n  {name}: relative max|diff| {' '.join(f'{e:.2g}' for e in errors)}", end="")

    def check_release_special_ids(self, name, family=None):
        """The checkpoint carries the release's special-id shapes (issue 37:
        GLM-4.5's list of three EOS ids in config.json; Qwen3's and gpt-oss's
        lists in generation_config.json; nulls): it converts, the container
        keeps generation_config.json verbatim, and the engine's EOS ids are
        both files' union, config.json's first (hf_families.special_ids)."""
        src, out, _, cfg, _, _ = self.model(name)
        family = family or self.family
        info = json.loads(run([CLI, "info", out, "--json"]))
        want = hf_families.eos_ids(family, cfg["vocab_size"])
        self.assertEqual(info["eos_ids"], want)
        self.assertEqual(info["bos_id"], hf_families.special_ids(family, cfg["vocab_size"])[0].get("bos_token_id", -1))
        with open(os.path.join(src, "generation_config.json"), "rb") as a, \
                open(os.path.join(out, "generation_config.json"), "rb") as b:
            self.assertEqual(a.read(), b.read())
        # Greedy generation stops at the first EOS id it emits. An untrained
        # model rarely emits one, so a copy of the container whose
        # generation_config.json also lists the 4th greedy token must stop there.
        ids = prompt(12, cfg["vocab_size"], seed=41)
        greedy = [CLI, "run", None, "--ids", " ".join(map(str, ids)), "-n", "8", "--temp", "0", "--json", "--lut", "exact"]

        def tokens(path, *extra):
            return json.loads(run([path if a is None else a for a in greedy] + list(extra)))["tokens"]

        free = tokens(out, "--ignore-eos")
        first = next((i for i, t in enumerate(free) if t in want), len(free) - 1)
        self.assertEqual(tokens(out), free[:first + 1])
        copy = out + "-eos"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(out, copy)
        with open(os.path.join(copy, "generation_config.json")) as f:
            generation = json.load(f)
        listed = generation["eos_token_id"]
        generation["eos_token_id"] = (listed if isinstance(listed, list) else [listed]) + [free[3]]
        with open(os.path.join(copy, "generation_config.json"), "w") as f:
            json.dump(generation, f)
        self.assertEqual(tokens(copy), free[:min(first, free.index(free[3])) + 1])
        self.assertEqual(json.loads(run([CLI, "info", copy, "--json"]))["eos_ids"],
                         want + ([free[3]] if free[3] not in want else []))

    def check_decode_steps(self, name):
        """A 60-token prompt, then 16 fixed ids each as its own decode step: the
        logits after the prompt and after every step."""
        _, out, _, cfg, _, dq = self.model(name)
        ids, fed = prompt(60, cfg["vocab_size"], 160), prompt(16, cfg["vocab_size"], 260)
        steps = np.array(self.engine_eval(out, ids, "--decode-ids", " ".join(map(str, fed)))["step_logits"],
                         dtype=np.float64)
        ref = self.reference(dq, cfg, ids + fed).numpy()[59:]
        errors = [relative(steps[k], ref[k]) for k in range(17)]
        self.assertLessEqual(max(errors), 1e-5, f"{name}: per-step relative errors {errors}")

    def check_chunking(self, name, tokens=70):
        """Token by token (--chunk 1) and in 64-token chunks, both the reference's."""
        _, out, _, cfg, _, dq = self.model(name)
        ids = prompt(tokens, cfg["vocab_size"], 7)
        ref = self.reference(dq, cfg, ids)[-1].numpy()
        got = {}
        for chunk in ("1", "64"):
            got[chunk] = np.array(self.engine_eval(out, ids, "--chunk", chunk)["logits"], dtype=np.float64)
            self.assertLessEqual(relative(got[chunk], ref), 1e-5, f"{name} --chunk {chunk}")
        self.assertLessEqual(relative(got["1"], got["64"]), 1e-5)

    def check_placement_never_changes_a_bit(self, name):
        """Router lookahead, the read path and the thread count only move reads
        and work: the decode steps' logits are the same bits."""
        _, out, _, cfg, _, _ = self.model(name)
        ids, fed = prompt(30, cfg["vocab_size"], 31), prompt(12, cfg["vocab_size"], 32)
        runs = [self.engine_eval(out, ids, "--decode-ids", " ".join(map(str, fed)), *extra)["step_logits"]
                for extra in ([], ["--lookahead", "0"], ["--lookahead", "8", "--io", "pread"], ["--threads", "1"])]
        for other in runs[1:]:
            self.assertEqual(other, runs[0])

    def check_long_prompt_cached_and_streamed(self, name):
        """Issue 38's long case: 300 prompt tokens and 16 decode steps, cached
        at 2 threads, cached at 1, streamed at the plan's floor at --ctx 320
        (an eighth of the experts held): each step within 1e-5 of the
        reference, and the same bits each way (placement)."""
        _, out, _, cfg, _, dq = self.model(name)
        ids, fed = prompt(300, cfg["vocab_size"], 300), prompt(16, cfg["vocab_size"], 316)
        ref = self.reference(dq, cfg, ids + fed).numpy()[299:]
        floor = json.loads(run([CLI, "plan", out, "--ctx", "320", "--json"]))["floor_bytes"]
        plan = json.loads(run([CLI, "plan", out, "--ctx", "320", "--budget", str(floor), "--json"]))
        self.assertLess(plan["expert_cache_bytes"], plan["all_experts_bytes"] / 2, "the floor streams experts")
        runs = []
        for extra in (["--threads", "2"], ["--threads", "1"], ["--threads", "2", "--ctx", "320", "--budget", str(floor)]):
            steps = self.engine_eval(out, ids, "--decode-ids", " ".join(map(str, fed)), *extra)["step_logits"]
            errors = [relative(np.array(steps[k], dtype=np.float64), ref[k]) for k in range(17)]
            self.assertLessEqual(max(errors), 1e-5, f"{extra}: per-step relative errors {errors}")
            runs.append(steps)
        self.assertEqual(runs[1], runs[0])
        self.assertEqual(runs[2], runs[0])

    def check_info(self, name, model_type, arch, **expected):
        """convert's summary names the model_type, info the architecture and
        each `expected` key's value (a tuple of keys: "gqa_layers__heads" ->
        info's gqa_layers and heads)."""
        _, out, summary, _, _, _ = self.model(name)
        self.assertEqual(summary["arch"], model_type)
        info = json.loads(run([CLI, "info", out, "--json"]))
        self.assertEqual(info["arch"], arch)
        for keys, want in expected.items():
            got = tuple(info[k] for k in keys.split("__"))
            self.assertEqual(got if len(got) > 1 else got[0], want, keys)

    def check_refused_config_keys(self, cfg, patches):
        """A checkpoint whose config.json sets one of `patches`' (key, value)
        pairs is refused by `waste convert`, naming the key."""
        for key, value in patches:
            src = os.path.join(self.tmp.name, f"refused-{key}")
            hf_families.write_checkpoint(src, self.family, cfg, seed=3)
            with open(os.path.join(src, "config.json")) as f:
                config = json.load(f)
            config[key] = value
            with open(os.path.join(src, "config.json"), "w") as f:
                json.dump(config, f)
            done = subprocess.run([CLI, "convert", src, src + ".waste", *FAST], capture_output=True, text=True)
            self.assertNotEqual(done.returncode, 0, key)
            self.assertIn(key, done.stderr)

    def check_quantisation_is_the_only_difference(self, name):
        """The engine's distance to the unquantised checkpoint is the
        reference's own distance between dequantised and unquantised weights."""
        _, out, _, cfg, sd, dq = self.model(name)
        unq = {k: v.double() for k, v in sd.items()}
        ids = prompt(20, cfg["vocab_size"], 5)
        got = np.array(self.engine_eval(out, ids)["logits"], dtype=np.float64)
        ref_q = self.reference(dq, cfg, ids)[-1].numpy()
        ref_hf = self.reference(unq, cfg, ids)[-1].numpy()
        d_engine = np.linalg.norm(got - ref_hf) / np.linalg.norm(ref_hf)
        d_quant = np.linalg.norm(ref_q - ref_hf) / np.linalg.norm(ref_hf)
        self.assertLessEqual(abs(d_engine - d_quant), 1e-4)
        self.assertGreater(d_engine, 0.0)


DEEPSEEK_MODELS = {
    # name -> (config, tweak, model_type): V3's structure; Kimi K2's numbers;
    # negative correction biases; exactly tied groups; with an MTP layer
    "v3": (tiny_config(), None),
    "k2": (k2_config(), None, "kimi_k2"),
    "v3-negative": (tiny_config(), negative_bias),
    "v3-ties": (tiny_config(), tie_groups_0_and_1),
}


class DeepSeekFamilyEngine(FamilyCase):
    family = "deepseek_v3"
    models = DEEPSEEK_MODELS

    def reference(self, sd, cfg, ids):
        return deepseek_v3.forward(sd, cfg, ids, dropped_group_score=NEG_INF).double()

    def test_deepseek_v3_logits_and_greedy(self):
        self.check_logits_and_greedy("v3")

    def test_kimi_k2_logits_and_greedy(self):
        self.check_logits_and_greedy("k2")
        self.assertEqual(self.model("k2")[2]["arch"], "kimi_k2")

    def test_release_special_ids(self):
        self.check_release_special_ids("v3")
        self.check_release_special_ids("k2", family="kimi_k2")

    def test_decode_step_by_step(self):
        self.check_decode_steps("v3")

    def test_token_by_token_prefill(self):
        self.check_chunking("v3")

    def test_quantisation_is_the_only_difference(self):
        self.check_quantisation_is_the_only_difference("v3")

    def test_fp8_checkpoint(self):
        self.check_logits_and_greedy("v3", fmt="fp8")

    def test_dropped_groups_follow_deepseeks_inference_code(self):
        _, out, _, cfg, _, dq = self.model("v3-negative")
        ids = prompt(30, cfg["vocab_size"], 8)
        got = np.array(self.engine_eval(out, ids)["logits"], dtype=np.float64)
        minus_inf = deepseek_v3.forward(dq, cfg, ids, dropped_group_score=NEG_INF)[-1].double().numpy()
        hf_zero = deepseek_v3.forward(dq, cfg, ids)[-1].double().numpy()
        self.assertLessEqual(relative(got, minus_inf), 1e-5)
        self.assertGreater(relative(got, hf_zero), 1e-3, "the negative biases never reached the dropped-group rule")

    def test_routing_ties_keep_the_lower_id(self):
        _, out, _, cfg, _, dq = self.model("v3-ties")
        ids = prompt(40, cfg["vocab_size"], 9)
        with tempfile.TemporaryDirectory() as tmp:
            dump = os.path.join(tmp, "routes.jsonl")
            got = np.array(self.engine_eval(out, ids, "--chunk", "1", "--dump-route", dump)["logits"],
                           dtype=np.float64)
            with open(dump) as f:
                routes = [json.loads(line)["layers"] for line in f if line.strip()]
        ref = deepseek_v3.forward(dq, cfg, ids, dropped_group_score=NEG_INF)[-1].double().numpy()
        self.assertLessEqual(relative(got, ref), 1e-5)
        # a tie was really met: some token chose from the tied pair of groups
        # and, when it did, never expert 2 or 3 without its twin 0 or 1
        met = 0
        for token in routes:
            for layer in token:
                chosen = set(layer["experts"])
                for twin, low in ((2, 0), (3, 1)):
                    if twin in chosen:
                        self.assertIn(low, chosen, f"expert {twin} chosen over its lower twin {low}: {layer}")
                met += bool(chosen & {0, 1})
        self.assertGreater(met, 0)

    def test_mtp_layer_is_skipped_and_reported(self):
        cfg = tiny_config()
        src, out = os.path.join(self.tmp.name, "v3-mtp-src"), os.path.join(self.tmp.name, "v3-mtp.waste")
        hf_families.write_checkpoint(src, "deepseek_v3", cfg, seed=self.seed, mtp_layers=1)
        summary = json.loads(run([CLI, "convert", src, out, "--json", *FAST]))
        skipped = [n for n in summary["skipped"] if n.startswith("model.layers.%d." % cfg["num_hidden_layers"])]
        self.assertEqual(len(skipped), 5)
        self.assertEqual(summary["skipped_mtp_tensors"], 5)

    def test_synth_preset(self):
        check_synth_preset(self, "tiny-deepseek",
                           lambda sd, cfg, ids: deepseek_v3.forward(sd, cfg, ids, dropped_group_score=NEG_INF))

    def test_kill_and_resume_is_byte_identical(self):
        src, ref, _, _, _, _ = self.model("v3")
        assert_kill_and_resume_byte_identical(self, CLI, src, ref, os.path.join(self.tmp.name, "killed.waste"), FAST)


def qwen3_config(**overrides):
    """qwen3_moe.tiny_config (GQA 4:1, head_dim 16 != hidden / heads) with an
    expert width of whole 8-value VQ vectors (the reference's 24 is; the
    override keeps it so if the reference changes)."""
    return qwen3_moe.tiny_config(**dict(dict(moe_intermediate_size=24), **overrides))


QWEN3_MODELS = {
    # name -> config: renormalised and not; GQA 2:1; dense layers by
    # mlp_only_layers (MoE layers 0 and 2 around a dense 1) and by
    # decoder_sparse_step (only layer 1 of 3 MoE)
    "q3": qwen3_config(norm_topk_prob=True),
    "q3-unnormalised": qwen3_config(norm_topk_prob=False, num_key_value_heads=2),
    "q3-mlp-only": qwen3_config(norm_topk_prob=True, num_hidden_layers=3, mlp_only_layers=[1]),
    "q3-sparse-step": qwen3_config(norm_topk_prob=False, num_hidden_layers=3, decoder_sparse_step=2,
                                   num_key_value_heads=2),
}


class Qwen3Family(FamilyCase):
    family = "qwen3_moe"
    models = QWEN3_MODELS

    def reference(self, sd, cfg, ids):
        return qwen3_moe.forward(sd, cfg, ids).double()

    def test_logits_and_greedy(self):
        self.check_logits_and_greedy("q3")

    def test_norm_topk_prob_false(self):
        self.check_logits_and_greedy("q3-unnormalised")
        # and the flag really matters on these weights
        _, out, _, cfg, _, dq = self.model("q3-unnormalised")
        ids = prompt(20, cfg["vocab_size"], 20)
        got = np.array(self.engine_eval(out, ids)["logits"], dtype=np.float64)
        renormalised = qwen3_moe.forward(dq, dict(cfg, norm_topk_prob=True), ids)[-1].double().numpy()
        self.assertGreater(relative(got, renormalised), 1e-3)

    def test_dense_layers_from_mlp_only_layers(self):
        _, out, summary, cfg, _, dq = self.model("q3-mlp-only")
        info = json.loads(run([CLI, "info", out, "--json"]))
        self.assertEqual((info["dense_layers"], info["moe_layers"]), (1, 2))
        self.check_logits_and_greedy("q3-mlp-only", lengths=(20, 100))

    def test_dense_layers_from_decoder_sparse_step(self):
        _, out, _, _, _, _ = self.model("q3-sparse-step")
        info = json.loads(run([CLI, "info", out, "--json"]))
        self.assertEqual((info["dense_layers"], info["moe_layers"]), (2, 1))
        self.check_logits_and_greedy("q3-sparse-step", lengths=(20, 100))

    def test_decode_step_by_step(self):
        self.check_decode_steps("q3")
        self.check_decode_steps("q3-unnormalised")

    def test_token_by_token_prefill(self):
        self.check_chunking("q3")

    def test_lookahead_and_read_path_never_change_a_bit(self):
        # the softmax router's lookahead ranks the next MoE layer's experts, skipping a dense next layer
        self.check_placement_never_changes_a_bit("q3-mlp-only")

    def test_quantisation_is_the_only_difference(self):
        self.check_quantisation_is_the_only_difference("q3")

    def test_fp8_checkpoint(self):
        self.check_logits_and_greedy("q3", lengths=(20,), fmt="fp8")

    def test_release_special_ids(self):
        self.check_release_special_ids("q3")

    def test_info_and_convert_summary(self):
        self.check_info("q3", "qwen3_moe", "qwen3-moe", gqa_layers__heads__kv_heads__head_dim=(2, 4, 1, 16),
                        router="softmax_topk", kda_layers__mla_layers=(0, 0))

    def test_unsupported_options_are_refused_by_name(self):
        self.check_refused_config_keys(qwen3_config(), (("attention_bias", True), ("use_sliding_window", True)))

    def test_a_missing_q_norm_is_named(self):
        def drop(sd, cfg):
            del sd["model.layers.1.self_attn.q_norm.weight"]
        src = os.path.join(self.tmp.name, "no-q-norm")
        hf_families.write_checkpoint(src, "qwen3_moe", qwen3_config(), seed=3, tweak=drop)
        done = subprocess.run([CLI, "convert", src, src + ".waste", *FAST], capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("model.layers.1.self_attn.q_norm.weight", done.stderr)

    def test_synth_preset(self):
        check_synth_preset(self, "tiny-qwen3", qwen3_moe.forward)

    def test_kill_and_resume_is_byte_identical(self):
        src, ref = self.model("q3")[:2]
        assert_kill_and_resume_byte_identical(self, CLI, src, ref, os.path.join(self.tmp.name, "killed.waste"), FAST)

GLM4_MODELS = {
    # name -> config: GLM-4.5-Air's shape (biases, no q/k norm, one group);
    # with use_qk_norm; with 2 groups of 4 (1 kept), no renormalisation and a
    # routed scaling of 2.5, 2 shared experts and no biases
    "glm": glm4_moe.tiny_config(),
    "glm-qk-norm": glm4_moe.tiny_config(use_qk_norm=True, num_key_value_heads=1),
    "glm-groups": glm4_moe.tiny_config(n_group=2, topk_group=1, norm_topk_prob=False, routed_scaling_factor=2.5,
                                       n_shared_experts=2, attention_bias=False, partial_rotary_factor=0.25,
                                       first_k_dense_replace=2, num_hidden_layers=4),
}


class Glm4Family(FamilyCase):
    """Checkpoints written with GLM's MTP layer (num_nextn_predict_layers 1),
    for the converter to skip."""
    family = "glm4_moe"
    models = GLM4_MODELS
    seed = 13
    mtp_layers = 1

    def reference(self, sd, cfg, ids):
        # dropped groups score -inf, as the engine (DeepSeek's inference code;
        # HF's 0.0 differs only when a kept expert's biased score is negative)
        return glm4_moe.forward(sd, cfg, ids, dropped_group_score=NEG_INF).double()

    def test_synth_preset(self):
        check_synth_preset(self, "tiny-glm", glm4_moe.forward)

    def test_kill_and_resume_is_byte_identical(self):
        src, ref = self.model("glm")[:2]
        assert_kill_and_resume_byte_identical(self, CLI, src, ref, os.path.join(self.tmp.name, "killed.waste"), FAST)

    def test_logits_and_greedy(self):
        self.check_logits_and_greedy("glm")

    def test_qk_norm_on(self):
        self.check_logits_and_greedy("glm-qk-norm")

    def test_groups_scaling_and_two_shared_experts(self):
        self.check_logits_and_greedy("glm-groups")

    def test_the_parts_really_matter(self):
        # biases, the partial rotation and the q/k norm each change the logits
        # well beyond the tolerance on these weights: a test that ignored one
        # would fail
        for name, wrong in (("glm", dict(attention_bias=False)), ("glm", dict(partial_rotary_factor=1.0)),
                            ("glm-qk-norm", dict(use_qk_norm=False))):
            _, out, _, cfg, _, dq = self.model(name)
            ids = prompt(20, cfg["vocab_size"], 20)
            got = np.array(self.engine_eval(out, ids)["logits"], dtype=np.float64)
            self.assertGreater(relative(got, self.reference(dq, dict(cfg, **wrong), ids)[-1].numpy()), 1e-3, wrong)

    def test_decode_step_by_step(self):
        self.check_decode_steps("glm")
        self.check_decode_steps("glm-qk-norm")

    def test_token_by_token_prefill(self):
        self.check_chunking("glm")
        self.check_chunking("glm-qk-norm")

    def test_lookahead_and_read_path_never_change_a_bit(self):
        self.check_placement_never_changes_a_bit("glm")

    def test_quantisation_is_the_only_difference(self):
        self.check_quantisation_is_the_only_difference("glm")

    def test_fp8_checkpoint(self):
        self.check_logits_and_greedy("glm", lengths=(20,), fmt="fp8")

    def test_mtp_layer_is_skipped_and_reported(self):
        _, _, summary, cfg, _, _ = self.model("glm")
        skipped = [n for n in summary["skipped"] if n.startswith("model.layers.%d." % cfg["num_hidden_layers"])]
        self.assertEqual(len(skipped), 5)
        self.assertEqual(summary["skipped_mtp_tensors"], 5)

    def test_release_special_ids(self):
        self.check_release_special_ids("glm")

    def test_info_and_convert_summary(self):
        self.check_info("glm", "glm4_moe", "glm4-moe", gqa_layers__heads__kv_heads__head_dim__rope_dim=(3, 4, 2, 16, 8),
                        router="sigmoid_grouped", dense_layers__moe_layers__shared_experts=(1, 2, 1))

    def test_a_missing_bias_is_named(self):
        def drop(sd, cfg):
            del sd["model.layers.1.self_attn.k_proj.bias"]
        src = os.path.join(self.tmp.name, "no-k-bias")
        hf_families.write_checkpoint(src, "glm4_moe", glm4_moe.tiny_config(), seed=3, tweak=drop)
        done = subprocess.run([CLI, "convert", src, src + ".waste", *FAST], capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("model.layers.1.self_attn.k_proj.bias", done.stderr)


def oss_sinks_dominate(files, cfg):
    # sink logits far above any score: most of each head's mass goes to the sink
    for name in files:
        if name.endswith("self_attn.sinks"):
            files[name] = files[name].abs() + 6.0


def oss_small_experts(files, cfg):
    # every E8M0 scale 2^-4 lower: experts 16x smaller, activations mostly below the clamp
    for name in files:
        if name.endswith("_scales"):
            files[name] = files[name] - 4


GPT_OSS_MODELS = {
    # name -> (config, tweak of the release's tensors): gpt-oss-20b's shape
    # (sliding first, window 8); full layers first and a 3:1 GQA; sinks
    # dominating; no YaRN, 3 layers
    "oss": (gpt_oss.tiny_config(), None),
    "oss-sinks": (gpt_oss.tiny_config(), oss_sinks_dominate),
    "oss-plain": (gpt_oss.tiny_config(num_hidden_layers=3, num_attention_heads=6, num_key_value_heads=2,
                                      layer_types=["full_attention", "sliding_attention", "sliding_attention"],
                                      sliding_window=5, rope_scaling=None, num_experts_per_tok=2), None),
    "oss-small-experts": (gpt_oss.tiny_config(), oss_small_experts),
}


class GptOssFamily(FamilyCase):
    family = "gpt_oss"
    models = GPT_OSS_MODELS
    seed = 17

    def reference(self, sd, cfg, ids):
        return gpt_oss.forward(sd, cfg, ids).double()

    def test_synth_preset(self):
        check_synth_preset(self, "tiny-gpt-oss", gpt_oss.forward)

    def test_kill_and_resume_is_byte_identical(self):
        src, ref = self.model("oss")[:2]
        assert_kill_and_resume_byte_identical(self, CLI, src, ref, os.path.join(self.tmp.name, "killed.waste"), FAST)

    def test_logits_and_greedy(self):
        # 100 tokens: beyond the window (8) and beyond the sliding ring (8 + 63 rows), over two prefill chunks
        self.check_logits_and_greedy("oss")

    def test_full_first_three_to_one_gqa_no_yarn(self):
        self.check_logits_and_greedy("oss-plain")

    def test_sinks_dominating_the_softmax(self):
        self.check_logits_and_greedy("oss-sinks", lengths=(20, 100))
        _, out, _, cfg, _, dq = self.model("oss-sinks")
        # the sinks take most of the mass: without them the logits move far
        no_sinks = {k: (v.fill_(float("-inf")) if k.endswith("sinks") else v) for k, v in
                    ((k, v.clone()) for k, v in dq.items())}
        ids = prompt(20, cfg["vocab_size"], 20)
        got = np.array(self.engine_eval(out, ids)["logits"], dtype=np.float64)
        self.assertGreater(relative(got, gpt_oss.forward(no_sinks, cfg, ids)[-1].double().numpy()), 1e-2)
        x = dq["model.layers.0.self_attn.sinks"]
        self.assertGreater(float(x.min()), 6.0)

    def test_the_sliding_window_matters(self):
        # at 100 tokens the sliding layer sees 8 keys: reading them all moves the logits far
        _, out, _, cfg, _, dq = self.model("oss")
        ids = prompt(100, cfg["vocab_size"], 100)
        got = np.array(self.engine_eval(out, ids)["logits"], dtype=np.float64)
        self.assertLessEqual(relative(got, gpt_oss.forward(dq, cfg, ids)[-1].double().numpy()), 1e-5)
        wide = gpt_oss.forward(dq, dict(cfg, sliding_window=1000), ids)[-1].double().numpy()
        self.assertGreater(relative(got, wide), 1e-3)

    def test_activations_really_clamp(self):
        _, out, _, cfg, _, dq = self.model("oss")
        ids = prompt(20, cfg["vocab_size"], 21)
        trace = []
        ref = gpt_oss.forward(dq, cfg, ids, trace=trace)[-1].double().numpy()
        gate = torch.cat([t[0].flatten() for t in trace])
        up = torch.cat([t[1].flatten() for t in trace])
        self.assertGreater(int((gate > 7).sum()), 10)        # min(gate, 7) acts
        self.assertGreater(int((up.abs() > 7).sum()), 10)    # clamp(up, -7, 7) acts
        got = np.array(self.engine_eval(out, ids)["logits"], dtype=np.float64)
        self.assertLessEqual(relative(got, ref), 1e-5)
        unclamped = gpt_oss.forward(dq, dict(cfg, swiglu_limit=1e9), ids)[-1].double().numpy()
        self.assertGreater(relative(got, unclamped), 1e-3)

    def test_decode_step_by_step(self):
        self.check_decode_steps("oss")

    def test_token_by_token_prefill(self):
        # 140 tokens: the sliding ring (71 rows) wraps in both
        self.check_chunking("oss", tokens=140)

    def test_lookahead_and_read_path_never_change_a_bit(self):
        self.check_placement_never_changes_a_bit("oss")

    def test_int8_tables_keep_the_expert_biases(self):
        # decode's int8 lookup tables (approximate) add the same biases: close
        # to the exact steps, and far from steps without the biases (experts
        # 16x smaller than the other models': the int8 tables' error grows
        # with the expert outputs, 5-10% on "oss")
        _, out, _, cfg, _, dq = self.model("oss-small-experts")
        ids, fed = prompt(30, cfg["vocab_size"], 33), prompt(8, cfg["vocab_size"], 34)
        exact = np.array(self.engine_eval(out, ids, "--decode-ids", " ".join(map(str, fed)))["step_logits"])
        int8 = np.array(self.engine_eval(out, ids, "--decode-ids", " ".join(map(str, fed)), "--lut", "int8")["step_logits"])
        no_bias = {k: (torch.zeros_like(v) if k.endswith("_proj_bias") else v) for k, v in dq.items()}
        ref_no_bias = gpt_oss.forward(no_bias, cfg, ids + fed).double().numpy()[29:]
        errors = [relative(int8[k], exact[k]) for k in range(len(fed) + 1)]
        print(f"\n  int8 vs exact, per step: {' '.join(f'{e:.2g}' for e in errors)}", end="")
        for k in range(len(fed) + 1):
            self.assertLessEqual(errors[k], 2e-2, k)
            self.assertGreater(relative(exact[k], ref_no_bias[k]), 5e-2, k)

    def test_release_special_ids(self):
        self.check_release_special_ids("oss")

    def test_info_and_convert_summary(self):
        self.check_info("oss", "gpt_oss", "gpt-oss", router="topk_softmax",
                        gqa_layers__sliding_layers__sliding_window=(2, 1, 8), dense_layers__moe_layers=(0, 2))

    def test_reference_mxfp4_decoder_by_hand(self):
        # convert_moe_packed_tensors on every code and a few scales: low nibble first, times 2^(scale-127)
        blocks = torch.arange(256, dtype=torch.int32).to(torch.uint8).view(8, 2, 16)
        scales = torch.tensor([[120, 127], [130, 1], [160, 127], [127, 100], [126, 128], [127, 127], [0, 200], [140, 90]],
                              dtype=torch.uint8)
        got = gpt_oss.mxfp4_decode(blocks, scales)
        for r in range(8):
            for j in range(64):
                byte = int(blocks[r, j // 32, (j % 32) // 2])
                code = byte & 15 if j % 2 == 0 else byte >> 4
                want = gpt_oss.FP4_VALUES[code] * 2.0 ** (int(scales[r, j // 32]) - 127)
                self.assertEqual(float(got[r, j]), want, (r, j))



MINIMAX_MODELS = {
    # name -> config: MiniMax-M2's structure (whole-projection q/k norms, half
    # of each head rotated, the sigmoid router with its correction bias);
    # without the bias and with a full rotation over GQA 4:1
    "m2": minimax_m2.tiny_config(),
    "m2-plain": minimax_m2.tiny_config(use_routing_bias=False, rotary_dim=16, num_key_value_heads=1),
}


class MiniMaxM2Family(FamilyCase):
    """MiniMax-M2 (families-2026.md §3) against waste_ref/minimax_m2.py."""
    family = "minimax_m2"
    models = MINIMAX_MODELS
    seed = 17

    def reference(self, sd, cfg, ids):
        return minimax_m2.forward(sd, cfg, ids).double()

    def test_synth_preset(self):
        check_synth_preset(self, "tiny-minimax", minimax_m2.forward)

    def test_logits_and_greedy(self):
        self.check_logits_and_greedy("m2")
        self.check_logits_and_greedy("m2-plain", lengths=(20,))

    def test_the_parts_really_matter(self):
        # the whole-projection norm (not per head), the partial rotation and
        # the correction bias each change the logits well beyond the
        # tolerance on these weights: a reader that got one wrong would fail
        _, out, _, cfg, _, dq = self.model("m2")
        ids = prompt(20, cfg["vocab_size"], 20)
        got = np.array(self.engine_eval(out, ids)["logits"], dtype=np.float64)
        wrongs = (minimax_m2.forward(dq, cfg, ids, qk_norm_per_head=True),
                  minimax_m2.forward(dq, dict(cfg, rotary_dim=16), ids),
                  minimax_m2.forward(dq, dict(cfg, use_routing_bias=False), ids))
        for what, wrong in zip(("per-head norm", "full rotation", "no correction bias"), wrongs):
            self.assertGreater(relative(got, wrong[-1].double().numpy()), 1e-3, what)

    def test_decode_step_by_step(self):
        self.check_decode_steps("m2")

    def test_token_by_token_prefill(self):
        self.check_chunking("m2")

    def test_lookahead_and_read_path_never_change_a_bit(self):
        self.check_placement_never_changes_a_bit("m2")

    def test_quantisation_is_the_only_difference(self):
        self.check_quantisation_is_the_only_difference("m2")

    def test_fp8_checkpoint(self):
        self.check_logits_and_greedy("m2", lengths=(20,), fmt="fp8")

    def test_release_special_ids(self):
        self.check_release_special_ids("m2")

    def test_info_and_convert_summary(self):
        self.check_info("m2", "minimax_m2", "minimax-m2", gqa_layers__heads__kv_heads__head_dim__rope_dim=(3, 4, 2, 16, 8),
                        router="sigmoid_grouped", dense_layers__moe_layers__shared_experts=(0, 3, 0))

    def test_unsupported_options_are_refused_by_name(self):
        self.check_refused_config_keys(minimax_m2.tiny_config(), (("attention_bias", True), ("use_grouped_topk", True),
                                                                  ("attn_window_size", 128)))

    def test_a_per_head_sized_q_norm_is_named(self):
        # Qwen3's per-head q_norm shape where MiniMax-M2 needs the whole projection's
        def per_head(sd, cfg):
            sd["model.layers.1.self_attn.q_norm.weight"] = sd["model.layers.1.self_attn.q_norm.weight"][:cfg["head_dim"]]
        src = os.path.join(self.tmp.name, "per-head-q-norm")
        hf_families.write_checkpoint(src, "minimax_m2", minimax_m2.tiny_config(), seed=3, tweak=per_head)
        done = subprocess.run([CLI, "convert", src, src + ".waste", *FAST], capture_output=True, text=True)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("model.layers.1.self_attn.q_norm.weight", done.stderr)
        self.assertIn("[16]", done.stderr)

    def test_kill_and_resume_is_byte_identical(self):
        src, ref = self.model("m2")[:2]
        assert_kill_and_resume_byte_identical(self, CLI, src, ref, os.path.join(self.tmp.name, "killed.waste"), FAST)


if __name__ == "__main__":
    unittest.main()


MISTRAL4_MODELS = {
    # name -> config: Mistral Small 4's structure (q-LoRA, YaRN factor 128,
    # the query temperature moving from position 4, softmax router with a
    # shared expert, every layer MoE); plain q_proj, no YaRN (so no
    # temperature), a leading dense layer and two shared experts
    "m4": mistral4.tiny_config(),
    "m4-plain": mistral4.tiny_config(q_lora_rank=None, rope_scaling=None, first_k_dense_replace=1, n_shared_experts=2),
}


class Mistral4Family(FamilyCase):
    """Mistral 4 (families-2026.md §6) against waste_ref/mistral4.py, from a
    Mistral3ForConditionalGeneration checkpoint (nested text config, the text
    model under model.language_model., stacked experts, a vision tower)."""
    family = "mistral4"
    models = MISTRAL4_MODELS
    seed = 17

    def reference(self, sd, cfg, ids):
        return mistral4.forward(sd, cfg, ids).double()

    def test_synth_preset(self):
        check_synth_preset(self, "tiny-mistral4", mistral4.forward)

    def test_logits_and_greedy(self):
        self.check_logits_and_greedy("m4", lengths=(1, 9, 40, 100))  # and 300: below
        self.check_logits_and_greedy("m4-plain", lengths=(20,))

    def test_the_parts_really_matter(self):
        # the query temperature, the renormalisation and the YaRN softmax
        # scale each change the logits well beyond the tolerance
        _, out, _, cfg, _, dq = self.model("m4")
        ids = prompt(20, cfg["vocab_size"], 20)
        got = np.array(self.engine_eval(out, ids)["logits"], dtype=np.float64)
        cfg = mistral4.reference_config(cfg)
        rs = cfg["rope_scaling"]
        wrongs = (mistral4.forward(dq, dict(cfg, rope_scaling=dict(rs, llama_4_scaling_beta=None)), ids),
                  mistral4.forward(dq, dict(cfg, norm_topk_prob=False), ids),
                  mistral4.forward(dq, dict(cfg, rope_scaling=dict(rs, mscale_all_dim=0.0)), ids))
        for what, wrong in zip(("no temperature", "no renormalisation", "no mscale^2"), wrongs):
            self.assertGreater(relative(got, wrong[-1].double().numpy()), 1e-3, what)

    def test_decode_step_by_step(self):
        self.check_decode_steps("m4")

    def test_token_by_token_prefill(self):
        self.check_chunking("m4")

    def test_300_token_prompt_cached_and_streamed(self):
        # (the temperature at 1 + 0.1 ln 76 by the end)
        self.check_long_prompt_cached_and_streamed("m4")

    def test_lookahead_and_read_path_never_change_a_bit(self):
        self.check_placement_never_changes_a_bit("m4")

    def test_quantisation_is_the_only_difference(self):
        self.check_quantisation_is_the_only_difference("m4")

    def test_release_special_ids(self):
        self.check_release_special_ids("m4")

    def test_info_and_convert_summary(self):
        self.check_info("m4", "mistral4", "mistral4", router="softmax_topk",
                        dense_layers__moe_layers__shared_experts=(0, 3, 1))


QWEN35_MODELS = {
    # name -> config: Qwen3.5-35B-A3B's structure (GDN 2 key / 4 value heads,
    # gated GQA 4:1, stacked experts); value heads equal to key heads, GQA
    # 2:1, layer_types with the full-attention layer first, per-expert names
    "q35": qwen35_moe.tiny_config(),
    "q35-plain": qwen35_moe.tiny_config(linear_num_value_heads=2, num_key_value_heads=2, _stacked=False,
                                        layer_types=["full_attention", "linear_attention", "linear_attention",
                                                     "full_attention"]),
}


class Qwen35Family(FamilyCase):
    """Qwen3.5 / 3.6 MoE (families-2026.md §1) against waste_ref/qwen35_moe.py."""
    family = "qwen3_5_moe"
    models = QWEN35_MODELS
    seed = 17

    def reference(self, sd, cfg, ids):
        return qwen35_moe.forward(sd, cfg, ids).double()

    def test_synth_preset(self):
        check_synth_preset(self, "tiny-qwen35", qwen35_moe.forward)

    def test_logits_and_greedy(self):
        # 63, 64 and 65 straddle the 64-token prefill chunk the recurrent state crosses
        self.check_logits_and_greedy("q35", lengths=(1, 9, 40, 63, 64, 65))  # and 300: below
        self.check_logits_and_greedy("q35-plain", lengths=(20,))

    def test_the_parts_really_matter(self):
        # the zero-centred norms (read as plain), the attention's output gate
        # and the shared expert's gate (each zeroed: sigmoid 1/2) each change
        # the logits well beyond the tolerance
        _, out, _, cfg, _, dq = self.model("q35")
        ids = prompt(20, cfg["vocab_size"], 20)
        got = np.array(self.engine_eval(out, ids)["logits"], dtype=np.float64)
        plain = {k: v - 1.0 if k.endswith(("layernorm.weight", "model.norm.weight", "_norm.weight")) else v
                 for k, v in dq.items()}
        no_gate = dict(dq)
        D, H = cfg["head_dim"], cfg["num_attention_heads"]
        for k in [k for k in dq if k.endswith("self_attn.q_proj.weight")]:
            w = dq[k].clone().view(H, 2 * D, -1)
            w[:, D:] = 0
            no_gate[k] = w.view(2 * H * D, -1)
        no_shared_gate = {k: v * 0 if k.endswith("shared_expert_gate.weight") else v for k, v in dq.items()}
        for what, sd in (("plain norms", plain), ("no output gate", no_gate), ("no shared gate", no_shared_gate)):
            self.assertGreater(relative(got, qwen35_moe.forward(sd, cfg, ids)[-1].double().numpy()), 1e-3, what)

    def test_decode_step_by_step(self):
        self.check_decode_steps("q35")

    def test_token_by_token_prefill(self):
        self.check_chunking("q35")

    def test_300_token_prompt_cached_and_streamed(self):
        # (the recurrent state carried across five 64-token chunks and the decode)
        self.check_long_prompt_cached_and_streamed("q35")

    def test_lookahead_and_read_path_never_change_a_bit(self):
        self.check_placement_never_changes_a_bit("q35")

    def test_quantisation_is_the_only_difference(self):
        self.check_quantisation_is_the_only_difference("q35")

    def test_release_special_ids(self):
        self.check_release_special_ids("q35")

    def test_info_and_convert_summary(self):
        self.check_info("q35", "qwen3_5_moe_text", "qwen35moe", router="softmax_topk",
                        gdn_layers__gqa_layers=(3, 1), gdn_key_heads__gdn_value_heads__gdn_head_dim=(2, 4, 16),
                        dense_layers__moe_layers__shared_experts=(0, 4, 1))


class Qwen3NextFamily(FamilyCase):
    """Qwen3-Next (families-2026.md §1): Qwen3.5's model from a flat
    Qwen3NextForCausalLM checkpoint whose GDN projections are grouped per key
    head (in_proj_qkvz, in_proj_ba; the converter shows them ungrouped),
    against waste_ref/qwen35_moe.py. With 2 key heads over 4 value heads an
    ungrouping that mixes heads or parts changes every logit."""
    family = "qwen3_next"
    models = {"next": qwen35_moe.tiny_config()}
    seed = 19

    def reference(self, sd, cfg, ids):
        return qwen35_moe.forward(sd, cfg, ids).double()

    def test_logits_and_greedy(self):
        self.check_logits_and_greedy("next", lengths=(1, 20, 70))

    def test_decode_step_by_step(self):
        self.check_decode_steps("next")

    def test_info_and_convert_summary(self):
        self.check_info("next", "qwen3_next", "qwen3next", gdn_layers__gqa_layers=(3, 1),
                        dense_layers__moe_layers__shared_experts=(0, 4, 1))
