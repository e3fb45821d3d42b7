#!/usr/bin/env python3
"""Check the iz scenarios (one/ and two/) against the brief. Pure stdlib."""
import json, os, re, sys, unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision", "command",
         "id_ref", "user_rule", "status_number"}
SECRET_RES = [
    re.compile(r"NNSXS\.[A-Z0-9]+\.[A-Z0-9]+"),
    re.compile(r"://[^\s:/@]+:[^\s@]+@"),
    re.compile(r"(?i)(password|passwd|api_key|token|secret|appkey[a-z0-9_]*|user\.info|encryption_key)\W{0,4}[=:]\s*\"?[^\s\"]+"),
    re.compile(r"\b[0-9A-Fa-f]{32,}\b"),
    re.compile(r"[A-Za-z0-9+/]{40,}={0,2}"),
]
errors = []

def err(msg):
    errors.append(msg)

def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()

def check_scenario(folder):
    subs = [d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d))]
    if len(subs) != 1:
        err(f"{folder}: expected exactly one scenario dir, got {subs}")
        return set()
    sid = subs[0]
    sdir = os.path.join(folder, sid)
    if not re.fullmatch(r"iz-[a-z0-9-]+", sid):
        err(f"{sid}: bad scenario id")
    meta = json.load(open(os.path.join(sdir, "scenario.json"), encoding="utf-8"))
    for k in ("id", "workspace", "language", "description", "author"):
        if k not in meta:
            err(f"{sid}: scenario.json missing {k}")
    if meta.get("id") != sid:
        err(f"{sid}: scenario.json id mismatch")
    ws = meta["workspace"]
    root = os.path.join(sdir, "root")
    if not re.fullmatch(r"[a-z0-9-]+", ws):
        err(f"{sid}: bad workspace name")
    for p in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, p)):
            err(f"{sid}: missing {p}")
    mds = []
    for dp, _, fs in os.walk(root):
        mds += [os.path.join(dp, f) for f in fs if f.endswith(".md")]
    if not 20 <= len(mds) <= 60:
        err(f"{sid}: {len(mds)} notes, need 20-60")
    root_notes = [f for f in os.listdir(os.path.join(root, "notes")) if f.endswith(".md")]
    ledger = open(os.path.join(root, ws, "handoff/LEDGER.md"), encoding="utf-8").read()
    plan = open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read()
    if not 10000 <= len(ledger) <= 30000:
        err(f"{sid}: ledger {len(ledger)} chars")
    if not 2000 <= len(plan) <= 12000:
        err(f"{sid}: plan {len(plan)} chars")
    # scenario two: ledger must have no markdown headings
    if os.path.basename(folder) == "two":
        heads = [l for l in ledger.splitlines() if l.lstrip().startswith("#")]
        if heads:
            err(f"{sid}: ledger has headings: {heads[:3]}")
    ids = set()
    facts = [json.loads(l) for l in open(os.path.join(sdir, "facts.jsonl"), encoding="utf-8") if l.strip()]
    if len(facts) != 20:
        err(f"{sid}: {len(facts)} facts, need 20")
    for f in facts:
        fid = f.get("id")
        if fid in ids:
            err(f"{sid}: duplicate id {fid}")
        ids.add(fid)
        if f.get("scenario") != sid:
            err(f"{fid}: scenario mismatch")
        if f.get("kind") not in KINDS:
            err(f"{fid}: bad kind {f.get('kind')}")
        src = f.get("source", "")
        if f.get("kind") == "user_rule" and not (src == "MEMORY.md" or src.startswith("notes/")):
            err(f"{fid}: user_rule must come from a root-level note")
        path = os.path.join(root, src)
        if not os.path.isfile(path):
            err(f"{fid}: source {src} missing")
            continue
        raw_lines = open(path, encoding="utf-8").read().splitlines()
        lines = [norm(l) for l in raw_lines]
        secrets = []
        for l in raw_lines:
            for rx in SECRET_RES:
                secrets += [norm(m.group(0)) for m in rx.finditer(l)]
        phrases = f.get("phrases", [])
        if not 1 <= len(phrases) <= 4:
            err(f"{fid}: {len(phrases)} phrases")
        for ph in phrases:
            if not 3 <= len(ph) <= 80:
                err(f"{fid}: phrase length {len(ph)}: {ph!r}")
            if "`" in ph or "**" in ph or "#" in ph or "[x]" in ph.lower() or re.match(r"^\s*[-*+] ", ph):
                err(f"{fid}: markup in phrase {ph!r}")
            n = norm(ph)
            if not any(n in l for l in lines):
                err(f"{fid}: phrase not found in one line of {src}: {ph!r}")
            for s in secrets:
                if n in s or s in n:
                    err(f"{fid}: phrase overlaps secret-shaped string: {ph!r}")
    kinds = {f["kind"] for f in facts}
    print(f"{os.path.basename(folder)}/{sid}: notes={len(mds)} (root notes/: {len(root_notes)}), "
          f"ledger={len(ledger)} chars, plan={len(plan)} chars, facts={len(facts)}, kinds={len(kinds)}")
    return ids

all_ids = set()
for sub in ("one", "two"):
    ids = check_scenario(os.path.join(HERE, sub))
    dup = all_ids & ids
    if dup:
        err(f"ids shared across scenarios: {dup}")
    all_ids |= ids

if errors:
    print("FAIL")
    for e in errors:
        print(" -", e)
    sys.exit(1)
print("OK")
