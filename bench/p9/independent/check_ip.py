#!/usr/bin/env python3
"""Validate the ip scenarios against the brief (stdlib only).

usage: python3 check.py            # checks dev/* and test/* under this folder
"""
import json
import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
TAG = "ip-"
ID_RE = re.compile(r"^[a-z0-9-]+$")
# secret-shaped tokens: long mixed letter/digit strings, AWS keys, password=..., user:pass@host
SECRET_RES = [
    re.compile(r"AKIA[0-9A-Z]{16}"),
    re.compile(r"(?i)(secret|password|passwd|token)[A-Z_]*\s*[=:]\s*\S+"),
    re.compile(r"://[^/\s:@]+:[^@\s]+@"),
    re.compile(r"\b(?=[A-Za-z0-9_+/-]*\d)(?=[A-Za-z0-9_+/-]*[A-Za-z])[A-Za-z0-9_+/-]{28,}\b"),
]
MARKUP_RES = [re.compile(r"`"), re.compile(r"\*\*"), re.compile(r"^\s*([-*+]|\d+\.)\s"),
              re.compile(r"^\s*#"), re.compile(r"\[[ xX]\]"), re.compile(r"~~")]

errors = []


def err(msg):
    errors.append(msg)


def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()


def md_files(root):
    out = []
    for d, _, fs in os.walk(root):
        out += [os.path.join(d, f) for f in fs if f.endswith(".md")]
    return out


def check_scenario(sdir, split):
    sid = os.path.basename(sdir)
    where = f"{split}/{sid}"
    if not sid.startswith(TAG) or not ID_RE.match(sid):
        err(f"{where}: bad scenario id")
    try:
        meta = json.load(open(os.path.join(sdir, "scenario.json"), encoding="utf-8"))
    except Exception as e:  # noqa
        err(f"{where}: scenario.json unreadable: {e}")
        return
    for k in ("id", "workspace", "language", "description", "author"):
        if not meta.get(k):
            err(f"{where}: scenario.json missing {k}")
    if meta.get("id") != sid:
        err(f"{where}: scenario.json id {meta.get('id')!r} != folder name")
    ws = meta.get("workspace", "")
    if not ID_RE.match(ws):
        err(f"{where}: bad workspace name {ws!r}")
    root = os.path.join(sdir, "root")
    for rel in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, rel)):
            err(f"{where}: missing root/{rel}")
    n_md = len(md_files(root))
    if not 20 <= n_md <= 60:
        err(f"{where}: {n_md} markdown notes (want 20-60)")
    ledger = open(os.path.join(root, ws, "handoff", "LEDGER.md"), encoding="utf-8").read()
    plan = open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read()
    if not 10000 <= len(ledger) <= 30000:
        err(f"{where}: ledger {len(ledger)} chars (want 10000-30000)")
    if not 2000 <= len(plan) <= 12000:
        err(f"{where}: plan {len(plan)} chars (want 2000-12000)")

    # facts
    facts = []
    for i, line in enumerate(open(os.path.join(sdir, "facts.jsonl"), encoding="utf-8"), 1):
        if not line.strip():
            continue
        try:
            facts.append(json.loads(line))
        except Exception as e:  # noqa
            err(f"{where}: facts.jsonl line {i}: {e}")
    if len(facts) != 20:
        err(f"{where}: {len(facts)} facts (want 20)")
    ids = [f.get("id") for f in facts]
    if len(set(ids)) != len(ids):
        err(f"{where}: duplicate fact ids")
    cache = {}
    for f in facts:
        fid = f.get("id")
        for k in ("id", "scenario", "kind", "phrases", "source", "note"):
            if k not in f:
                err(f"{where}/{fid}: missing {k}")
        if f.get("scenario") != sid:
            err(f"{where}/{fid}: scenario mismatch")
        if f.get("kind") not in KINDS:
            err(f"{where}/{fid}: bad kind {f.get('kind')}")
        src = f.get("source", "")
        if f.get("kind") == "user_rule" and src.startswith(ws + "/"):
            err(f"{where}/{fid}: user_rule must come from a root-level note")
        path = os.path.join(root, src)
        if not os.path.isfile(path):
            err(f"{where}/{fid}: source {src} not found")
            continue
        if src not in cache:
            raw = open(path, encoding="utf-8").read()
            lines = raw.splitlines()
            spans = []
            for ln in lines:
                for rx in SECRET_RES:
                    spans += [norm(m.group(0)) for m in rx.finditer(ln)]
            cache[src] = ([norm(ln) for ln in lines], spans)
        nlines, secrets = cache[src]
        ph = f.get("phrases", [])
        if not 1 <= len(ph) <= 4:
            err(f"{where}/{fid}: {len(ph)} phrases (want 1-4)")
        for p in ph:
            if not 3 <= len(p) <= 80:
                err(f"{where}/{fid}: phrase length {len(p)}: {p!r}")
            for rx in MARKUP_RES:
                if rx.search(p):
                    err(f"{where}/{fid}: markup in phrase {p!r}")
            np_ = norm(p)
            if not any(np_ in ln for ln in nlines):
                err(f"{where}/{fid}: phrase not in one line of {src}: {p!r}")
            for s in secrets:
                if np_ in s or s in np_:
                    err(f"{where}/{fid}: phrase overlaps secret-shaped string: {p!r}")
    print(f"{where}: {len(facts)} facts, {n_md} notes, ledger {len(ledger)} chars, plan {len(plan)} chars")
    return ledger


def main():
    found = 0
    for split in ("dev", "test"):
        base = os.path.join(HERE, split)
        if not os.path.isdir(base):
            err(f"missing folder {split}/")
            continue
        for sid in sorted(os.listdir(base)):
            sdir = os.path.join(base, sid)
            if os.path.isdir(sdir) and sid.startswith(TAG):  # the other authors share this folder
                found += 1
                ledger = check_scenario(sdir, split)
                if ledger is None:
                    continue
                if split == "dev":
                    # newest session first: session numbers must descend
                    nums = [int(n) for n in re.findall(r"(?im)^#{2,3} .*?sess[aã]o (\d+)", ledger)]
                    if len(nums) < 8 or nums != sorted(nums, reverse=True):
                        err(f"{split}/{sid}: sessions not newest-first: {nums}")
                else:
                    heads = re.findall(r"(?m)^#{1,6} ", ledger)
                    if len(heads) > 1:
                        err(f"{split}/{sid}: ledger should have no section headings ({len(heads)})")
                    items = re.findall(r"(?m)^(\d+)\. ", ledger)
                    if not 45 <= len(items) <= 60:
                        err(f"{split}/{sid}: {len(items)} numbered entries (want ~50)")
    if found != 2:
        err(f"expected 2 scenarios, found {found}")
    if errors:
        print("\nFAIL")
        for e in errors:
            print(" -", e)
        sys.exit(1)
    print("\nOK")


if __name__ == "__main__":
    main()
