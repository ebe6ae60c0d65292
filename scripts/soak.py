#!/usr/bin/env python3
"""soak.py — streams many tokens through one `waste chat` process at a budget
holding an eighth of the experts, samples its resident memory every second,
and fails if it ever exceeds the budget or anything goes wrong.

    scripts/soak.py WASTE MODEL [--tokens N | --seconds S] [--answer N] [--json]

One process, answers of --answer tokens (sampled, seeded, end-of-sequence
ignored), each followed by /stats, a /save and /load of the conversation every
tenth answer, and a /reset: the context never fills, so the soak can run for
as long as asked while the engine, the expert cache and the sessions stay the
same objects. The budget is the plan's floor less its minimum expert cache,
plus an eighth of the container's expert records (`waste plan --json`).

Resident memory: VmRSS from /proc/PID/status once a second, and at the end
the kernel's high-water mark (ru_maxrss from wait4), which catches a peak
between two samples that was later unmapped (the kernel updates it when
memory is unmapped, so it can also miss one a sample saw: the larger of the
two is the peak). ru_maxrss also counts this script's own pages up to the
child's exec (Python's subprocess may fork with vfork); that is ~10 MB, so
it errs towards failing. Exit status 0 when every check held, 1 otherwise; the summary (JSON
with --json) gives tokens, seconds, tokens per second, the peaks, the budget,
the expert cache hit rate and the errors.
"""
import argparse
import json
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

STATS = re.compile(r"\[(\d+) of (\d+) context tokens held \| (\d+) tokens evaluated \| experts (\d+) hit / (\d+) miss")


