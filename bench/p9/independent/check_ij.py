#!/usr/bin/env python3
"""Self-check for the ij- hand-off scenarios (stdlib only).

Usage: python3 check.py            (checks every scenario under dev/ and test/)
Exit code 0 = all checks passed.
"""
import json
import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
SCENARIO_KEYS = {"id", "workspace", "language", "description", "author"}
AUTHOR = "ij"
TAG = "ij-"

# secret-shaped strings engineers paste (fake values) -- phrases must never touch them
SECRET_RES = [
    re.compile(r"ghp_[A-Za-z0-9]{20,}"),
    re.compile(r"sk_(?:live|test)_[A-Za-z0-9]{16,}"),
    re.compile(r"rk_(?:live|test)_[A-Za-z0-9]{16,}"),
    re.compile(r"whsec_[A-Za-z0-9]{16,}"),
    re.compile(r"AKIA[A-Z0-9]{16}"),
    re.compile(r"xox[bp]-[A-Za-z0-9-]{10,}"),
    re.compile(r"(?i)(?:password|passwd|secret|token)\s*[=:]\s*\"?([^\s\";]{8,})"),
    re.compile(r"://[^/\s:@]+:([^@\s]{6,})@"),
]

# per-folder extra expectations taken from the task
EXPECT = {
    "dev": {"language": "ja", "ledger": (18000, 30000), "plan": (2000, 12000)},
    "test": {"language": "en", "ledger": (10000, 30000), "plan": (4000, 10000)},
}

errors = []


def err(msg):
    errors.append(msg)


def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()


def read(p):
    with open(p, encoding="utf-8") as f:
        return f.read()


def secrets_in(root):
    found = set()
    for d, _, fs in os.walk(root):
        for fn in fs:
            if not fn.endswith(".md"):
                continue
            txt = read(os.path.join(d, fn))
            for rx in SECRET_RES:
                for m in rx.finditer(txt):
                    val = m.group(1) if m.groups() else m.group(0)
                    found.add(val)
    return found


def check_dev_ledger(sid, ledger):
    lines = ledger.splitlines()
    sess = [(i, int(m.group(1))) for i, l in enumerate(lines)
            for m in [re.match(r"^## \d+/\d+ セッション(\d+)", l)] if m]
    nums = [n for _, n in sess]
    if len(nums) < 8 or nums != sorted(nums, reverse=True):
        err(f"{sid}: sessions not newest-first or too few: {nums}")
    status = [i for i, l in enumerate(lines) if l.startswith("## ") and "現状" in l]
    if not status:
        err(f"{sid}: no 現状 block")
    elif sess and status[0] < sess[0][0]:
        err(f"{sid}: 現状 block is at the top")
    tries = [l for l in lines if re.match(r"^### 試行\d+", l)]
    failed = [l for l in tries if "✗" in l]
    if len(failed) < 35:
        err(f"{sid}: only {len(failed)} failed attempts")
    return len(tries), len(failed)


def check_test_ledger(sid, ledger):
    rows = [l for l in ledger.splitlines() if re.match(r"^\|\s*~*\d+~*\s*\|", l)]
    if len(rows) < 40:
        err(f"{sid}: attempts table has only {len(rows)} rows")
    status = re.findall(r"^#+ .*STATUS \(updated", ledger, flags=re.M)
    if len(status) < 3:
        err(f"{sid}: expected >=3 STATUS blocks, found {len(status)}")
    for needle, what in [("- [ ]", "open checkbox"), ("- [x]", "done checkbox"),
                         ("~~", "strikethrough"), ("```", "code block")]:
        if needle not in ledger:
            err(f"{sid}: ledger lacks {what}")
    return len(rows)


