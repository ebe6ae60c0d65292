"""An image through the whole engine against the independent references:
`waste eval --image` on a synthetic K3-style container with a tiny tower
(`waste synth --preset tiny-k3 --set vision=true`) vs Pillow's decode, the
spec's preprocessing (tests/image_reference.py, float32 as written in
vision.md §2.3), the float64 tower (waste_ref.vision) and the float64 text
model with the image rows spliced at the pads (waste_ref.model, vision.md §4).

Tolerance: logits relative <= 1e-5 (max|engine - reference| / max|reference|),
the text model's own bound (test_engine_vs_reference.py says why); the tower
alone is within ~3e-7 (tests/vision_test.cpp). Both the chunked prefill and
token-by-token evaluation (--chunk 1: every pad through the single-token
step) and decode steps after the image are checked. The image is 45 x 31
(not square, resized to a grid that differs from the stored position grid).

The `waste` binary comes from WASTE_CLI, else build/release/waste.
"""

import ctypes
import importlib.util
import json
import os
import subprocess
import tempfile
import unittest

import numpy as np
import torch

try:
    from ._paths import REPO_ROOT
except ImportError:
    from _paths import REPO_ROOT
from waste_ref import vision
from waste_ref.model import load

CLI = os.environ.get("WASTE_CLI", os.path.join(REPO_ROOT, "build", "release", "waste"))


