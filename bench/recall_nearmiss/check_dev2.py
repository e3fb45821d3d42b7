#!/usr/bin/env python3
"""Checks the ie recall set (stdlib only).

Usage: python3 check.py [OUT_DIR]   (default: the folder this file is in)

For every root present (dev, and test if it exists) verifies:
  - queries.jsonl parses; each record has qid/query/workspace/kind/gold
  - qids unique across all roots and start with "ie-"
  - kind is "answerable" or "near_miss"
  - the workspace folder exists under <root>/root/
  - answerable: gold non-empty; every gold path exists, lies in the asked
    workspace, and 1 <= line_start <= line_end <= number of lines in the file
  - near_miss: gold is empty; the same query text is not also an answerable
    query of the same workspace
  - counts: >= 80 answerable and >= 60 near_miss per root
  - 4-6 workspaces per root, 15-40 notes per workspace, average lines per note
    per workspace >= 40 (reported; fails only if < 40)
Exit status 0 if everything passes, 1 otherwise.
"""
import json, os, sys

def count_lines(path):
    with open(path, encoding="utf-8") as f:
        return len(f.read().splitlines())

def check_root(name, rdir, seen, errs):
    qfile = os.path.join(rdir, "queries.jsonl")
    notes = os.path.join(rdir, "root")
    if not os.path.isfile(qfile): errs.append(f"{name}: missing queries.jsonl"); return
    if not os.path.isdir(notes): errs.append(f"{name}: missing root/"); return
    wss = sorted(d for d in os.listdir(notes) if os.path.isdir(os.path.join(notes, d)))
    if not 4 <= len(wss) <= 6: errs.append(f"{name}: {len(wss)} workspaces (want 4-6)")
    print(f"[{name}] workspaces: {len(wss)}")
    for ws in wss:
        files = [os.path.join(d, f) for d, _, fs in os.walk(os.path.join(notes, ws)) for f in fs if f.endswith(".md")]
        n = len(files); tot = sum(count_lines(f) for f in files)
        avg = tot / n if n else 0
        print(f"  {ws:22s} notes={n:3d} lines={tot:5d} avg={avg:5.1f}")
        if not 15 <= n <= 40: errs.append(f"{name}/{ws}: {n} notes (want 15-40)")
        if avg < 40: errs.append(f"{name}/{ws}: average {avg:.1f} lines per note (want >= 40)")
    kinds = {"answerable": 0, "near_miss": 0}
    per_ws = {}
    answerable_text = set()
    recs = []
    with open(qfile, encoding="utf-8") as f:
        for ln, line in enumerate(f, 1):
            if not line.strip(): continue
            try: r = json.loads(line)
            except json.JSONDecodeError as e: errs.append(f"{name}:{ln}: bad JSON ({e})"); continue
            recs.append((ln, r))
            if r.get("kind") == "answerable": answerable_text.add((r.get("workspace"), r.get("query")))
    for ln, r in recs:
        where = f"{name}:{ln}"
        missing = [k for k in ("qid", "query", "workspace", "kind", "gold") if k not in r]
        if missing: errs.append(f"{where}: missing fields {missing}"); continue
        qid, ws, kind, gold = r["qid"], r["workspace"], r["kind"], r["gold"]
        if not str(qid).startswith("ie-"): errs.append(f"{where}: qid {qid} does not start with 'ie-'")
        if qid in seen: errs.append(f"{where}: duplicate qid {qid}")
        seen.add(qid)
        if not isinstance(r["query"], str) or not r["query"].strip(): errs.append(f"{where}: empty query")
        if ws not in wss: errs.append(f"{where}: workspace {ws!r} not in {name}/root")
        if kind not in kinds: errs.append(f"{where}: bad kind {kind!r}"); continue
        kinds[kind] += 1
        per_ws.setdefault(ws, {"answerable": 0, "near_miss": 0})[kind] += 1
        if not isinstance(gold, list): errs.append(f"{where}: gold is not a list"); continue
        if kind == "near_miss":
            if gold: errs.append(f"{where}: near_miss with non-empty gold")
            if (ws, r["query"]) in answerable_text: errs.append(f"{where}: near_miss text is also answerable in {ws}")
            continue
        if not gold: errs.append(f"{where}: answerable without gold")
        for g in gold:
            try: p, a, b = g["path"], g["line_start"], g["line_end"]
            except (KeyError, TypeError): errs.append(f"{where}: malformed gold {g!r}"); continue
            full = os.path.join(notes, p)
            if not os.path.isfile(full): errs.append(f"{where}: gold path missing: {p}"); continue
            if p.split("/")[0] != ws: errs.append(f"{where}: gold {p} outside workspace {ws}")
            n = count_lines(full)
            if not (isinstance(a, int) and isinstance(b, int) and 1 <= a <= b <= n):
                errs.append(f"{where}: bad range {a}-{b} in {p} ({n} lines)")
    print(f"  queries: {kinds['answerable']} answerable, {kinds['near_miss']} near_miss")
    for ws in sorted(per_ws): print(f"    {ws:22s} {per_ws[ws]}")
    if kinds["answerable"] < 80: errs.append(f"{name}: only {kinds['answerable']} answerable (want >= 80)")
    if kinds["near_miss"] < 60: errs.append(f"{name}: only {kinds['near_miss']} near_miss (want >= 60)")

def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    errs, seen, found = [], set(), 0
    for name in ("dev2",):
        d = os.path.join(out, name)
        if os.path.isdir(d):
            found += 1; check_root(name, d, seen, errs)
    if not found: errs.append("no dev/ or test/ root found")
    if errs:
        print("\nFAIL"); [print("  -", e) for e in errs]; sys.exit(1)
    print("\nOK"); sys.exit(0)

if __name__ == "__main__":
    main()