def check_scenario(folder, sdir, seen_ids):
    sid = os.path.basename(sdir)
    meta = json.loads(read(os.path.join(sdir, "scenario.json")))
    if set(meta) != SCENARIO_KEYS:
        err(f"{sid}: scenario.json keys {sorted(meta)}")
    if meta.get("id") != sid or not re.fullmatch(r"[a-z0-9-]+", sid) or not sid.startswith(TAG):
        err(f"{sid}: bad id {meta.get('id')}")
    if meta.get("author") != AUTHOR:
        err(f"{sid}: author {meta.get('author')}")
    exp = EXPECT[folder]
    if meta.get("language") != exp["language"]:
        err(f"{sid}: language {meta.get('language')} != {exp['language']}")
    ws = meta.get("workspace", "")
    if not re.fullmatch(r"[a-z0-9-]+", ws):
        err(f"{sid}: bad workspace name {ws}")
    root = os.path.join(sdir, "root")
    for must in ["MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"]:
        if not os.path.isfile(os.path.join(root, must)):
            err(f"{sid}: missing {must}")
    mds = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".md")]
    if not 20 <= len(mds) <= 60:
        err(f"{sid}: {len(mds)} markdown notes (need 20-60)")
    others = [d for d in os.listdir(root)
              if os.path.isdir(os.path.join(root, d)) and d not in (ws, "notes")]
    if not others:
        err(f"{sid}: no decoy workspace")
    ledger = read(os.path.join(root, ws, "handoff", "LEDGER.md"))
    plan = read(os.path.join(root, ws, "PLAN.md"))
    lo, hi = exp["ledger"]
    if not lo <= len(ledger) <= hi:
        err(f"{sid}: ledger {len(ledger)} chars not in {lo}-{hi}")
    lo, hi = exp["plan"]
    if not lo <= len(plan) <= hi:
        err(f"{sid}: plan {len(plan)} chars not in {lo}-{hi}")
    extra = check_dev_ledger(sid, ledger) if folder == "dev" else check_test_ledger(sid, ledger)

    secrets = secrets_in(root)
    if len(secrets) < 2:
        err(f"{sid}: only {len(secrets)} secret-shaped strings")
    nsecrets = [norm(x) for x in secrets]

    facts = [json.loads(l) for l in read(os.path.join(sdir, "facts.jsonl")).splitlines() if l.strip()]
    if len(facts) != 20:
        err(f"{sid}: {len(facts)} facts")
    kinds = {}
    cache = {}
    for f in facts:
        fid = f.get("id")
        if fid in seen_ids:
            err(f"{sid}: duplicate fact id {fid}")
        seen_ids.add(fid)
        if set(f) != {"id", "scenario", "kind", "phrases", "source", "note"}:
            err(f"{fid}: keys {sorted(f)}")
        if f.get("scenario") != sid:
            err(f"{fid}: scenario {f.get('scenario')}")
        if f.get("kind") not in KINDS:
            err(f"{fid}: kind {f.get('kind')}")
        kinds[f.get("kind")] = kinds.get(f.get("kind"), 0) + 1
        src = os.path.join(root, f.get("source", ""))
        if not os.path.isfile(src):
            err(f"{fid}: source missing {f.get('source')}")
            continue
        if f["kind"] == "user_rule" and "/" in f["source"] and not f["source"].startswith("notes/"):
            err(f"{fid}: user_rule must come from a root-level note")
        if src not in cache:
            cache[src] = [norm(l) for l in read(src).splitlines()]
        nlines = cache[src]
        ph = f.get("phrases", [])
        if not 1 <= len(ph) <= 4:
            err(f"{fid}: {len(ph)} phrases")
        for p in ph:
            if not 3 <= len(p) <= 80:
                err(f"{fid}: phrase length {len(p)}: {p!r}")
            if re.search(r"\*\*|`|~~|^\s*(?:[-*+]\s|#|\d+\.\s|\[[ xX]\])|\[[ xX]\]", p):
                err(f"{fid}: markdown markup in phrase {p!r}")
            np_ = norm(p)
            if not any(np_ in l for l in nlines):
                err(f"{fid}: phrase not found on one line of {f['source']}: {p!r}")
            for s in nsecrets:
                if np_ in s or s in np_:
                    err(f"{fid}: phrase overlaps a secret-shaped string: {p!r}")
    return len(mds), len(ledger), len(plan), extra, kinds


def main():
    seen = set()
    n = 0
    for folder in ("dev", "test"):
        base = os.path.join(HERE, folder)
        if not os.path.isdir(base):
            err(f"missing folder {folder}/")
            continue
        for name in sorted(os.listdir(base)):
            if not name.startswith("ij-"):
                continue  # the other authors' scenarios share this folder
            sdir = os.path.join(base, name)
            if not os.path.isfile(os.path.join(sdir, "scenario.json")):
                continue
            n += 1
            mds, lg, pl, extra, kinds = check_scenario(folder, sdir, seen)
            print(f"{folder}/{name}: notes={mds} ledger={lg} plan={pl} attempts={extra} kinds={kinds}")
    if n != 2:
        err(f"expected 2 scenarios, found {n}")
    if errors:
        print("\nFAILED:")
        for e in errors:
            print("  -", e)
        sys.exit(1)
    print("\nOK: all checks passed")


if __name__ == "__main__":
    main()
