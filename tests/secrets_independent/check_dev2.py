"""Stdlib-only consistency check for corpus_dev2.py."""
import hashlib
import os
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus_dev2 as c  # noqa: E402

errors = []
ids = [k.id for k in c.CASES] + [oid for oid, _ in c.ORDINARY]
dup = [i for i, n in Counter(ids).items() if n > 1]
if dup:
    errors.append(f"duplicate ids: {dup}")
for i in ids:
    if not i.startswith("if-"):
        errors.append(f"id without if- prefix: {i}")
if len(c.CASES) < 50:
    errors.append(f"only {len(c.CASES)} cases")
if len(c.ORDINARY) < 35:
    errors.append(f"only {len(c.ORDINARY)} ordinary texts")

all_secrets = set()
for k in c.CASES:
    if not isinstance(k, c.Case):
        errors.append(f"{k!r} is not a Case")
    n = len(k.text.splitlines())
    if not 1 <= n <= 40:
        errors.append(f"{k.id}: {n} lines")
    if not k.kind.strip():
        errors.append(f"{k.id}: empty kind")
    if not k.secrets:
        errors.append(f"{k.id}: no secrets")
    for s in k.secrets:
        if not s or not s.strip():
            errors.append(f"{k.id}: empty secret")
        elif s not in k.text:
            errors.append(f"{k.id}: secret not verbatim in text: {s[:30]!r}")
        all_secrets.add(s)

for oid, text in c.ORDINARY:
    if not text.strip():
        errors.append(f"{oid}: empty ordinary text")
    n = len(text.splitlines())
    if not 5 <= n <= 60:
        errors.append(f"{oid}: {n} lines")
    for s in all_secrets:
        if len(s) >= 8 and s in text:
            errors.append(f"{oid}: contains a case secret {s[:20]!r}")

h = hashlib.sha256()
for k in c.CASES:
    h.update(repr((k.id, k.text, k.secrets, k.kind)).encode())
for oid, text in c.ORDINARY:
    h.update(repr((oid, text)).encode())

kinds = Counter(k.kind for k in c.CASES)
print(f"cases={len(c.CASES)} secrets={sum(len(k.secrets) for k in c.CASES)} "
      f"ordinary={len(c.ORDINARY)} kinds={len(kinds)}")
print("kinds:", dict(sorted(kinds.items())))
print("sha256:", h.hexdigest())
if errors:
    print("FAIL")
    for e in errors:
        print("  -", e)
    sys.exit(1)
print("OK")
