#!/usr/bin/env python3
"""Draws decode tok/s against the memory limit, llama.cpp beside WASTE, as a
hand-written SVG (no plotting library) from scripts/compare_llama.py's JSON.

    compare_llama_svg.py RESULTS.json OUT.svg

x: the cgroup memory limit in MiB (log scale), y: decode tok/s (log scale).
A run that did not finish in its timeout is drawn at the rate it was decoding
at; an OOM kill or a refusal is a cross on the bottom axis, labelled. Dashed
lines: each engine's in-RAM decode speed at the same thread count.
"""
import json
import math
import sys

W, H = 760, 440
LEFT, RIGHT, TOP, BOTTOM = 70, 210, 40, 60
SERIES = [  # (results key, label, colour)
    ("waste VQ3R int8", "WASTE VQ3R, int8 (budget = limit − headroom)", "#1f77b4"),
    ("llama.cpp Q4_K_M mmap", "llama.cpp Q4_K_M, mmap (default repack)", "#d62728"),
    ("llama.cpp Q4_K_M mmap, no repack", "llama.cpp Q4_K_M, mmap, no repack", "#ff9896"),
]
RAM_LINES = [("waste VQ3R int8", "#1f77b4"), ("llama.cpp Q4_K_M", "#d62728")]
Y_MIN, Y_MAX = 0.1, 300.0


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        res = json.load(f)
    sweep = res["sweep"]
    if not sweep:
        print("no sweep in %s: nothing to draw" % argv[1], file=sys.stderr)
        return 1
    mib = [r["limit_bytes"] / 2 ** 20 for r in sweep]
    x_lo, x_hi = math.log10(min(mib) / 1.3), math.log10(max(mib) * 1.3)

    def X(v):
        return LEFT + (math.log10(v) - x_lo) / (x_hi - x_lo) * (W - LEFT - RIGHT)

    def Y(v):
        v = min(max(v, Y_MIN), Y_MAX)
        return TOP + (math.log10(Y_MAX) - math.log10(v)) / (math.log10(Y_MAX) - math.log10(Y_MIN)) * (H - TOP - BOTTOM)

    threads = sweep[0]["threads"]
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="22" font-size="14">Decode speed under a memory limit: %s, '
         '%d thread%s, %s</text>' % (LEFT, esc(res.get("model", "mid Kimi-Linear (1.2 B)")), threads,
                                     "" if threads == 1 else "s", esc(res.get("date_utc", "")))]
    for v in (0.1, 0.3, 1, 3, 10, 30, 100, 300):  # y grid
        o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>' % (LEFT, W - RIGHT, Y(v), Y(v)))
        o.append('<text x="%d" y="%.1f" text-anchor="end">%g</text>' % (LEFT - 6, Y(v) + 4, v))
    for r, m in zip(sweep, mib):  # x ticks at the measured limits
        o.append('<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="#ddd"/>' % (X(m), X(m), TOP, H - BOTTOM))
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%.0f</text>' % (X(m), H - BOTTOM + 16, m))
        o.append('<text x="%.1f" y="%d" text-anchor="middle" fill="#666">%d%%</text>' % (X(m), H - BOTTOM + 30, r["percent"]))
    o.append('<text x="%d" y="%d" text-anchor="middle">memory limit, MiB (%% of the Q4_K_M file)</text>'
             % ((LEFT + W - RIGHT) // 2, H - 12))
    o.append('<text transform="translate(18,%d) rotate(-90)" text-anchor="middle">decode tok/s (log)</text>'
             % ((TOP + H - BOTTOM) // 2))
    o.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#444"/>'
             % (LEFT, TOP, W - LEFT - RIGHT, H - TOP - BOTTOM))
    # the in-RAM row of the same threads and prompt length as the sweep's
    ram = next((r for r in res.get("ram", []) if r["threads"] == threads and r.get("prompt") == res.get("prompt")),
               next((r for r in res.get("ram", []) if r["threads"] == threads), None))
    for key, colour in RAM_LINES if ram else []:
        v = ram.get(key, {}).get("decode_tok_s")
        if v:
            o.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="5,4"/>'
                     % (LEFT, W - RIGHT, Y(v), Y(v), colour))
    ly = TOP + 10
    for key, label, colour in SERIES:
        pts = []
        for r, m in zip(sweep, mib):
            p = r.get(key)
            if not p:
                continue
            if p.get("decode_tok_s"):
                pts.append((X(m), Y(p["decode_tok_s"])))
                if p["status"] == "timeout":
                    o.append('<text x="%.1f" y="%.1f" fill="%s" font-size="10">timeout</text>'
                             % (X(m) + 5, Y(p["decode_tok_s"]) - 5, colour))
            else:  # OOM-killed or refused: a cross on the bottom axis
                x, y = X(m) + 7 * (SERIES.index((key, label, colour)) - 1), H - BOTTOM - 8  # side by side
                o.append('<path d="M%.1f %.1f l8 8 m0 -8 l-8 8" stroke="%s" stroke-width="2" transform="translate(-4,-4)"/>'
                         % (x, y, colour))
                o.append('<text x="%.1f" y="%.1f" fill="%s" font-size="10" text-anchor="middle">%s</text>'
                         % (x, y - 8 - 10 * SERIES.index((key, label, colour)), colour,
                            "OOM" if p["status"] == "oom" else esc(p["status"])))
        if pts:
            o.append('<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>'
                     % (colour, " ".join("%.1f,%.1f" % q for q in pts)))
            o += ['<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>' % (x, y, colour) for x, y in pts]
        o.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>' % (W - RIGHT + 10, W - RIGHT + 28, ly, ly, colour))
        words, line = label.split(" "), ""
        for w in words:  # wrap the legend at ~26 characters
            if len(line) + len(w) > 26:
                o.append('<text x="%d" y="%d">%s</text>' % (W - RIGHT + 32, ly + 4, esc(line.strip())))
                ly, line = ly + 14, ""
            line += w + " "
        o.append('<text x="%d" y="%d">%s</text>' % (W - RIGHT + 32, ly + 4, esc(line.strip())))
        ly += 26
    o.append('<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="#444" stroke-dasharray="5,4"/>' % (W - RIGHT + 10, W - RIGHT + 28, ly, ly))
    o.append('<text x="%d" y="%d">in RAM, no limit</text>' % (W - RIGHT + 32, ly + 4))
    o.append("</svg>")
    with open(argv[2], "w") as f:
        f.write("\n".join(o) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
