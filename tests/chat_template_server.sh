#!/bin/sh
# The checkpoint's own template through `coli convert` and `coli serve`: a
# tiny model whose chat_template.jinja (a test template that reports what
# it was given through raise_exception) is carried into the container by
# the converter; the server renders the conversation with it (the prompt's
# token count equals the rendered text's), passes chat_template_kwargs and
# reasoning_content, gives tool-call arguments as a mapping, and answers a
# template's error with a 400 carrying the template's message.
. "${top_srcdir:-.}/tests/server_common.sh"
PYTHON3=${PYTHON3:-/usr/bin/python3}
$PYTHON3 -c 'import httpx' 2>/dev/null || test_skip "python3-httpx missing"
srv_tmp
"$COLI" synth "$SRV_TMP/hf" --preset tiny >/dev/null 2>"$SRV_TMP/synth.log" || srv_fail "coli synth failed"
cat >"$SRV_TMP/hf/chat_template.jinja" <<'JINJA'
{%- if clear_thinking is defined -%}
  {{ raise_exception('kwargs: clear_thinking=' ~ clear_thinking ~ ' enable_thinking=' ~ enable_thinking) }}
{%- endif -%}
{%- for m in messages -%}
  {%- if m.reasoning_content -%}{{ raise_exception('reasoning: ' ~ m.reasoning_content) }}{%- endif -%}
  {%- for tc in m.tool_calls or [] -%}
    {%- if tc.function.arguments is mapping -%}
      {{ raise_exception('arguments: ' ~ tc.function.arguments | tojson) }}
    {%- else -%}
      {{ raise_exception('arguments as text') }}
    {%- endif -%}
  {%- endfor -%}
  <|{{ m.role }}|>{{ m.content | trim }}
{%- endfor -%}
{%- if add_generation_prompt %}<|assistant|>{% endif %}
JINJA
"$COLI" convert "$SRV_TMP/hf" "$SRV_TMP/model" --quant f32 >/dev/null 2>"$SRV_TMP/convert.log" || srv_fail "coli convert failed"
cmp -s "$SRV_TMP/hf/chat_template.jinja" "$SRV_TMP/model/tokenizer/chat_template.jinja" ||
	srv_fail "coli convert did not carry chat_template.jinja into the container"
SRV_MODEL="$SRV_TMP/model"
n=$("$COLI" tokenize "$SRV_MODEL" '<|system|>Be brief.<|user|>hi there<|assistant|>' |
	$PYTHON3 -c 'import json,sys; print(len(json.load(sys.stdin)["ids"]))') || srv_fail "coli tokenize"
srv_start main --ctx 512
$PYTHON3 - "$BASE" "$n" <<'PY' || { tail -20 "$SRV_TMP/main.log"; exit 1; }
import httpx, sys
base, n = sys.argv[1], int(sys.argv[2])
c = httpx.Client(base_url=base, timeout=60)

def chat(messages, **extra):
    return c.post("/v1/chat/completions", json=dict(model="model", messages=messages, max_tokens=1, **extra))

r = chat([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "  hi there \n"}])
assert r.status_code == 200, r.text
assert r.json()["usage"]["prompt_tokens"] == n, (r.json()["usage"], n)

r = chat([{"role": "user", "content": "x"}], chat_template_kwargs={"clear_thinking": False, "enable_thinking": True})
assert r.status_code == 400, r.text
assert "kwargs: clear_thinking=False enable_thinking=True" in r.json()["error"]["message"], r.text

r = chat([{"role": "user", "content": "x"}, {"role": "assistant", "content": "y", "reasoning_content": "because"},
          {"role": "user", "content": "z"}])
assert r.status_code == 400 and "reasoning: because" in r.json()["error"]["message"], r.text

r = chat([{"role": "user", "content": "x"},
          {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
           "function": {"name": "f", "arguments": "{\"city\": \"Zürich\", \"n\": [1, 2.5]}"}}]},
          {"role": "tool", "tool_call_id": "c1", "content": "ok"}])
assert r.status_code == 400, r.text
assert 'arguments: {"city": "Zürich", "n": [1, 2.5]}' in r.json()["error"]["message"], r.text
print("chat_template_server: 4 requests as expected")
PY
srv_stop
