#!/usr/bin/env python3
"""Self-check for ik- scenarios (stdlib only)."""
import json, os, re, sys, unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision", "command",
         "id_ref", "user_rule", "status_number"}
# (folder, ledger min, ledger max, plan min, plan max)
RANGES = {"dev": (14000, 24000, 2000, 12000), "test": (10000, 30000, 3000, 8000)}
MARKUP = re.compile(r"(\*\*|`|^\s*[-*+]\s|^\s*#|\[[ xX]\])")

def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s)

def main():
    errors, report = [], []
    all_ids = set()
    for folder, (lmin, lmax, pmin, pmax) in RANGES.items():
        base = os.path.join(HERE, folder)
        if not os.path.isdir(base):
            errors.append(f"missing folder {folder}"); continue
        for sid in sorted(os.listdir(base)):
            if not sid.startswith("ik-"):
                continue  # the other authors' scenarios share this folder
            d = os.path.join(base, sid)
            if not os.path.isdir(d):
                continue
            e = lambda m: errors.append(f"{folder}/{sid}: {m}")
            if not sid.startswith("ik-") or not re.fullmatch(r"[a-z0-9-]+", sid):
                e("bad scenario id")
            sc = json.load(open(os.path.join(d, "scenario.json"), encoding="utf-8"))
            for k in ("id", "workspace", "language", "description", "author"):
                if k not in sc: e(f"scenario.json lacks {k}")
            if sc.get("id") != sid: e("scenario id mismatch")
            if sc.get("author") != "ik": e("author must be ik")
            ws = sc["workspace"]
            root = os.path.join(d, "root")
            if not re.fullmatch(r"[a-z0-9-]+", ws): e("bad workspace name")
            for req in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
                if not os.path.isfile(os.path.join(root, req)): e(f"missing {req}")
            mds = [os.path.join(dp, f) for dp, _, fs in os.walk(root) for f in fs if f.endswith(".md")]
            others = [x for x in os.listdir(root) if os.path.isdir(os.path.join(root, x)) and x not in (ws, "notes")]
            if not (20 <= len(mds) <= 60): e(f"{len(mds)} notes, want 20-60")
            if not others: e("no decoy workspace")
            led = len(open(os.path.join(root, ws, "handoff/LEDGER.md"), encoding="utf-8").read())
            plan = len(open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read())
            if not (lmin <= led <= lmax): e(f"ledger {led} chars not in {lmin}-{lmax}")
            if not (pmin <= plan <= pmax): e(f"plan {plan} chars not in {pmin}-{pmax}")
            facts = [json.loads(l) for l in open(os.path.join(d, "facts.jsonl"), encoding="utf-8") if l.strip()]
            if len(facts) != 20: e(f"{len(facts)} facts, want 20")
            cache = {}
            for f in facts:
                fid = f.get("id")
                if fid in all_ids: e(f"duplicate id {fid}")
                all_ids.add(fid)
                if f.get("scenario") != sid: e(f"{fid}: scenario mismatch")
                if f.get("kind") not in KINDS: e(f"{fid}: bad kind {f.get('kind')}")
                if not f.get("note"): e(f"{fid}: no note")
                ph = f.get("phrases", [])
                if not (1 <= len(ph) <= 4): e(f"{fid}: {len(ph)} phrases")
                src = f.get("source", "")
                p = os.path.join(root, src)
                if not os.path.isfile(p): e(f"{fid}: source {src} missing"); continue
                if f["kind"] == "user_rule" and src.startswith(ws + "/"):
                    e(f"{fid}: user_rule must come from a root-level note")
                if src not in cache:
                    raw = open(p, encoding="utf-8").read()
                    cache[src] = (norm(raw), [norm(x) for x in raw.splitlines()])
                whole, lines = cache[src]
                for x in ph:
                    if not (3 <= len(x) <= 80): e(f"{fid}: phrase length {len(x)}: {x!r}")
                    if "\n" in x or MARKUP.search(x): e(f"{fid}: markup/newline in {x!r}")
                    nx = norm(x)
                    if nx not in whole: e(f"{fid}: phrase not in {src}: {x!r}")
                    elif not any(nx in ln for ln in lines): e(f"{fid}: phrase spans lines: {x!r}")
            report.append(f"{folder}/{sid}: notes={len(mds)} ledger={led} plan={plan} facts={len(facts)} decoys={others}")
    print("\n".join(report))
    if errors:
        print("\nERRORS:\n" + "\n".join(errors)); sys.exit(1)
    print("OK")

if __name__ == "__main__":
    main()
