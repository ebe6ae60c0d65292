"""The test checkpoints carry the releases' config shapes (issue 37).

GLM-4.5's own config.json was refused (its eos_token_id is a list) because
the project's synthetic checkpoints wrote a simpler shape than the release.
Here each family's checkpoint config (hf_families for DeepSeek-V3 / Kimi K2,
Qwen3-MoE, GLM-4.5, gpt-oss; hf_synth for Kimi-Linear and K3) is held to the
shapes its release writes: special ids as one id or a list, nulls where the
release writes null, nested rope_scaling, text_config where the release
nests it, the quantization_config blocks — those the shared docs quote are
read from the docs themselves (other-families.md's FP8 and MXFP4 blocks;
families-2026.md's list-shaped EOS ids, which the 2026 releases keep).

Tolerance: none; shapes and values compare exactly.
"""
import json
import os
import re
import unittest

try:
    from ._paths import REPO_ROOT
except ImportError:
    from _paths import REPO_ROOT
from waste_ref import deepseek_v3, glm4_moe, gpt_oss, hf_families, hf_synth, qwen3_moe

SHARED_DOCS = os.environ.get("WASTE_SHARED_DOCS", os.path.join(os.path.dirname(REPO_ROOT), "shared", "docs"))


def doc(name):
    path = os.path.join(SHARED_DOCS, name)
    if not os.path.exists(path):
        raise AssertionError(f"{path} is missing: the release shapes are checked against it")
    with open(path, encoding="utf-8") as f:
        return f.read()


def doc_object(text, marker):
    """The `{key:value, ...}` the docs write after `marker` as a dict (bare
    keys quoted; bare words in lists quoted)."""
    start = text.index(marker) + len(marker)
    depth, end = 0, start
    for end in range(text.index("{", start), len(text)):
        depth += {"{": 1, "}": -1}.get(text[end], 0)
        if depth == 0:
            break
    body = text[text.index("{", start):end + 1]
    body = re.sub(r"([{,]\s*)([A-Za-z_]+):", r'\1"\2":', body)
    body = re.sub(r"(?<=[\[,])\s*([A-Za-z_.]+)\s*(?=[,\]])", r'"\1"', body)
    return json.loads(body)


def is_id_or_ids(value):
    return isinstance(value, int) or (isinstance(value, list) and value and all(isinstance(i, int) for i in value))


class ReleaseShapes(unittest.TestCase):
    def configs(self, family, cfg, fmt="bf16"):
        config = hf_families.config_json(family, cfg, fmt)
        return config, hf_families.special_ids(family, cfg["vocab_size"])[1]

    def test_glm45_lists_three_eos_ids_in_both_files(self):
        config, generation = self.configs("glm4_moe", glm4_moe.tiny_config())
        self.assertIsInstance(config["eos_token_id"], list)
        self.assertEqual(len(config["eos_token_id"]), 3)
        self.assertEqual(generation["eos_token_id"], config["eos_token_id"])
        self.assertEqual(config["pad_token_id"], config["eos_token_id"][0])
        self.assertNotIn("bos_token_id", config)
        self.assertIsNone(config["rope_scaling"])
        # GLM-5 keeps the shape (families-2026.md: "GLM eos ids: [154820, 154827, 154829]")
        listed = re.search(r"GLM eos ids: (\[[0-9, ]+\])", doc("families-2026.md"))
        self.assertIsNotNone(listed)
        self.assertEqual(len(json.loads(listed.group(1))), len(config["eos_token_id"]))

    def test_qwen3_generation_config_adds_endoftext(self):
        config, generation = self.configs("qwen3_moe", qwen3_moe.tiny_config())
        self.assertIsInstance(config["eos_token_id"], int)
        self.assertEqual(generation["eos_token_id"], [config["eos_token_id"], config["bos_token_id"]])
        self.assertEqual(generation["pad_token_id"], config["bos_token_id"])
        for key in ("sliding_window", "rope_scaling"):
            self.assertIn(key, config)
            self.assertIsNone(config[key])

    def test_gpt_oss_generation_config_lists_three(self):
        config, generation = self.configs("gpt_oss", gpt_oss.tiny_config())
        self.assertIsInstance(config["eos_token_id"], int)
        self.assertEqual(len(generation["eos_token_id"]), 3)
        self.assertEqual(generation["eos_token_id"][0], config["eos_token_id"])
        self.assertIn(config["pad_token_id"], generation["eos_token_id"])
        # other-families.md §8's block, as the doc writes it
        documented = doc_object(doc("other-families.md"), "- `quantization_config = ")
        self.assertEqual(config["quantization_config"]["quant_method"], documented["quant_method"])
        self.assertEqual([m.split(".")[-1] for m in config["quantization_config"]["modules_to_not_convert"]],
                         [m.split(".")[-1] for m in documented["modules_to_not_convert"]])
        self.assertEqual(len(config["layer_types"]), config["num_hidden_layers"])

    def test_deepseek_v3_nested_yarn_and_the_fp8_block(self):
        config, generation = self.configs("deepseek_v3", deepseek_v3.tiny_config(), fmt="fp8")
        self.assertEqual(config["rope_scaling"]["type"], "yarn")
        for key in ("factor", "original_max_position_embeddings", "beta_fast", "beta_slow", "mscale", "mscale_all_dim"):
            self.assertIn(key, config["rope_scaling"])
        documented = doc_object(doc("other-families.md"), "**FP8 block format** (V3 and K2-Instruct). `quantization_config = ")
        self.assertEqual(config["quantization_config"], documented)
        self.assertEqual((config["bos_token_id"], config["eos_token_id"]), (generation["bos_token_id"], generation["eos_token_id"]))

    def test_kimi_k2_generation_eos_differs_from_the_config(self):
        config, generation = self.configs("kimi_k2", deepseek_v3.tiny_config())
        for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
            self.assertIsInstance(config[key], int)
        self.assertNotEqual(generation["eos_token_id"], config["eos_token_id"])
        self.assertEqual(hf_families.eos_ids("kimi_k2", 96), [config["eos_token_id"], generation["eos_token_id"]])

    def test_k3_nests_its_text_config(self):
        config = hf_synth.config_json("k3", 256)
        self.assertIn("text_config", config)
        self.assertEqual(config["model_type"], "kimi_k3")
        self.assertTrue(is_id_or_ids(config["text_config"]["eos_token_id"]))
        self.assertNotIn("hidden_size", config)

    def test_every_family_writes_ids_in_a_shape_the_engine_reads(self):
        for family, cfg in (("deepseek_v3", deepseek_v3.tiny_config()), ("kimi_k2", deepseek_v3.tiny_config()),
                            ("qwen3_moe", qwen3_moe.tiny_config()), ("glm4_moe", glm4_moe.tiny_config()),
                            ("gpt_oss", gpt_oss.tiny_config())):
            for part in self.configs(family, cfg):
                for key in ("bos_token_id", "eos_token_id", "pad_token_id"):
                    if key in part:
                        self.assertTrue(part[key] is None or is_id_or_ids(part[key]), (family, key, part[key]))
                        for i in part[key] if isinstance(part[key], list) else [part[key]] if part[key] is not None else []:
                            self.assertLess(i, cfg["vocab_size"], (family, key))


if __name__ == "__main__":
    unittest.main()
