#!/usr/bin/env python3
"""Fuzz the schema grammar (tests/grammar_test) over random schemas.

Two claims, checked with an independent validator (python3-jsonschema):
  1. every byte the matcher allows keeps the prefix extendable to a valid
     document: random walks that only take allowed bytes are completed and
     every completed document validates (a walk that cannot be completed
     fails the test);
  2. no valid document is unreachable: random documents valid under the
     schema (made here, independently, and checked by jsonschema first),
     written compactly and with spaces, are all accepted (keys and enum
     values as raw UTF-8: the documented limits).
Usage: grammar_fuzz_schemas.py GRAMMAR_TEST N_SCHEMAS SEED
"""
import json
import os
import random
import subprocess
import sys
import tempfile

import jsonschema

PATTERNS = [
    ("^[A-Z]{2}-[0-9]{3}$", lambda r: "".join(r.choice("ABCXYZ") for _ in range(2)) + "-" +
     "".join(r.choice("0123456789") for _ in range(3))),
    ("^(red|green|blue)+$", lambda r: "".join(r.choice(["red", "green", "blue"]) for _ in range(r.randint(1, 3)))),
    ("ab?c", lambda r: r.choice(["x", ""]) + r.choice(["ac", "abc"]) + r.choice(["", "zz"])),
    ("^\\d+(\\.\\d{1,2})?$", lambda r: str(r.randint(0, 999)) + r.choice(["", ".5", ".25"])),
]
FORMATS = {
    "date": lambda r: "%04d-%02d-%02d" % (r.randint(1900, 2100), r.randint(1, 12), r.randint(1, 28)),
    "date-time": lambda r: "%04d-%02d-%02dT%02d:%02d:%02dZ" % (r.randint(1900, 2100), r.randint(1, 12),
                                                               r.randint(1, 28), r.randint(0, 23),
                                                               r.randint(0, 59), r.randint(0, 59)),
    "uuid": lambda r: "%08x-%04x-%04x-%04x-%012x" % (r.getrandbits(32), r.getrandbits(16), r.getrandbits(16),
                                                    r.getrandbits(16), r.getrandbits(48)),
}


def gen_schema(r, depth, defs):
    k = r.choice(["object", "array", "string", "number", "integer", "boolean", "null", "enum", "anyOf",
                  "ref", "typelist"] if depth < 3 else ["string", "integer", "boolean", "enum", "number"])
    if k == "object":
        props = {}
        for i in range(r.randint(0, 4)):
            props["k%d_%s" % (i, r.choice(["a", "name", "é", "x y"]))] = gen_schema(r, depth + 1, defs)
        s = {"type": "object", "properties": props}
        mode = r.choice(["false", "false", "schema", "absent"])
        if mode == "false":
            s["additionalProperties"] = False
            s["required"] = [p for p in props if r.random() < 0.6]
        elif mode == "schema":
            s["additionalProperties"] = {"type": "integer"}
        return s
    if k == "array":
        s = {"type": "array", "items": gen_schema(r, depth + 1, defs)}
        if r.random() < 0.5:
            s["minItems"] = r.randint(0, 2)
        if r.random() < 0.5:
            s["maxItems"] = s.get("minItems", 0) + r.randint(0, 3)
        if r.random() < 0.3:
            s["prefixItems"] = [gen_schema(r, depth + 1, defs)]
        return s
    if k == "string":
        s = {"type": "string"}
        c = r.random()
        if c < 0.3:
            s["minLength"] = r.randint(0, 3)
            s["maxLength"] = s["minLength"] + r.randint(0, 8)
        elif c < 0.5:
            s["pattern"] = r.choice(PATTERNS)[0]
        elif c < 0.65:
            s["format"] = r.choice(sorted(FORMATS))
        return s
    if k == "enum":
        # enum values are matched in their compact form: scalars here
        vals = r.sample(["a", "b c", "ü", 1, 12, 2.5, True, None, False], r.randint(1, 4))
        return {"enum": vals} if len(vals) > 1 else {"const": vals[0]}
    if k == "anyOf":
        return {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "integer"},
                          {"type": "object", "properties": {"v": gen_schema(r, depth + 1, defs)},
                           "required": ["v"], "additionalProperties": False}][: r.randint(2, 3)]}
    if k == "ref":
        name = "d%d" % len(defs)
        defs[name] = {}  # reserved before the recursion names its own
        defs[name] = gen_schema(r, depth + 1, defs)
        return {"$ref": "#/$defs/" + name}
    if k == "typelist":
        return {"type": ["string", "null"], "maxLength": 4}
    if k == "integer" and r.random() < 0.5:
        lo = r.choice([-1000, -7, 0, 1, 99])
        return {"type": "integer", "minimum": lo, "maximum": lo + r.choice([0, 5, 1000, 10**6])}
    if k == "number" and r.random() < 0.5:
        lo = r.choice([-2.5, -1, 0, 0.1, 3.75])
        hi = lo + r.choice([0, 0.5, 1, 100])
        s = {"type": "number", "minimum": lo, "maximum": hi}
        if hi > lo and r.random() < 0.5:
            s = {"type": "number", "exclusiveMinimum": lo, "exclusiveMaximum": hi}
        return s
    return {"type": k}


