#!/usr/bin/env python3
"""Self-check for author-a scenarios (stdlib only)."""
import json, os, re, sys, unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
SECRET_RE = re.compile(r"(sk_live_|sk-|ghp_|xox[bp]-|AKIA|eyJ|glpat-|npm_|password=|:[^@\s]{6,}@)", re.I)

def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()

def check_scenario(path):
    errs = []
    sid = os.path.basename(path)
    try:
        meta = json.load(open(os.path.join(path, "scenario.json"), encoding="utf-8"))
    except Exception as e:
        return [f"{sid}: scenario.json unreadable: {e}"]
    if meta.get("id") != sid:
        errs.append(f"{sid}: id mismatch {meta.get('id')}")
    if not re.fullmatch(r"ia-[a-z0-9-]+", sid):
        errs.append(f"{sid}: bad id")
    for k in ("workspace", "language", "description", "author"):
        if not meta.get(k):
            errs.append(f"{sid}: scenario.json missing {k}")
    ws = meta.get("workspace", "")
    if not re.fullmatch(r"[a-z0-9-]+", ws):
        errs.append(f"{sid}: bad workspace name {ws}")
    root = os.path.join(path, "root")
    mds = []
    for dp, dn, fn in os.walk(root):
        for f in fn:
            if f.endswith(".md"):
                mds.append(os.path.join(dp, f))
    if not (20 <= len(mds) <= 60):
        errs.append(f"{sid}: {len(mds)} md files (want 20-60)")
    for req in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, req)):
            errs.append(f"{sid}: missing {req}")
    sizes = {}
    for name, lo, hi in ((f"{ws}/handoff/LEDGER.md", 10000, 30000), (f"{ws}/PLAN.md", 2000, 12000)):
        p = os.path.join(root, name)
        if os.path.isfile(p):
            n = len(open(p, encoding="utf-8").read())
            sizes[name] = n
            if not (lo <= n <= hi):
                errs.append(f"{sid}: {name} has {n} chars (want {lo}-{hi})")
    facts, ids = [], set()
    with open(os.path.join(path, "facts.jsonl"), encoding="utf-8") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                facts.append(json.loads(line))
            except Exception as e:
                errs.append(f"{sid}: facts line {i} bad json: {e}")
    if len(facts) != 20:
        errs.append(f"{sid}: {len(facts)} facts (want 20)")
    cache = {}
    for f in facts:
        fid = f.get("id")
        if fid in ids:
            errs.append(f"{sid}: duplicate fact id {fid}")
        ids.add(fid)
        if f.get("scenario") != sid:
            errs.append(f"{sid}: {fid} scenario field wrong")
        if f.get("kind") not in KINDS:
            errs.append(f"{sid}: {fid} bad kind {f.get('kind')}")
        src = f.get("source", "")
        sp = os.path.join(root, src)
        if not os.path.isfile(sp):
            errs.append(f"{sid}: {fid} source missing {src}")
            continue
        if f.get("kind") == "user_rule" and (src.startswith(ws + "/") or "/" in src and not src.startswith("notes/")):
            errs.append(f"{sid}: {fid} user_rule not from a root note: {src}")
        if sp not in cache:
            txt = open(sp, encoding="utf-8").read()
            cache[sp] = [norm(l) for l in txt.splitlines()]
        lines = cache[sp]
        ph = f.get("phrases", [])
        if not (1 <= len(ph) <= 4):
            errs.append(f"{sid}: {fid} has {len(ph)} phrases")
        for p in ph:
            if not (3 <= len(p) <= 80):
                errs.append(f"{sid}: {fid} phrase length {len(p)}: {p!r}")
            if re.search(r"(\*\*|^#|^\s*[-*] |\[x\]|\[ \]|`|\||~~)", p):
                errs.append(f"{sid}: {fid} phrase has markup: {p!r}")
            if SECRET_RE.search(p):
                errs.append(f"{sid}: {fid} phrase looks secret-shaped: {p!r}")
            np_ = norm(p)
            if not any(np_ in l for l in lines):
                errs.append(f"{sid}: {fid} phrase not found on one line of {src}: {p!r}")
    return errs, len(mds), sizes, len(facts)

def main():
    allerr, n = [], 0
    for split in ("dev", "test"):
        d = os.path.join(HERE, split)
        if not os.path.isdir(d):
            continue
        for s in sorted(os.listdir(d)):
            p = os.path.join(d, s)
            if not os.path.isdir(p) or not s.startswith("ia-"):
                continue  # the other authors' scenarios share this folder
            res = check_scenario(p)
            if isinstance(res, list):
                allerr += res; continue
            errs, nmd, sizes, nf = res
            n += 1
            print(f"{split}/{s}: {nmd} md files, facts={nf}, " +
                  ", ".join(f"{os.path.basename(k)}={v}" for k, v in sizes.items()) +
                  ("  OK" if not errs else f"  {len(errs)} error(s)"))
            allerr += errs
    for e in allerr:
        print("ERROR:", e)
    print(f"{n} scenarios checked, {len(allerr)} errors")
    sys.exit(1 if allerr else 0)

if __name__ == "__main__":
    main()
