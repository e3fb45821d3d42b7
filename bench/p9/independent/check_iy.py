#!/usr/bin/env python3
"""Check the iy scenarios (one/ and two/) against the brief. Pure stdlib."""
import json
import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
ID_RE = re.compile(r"^[a-z0-9-]+$")
# values that look like secrets; phrases must not fall inside them
SECRET_RE = re.compile(
    r"(sntrys_[A-Za-z0-9_\-]+|AIza[A-Za-z0-9_\-]{20,}|AKIA[A-Z0-9]{12,}|ghp_[A-Za-z0-9]{20,}"
    r"|xox[bp]-[A-Za-z0-9\-]+|(?:password|passwd|secret|token|key)[A-Za-z_]*\s*[=:]\s*\S+"
    r"|://[^\s:/@]+:[^\s@]+@)", re.I)

errors = []


def err(msg):
    errors.append(msg)


def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()


def check_scenario(folder, seen_ids):
    sj = os.path.join(folder, "scenario.json")
    if not os.path.isfile(sj):
        err(f"{folder}: no scenario.json")
        return
    meta = json.load(open(sj, encoding="utf-8"))
    sid = meta.get("id")
    ws = meta.get("workspace")
    for k in ("id", "workspace", "language", "description", "author"):
        if not meta.get(k):
            err(f"{sid}: scenario.json lacks {k}")
    if os.path.basename(folder) != sid:
        err(f"{sid}: folder name differs")
    if not sid.startswith("iy-") or not ID_RE.match(sid):
        err(f"{sid}: bad scenario id")
    if not ws or not ID_RE.match(ws):
        err(f"{sid}: bad workspace name")
    root = os.path.join(folder, "root")
    for rel in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, rel)):
            err(f"{sid}: missing {rel}")
    if not os.path.isdir(os.path.join(root, "notes")):
        err(f"{sid}: missing notes/")
    md = []
    for dp, _, fns in os.walk(root):
        md += [os.path.join(dp, f) for f in fns if f.endswith(".md")]
    if not 20 <= len(md) <= 60:
        err(f"{sid}: {len(md)} markdown notes (want 20-60)")
    ledger = open(os.path.join(root, ws, "handoff/LEDGER.md"), encoding="utf-8").read()
    plan = open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read()
    if not 10000 <= len(ledger) <= 30000:
        err(f"{sid}: ledger {len(ledger)} chars")
    if not 2000 <= len(plan) <= 12000:
        err(f"{sid}: plan {len(plan)} chars")

    facts = [json.loads(l) for l in open(os.path.join(folder, "facts.jsonl"), encoding="utf-8") if l.strip()]
    if len(facts) != 20:
        err(f"{sid}: {len(facts)} facts (want 20)")
    for f in facts:
        fid = f.get("id")
        if fid in seen_ids:
            err(f"{fid}: duplicate id")
        seen_ids.add(fid)
        if f.get("scenario") != sid:
            err(f"{fid}: scenario field {f.get('scenario')}")
        if f.get("kind") not in KINDS:
            err(f"{fid}: bad kind {f.get('kind')}")
        if not f.get("note"):
            err(f"{fid}: no note")
        src = f.get("source", "")
        path = os.path.join(root, src)
        if not os.path.isfile(path):
            err(f"{fid}: source {src} missing")
            continue
        raw = open(path, encoding="utf-8").read()
        lines = [norm(l) for l in raw.splitlines()]
        secrets = [norm(m.group(0)) for m in SECRET_RE.finditer(raw)]
        ph = f.get("phrases", [])
        if not 1 <= len(ph) <= 4:
            err(f"{fid}: {len(ph)} phrases")
        for p in ph:
            if not 3 <= len(p) <= 80:
                err(f"{fid}: phrase length {len(p)}: {p!r}")
            if "\n" in p or "`" in p or "**" in p or "[x]" in p.lower() or "[ ]" in p \
                    or p.lstrip().startswith(("- ", "* ", "#", "> ")) or "#" in p:
                err(f"{fid}: markup in phrase {p!r}")
            n = norm(p)
            if not any(n in l for l in lines):
                err(f"{fid}: phrase not found within one line of {src}: {p!r}")
            for s in secrets:
                if n in s:
                    err(f"{fid}: phrase {p!r} lies inside a secret-shaped string")
    kinds = {f.get("kind") for f in facts}
    print(f"{sid}: {len(facts)} facts, kinds={sorted(kinds)}, md={len(md)}, "
          f"ledger={len(ledger)} chars, plan={len(plan)} chars, lang={meta.get('language')}")


def main():
    seen = set()
    for part in ("one", "two"):
        base = os.path.join(HERE, part)
        subs = [d for d in sorted(os.listdir(base)) if os.path.isdir(os.path.join(base, d))] if os.path.isdir(base) else []
        if len(subs) != 1:
            err(f"{part}: expected exactly one scenario folder, found {subs}")
        for d in subs:
            check_scenario(os.path.join(base, d), seen)
    if errors:
        print("\n".join("FAIL " + e for e in errors))
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
