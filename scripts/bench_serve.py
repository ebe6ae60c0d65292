#!/usr/bin/env python3
"""bench_serve.py — what `waste serve` costs and saves, measured from a client.

    scripts/bench_serve.py WASTE [--model MID] [--mini KIMI_MINI] [--json]

Three measurements (docs/bench-log/server.md), each against a baseline
taken in the same run, so ratios hold even on a noisy machine:

1. overhead: decode tok/s of one streamed greedy answer over HTTP against
   `waste bench` on the same container, budget, threads and prompt length
   (so the same decode positions; experts all
   cached, so disk noise stays out). The server's rate is taken between the
   first and the last content chunk, (tokens - 1) / seconds, so it excludes
   prefill like bench's decode figure does. The two alternate, one bench
   run after each answer, and the figure is the median of the --runs
   pairs' ratios. With --pin the engine (server and bench alike) runs on
   all cores but the last and this client on the last, so the figure is the
   server's own cost; without it the client's per-token work (reported as
   client_cpu_ms_per_token) shares the engine's cores, as a client on the
   same small machine would.
2. reuse: time to first token of turn 2 of a chat whose history is about
   --history tokens, with the prompt cache (default) and without it
   (--prompt-cache 0): turn 1 is sent, then turn 2 resends the conversation
   with the reply and a new question. Median of --runs histories.
3. load: requests per second and p50/p99 latency of short non-streamed
   answers (--answer tokens) from 1, 8 and 64 concurrent clients on
   kimi-mini for --seconds each (--parallel 4 slots).

Prints one JSON object (--json) or a table, with the machine's memory
bandwidth as `waste bench` measured it. Nothing here asserts speed.
"""
import argparse
import http.client
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time


# Prepended to the engine's commands (the server and `waste bench`): with
# --pin, `taskset` keeps them off the client's core.
ENGINE_PREFIX = []


def start_server(waste, model, extra):
    child = subprocess.Popen([*ENGINE_PREFIX, waste, "serve", model, "--port", "0", *extra], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True)
    deadline = time.time() + 300
    for line in child.stdout:
        match = re.search(r"ready at http://([^:/\s]+):(\d+)/v1", line)
        if match:
            # Keep draining stdout so the server never blocks on a full pipe.
            threading.Thread(target=lambda: [None for _ in child.stdout], daemon=True).start()
            return child, match.group(1), int(match.group(2))
        if time.time() > deadline:
            break
    child.kill()
    raise SystemExit(f"waste serve {model} did not become ready")


def stop_server(child):
    child.terminate()
    child.wait(timeout=60)


def post(host, port, path, body):
    connection = http.client.HTTPConnection(host, port, timeout=600)
    connection.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    return connection, connection.getresponse()


def stream_timings(host, port, body):
    """Sends a streamed chat request; returns (seconds to the first content,
    seconds from the first to the last content chunk, completion tokens from
    usage, prompt tokens the server reused, this client's CPU seconds while
    the answer streamed, prompt tokens from usage, the answer's "waste"
    statistics).

    Each event is only timestamped while the answer streams and parsed after
    it ends: on a machine whose cores all compute, the client's own work per
    token competes with the server it measures, so it is kept to a read."""
    body = dict(body, stream=True, stream_options={"include_usage": True})
    start = time.perf_counter()
    cpu_start = time.process_time()
    connection, response = post(host, port, "/v1/chat/completions", body)
    if response.status != 200:
        raise SystemExit(f"HTTP {response.status}: {response.read()[:300]!r}")
    arrivals = [(time.perf_counter(), raw) for raw in response]
    cpu_seconds = time.process_time() - cpu_start
    connection.close()
    first = last = None
    tokens = prompt_tokens = None
    reused = None
    stats = {}
    for now, raw in arrivals:
        line = raw.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[6:])
        if event.get("usage"):
            tokens = event["usage"]["completion_tokens"]
            prompt_tokens = event["usage"]["prompt_tokens"]
        if event.get("waste"):
            stats = event["waste"]
            reused = stats.get("prompt_tokens_reused")
        for choice in event.get("choices", []):
            delta = choice.get("delta", {})
            if delta.get("content") or delta.get("reasoning_content"):
                first = first if first is not None else now
                last = now
    if first is None:
        raise SystemExit("the answer had no content")
    return first - start, last - first, tokens, reused, cpu_seconds, prompt_tokens, stats


