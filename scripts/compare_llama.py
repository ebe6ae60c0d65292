#!/usr/bin/env python3
"""Runs llama.cpp and WASTE on the same weights, in RAM and under memory cgroup
limits, and writes the results as JSON and a Markdown table (issue 19).

Called by scripts/compare-llama.sh, which prepares the inputs (the mid
Kimi-Linear checkpoint converted by `waste convert` and, for llama.cpp,
written as an F16 GGUF and quantised to Q4_K_M by llama.cpp's quantiser).

In RAM: llama.cpp with the weights read into memory (no mmap); WASTE with a
budget above the container's size, exact and int8 (`--lut int8`: int8
lookup tables in decode, int8 rows in prefill; the budget also holds every
expert decoded, 2.7x the records, and `bench` decodes them while it warms
the cache, so each run measures the steady state). Runs
alternate between the engines (run 1 of each, run 2 of each, ...) so that a
load change on a shared machine hits both alike; the table gives medians and
the median of the per-run ratios.

Limited (the sweep): each engine in its own memory cgroup (v1, memory and
memsw limits equal, so no swap either) at a fraction of the Q4_K_M file's
size, page cache dropped before every run (llama.cpp's mmap starts cold, as
does our expert cache). llama.cpp memory-maps the file: by default (its CPU
backend repacks Q4_K weights into anonymous memory) and with repacking off
(every weight stays evictable in the mapping). WASTE gets `--budget` = the
limit minus a headroom for what its budget does not count (the binary, libc,
thread stacks). Each run is bounded by a timeout; a run killed by it reports
the tokens it had decoded, an OOM kill is reported as such.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

MIB = 1 << 20


class Cgroup:
    """A child of the cgroup v1 memory controller, limited per run."""

    def __init__(self, path):
        self.path = path
        os.makedirs(path, exist_ok=True)

    def write(self, name, value):
        with open(os.path.join(self.path, name), "w") as f:
            f.write(str(value))

    def read(self, name):
        with open(os.path.join(self.path, name)) as f:
            return f.read()

    def limit(self, nbytes):
        # memsw may not go below memory: raise memsw first when growing, memory first when shrinking
        for name in ("memory.memsw.limit_in_bytes", "memory.limit_in_bytes") * 2:
            try:
                self.write(name, nbytes)
            except OSError:
                pass
        if int(self.read("memory.limit_in_bytes")) > nbytes + 4096:
            raise RuntimeError("could not set the memory limit of %s" % self.path)
        self.write("memory.max_usage_in_bytes", 0)

    def oom_kills(self):
        for line in self.read("memory.oom_control").splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return 0

    def peak(self):
        return int(self.read("memory.max_usage_in_bytes"))


def drop_caches():
    subprocess.run(["sync"], check=False)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3")


def run(cmd, timeout, cgroup=None, env=None):
    """-> (returncode or 'timeout', stdout, stderr, wall seconds, oom killed?)."""
    pre = None
    if cgroup:
        def pre():
            cgroup.write("cgroup.procs", os.getpid())  # before exec: the whole run is charged
    kills = cgroup.oom_kills() if cgroup else 0
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=pre, env=env)
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        rc = "timeout"
    except BaseException:  # interrupted: leave no engine running in the cgroup
        p.kill()
        raise
    wall = time.monotonic() - t0
    oom = bool(cgroup) and cgroup.oom_kills() > kills
    return rc, out, err, wall, oom


def llama_result(rc, out, err, oom):
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    final = lines[-1] if lines and "decode_tok_s" in lines[-1] else None
    progress = [l for l in lines if "done" in l]
    r = {"tokens_done": progress[-1]["done"] if progress else 0}
    if final and rc == 0:
        r.update(status="ok", decode_tok_s=final["decode_tok_s"], prefill_tok_s=final["prefill_tok_s"],
                 load_s=final["load_s"], max_rss_mb=final["max_rss_mb"], ids=final["ids"])
        return r
    r["status"] = "oom" if oom else ("timeout" if rc == "timeout" else "error")
    if progress:  # the rate it was decoding at when stopped
        r["decode_tok_s"] = progress[-1]["done"] / max(progress[-1]["elapsed_s"], 1e-9)
    if r["status"] == "error":
        r["error"] = err.strip()[-300:]
    return r


def waste_result(rc, out, err, oom):
    if rc == 0:
        d = json.loads(out)
        return {"status": "ok", "decode_tok_s": d["decode"]["median_tok_per_s"],
                "prefill_tok_s": d["prefill"]["median_tok_per_s"], "tokens_done": d["decode"]["tokens"],
                "expert_hit_rate": d.get("expert_hit_rate_last_run")}
    status = "oom" if oom else ("timeout" if rc == "timeout" else "error")
    if "below the floor" in err:
        status = "refused"
    return {"status": status, "tokens_done": 0, "error": err.strip()[-300:]}


class Bench:
    def __init__(self, a):
        self.a = a
        self.env = dict(os.environ, LOGITS_DUMP_BACKEND_DIR=a.backend_dir)
        self.cg = Cgroup(a.cgroup)

    def llama(self, threads, mmap, repack=True, limit=None):
        cmd = [self.a.bench_llama, self.a.gguf, "--threads", str(threads), "--prompt", str(self.a.prompt),
               "--gen", str(self.a.gen)] + (["--mmap"] if mmap else []) + ([] if repack else ["--no-repack"])
        return self._go(cmd, limit, llama_result)

    def waste(self, threads, lut, budget, limit=None):
        cmd = [self.a.waste, "bench", self.a.container, "--json", "--runs", "1", "--threads", str(threads),
               "--prompt", str(self.a.prompt), "-n", str(self.a.gen), "--budget", str(budget), "--lut", lut]
        return self._go(cmd, limit, waste_result)

    def _go(self, cmd, limit, parse):
        if limit:
            drop_caches()
            self.cg.limit(limit)
        rc, out, err, wall, oom = run(cmd, self.a.timeout, self.cg if limit else None, self.env)
        r = parse(rc, out, err, oom)
        r["wall_s"] = round(wall, 2)
        if limit:
            r["limit_bytes"] = limit
            r["peak_bytes"] = self.cg.peak()
        print("   ", " ".join(os.path.basename(c) if i < 2 else c for i, c in enumerate(cmd[:3])), cmd[3:],
              "->", {k: (round(v, 2) if isinstance(v, float) else v) for k, v in r.items() if k not in ("ids", "error")},
              file=sys.stderr, flush=True)
        return r


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def in_ram(b, a):
    """{threads: {config: [result per run]}}, the configs of one run back to back."""
    configs = {
        "llama.cpp Q4_K_M": lambda t: b.llama(t, mmap=False),
        "waste VQ3R exact": lambda t: b.waste(t, "exact", a.ram_budget),
        "waste VQ3R int8": lambda t: b.waste(t, "int8", a.ram_budget),
    }
    out = {}
    for t in a.threads:
        out[t] = {name: [] for name in configs}
        for r in range(a.runs):
            names = list(configs) if r % 2 == 0 else list(reversed(configs))  # alternate who goes first
            for name in names:
                out[t][name].append(configs[name](t))
    return out


def sweep(b, a, gguf_bytes):
    out = []
    t = a.sweep_threads
    for pct in a.sweep:
        limit = int(gguf_bytes * pct / 100)
        budget_mib = limit // MIB - a.headroom_mib
        row = {"percent": pct, "limit_bytes": limit, "waste_budget_mib": budget_mib, "threads": t}
        print("  limit %d%% = %.0f MiB" % (pct, limit / MIB), file=sys.stderr, flush=True)
        row["llama.cpp Q4_K_M mmap"] = b.llama(t, mmap=True, limit=limit)
        row["waste VQ3R exact"] = (b.waste(t, "exact", "%dM" % budget_mib, limit=limit) if budget_mib > 0
                                   else {"status": "refused", "tokens_done": 0})
        row["llama.cpp Q4_K_M mmap, no repack"] = b.llama(t, mmap=True, repack=False, limit=limit)
        out.append(row)
    return out


def summarise_ram(ram):
    rows = []
    for t, by in ram.items():
        row = {"threads": t}
        for name, results in by.items():
            row[name] = {"decode_tok_s": median([r.get("decode_tok_s") for r in results if r["status"] == "ok"]),
                         "prefill_tok_s": median([r.get("prefill_tok_s") for r in results if r["status"] == "ok"]),
                         "runs": len(results), "failed": sum(r["status"] != "ok" for r in results)}
        llama = by["llama.cpp Q4_K_M"]
        for name in ("waste VQ3R exact", "waste VQ3R int8"):
            for kind in ("decode_tok_s", "prefill_tok_s"):
                ratios = [w.get(kind) / l.get(kind) for w, l in zip(by[name], llama)
                          if w["status"] == l["status"] == "ok"]
                row[name]["%s_ratio_to_llama" % kind.split("_")[0]] = median(ratios)
        rows.append(row)
    return rows


def fmt(x, digits=1):
    return "–" if x is None else ("%.*f" % (digits, x))


def cell(r):
    if r["status"] == "ok":
        return "%s / %s" % (fmt(r.get("decode_tok_s")), fmt(r.get("prefill_tok_s")))
    if r["status"] == "timeout":
        return "timeout (%d tok, %s tok/s)" % (r["tokens_done"], fmt(r.get("decode_tok_s"), 2))
    if r["status"] == "oom":
        return "OOM-killed (%d tok)" % r["tokens_done"]
    return r["status"]


def markdown(res):
    lines = ["In RAM (decode / prefill tok/s, medians of %d alternated runs; ratio = median of per-run "
             "waste ÷ llama.cpp):" % res["runs"], "",
             "| threads | llama.cpp Q4_K_M | waste VQ3R exact | waste VQ3R int8 | exact ÷ llama.cpp (decode, prefill) "
             "| int8 ÷ llama.cpp (decode, prefill) |", "|---|---|---|---|---|---|"]
    for row in res["ram"]:
        c = [row["threads"]]
        for name in ("llama.cpp Q4_K_M", "waste VQ3R exact", "waste VQ3R int8"):
            c.append("%s / %s" % (fmt(row[name]["decode_tok_s"]), fmt(row[name]["prefill_tok_s"])))
        for name in ("waste VQ3R exact", "waste VQ3R int8"):
            c.append("%s×, %s×" % (fmt(row[name]["decode_ratio_to_llama"], 2), fmt(row[name]["prefill_ratio_to_llama"], 2)))
        lines.append("| " + " | ".join(map(str, c)) + " |")
    if res.get("sweep"):
        t = res["sweep"][0]["threads"]
        lines += ["", "Under a memory cgroup limit (%d thread%s; decode / prefill tok/s, one cold run each; "
                  "waste's budget = limit − %d MiB):" % (t, "" if t == 1 else "s", res["headroom_mib"]), "",
                  "| limit | llama.cpp Q4_K_M mmap | llama.cpp mmap, no repack | waste VQ3R exact | peak usage "
                  "(llama.cpp, no-repack, waste) |", "|---|---|---|---|---|"]
        for row in res["sweep"]:
            names = ("llama.cpp Q4_K_M mmap", "llama.cpp Q4_K_M mmap, no repack", "waste VQ3R exact")
            peaks = ", ".join("%.0f" % (row[n].get("peak_bytes", 0) / MIB) for n in
                              ("llama.cpp Q4_K_M mmap", "llama.cpp Q4_K_M mmap, no repack", "waste VQ3R exact"))
            lines.append("| %d%% (%.0f MiB) | %s | %s | %s | %s MiB |" % (
                row["percent"], row["limit_bytes"] / MIB, cell(row[names[0]]), cell(row[names[1]]),
                cell(row[names[2]]), peaks))
    return "\n".join(lines) + "\n"


def machine():
    model = ""
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            if line.startswith("Model name:"):
                model = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return {"cpu": model, "cores": os.cpu_count(), "kernel": platform.release(),
            "loadavg_start": open("/proc/loadavg").read().split()[:3]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--waste", required=True)
    ap.add_argument("--container", required=True)
    ap.add_argument("--gguf", required=True, help="the Q4_K_M GGUF")
    ap.add_argument("--bench-llama", required=True)
    ap.add_argument("--backend-dir", required=True, help="the npm package's directory of ggml CPU backends")
    ap.add_argument("--out", required=True, help="JSON results")
    ap.add_argument("--table", help="also write the Markdown table here")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--ram-budget", default="4G")  # every record and every expert decoded (--lut int8)
    ap.add_argument("--sweep", default="100,75,50,25,10", help="limits, %% of the GGUF's size ('' = none)")
    ap.add_argument("--sweep-threads", type=int, default=1,
                    help="threads of the limited runs: 1 by default, because on a shared machine llama.cpp's "
                         "spin-waiting thread pool collapses when another process takes a core, which would "
                         "mix CPU contention into a measurement of memory pressure")
    ap.add_argument("--headroom-mib", type=int, default=24)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--cgroup", default="/sys/fs/cgroup/memory/waste-compare-llama")
    ap.add_argument("--extra", default="{}", help="JSON merged into the results (sizes, versions)")
    a = ap.parse_args(argv)
    a.threads = [int(t) for t in a.threads.split(",") if t]
    a.sweep = [int(p) for p in a.sweep.split(",") if p]
    if not 1 <= a.runs <= 50 or not a.threads or not 1 <= a.timeout <= 3600:
        ap.error("runs 1..50, at least one thread count, timeout 1..3600 s")
    b = Bench(a)
    res = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "machine": machine(), "runs": a.runs,
           "prompt": a.prompt, "gen": a.gen, "headroom_mib": a.headroom_mib, "timeout_s": a.timeout,
           "ram_budget": a.ram_budget, "gguf_bytes": os.path.getsize(a.gguf)}
    res.update(json.loads(a.extra))
    print("in RAM, threads %s, %d runs" % (a.threads, a.runs), file=sys.stderr, flush=True)
    raw = in_ram(b, a)
    res["ram"] = summarise_ram(raw)
    res["ram_runs"] = {str(t): v for t, v in raw.items()}
    res["sweep"] = sweep(b, a, res["gguf_bytes"]) if a.sweep else []
    res["machine"]["loadavg_end"] = open("/proc/loadavg").read().split()[:3]
    try:
        os.rmdir(a.cgroup)  # empty now: every run has exited
    except OSError:
        pass
    with open(a.out, "w") as f:
        json.dump(res, f, indent=1)
    table = markdown(res)
    if a.table:
        with open(a.table, "w") as f:
            f.write(table)
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
