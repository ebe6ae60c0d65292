#!/usr/bin/env python3
"""bench_streaming.py — expert streaming at the releases' shapes (issue 36):
for each container at budgets that are fractions of its size, what decode and
prefill reach, what they read, how the expert cache does beside Belady's
optimum on the run's own routing, and how far each is from the machine's
limits. scripts/bench-streaming.sh writes the containers and calls this.

    bench_streaming.py --waste WASTE --container DIR [--container DIR ...]
        [--fractions 1/2,1/4,1/8] [--prompts 512,2048] [--tokens 64] [--runs 3]
        [--long-runs 1] [--threads 2] [--lut int8] [--trace TRACE.jsonl]
        [--disk-size 2G] [--disk-seconds 5] [--out results.json] [--table table.md]

Per container and fraction (budget = fraction x the container's bytes, never
below the plan's floor, where the cell says so):
- `waste bench --no-warm` (cold cache, the default lookahead), a prompt of
  the first --prompts length and --tokens decode tokens, --runs runs
  (medians); each longer prompt once more with --long-runs runs and 1 decode
  token, for its prefill rate and time to first token (prompt / prefill rate);
- from the first run's --dump-route trace, its decode tokens replayed through
  `waste simulate` at the cache's slot count (the plan's expert_cache_records):
  our policy without lookahead and Belady's optimum, from a cold cache;
- with --trace (a real router's, ../shared/data/routing/), that trace
  replayed at the same cache size relative to one token's working set
  (random weights route nearly uniformly: the pessimistic side; a real
  router's trace is the realistic one);
- limits: `waste diskbench` on the container's disk at its record size
  (disk GB/s / bytes read a token = the disk's tok/s bound) and bench's
  memory bandwidth probe (bandwidth / bytes touched a token).
Nothing here is asserted: it prints and writes what it measured.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from fractions import Fraction


def run_json(cmd, timeout):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stderr[-2000:]}")
    return json.loads(done.stdout)


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path) if os.path.isfile(os.path.join(path, f)))


def decode_trace(path, out):
    """The decode tokens of the first run of a --dump-route trace, as simulate reads them."""
    lines = []
    with open(path) as f:
        for line in f:
            token = json.loads(line)
            if token.get("phase") != "decode":
                if lines:
                    break  # the next run's prefill
                continue
            lines.append(json.dumps({"layers": [layer["experts"] for layer in token["layers"]]}))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    return len(lines)


def simulate(waste, trace, args, timeout):
    result = run_json([waste, "simulate", trace, *args, "--policy", "reuse", "--json"], timeout)
    r = result["runs"][0]
    return {"slots": r["slots"], "multiple": r["multiple"], "reuse_hit_rate": r["policies"][0]["hit_rate"],
            "belady_hit_rate": r["belady"]["hit_rate"], "tokens": result["tokens"]}


def bench(a, container, budget, prompt, tokens, runs, route=None):
    cmd = [a.waste, "bench", container, "--budget", str(budget), "--no-warm", "--prompt", str(prompt), "-n", str(tokens),
           "--runs", str(runs), "--threads", str(a.threads), "--lut", a.lut, "--json"]
    if route:
        cmd += ["--dump-route", route]
    return run_json(cmd, a.timeout)


def cell(a, container, info, fraction, disk_gbps):
    container_bytes = dir_bytes(container)
    wanted = int(container_bytes * fraction)
    plan = run_json([a.waste, "plan", container, "--budget", str(wanted), "--threads", str(a.threads), "--lut", a.lut, "--json"], a.timeout)
    budget = max(wanted, plan["floor_bytes"])
    if budget != wanted:
        plan = run_json([a.waste, "plan", container, "--budget", str(budget), "--threads", str(a.threads), "--lut", a.lut, "--json"], a.timeout)
    out = {"fraction": str(fraction), "budget_bytes": budget, "at_floor": budget != wanted, "cache_records": plan["expert_cache_records"]}
    with tempfile.TemporaryDirectory() as scratch:
        route = os.path.join(scratch, "route.jsonl")
        first = bench(a, container, budget, a.prompts[0], a.tokens, a.runs, route)
        stream = first["streaming_last_run"]
        demand = first["demand_last_run"]
        per_token = first["traffic_per_token"]["total_bytes"]
        out.update({
            "prompt": a.prompts[0],
            "decode_tok_s": first["decode"]["median_tok_per_s"],
            "decode_tok_s_runs": first["decode"]["tok_per_s"],
            "prefill_tok_s": first["prefill"]["median_tok_per_s"],
            "prefill_tok_s_runs": first["prefill"]["tok_per_s"],
            "ttft_s": a.prompts[0] / first["prefill"]["median_tok_per_s"],
            "demand_cache_hit_rate": demand["cache_hit_rate"],
            "demand_lookahead_hit_rate": demand["lookahead_hit_rate"],
            "demand_miss_rate": demand["miss_rate"],
            "bytes_read_per_token": stream["bytes_read_per_token"],
            "io_wait_ms_per_token": stream["io_wait_ms_per_token"],
            "expert_wait_ms_per_token": first["ms_per_token"]["expert_wait"],
            "lookahead_reads_per_token": stream["prefetched_per_token"],
            "lookahead_used_per_token": stream["prefetch_used_per_token"],
            "lookahead_late_per_token": stream["prefetch_late_per_token"],
            "lookahead_wasted_per_token": stream["prefetch_wasted_per_token"],
            "bytes_touched_per_token": per_token,
            "memory_gb_per_s": first["memory_bandwidth_gb_per_s"],
            "memory_bound_tok_s": first["memory_bandwidth_gb_per_s"] * 1e9 / per_token,
            "disk_bound_tok_s": disk_gbps * 1e9 / stream["bytes_read_per_token"] if stream["bytes_read_per_token"] else None,
            "ms_per_token": first["ms_per_token"],
        })
        decoded = os.path.join(scratch, "decode.jsonl")
        if decode_trace(route, decoded):
            out["simulated_own_trace"] = simulate(a.waste, decoded, ["--cache", str(plan["expert_cache_records"]),
                                                                     "--experts", str(info["experts"])], a.timeout)
        if a.trace:
            working_set = info["moe_layers"] * info["top_k"]
            out["simulated_real_trace"] = simulate(a.waste, a.trace, ["--mult", repr(plan["expert_cache_records"] / working_set)], a.timeout)
    for prompt in a.prompts[1:]:
        longer = bench(a, container, budget, prompt, 1, a.long_runs)
        out[f"prefill_{prompt}_tok_s"] = longer["prefill"]["median_tok_per_s"]
        out[f"ttft_{prompt}_s"] = prompt / longer["prefill"]["median_tok_per_s"]
    return out


def fmt(x, digits=1):
    return "—" if x is None else f"{x:.{digits}f}"


def markdown(results):
    rows = ["| container | budget | decode tok/s | prefill tok/s | TTFT | demand hits (cache / lookahead / read) | Belady, own trace (ours) | real trace: Belady (ours) | read MB/token | I/O wait ms/token | disk bound tok/s | memory bound tok/s |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in results["containers"]:
        for r in c["cells"]:
            prefill = [f"{fmt(r['prefill_tok_s'])} ({r['prompt']})"] + [f"{fmt(r[k])} ({k.split('_')[1]})" for k in r if k.startswith("prefill_") and k.endswith("_tok_s") and k != "prefill_tok_s"]
            ttft = [f"{fmt(r['ttft_s'])} s"] + [f"{fmt(r[k])} s" for k in r if k.startswith("ttft_") and k != "ttft_s"]
            own = r.get("simulated_own_trace")
            real = r.get("simulated_real_trace")
            rows.append("| " + " | ".join([
                c["name"], f"{r['fraction']} = {r['budget_bytes'] / 2**30:.2f} GiB" + (" (the floor)" if r["at_floor"] else ""),
                fmt(r["decode_tok_s"], 2), ", ".join(prefill), ", ".join(ttft),
                f"{r['demand_cache_hit_rate']:.1%} / {r['demand_lookahead_hit_rate']:.1%} / {r['demand_miss_rate']:.1%}",
                f"{own['belady_hit_rate']:.1%} ({own['reuse_hit_rate']:.1%})" if own else "—",
                f"{real['belady_hit_rate']:.1%} ({real['reuse_hit_rate']:.1%})" if real else "—",
                fmt(r["bytes_read_per_token"] / 1e6), fmt(r["io_wait_ms_per_token"]), fmt(r["disk_bound_tok_s"]), fmt(r["memory_bound_tok_s"]),
            ]) + " |")
    return "\n".join(rows) + "\n"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--waste", required=True)
    p.add_argument("--container", action="append", required=True)
    p.add_argument("--fractions", default="1/2,1/4,1/8")
    p.add_argument("--prompts", default="512,2048")
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--long-runs", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--lut", default="int8", choices=["exact", "int8"])
    p.add_argument("--trace")
    p.add_argument("--timeout", type=int, default=3600)
    p.add_argument("--disk-size", default="2G", help="diskbench's scratch file")
    p.add_argument("--disk-seconds", type=float, default=5)
    p.add_argument("--out")
    p.add_argument("--table")
    a = p.parse_args(argv)
    a.prompts = [int(x) for x in a.prompts.split(",")]
    fractions = [Fraction(x) for x in a.fractions.split(",")]
    results = {"lut": a.lut, "threads": a.threads, "tokens": a.tokens, "runs": a.runs, "containers": []}
    for container in a.container:
        info = run_json([a.waste, "info", container, "--json"], a.timeout)
        disk = run_json([a.waste, "diskbench", os.path.dirname(os.path.abspath(container)), "--record", str(info["expert_record_bytes"]),
                         "--size", a.disk_size, "--seconds", str(a.disk_seconds), "--json"], a.timeout)
        entry = {"name": os.path.basename(os.path.normpath(container)), "container_bytes": dir_bytes(container),
                 "disk_read_gb_per_s": disk["read_gb_per_s"], "record_bytes": info["expert_record_bytes"], "cells": []}
        for fraction in fractions:
            print(f"== {entry['name']} at {fraction}", file=sys.stderr, flush=True)
            entry["cells"].append(cell(a, container, info, fraction, disk["read_gb_per_s"]))
        results["containers"].append(entry)
    table = markdown(results)
    print(json.dumps(results, indent=1))
    print(table, file=sys.stderr)
    if a.out:
        with open(a.out, "w") as f:
            json.dump(results, f, indent=1)
    if a.table:
        with open(a.table, "w") as f:
            f.write(table)


if __name__ == "__main__":
    main()
