#!/usr/bin/env python3
"""Conformance of constrained decoding on the default model.

Each of the schemas below (nested objects, arrays of objects, enums, anyOf,
$ref, optional fields, formats, patterns; extra keys are not allowed, as
with OpenAI's strict mode, so that a document fits the token budget: open
objects are covered by tests/grammar_fuzz_schemas.py) is given to `coli generate
--json-schema` at temperature 0.8 with several seeds; every output must
parse and validate under python3-jsonschema (an independent validator,
formats checked). The same prompts without the constraint are run too: the
unconstrained model must fail most of them, which shows the mask does the
work. Usage: grammar_conformance_check.py COLI N_SCHEMAS SEEDS...
"""
import json
import os
import subprocess
import sys
import tempfile

import jsonschema

S = {"type": "string", "maxLength": 40}
I = {"type": "integer"}
N = {"type": "number"}
B = {"type": "boolean"}


def obj(props, req=None, extra=False):
    s = {"type": "object", "properties": props, "additionalProperties": extra}
    s["required"] = list(props) if req is None else req
    return s


SCHEMAS = [
    obj({"name": S, "age": I}),
    obj({"fortune": S, "lucky_number": I, "language": {"enum": ["en", "de", "es", "it", "pt", "ru", "zh"]}}),
    obj({"title": S, "tags": {"type": "array", "items": S, "maxItems": 4}}),
    obj({"a": obj({"b": obj({"c": I})})}),
    {"type": "array", "items": obj({"id": I, "ok": B}), "minItems": 1, "maxItems": 3},
    obj({"kind": {"const": "fortune"}, "text": S}),
    obj({"value": {"anyOf": [I, S, {"type": "null"}]}}),
    obj({"when": {"type": "string", "format": "date"}}),
    obj({"at": {"type": "string", "format": "date-time"}}),
    obj({"id": {"type": "string", "format": "uuid"}}),
    obj({"code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2}$"}}),
    obj({"score": N, "weight": N}),
    obj({"name": S, "nick": S}, req=["name"]),
    obj({"x": I, "y": I, "z": I}, req=[]),
    {"type": "array", "items": I, "minItems": 2, "maxItems": 5},
    {"type": "array", "prefixItems": [S, I, B], "items": False, "minItems": 3},
    {"enum": ["yes", "no", "maybe"]},
    {"type": ["integer", "null"]},
    obj({"point": {"$ref": "#/$defs/pt"}, "other": {"$ref": "#/$defs/pt"}}) | {"$defs": {"pt": obj({"x": N, "y": N})}},
    {"$defs": {"node": obj({"v": I, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
                           req=["v"])}, "$ref": "#/$defs/node"},
    obj({"people": {"type": "array", "items": obj({"name": S, "langs": {"type": "array", "items": {
        "enum": ["en", "de"]}, "maxItems": 2}}), "maxItems": 3}}),
    obj({"meta": obj({"k": I, "v": {"type": "array", "items": S, "maxItems": 2}})}),
    obj({"flag": B, "note": {"type": ["string", "null"], "maxLength": 10}}),
    obj({"answer": {"oneOf": [obj({"yes": B}), obj({"count": I})]}}),
    obj({"s": {"type": "string", "minLength": 3, "maxLength": 8}}),
    obj({"matrix": {"type": "array", "items": {"type": "array", "items": I, "maxItems": 3}, "maxItems": 3}}),
    obj({"level": {"enum": [1, 2, 3]}, "mode": {"enum": ["fast", "slow", None]}}),
    obj({"fortune": obj({"text": S, "lang": {"enum": ["en", "de"]}}), "rating": I}),
    obj({"items": {"type": "array", "items": obj({"sku": {"type": "string", "pattern": "^[a-z]{2}[0-9]{3}$"},
                                                  "qty": I}), "minItems": 1, "maxItems": 2}}),
    obj({"date": {"type": "string", "format": "date"}, "amount": N, "currency": {"enum": ["EUR", "USD"]}}),
    obj({"contract": obj({"party_a": S, "party_b": S, "signed": B, "value": N}),
         "clauses": {"type": "array", "items": S, "maxItems": 3}}),
    {"anyOf": [obj({"type": {"const": "cat"}, "meow": B}), obj({"type": {"const": "dog"}, "bark": I})]},
    obj({"t": {"type": "string", "format": "time"}}),
    obj({"empty": obj({})}),
    obj({"list": {"type": "array", "items": {"anyOf": [I, B]}, "maxItems": 4}}),
    obj({"greeting": S, "polite": B}),
    obj({"n": I, "m": {"type": ["number", "boolean"]}}),
    obj({"deep": {"type": "array", "items": obj({"inner": {"type": "array", "items": obj({"v": N}),
                                                            "maxItems": 2}}), "maxItems": 2}}),
    obj({"word": {"type": "string", "pattern": "^(red|green|blue)$"}, "n": {"type": "integer"}}),
    obj({"name": S, "email": {"type": "string", "pattern": "^[a-z]{1,8}@[a-z]{1,8}\\.(com|org)$"}}),
    obj({"ok": B}),
    {"type": "string", "maxLength": 12},
    # integer bounds, enforced digit by digit (what zod's .int().min().max() emits)
    obj({"age": {"type": "integer", "minimum": 0, "maximum": 120},
         "year": {"type": "integer", "minimum": 1900, "maximum": 2100}}),
    obj({"delta": {"type": "integer", "minimum": -50, "maximum": -10},
         "pct": {"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 100}}),
    {"type": "array", "items": {"type": "integer", "minimum": 1000000}, "minItems": 1, "maxItems": 3},
    obj({"n": {"type": "integer", "minimum": -9007199254740991, "maximum": 9007199254740991},
         "k": {"type": ["integer", "null"], "minimum": 7, "maximum": 7}}),
    # number bounds, exact on the decimal text (zod's .min().max() on a number)
    obj({"p": {"type": "number", "minimum": 0, "maximum": 1},
         "temp": {"type": "number", "exclusiveMinimum": -40.5, "maximum": 60.25}}),
    {"type": "array", "items": {"type": "number", "minimum": 0.1, "exclusiveMaximum": 0.2}, "minItems": 1,
     "maxItems": 4},
]


def run(coli, schema_path, seed, constrained):
    cmd = [coli, "generate", "-p", "Tell me a fortune in English.", "--temp", "0.8", "--seed", str(seed),
           "-n", "256" if constrained else "96"]
    if constrained:
        cmd += ["--json-schema", schema_path]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit("FAIL: %s exited %d: %s" % (cmd, p.returncode, p.stderr))
    return p.stdout.rstrip("\n")


def valid(v, text):
    try:
        v.validate(json.loads(text))
        return True
    except Exception:  # noqa: BLE001 - parse or validation error
        return False


def main():
    coli, n_schemas, seeds = sys.argv[1], int(sys.argv[2]), [int(s) for s in sys.argv[3:]]
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    ok = bad = free_ok = free_n = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, schema in enumerate(SCHEMAS[:n_schemas]):
            jsonschema.Draft202012Validator.check_schema(schema)
            v = jsonschema.Draft202012Validator(schema, format_checker=checker)
            path = os.path.join(tmp, "s%d.json" % i)
            with open(path, "w") as f:
                json.dump(schema, f)
            for seed in seeds:
                out = run(coli, path, seed, True)
                if valid(v, out):
                    ok += 1
                else:
                    bad += 1
                    print("FAIL schema %d seed %d: %r" % (i, seed, out[:300]))
            free_n += 1
            free_ok += valid(v, run(coli, path, seeds[0], False))
    print("constrained: %d of %d outputs valid; unconstrained: %d of %d valid" % (ok, ok + bad, free_ok, free_n))
    if bad:
        return 1
    if free_ok * 2 > free_n:
        print("FAIL: the unconstrained model passes most schemas: the test shows nothing")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
