#!/usr/bin/env python3
"""Checks the iv scenarios (one/ and two/). Pure stdlib."""
import json, os, re, sys, unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
SECRET_RES = [
    re.compile(r'(?i)\b[A-Z0-9_]*(SECRET|TOKEN|PASSWORD|PASSWD|API_KEY|CLIENT_ID)[A-Z0-9_]*\s*[=:]\s*\S+'),
    re.compile(r'[a-z][a-z0-9+.-]*://[^\s:/@]+:[^\s@]+@\S+'),
    re.compile(r'\b(ghp|xox[bp])[-_][A-Za-z0-9-]+'),
]

def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()

errors = []
def err(msg):
    errors.append(msg)

def check_scenario(sdir, folder):
    sid = os.path.basename(sdir)
    if not sid.startswith("iv-") or not re.fullmatch(r"[a-z0-9-]+", sid):
        err(f"{sid}: bad scenario id")
    meta = json.load(open(os.path.join(sdir, "scenario.json"), encoding="utf-8"))
    for k in ("id", "workspace", "language", "description", "author"):
        if k not in meta:
            err(f"{sid}: scenario.json lacks {k}")
    if meta.get("id") != sid:
        err(f"{sid}: scenario.json id mismatch")
    ws = meta["workspace"]
    root = os.path.join(sdir, "root")
    for p in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, p)):
            err(f"{sid}: missing {p}")
    mds = []
    for dp, _, fns in os.walk(root):
        mds += [os.path.join(dp, f) for f in fns if f.endswith(".md")]
    if not 20 <= len(mds) <= 60:
        err(f"{sid}: {len(mds)} md files (want 20-60)")
    if not os.path.isdir(os.path.join(root, "notes")):
        err(f"{sid}: no root notes/")
    ledger = open(os.path.join(root, ws, "handoff/LEDGER.md"), encoding="utf-8").read()
    plan = open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read()
    if not 10000 <= len(ledger) <= 30000:
        err(f"{sid}: ledger {len(ledger)} chars")
    if not 2000 <= len(plan) <= 12000:
        err(f"{sid}: plan {len(plan)} chars")

    facts = [json.loads(l) for l in open(os.path.join(sdir, "facts.jsonl"), encoding="utf-8") if l.strip()]
    if len(facts) != 20:
        err(f"{sid}: {len(facts)} facts (want 20)")
    ids = [f["id"] for f in facts]
    if len(set(ids)) != len(ids):
        err(f"{sid}: duplicate fact ids")
    cache = {}
    for f in facts:
        fid = f.get("id")
        if f.get("scenario") != sid:
            err(f"{fid}: scenario field {f.get('scenario')}")
        if f.get("kind") not in KINDS:
            err(f"{fid}: bad kind {f.get('kind')}")
        ph = f.get("phrases", [])
        if not 1 <= len(ph) <= 4:
            err(f"{fid}: {len(ph)} phrases")
        src = f.get("source", "")
        path = os.path.join(root, src)
        if not os.path.isfile(path):
            err(f"{fid}: source missing {src}")
            continue
        if f["kind"] == "user_rule" and "/" in src and not src.startswith("notes/"):
            err(f"{fid}: user_rule must come from a root-level note")
        if src not in cache:
            text = open(path, encoding="utf-8").read()
            secrets = [norm(m.group(0)) for line in text.splitlines() for r in SECRET_RES for m in r.finditer(line)]
            cache[src] = ([norm(l) for l in text.splitlines()], secrets)
        lines, secrets = cache[src]
        for p in ph:
            if not 3 <= len(p) <= 80:
                err(f"{fid}: phrase length {len(p)}: {p!r}")
            if "**" in p or "`" in p or "[x]" in p.lower() or "[ ]" in p or p.lstrip().startswith(("#", "- ", "* ", "> ")):
                err(f"{fid}: markup in phrase {p!r}")
            n = norm(p)
            hits = [l for l in lines if n in l]
            if not hits:
                err(f"{fid}: phrase not found on one line of {src}: {p!r}")
            for s in secrets:
                if n in s or s in n:
                    err(f"{fid}: phrase overlaps a secret-shaped string: {p!r}")
    return sid, meta, len(ledger), len(plan), len(mds)

report = []
for folder in ("one", "two"):
    base = os.path.join(HERE, folder)
    subs = [d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d))] if os.path.isdir(base) else []
    if len(subs) != 1:
        err(f"{folder}: expected exactly one scenario folder, got {subs}")
    for d in subs:
        report.append((folder,) + check_scenario(os.path.join(base, d), folder))

for folder, sid, meta, ll, pl, n in report:
    print(f"{folder}: {sid} lang={meta['language']} ledger={ll} plan={pl} md_files={n}")
if errors:
    print("\nFAIL:")
    for e in errors:
        print(" -", e)
    sys.exit(1)
print("OK")
