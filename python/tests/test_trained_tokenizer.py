"""kimi-mini's tokenizer (models/kimi-mini/tiktoken.model + the specials of
training/specials.py): the python encoder it was trained and encoded with
(training/bpe.py) against the engine's (`waste tokenize --rank-file ...
--pattern kimi`). Exact equality of ids, no tolerance: both implement
tiktoken's algorithm on the same ranks and the same pre-tokenizer.

Texts: held-out KJV verses, contractions, digits, whitespace runs, accented
and CJK text, and a chat prompt in markup mode (specials recognised) and in
plain mode (the same markup as ordinary bytes). The full held-out split was
also checked when the model was made (training/RECIPE.md).

Needs the `regex` module (Debian python3-regex, scripts/setup.sh) and the
`waste` binary: WASTE_CLI, else build/release/waste; its absence is a
failure, not a skip.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

try:
    from ._paths import REPO_ROOT
except ImportError:
    from _paths import REPO_ROOT

sys.path.insert(0, os.path.join(REPO_ROOT, "training"))
import bpe  # noqa: E402
import specials as sp  # noqa: E402

MODEL_DIR = os.path.join(REPO_ROOT, "models", "kimi-mini")
CLI = os.environ.get("WASTE_CLI", os.path.join(REPO_ROOT, "build", "release", "waste"))

TEXTS = [
    "Genesis 20\n\n1 And Abraham journeyed from thence toward the south country, and dwelled between "
    "Kadesh and Shur, and sojourned in Gerar.\n2 And Abraham said of Sarah his wife, She is my sister: "
    "and Abimelech king of Gerar sent, and took Sarah.\n",
    "The LORD's word; I'll go, thou'rt HERE, they've SAID'S it.",
    "In 1611, 12345678 men and 7 women; 3.14159 and 1,000,000!",
    "  leading spaces\n\n\n   trailing   \t\n  \r\n end",
    "café naïve — “quoted” ‘single’ Æsop Über",
    "你好世界。在 the beginning 神创造天地",
    "emoji 🙂👍 and symbols ∑∂ ©®",
    "<|im_user|>user<|im_middle|>Read Psalms chapter 23.<|im_end|>",
]


def waste_tokenize(text, markup=False, specials_path=None):
    with tempfile.NamedTemporaryFile("wb", suffix=".txt", delete=False) as f:
        f.write(text.encode("utf-8"))
        path = f.name
    try:
        args = [CLI, "tokenize", "--rank-file", os.path.join(MODEL_DIR, "tiktoken.model"), "--pattern", "kimi",
                "--file", path, "--json"]
        if specials_path:
            args += ["--specials", specials_path]
        if markup:
            args.append("--markup")
        done = subprocess.run(args, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({done.returncode}): {done.stderr}")
        return json.loads(done.stdout)["tokens"]
    finally:
        os.unlink(path)


class TrainedTokenizer(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(CLI):
            raise AssertionError(f"waste binary not found at {CLI} (set WASTE_CLI or build build/release)")
        cls.enc = bpe.Encoder(bpe.read_rank_file(os.path.join(MODEL_DIR, "tiktoken.model")), sp.SPECIALS)
        fd, cls.specials_path = tempfile.mkstemp(suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump([{"id": i, "text": t} for t, i in sorted(sp.SPECIALS.items(), key=lambda kv: kv[1])], f)

    @classmethod
    def tearDownClass(cls):
        os.unlink(cls.specials_path)

    def test_layout(self):
        self.assertEqual(len(self.enc.tokens), sp.N_RANKS)
        self.assertEqual(sp.VOCAB_SIZE, json.load(open(os.path.join(MODEL_DIR, "config.json")))["vocab_size"])
        cfg = json.load(open(os.path.join(MODEL_DIR, "tokenizer_config.json")))
        got = {int(i): v["content"] for i, v in cfg["added_tokens_decoder"].items()}
        self.assertEqual(got, {i: t for t, i in sp.SPECIALS.items()})

    def test_plain_mode_matches_engine(self):
        for text in TEXTS:
            with self.subTest(text=text[:30]):
                want = self.enc.encode(text)
                self.assertEqual(waste_tokenize(text), want)
                self.assertEqual(self.enc.decode(want), text)

    def test_markup_mode_matches_engine(self):
        text = TEXTS[-1] + "<|im_assistant|>assistant<|im_middle|>1 The LORD is my shepherd"
        want = self.enc.encode_markup(text)
        self.assertIn(sp.SPECIALS["<|im_middle|>"], want)
        self.assertEqual(waste_tokenize(text, markup=True, specials_path=self.specials_path), want)
        # plain mode: the markup is ordinary bytes, no special id appears
        plain = waste_tokenize(text, markup=False, specials_path=self.specials_path)
        self.assertEqual(plain, self.enc.encode(text))
        self.assertTrue(all(i < sp.N_RANKS for i in plain))


if __name__ == "__main__":
    unittest.main()
