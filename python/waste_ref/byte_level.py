"""GPT-2's byte-level alphabet: the reversible map of bytes to printable
characters that byte-level BPE vocabularies (tokenizer.json's ByteLevel,
GGUF's "gpt2" tokens) spell their tokens in. No dependencies: tools import
it by path."""


def byte_to_unicode():
    """{byte: character} for the 256 bytes."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAC + 1)) + list(range(0xAE, 0xFF + 1))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table
