"""`waste convert` end to end: synthetic Hugging Face checkpoints (hf_synth)
-> container -> engine logits, against the PyTorch reference.

For tiny Kimi-Linear-like and K3-like checkpoints whose routed experts are
stored bf16, FP8-block and MXFP4:

(a) engine (`waste eval --full --json`) vs waste_ref on the container's own
    dequantised weights: max|diff| <= 1e-5 * max|logit|. Same reasoning as
    test_engine_vs_reference: f32 engine vs f64 reference, measured ~1e-7..1e-6.

(b) engine vs waste_ref on the *unquantised* checkpoint weights. The container
    is a 3-bit (experts) / 4-bit (trunk) approximation, so the logits differ;
    the test checks that the difference is the quantisation's and nothing
    else: the engine's distance to the unquantised logits equals the
    reference's own distance between dequantised and unquantised weights to
    within 1e-4 relative (the engine is the dequantised model to 1e-5), and
    that distance is bounded by what the measured weight errors explain. In
    these unit-gain random networks a relative error e in a sublayer's
    matrices is, to first order, a relative error <= e in what it writes to
    the residual stream (nothing amplifies at these gains), and the 2L
    sublayer writes plus the LM head perturb independently, so they add in
    quadrature: ||Δlogits|| / ||logits|| <= sqrt(2L + 1) * e_max, with e_max
    the largest relative weight error `verify --source` measures (experts
    ~16-18% here; these tiny trunk tensors are under 65,536 values and stay
    F32 — tests/convert_test.cpp covers Q8G/Q4G). Measured: ~2 e_max for
    L = 4 (bound 3 e_max); a wrongly decoded container is uncorrelated with
    its source (~1.4, far above).

Also: `waste verify --source` passes on every conversion; a kill -9 during a
conversion followed by a rerun gives byte-identical files.
"""

import json
import os
import random
import subprocess
import tempfile
import unittest

import numpy as np

try:
    from ._convert_support import assert_kill_and_resume_byte_identical
    from ._paths import REPO_ROOT
except ImportError:
    from _convert_support import assert_kill_and_resume_byte_identical
    from _paths import REPO_ROOT
from waste_ref import hf_synth
from waste_ref.hf_weights import HfWeights
from waste_ref.model import KimiModel, load

CLI = os.environ.get("WASTE_CLI", os.path.join(REPO_ROOT, "build", "release", "waste"))
# Small fitting work keeps each conversion well under a second at these shapes.
FAST = ["--sample-experts", "8", "--train-vectors", "8192", "--iterations", "8"]


def run(args, timeout=300):
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return done.stdout


def prompt(n, vocab, seed):
    rng = random.Random(seed)
    return [rng.randrange(vocab) for _ in range(n)]


class ConvertEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(CLI):
            raise AssertionError(f"the waste binary {CLI} is missing: build it first (scripts/test.sh does)")
        cls.tmp = tempfile.TemporaryDirectory()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def convert(self, model, experts_format, *extra):
        src = os.path.join(self.tmp.name, f"{model}-{experts_format}-src")
        out = os.path.join(self.tmp.name, f"{model}-{experts_format}{'-'.join(extra)}.waste")
        if not os.path.exists(src):
            hf_synth.write_checkpoint(src, model=model, seed=3, shards=3, experts_format=experts_format)
        summary = json.loads(run([CLI, "convert", src, out, "--json", *FAST, *extra]))
        return src, out, summary

    def engine_logits(self, path, ids):
        out = run([CLI, "eval", "--lut", "exact", path, "--ids", " ".join(map(str, ids)), "--top", "1", "--full", "--json"])
        return np.array(json.loads(out)["logits"], dtype=np.float64)

    def check_model(self, model, experts_format):
        src, out, summary = self.convert(model, experts_format)
        verify = json.loads(run([CLI, "verify", out, "--source", src, "--json"]))
        self.assertTrue(verify["ok"], verify["failures"])
        max_weight_error = max([l["error"] for l in verify["layers"]] + [t["error"] for t in verify["trunk"]])
        quantised = load(out)
        unquantised = KimiModel(HfWeights(src))
        vocab = int(quantised.cfg["vocab_size"])
        for n in (1, 20):
            ids = prompt(n, vocab, seed=n)
            got = self.engine_logits(out, ids)
            ref_q = quantised.last_logits(ids).double().numpy()
            ref_hf = unquantised.last_logits(ids).double().numpy()
            # (a) the engine is the container's model
            rel_a = np.max(np.abs(got - ref_q)) / np.max(np.abs(ref_q))
            self.assertLessEqual(rel_a, 1e-5, f"{model}/{experts_format}, {n} tokens: engine vs dequantised {rel_a:.3g}")
            # (b) its distance to the unquantised model is the quantisation's
            d_engine = np.linalg.norm(got - ref_hf) / np.linalg.norm(ref_hf)
            d_quant = np.linalg.norm(ref_q - ref_hf) / np.linalg.norm(ref_hf)
            self.assertLessEqual(abs(d_engine - d_quant), 1e-4, f"{model}/{experts_format}: {d_engine} vs {d_quant}")
            layers = int(quantised.cfg["num_hidden_layers"])
            bound = np.sqrt(2 * layers + 1) * max_weight_error
            self.assertLessEqual(d_engine, bound,
                                 f"{model}/{experts_format}, {n} tokens: logits {d_engine:.3f} off, weights at most "
                                 f"{max_weight_error:.3f} (bound {bound:.3f})")
            self.assertGreater(d_engine, 0.0)
        return summary

    def test_kimi_linear_bf16(self):
        s = self.check_model("kimi-linear", "bf16")
        self.assertEqual(s["arch"], "kimi_linear")
        self.assertEqual(s["tensor_prefix"], "")

    def test_kimi_linear_fp8(self):
        self.check_model("kimi-linear", "fp8")

    def test_kimi_linear_mxfp4(self):
        self.check_model("kimi-linear", "mxfp4")

    def test_k3_bf16(self):
        s = self.check_model("k3", "bf16")
        self.assertEqual(s["arch"], "kimi_k3")
        self.assertEqual(s["tensor_prefix"], "language_model.")

    def test_k3_fp8(self):
        self.check_model("k3", "fp8")

    def test_k3_mxfp4(self):
        self.check_model("k3", "mxfp4")

    def test_kill_and_resume_is_byte_identical(self):
        src, ref, _ = self.convert("k3", "bf16")
        assert_kill_and_resume_byte_identical(self, CLI, src, ref, os.path.join(self.tmp.name, "killed.waste"), FAST)


class ConvertTrainedModel(unittest.TestCase):
    """The bundled kimi-mini (models/kimi-mini, really trained): converted with
    the default options, the engine computes the container's model (<= 1e-5
    relative, the exact path's tolerance for f32 vs the reference's f64) and
    greedy text of a fixed prompt is identical token for token."""

    def test_engine_is_the_converted_trained_model(self):
        if not os.path.exists(CLI):
            raise AssertionError(f"the waste binary {CLI} is missing: build it first (scripts/test.sh does)")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "kimi-mini.waste")
            run([CLI, "convert", os.path.join(REPO_ROOT, "models", "kimi-mini"), out, "--json"])
            text = "Genesis 20\n\n1 And Abraham journeyed from thence"
            ids = json.loads(run([CLI, "tokenize", out, text, "--json"]))["tokens"]
            self.assertGreater(len(ids), 5)
            quantised = load(out)
            got = np.array(json.loads(run([CLI, "eval", "--lut", "exact", out, "--ids", " ".join(map(str, ids)), "--full", "--json"]))["logits"])
            want = quantised.last_logits(ids).double().numpy()
            rel = np.max(np.abs(got - want)) / np.max(np.abs(want))
            self.assertLessEqual(rel, 1e-5, f"engine vs reference on the converted kimi-mini: {rel:.3g}")
            engine = json.loads(run([CLI, "run", "--lut", "exact", out, "--ids", " ".join(map(str, ids)), "-n", "16", "--temp", "0",
                                     "--ignore-eos", "--json"]))["tokens"]
            reference = quantised.greedy(ids, 16)
            self.assertEqual(engine, list(reference))


if __name__ == "__main__":
    unittest.main()
