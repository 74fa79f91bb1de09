#!/usr/bin/env python3
"""Writes a byte-level BPE tokenizer.json's tokens as lines `special hexbytes` (id order),
for llama_cpp_host.cc (TOKEN_TABLE=...). Usage: dump_vocab.py tokenizer.json out.txt"""
import json, sys

def byte_decoder():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}

tok = json.load(open(sys.argv[1]))
dec = byte_decoder()
table = {}
for piece, i in tok["model"]["vocab"].items():
    table[i] = (0, bytes(dec[c] for c in piece))
for a in tok.get("added_tokens", []):
    table[a["id"]] = (1 if a.get("special") else 0, a["content"].encode())
n = max(table) + 1
with open(sys.argv[2], "w") as f:
    for i in range(n):
        s, b = table.get(i, (1, f"<[{i}]>".encode()))
        f.write(f"{s} {b.hex() or '-'}\n")
