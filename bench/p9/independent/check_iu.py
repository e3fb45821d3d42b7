#!/usr/bin/env python3
"""Checks the iu scenarios (one/ and two/) against the brief's rules. Pure stdlib."""
import json, os, re, sys, unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
MARKUP = re.compile(r"(\*\*|`|^\s*[-*+]\s|^\s*#|\[[ xX~]\]|~~)")
SECRETISH = re.compile(r"(token|password|secret|api_key|_KEY=|redis://:|postgres(ql)?://[^ ]*:[^ ]*@)", re.I)


def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()


def check_scenario(folder, errors):
    sid = os.path.basename(folder)
    def err(m):
        errors.append(f"[{sid}] {m}")
    if not re.fullmatch(r"iu-[a-z0-9-]+", sid):
        err("scenario id must be lowercase ascii/digits/- and start with iu-")
    meta = json.load(open(os.path.join(folder, "scenario.json"), encoding="utf-8"))
    for k in ("id", "workspace", "language", "description", "author"):
        if k not in meta:
            err(f"scenario.json missing {k}")
    if meta.get("id") != sid:
        err("scenario.json id != folder name")
    ws = meta["workspace"]
    if not re.fullmatch(r"[a-z0-9-]+", ws):
        err("bad workspace name")
    root = os.path.join(folder, "root")
    for req in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, req)):
            err(f"missing {req}")
    if not os.path.isdir(os.path.join(root, "notes")):
        err("missing root notes/")
    md = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".md")]
    if not 20 <= len(md) <= 60:
        err(f"{len(md)} markdown notes, need 20-60")
    ledger = open(os.path.join(root, ws, "handoff", "LEDGER.md"), encoding="utf-8").read()
    plan = open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read()
    if not 10000 <= len(ledger) <= 30000:
        err(f"ledger {len(ledger)} chars, need 10000-30000")
    if not 2000 <= len(plan) <= 12000:
        err(f"plan {len(plan)} chars, need 2000-12000")

    lines_cache = {}
    facts = [json.loads(l) for l in open(os.path.join(folder, "facts.jsonl"), encoding="utf-8") if l.strip()]
    if len(facts) != 20:
        err(f"{len(facts)} facts, need 20")
    ids = [f.get("id") for f in facts]
    if len(set(ids)) != len(ids):
        err("duplicate fact ids")
    for f in facts:
        fid = f.get("id")
        for k in ("id", "scenario", "kind", "phrases", "source", "note"):
            if k not in f:
                err(f"{fid}: missing {k}")
        if f.get("scenario") != sid:
            err(f"{fid}: scenario field mismatch")
        if f.get("kind") not in KINDS:
            err(f"{fid}: bad kind {f.get('kind')}")
        src = f.get("source", "")
        if f.get("kind") == "user_rule" and not (src == "MEMORY.md" or src.startswith("notes/")):
            err(f"{fid}: user_rule must come from a root-level note")
        path = os.path.join(root, src)
        if not os.path.isfile(path):
            err(f"{fid}: source {src} not found")
            continue
        if src not in lines_cache:
            raw = open(path, encoding="utf-8").read().splitlines()
            lines_cache[src] = [(r, norm(r)) for r in raw]
        lines = lines_cache[src]
        ph = f.get("phrases", [])
        if not 1 <= len(ph) <= 4:
            err(f"{fid}: need 1-4 phrases")
        for p in ph:
            if not 3 <= len(p) <= 80:
                err(f"{fid}: phrase length {len(p)}: {p!r}")
            if MARKUP.search(p):
                err(f"{fid}: phrase has markup: {p!r}")
            np_ = norm(p)
            hits = [r for r, n in lines if np_ in n]
            if not hits:
                err(f"{fid}: phrase not found on any single line of {src}: {p!r}")
            elif all(SECRETISH.search(r) for r in hits):
                err(f"{fid}: phrase only occurs on secret-looking lines: {p!r}")
    return len(ledger), len(plan), len(md)


def main():
    errors = []
    found = 0
    for sub in ("one", "two"):
        base = os.path.join(HERE, sub)
        if not os.path.isdir(base):
            errors.append(f"missing folder {sub}/")
            continue
        scen = [d for d in sorted(os.listdir(base)) if os.path.isdir(os.path.join(base, d))]
        if len(scen) != 1:
            errors.append(f"{sub}/ should hold exactly one scenario, has {scen}")
        for d in scen:
            L, P, n = check_scenario(os.path.join(base, d), errors)
            found += 1
            print(f"{sub}/{d}: ledger={L} plan={P} md_notes={n}")
    if errors:
        print("\n".join("FAIL " + e for e in errors))
        sys.exit(1)
    print(f"OK: {found} scenarios pass")


if __name__ == "__main__":
    main()
