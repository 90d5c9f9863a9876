#!/usr/bin/python3
"""chat_jinja_diff.py - coli's Jinja interpreter against python3-jinja2 in
Hugging Face's environment on generated templates: the typical template
expressions of tests/templates/expressions.txt (one template a line:
filters, tests, methods, operators, str() of values) and 400 random mixes
of text (spaces, tabs, newlines) and if/for/set/output/comment/raw tags
with -/+ whitespace markers (trim_blocks and lstrip_blocks at work).
Fixed seed: a failure is the same on every run.
usage: chat_jinja_diff.py RENDER EXPRESSIONS TMPDIR
(RENDER: the built tests/chat_jinja_render)"""
import importlib.util
import json
import os
import random
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("ref", os.path.join(here, "chat_template_ref.py"))
ref = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ref)

TEXTS = ["", " ", "  ", "\t", "\n", " \n", "\n  ", "a", " a ", "\n\n", "x\n  ", "  \t\n\t "]


def random_template(rnd):
    def sign():
        return rnd.choice(["", "-", "+"])

    def dash():
        return rnd.choice(["", "-"])
    parts, open_blocks = [], []
    for _ in range(rnd.randint(1, 8)):
        parts.append(rnd.choice(TEXTS))
        c = rnd.random()
        if c < 0.25 and len(open_blocks) < 3:
            kind = rnd.choice(["if", "for"])
            head = "if true" if kind == "if" else "for i in [1, 2]"
            parts.append("{%" + sign() + " " + head + " " + sign() + "%}")
            open_blocks.append(kind)
        elif c < 0.45 and open_blocks:
            parts.append("{%" + sign() + " end" + open_blocks.pop() + " " + sign() + "%}")
        else:
            k = rnd.choice(["out", "com", "set", "raw"])
            if k == "out":
                parts.append("{{" + dash() + " 'v' " + dash() + "}}")
            elif k == "com":
                parts.append("{#" + sign() + " c " + sign() + "#}")
            elif k == "set":
                parts.append("{%" + sign() + " set q = 1 " + sign() + "%}")
            else:
                parts.append("{%" + sign() + " raw " + dash() + "%} r {%" + dash() + " endraw " + dash() + "%}")
    while open_blocks:
        parts.append("{% end" + open_blocks.pop() + " %}")
    parts.append(rnd.choice(TEXTS))
    return "".join(parts)


def main():
    render, expressions, tmp = sys.argv[1], sys.argv[2], sys.argv[3]
    with open(expressions, encoding="utf-8") as f:
        templates = [line.rstrip("\n") for line in f if line.strip()]
    rnd = random.Random(7)
    templates += [random_template(rnd) for _ in range(400)]
    case = {"messages": [{"role": "system", "content": " sys "}, {"role": "assistant", "content": "a"},
                         {"role": "user", "content": "u"}],
            "tools": [{"type": "function", "function": {"name": "f", "parameters": {
                "type": "object", "properties": {"\u00e9": {"type": "string"}}}}}],
            "add_generation_prompt": True}
    env = ref.environment()
    cases_path = os.path.join(tmp, "diff_case.json")
    with open(cases_path, "w", encoding="utf-8") as f:
        json.dump([case], f)
    bad = 0
    path = os.path.join(tmp, "diff.jinja")
    for i, t in enumerate(templates):
        with open(path, "w", encoding="utf-8") as f:
            f.write(t)
        out = subprocess.run([render, path, cases_path], capture_output=True, text=True, check=False)
        got = json.loads(out.stdout) if out.returncode == 0 else {"error": "exit %d" % out.returncode}
        try:
            want = ref.render(env.from_string(t), case)
        except Exception as e:  # a syntax error: coli must refuse it too
            want = {"error": str(e)}
        if got != want and not ("error" in got and "error" in want):
            bad += 1
            if bad <= 5:
                print("FAIL: template %d %r\n  reference %r\n  coli      %r" % (i, t, want, got))
    print("chat_jinja_diff: %d templates, %d differ" % (len(templates), bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
