#!/usr/bin/env python3
"""Runs llama.cpp and WASTE on the same weights, in RAM and under memory cgroup
limits, and writes the results as JSON and a Markdown table (issues 19, 41).

Called by scripts/compare-llama.sh, which prepares the inputs (the mid
Kimi-Linear checkpoint converted by `waste convert` and, for llama.cpp,
written as an F16 GGUF and quantised to Q4_K_M by llama.cpp's quantiser).

In RAM, both engines driven alike, as llama-bench drives llama.cpp:
- the same prompt ids (one file, read by both: bench_llama --ids, waste
  bench --prompt-ids), prompts of --prompts tokens (64, 512, 2048), each
  followed by --gen decoded tokens (decode at that depth), and a decode at
  depth 0 (no prompt);
- one process per measurement; in it a warm-up of the whole prompt and one
  token, then one timed prefill and decode (bench_llama: llama-bench's
  warm-up, its thread pool attached, its n_batch 2048 / n_ubatch 512;
  waste bench: --warmup 1 --runs 1, its prefill chunk the plan's);
  nothing printed while a phase is timed;
- warm: the files are in the page cache (every run after the first reads
  them from there; loading is not timed); llama.cpp reads the weights into
  RAM (no mmap); WASTE runs at the budget its default plan chooses (no
  --budget), int8 (the default) and exact;
- each process's peak RSS (its rusage, the same call for both), beside its
  speed; bits per weight of both files (the same weights) from their sizes.
Runs alternate between the engines (run 1 of each, run 2 of each, ...) so
that a load change on a shared machine hits both alike; the table gives
medians and the median of the per-run ratios.

Limited (the sweep): each engine in its own memory cgroup (v1, memory and
memsw limits equal, so no swap either) at a fraction of the Q4_K_M file's
size (the table also gives it as a fraction of WASTE's container), every
run cold: page cache dropped, no warm-up pass in the process (bench_llama
--no-warmup; waste bench --warmup 0 --no-warm --no-hotlist, so its expert
cache starts empty). llama.cpp memory-maps the file: by default (its CPU
backend repacks Q4_K weights into anonymous memory) and with repacking off
(every weight stays evictable in the mapping). WASTE runs its default mode
(int8) with `--budget` = the limit minus a headroom for what its budget does
not count (the binary, libc, thread stacks), and reports its decode's demand
lookups apart (found cached, found because lookahead read them, read on
demand), lookahead's reads (used, late, wasted), bytes read and I/O wait a
token. Both: bytes read from storage and peak RSS from the process's
rusage, the cgroup's peak. --runs runs a cell, alternated. Each run is
bounded by a timeout; a run killed by it reports the tokens it had decoded
(bench_llama --progress), an OOM kill is reported as such.
"""
import argparse
import functools
import json
import os
import platform
import statistics
import random
import subprocess
import sys
import tempfile
import threading
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
    """-> (returncode or 'timeout', stdout, stderr, wall seconds, oom killed?, usage): usage is the
    process's own rusage (wait4), measured alike for every engine: peak RSS, bytes read from
    storage (ru_inblock: page-ins of a mapping and direct reads alike), major faults, CPU seconds."""
    pre = None
    if cgroup:
        def pre():
            cgroup.write("cgroup.procs", os.getpid())  # before exec: the whole run is charged
    kills = cgroup.oom_kills() if cgroup else 0
    t0 = time.monotonic()
    with tempfile.TemporaryFile("w+") as out_file, tempfile.TemporaryFile("w+") as err_file:
        p = subprocess.Popen(cmd, stdout=out_file, stderr=err_file, text=True, preexec_fn=pre, env=env)
        timer = threading.Timer(timeout, p.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(p.pid, 0)
        except BaseException:  # interrupted: leave no engine running in the cgroup
            p.kill()
            raise
        finally:
            timed_out = not timer.is_alive()
            timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        rc = "timeout" if timed_out and p.returncode < 0 else p.returncode
        out_file.seek(0)
        err_file.seek(0)
        out, err = out_file.read(), err_file.read()
    wall = time.monotonic() - t0
    oom = bool(cgroup) and cgroup.oom_kills() > kills
    return rc, out, err, wall, oom, {"peak_rss_bytes": usage.ru_maxrss * 1024, "read_bytes": usage.ru_inblock * 512,
                                     "major_faults": usage.ru_majflt, "cpu_s": round(usage.ru_utime + usage.ru_stime, 2)}


def llama_result(rc, out, err, oom):
    lines = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    final = lines[-1] if lines and "decode_tok_s" in lines[-1] else None
    progress = [l for l in lines if "done" in l]
    r = {"tokens_done": progress[-1]["done"] if progress else 0}
    if final and rc == 0:
        r.update(status="ok", decode_tok_s=final["decode_tok_s"] or None, prefill_tok_s=final["prefill_tok_s"] or None,
                 load_s=final["load_s"], ids=final["ids"])
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
        streaming, demand = d["streaming_last_run"], d["demand_last_run"]
        return {"status": "ok", "decode_tok_s": d["decode"]["median_tok_per_s"] or None,
                "prefill_tok_s": d["prefill"]["median_tok_per_s"] or None, "tokens_done": d["decode"]["tokens"],
                "prefill_chunk": d["prefill"]["chunk"],
                # decode's demand lookups: found cached, found because lookahead read them, read on demand
                "demand_cache_hit_rate": demand["cache_hit_rate"], "demand_lookahead_hit_rate": demand["lookahead_hit_rate"],
                "demand_miss_rate": demand["miss_rate"],
                "lookahead_reads_per_token": streaming["prefetched_per_token"],
                "lookahead_used_per_token": streaming["prefetch_used_per_token"],
                "lookahead_late_per_token": streaming["prefetch_late_per_token"],
                "lookahead_wasted_per_token": streaming["prefetch_wasted_per_token"],
                "decode_bytes_read_per_token": streaming["bytes_read_per_token"],
                "decode_io_wait_ms_per_token": streaming["io_wait_ms_per_token"]}
    status = "oom" if oom else ("timeout" if rc == "timeout" else "error")
    if "below the floor" in err:
        status = "refused"
    return {"status": status, "tokens_done": 0, "error": err.strip()[-300:]}


class Bench:
    def __init__(self, a):
        self.a = a
        self.env = dict(os.environ, LOGITS_DUMP_BACKEND_DIR=a.backend_dir)
        self.cg = Cgroup(a.cgroup)

    def llama(self, threads, mmap, repack=True, limit=None, prompt=None, gen=None, cold=False):
        prompt = self.a.prompt if prompt is None else prompt
        gen = self.a.gen if gen is None else gen
        cmd = [self.a.bench_llama, self.a.gguf, "--threads", str(threads), "--prompt", str(prompt), "--gen", str(gen),
               "--ids", self.a.ids_file] + (["--mmap"] if mmap else []) + ([] if repack else ["--no-repack"]) + \
              (["--no-warmup"] if cold else [])
        # a limited run may be ended by a timeout or the OOM killer: it prints its progress
        return self._go(cmd + (["--progress"] if limit else []), limit, llama_result)

    def waste(self, threads, lut, budget, limit=None, prompt=None, gen=None, cold=False):
        prompt = self.a.prompt if prompt is None else prompt
        gen = self.a.gen if gen is None else gen
        cmd = [self.a.waste, "bench", self.a.container, "--json", "--runs", "1", "--threads", str(threads),
               "--prompt", str(prompt), "-n", str(gen), "--prompt-ids", self.a.ids_file, "--lut", lut]
        # cold: no warm-up run, no cache filled before timing, no hotlist read at open
        cmd += ["--warmup", "0", "--no-warm", "--no-hotlist"] if cold else ["--warmup", "1"]
        return self._go(cmd + (["--budget", str(budget)] if budget else []), limit, waste_result)

    def _go(self, cmd, limit, parse):
        if limit:
            drop_caches()
            self.cg.limit(limit)
        rc, out, err, wall, oom, usage = run(cmd, self.a.timeout, self.cg if limit else None, self.env)
        r = parse(rc, out, err, oom)
        r["wall_s"] = round(wall, 2)
        r.update(usage)
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


def alternated(configs, runs):
    """{name: [result per run]}: each config run `runs` times, the order of the configs reversed every
    other run, so that a load change on a shared machine hits all of them alike."""
    out = {name: [] for name in configs}
    for r in range(runs):
        for name in (list(configs) if r % 2 == 0 else list(reversed(configs))):
            out[name].append(configs[name]())
    return out


RAM_ENGINES = ("llama.cpp Q4_K_M", "waste VQ3R int8", "waste VQ3R exact", "waste VQ3R int8 at the GGUF's size")


def in_ram(b, a):
    """{threads: {test: {engine: [result per run]}}}; a test is (prompt, gen):
    each prompt of a.prompts followed by a.gen decoded tokens, and decode at depth 0."""
    configs = {
        "llama.cpp Q4_K_M": lambda t, p, g: b.llama(t, mmap=False, prompt=p, gen=g),
        "waste VQ3R int8": lambda t, p, g: b.waste(t, "int8", a.ram_budget, prompt=p, gen=g),
        "waste VQ3R exact": lambda t, p, g: b.waste(t, "exact", a.ram_budget, prompt=p, gen=g),
        # memory parity: the budget the Q4_K_M file itself takes in llama.cpp's RAM
        "waste VQ3R int8 at the GGUF's size": lambda t, p, g: b.waste(t, "int8", "%dM" % (os.path.getsize(a.gguf) // MIB),
                                                                      prompt=p, gen=g),
    }
    tests = [(0, a.gen)] + [(p, a.gen) for p in a.prompts]
    out = {}
    for t in a.threads:
        out[t] = {}
        for p, g in tests:
            out[t]["%d+%d" % (p, g)] = alternated({name: functools.partial(measure, t, p, g) for name, measure in configs.items()},
                                                  a.runs)
    return out


SWEEP_ENGINES = ("llama.cpp Q4_K_M mmap", "llama.cpp Q4_K_M mmap, no repack", "waste VQ3R int8")


def summarise_runs(results):
    """One cell of the sweep: medians over the runs that finished, how each run ended, and the
    largest peak and read bytes; the keys of a single run's result where they apply."""
    ok = [r for r in results if r["status"] == "ok"]
    statuses = [r["status"] for r in results]
    cell = {"status": "ok" if ok else max(set(statuses), key=statuses.count), "statuses": statuses,
            "tokens_done": max(r["tokens_done"] for r in results)}
    for key in ("decode_tok_s", "prefill_tok_s", "cpu_s", "wall_s", "demand_cache_hit_rate", "demand_lookahead_hit_rate",
                "demand_miss_rate", "lookahead_reads_per_token", "lookahead_used_per_token", "lookahead_late_per_token",
                "lookahead_wasted_per_token", "decode_bytes_read_per_token", "decode_io_wait_ms_per_token"):
        values = [r.get(key) for r in (ok or results) if r.get(key) is not None]
        if values:
            cell[key] = median(values)
    for key in ("peak_bytes", "read_bytes", "peak_rss_bytes"):
        values = [r[key] for r in results if r.get(key) is not None]
        if values:
            cell[key] = max(values)
    return cell


def sweep(b, a, gguf_bytes, container_bytes):
    """Both engines cold in every run: the page cache dropped before it, no warm-up in the process,
    WASTE's expert cache empty at the start; a.runs runs a cell, alternated."""
    out = []
    t = a.sweep_threads
    for pct in a.sweep:
        limit = int(gguf_bytes * pct / 100)
        budget_mib = limit // MIB - a.headroom_mib
        row = {"percent": pct, "limit_bytes": limit, "of_gguf": limit / gguf_bytes,
               "of_container": limit / container_bytes if container_bytes else None,
               "waste_budget_mib": budget_mib, "threads": t}
        print("  limit %d%% = %.0f MiB" % (pct, limit / MIB), file=sys.stderr, flush=True)
        configs = {
            "llama.cpp Q4_K_M mmap": lambda: b.llama(t, mmap=True, limit=limit, cold=True),
            "llama.cpp Q4_K_M mmap, no repack": lambda: b.llama(t, mmap=True, repack=False, limit=limit, cold=True),
            "waste VQ3R int8": lambda: (b.waste(t, "int8", "%dM" % budget_mib, limit=limit, cold=True) if budget_mib > 0
                                        else {"status": "refused", "tokens_done": 0}),
        }
        row["runs"] = alternated(configs, a.runs)
        for name in configs:
            row[name] = summarise_runs(row["runs"][name])
        out.append(row)
    return out


def summarise_ram(ram):
    rows = []
    for t, tests in ram.items():
        for test, by in tests.items():
            prompt, gen = (int(x) for x in test.split("+"))
            row = {"threads": t, "prompt": prompt, "gen": gen}
            for name, results in by.items():
                ok = [r for r in results if r["status"] == "ok"]
                row[name] = {"decode_tok_s": median([r.get("decode_tok_s") for r in ok]),
                             "prefill_tok_s": median([r.get("prefill_tok_s") for r in ok]),
                             "peak_rss_bytes": max([r["peak_rss_bytes"] for r in ok], default=None),
                             "prefill_chunk": next((r["prefill_chunk"] for r in ok if "prefill_chunk" in r), None),
                             "runs": len(results), "failed": len(results) - len(ok)}
            llama = by["llama.cpp Q4_K_M"]
            for name in RAM_ENGINES[1:]:
                for kind in ("decode_tok_s", "prefill_tok_s"):
                    ratios = [w.get(kind) / l.get(kind) for w, l in zip(by[name], llama)
                              if w["status"] == l["status"] == "ok" and w.get(kind) and l.get(kind)]
                    row[name]["%s_ratio_to_llama" % kind.split("_")[0]] = median(ratios)
            rows.append(row)
    return rows


def fmt(x, digits=1):
    return "–" if x is None else ("%.*f" % (digits, x))


def cell(r):
    if r["status"] == "ok":
        text = "%s / %s" % (fmt(r.get("decode_tok_s")), fmt(r.get("prefill_tok_s")))
        failed = [x for x in r.get("statuses", []) if x != "ok"]
        return text + (" (%d of %d runs: %s)" % (len(failed), len(r["statuses"]), ", ".join(failed)) if failed else "")
    if r["status"] == "timeout":
        return "timeout (%d tok, %s tok/s)" % (r["tokens_done"], fmt(r.get("decode_tok_s"), 2))
    if r["status"] == "oom":
        return "OOM-killed (%d tok)" % r["tokens_done"]
    return r["status"]


def pct(x):
    return "–" if x is None else "%.0f%%" % (100 * x)


def mib(x):
    return "–" if x is None else "%.0f" % (x / MIB)


def markdown(res):
    bpw = res.get("bits_per_weight", {})
    gguf_type = res.get("gguf_type", "Q4_K_M")  # the rows' engine keys keep the name "llama.cpp Q4_K_M"
    lines = ["In RAM, warm (files in the page cache; each process warms up with the whole prompt and one token, then "
             "times one prefill and decode), the same prompt ids on both sides; medians of %d alternated runs; ratio = "
             "median of per-run waste ÷ llama.cpp; peak RSS = the largest of the runs (rusage). Bits per weight: "
             "llama.cpp %s %s, waste VQ3R %s (file bits ÷ parameters). waste's budget: its default plan's; "
             "its prefill chunk: %s." % (res["runs"], gguf_type, fmt(bpw.get("gguf"), 2), fmt(bpw.get("container"), 2),
                                          res.get("waste_prefill_chunk", "–")), "",
             "| threads | prompt → decode | llama.cpp %s prefill / decode tok/s (RSS MiB) " % gguf_type +
             "| waste int8 (RSS) | waste exact (RSS) | waste int8, budget = the GGUF's size (RSS) "
             "| int8 ÷ llama.cpp (prefill, decode) | exact ÷ llama.cpp | int8 at the GGUF's size ÷ llama.cpp |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row in res["ram"]:
        c = [row["threads"], "%d → %d" % (row["prompt"], row["gen"])]
        for name in RAM_ENGINES:
            r = row[name]
            c.append("%s / %s (%s)" % (fmt(r["prefill_tok_s"]), fmt(r["decode_tok_s"]), mib(r["peak_rss_bytes"])))
        for name in RAM_ENGINES[1:]:
            c.append("%s×, %s×" % (fmt(row[name]["prefill_ratio_to_llama"], 2), fmt(row[name]["decode_ratio_to_llama"], 2)))
        lines.append("| " + " | ".join(map(str, c)) + " |")
    if res.get("sweep"):
        t = res["sweep"][0]["threads"]
        lines += ["", "Under a memory cgroup limit (%d thread%s; decode / prefill tok/s, medians of %d alternated runs, "
                  "every run cold: page cache dropped, no warm-up, WASTE's expert cache empty; waste's budget = limit − "
                  "%d MiB; read = bytes the process read from storage, rusage, the most of the runs; WASTE's decode: "
                  "demand lookups found cached / found because lookahead read them / read on demand, MB read and I/O wait "
                  "a token):" % (t, "" if t == 1 else "s", res["runs"], res["headroom_mib"]), "",
                  "| limit (of the GGUF, of the container) | llama.cpp Q4_K_M mmap | llama.cpp mmap, no repack | waste VQ3R int8 "
                  "| waste decode: cached / lookahead / on demand; MB, ms a token | peak in the cgroup, MiB (llama.cpp, no repack, waste) "
                  "| read, MiB (llama.cpp, no repack, waste) |", "|---|---|---|---|---|---|---|"]
        for row in res["sweep"]:
            w = row["waste VQ3R int8"]
            streaming = ("%s / %s / %s; %s MB, %s ms" % (pct(w.get("demand_cache_hit_rate")), pct(w.get("demand_lookahead_hit_rate")),
                                                        pct(w.get("demand_miss_rate")),
                                                        fmt((w.get("decode_bytes_read_per_token") or 0) / 1e6, 2),
                                                        fmt(w.get("decode_io_wait_ms_per_token"), 2))
                         if w["status"] == "ok" else "–")
            lines.append("| %.0f MiB (%s, %s) | %s | %s | %s | %s | %s | %s |" % (
                row["limit_bytes"] / MIB, pct(row.get("of_gguf")), pct(row.get("of_container")),
                cell(row[SWEEP_ENGINES[0]]), cell(row[SWEEP_ENGINES[1]]), cell(w), streaming,
                ", ".join(mib(row[n].get("peak_bytes")) for n in SWEEP_ENGINES),
                ", ".join(mib(row[n].get("read_bytes")) for n in SWEEP_ENGINES)))
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
    ap.add_argument("--gguf-type", default="Q4_K_M", help="what --gguf holds, as the table names it (F16 in the second pass)")
    ap.add_argument("--bench-llama", required=True)
    ap.add_argument("--backend-dir", required=True, help="the npm package's directory of ggml CPU backends")
    ap.add_argument("--out", required=True, help="JSON results")
    ap.add_argument("--table", help="also write the Markdown table here")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--prompt", type=int, default=64, help="prompt tokens of the limited runs")
    ap.add_argument("--prompts", default="64,512,2048", help="prompt lengths of the in-RAM runs (each then decodes --gen)")
    ap.add_argument("--gen", type=int, default=64)
    ap.add_argument("--ram-budget", default="", help="waste's --budget in RAM ('' = its default plan's)")
    ap.add_argument("--params", type=int, default=0, help="the model's parameters (bits per weight)")
    ap.add_argument("--vocab", type=int, required=True, help="ids of the shared prompt are below this")
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
    a.prompts = [int(p) for p in a.prompts.split(",") if p]
    if not 1 <= a.runs <= 50 or not a.threads or not 1 <= a.timeout <= 3600:
        ap.error("runs 1..50, at least one thread count, timeout 1..3600 s")
    # The one prompt both engines read (bench_llama --ids, waste bench --prompt-ids).
    rng = random.Random(1)
    a.ids_file = os.path.splitext(a.out)[0] + "-prompt-ids.txt"
    with open(a.ids_file, "w") as f:
        f.write(" ".join(str(rng.randrange(a.vocab)) for _ in range(max(a.prompts + [a.prompt]))) + "\n")
    b = Bench(a)
    res = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()), "machine": machine(), "runs": a.runs,
           "prompt": a.prompt, "gen": a.gen, "headroom_mib": a.headroom_mib, "timeout_s": a.timeout,
           "ram_budget": a.ram_budget or "the default plan's", "gguf_bytes": os.path.getsize(a.gguf),
           "prompts": a.prompts, "prompt_ids": a.ids_file, "gguf_type": a.gguf_type}
    res.update(json.loads(a.extra))
    if a.params:
        res["bits_per_weight"] = {"gguf": res["gguf_bytes"] * 8 / a.params}
        if "container_bytes" in res:
            res["bits_per_weight"]["container"] = res["container_bytes"] * 8 / a.params
    print("in RAM, threads %s, %d runs" % (a.threads, a.runs), file=sys.stderr, flush=True)
    raw = in_ram(b, a)
    res["ram"] = summarise_ram(raw)
    res["waste_prefill_chunk"] = next((row["waste VQ3R int8"]["prefill_chunk"] for row in res["ram"]
                                       if row["waste VQ3R int8"]["prefill_chunk"]), None)
    res["ram_runs"] = {str(t): v for t, v in raw.items()}
    res["sweep"] = sweep(b, a, res["gguf_bytes"], res.get("container_bytes")) if a.sweep else []
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
