#!/usr/bin/env python3
"""Self-check for author-id scenarios (pure stdlib)."""
import json, os, re, sys, unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
MARKUP = re.compile(r"(\*\*|^\s*[-*+]\s|\[[ xX]\]|^#|`)")
SECRET = re.compile(r"(AIza[0-9A-Za-z_-]{10,}|sntrys_[A-Za-z0-9_]+|sk_(live|test)_[A-Za-z0-9]+|"
                    r"ghp_[A-Za-z0-9]+|xox[bap]-[A-Za-z0-9-]+|AKIA[0-9A-Z]{12,}|"
                    r"eyJ[A-Za-z0-9_-]{10,}|://[^/\s:]+:[^@\s]+@)")

def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s)

def check_scenario(d, errs):
    sc = json.load(open(os.path.join(d, "scenario.json"), encoding="utf-8"))
    sid = os.path.basename(d)
    for k in ("id", "workspace", "language", "description", "author"):
        if k not in sc: errs.append(f"{sid}: scenario.json lacks {k}")
    if sc.get("id") != sid: errs.append(f"{sid}: id mismatch {sc.get('id')}")
    if not re.fullmatch(r"id-[a-z0-9-]+", sid): errs.append(f"{sid}: bad id")
    if sc.get("author") != "author-id": errs.append(f"{sid}: author")
    root = os.path.join(d, "root"); ws = sc["workspace"]
    if not re.fullmatch(r"[a-z0-9-]+", ws): errs.append(f"{sid}: bad ws")
    for req in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, req)): errs.append(f"{sid}: missing {req}")
    mds = [os.path.join(a, f) for a, _, fs in os.walk(root) for f in fs if f.endswith(".md")]
    if not 20 <= len(mds) <= 60: errs.append(f"{sid}: {len(mds)} md notes")
    if not os.path.isdir(os.path.join(root, "notes")): errs.append(f"{sid}: no root notes/")
    led = open(os.path.join(root, ws, "handoff/LEDGER.md"), encoding="utf-8").read()
    plan = open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read()
    if not 10000 <= len(led) <= 30000: errs.append(f"{sid}: ledger {len(led)} chars")
    if not 2000 <= len(plan) <= 12000: errs.append(f"{sid}: plan {len(plan)} chars")
    facts = [json.loads(l) for l in open(os.path.join(d, "facts.jsonl"), encoding="utf-8") if l.strip()]
    if len(facts) != 20: errs.append(f"{sid}: {len(facts)} facts")
    ids = [f["id"] for f in facts]
    if len(set(ids)) != len(ids): errs.append(f"{sid}: duplicate fact ids")
    cache = {}
    for f in facts:
        fid = f.get("id")
        if f.get("scenario") != sid: errs.append(f"{fid}: scenario field")
        if f.get("kind") not in KINDS: errs.append(f"{fid}: kind {f.get('kind')}")
        ph = f.get("phrases", [])
        if not 1 <= len(ph) <= 4: errs.append(f"{fid}: {len(ph)} phrases")
        src = f.get("source", "")
        if f.get("kind") == "user_rule" and src.startswith(ws + "/"):
            errs.append(f"{fid}: user_rule must come from a root-level note")
        p = os.path.join(root, src)
        if not os.path.isfile(p): errs.append(f"{fid}: no source {src}"); continue
        if p not in cache:
            raw = open(p, encoding="utf-8").read()
            cache[p] = (norm(raw), [norm(x) for x in raw.splitlines()], raw.splitlines())
        whole, lines, rawlines = cache[p]
        for x in ph:
            if not 3 <= len(x) <= 80: errs.append(f"{fid}: phrase length {x!r}")
            if MARKUP.search(x): errs.append(f"{fid}: markup in {x!r}")
            n = norm(x).strip()
            hit = [i for i, l in enumerate(lines) if n in l]
            if not hit: errs.append(f"{fid}: phrase not on any single line: {x!r}"); continue
            for i in hit:
                for m in SECRET.finditer(rawlines[i]):
                    if n in norm(m.group(0)): errs.append(f"{fid}: phrase inside secret {x!r}")
    return len(led), len(plan), len(mds)

def main():
    errs = []
    for split in ("dev", "test"):
        base = os.path.join(HERE, split)
        if not os.path.isdir(base): errs.append(f"missing {split}/"); continue
        scs = sorted(x for x in os.listdir(base) if x.startswith("id-") and os.path.isdir(os.path.join(base, x)))
        if len(scs) != 1: errs.append(f"{split}: expected 1 scenario, got {scs}")
        for s in scs:
            try:
                led, plan, n = check_scenario(os.path.join(base, s), errs)
                print(f"{split}/{s}: ledger={led} plan={plan} md_notes={n}")
            except Exception as e:
                errs.append(f"{s}: {e!r}")
    for e in errs: print("ERROR", e)
    print("OK" if not errs else f"{len(errs)} error(s)")
    sys.exit(1 if errs else 0)

if __name__ == "__main__":
    main()
