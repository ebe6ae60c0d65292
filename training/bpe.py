"""Byte-level BPE in the tiktoken family: the Kimi pre-tokenizer, a rank-file
reader/writer, the encoder (tiktoken's algorithm) and the trainer.

What this file owns: turning text into ids and back for the kimi-mini model,
and learning the ranks. What it does not: which text is trained on
(prepare_data.py) or the special-token layout (specials.py).

The encoder is tiktoken's, not "replay the training merges": a piece that is
itself a rank is one token; otherwise its bytes are merged pairwise, always
the adjacent pair whose concatenation has the lowest rank (leftmost on a tie),
until no adjacent pair is a rank. That is what the C++ tokenizer (src/text/
bpe.cpp) and the real tiktoken do with any rank file, so ids agree whatever
path created a token during training.

Needs the `regex` module (Debian python3-regex) for \\p{..} classes.
"""

import base64

import regex

# Kimi's pre-tokenizer (docs: shared/docs/models.md §9), the eight
# alternatives joined by '|'. Kimi writes the letter classes as intersections
# `[A&&[^\p{Han}]]`; here they are the equivalent `(?:(?!\p{Han})[A])`
# (the same rewrite models.md gives for PCRE2).
_UPPER = r"(?:(?!\p{Han})[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}])"
_LOWER = r"(?:(?!\p{Han})[\p{Ll}\p{Lm}\p{Lo}\p{M}])"
_CONTRACTION = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
KIMI_PATTERN = "|".join([
    r"[\p{Han}]+",
    r"[^\r\n\p{L}\p{N}]?" + _UPPER + "*" + _LOWER + "+" + _CONTRACTION,
    r"[^\r\n\p{L}\p{N}]?" + _UPPER + "+" + _LOWER + "*" + _CONTRACTION,
    r"\p{N}{1,3}",
    r" ?[^\s\p{L}\p{N}]+[\r\n]*",
    r"\s*[\r\n]+",
    r"\s+(?!\S)",
    r"\s+",
])
_PIECES = regex.compile(KIMI_PATTERN)


def pieces(text):
    """The pre-tokenizer's pieces of `text`, as UTF-8 bytes."""
    return [m.encode("utf-8") for m in _PIECES.findall(text)]


# ---------------------------------------------------------------------------
# rank files: one `base64(bytes) SPACE rank` per line, ranks 0..n-1


def write_rank_file(path, tokens):
    """tokens[r] = the bytes of rank r."""
    with open(path, "w", encoding="ascii", newline="\n") as f:
        for rank, tok in enumerate(tokens):
            f.write(f"{base64.b64encode(tok).decode('ascii')} {rank}\n")


def read_rank_file(path):
    tokens = []
    with open(path, "r", encoding="ascii") as f:
        for line_no, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            b64, rank = line.split(" ")
            if int(rank) != len(tokens):
                raise ValueError(f"{path}:{line_no}: rank {rank} out of order (expected {len(tokens)})")
            tokens.append(base64.b64decode(b64))
    return tokens


# ---------------------------------------------------------------------------
# encoder / decoder