def bounded_number(r, s):
    """A value within a number's bounds, in the subset the grammar writes
    for a bounded number (plain decimal, at most 15 digits)."""
    lo = s.get("minimum", s.get("exclusiveMinimum"))
    hi = s.get("maximum", s.get("exclusiveMaximum"))
    cands = [lo, hi, (lo + hi) / 2, lo + (hi - lo) * 0.125, round(r.uniform(lo, hi), r.randint(0, 4))]
    ok = [v for v in cands if "e" not in repr(v) and sum(ch.isdigit() for ch in repr(v)) <= 15 and
          (lo < v < hi if "exclusiveMinimum" in s else lo <= v <= hi)]
    return r.choice(ok) if ok else None


def gen_value(r, s, root):
    """A random value valid under s (None when s is unsatisfiable)."""
    if "$ref" in s:
        return gen_value(r, root["$defs"][s["$ref"].split("/")[-1]], root)
    if "enum" in s:
        return r.choice(s["enum"])
    if "const" in s:
        return s["const"]
    if "anyOf" in s:
        return gen_value(r, r.choice(s["anyOf"]), root)
    t = s.get("type")
    if isinstance(t, list):
        t = r.choice(t)
    if t == "object":
        out = {}
        for p, ps in s.get("properties", {}).items():
            if p in s.get("required", []) or r.random() < 0.5:
                out[p] = gen_value(r, ps, root)
        extra = s.get("additionalProperties", True)
        if extra is not False and r.random() < 0.5:
            out["extra_" + r.choice(["q", "ж"])] = gen_value(r, extra if isinstance(extra, dict) else {}, root)
        items = list(out.items())
        r.shuffle(items)
        return dict(items)
    if t == "array":
        lo = s.get("minItems", 0)
        hi = s.get("maxItems", lo + 3)
        n = r.randint(lo, hi)
        pre = s.get("prefixItems", [])
        return [gen_value(r, pre[i] if i < len(pre) else s["items"], root) for i in range(n)]
    if t == "string":
        if "pattern" in s:
            return dict(PATTERNS)[s["pattern"]](r)
        if "format" in s:
            return FORMATS[s["format"]](r)
        lo = s.get("minLength", 0)
        hi = s.get("maxLength", lo + 6)
        return "".join(r.choice("ab \"\\\n/éž漢😀") for _ in range(r.randint(lo, hi)))
    if t == "number":
        if "minimum" in s or "exclusiveMinimum" in s:
            return bounded_number(r, s)
        return r.choice([0, -3, 2.5, 1e-7, -0.125, 123456789])
    if t == "integer":
        return r.randint(s.get("minimum", -10**9), s.get("maximum", 10**9))
    if t == "boolean":
        return r.random() < 0.5
    if t == "null":
        return None
    return r.choice([1, "x", None, [True], {"a": 2}])


def run(tool, args, stdin=None):
    p = subprocess.run([tool] + args, input=stdin, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit("FAIL: %s %s exited %d: %s%s" % (tool, args, p.returncode, p.stdout, p.stderr))
    return p.stdout


def main():
    tool, n_schemas, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    r = random.Random(seed)
    fails = walks = docs = 0
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(n_schemas):
            defs = {}
            schema = gen_schema(r, 0, defs)
            if defs:
                schema = dict(schema, **{"$defs": defs}) \
                    if "$ref" not in schema else {"$defs": defs, "anyOf": [schema]}
            path = os.path.join(tmp, "s%d.json" % i)
            with open(path, "w") as f:
                json.dump(schema, f)
            v = jsonschema.Draft202012Validator(schema, format_checker=checker)
            for line in run(tool, ["walk", path, "6", str(seed * 1000 + i)]).split("\0")[:-1]:
                walks += 1
                if line.startswith("STUCK"):
                    print("FAIL schema %s: a walk could not be completed: %s" % (json.dumps(schema), line[:200]))
                    fails += 1
                    continue
                try:
                    v.validate(json.loads(line))
                except Exception as e:  # noqa: BLE001 - any parse/validation error is a failure
                    print("FAIL schema %s: walk produced %r: %s" % (json.dumps(schema), line[:300], str(e)[:200]))
                    fails += 1
            texts = []
            for _ in range(8):
                val = gen_value(r, schema, schema)
                v.validate(val)  # the generator itself must be right
                texts.append(json.dumps(val, separators=(",", ":"), ensure_ascii=False))
                # keys and enum values are matched as written (raw UTF-8, no
                # \u escapes): see coli-generate(1)
                texts.append(json.dumps(val, separators=(", ", ": "), ensure_ascii=False))
            got = run(tool, ["check", path], "\n".join(texts) + "\n").split()
            for t, g in zip(texts, got):
                docs += 1
                if g != "1":
                    print("FAIL schema %s: valid document refused: %s" % (json.dumps(schema), t[:300]))
                    fails += 1
    print("%d schemas, %d walks, %d valid documents, %d failures" % (n_schemas, walks, docs, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
