#!/usr/bin/env python3
"""Self-check for author-b scenarios (pure stdlib). Usage: python3 check.py [scenario_dir ...]"""
import json, os, re, sys, unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
# Scenarios whose brief asks for a deliberately *short* ledger (long PLAN history instead).
SHORT_LEDGER_OK = {"ib-en-reranker-regression": 4000}
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision", "command",
         "id_ref", "user_rule", "status_number"}
SECRET_RE = re.compile(r"(sk_(test|live)_|whsec_|ghp_|AKIA|xox[bp]-|glpat-|eyJ|://[^/\s:]+:[^@\s]+@|password=|PASSWORD=|token=|_KEY=|SECRET)")


def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()


def check_scenario(d):
    errs = []
    sid = os.path.basename(d.rstrip("/"))
    try:
        meta = json.load(open(os.path.join(d, "scenario.json"), encoding="utf-8"))
    except Exception as e:
        return [f"{sid}: scenario.json unreadable: {e}"], {}
    for k in ("id", "workspace", "language", "description", "author"):
        if k not in meta:
            errs.append(f"{sid}: scenario.json missing {k}")
    if meta.get("id") != sid:
        errs.append(f"{sid}: id mismatch {meta.get('id')}")
    if not re.fullmatch(r"ib-[a-z0-9-]+", sid):
        errs.append(f"{sid}: bad scenario id")
    ws = meta.get("workspace", "")
    if not re.fullmatch(r"[a-z0-9-]+", ws):
        errs.append(f"{sid}: bad workspace name {ws}")
    root = os.path.join(d, "root")
    for req in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, req)):
            errs.append(f"{sid}: missing {req}")
    mds = []
    for dp, _, fns in os.walk(root):
        for fn in fns:
            if fn.endswith(".md"):
                mds.append(os.path.join(dp, fn))
    if not (20 <= len(mds) <= 60):
        errs.append(f"{sid}: {len(mds)} md notes (want 20-60)")
    ledger = open(os.path.join(root, ws, "handoff/LEDGER.md"), encoding="utf-8").read()
    plan = open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read()
    if not (SHORT_LEDGER_OK.get(sid, 10000) <= len(ledger) <= 30000):
        errs.append(f"{sid}: ledger {len(ledger)} chars (want 10000-30000)")
    if not (2000 <= len(plan) <= 12000):
        errs.append(f"{sid}: plan {len(plan)} chars (want 2000-12000)")
    facts, ids = [], set()
    for i, line in enumerate(open(os.path.join(d, "facts.jsonl"), encoding="utf-8"), 1):
        if not line.strip():
            continue
        try:
            facts.append(json.loads(line))
        except Exception as e:
            errs.append(f"{sid}: facts line {i} bad json: {e}")
    if len(facts) != 20:
        errs.append(f"{sid}: {len(facts)} facts (want 20)")
    cache = {}
    for fa in facts:
        fid = fa.get("id")
        if fid in ids:
            errs.append(f"{sid}: duplicate fact id {fid}")
        ids.add(fid)
        if fa.get("scenario") != sid:
            errs.append(f"{fid}: scenario field {fa.get('scenario')}")
        if fa.get("kind") not in KINDS:
            errs.append(f"{fid}: bad kind {fa.get('kind')}")
        ph = fa.get("phrases") or []
        if not (1 <= len(ph) <= 4):
            errs.append(f"{fid}: {len(ph)} phrases")
        src = fa.get("source", "")
        sp = os.path.join(root, src)
        if not os.path.isfile(sp):
            errs.append(f"{fid}: source missing {src}")
            continue
        if fa.get("kind") == "user_rule" and "/" in src and not src.startswith("notes/"):
            errs.append(f"{fid}: user_rule source not root-level: {src}")
        if src not in cache:
            raw_lines = open(sp, encoding="utf-8").read().splitlines()
            cache[src] = (raw_lines, [norm(l) for l in raw_lines])
        raw_lines, lines = cache[src]
        for p in ph:
            if not (3 <= len(p) <= 80):
                errs.append(f"{fid}: phrase length {len(p)}: {p!r}")
            if re.search(r"\*\*|\[[ xX]\]|^#|^\s*[-*+] |`|~~", p):
                errs.append(f"{fid}: phrase has markup: {p!r}")
            if "\n" in p:
                errs.append(f"{fid}: phrase has newline")
            n = norm(p)
            hits = [i for i, l in enumerate(lines) if n in l]
            if not hits:
                errs.append(f"{fid}: phrase not found in {src}: {p!r}")
                continue
            if SECRET_RE.search(p):
                errs.append(f"{fid}: phrase looks secret-shaped: {p!r}")
            # phrase must not sit inside a secret-shaped token on its line
            for i in hits:
                for m in re.finditer(r"\S+", raw_lines[i]):
                    tok = m.group(0)
                    if SECRET_RE.search(tok) and norm(p) in norm(tok) and len(p) > 6:
                        errs.append(f"{fid}: phrase inside secret-shaped token: {p!r}")
    stats = {"id": sid, "lang": meta.get("language"), "notes": len(mds), "ledger": len(ledger),
             "plan": len(plan), "facts": len(facts)}
    return errs, stats


def main():
    dirs = sys.argv[1:]
    if not dirs:
        for sub in ("test", "dev"):
            p = os.path.join(HERE, sub)
            if os.path.isdir(p):
                dirs += sorted(os.path.join(p, x) for x in os.listdir(p) if os.path.isdir(os.path.join(p, x)) and x.startswith("ib-"))
    allerr = []
    for d in dirs:
        errs, st = check_scenario(d)
        allerr += errs
        print(f"{os.path.relpath(d, HERE):55s} {st.get('lang','?'):6s} notes={st.get('notes')} "
              f"ledger={st.get('ledger')} plan={st.get('plan')} facts={st.get('facts')} "
              f"{'OK' if not errs else 'FAIL'}")
    for e in allerr:
        print("  ERROR", e)
    print(f"{len(dirs)} scenarios, {len(allerr)} errors")
    sys.exit(1 if allerr else 0)


if __name__ == "__main__":
    main()
