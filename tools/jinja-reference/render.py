#!/usr/bin/python3
"""render.py — the reference for WASTE's chat-template engine: Debian's
python3-jinja2 set up exactly as Hugging Face transformers sets it up
(ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loopcontrols,
raise_exception and strftime_now globals, transformers' tojson filter).

Reads one JSON document from stdin: {"now": UNIX_SECONDS, "jobs": [{"id":
..., "template": SOURCE, "context": {...}}, ...]} and writes one JSON
document to stdout: {"ID": {"output": TEXT} or {"error": {"raised": bool,
"type": NAME, "message": TEXT}}}. "now" fixes strftime_now (UTC) so both
sides render the same date. One process renders every job: the test starts
it once.
"""
import datetime
import json
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


class Raised(Exception):
    pass


def make_environment(now):
    # transformers/utils/chat_template_utils.py, _compile_jinja_template
    def raise_exception(message):
        raise Raised(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.datetime.fromtimestamp(now, tz=datetime.timezone.utc).strftime(format)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def main():
    request = json.load(sys.stdin)
    env = make_environment(request["now"])
    compiled = {}
    results = {}
    for job in request["jobs"]:
        try:
            source = job["template"]
            if source not in compiled:
                compiled[source] = env.from_string(source)
            results[job["id"]] = {"output": compiled[source].render(**job["context"])}
        except Raised as error:
            results[job["id"]] = {"error": {"raised": True, "type": "TemplateError", "message": str(error.args[0])}}
        except Exception as error:  # every other failure: the engine must fail too
            results[job["id"]] = {"error": {"raised": False, "type": type(error).__name__, "message": str(error)}}
    json.dump(results, sys.stdout, ensure_ascii=False)


if __name__ == "__main__":
    main()
