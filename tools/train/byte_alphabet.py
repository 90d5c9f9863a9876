"""GPT-2's reversible byte <-> printable-character alphabet: byte-level BPE
vocabularies (tokenizer.json) spell each byte as one printable character so
that tokens are valid strings. Shared by the tokenizer trainer (bpe.py) and
the tiktoken test fixture maker (tests/tiktoken_mk.py). No dependencies."""


def bytes_to_unicode():
    """{byte: character}: printable Latin-1 bytes map to themselves, the rest
    (controls, space, 0x7f-0xa0, 0xad) to U+0100 upward in byte order."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def unicode_to_bytes():
    """The inverse map, {character: byte}."""
    return {c: b for b, c in bytes_to_unicode().items()}
