// tiktoken_check.mjs - the reference side of tests/tokenizer_tiktoken.sh:
// js-tiktoken (the JavaScript port of OpenAI's tiktoken) loaded with the
// same tiktoken.model, special tokens and pre-tokenizer pattern as coli.
//   node tiktoken_check.mjs gen DIR OUT.jsonl         write the corpus
//   node tiktoken_check.mjs check DIR CORPUS C_OUT    compare coli's lines
// The pattern is Kimi-K2's as written in its Python tokenizer (transcribed
// here independently of the C loader) or the config's "pat_str", made
// JavaScript-compatible: class intersections [A&&[^B]] become a lookahead,
// bare script names \p{Han} become \p{Script=Han} (what tiktoken's Rust
// regex means by them) and (?i:...) groups get explicit case classes
// (Node 20 has no inline modifiers).
import { Tiktoken } from "js-tiktoken/lite";
import fs from "node:fs";
import { makeCorpus } from "./corpus.mjs";

const KIMI = [
  "[\\p{Han}]+",
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}&&[^\\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  "\\p{N}{1,3}",
  " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*",
  "\\s*[\\r\\n]+",
  "\\s+(?!\\S)",
  "\\s+",
].join("|");

// Unicode simple case folding of the ASCII letters used in contractions
const FOLD = { s: "sSſ", k: "kKK" };
function caseless(lit) {
  return lit.replace(/[a-z]/gi, (c) => `[${FOLD[c.toLowerCase()] || c.toLowerCase() + c.toUpperCase()}]`);
}

function toJs(p) {
  p = p.replace(/\[([^\[\]]*)&&\[\^([^\[\]]*)\]\]/g, "(?:(?![$2])[$1])");
  p = p.replace(/\\([pP])\{([A-Za-z_]{3,})\}/g, (m, pp, name) => (name === "Any" ? m : `\\${pp}{Script=${name}}`));
  p = p.replace(/\(\?i:([^()]*)\)/g, (m, body) => "(?:" + body.split("|").map(caseless).join("|") + ")");
  return p;
}

function load(dir) {
  const lines = fs.readFileSync(`${dir}/tiktoken.model`, "utf8").split("\n").filter(Boolean);
  const toks = [];
  for (const l of lines) {
    const [b64, rank] = l.split(" ");
    toks[Number(rank)] = b64;
  }
  const n = toks.length;
  const cfg = JSON.parse(fs.readFileSync(`${dir}/tokenizer_config.json`, "utf8"));
  const special = {};
  const named = cfg.added_tokens_decoder || {};
  let top = n + 256;
  for (const k of Object.keys(named)) top = Math.max(top, Number(k) + 1);
  for (let id = n; id < top; id++) special[named[id] ? named[id].content : `<|reserved_token_${id}|>`] = id;
  const pat = toJs(cfg.pat_str || KIMI);
  const enc = new Tiktoken({ bpe_ranks: "x 0 " + toks.join(" "), special_tokens: special, pat_str: pat });
  return { enc, special };
}

const [cmd, dir, a, b] = process.argv.slice(2);
const { enc, special } = load(dir);
if (cmd === "gen") {
  const n = Number(process.env.CORPUS_SIZE || 2500);
  const names = Object.keys(special).slice(0, 8);
  fs.writeFileSync(a, makeCorpus(names, n).map((s) => JSON.stringify(s)).join("\n") + "\n");
} else if (cmd === "check") {
  const corpus = fs.readFileSync(a, "utf8").split("\n").filter((l) => l.length).map((l) => JSON.parse(l));
  const got = fs.readFileSync(b, "utf8").split("\n").filter((l) => l.length).map((l) => JSON.parse(l));
  if (got.length !== corpus.length) {
    console.error(`coli gave ${got.length} lines for ${corpus.length} strings`);
    process.exit(1);
  }
  let bad = 0, tokens = 0;
  const report = (i, what, x, y) => {
    if (++bad <= 5) console.error(`#${i} ${what}\n  input: ${JSON.stringify(corpus[i]).slice(0, 300)}\n  coli:  ${String(JSON.stringify(x)).slice(0, 300)}\n  ref:   ${String(JSON.stringify(y)).slice(0, 300)}`);
  };
  corpus.forEach((s, i) => {
    const ref = enc.encode(s, "all");
    tokens += ref.length;
    if (JSON.stringify(ref) !== JSON.stringify(got[i].ids)) return report(i, "ids differ", got[i].ids, ref);
    if (got[i].text !== s) return report(i, "round trip differs", got[i].text, s);
    const dec = enc.decode(ref);
    if (got[i].text !== dec) report(i, "decode differs from the reference decode", got[i].text, dec);
  });
  console.log(`${dir}: ${corpus.length} strings, ${tokens} tokens, ${bad} mismatches`);
  process.exit(bad ? 1 : 0);
} else {
  console.error("usage: node tiktoken_check.mjs gen|check DIR ...");
  process.exit(2);
}
