#!/usr/bin/env python3
"""Checks the jb scenarios (one/, two/) against the brief. Pure stdlib."""
import json, os, re, sys, unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision", "command",
         "id_ref", "user_rule", "status_number"}
SECRET_RES = [
    re.compile(r"[a-z]+://[^\s:@/]*:[^\s@]+@\S+"),           # url with password
    re.compile(r"\b[A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|KEY)\s*=\s*\S+"),
    re.compile(r"\b(?:sntrys|bsw|npm|ghp|glpat)_[A-Za-z0-9_]+"),
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
        return
    sid = subs[0]
    sdir = os.path.join(folder, sid)
    if not re.fullmatch(r"jb-[a-z0-9-]+", sid):
        err(f"{sid}: bad scenario id")
    meta = json.load(open(os.path.join(sdir, "scenario.json"), encoding="utf-8"))
    for k in ("id", "workspace", "language", "description", "author"):
        if not meta.get(k):
            err(f"{sid}: scenario.json missing {k}")
    if meta.get("id") != sid:
        err(f"{sid}: scenario.json id mismatch")
    ws = meta["workspace"]
    if not re.fullmatch(r"[a-z0-9-]+", ws):
        err(f"{sid}: bad workspace name")
    root = os.path.join(sdir, "root")
    for req in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, req)):
            err(f"{sid}: missing {req}")
    if not os.path.isdir(os.path.join(root, "notes")):
        err(f"{sid}: missing root notes/")
    md = []
    for dp, _, fns in os.walk(root):
        md += [os.path.join(dp, f) for f in fns if f.endswith(".md")]
    if not 20 <= len(md) <= 60:
        err(f"{sid}: {len(md)} markdown notes (need 20-60)")
    ledger = open(os.path.join(root, ws, "handoff/LEDGER.md"), encoding="utf-8").read()
    plan = open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read()
    if not 10000 <= len(ledger) <= 30000:
        err(f"{sid}: ledger {len(ledger)} chars (need 10000-30000)")
    if not 2000 <= len(plan) <= 12000:
        err(f"{sid}: plan {len(plan)} chars (need 2000-12000)")
    # secrets present anywhere in the root
    secrets = set()
    for p in md:
        for line in open(p, encoding="utf-8"):
            for rx in SECRET_RES:
                for m in rx.finditer(line):
                    secrets.add(norm(m.group(0)))
    if not secrets:
        err(f"{sid}: no secret-shaped strings found (brief asks for a few)")
    facts = [json.loads(l) for l in open(os.path.join(sdir, "facts.jsonl"), encoding="utf-8") if l.strip()]
    if len(facts) != 20:
        err(f"{sid}: {len(facts)} facts (need 20)")
    ids = [f["id"] for f in facts]
    if len(set(ids)) != len(ids):
        err(f"{sid}: duplicate fact ids")
    kinds = {}
    for f in facts:
        fid = f.get("id")
        if f.get("scenario") != sid:
            err(f"{fid}: scenario field {f.get('scenario')!r}")
        if f.get("kind") not in KINDS:
            err(f"{fid}: bad kind {f.get('kind')!r}")
        kinds[f.get("kind")] = kinds.get(f.get("kind"), 0) + 1
        src = f.get("source", "")
        sp = os.path.join(root, src)
        if not os.path.isfile(sp):
            err(f"{fid}: source {src} missing")
            continue
        if f["kind"] == "user_rule" and src.startswith(ws + "/"):
            err(f"{fid}: user_rule must come from a root-level note")
        lines = [norm(l) for l in open(sp, encoding="utf-8").read().splitlines()]
        ph = f.get("phrases", [])
        if not 1 <= len(ph) <= 4:
            err(f"{fid}: {len(ph)} phrases")
        for p in ph:
            if not 3 <= len(p) <= 80:
                err(f"{fid}: phrase length {len(p)}: {p!r}")
            if "\n" in p or re.match(r"^\s*([-*+]\s|#|\[[ xX]\]|>)", p) or "**" in p or "`" in p or "~~" in p:
                err(f"{fid}: phrase has markup: {p!r}")
            n = norm(p)
            if not any(n in l for l in lines):
                err(f"{fid}: phrase not found on one line of {src}: {p!r}")
            for s in secrets:
                if n in s or s in n:
                    err(f"{fid}: phrase overlaps secret-shaped string: {p!r}")
    for need in ("failed_reason", "user_rule", "next_step", "status_number"):
        if not kinds.get(need):
            err(f"{sid}: no {need} facts")
    print(f"{folder.split('/')[-1]}: {sid} lang={meta['language']} notes={len(md)} "
          f"ledger={len(ledger)} plan={len(plan)} facts={len(facts)} kinds={kinds} secrets={len(secrets)}")

for sub in ("one", "two"):
    check_scenario(os.path.join(HERE, sub))
if errors:
    print("\n".join("ERROR: " + e for e in errors))
    sys.exit(1)
print("OK")
