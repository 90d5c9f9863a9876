#!/usr/bin/python3
"""chat_template_ref.py - the reference rendering for
tests/chat_template_conformance.sh: each case of CASES.json rendered with
TEMPLATE by python3-jinja2 in the environment Hugging Face transformers
builds for apply_chat_template (ImmutableSandboxedEnvironment with
trim_blocks, lstrip_blocks and loop controls; its tojson, raise_exception
and strftime_now), with the variables coli gives (see
src/chat_template_jinja.c). Prints one JSON line per case, as
tests/chat_jinja_render does: {"text": ...} or {"error": ...}. Messages are
given as coli gives them: content "" when absent, tool-call arguments as a
mapping, or as JSON text where the template fails with a mapping.
usage: chat_template_ref.py TEMPLATE CASES.json"""
import json
import sys
from datetime import datetime

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment


def raise_exception(message):
    raise jinja2.exceptions.TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    # as transformers overrides it: no HTML escaping, json.dumps' options
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def strftime_now(fmt):
    return datetime.now().strftime(fmt)


def environment():
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def message(m, args_text):
    role = "system" if m["role"] == "developer" else m["role"]
    out = {"role": role, "content": m.get("content") or ""}
    if m.get("reasoning_content") is not None:
        out["reasoning_content"] = m["reasoning_content"]
    if m.get("tool_calls") is not None:
        calls = json.loads(json.dumps(m["tool_calls"]))
        for c in calls:
            f = c.get("function")
            if not isinstance(f, dict) or "arguments" not in f:
                continue
            a = f["arguments"]
            if args_text and not isinstance(a, str):
                f["arguments"] = json.dumps(a, ensure_ascii=False)
            elif not args_text and isinstance(a, str):
                f["arguments"] = json.loads(a) if a else {}
        out["tool_calls"] = calls
    for k in ("tool_call_id", "name"):
        if m.get(k) is not None:
            out[k] = m[k]
    return out


def render_once(template, case, args_text):
    variables = dict(case.get("chat_template_kwargs") or {})
    variables.update({
        "messages": [message(m, args_text) for m in case["messages"]],
        "tools": case.get("tools"),
        "documents": None,
        "add_generation_prompt": case.get("add_generation_prompt", True),
    })
    for k in ("bos_token", "eos_token"):
        if case.get(k):
            variables[k] = case[k]
    return template.render(**variables)


def render(template, case):
    """Arguments as a mapping; a template that fails with them is given
    the JSON text instead (what coli does, see src/chat_template_jinja.c)."""
    try:
        return {"text": render_once(template, case, False)}
    except Exception as e:  # the template's own errors are compared as errors
        if not any(m.get("tool_calls") for m in case["messages"]):
            return {"error": str(e)}
        try:
            return {"text": render_once(template, case, True)}
        except Exception:
            return {"error": str(e)}


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        template = environment().from_string(f.read())
    with open(sys.argv[2], encoding="utf-8") as f:
        cases = json.load(f)
    for case in cases:
        print(json.dumps(render(template, case), ensure_ascii=True, separators=(",", ":")))


if __name__ == "__main__":
    main()