def plan_budget(waste, model, context, fraction):
    plan = json.loads(subprocess.run([waste, "plan", model, "--ctx", str(context), "--json"], check=True,
                                     capture_output=True, text=True).stdout)
    info = json.loads(subprocess.run([waste, "info", model, "--json"], check=True, capture_output=True, text=True).stdout)
    record = info["expert_record_bytes"]
    records = plan["all_experts_bytes"] // record
    cached = -(-records // fraction)  # rounded up
    return plan["floor_bytes"] - plan["min_expert_cache"] + cached * record, cached, records


def status_kib(pid, field):
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("waste", help="the waste executable")
    parser.add_argument("model", help="container directory (it needs a tokenizer)")
    parser.add_argument("--tokens", type=int, default=0, help="stop after this many evaluated tokens")
    parser.add_argument("--seconds", type=float, default=0, help="stop after the answer that passes this many seconds")
    parser.add_argument("--answer", type=int, default=1000, help="tokens per answer (default 1000)")
    parser.add_argument("--fraction", type=int, default=8, help="the cache holds 1/FRACTION of the experts (default 8)")
    parser.add_argument("--threads", type=int, default=0, help="compute threads (0: one per core)")
    parser.add_argument("--progress", type=float, default=60, help="seconds between progress lines on stderr")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.epilog = "SIGTERM or SIGINT ends the soak after the answer under way, with the summary so far."
    args = parser.parse_args()
    if args.tokens <= 0 and args.seconds <= 0:
        parser.error("give --tokens or --seconds")

    context = args.answer + 64  # a short prompt and the answer, reset after each
    budget, cached, records = plan_budget(args.waste, args.model, context, args.fraction)
    work = tempfile.mkdtemp(prefix="waste-soak-")
    state = os.path.join(work, "state.wsess")
    errors = []
    child = subprocess.Popen(
        [args.waste, "chat", args.model, "--raw", "-q", "--ignore-eos", "-n", str(args.answer), "--ctx", str(context),
         "--budget", str(budget), "--threads", str(args.threads), "--temp", "0.8", "--top-p", "0.95", "--seed", "1"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8", errors="replace",
        bufsize=1)  # generated text may split a UTF-8 sequence between tokens
    lines = queue.Queue()

    def read(stream, tag):
        for line in stream:
            lines.put((tag, line))
        lines.put((tag, None))

    for stream, tag in ((child.stdout, "out"), (child.stderr, "err")):
        threading.Thread(target=read, args=(stream, tag), daemon=True).start()

    samples, sampled_peak, over = 0, 0, []
    done, stop = threading.Event(), threading.Event()
    # SIGTERM or Ctrl-C: finish the answer under way, then report as usual
    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, lambda *_: stop.set())

    def sample():
        nonlocal samples, sampled_peak
        while not done.wait(1.0):
            rss = status_kib(child.pid, "VmRSS")
            if rss is None:
                continue
            samples += 1
            sampled_peak = max(sampled_peak, rss * 1024)
            if rss * 1024 > budget:
                over.append((round(time.monotonic() - start, 1), rss * 1024))

    start = time.monotonic()
    threading.Thread(target=sample, daemon=True).start()
    stats = None
    answers, last_progress = 0, start

    def send(text):
        child.stdin.write(text + "\n")
        child.stdin.flush()

    def wait_for(pattern):
        """Lines until one matches pattern (None at the end of stdout); errors are collected on the way."""
        while True:
            tag, line = lines.get()
            if line is None:
                if tag == "out":
                    return None
                continue
            if tag == "err" or line.startswith("error:"):
                errors.append(line.rstrip())
                continue
            match = pattern.search(line)
            if match:
                return match

    try:
        while True:
            send("In the beginning")
            send("/stats")
            match = wait_for(STATS)
            if match is None:
                errors.append("waste chat ended before its answer's /stats")
                break
            stats = [int(g) for g in match.groups()]
            answers += 1
            if answers % 10 == 0:  # the state survives a save, a reset and a load
                send(f"/save {state}")
                if wait_for(re.compile(r"^\[saved (\d+) tokens")) is None:
                    errors.append("no /save confirmation")
                    break
                send("/reset")
                wait_for(re.compile(r"^\[conversation reset\]"))
                send(f"/load {state}")
                loaded = wait_for(re.compile(r"^\[loaded (\d+) tokens"))
                if loaded is None or int(loaded.group(1)) != stats[0]:
                    errors.append(f"/load gave {loaded.group(1) if loaded else 'nothing'} tokens, /save had {stats[0]}")
                    break
            send("/reset")
            wait_for(re.compile(r"^\[conversation reset\]"))
            now = time.monotonic()
            if now - last_progress >= args.progress:
                last_progress = now
                print(f"soak: {stats[2]} tokens in {now - start:.0f} s, RSS peak sampled {sampled_peak / 1e6:.1f} MB "
                      f"of {budget / 1e6:.1f} MB, {len(errors)} errors", file=sys.stderr, flush=True)
            if errors or over:
                break
            if stop.is_set() or (args.tokens and stats[2] >= args.tokens) or (args.seconds and now - start >= args.seconds):
                break
    finally:
        child.stdin.close()
        _, status, usage = os.wait4(child.pid, 0)
        child.returncode = os.waitstatus_to_exitcode(status)
        done.set()
    seconds = time.monotonic() - start
    while not lines.empty():  # errors printed after the last /stats
        tag, line = lines.get()
        if line and (tag == "err" or line.startswith("error:")):
            errors.append(line.rstrip())
    if child.returncode != 0:
        errors.append(f"waste chat exited with {child.returncode}")
    peak = max(usage.ru_maxrss * 1024, sampled_peak)
    tokens = stats[2] if stats else 0
    hits, misses = (stats[3], stats[4]) if stats else (0, 0)
    summary = {
        "model": args.model, "budget_bytes": budget, "cached_records": cached, "expert_records": records,
        "answers": answers, "tokens": tokens, "seconds": round(seconds, 1),
        "tok_per_s": round(tokens / seconds, 2) if seconds > 0 else 0,
        "rss_samples": samples, "rss_peak_sampled_bytes": sampled_peak, "rss_high_water_bytes": usage.ru_maxrss * 1024,
        "rss_peak_bytes": peak,
        "hit_rate": round(hits / (hits + misses), 4) if hits + misses else 0,
        "samples_over_budget": over[:10], "errors": errors[:10],
    }
    ok = not errors and not over and peak <= budget
    if args.json:
        print(json.dumps(summary))
    else:
        print(f"soak {'passed' if ok else 'FAILED'}: {tokens} tokens in {seconds:.0f} s ({summary['tok_per_s']} tok/s), "
              f"peak RSS {peak / 1e6:.1f} MB (sampled {sampled_peak / 1e6:.1f} MB, {samples} samples) against a budget of "
              f"{budget / 1e6:.1f} MB ({cached} of {records} expert records), hit rate {100 * summary['hit_rate']:.1f}%, "
              f"{len(errors)} errors{': ' + '; '.join(errors[:3]) if errors else ''}")
    for name in os.listdir(work):
        os.remove(os.path.join(work, name))
    os.rmdir(work)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
