// chat.mjs - reference side of the chat template test: renders a set of
// conversations with the tokenizer_config.json's own Jinja template
// (@huggingface/jinja, what transformers.js uses) and compares with
// `coli tokenize DIR --chat FILE` (text, and ids against the reference
// tokenizer on the rendered text).
//   node chat.mjs check DIR COLI TMPDIR [MODEL_TYPE]
import { Template } from "@huggingface/jinja";
import { Tokenizer } from "@huggingface/tokenizers";
import { spawnSync } from "node:child_process";
import fs from "node:fs";

const weather = { type: "function", function: { name: "get_weather", description: "Weather for a city",
  parameters: { type: "object", properties: { city: { type: "string", description: "City name, e.g. Paris" },
    days: { type: "integer" } }, required: ["city"] } } };
const search = { type: "function", function: { name: "search", description: "Search the web \"quoted\" / ünïcödé",
  parameters: { type: "object", properties: { q: { type: "string" } } } } };
const call = (id, name, args) => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } });

// Not covered on purpose: leading spaces/tabs before an assistant answer in
// ChatML. @huggingface/jinja's lstrip('\n')/rstrip('\n')/strip('\n') ignore
// their argument and strip all whitespace; coli follows Python's Jinja (the
// one the models were trained with), which strips only the given chars.
// tool-call assistant turns: content null, as OpenAI clients send them.
export const CONVERSATIONS = [
  { messages: [{ role: "user", content: "Hello!" }] },
  { messages: [{ role: "system", content: "You are terse." }, { role: "user", content: "2+2?" }] },
  { messages: [{ role: "system", content: "Sys A" }, { role: "system", content: "Sys B" }, { role: "user", content: "hi" }] },
  { messages: [{ role: "user", content: "Hi" }, { role: "assistant", content: "Hello! How can I help?" },
    { role: "user", content: "Tell me a joke.\nTwo lines." }] },
  { messages: [{ role: "user", content: "  padded  " }, { role: "assistant", content: "spaced answer \n" }], add_generation_prompt: false },
  { messages: [{ role: "developer", content: "Dev rules" }, { role: "user", content: "你好，世界 😀" }] },
  { messages: [{ role: "user", content: "Think first" },
    { role: "assistant", content: "<think>\nreasoning here\n</think>\n\nThe answer." }, { role: "user", content: "again" }] },
  { messages: [{ role: "user", content: "What's the weather in Paris?" },
    { role: "assistant", content: null, tool_calls: [call("c1", "get_weather", { city: "Paris" })] },
    { role: "tool", tool_call_id: "c1", name: "get_weather", content: "{\"temp\": 21}" }], tools: [weather] },
  { messages: [{ role: "system", content: "Use tools." }, { role: "user", content: "Paris and Rome?" },
    { role: "assistant", content: null, tool_calls: [call("a", "get_weather", { city: "Paris" }), call("b", "get_weather", { city: "Rome", days: 2 })] },
    { role: "tool", tool_call_id: "a", content: "sunny" }, { role: "tool", tool_call_id: "b", content: "rain" },
    { role: "assistant", content: "Paris is sunny, Rome rainy." }, { role: "user", content: "thanks" }], tools: [weather, search] },
  { messages: [{ role: "user", content: "q" }, { role: "assistant", content: "a" }], add_generation_prompt: false },
  { messages: [{ role: "user", content: "Weather?" },
    { role: "assistant", content: "Let me check.", tool_calls: [call("z", "get_weather", { city: "Oslo", days: 1 })] },
    { role: "tool", tool_call_id: "z", content: "snow" }, { role: "assistant", content: "It snows." },
    { role: "user", content: "ok" }], tools: [weather] },
];

// The messages as coli gives them to a checkpoint's template (see
// src/chat_template_jinja.c): developer as system, absent content as "",
// tool-call arguments as a mapping, or as the JSON text sent where the
// template fails with a mapping (DeepSeek-V3 concatenates them).
function forColi(conv, argsAsText) {
  const c = structuredClone(conv);
  for (const m of c.messages) {
    if (m.role === "developer") m.role = "system";
    if (m.content === null || m.content === undefined) m.content = "";
    if (m.tool_calls && !argsAsText)
      for (const tc of m.tool_calls) tc.function.arguments = JSON.parse(tc.function.arguments);
  }
  return c;
}

function tokenOf(cfg, key) {
  const v = cfg[key];
  return typeof v === "string" ? v : v && v.content ? v.content : undefined;
}

const [cmd, dir, coli, tmp, modelType] = process.argv.slice(2);
if (cmd !== "check") {
  console.error("usage: node chat.mjs check DIR COLI TMPDIR [MODEL_TYPE]");
  process.exit(2);
}
const cfg = JSON.parse(fs.readFileSync(`${dir}/tokenizer_config.json`, "utf8"));
const tj = JSON.parse(fs.readFileSync(`${dir}/tokenizer.json`, "utf8"));
const tok = new Tokenizer(tj, cfg);
const tpl = new Template(cfg.chat_template);
const family = cfg.chat_template.includes("<｜User｜>") ? "deepseek" : cfg.chat_template.includes("[gMASK]") ? "glm" : "other";
const checkIds = family !== "glm"; // the GLM template is rendered with another family's tokenizer
let bad = 0;
// all conversations in one coli run (one output line each)
const convs = CONVERSATIONS.map((c0) => forColi(c0, false));
const f = `${tmp}/chat.json`;
// coli reads OpenAI-shaped messages: arguments stay JSON text
fs.writeFileSync(f, JSON.stringify(CONVERSATIONS.map((c0, i) => ({ messages: c0.messages,
  tools: convs[i].tools, add_generation_prompt: convs[i].add_generation_prompt ?? true }))));
const args = ["tokenize", dir, "--chat", f];
if (modelType) args.push("--model-type", modelType);
const r = spawnSync(coli, args, { encoding: "utf8" });
if (r.status !== 0) {
  console.error(`coli exited ${r.status}: ${r.stderr.trim()}`);
  process.exit(1);
}
const outs = r.stdout.split("\n").filter(Boolean).map((l) => JSON.parse(l));
convs.forEach((conv, i) => {
  const agp = conv.add_generation_prompt ?? true;
  const vars = (c) => ({ messages: c.messages, tools: c.tools, add_generation_prompt: agp,
    bos_token: tokenOf(cfg, "bos_token") ?? "", eos_token: tokenOf(cfg, "eos_token") ?? "" });
  let ref;
  try {
    ref = tpl.render(vars(conv));
    // Python raises on str + dict; @huggingface/jinja writes "[object Map]"
    if (ref.includes("[object Map]")) throw new Error("str + mapping");
  } catch (e) {
    ref = tpl.render(vars(forColi(CONVERSATIONS[i], true)));
  }
  const got = outs[i] ?? { text: undefined };
  if (got.text !== ref) {
    if (++bad <= 4) console.error(`conversation ${i}: rendering differs\n  coli: ${JSON.stringify(got.text)}\n  ref:  ${JSON.stringify(ref)}`);
    return;
  }
  if (checkIds) {
    const ids = tok.encode(ref, { add_special_tokens: false }).ids;
    if (JSON.stringify(ids) !== JSON.stringify(got.ids)) {
      bad++;
      console.error(`conversation ${i}: ids differ`);
    }
  }
});
console.log(`chat ${dir.split("/").slice(-2, -1)[0] || dir}${modelType ? " as " + modelType : ""}: ${CONVERSATIONS.length} conversations, ${bad} mismatches`);
process.exit(bad ? 1 : 0);
