"""End-to-end tests of `waste run` and `waste chat`: the built binary on a
synthetic container (waste synth tiny: tokenizer and chat.json), the
upstream tiny-tok fixture (tokenizer, no chat.json) and tiny (no tokenizer).

The chat REPL runs on a real pseudo-terminal (python's pty): typed lines,
/save, /load, /reset, /stats, Ctrl-C (the terminal's interrupt character,
which the kernel turns into SIGINT) and Ctrl-D.

The binary: WASTE_CLI, else build/release/waste; its absence is a failure.
Outputs are compared exactly: the engine is deterministic for a given seed.
`run` and `chat` sample by default with a fresh seed, so a test that compares
outputs says `--temp 0` (greedy) or `--seed`.
"""

import json
import os
import re
import pty
import select
import shutil
import signal
import struct
import subprocess
import tempfile
import time
import unittest

try:
    from ._paths import FIXTURES, REPO_ROOT
except ImportError:
    from _paths import FIXTURES, REPO_ROOT

CLI = os.environ.get("WASTE_CLI", os.path.join(REPO_ROOT, "build", "release", "waste"))
TIMEOUT = 120  # seconds per command; generous because the test machine is shared


UNDER_WINE = os.environ.get("WASTE_CLI_UNDER_WINE") == "1"


def waste(*args, stdin=None, check=None):
    proc = subprocess.run([CLI, *args], input=stdin, capture_output=True, timeout=TIMEOUT)
    # The CLI prints its reason for every exit 1 (cli_main.cpp) and a usage
    # error is exit 2, so an exit 1 with no output at all is not the CLI's:
    # under Wine it happened once in CI (a `--cpus 0-x` that exits 2 with its
    # message in every other run), Wine failing to start or end the program
    # with its own messages silenced (WINEDEBUG=-all). Under Wine only, such a
    # run is repeated once; a second silent exit 1 stands.
    if UNDER_WINE and proc.returncode == 1 and not proc.stdout and not proc.stderr:
        print(f"\n[wine] waste {' '.join(args)} exited 1 with no output; running it once more", flush=True)
        proc = subprocess.run([CLI, *args], input=stdin, capture_output=True, timeout=TIMEOUT)
    if check is not None and proc.returncode != check:
        raise AssertionError(f"waste {' '.join(args)} exited {proc.returncode}, wanted {check}:\n"
                             f"{proc.stdout.decode(errors='replace')}\n{proc.stderr.decode(errors='replace')}")
    return proc


class Terminal:
    """A command on a pseudo-terminal: type into it, read what it shows."""

    def __init__(self, args):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execv(CLI, [CLI, *args])
        self.seen = b""

    def type(self, data):
        os.write(self.fd, data)

    def read_until(self, marker, timeout=TIMEOUT):
        """Reads until marker appears after what was consumed; returns the text before it."""
        deadline = time.time() + timeout
        while marker not in self.seen:
            left = deadline - time.time()
            if left <= 0:
                raise AssertionError(f"no {marker!r} within {timeout} s; the terminal shows:\n"
                                     f"{self.seen[-2000:].decode(errors='replace')}")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    chunk = b""
                if not chunk:
                    raise AssertionError(f"the command ended before {marker!r}:\n{self.seen[-2000:].decode(errors='replace')}")
                self.seen += chunk
        before, _, self.seen = self.seen.partition(marker)
        return before

    def wait(self, timeout=TIMEOUT):
        deadline = time.time() + timeout
        while time.time() < deadline:
            # drain output so the child never blocks on a full terminal
            ready, _, _ = select.select([self.fd], [], [], 0.1)
            if ready:
                try:
                    self.seen += os.read(self.fd, 65536)
                except OSError:
                    pass
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        raise AssertionError("the command did not end")


class CliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(CLI):
            raise AssertionError(f"the waste binary {CLI} is missing: build it first (scripts/test.sh does)")
        cls.tmp = tempfile.mkdtemp(prefix="waste-cli-test-")
        cls.model = os.path.join(cls.tmp, "tiny.waste")
        waste("synth", cls.model, "--preset", "tiny", "--seed", "7", check=0)
        cls.plain = os.path.join(FIXTURES, "tiny-tok.waste")     # a tokenizer, no chat.json
        cls.no_tokenizer = os.path.join(FIXTURES, "tiny.waste")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_json(self, *args, stdin=None):
        proc = waste("run", self.model, *args, "--json", stdin=stdin, check=0)
        return json.loads(proc.stdout)

    # ------------------------------------------------------------------ run

    def run_hello(self, *args):
        """`waste run MODEL hello --json ARGS`, its JSON."""
        return json.loads(waste("run", self.model, "hello", "--json", *args, check=0).stdout)

    def test_grammar_constrains_run(self):
        # The synthetic model writes noise; under the grammar every answer
        # is in its language. Tolerance: none — an answer the model ended
        # (eos, allowed only where the grammar can end) matches whole; one
        # cut by -n is a prefix of a sentence of the language.
        path = os.path.join(self.tmp, "yes-no.gbnf")
        with open(path, "w") as f:
            f.write('root ::= ("yes" | "no") "!" [0-9]{2,4}\n')
        for seed in range(1, 7):
            out = self.run_hello("--grammar", path, "-n", "40", "--temp", "1.2", "--seed", str(seed))
            self.assertEqual(out["stop_reason"], "eos", out)
            self.assertRegex(out["text"], r"^(yes|no)![0-9]{2,4}$")
        cut = self.run_hello("--grammar", path, "-n", "2", "--temp", "1.2", "--seed", "1")
        self.assertEqual(cut["stop_reason"], "length")
        self.assertTrue(any(w.startswith(cut["text"]) for w in ("yes!", "no!")), cut["text"])

    def test_json_schema_and_json_value_constrain_run(self):
        schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1, "maximum": 9},
                                                   "c": {"enum": ["red", "blue"]}},
                  "required": ["n", "c"], "additionalProperties": False}
        path = os.path.join(self.tmp, "schema.json")
        with open(path, "w") as f:
            json.dump(schema, f)
        complete = 0
        for seed in range(1, 5):
            out = self.run_hello("--json-schema", path, "-n", "80", "--temp", "1.0", "--seed", str(seed))
            if out["stop_reason"] != "eos":
                continue  # cut by -n: not claimed valid (reported as length)
            complete += 1
            value = json.loads(out["text"])
            self.assertEqual(set(value), {"n", "c"})
            self.assertTrue(isinstance(value["n"], int) and 1 <= value["n"] <= 9, value)
            self.assertIn(value["c"], ("red", "blue"))
        self.assertGreater(complete, 0, "no answer ended within 80 tokens")
        self.assertEqual(self.run_hello("--json-schema", path, "-n", "3", "--seed", "1")["stop_reason"], "length")
        complete = 0
        for seed in range(1, 4):
            out = self.run_hello("--json-value", "-n", "60", "--temp", "1.0", "--seed", str(seed))
            if out["stop_reason"] == "eos":
                complete += 1
                json.loads(out["text"])
        self.assertGreater(complete, 0, "no JSON value ended within 60 tokens")

    def test_bad_grammar_and_schema_are_refused_with_where(self):
        path = os.path.join(self.tmp, "bad.gbnf")
        with open(path, "w") as f:
            f.write('root ::= "a" undefined_rule\n')
        proc = waste("run", self.model, "hello", "--grammar", path, "-n", "5", check=1)
        self.assertIn(b"line 1:14", proc.stderr)
        self.assertIn(b"undefined_rule", proc.stderr)
        schema = os.path.join(self.tmp, "bad-schema.json")
        with open(schema, "w") as f:
            json.dump({"type": "object", "properties": {"x": {"type": "string", "contentEncoding": "base64"}}}, f)
        proc = waste("run", self.model, "hello", "--json-schema", schema, "-n", "5", check=1)
        self.assertIn(b"contentEncoding", proc.stderr)

    def test_text_prompt_streams_the_json_text(self):
        result = self.run_json("Once upon a time", "-n", "12", "--ignore-eos", "--temp", "0")
        self.assertEqual(len(result["tokens"]), 12)
        proc = waste("run", self.model, "Once upon a time", "-n", "12", "--ignore-eos", "--temp", "0", "-q", check=0)
        self.assertEqual(proc.stdout.decode("utf-8", errors="replace"), result["text"] + "\n")
        self.assertEqual(proc.stderr, b"", "-q prints no status or summary")
        summary = waste("run", self.model, "Once upon a time", "-n", "12", "--ignore-eos", "--temp", "0", check=0).stderr.decode()
        self.assertRegex(summary, r"\[12 tokens, [0-9.]+ s, [0-9.]+ tok/s \| experts \d+ hit / \d+ miss = [0-9.]+% \| [0-9.]+ GB read\]")

    def test_stdin_dash_and_file_give_the_same_prompt(self):
        want = self.run_json("The cat sat", "-n", "6", "--temp", "0")
        piped = self.run_json("-n", "6", "--temp", "0", stdin=b"The cat sat")
        dashed = self.run_json("-", "-n", "6", "--temp", "0", stdin=b"The cat sat")
        path = os.path.join(self.tmp, "prompt.txt")
        with open(path, "wb") as f:
            f.write(b"The cat sat")
        from_file = self.run_json("--file", path, "-n", "6", "--temp", "0")
        for other in (piped, dashed, from_file):
            self.assertEqual(other["tokens"], want["tokens"])
            self.assertEqual(other["prompt_tokens"], want["prompt_tokens"])

    def test_json_shape(self):
        result = self.run_json("Hello", "-n", "5", "--ignore-eos")
        for key, kind in {"text": str, "tokens": list, "logprobs": list, "stop_reason": str, "prompt_tokens": int,
                          "chat_template": bool, "prompt_seconds": (int, float), "tok_per_s": (int, float),
                          "generate_seconds": (int, float), "expert_hits": int, "expert_misses": int,
                          "expert_hit_rate": (int, float), "bytes_read": int, "io_seconds": (int, float)}.items():
            self.assertIn(key, result)
            self.assertIsInstance(result[key], kind, key)
        self.assertTrue(result["chat_template"])
        self.assertEqual(result["stop_reason"], "length")
        self.assertEqual(len(result["logprobs"]), 5)
        self.assertTrue(all(lp <= 0 for lp in result["logprobs"]))
        raw = self.run_json("Hello", "-n", "5", "--raw", "--ignore-eos")
        self.assertFalse(raw["chat_template"])
        self.assertLess(raw["prompt_tokens"], result["prompt_tokens"], "the template adds markup tokens")

    def test_seeded_sampling_repeats_and_differs_by_seed(self):
        args = ("A story:", "-n", "24", "--ignore-eos", "--temp", "1.2", "--top-k", "40", "--top-p", "0.95", "--min-p", "0.01")
        a = self.run_json(*args, "--seed", "5")
        b = self.run_json(*args, "--seed", "5")
        c = self.run_json(*args, "--seed", "6")
        greedy = self.run_json("A story:", "-n", "24", "--ignore-eos", "--temp", "0")
        self.assertEqual(a["tokens"], b["tokens"])
        self.assertNotEqual(a["tokens"], c["tokens"])
        self.assertNotEqual(a["tokens"], greedy["tokens"])

    def test_cpus_pins_without_changing_the_output(self):
        # Placement never changes a bit: pinned to one CPU (one compute thread
        # with --threads 0) the tokens and their log-probabilities are the same.
        want = self.run_json("The cat sat", "-n", "6", "--ignore-eos", "--seed", "4")
        first_cpu = str(min(os.sched_getaffinity(0)))  # CI may not give us CPU 0
        pinned = self.run_json("The cat sat", "-n", "6", "--ignore-eos", "--seed", "4", "--cpus", first_cpu)
        self.assertEqual(pinned["tokens"], want["tokens"])
        self.assertEqual(pinned["logprobs"], want["logprobs"])
        for bad in ("0-x", "3-1", "", "99999", "1023"):
            proc = waste("run", self.model, "x", "--cpus", bad)
            self.assertEqual(proc.returncode, 2, f"--cpus {bad!r}: {proc.stderr}")
            self.assertIn(b"--cpus", proc.stderr)

    def test_stop_string_cuts_the_text_before_it(self):
        full = self.run_json("Tell me", "-n", "40", "--ignore-eos", "--temp", "0")["text"]
        # A two-character stop string at its first occurrence, after some text.
        for k in range(3, len(full) - 2):
            stop = full[k:k + 2]
            if full.find(stop) == k and stop.isprintable() and not stop.startswith("-"):
                break
        else:
            self.fail(f"no usable stop string in {full!r}")
        cut = self.run_json("Tell me", "-n", "40", "--ignore-eos", "--temp", "0", "--stop", "\u2603never", "--stop", stop)
        self.assertEqual(cut["stop_reason"], "stop_string")
        self.assertEqual(cut["text"], full[:k])

    def test_ids_prompt_and_container_without_tokenizer(self):
        proc = waste("run", self.no_tokenizer, "--ids", "1 2 3", "-n", "4", "-q", check=0)
        self.assertEqual(len(proc.stdout.split()), 4, proc.stdout)
        proc = waste("run", self.no_tokenizer, "hello", "-n", "4", check=1)
        self.assertIn(b"token ids only", proc.stderr)

    def test_container_without_chat_json(self):
        proc = waste("run", self.plain, "hello", "-n", "3", "--json", check=0)
        self.assertFalse(json.loads(proc.stdout)["chat_template"])
        proc = waste("chat", self.plain, stdin=b"hi\n", check=1)
        self.assertIn(b"has no chat.json", proc.stderr)
        proc = waste("chat", self.plain, "--raw", "-n", "3", "-q", stdin=b"hi\n", check=0)

    def test_exit_codes(self):
        for args in (["run"], ["run", self.model, "x", "--temp", "-1"], ["run", self.model, "x", "--top-p", "2"],
                     ["run", self.model, "x", "--ids", "1"], ["run", self.model, "x", "--bogus"],
                     ["run", self.model, "--ids", "1 x"], ["chat"], ["run", self.model, "x", "-n", "many"]):
            proc = waste(*args)
            self.assertEqual(proc.returncode, 2, f"{args}: {proc.stderr}")
            self.assertIn(b"--help", proc.stderr + proc.stdout, f"{args}: a usage error points at --help")
            self.assertIn(b"Usage: waste", proc.stderr, f"{args}: a usage error shows the usage line")
        missing = os.path.join(self.tmp, "absent.waste")
        proc = waste("run", missing, "hello", check=1)
        self.assertIn(missing.encode(), proc.stderr)
        damaged = os.path.join(self.tmp, "damaged.waste")
        shutil.copytree(self.model, damaged)
        with open(os.path.join(damaged, "manifest.json"), "r+b") as f:
            f.truncate(40)
        proc = waste("run", damaged, "hello", check=1)
        self.assertIn(b"manifest", proc.stderr)

    def test_run_samples_by_default_and_reports_the_seed(self):
        # Unseeded: a fresh seed, reported; --seed with it repeats the run.
        first = self.run_json("A story:", "-n", "16", "--ignore-eos")
        self.assertIsInstance(first["seed"], int)
        again = self.run_json("A story:", "-n", "16", "--ignore-eos", "--seed", str(first["seed"]))
        self.assertEqual(again["seed"], first["seed"])
        self.assertEqual(again["tokens"], first["tokens"])
        self.assertEqual(again["logprobs"], first["logprobs"])
        # The default is temperature 0.8, top-p 0.95 (as llama.cpp): the same
        # tokens as those options given explicitly with the same seed.
        explicit = self.run_json("A story:", "-n", "16", "--ignore-eos", "--seed", str(first["seed"]),
                                 "--temp", "0.8", "--top-p", "0.95")
        self.assertEqual(explicit["tokens"], first["tokens"])
        # Text output: the seed closes the summary line on stderr.
        proc = waste("run", self.model, "A story:", "-n", "4", "--seed", "123", check=0)
        self.assertRegex(proc.stderr.decode(), r"GB read \| seed 123\]")
        # Greedy has no seed to report.
        self.assertIsNone(self.run_json("A story:", "-n", "4", "--temp", "0")["seed"])
        proc = waste("run", self.model, "A story:", "-n", "4", "--temp", "0", check=0)
        self.assertNotIn(b"seed", proc.stderr)
        # chat's summary lines say it too.
        proc = waste("chat", self.model, "-n", "4", "--seed", "77", stdin=b"hi\n", check=0)
        self.assertRegex(proc.stderr.decode(), r"\| seed 77\]")

    def test_the_start_line_says_the_budget_and_why(self):
        # The default budget holds every record of this ~1 MB model on any
        # machine that runs the tests; a named one says so; -q prints none.
        err = waste("run", self.model, "A story:", "-n", "1", "--temp", "0", check=0).stderr.decode()
        self.assertRegex(err, r"budget [0-9.]+ [KMG]iB, expert cache [0-9.]+ [KMG]iB "
                              r"\(every expert cached: it fits in what this machine spares\)")
        err = waste("run", self.model, "A story:", "-n", "1", "--temp", "0", "--budget", "64M", check=0).stderr.decode()
        self.assertRegex(err, r"budget 64\.00 MiB, expert cache [0-9.]+ [KMG]iB \(--budget\)")
        self.assertNotIn(b"budget", waste("run", self.model, "A story:", "-n", "1", "--temp", "0", "-q", check=0).stderr)
        self.assertNotIn(b"budget", waste("run", self.model, "A story:", "-n", "1", "--temp", "0", "--json", check=0).stderr)
        plan = waste("plan", self.model, check=0).stdout.decode()
        self.assertRegex(plan, r"recommended budget +[0-9.]+ [KMG]iB \(every expert cached: it fits in what this machine spares\)")
        self.assertRegex(plan, r"spare \(7/8\) +[0-9.]+ [KMG]iB")

    def test_run_samples_with_the_models_generation_config_when_no_flag_names_it(self):
        # A release's generation_config.json names its sampling (Qwen3:
        # temperature 0.6, top-k 20, top-p 0.95): with no --temp etc. a run
        # draws exactly what the same seed draws with those values named;
        # a flag wins over it; do_sample false is greedy. Tolerance: none.
        model = os.path.join(self.tmp, "sampling.waste")
        shutil.copytree(self.model, model)
        config = os.path.join(model, "generation_config.json")
        with open(config, "w") as f:
            json.dump({"do_sample": True, "temperature": 0.6, "top_k": 20, "top_p": 0.9, "min_p": 0.05}, f)

        def run(*args):
            return json.loads(waste("run", model, "A story:", "-n", "16", "--ignore-eos", "--json", *args, check=0).stdout)

        for seed in ("5", "6"):
            unnamed = run("--seed", seed)
            self.assertEqual(unnamed["tokens"], run("--seed", seed, "--temp", "0.6", "--top-k", "20", "--top-p", "0.9",
                                                    "--min-p", "0.05")["tokens"])
            self.assertEqual(run("--seed", seed, "--temp", "1.3")["tokens"],
                             run("--seed", seed, "--temp", "1.3", "--top-k", "20", "--top-p", "0.9", "--min-p", "0.05")["tokens"])
        with open(config, "w") as f:
            json.dump({"do_sample": False, "temperature": 0.6}, f)
        greedy = run()
        self.assertIsNone(greedy["seed"])
        self.assertEqual(greedy["tokens"], self.run_json("A story:", "-n", "16", "--ignore-eos", "--temp", "0")["tokens"])
        # a value the sampler cannot take is refused at open, naming it
        with open(config, "w") as f:
            json.dump({"temperature": "hot"}, f)
        proc = waste("run", model, "A story:", "-n", "2", check=1)
        self.assertIn("generation_config.json.temperature", proc.stderr.decode())

    def test_a_vocabulary_larger_than_the_tokenizer_generates_every_id(self):
        # 256 ranks and 10 specials are ids 0-265; ids 266-1023 are reserved
        # (no bytes), most of what the untrained model draws.
        tokenizer_ids, vocab = 266, 1024
        model = os.path.join(self.tmp, "reserved.waste")
        waste("synth", model, "--preset", "tiny", "--seed", "7", "--set", f"vocab_size={vocab}",
              "--set", f"reserved_tokens={vocab - tokenizer_ids - 10}", check=0)
        for sampling in (["--temp", "0"], ["--seed", "3"]):
            with self.subTest(sampling=sampling):
                result = json.loads(waste("run", model, "--ids", "1 2 3", "-n", "24", "--ignore-eos", "--json",
                                          *sampling, check=0).stdout)
                self.assertEqual(len(result["tokens"]), 24)
                reserved = [t for t in result["tokens"] if t >= tokenizer_ids]
                self.assertTrue(reserved, f"no reserved id drawn, the test proves nothing: {result['tokens']}")
                self.assertTrue(all(0 <= t < vocab for t in result["tokens"]))
                # The text is the bytes of the ids that have some.
                known = [t for t in result["tokens"] if t < tokenizer_ids]
                text = waste("detokenize", model, "--ids", json.dumps(known), check=0).stdout
                try:
                    self.assertEqual(result["text"], text.decode("utf-8"))
                except UnicodeDecodeError:
                    pass  # --json replaces invalid UTF-8; the streamed bytes below are compared exactly
                proc = waste("run", model, "--ids", "1 2 3", "-n", "24", "--ignore-eos", "-q", *sampling, check=0)
                self.assertEqual(proc.stdout, text + b"\n")
                waste("chat", model, "-n", "24", "--ignore-eos", "-q", *sampling, stdin=b"hello\nagain\n", check=0)
        # eval lists every id; perplexity scores a stream holding reserved ids.
        top = json.loads(waste("eval", model, "--ids", "1 2 3", "--top", str(vocab), "--json", check=0).stdout)
        self.assertEqual(sorted(entry["id"] for entry in top["top"]), list(range(vocab)))
        stream = os.path.join(self.tmp, "reserved.u16")
        with open(stream, "wb") as f:
            f.write(struct.pack("<9H", 1, 300, 2, 1023, 5, 700, 266, 3, 4))
        score = json.loads(waste("perplexity", model, stream, "--window", "8", "--json", check=0).stdout)
        self.assertEqual(score["predicted_tokens"], 8)
        # Ids at or above the vocabulary stay an error.
        proc = waste("detokenize", model, "--ids", str(vocab), check=1)
        self.assertIn(f"token {vocab} is not in the vocabulary".encode(), proc.stderr)
        proc = waste("run", model, "--ids", f"1 {vocab}", "-n", "2", check=1)
        self.assertIn(str(vocab).encode(), proc.stderr)

    def test_convert_info_plan_and_eval_on_a_non_ascii_path(self):
        # A Hugging Face checkpoint converted into a folder whose name is not
        # ASCII, then read by info, plan and eval: paths are UTF-8 on every
        # system (on Windows the CLI takes its arguments as UTF-16 and the
        # library opens files by their wide names). The same container under
        # an ASCII name evaluates to the same bytes.
        from waste_ref import hf_synth
        source = os.path.join(self.tmp, "checkpoint")
        hf_synth.write_checkpoint(source, model="kimi-linear", seed=5, shards=2)
        folder = os.path.join(self.tmp, "modèle-模型")
        converted = json.loads(waste("convert", source, folder, "--json", check=0).stdout.decode().splitlines()[-1])
        self.assertEqual((converted["arch"], len(converted["layers"])), ("kimi_linear", 3))  # 3 MoE layers
        self.assertTrue(os.path.isfile(os.path.join(folder, "manifest.json")))
        info = json.loads(waste("info", folder, "--json", check=0).stdout)
        self.assertEqual(info["layers"], 4)
        plan = json.loads(waste("plan", folder, "--json", check=0).stdout)
        self.assertGreater(plan["floor_bytes"], 0)
        ascii_copy = os.path.join(self.tmp, "ascii-copy")
        shutil.copytree(folder, ascii_copy)
        evals = [waste("eval", path, "--ids", "1 2 3 4", "--top", "5", "--json", check=0).stdout for path in (folder, ascii_copy)]
        self.assertEqual(json.loads(evals[0]), json.loads(evals[1]))
        waste("info", os.path.join(self.tmp, "modèle-absent"), check=1)

    def test_synth_refuses_keys_it_does_not_use(self):
        out = os.path.join(self.tmp, "refused.waste")
        for assignment, named in (("vocab=400", b'"vocab" is not a key the synth uses (did you mean "vocab_size"?)'),
                                  ("foo=1", b'"foo" is not a key the synth uses')):
            proc = waste("synth", out, "--preset", "tiny", "--set", assignment, check=1)
            self.assertIn(named, proc.stderr)
            self.assertFalse(os.path.exists(os.path.join(out, "manifest.json")))

    def test_input_files_that_cannot_be_read_exit_1_naming_them(self):
        # A directory (once an uncaught std::ios_base::failure: SIGABRT), a
        # missing file and an unreadable one. Root reads any file whatever its
        # mode, so there the unreadable one is /proc/self/mem, whose first
        # page is never mapped: its read fails with EIO.
        directory = os.path.join(self.tmp, "a-directory")
        os.makedirs(directory, exist_ok=True)
        missing = os.path.join(self.tmp, "no-such-file")
        unreadable = os.path.join(self.tmp, "unreadable.txt")
        with open(unreadable, "wb") as f:
            f.write(b"hello")
        os.chmod(unreadable, 0)
        if os.access(unreadable, os.R_OK):
            unreadable = "/proc/self/mem"
        ranks = os.path.join(self.model, "tokenizer.model")
        for path in (directory, missing, unreadable):
            for args in (["run", self.model, "--file", path, "-n", "1"],
                         ["tokenize", self.model, "--file", path],
                         ["tokenize", "--rank-file", ranks, "--pattern", "kimi", "--specials", path, "hi"],
                         ["detokenize", "--rank-file", ranks, "--pattern", "kimi", "--specials", path, "--ids", "1"],
                         ["perplexity", self.model, path],
                         ["perplexity", self.model, path, "--format", "text"],
                         ["simulate", path, "--mult", "1"]):
                with self.subTest(args=args):
                    proc = waste(*args)
                    self.assertEqual(proc.returncode, 1, f"{args}: {proc.stderr}")
                    self.assertIn(path.encode(), proc.stderr)
        proc = waste("run", self.model, "--file", directory, check=1)
        self.assertIn(b"is a directory", proc.stderr)

    def test_output_that_cannot_be_written_is_exit_1_not_a_result(self):
        # /dev/full refuses every write (ENOSPC): standard output buffered
        # until the end (a short line, a JSON object) fails at the flush the
        # CLI makes before exit, which must be reported with its reason, not
        # exit 0. Which check sees it names it: the final flush ("writing the
        # standard output failed: No space left on device"), fmt's own write
        # check on Windows ("cannot write to file: No space left on
        # device"), or, where tokens were streamed and a write failed
        # midway, "writing the standard output failed: an earlier write to
        # it was refused".
        for args in (["version"], ["info", self.model, "--json"], ["run", self.model, "--ids", "1 2", "-n", "2"]):
            with self.subTest(args=args), open("/dev/full", "wb") as full:
                proc = subprocess.run([CLI, *args], stdout=full, stderr=subprocess.PIPE, timeout=TIMEOUT)
                self.assertEqual(proc.returncode, 1, f"{args}: {proc.stderr}")
                self.assertTrue(b"No space left on device" in proc.stderr or
                                b"writing the standard output failed" in proc.stderr, proc.stderr)

    def test_bench_reads_its_prompt_from_a_file_and_warms_up_untimed(self):
        # The harness that sets waste beside llama.cpp (scripts/compare_llama.py)
        # gives both engines one file of prompt ids. Exact: the same engine,
        # path and ids decode the same greedy tokens.
        ids = [3, 14, 15, 9, 26, 5, 35, 8, 97, 93]
        path = os.path.join(self.tmp, "prompt-ids.txt")
        with open(path, "w") as f:
            f.write(" ".join(map(str, ids)) + "\n")
        bench = json.loads(waste("bench", self.model, "--prompt", "8", "--prompt-ids", path, "-n", "6", "--runs", "2",
                                 "--warmup", "2", "--json", check=0).stdout)
        self.assertEqual(bench["prompt_ids"], path)
        self.assertEqual(bench["warmup_runs"], 2)
        self.assertEqual(len(bench["prefill"]["tok_per_s"]), 2, "warm-up runs are in no figure")
        self.assertEqual(len(bench["decode"]["tok_per_s"]), 2)
        ran = json.loads(waste("run", self.model, "--ids", " ".join(map(str, ids[:8])), "-n", "6", "--ignore-eos",
                               "--temp", "0", "--json", check=0).stdout)
        self.assertEqual(bench["generated_ids"], ran["tokens"], "bench's prompt is the file's first 8 ids")
        random_prompt = json.loads(waste("bench", self.model, "--prompt", "8", "-n", "2", "--runs", "1", "--json",
                                         check=0).stdout)
        self.assertEqual(random_prompt["prompt_ids"], "random, seed 1")
        self.assertEqual(random_prompt["warmup_runs"], 1)
        cold = json.loads(waste("bench", self.model, "--prompt", "8", "-n", "2", "--runs", "1", "--no-warm", "--json",
                                check=0).stdout)
        self.assertEqual(cold["warmup_runs"], 0, "a cold measurement stays cold")
        short = waste("bench", self.model, "--prompt", "11", "--prompt-ids", path, "--json", check=1)
        self.assertIn(f"{path} holds 10 ids; --prompt 11 wants that many".encode(), short.stderr)
        bad = os.path.join(self.tmp, "bad-prompt-ids.txt")
        with open(bad, "w") as f:
            f.write("3 14 x\n")
        refused = waste("bench", self.model, "--prompt", "2", "--prompt-ids", bad, "--json", check=1)
        self.assertIn(f"{bad}: 'x' is not a token id".encode(), refused.stderr)

    def test_bench_parallel_reports_batched_streams_beside_one_at_a_time(self):
        out = json.loads(waste("bench", self.model, "--parallel", "3", "--prompt", "5", "-n", "4", "--runs", "2",
                               "--json", check=0).stdout)
        self.assertEqual(out["parallel"], 3)
        self.assertEqual(len(out["aggregate_tok_per_s_runs"]), 2)
        self.assertEqual(len(out["one_at_a_time_tok_per_s_runs"]), 2)
        self.assertAlmostEqual(out["per_stream_tok_per_s"] * 3, out["aggregate_tok_per_s"], places=6)
        # tiny: 3 MoE layers (the first is dense), 8 experts top-2. A batched
        # step looks up the distinct experts of 3 tokens a layer (2 to 6);
        # one at a time looks up each token's 2 a layer: 3 x 2 x 3 = 18.
        self.assertEqual(out["experts_per_step_one_at_a_time"], 18)
        self.assertGreaterEqual(out["distinct_experts_per_step"], 6)
        self.assertLessEqual(out["distinct_experts_per_step"], 18)
        self.assertAlmostEqual(out["union_bound_experts_per_step"], 3 * 8 * (1 - (1 - 2 / 8) ** 3))
        for key in ("bytes_read_per_token", "bytes_read_per_token_one_at_a_time", "gain", "io_wait_ms_per_step"):
            self.assertIn(key, out)
        refused = waste("bench", self.model, "--parallel", "0", check=2)
        self.assertIn(b"--parallel", refused.stderr)

    def test_a_bad_decode_id_names_its_option(self):
        # a usage error (exit 2) naming eval's --decode-ids, not --ids (it said --ids)
        refused = waste("eval", self.model, "--ids", "3 14", "--decode-ids", "15 y", check=2)
        self.assertIn(b"--decode-ids: 'y' is not a token id", refused.stderr)

    def test_help_lists_every_option_with_its_default(self):
        top = waste("--help", check=0).stdout.decode()
        for command in ("run", "chat", "eval", "tokenize", "bench", "info", "plan", "synth"):
            self.assertIn(command, top)
        for command in ("run", "chat"):
            text = waste(command, "--help", check=0).stdout.decode()
            for option in ("--budget", "--ctx", "-n", "--temp", "--top-p", "--top-k", "--min-p", "--seed", "--stop",
                           "--system", "--raw", "--threads", "--verify", "-q", "--learn"):
                self.assertIn(option, text, f"{command} --help lacks {option}")
            for option, default in (("--temp", "the model's: its generation_config.json, else 0.8"),
                                    ("--top-p", "the model's, else 0.95"), ("--top-k", "the model's, else 0"),
                                    ("--min-p", "the model's, else 0"),
                                    ("--seed", "a fresh one"), ("--ctx", "4096"), ("--threads", "0"), ("--chunk", "the plan's")):
                line = next(l for l in text.splitlines() if option + " " in l or l.strip().startswith(option))
                self.assertRegex(line, r"=" + default + r"(\.0+)?(\s|$)", f"{command}: {line!r} shows no default")

    def test_every_value_option_of_every_command_shows_its_default(self):
        # CLI11 prints a value option as "--name TYPE=default"; a bare "--name
        # TYPE" is an option whose default the user cannot see. Flags (no TYPE)
        # are off unless given. Positional arguments are listed apart.
        option_line = re.compile(r"^\s+(?:-\w, )?(--[\w-]+)(?:,\S+)? ([A-Z]+)\b(.*)$")
        top = waste("--help", check=0).stdout.decode()
        commands = re.findall(r"^\s{2}([a-z]+)\s", re.split(r"^subcommands:", top, flags=re.M | re.I)[-1], re.M)
        self.assertGreaterEqual(len(commands), 14, top)
        for command in commands + [None]:
            if command == "serve" and os.environ.get("WASTE_CLI_WITHOUT_SERVER") == "1":
                # a build without waste-serve (the arm64 cross build, scripts/test_arm64.sh):
                # `waste serve` refuses cleanly, naming what is missing
                proc = waste("serve", "--help", check=1)
                self.assertIn(b"waste-serve", proc.stderr)
                continue
            text = waste(*([command] if command else []), "--help", check=0).stdout.decode()
            section = re.split(r"^subcommands:", re.split(r"^options:", text, flags=re.M | re.I)[-1], flags=re.M | re.I)[0]
            for line in section.splitlines():
                m = option_line.match(line)
                if m and m.group(1) != "--help" and "REQUIRED" not in m.group(3):
                    self.assertIn("=", m.group(3), f"waste {command} --help: {line.strip()!r} shows no default")

    # ----------------------------------------------------------------- chat

    # Under Wine (the Windows build, scripts/test_windows.sh) a pty is not a
    # console: Wine's console renders its own screen onto it (cursor moves,
    # redraws), not the program's bytes, and the pty's Ctrl-C is a Unix
    # signal, not a console control event. So the typed-terminal tests run
    # natively and under qemu only; chat through a pipe runs everywhere.
    def chat_answers(self, lines, *args):
        """Drives chat on a pty through lines; returns the text shown after each line."""
        term = Terminal(["chat", self.model, "-q", "-n", "16", "--ignore-eos", "--temp", "0", *args])
        term.read_until(b"> ")
        shown = []
        for line in lines:
            term.type(line + b"\n")
            shown.append(term.read_until(b"\r\n> "))
        term.type(b"\x04")
        self.assertEqual(term.wait(), 0)
        return shown

    @unittest.skipIf(UNDER_WINE, "Wine's console is not a pty's terminal (see UNDER_WINE)")
    def test_chat_save_load_reset_continue_identically(self):
        state = os.path.join(self.tmp, "chat.wdas")
        a = self.chat_answers([b"hello there", b"/save " + state.encode(), b"and then?", b"/stats", b"/reset", b"/help"])
        self.assertIn(b"[saved", a[1])
        self.assertIn(b"context tokens held", a[3])
        self.assertIn(b"[conversation reset]", a[4])
        self.assertIn(b"/load F", a[5])
        b = self.chat_answers([b"/load " + state.encode(), b"and then?"])
        self.assertIn(b"[loaded", b[0])
        answer = lambda shown: shown.split(b"and then?\r\n", 1)[1]
        self.assertEqual(answer(a[2]), answer(b[1]), "a loaded conversation continues exactly")
        bad = os.path.join(self.tmp, "bad.wdas")
        with open(bad, "wb") as f:
            f.write(b"WDAS" + bytes(10))
        c = self.chat_answers([b"/load " + bad.encode(), b"/stats"])
        self.assertIn(b"cannot load", c[0])
        self.assertIn(b"[0 of 4096 context tokens held", c[1])

    @unittest.skipIf(UNDER_WINE, "Wine's console is not a pty's terminal (see UNDER_WINE)")
    def test_chat_ctrl_c_stops_the_answer_and_ctrl_d_quits(self):
        term = Terminal(["chat", self.model, "-q", "-n", "1000000", "--ignore-eos", "--ctx", "60000"])
        term.read_until(b"> ")
        term.type(b"go on forever\n")
        term.read_until(b"go on forever\r\n")
        deadline = time.time() + TIMEOUT
        while len(term.seen) < 40 and time.time() < deadline:   # the answer is streaming
            ready, _, _ = select.select([term.fd], [], [], 1)
            if ready:
                term.seen += os.read(term.fd, 65536)
        term.type(b"\x03")  # the terminal's VINTR: SIGINT to the chat
        term.read_until(b"[stopped]")
        term.read_until(b"> ")
        term.type(b"/stats\n")
        held = term.read_until(b"> ")
        self.assertIn(b"context tokens held", held)
        # Ctrl-C at the prompt discards the line, does not quit. Typed the
        # moment the prompt shows, many times: a Ctrl-C landing between the
        # prompt and the reader's wait once went unseen until the next key.
        for _ in range(50):
            term.type(b"\x03")
            term.read_until(b"> ")
        term.type(b"\x04")  # Ctrl-D quits
        self.assertEqual(term.wait(), 0)


if __name__ == "__main__":
    unittest.main()
