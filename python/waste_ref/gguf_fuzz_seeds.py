"""python -m waste_ref.gguf_fuzz_seeds DIR: the seeds of fuzz/gguf_release_fuzz.cpp,
one minimal GGUF of each architecture the converter reads from GGUF
(qwen3moe, deepseek2, gpt-oss, mistral4, qwen35moe), matrices F16, each with a small byte-level BPE vocabulary
(every byte, merges, added tokens, a pre-tokenizer the converter knows, a
template and end ids), so that the fuzzer starts past the refusals into the keys, the
tensor shapes and the vocabulary. Seeded: the same bytes every run."""
import os
import sys

from . import deepseek_v3, gguf_moe, gpt_oss, mistral4, qwen3_moe, qwen35_moe
from .byte_level import byte_to_unicode

VOCAB_SIZE = 264


def _vocab(pre):
    """Every byte, three merges, one control and one user-defined added
    token, three padding ids (264 in all)."""
    table = byte_to_unicode()
    pieces = [table[b] for b in range(256)] + ["ab", "he", "ll"]
    tokenizer = {"model": {"vocab": {p: i for i, p in enumerate(pieces)}, "merges": ["a b", "h e", "l l"]},
                 "added_tokens": [{"id": 259, "content": "<|end|>", "special": True},
                                  {"id": 260, "content": "<tool>", "special": False}]}
    return gguf_moe.Gpt2Vocab(tokenizer, VOCAB_SIZE, pre, "{{ messages[0]['content'] }}<|end|>", bos=259, eos=259)


def write_seeds(out):
    os.makedirs(out, exist_ok=True)
    cfg = qwen3_moe.tiny_config(vocab_size=VOCAB_SIZE, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                num_key_value_heads=1, head_dim=8, intermediate_size=8, moe_intermediate_size=8,
                                num_experts=4, num_experts_per_tok=2)
    gguf_moe.write_qwen3_moe(qwen3_moe.random_checkpoint(cfg, 1), cfg, os.path.join(out, "qwen3moe.gguf"), f16=True,
                             vocab=_vocab("qwen2"))
    cfg = deepseek_v3.tiny_config(vocab_size=VOCAB_SIZE, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                  q_lora_rank=8, kv_lora_rank=8, qk_nope_head_dim=4, qk_rope_head_dim=4,
                                  v_head_dim=4, intermediate_size=8, moe_intermediate_size=8, n_routed_experts=4,
                                  num_experts_per_tok=2, n_group=2, topk_group=1)
    gguf_moe.write_deepseek_v3(deepseek_v3.random_checkpoint(cfg, 2), cfg, os.path.join(out, "deepseek2.gguf"), f16=True,
                               vocab=_vocab("deepseek-v3"))
    cfg = gpt_oss.tiny_config(vocab_size=VOCAB_SIZE, hidden_size=32, num_attention_heads=2, num_key_value_heads=1,
                              head_dim=8, intermediate_size=32, num_local_experts=4, num_experts_per_tok=2)
    gguf_moe.write_gpt_oss(gpt_oss.random_checkpoint(cfg, 3), cfg, os.path.join(out, "gpt-oss.gguf"), f16=True,
                           vocab=_vocab("gpt-4o"))
    cfg = mistral4.tiny_config(vocab_size=VOCAB_SIZE, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                               q_lora_rank=8, kv_lora_rank=8, qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=4,
                               moe_intermediate_size=8, n_routed_experts=4, num_experts_per_tok=2)
    gguf_moe.write_mistral4(mistral4.random_checkpoint(cfg, 4), cfg, os.path.join(out, "mistral4.gguf"), f16=True,
                            vocab=_vocab("deepseek-v3"))
    cfg = qwen35_moe.tiny_config(vocab_size=VOCAB_SIZE, hidden_size=16, num_attention_heads=2, head_dim=8,
                                 linear_num_key_heads=1, linear_num_value_heads=2, linear_key_head_dim=4,
                                 linear_value_head_dim=4, moe_intermediate_size=8, shared_expert_intermediate_size=8,
                                 num_experts=4, num_experts_per_tok=2,
                                 rope_parameters=dict(rope_type="default", rope_theta=1e7, partial_rotary_factor=0.25,
                                                      mrope_section=[1, 0, 0], mrope_interleaved=True))
    gguf_moe.write_qwen35moe(qwen35_moe.random_checkpoint(cfg, 5), cfg, os.path.join(out, "qwen35moe.gguf"), f16=True,
                             vocab=_vocab("qwen35"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__.split("\n")[0])
    write_seeds(sys.argv[1])
