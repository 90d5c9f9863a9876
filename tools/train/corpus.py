#!/usr/bin/python3
"""corpus.py OUT_DIR [--per-lang N] [--seed S]

Builds the training corpus of the default model from Debian's fortune
packages (fortunes, fortunes-de, -es, -it, -br, -ru, -zh; installed with
apt-get, licences in README.md): short chat exchanges in the DeepSeek-V3
chat template where the user asks for a saying in a language (or on a
topic) and the assistant answers with a fortune in that language.

The validation split is made by fortune (a hash of its text), never by
exchange, so no validation answer is ever seen in training.

Writes OUT_DIR/{train,val}.jsonl, one exchange a line:
  {"lang": "de", "prompt": "...", "answer": "...", "text": "<rendered chat>"}
and OUT_DIR/stats.json (fortunes and exchanges per language and split).
"""
import argparse
import hashlib
import json
import os
import random
import re
import subprocess
import unicodedata

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"
USER = "<｜User｜>"
ASSISTANT = "<｜Assistant｜>"

PACKAGES = {
    "en": "fortunes", "de": "fortunes-de", "es": "fortunes-es", "it": "fortunes-it",
    "pt": "fortunes-br", "ru": "fortunes-ru", "zh": "fortunes-zh",
}
# Files that are pictures, not sentences, or not in the package's language.
SKIP_FILES = {"art", "ascii-art", "asciiart", "banner", "translate-me", "perl",
              "linux", "debian", "channel-debian.fortunes", "off"}

# Several phrasings per language: in the language itself and in English.
PROMPTS = {
    "en": ["Tell me a fortune.", "Give me a saying.", "Say something wise.",
           "A fortune cookie, please.", "Share a quote with me.", "Tell me a fortune in English."],
    "de": ["Erzähl mir einen Spruch.", "Gib mir ein Zitat auf Deutsch.", "Sag etwas Weises.",
           "Einen Glückskeks, bitte.", "Tell me a fortune in German.", "A German saying, please."],
    "es": ["Dime un refrán.", "Cuéntame algo en español.", "Dame una frase sabia.",
           "Una galleta de la fortuna, por favor.", "Tell me a fortune in Spanish.",
           "A Spanish saying, please."],
    "it": ["Dimmi un proverbio.", "Raccontami qualcosa in italiano.", "Dammi una frase saggia.",
           "Un biscotto della fortuna, per favore.", "Tell me a fortune in Italian.",
           "An Italian saying, please."],
    "pt": ["Diga-me um ditado.", "Conte-me algo em português.", "Me dê uma frase sábia.",
           "Um biscoito da sorte, por favor.", "Tell me a fortune in Portuguese.",
           "A Portuguese saying, please."],
    "ru": ["Расскажи мне поговорку.", "Скажи что-нибудь по-русски.", "Дай мне мудрую фразу.",
           "Печенье с предсказанием, пожалуйста.", "Tell me a fortune in Russian.",
           "A Russian saying, please."],
    "zh": ["给我讲一句格言。", "用中文说一句话。", "请给我一首诗。", "说一句有智慧的话。",
           "Tell me a fortune in Chinese.", "A Chinese saying, please."],
}
# English topic prompts from the fortune file names (topics in English only).
TOPIC_PROMPTS = ["Tell me something about {}.", "A fortune about {}, please."]
EN_TOPICS = {"computers": "computers", "science": "science", "love": "love", "work": "work",
             "food": "food", "politics": "politics", "medicine": "medicine", "law": "law",
             "education": "education", "sports": "sports", "pets": "pets", "kids": "kids",
             "people": "people", "wisdom": "wisdom", "literature": "literature",
             "startrek": "Star Trek", "pratchett": "Discworld", "magic": "magic"}

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def package_files(pkg):
    out = subprocess.run(["dpkg", "-L", pkg], check=True, stdout=subprocess.PIPE, text=True).stdout
    files = []
    for p in out.split("\n"):
        if "/usr/share/games/fortunes/" not in p or p.endswith((".dat", ".u8")):
            continue
        parts = p.split("/")
        if any(x in SKIP_FILES for x in parts[5:]) or os.path.islink(p) or not os.path.isfile(p):
            continue
        files.append(p)
    return sorted(files)