class Encoder:
    """tiktoken-style encoder over a rank list and a {text: id} specials map."""

    def __init__(self, tokens, specials=None):
        self.tokens = list(tokens)
        self.ranks = {tok: r for r, tok in enumerate(self.tokens)}
        if len(self.ranks) != len(self.tokens):
            raise ValueError("rank file has duplicate tokens")
        self.specials = dict(specials or {})
        self.special_bytes = {i: s.encode("utf-8") for s, i in self.specials.items()}
        # markup mode: longest special first
        self._special_re = None
        if self.specials:
            alts = sorted(self.specials, key=len, reverse=True)
            self._special_re = regex.compile("|".join(regex.escape(s) for s in alts))
        self._cache = {}

    def _bpe(self, piece):
        r = self.ranks.get(piece)
        if r is not None:
            return [r]
        parts = [piece[i:i + 1] for i in range(len(piece))]
        while len(parts) > 1:
            best, best_i = None, -1
            for i in range(len(parts) - 1):
                rk = self.ranks.get(parts[i] + parts[i + 1])
                if rk is not None and (best is None or rk < best):
                    best, best_i = rk, i
            if best is None:
                break
            parts[best_i:best_i + 2] = [parts[best_i] + parts[best_i + 1]]
        return [self.ranks[p] for p in parts]

    def encode(self, text):
        """Plain mode: special-token text is ordinary bytes."""
        out = []
        for p in pieces(text):
            ids = self._cache.get(p)
            if ids is None:
                ids = self._bpe(p)
                if len(self._cache) < 500000:
                    self._cache[p] = ids
            out.extend(ids)
        return out

    def encode_markup(self, text):
        """Markup mode: specials recognised (longest first), the rest plain."""
        if self._special_re is None:
            return self.encode(text)
        out, pos = [], 0
        for m in self._special_re.finditer(text):
            out.extend(self.encode(text[pos:m.start()]))
            out.append(self.specials[m.group(0)])
            pos = m.end()
        out.extend(self.encode(text[pos:]))
        return out

    def decode_bytes(self, ids):
        b = bytearray()
        for i in ids:
            if 0 <= i < len(self.tokens):
                b += self.tokens[i]
            elif i in self.special_bytes:
                b += self.special_bytes[i]
            else:
                raise ValueError(f"token id {i} is neither a rank nor a special")
        return bytes(b)

    def decode(self, ids):
        return self.decode_bytes(ids).decode("utf-8", errors="replace")


# ---------------------------------------------------------------------------
# trainer


def train_bpe(texts, n_ranks, log=None):
    """Learn ranks 256..n_ranks-1 over the pieces of `texts` (byte-level BPE).

    Ranks 0..255 are the single bytes in byte order. Each step merges the most
    frequent adjacent pair (ties: the pair with the lower (left, right) ranks,
    so the result is deterministic). A merge whose bytes already are a rank
    (reachable by another path) reuses that rank rather than adding one.
    Returns the list of token bytes, index = rank.
    """
    counts = {}
    for text in texts:
        for p in pieces(text):
            counts[p] = counts.get(p, 0) + 1
    words = [list(p) for p in counts]  # byte values are ranks 0..255
    freq = list(counts.values())
    tokens = [bytes([b]) for b in range(256)]
    rank_of = {t: i for i, t in enumerate(tokens)}

    pair_count = {}
    where = {}
    for wi, w in enumerate(words):
        f = freq[wi]
        for a, b in zip(w, w[1:]):
            pair_count[(a, b)] = pair_count.get((a, b), 0) + f
            where.setdefault((a, b), set()).add(wi)

    while len(tokens) < n_ranks and pair_count:
        (a, b), c = max(pair_count.items(), key=lambda kv: (kv[1], -kv[0][0], -kv[0][1]))
        if c <= 0:
            break
        new_bytes = tokens[a] + tokens[b]
        new = rank_of.get(new_bytes)
        if new is None:
            new = len(tokens)
            tokens.append(new_bytes)
            rank_of[new_bytes] = new
        for wi in sorted(where.pop((a, b), ())):
            w = words[wi]
            f = freq[wi]
            for x, y in zip(w, w[1:]):  # drop this word's old pairs
                pair_count[(x, y)] -= f
                if pair_count[(x, y)] == 0:
                    del pair_count[(x, y)]
            merged, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    merged.append(new)
                    i += 2
                else:
                    merged.append(w[i])
                    i += 1
            words[wi] = merged
            for x, y in zip(merged, merged[1:]):
                pair_count[(x, y)] = pair_count.get((x, y), 0) + f
                where.setdefault((x, y), set()).add(wi)
        pair_count.pop((a, b), None)
        if log and len(tokens) % 500 == 0:
            log(f"bpe: {len(tokens)} ranks, last merge {new_bytes!r} x{c}")
    return tokens
