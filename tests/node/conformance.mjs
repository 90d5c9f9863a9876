// conformance.mjs - the reference side of tests/tokenizer_conformance.sh.
//   node conformance.mjs gen DIR OUT.jsonl            write the corpus (a JSON string per
//        line, then the invalid UTF-8 cases as {"hex":"..."} lines)
//   node conformance.mjs check DIR CORPUS.jsonl C_OUT.jsonl
//        compare coli's {"ids","text"} lines with the reference encoder,
//        the round trip and the reference decoder; exit 1 on any mismatch
// Invalid UTF-8 is expected to tokenize as the JavaScript string that
// TextDecoder makes of the same bytes (U+FFFD per maximal subpart).
import { Tokenizer } from "@huggingface/tokenizers";
import fs from "node:fs";
import { makeCorpus, INVALID_UTF8 } from "./corpus.mjs";

function load(dir, withTokenizer) {
  const tj = JSON.parse(fs.readFileSync(`${dir}/tokenizer.json`, "utf8"));
  const tc = JSON.parse(fs.readFileSync(`${dir}/tokenizer_config.json`, "utf8"));
  return { tj, tok: withTokenizer ? new Tokenizer(tj, tc) : null };
}

function encode(tok, s) {
  return tok.encode(s, { add_special_tokens: false }).ids;
}

function normalizeLike(tj, s) {
  // what the round trip should give back: the input after the normalizer
  const n = tj.normalizer;
  const kinds = !n ? [] : n.type === "Sequence" ? n.normalizers.map((x) => x.type) : [n.type];
  for (const k of kinds) s = s.normalize(k);
  return s;
}

const [cmd, dir, a, b] = process.argv.slice(2);
const { tj, tok } = load(dir, cmd !== "gen");
if (cmd === "gen") {
  const added = tj.added_tokens.map((x) => x.content);
  const n = Number(process.env.CORPUS_SIZE || 2500);
  const lines = makeCorpus(added, n).map((s) => JSON.stringify(s));
  for (const bytes of INVALID_UTF8) lines.push(JSON.stringify({ hex: Buffer.from(bytes).toString("hex") }));
  fs.writeFileSync(a, lines.join("\n") + "\n");
} else if (cmd === "check") {
  const corpus = fs.readFileSync(a, "utf8").split("\n").filter((l) => l.length).map((l) => JSON.parse(l))
    .map((x) => (typeof x === "string" ? x : new TextDecoder("utf-8", { fatal: false }).decode(Buffer.from(x.hex, "hex"))));
  const got = fs.readFileSync(b, "utf8").split("\n").filter((l) => l.length).map((l) => JSON.parse(l));
  let bad = 0, tokens = 0;
  const report = (i, what, x, y) => {
    if (++bad <= 5) console.error(`#${i} ${what}\n  input: ${JSON.stringify(corpus[i]).slice(0, 300)}\n  coli:  ${String(JSON.stringify(x)).slice(0, 300)}\n  ref:   ${String(JSON.stringify(y)).slice(0, 300)}`);
  };
  if (got.length !== corpus.length) {
    console.error(`coli gave ${got.length} lines for ${corpus.length} strings`);
    process.exit(1);
  }
  corpus.forEach((s, i) => {
    const ref = encode(tok, s);
    tokens += ref.length;
    if (JSON.stringify(ref) !== JSON.stringify(got[i].ids)) return report(i, "ids differ", got[i].ids, ref);
    const want = normalizeLike(tj, s);
    if (got[i].text !== want) return report(i, "round trip differs", got[i].text, want);
    const dec = ref.length ? tok.decode(ref, { clean_up_tokenization_spaces: false }) : "";
    if (got[i].text !== dec) report(i, "decode differs from reference decode", got[i].text, dec);
  });
  console.log(`${dir.split("/").slice(-2, -1)[0] || dir}: ${corpus.length} strings, ${tokens} tokens, ${bad} mismatches`);
  process.exit(bad ? 1 : 0);
} else {
  console.error("usage: node conformance.mjs gen|check DIR ...");
  process.exit(2);
}
