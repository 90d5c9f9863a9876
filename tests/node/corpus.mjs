// corpus.mjs - deterministic corpus for the tokenizer conformance test.
// makeCorpus(addedTokens, n) returns n varied strings; the same seed gives
// the same strings on every machine (no Math.random).

function rng(seed) {
  // mulberry32
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const EN = ["The quick brown fox jumps over the lazy dog.", "I'm sure you'll see it's fine, isn't it?",
  "HELLO WORLD", "She'd've said WE'LL GO", "tokenization", "antidisestablishmentarianism",
  "Don't", "e-mail: someone@example.com", "https://example.org/path?q=1&r=2#frag",
  "Mr. O'Neil's cat", "well...", "(parenthesised) [bracketed] {braced}", "a", "I", "x=y+z",
  "U.S.A.", "naïve café résumé", "Straße", "ﬁnancial ﬂow", "Ⅻ ① ⁵ ½"];
const ZH = ["你好，世界！", "我爱自然语言处理。", "今天天气很好，我们去公园散步吧。", "龥鿿㐀", "中文标点：“引号”《书名》"];
const JA = ["こんにちは世界", "カタカナとひらがな", "東京は日本の首都です。", "ｶﾀｶﾅ半角", "ゟ゠ヿ"];
const KO = ["안녕하세요 세계", "한국어 토큰화 테스트입니다.", "ㄱㄴㄷ ㅏㅑ"];
const AR = ["مرحبا بالعالم", "اللغة العربية جميلة", "١٢٣٤٥٦٧٨٩٠"];
const HI = ["नमस्ते दुनिया", "हिन्दी भाषा", "१२३४५"];
const MISC = ["Привет, мир!", "Γειά σου Κόσμε", "שלום עולם", "สวัสดีชาวโลก", "Xin chào thế giới",
  "Ḁ̴̛̼͕ͅ zalgo̸͇͝", "\u00a0non\u00a0breaking\u00a0", "\u3000ideographic\u3000space", "zero\u200bwidth",
  "bom\ufeffinside", "nel\u0085line", "line\u2028sep\u2029par", "tab\tsep", "\u0000nul\u0001ctl\u007f",
  "ſ ſt ﬅ K Å", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙", "😀", "🇫🇷🇯🇵"];
const EMOJI = ["😀", "👍🏽", "👩‍💻", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "🧑🏿‍🚀", "✋🏻", "🇺🇸", "🤖", "🙂🙃", "#️⃣", "👋🏼👋🏾"];
const CODE = [
  "#include <stdio.h>\nint main(void) {\n\tprintf(\"%d\\n\", 42);\n\treturn 0;\n}\n",
  "def f(x):\n    return [i ** 2 for i in range(x) if i % 2 == 0]\n\n\nclass A(object):\n    pass\n",
  "{\"key\": [1, 2.5, -3e10, true, null], \"nested\": {\"a\": \"b\"}}",
  "for (int i = 0; i < n; ++i) { a[i] += b[i] * c; }",
  "if x != None and y >= 0:\n\tprint(f\"{x!r:>10}\")",
  "    indented    code\n        more\n",
  "SELECT * FROM users WHERE id = 'abc' AND n <= 10;",
  "<div class=\"x\">&amp;&lt;&gt;</div>",
  "x <<= 2; y >>= 3; z ||= w && v;",
  "// comment\r\n/* block */\r\n",
];
const WS = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r\n\r\n", " \n ", "\n \n", "    \n", "\r", " \t \n"];

function pick(r, a) { return a[Math.floor(r() * a.length)]; }

function number(r) {
  const len = 1 + Math.floor(r() * 25);
  let s = "";
  for (let i = 0; i < len; i++) s += String(Math.floor(r() * 10));
  const k = r();
  if (k < 0.2) return s + "." + String(Math.floor(r() * 1000));
  if (k < 0.3) return "-" + s;
  if (k < 0.4) return s.replace(/\B(?=(\d{3})+(?!\d))/g, ",");
  return s;
}

function longWord(r) {
  const n = 20 + Math.floor(r() * 300);
  const alpha = pick(r, ["abcdefghijklmnopqrstuvwxyz", "aaaaab", "xyz", "ab", "ÄÖÜäöüß", "的一是不了人"]);
  const chars = Array.from(alpha);
  let s = "";
  for (let i = 0; i < n; i++) s += pick(r, chars);
  return s;
}

function randomCodepoints(r) {
  const n = 1 + Math.floor(r() * 12);
  let s = "";
  for (let i = 0; i < n; i++) {
    const k = r();
    let cp;
    if (k < 0.5) cp = 0x20 + Math.floor(r() * 0x5f);
    else if (k < 0.7) cp = 0xa0 + Math.floor(r() * 0x2000);
    else if (k < 0.9) cp = 0x3000 + Math.floor(r() * 0x7000);
    else cp = 0x1f300 + Math.floor(r() * 0x350); // assigned by Unicode 13 (see the man page: newer characters may differ)
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0x41;
    s += String.fromCodePoint(cp);
  }
  return s;
}

function nfd(r) {
  return pick(r, ["café", "naïve", "Ångström", "Crème brûlée", "Ελληνικά", "Tiếng Việt", "한국어"]).normalize("NFD");
}

function piece(r, added) {
  const k = Math.floor(r() * 15);
  switch (k) {
    case 0: case 1: return pick(r, EN);
    case 2: return pick(r, ZH);
    case 3: return pick(r, JA);
    case 4: return pick(r, KO);
    case 5: return pick(r, AR) + " " + pick(r, HI);
    case 6: return pick(r, EMOJI) + pick(r, EMOJI);
    case 7: return pick(r, CODE);
    case 8: return number(r);
    case 9: return pick(r, WS);
    case 10: return added.length ? pick(r, added) : "<s>";
    case 11: return nfd(r);
    case 12: return r() < 0.3 ? longWord(r) : pick(r, MISC);
    case 13: return randomCodepoints(r);
    default: return pick(r, EN).toUpperCase();
  }
}

export function makeCorpus(added, n, seed = 20260101) {
  const r = rng(seed);
  const out = [
    "", " ", "a", "\n", "  leading", "trailing  ", "123", "1234567", "0000000000000000000000",
    "'s 'S 'll 'LL 'Re", "hello\r\nworld", "\t\tindent", " ".repeat(100), "\n".repeat(30),
    "a".repeat(2000), "😀".repeat(50), "👨‍👩‍👧‍👦".repeat(10),
  ];
  for (const a of added.slice(0, 40)) out.push(a, `x${a}y`, ` ${a} `, `${a}${a}`);
  while (out.length < n) {
    const parts = 1 + Math.floor(r() * 6);
    let s = "";
    for (let i = 0; i < parts; i++) {
      s += piece(r, added);
      if (r() < 0.5) s += r() < 0.8 ? " " : pick(r, WS);
    }
    out.push(s);
  }
  return out;
}

// Byte strings that are not valid UTF-8 (each a list of byte values).
export const INVALID_UTF8 = [
  [0xff], [0xc0, 0xaf], [0xe0, 0x80, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80],
  [0x61, 0xe4, 0xbd], [0x61, 0xe4, 0xbd, 0x62], [0xf0, 0x9f, 0x98], [0x80, 0x80, 0x41],
  [0x48, 0x69, 0x20, 0xfe, 0x20, 0xe4, 0xbd, 0xa0, 0xe5, 0xa5, 0xbd, 0xc3],
];
