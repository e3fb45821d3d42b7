#!/usr/bin/env python3
"""Validate the near-miss recall test set (stdlib only).

Usage: python3 check.py [ROOT_DIR ...]   (default: dev test next to this file)

Checks per root:
  - queries.jsonl parses; each record has qid, query, workspace, kind, gold
  - qids unique (also across roots), kinds in {answerable, near_miss}
  - workspace exists under root/
  - answerable: gold non-empty; every gold path exists, lies inside the asked workspace,
    1 <= line_start <= line_end <= number of lines in the file
  - near_miss: gold empty; the same query is not also answerable in the same workspace
  - counts: >= 80 answerable and >= 60 near_miss per root (brief targets)
  - structure: 4-6 workspaces; notes per workspace and average lines are reported
    (15-40 notes and 40-200 average lines are the brief's targets; reported as warnings)
Exit status 0 if no errors.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MIN_ANS, MIN_NM = 80, 60


def check_root(rdir, all_qids):
    errors, warnings = [], []
    name = os.path.basename(rdir.rstrip("/"))
    root = os.path.join(rdir, "root")
    qpath = os.path.join(rdir, "queries.jsonl")
    if not os.path.isdir(root):
        return [f"{name}: missing {root}"], warnings
    if not os.path.isfile(qpath):
        return [f"{name}: missing {qpath}"], warnings
    wss = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    if not 4 <= len(wss) <= 6:
        errors.append(f"{name}: {len(wss)} workspaces (want 4-6)")
    line_counts = {}
    for ws in wss:
        files = []
        for dp, _, fns in os.walk(os.path.join(root, ws)):
            for fn in fns:
                if fn.endswith(".md"):
                    p = os.path.join(dp, fn)
                    with open(p, encoding="utf-8") as f:
                        n = len(f.read().splitlines())
                    files.append(n)
                    line_counts[os.path.relpath(p, root)] = n
        avg = sum(files) / len(files) if files else 0
        if not 15 <= len(files) <= 40:
            warnings.append(f"{name}/{ws}: {len(files)} notes (brief target 15-40)")
        if not 40 <= avg <= 200:
            warnings.append(f"{name}/{ws}: average {avg:.1f} lines per note (brief target 40-200)")
        print(f"  {name}/{ws}: {len(files)} notes, avg {avg:.1f} lines")
    counts = {"answerable": 0, "near_miss": 0}
    per_ws = {ws: {"answerable": 0, "near_miss": 0} for ws in wss}
    answerable_pairs = set()
    near = []
    with open(qpath, encoding="utf-8") as f:
        for ln, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                q = json.loads(raw)
            except json.JSONDecodeError as e:
                errors.append(f"{name}:{ln}: bad JSON: {e}")
                continue
            for k in ("qid", "query", "workspace", "kind", "gold"):
                if k not in q:
                    errors.append(f"{name}:{ln}: missing field {k}")
            if any(k not in q for k in ("qid", "query", "workspace", "kind", "gold")):
                continue
            qid = q["qid"]
            if qid in all_qids:
                errors.append(f"{name}:{ln}: duplicate qid {qid}")
            all_qids.add(qid)
            if not isinstance(q["query"], str) or not q["query"].strip():
                errors.append(f"{qid}: empty query")
            if q["workspace"] not in wss:
                errors.append(f"{qid}: unknown workspace {q['workspace']!r}")
                continue
            kind = q["kind"]
            if kind not in counts:
                errors.append(f"{qid}: invalid kind {kind!r}")
                continue
            counts[kind] += 1
            per_ws[q["workspace"]][kind] += 1
            gold = q["gold"]
            if not isinstance(gold, list):
                errors.append(f"{qid}: gold is not a list")
                continue
            if kind == "near_miss":
                if gold:
                    errors.append(f"{qid}: near_miss with non-empty gold")
                near.append((q["workspace"], q["query"], qid))
                continue
            if not gold:
                errors.append(f"{qid}: answerable without gold")
            answerable_pairs.add((q["workspace"], q["query"]))
            for g in gold:
                try:
                    path, a, b = g["path"], g["line_start"], g["line_end"]
                except (KeyError, TypeError):
                    errors.append(f"{qid}: malformed gold entry {g!r}")
                    continue
                if path not in line_counts:
                    errors.append(f"{qid}: gold path does not exist: {path}")
                    continue
                if path.split("/", 1)[0] != q["workspace"]:
                    errors.append(f"{qid}: gold path {path} outside workspace {q['workspace']}")
                if not (isinstance(a, int) and isinstance(b, int) and 1 <= a <= b <= line_counts[path]):
                    errors.append(f"{qid}: bad range {a}-{b} for {path} ({line_counts[path]} lines)")
    for ws, qtext, qid in near:
        if (ws, qtext) in answerable_pairs:
            errors.append(f"{qid}: near_miss query is also answerable in {ws}")
    if counts["answerable"] < MIN_ANS:
        errors.append(f"{name}: only {counts['answerable']} answerable (want >= {MIN_ANS})")
    if counts["near_miss"] < MIN_NM:
        errors.append(f"{name}: only {counts['near_miss']} near_miss (want >= {MIN_NM})")
    print(f"  {name}: answerable {counts['answerable']}, near_miss {counts['near_miss']}")
    for ws in wss:
        print(f"    {ws}: answerable {per_ws[ws]['answerable']}, near_miss {per_ws[ws]['near_miss']}")
    return errors, warnings


def main():
    roots = sys.argv[1:] or [os.path.join(HERE, "dev"), os.path.join(HERE, "test")]
    all_qids = set()
    errs, warns = [], []
    for r in roots:
        print(f"checking {r}")
        e, w = check_root(r, all_qids)
        errs += e
        warns += w
    for w in warns:
        print("WARNING:", w)
    for e in errs:
        print("ERROR:", e)
    print("OK" if not errs else f"FAILED ({len(errs)} errors)")
    sys.exit(1 if errs else 0)


if __name__ == "__main__":
    main()
