"""`waste perplexity` on the converted kimi-mini against the PyTorch
reference (waste_ref) on the container's own dequantised weights.

The container is converted with small fitting work (as test_convert's FAST):
the question here is whether the engine computes the container's model and
training/evaluate.py's protocol, not how good the codebooks are.

Streams: (1) the start of the held-out test stream (eval.json
reference_prompt_ids, 64 ids) as a uint16 file, windows of 21 -> 3 windows;
(2) a held-out passage (Genesis 20, KJV, public domain) as text: [BOS] +
the container tokenizer's ids, windows of 16.

Protocol (evaluate.py): window i is tokens [i*W, i*W + W], each from an
empty state; NLL = -sum of log softmax(logits at j)[token j+1] over the W
positions of every window; perplexity = exp(NLL / (windows * W)).

Tolerance: the engine's logits are the reference's within 1e-5 * max|logit|
(test_convert, test_engine_vs_reference: f32 engine vs f64 reference), and
a log-probability moves by at most twice the largest logit change (its own
logit plus the log-sum-exp), so the mean NLL per token agrees within
2e-5 * max|logit|. A window, target or position off by one is off by
~1 nat. Measured: 6.6e-8 nats per token apart, the bound being 2.7e-4
(max|logit| 13.4). Bits per byte (text) is checked as its definition from the same
figures (1e-9 relative).

Also refused with exit 1 and a message naming the value: a stream of odd
length, an id outside the vocabulary (named with its byte offset), a stream
shorter than one window.
"""

import json
import math
import os
import struct
import subprocess
import tempfile
import unittest

import torch

try:
    from ._paths import REPO_ROOT
except ImportError:
    from _paths import REPO_ROOT
from waste_ref.model import load

CLI = os.environ.get("WASTE_CLI", os.path.join(REPO_ROOT, "build", "release", "waste"))
MODEL_DIR = os.path.join(REPO_ROOT, "models", "kimi-mini")
FAST = ["--sample-experts", "8", "--train-vectors", "8192", "--iterations", "8"]
PASSAGE = ("Genesis 20\n\n1 And Abraham journeyed from thence toward the south country, and dwelled between Kadesh "
           "and Shur, and sojourned in Gerar.\n2 And Abraham said of Sarah his wife, She is my sister: and Abimelech "
           "king of Gerar sent, and took Sarah.\n")


def run(args, expect=0):
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    if done.returncode != expect:
        raise AssertionError(f"{' '.join(args)} exited {done.returncode}, expected {expect}: {done.stderr}")
    return done


class EnginePerplexity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(CLI):
            raise AssertionError(f"the waste binary {CLI} is missing: build it first (scripts/test.sh does)")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.container = os.path.join(cls.tmp.name, "kimi-mini.waste")
        run([CLI, "convert", MODEL_DIR, cls.container, "--json", *FAST])
        cls.ref = load(cls.container)
        with open(os.path.join(MODEL_DIR, "eval.json")) as f:
            cls.stream = json.load(f)["reference_prompt_ids"]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def reference_nll(self, stream, window):
        """Summed NLL over evaluate.py's windows, and the largest |logit| seen."""
        n = (len(stream) - 1) // window
        total, scale = 0.0, 0.0
        for i in range(n):
            w = stream[i * window:i * window + window + 1]
            logits, _ = self.ref.forward(w[:-1])
            logp = torch.log_softmax(logits.double(), dim=-1)
            total -= sum(logp[j, w[j + 1]].item() for j in range(window))
            scale = max(scale, logits.abs().max().item())
        return total, n, scale

    def engine(self, path, *args):
        return json.loads(run([CLI, "perplexity", self.container, path, "--json", *args, *([] if "--lut" in args else ["--lut", "exact"])]).stdout)

    def test_u16_stream_matches_reference(self):
        path = os.path.join(self.tmp.name, "heldout.u16")
        with open(path, "wb") as f:
            f.write(struct.pack(f"<{len(self.stream)}H", *self.stream))
        nll, windows, scale = self.reference_nll(self.stream, 21)
        got = self.engine(path, "--window", "21")
        self.assertEqual(got["windows"], windows)
        self.assertEqual(windows, 3)
        self.assertEqual(got["predicted_tokens"], windows * 21)
        self.assertEqual(got["stream_tokens"], len(self.stream))
        want = nll / (windows * 21)
        self.assertLessEqual(abs(got["nll_per_token"] - want), 2e-5 * scale,
                             f"engine {got['nll_per_token']} vs reference {want} (max|logit| {scale:.3g})")
        self.assertAlmostEqual(got["perplexity"], math.exp(got["nll_per_token"]), delta=1e-9 * got["perplexity"])
        self.assertIsNone(got["bits_per_byte"])
        # --max-windows scores a prefix of the same windows; chunk 1 and 3 threads agree within rounding
        one = self.engine(path, "--window", "21", "--max-windows", "1", "--chunk", "1", "--threads", "3")
        nll1, _, _ = self.reference_nll(self.stream[:22], 21)
        self.assertEqual(one["windows"], 1)
        self.assertLessEqual(abs(one["nll_per_token"] - nll1 / 21), 2e-5 * scale)

    def test_text_matches_reference(self):
        path = os.path.join(self.tmp.name, "passage.txt")
        with open(path, "w") as f:
            f.write(PASSAGE)
        ids = json.loads(run([CLI, "tokenize", self.container, PASSAGE, "--json"]).stdout)["tokens"]
        bos = int(self.ref.cfg["bos_token_id"])
        stream = [bos] + ids
        nll, windows, scale = self.reference_nll(stream, 16)
        got = self.engine(path, "--format", "text", "--window", "16")
        self.assertEqual(got["stream_tokens"], len(stream))
        self.assertEqual(got["windows"], windows)
        self.assertGreaterEqual(windows, 2)
        self.assertLessEqual(abs(got["nll_per_token"] - nll / (windows * 16)), 2e-5 * scale)
        covered = windows * 16 / (len(stream) - 1)
        bpb = got["nll_per_token"] * windows * 16 / math.log(2) / (len(PASSAGE.encode()) * covered)
        self.assertAlmostEqual(got["bits_per_byte"], bpb, delta=1e-9 * bpb)

    def test_hostile_streams_are_refused(self):
        def refused(data, names, *args):
            path = os.path.join(self.tmp.name, "bad.u16")
            with open(path, "wb") as f:
                f.write(data)
            err = run([CLI, "perplexity", self.container, path, *args, *([] if "--lut" in args else ["--lut", "exact"])], expect=1).stderr
            self.assertIn(names, err)
        refused(b"\x01\x00\x02", "3 bytes, an odd number")
        refused(struct.pack("<4H", 1, 2, 4096, 3), "token 4096 at byte offset 4 is outside the model's vocabulary of 4096")
        refused(struct.pack("<4H", 1, 2, 3, 4), "holds 4 tokens; one window of --window 8 needs 9", "--window", "8")
        run([CLI, "perplexity", "--lut", "exact", self.container, os.path.join(self.tmp.name, "missing.u16")], expect=1)


if __name__ == "__main__":
    unittest.main()