def bench_decode(waste, model, tokens, runs, budget, threads, prompt):
    out = subprocess.run([*ENGINE_PREFIX, waste, "bench", model, "-n", str(tokens), "--prompt", str(prompt), "--runs", str(runs), "--budget", budget,
                          "--threads", str(threads), "--json"], check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    return result["decode"]["median_tok_per_s"], result["memory_bandwidth_gb_per_s"]


def overhead(args):
    """Alternates one `waste bench` run and one streamed server answer,
    --runs times, and takes the median of each pair's ratio: on a shared
    machine whose speed drifts within minutes, adjacent runs see the same
    machine, where a bench before and after the server's runs do not.

    Each pair starts a fresh server (one warming answer, then the measured
    one), as each bench run is a fresh process: the same process's speed
    varies from one start to the next (by up to ~10% on the Xeon SPR VM,
    docs/bench-log/server.md), so one long-lived server against seven fresh benches
    compared one draw of that variation against the median of seven."""
    server_args = ["--budget", args.budget, "--threads", str(args.threads), "--max-tokens", str(args.tokens)]
    bench_rates, server_rates, ratios, client_ms, misses = [], [], [], [], []
    bandwidth = None
    for run in range(args.runs):
        child, host, port = start_server(args.waste, args.model, server_args)
        try:
            # Greedy and thinking off; a new prompt each answer (no reuse). The first warms.
            for answer in range(2):
                body = {"messages": [{"role": "user", "content": f"Count on and on, run {run}.{answer}"}],
                        "max_tokens": args.tokens, "temperature": 0, "thinking": False}
                _, seconds, tokens, _, cpu_seconds, prompt_tokens, stats = stream_timings(host, port, body)
        finally:
            stop_server(child)
        # The same decode positions: attention's cost grows with them
        # (bench decodes ~1.4% slower after 52 prompt tokens than after 16).
        bench_rate, bandwidth = bench_decode(args.waste, args.model, args.tokens, 1, args.budget, args.threads,
                                             prompt_tokens)
        if tokens and tokens > 1 and seconds > 0:
            server_rate = (tokens - 1) / seconds
            bench_rates.append(bench_rate)
            server_rates.append(server_rate)
            ratios.append(server_rate / bench_rate)
            client_ms.append(1000 * cpu_seconds / tokens)
            misses.append(stats.get("experts_missed"))
    return {"bench_tok_per_s": bench_rates, "server_tok_per_s": server_rates,
            "overhead": 1 - statistics.median(ratios), "tokens": args.tokens, "budget": args.budget, "threads": args.threads,
            "pinned": args.pin, "client_cpu_ms_per_token": statistics.median(client_ms), "server_experts_missed": misses,
            "memory_bandwidth_gb_per_s": bandwidth}


def history_messages(host, port, target_tokens, variant):
    """A conversation of alternating turns whose text is about target_tokens
    tokens (counted with the server's /tokenize)."""
    words = ("the engine streams experts from disk and keeps the trunk in memory while a cache holds "
             "what was used recently so that the next token finds it ").split()
    messages = []
    turn = 0
    while True:
        text = " ".join(words[(turn * 7 + variant + i) % len(words)] for i in range(40))
        messages.append({"role": "user" if turn % 2 == 0 else "assistant", "content": f"[{variant}.{turn}] {text}"})
        turn += 1
        connection, response = post(host, port, "/tokenize", {"content": json.dumps(messages)})
        count = len(json.loads(response.read())["tokens"])
        connection.close()
        if count >= target_tokens and messages[-1]["role"] == "assistant":
            return messages, count


def second_turn_ttft(host, port, messages, variant):
    turn1 = messages + [{"role": "user", "content": f"Question {variant}: what was said first?"}]
    body = {"messages": turn1, "max_tokens": 8, "temperature": 0, "thinking": False}
    connection, response = post(host, port, "/v1/chat/completions", body)
    reply = json.loads(response.read())["choices"][0]["message"].get("content") or "."
    connection.close()
    turn2 = turn1 + [{"role": "assistant", "content": reply}, {"role": "user", "content": "And then?"}]
    ttft, _, _, reused, _, _, _ = stream_timings(host, port, {"messages": turn2, "max_tokens": 4, "temperature": 0, "thinking": False})
    return ttft, reused


def reuse(args):
    result = {}
    for label, extra in (("with_reuse", []), ("without_reuse", ["--prompt-cache", "0"])):
        child, host, port = start_server(args.waste, args.model, ["--budget", args.budget, "--threads", str(args.threads),
                                                                   "--ctx", "4096", *extra])
        try:
            times = []
            reused = []
            for variant in range(args.runs):
                messages, count = history_messages(host, port, args.history, variant)
                ttft, tokens = second_turn_ttft(host, port, messages, variant)
                times.append(ttft)
                reused.append(tokens)
            result[label] = {"ttft_s": times, "median_s": statistics.median(times), "history_tokens": count,
                             "prompt_tokens_reused": reused}
        finally:
            stop_server(child)
    result["speedup"] = result["without_reuse"]["median_s"] / result["with_reuse"]["median_s"]
    return result


def load(args):
    child, host, port = start_server(args.waste, args.mini, ["--parallel", "4", "--queue", "256", "--threads", str(args.threads)])
    results = []
    try:
        for clients in (1, 8, 64):
            latencies = []
            errors = [0]
            lock = threading.Lock()
            deadline = time.perf_counter() + args.seconds

            def client(index):
                n = 0
                while time.perf_counter() < deadline:
                    body = {"messages": [{"role": "user", "content": f"Tell me about day {index}.{n}"}], "max_tokens": args.answer,
                            "temperature": 0.8, "seed": index * 1000 + n}
                    start = time.perf_counter()
                    connection, response = post(host, port, "/v1/chat/completions", body)
                    response.read()
                    connection.close()
                    with lock:
                        if response.status == 200:
                            latencies.append(time.perf_counter() - start)
                        else:
                            errors[0] += 1
                    n += 1

            started = time.perf_counter()
            threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            elapsed = time.perf_counter() - started
            latencies.sort()
            results.append({"clients": clients, "requests": len(latencies), "errors": errors[0],
                            "requests_per_s": len(latencies) / elapsed,
                            "p50_ms": 1000 * latencies[len(latencies) // 2],
                            "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]})
    finally:
        stop_server(child)
    return {"answer_tokens": args.answer, "parallel": 4, "levels": results}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("waste", help="the waste executable")
    parser.add_argument("--model", default="build/release/bench-mid", help="container for overhead and reuse (made with "
                        "`waste synth DIR --preset mid --seed 1` when missing)")
    parser.add_argument("--mini", default="build/release/serve-kimi-mini", help="kimi-mini's container for the load test")
    parser.add_argument("--budget", default="1G", help="budget for overhead and reuse (all of mid's experts fit in 1G)")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--tokens", type=int, default=128, help="decode tokens per overhead run")
    parser.add_argument("--history", type=int, default=1000, help="history tokens before turn 2")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--answer", type=int, default=16, help="tokens per answer in the load test")
    parser.add_argument("--seconds", type=float, default=20, help="seconds per client count in the load test")
    parser.add_argument("--only", choices=["overhead", "reuse", "load"], action="append", help="run only these (repeatable)")
    parser.add_argument("--pin", action="store_true", help="the engine (server and bench) on all cores but the last, with "
                        "one thread fewer, and this client on the last: the server's own overhead, without the "
                        "client's work competing for the engine's cores")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.pin:
        cores = sorted(os.sched_getaffinity(0))
        if len(cores) < 2:
            raise SystemExit("--pin needs two cores")
        ENGINE_PREFIX[:] = ["taskset", "-c", ",".join(map(str, cores[:-1]))]
        os.sched_setaffinity(0, {cores[-1]})
        args.threads = len(cores) - 1
    if not os.path.exists(os.path.join(args.model, "manifest.json")):
        subprocess.run([args.waste, "synth", args.model, "--preset", "mid", "--seed", "1"], check=True, stdout=subprocess.DEVNULL)
    report = {"machine": os.uname().machine, "cpus": os.cpu_count(), "load_average": os.getloadavg()}
    for name, run in (("overhead", overhead), ("reuse", reuse), ("load", load)):
        if not args.only or name in args.only:
            report[name] = run(args)
            print(f"{name}: {json.dumps(report[name])}", file=sys.stderr)
    report["load_average_after"] = os.getloadavg()
    print(json.dumps(report, indent=None if args.json else 2))


if __name__ == "__main__":
    main()
