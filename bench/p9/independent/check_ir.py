#!/usr/bin/env python3
"""Check the ir scenarios (one/ and two/). Pure stdlib. Exit 1 on any problem."""
import json
import re
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision", "command",
         "id_ref", "user_rule", "status_number"}
# secret-shaped strings planted in the scenarios; no phrase may overlap them
SECRETS = [
    "stg_Repl!c8tor_2024", "Qm7vR2pLx9WtA4sE", "pgb_adm_5f1c9e7a2b",
    "XXXXXXXXXXXXXXXXXXXXXXXX",
    "AIzaSyD-fAkE0kEy1234567890abcdefghiJK", "Farm4V1c!na#2024", "glpat-xR7fAkEtOkEn9QpL2mZt",
    "fv_upload_Kq82mzP0aTfake",
]

errors = []


def err(msg):
    errors.append(msg)


def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()


def check_scenario(folder, expected_lang_prefix):
    sdir = [p for p in folder.iterdir() if p.is_dir()]
    if len(sdir) != 1:
        err(f"{folder}: expected exactly one scenario dir, got {[p.name for p in sdir]}")
        return set()
    sdir = sdir[0]
    sid = sdir.name
    if not re.fullmatch(r"ir-[a-z0-9-]+", sid):
        err(f"{sid}: bad scenario id")
    meta = json.loads((sdir / "scenario.json").read_text(encoding="utf-8"))
    for k in ("id", "workspace", "language", "description", "author"):
        if k not in meta:
            err(f"{sid}: scenario.json lacks {k}")
    if meta.get("id") != sid:
        err(f"{sid}: scenario.json id mismatch")
    if not meta.get("language", "").startswith(expected_lang_prefix):
        err(f"{sid}: language {meta.get('language')} != {expected_lang_prefix}")
    ws = meta["workspace"]
    if not re.fullmatch(r"[a-z0-9-]+", ws):
        err(f"{sid}: bad workspace name {ws}")
    root = sdir / "root"
    for req in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not (root / req).is_file():
            err(f"{sid}: missing {req}")
    if not list((root / "notes").glob("*.md")):
        err(f"{sid}: no root notes")
    mds = list(root.rglob("*.md"))
    if not 20 <= len(mds) <= 60:
        err(f"{sid}: {len(mds)} markdown notes, want 20-60")
    led = len((root / ws / "handoff/LEDGER.md").read_text(encoding="utf-8"))
    plan = len((root / ws / "PLAN.md").read_text(encoding="utf-8"))
    if not 10000 <= led <= 30000:
        err(f"{sid}: ledger {led} chars")
    if not 2000 <= plan <= 12000:
        err(f"{sid}: plan {plan} chars")

    facts = [json.loads(l) for l in (sdir / "facts.jsonl").read_text(encoding="utf-8").splitlines() if l.strip()]
    if len(facts) != 20:
        err(f"{sid}: {len(facts)} facts, want 20")
    ids = set()
    cache = {}
    kinds_seen = set()
    for f in facts:
        fid = f.get("id")
        if fid in ids:
            err(f"{sid}: duplicate fact id {fid}")
        ids.add(fid)
        if f.get("scenario") != sid:
            err(f"{fid}: scenario field {f.get('scenario')}")
        if f.get("kind") not in KINDS:
            err(f"{fid}: bad kind {f.get('kind')}")
        kinds_seen.add(f.get("kind"))
        if not f.get("note"):
            err(f"{fid}: empty note")
        ph = f.get("phrases", [])
        if not 1 <= len(ph) <= 4:
            err(f"{fid}: {len(ph)} phrases")
        src = root / f.get("source", "")
        if not src.is_file():
            err(f"{fid}: source {f.get('source')} missing")
            continue
        if src not in cache:
            text = src.read_text(encoding="utf-8")
            cache[src] = [norm(line) for line in text.splitlines()]
        lines = cache[src]
        for p in ph:
            if not 3 <= len(p) <= 80:
                err(f"{fid}: phrase length {len(p)}: {p!r}")
            if "`" in p or "**" in p or re.match(r"^\s*([-*+]|\d+\.|#|\[[ xX]\])\s", p):
                err(f"{fid}: markup in phrase {p!r}")
            if "\n" in p:
                err(f"{fid}: newline in phrase")
            np_ = norm(p)
            if not any(np_ in line for line in lines):
                err(f"{fid}: phrase not found on one line of {f['source']}: {p!r}")
            for s in SECRETS:
                ns = norm(s)
                if ns in np_ or np_ in ns:
                    err(f"{fid}: phrase overlaps secret {s!r}")
    for k in ("failed_reason", "next_step", "user_rule", "status_number", "command"):
        if k not in kinds_seen:
            err(f"{sid}: no fact of kind {k}")
    print(f"{folder.name}/{sid}: lang={meta['language']} notes={len(mds)} ledger={led} plan={plan} facts={len(facts)}")
    return ids


all_ids = []
for name, lang in (("one", "en"), ("two", "it")):
    d = HERE / name
    if not d.is_dir():
        err(f"missing folder {name}")
        continue
    all_ids.extend(check_scenario(d, lang))
if len(all_ids) != len(set(all_ids)):
    err("fact ids not unique across scenarios")

if errors:
    print("\n".join("FAIL: " + e for e in errors))
    sys.exit(1)
print("OK")