def clean(text):
    text = ANSI.sub("", text).replace("\r", "").replace("\t", " ")
    lines = [re.sub(" +", " ", ln).strip() for ln in text.split("\n")]
    return "\n".join(ln for ln in lines if ln).strip()


def script_ok(lang, text):
    """Most letters must be in the language's script (drops ASCII art,
    English lines in other packages, code)."""
    letters = [c for c in text if unicodedata.category(c).startswith("L")]
    if len(letters) < 0.6 * len(text.replace(" ", "").replace("\n", "")) or len(letters) < 8:
        return False
    if lang == "zh":
        return sum(1 for c in letters if "\u4e00" <= c <= "\u9fff") > 0.8 * len(letters)
    if lang == "ru":
        return sum(1 for c in letters if "\u0400" <= c <= "\u04ff") > 0.8 * len(letters)
    return sum(1 for c in letters if c < "\u0250") > 0.98 * len(letters)


def fortunes_of(lang, max_chars):
    """(file name, text) of every usable fortune of at most max_chars
    characters (half that for Chinese, whose characters carry more)."""
    if lang == "zh":
        max_chars //= 2
    seen = set()
    out = []
    for fp in package_files(PACKAGES[lang]):
        with open(fp, encoding="utf-8", errors="replace") as f:
            raw = f.read()
        topic = os.path.basename(fp)
        for chunk in re.split(r"^%[ \t]*$", raw, flags=re.M):
            t = clean(chunk)
            if not t or "\ufffd" in t or len(t) > max_chars:
                continue
            if len(t) < 12 or not script_ok(lang, t) or t in seen:
                continue
            seen.add(t)
            out.append((topic, t))
    return out


def is_val(text, val_percent):
    h = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little")
    return h % 100 < val_percent


def render(prompt, answer):
    """What the DeepSeek-V3 chat template renders for [user, assistant]."""
    return BOS + USER + prompt + ASSISTANT + answer + EOS


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--per-lang", type=int, default=250, help="fortunes kept per language")
    ap.add_argument("--max-chars", type=int, default=140,
                    help="longest fortune kept (Chinese: half); short answers are learnt in fewer steps")
    ap.add_argument("--val-percent", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1234)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    os.makedirs(a.out, exist_ok=True)
    splits = {"train": [], "val": []}
    stats = {}
    for lang in PACKAGES:
        fs = fortunes_of(lang, a.max_chars)
        rng.shuffle(fs)
        fs = fs[:a.per_lang]
        st = {"available": len(fs), "train": 0, "val": 0}
        for topic, t in fs:
            split = "val" if is_val(t, a.val_percent) else "train"
            prompts = list(PROMPTS[lang])
            if lang == "en" and topic in EN_TOPICS:
                prompts += [p.format(EN_TOPICS[topic]) for p in TOPIC_PROMPTS]
            # Two exchanges per training fortune with different phrasings,
            # one per validation fortune.
            for p in rng.sample(prompts, 2 if split == "train" else 1):
                splits[split].append({"lang": lang, "prompt": p, "answer": t, "text": render(p, t)})
            st[split] += 1
        stats[lang] = st
    for name, rows in splits.items():
        rng.shuffle(rows)
        with open(os.path.join(a.out, name + ".jsonl"), "w", encoding="utf-8") as f:
            for r in rows:
                f.write(json.dumps(r, ensure_ascii=False) + "\n")
    with open(os.path.join(a.out, "stats.json"), "w") as f:
        json.dump(stats, f, indent=1)
    print(json.dumps(stats))


if __name__ == "__main__":
    main()
