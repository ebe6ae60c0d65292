"""The kimi-mini vocabulary layout: ranks, then 64 reserved special ids.

Kimi's layout scaled down: Kimi has 163,584 ranks then 256 reserved ids
([BOS] first, [EOS] second, the chat markup after, [UNK]/[PAD] last, unnamed
ones `<|reserved_token_ID|>`); kimi-mini has 4,032 ranks then 64 reserved
ids, vocab_size 4,096. Special ids are offsets from the first reserved id.

Also writes the tokenizer files an HF-style release carries:
tokenizer_config.json (added_tokens_decoder, bos/eos/pad/unk, chat_template)
and our small chat.json (container-v0 §6).
"""

import json

N_RANKS = 4032
N_RESERVED = 64
VOCAB_SIZE = N_RANKS + N_RESERVED

# offset from N_RANKS -> text (Kimi's names)
NAMED = {
    0: "[BOS]",
    1: "[EOS]",
    2: "<|im_end|>",
    3: "<|im_user|>",
    4: "<|im_assistant|>",
    6: "<|start_header_id|>",
    7: "<|end_header_id|>",
    9: "[EOT]",
    10: "<|im_system|>",
    11: "<|tool_calls_section_begin|>",
    12: "<|tool_calls_section_end|>",
    13: "<|tool_call_begin|>",
    14: "<|tool_call_argument_begin|>",
    15: "<|tool_call_end|>",
    17: "<|im_middle|>",
    62: "[UNK]",
    63: "[PAD]",
}


def specials():
    """{text: id} for all 64 reserved ids."""
    out = {}
    for off in range(N_RESERVED):
        i = N_RANKS + off
        out[NAMED.get(off, f"<|reserved_token_{i}|>")] = i
    return out


SPECIALS = specials()
BOS = SPECIALS["[BOS]"]
EOS = SPECIALS["[EOS]"]
PAD = SPECIALS["[PAD]"]
IM_END = SPECIALS["<|im_end|>"]

# Chat turns (Kimi's markup): role header, content, <|im_end|>.
CHAT = {
    "system": ["<|im_system|>system<|im_middle|>", "<|im_end|>"],
    "user": ["<|im_user|>user<|im_middle|>", "<|im_end|>"],
    "assistant": ["<|im_assistant|>assistant<|im_middle|>", "<|im_end|>"],
    "open": "<|im_assistant|>assistant<|im_middle|>",
}

CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{%- if message['role'] == 'system' -%}<|im_system|>system<|im_middle|>"
    "{%- elif message['role'] == 'user' -%}<|im_user|>user<|im_middle|>"
    "{%- else -%}<|im_assistant|>assistant<|im_middle|>{%- endif -%}"
    "{{ message['content'] }}<|im_end|>"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|>{%- endif -%}"
)


def tokenizer_config():
    added = {}
    for text, i in sorted(SPECIALS.items(), key=lambda kv: kv[1]):
        added[str(i)] = {"content": text, "lstrip": False, "normalized": False, "rstrip": False,
                         "single_word": False, "special": True}
    named = [NAMED[o] for o in sorted(NAMED) if NAMED[o] not in ("[BOS]", "[EOS]", "[UNK]", "[PAD]")]
    return {
        "added_tokens_decoder": added,
        "additional_special_tokens": named,
        "bos_token": "[BOS]",
        "eos_token": "[EOS]",
        "pad_token": "[PAD]",
        "unk_token": "[UNK]",
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 1048576,
        "tokenizer_class": "TikTokenTokenizer",
        "vocab_file": "tiktoken.model",
        "num_ranks": N_RANKS,
    }


def write_tokenizer_files(directory):
    with open(f"{directory}/tokenizer_config.json", "w", encoding="utf-8") as f:
        json.dump(tokenizer_config(), f, indent=2)
        f.write("\n")
    with open(f"{directory}/chat.json", "w", encoding="utf-8") as f:
        json.dump(CHAT, f, indent=2)
        f.write("\n")