def run(args):
    done = subprocess.run(args, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return done.stdout


def image_reference():
    spec = importlib.util.spec_from_file_location("image_reference", os.path.join(REPO_ROOT, "tests", "image_reference.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class VisionEndToEnd(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from PIL import Image  # Debian's python3-pil (scripts/setup.sh)
        cls.tmp = tempfile.TemporaryDirectory(prefix="waste_vision_")
        cls.path = os.path.join(cls.tmp.name, "k3v")
        run([CLI, "synth", cls.path, "--preset", "tiny-k3", "--seed", "4", "--set", "vision=true"])
        rgb = (np.random.default_rng(5).random((31, 45, 3)) * 255).astype(np.uint8)
        cls.image = os.path.join(cls.tmp.name, "photo.png")
        Image.fromarray(rgb).save(cls.image)
        with open(os.path.join(cls.path, "vision.json")) as f:
            cfg = json.load(f)
        # Pillow decodes, the spec's float32 preprocessing lays out the patches.
        ref = image_reference()
        decoded = np.asarray(Image.open(cls.image).convert("RGB"))
        gw, gh = ref.grid(45, 31, cfg["max_patches"])
        mean, std = np.array(cfg["image_mean"], np.float32), np.array(cfg["image_std"], np.float32)
        pixels = ref.to_patches(ref.resize(decoded, 14 * gw, 14 * gh, np.float32), mean, std, gw, gh, np.float32)
        cls.rows = vision.embed(vision.load(cls.path), torch.from_numpy(pixels.astype(np.float64)), gh, gw)
        cls.pad = cfg["media_placeholder_token_id"]
        block = "<|media_begin|>image 45x31<|media_content|><|media_pad|><|media_end|>"
        tokens = json.loads(run([CLI, "tokenize", cls.path, "--markup", "--json", block]))["tokens"]
        cls.ids = []
        for t in tokens + [5, 6, 7]:
            cls.ids += [t] * cls.rows.shape[0] if t == cls.pad else [t]
        cls.model = load(cls.path)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def assert_close(self, engine, reference, what):
        engine, reference = np.asarray(engine, np.float64), reference.numpy()
        relative = np.abs(engine - reference).max() / np.abs(reference).max()
        self.assertLessEqual(relative, 1e-5, f"{what}: relative {relative:.2e}")

    def test_logits_with_an_image_match_the_references(self):
        self.assertEqual(self.ids.count(self.pad), self.rows.shape[0])
        decode = [8, 9]
        for chunk in ("64", "1"):
            out = json.loads(run([CLI, "eval", "--lut", "exact", self.path, "--image", self.image, "--ids", "5 6 7", "--full", "--json",
                                  "--chunk", chunk, "--decode-ids", " ".join(map(str, decode))]))
            self.assertEqual(out["prompt_tokens"], len(self.ids))
            for step, engine in enumerate(out["step_logits"]):
                ids = self.ids + decode[:step]
                logits, _ = self.model.forward(ids, image_rows=self.rows, pad=self.pad)
                self.assert_close(engine, logits[-1], f"chunk {chunk}, after {step} decode steps")

    def test_the_image_is_what_the_model_sees(self):
        # Without the rows (the pads' table rows) the reference is far off: the
        # comparison above could not pass by ignoring the image.
        out = json.loads(run([CLI, "eval", "--lut", "exact", self.path, "--image", self.image, "--ids", "5 6 7", "--full", "--json"]))
        logits, _ = self.model.forward(self.ids)
        engine, reference = np.asarray(out["logits"]), logits[-1].numpy()
        self.assertGreater(np.abs(engine - reference).max() / np.abs(reference).max(), 1e-3)


class _Error(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("message", ctypes.c_char * 1024)]


class _OpenOptions(ctypes.Structure):  # waste_open_options, field for field
    _fields_ = [("flags", ctypes.c_uint32), ("budget_bytes", ctypes.c_uint64), ("context_length", ctypes.c_uint32),
                ("threads", ctypes.c_uint32), ("cache_policy", ctypes.c_uint32), ("io_backend", ctypes.c_uint32),
                ("usage_path", ctypes.c_char_p), ("lut_mode", ctypes.c_uint32), ("sessions", ctypes.c_uint32),
                ("snapshot_bytes", ctypes.c_uint64), ("grammars", ctypes.c_uint32), ("vision", ctypes.c_uint32),
                ("prefill_chunk", ctypes.c_uint32)]


class PadLastThroughTheCApi(VisionEndToEnd):
    """An image whose pad is the prompt's very last token, the prompt 65
    tokens long: its last chunk is that one pad, so the single-token step
    must splice the row (vision.md §4, pitfall 6). Through the C API
    (libwaste.so, ctypes), since the CLI always closes the block after the pad.
    Same references and bound as above."""

    def test_pad_as_the_last_of_65_tokens(self):
        lib = ctypes.CDLL(os.environ.get("WASTE_LIB", os.path.join(os.path.dirname(CLI), "libwaste.so")))
        err = _Error()
        options = _OpenOptions()
        lib.waste_open_options_init(ctypes.byref(options))
        options.vision, options.context_length, options.threads = 1, 256, 2
        options.prefill_chunk = 64  # the 65th token, the last pad, is a chunk of its own
        model, session = ctypes.c_void_p(), ctypes.c_void_p()
        check = lambda status: self.assertEqual(status, 0, err.message.decode())
        check(lib.waste_model_open(self.path.encode(), ctypes.byref(options), ctypes.byref(model), ctypes.byref(err)))
        try:
            check(lib.waste_session_create(model, ctypes.byref(session), ctypes.byref(err)))
            positions = ctypes.c_size_t()
            check(lib.waste_session_image_add_file(session, self.image.encode(), ctypes.byref(positions), ctypes.byref(err)))
            self.assertEqual(positions.value, self.rows.shape[0])
            block = self.ids[:self.ids.index(self.pad)]  # <|media_begin|>image 45x31<|media_content|>
            lead = 65 - len(block) - positions.value
            self.assertGreater(lead, 0)
            ids = [5 + i % 200 for i in range(lead)] + block + [self.pad] * positions.value
            self.assertEqual(len(ids), 65)
            array = (ctypes.c_int32 * len(ids))(*ids)
            check(lib.waste_session_eval(session, array, ctypes.c_size_t(len(ids)), ctypes.byref(err)))
            logits, vocab = ctypes.POINTER(ctypes.c_float)(), ctypes.c_size_t()
            check(lib.waste_session_logits(session, ctypes.byref(logits), ctypes.byref(vocab), ctypes.byref(err)))
            engine = np.ctypeslib.as_array(logits, shape=(vocab.value,)).copy()
            reference, _ = self.model.forward(ids, image_rows=self.rows, pad=self.pad)
            self.assert_close(engine, reference[-1], "pad last, 65 tokens")
        finally:
            lib.waste_session_free(session)
            lib.waste_model_close(model)

    # The parent's tests run once, in VisionEndToEnd.
    test_logits_with_an_image_match_the_references = None
    test_the_image_is_what_the_model_sees = None


if __name__ == "__main__":
    unittest.main()
