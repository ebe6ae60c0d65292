#!/usr/bin/env python3
"""ci_failure_summary.py — the failed tests of ctest runs, said briefly.

CI keeps only the tail of what `scripts/test.sh` prints, and ctest's own
output of a failed test scrolls far above it. test.sh calls this on a
failure, last, with each preset's Testing/Temporary/LastTest.log: for every
test there that did not pass, its name, its outcome and the lines of its
output that say why (assertion, error and failure lines, and the line after
each), at most a few per test.

    ci_failure_summary.py LastTest.log [LastTest.log ...]
    ci_failure_summary.py --skipped LastTest.log [...]

With --skipped it lists instead every test that skipped, with the reason it
gave (GoogleTest's "Skipped" message): test.sh prints that list at the end of
every run, passed or not, so no skip goes unseen.
"""
import re
import sys

WHY = re.compile(r"not ok|Failure|FAILED|[Ee]rror|assert|expected|actual|Timeout|Sanitizer|runtime error|Exception")
MAX_LINES = 8


def blocks(text):
    """(name, output lines, outcome) of each test in a LastTest.log."""
    for match in re.finditer(r"^\d+/\d+ Testing: (.+?)\n(.*?)^Test time =.*?\n-+\n(.*?)\n", text, re.S | re.M):
        name, body, outcome = match.group(1), match.group(2), match.group(3).strip()
        output = body.split("Output:\n" + "-" * 58 + "\n", 1)[-1].replace("<end of output>", "")
        yield name, output.splitlines(), outcome


def skip_reason(lines):
    """The message after GoogleTest's 'file:line: Skipped' line, or ''."""
    for i, line in enumerate(lines):
        if line.endswith(": Skipped"):
            reason = []
            for following in lines[i + 1:]:
                if following.startswith("[  SKIPPED ]"):
                    break
                reason.append(following.strip())
            return " ".join(r for r in reason if r)
    return ""


def tests_of(paths):
    """(path, name, output lines, outcome) of every test in the logs that can be read."""
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        for name, lines, outcome in blocks(text):
            yield path, name, lines, outcome


def list_skipped(paths):
    count = 0
    for path, name, lines, outcome in tests_of(paths):
        if "Skip regular expression found" in outcome or any(l.startswith("[  SKIPPED ]") for l in lines):
            count += 1
            print(f"-- skipped: {name.split('  #')[0]} ({path}): {skip_reason(lines)[:300] or 'no reason given'}")
    print(f"== {count} test{'' if count == 1 else 's'} skipped")


def main(paths):
    for path, name, lines, outcome in tests_of(paths):
        if outcome.startswith("Test Pass"):  # passed, or skipped ("Test Pass Reason:")
            continue
        print(f"-- {name}: {outcome} ({path})")
        picked = []
        for i, line in enumerate(lines):
            if WHY.search(line):
                picked += [j for j in (i, i + 1) if j < len(lines) and j not in picked]
            if len(picked) >= MAX_LINES:
                break
        shown = [lines[j] for j in picked] or lines[-MAX_LINES:]
        for line in shown[:MAX_LINES]:
            print("   " + line[:300])


if __name__ == "__main__":
    if sys.argv[1:2] == ["--skipped"]:
        list_skipped(sys.argv[2:])
    else:
        main(sys.argv[1:])
