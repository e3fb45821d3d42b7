#!/usr/bin/env python3
"""Self-check for author `it` scenarios (pure stdlib).

Usage: python3 check.py            (checks one/* and two/* next to this file)
Exit code 0 when everything passes.
"""
import json
import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
ID_RE = re.compile(r"^[a-z0-9-]+$")
WS_RE = re.compile(r"^[a-z0-9-]+$")
# Markdown markup a phrase must not contain
MARKUP = [re.compile(p) for p in (r"^\s*[-*+]\s", r"^\s*\d+\.\s", r"\[[ xX]\]", r"\*\*", r"#", r"`", r"~~", r"^\s*>", r"^\s*\|")]
SECRET_RES = [
    re.compile(r"[A-Za-z0-9_]*(?:KEY|TOKEN|PASSWORD|PASSWD|SECRET)[A-Za-z0-9_]*\s*[=:]\s*(\S+)", re.I),
    re.compile(r"://[^:/\s@]+:([^@\s]+)@"),
    re.compile(r"\b(?:ghp|glpat|xox[bp]|sk)[-_][A-Za-z0-9_-]{10,}"),
    re.compile(r"\s-u\s+[^\s:]+:(\S+)"),           # curl -u user:token
    re.compile(r"\b[A-Z_]+/([^\s@/]+)@//"),           # Oracle USER/pass@//host
]

errors = []


def err(msg):
    errors.append(msg)


def norm(s):
    s = unicodedata.normalize("NFKC", s)
    s = s.casefold()
    s = s.replace("`", "")
    s = re.sub(r"\s+", " ", s)
    return s.strip()


def md_files(root):
    out = []
    for d, _, fs in os.walk(root):
        for f in fs:
            if f.endswith(".md"):
                out.append(os.path.join(d, f))
    return out


def secrets_in(text):
    found = []
    for rx in SECRET_RES:
        for m in rx.finditer(text):
            val = m.group(1) if m.groups() else m.group(0)
            if len(val) >= 6:
                found.append(norm(val))
    return found


def check_scenario(folder, seen_ids):
    sdirs = [d for d in os.listdir(folder) if os.path.isdir(os.path.join(folder, d))]
    if len(sdirs) != 1:
        err(f"{folder}: expected exactly one scenario dir, found {sdirs}")
        return None
    sid = sdirs[0]
    sdir = os.path.join(folder, sid)
    if not sid.startswith("it-") or not ID_RE.match(sid):
        err(f"{sid}: bad scenario id")
    # scenario.json
    try:
        meta = json.load(open(os.path.join(sdir, "scenario.json"), encoding="utf-8"))
    except Exception as e:  # noqa
        err(f"{sid}: scenario.json unreadable: {e}")
        return None
    for k in ("id", "workspace", "language", "description", "author"):
        if not meta.get(k):
            err(f"{sid}: scenario.json missing {k}")
    if meta.get("id") != sid:
        err(f"{sid}: scenario.json id {meta.get('id')} != folder")
    ws = meta.get("workspace", "")
    if not WS_RE.match(ws):
        err(f"{sid}: bad workspace name {ws}")
    root = os.path.join(sdir, "root")
    for must in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, must)):
            err(f"{sid}: missing {must}")
    if not os.path.isdir(os.path.join(root, "notes")):
        err(f"{sid}: missing root notes/")
    files = md_files(root)
    if not 20 <= len(files) <= 60:
        err(f"{sid}: {len(files)} md files (need 20..60)")
    ledger = open(os.path.join(root, ws, "handoff", "LEDGER.md"), encoding="utf-8").read()
    plan = open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read()
    if not 10000 <= len(ledger) <= 30000:
        err(f"{sid}: ledger {len(ledger)} chars (need 10000..30000)")
    if not 2000 <= len(plan) <= 12000:
        err(f"{sid}: plan {len(plan)} chars (need 2000..12000)")
    # facts
    cache = {}
    n = 0
    kinds_seen = set()
    for ln, line in enumerate(open(os.path.join(sdir, "facts.jsonl"), encoding="utf-8"), 1):
        if not line.strip():
            continue
        n += 1
        try:
            f = json.loads(line)
        except Exception as e:  # noqa
            err(f"{sid}: facts line {ln} bad json: {e}")
            continue
        fid = f.get("id")
        if not fid or fid in seen_ids:
            err(f"{sid}: duplicate/missing fact id {fid}")
        seen_ids.add(fid)
        if f.get("scenario") != sid:
            err(f"{fid}: scenario {f.get('scenario')} != {sid}")
        kind = f.get("kind")
        if kind not in KINDS:
            err(f"{fid}: bad kind {kind}")
        kinds_seen.add(kind)
        if not f.get("note"):
            err(f"{fid}: missing note")
        src = f.get("source", "")
        if kind == "user_rule" and not (src == "MEMORY.md" or src.startswith("notes/")):
            err(f"{fid}: user_rule must come from root MEMORY.md or notes/")
        path = os.path.join(root, src)
        if not os.path.isfile(path):
            err(f"{fid}: source {src} missing")
            continue
        if src not in cache:
            raw = open(path, encoding="utf-8").read()
            cache[src] = ([norm(l) for l in raw.splitlines()], secrets_in(raw))
        lines, secrets = cache[src]
        phrases = f.get("phrases") or []
        if not 1 <= len(phrases) <= 4:
            err(f"{fid}: {len(phrases)} phrases (need 1..4)")
        for p in phrases:
            if not 3 <= len(p) <= 80:
                err(f"{fid}: phrase length {len(p)}: {p!r}")
            for rx in MARKUP:
                if rx.search(p):
                    err(f"{fid}: phrase has markup {rx.pattern!r}: {p!r}")
            np_ = norm(p)
            if not any(np_ in l for l in lines):
                err(f"{fid}: phrase not found on one line of {src}: {p!r}")
            for s in secrets:
                if np_ in s or s in np_:
                    err(f"{fid}: phrase overlaps a secret-shaped string: {p!r}")
    if n != 20:
        err(f"{sid}: {n} facts (need 20)")
    return sid, meta.get("language"), len(ledger), len(plan), len(files), n, sorted(kinds_seen)


def main():
    seen = set()
    report = []
    for sub in ("one", "two"):
        folder = os.path.join(HERE, sub)
        if not os.path.isdir(folder):
            err(f"missing folder {sub}/")
            continue
        r = check_scenario(folder, seen)
        if r:
            report.append((sub,) + r)
    for r in report:
        print("%s: %s lang=%s ledger=%d plan=%d md_files=%d facts=%d kinds=%s" % r)
    if errors:
        print("\nFAIL (%d):" % len(errors))
        for e in errors:
            print("  -", e)
        sys.exit(1)
    print("\nOK")


if __name__ == "__main__":
    main()
