#!/usr/bin/env python3
"""Validate the ih scenarios (stdlib only).

Checks per scenario:
  - scenario.json has id/workspace/language/description/author, id prefixed "ih-", id == folder name
  - facts.jsonl: exactly 20 facts, unique ids, valid kinds, scenario field == id,
    1-4 phrases each 3-80 chars, no markdown markup, every phrase found within a
    single line of its source after NFKC + casefold + backtick removal + whitespace collapse
  - phrase not inside a secret-shaped string
  - memory root has 20-60 .md files, MEMORY.md, <ws>/PLAN.md, <ws>/handoff/LEDGER.md
  - LEDGER 10,000-30,000 chars, PLAN 2,000-12,000 chars
  - at least one user_rule whose source is root-level (MEMORY.md or notes/)
"""
import json
import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = [
    ("dev", "ih-flink-pay-recon"),
    ("test", "ih-cfdi-timbrado-pac"),
]
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
SECRET_RE = re.compile(
    r"(password|passwd|secret|token|api[_-]?key|sasl_password)\s*[=:]\s*\S+"
    r"|://[^/\s:@]+:[^@\s]+@"
    r"|\b(sk|pk|ghp|xox[bp])_[A-Za-z0-9_]{8,}",
    re.I)
MARKUP_RE = re.compile(r"^\s*([-*+]\s|\d+\.\s|>)|\[[ xX]\]|\*\*|__|^#|`|~~")


def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()


def check_scenario(folder, sid):
    errs = []
    base = os.path.join(HERE, folder, sid)
    root = os.path.join(base, "root")
    try:
        meta = json.load(open(os.path.join(base, "scenario.json"), encoding="utf-8"))
    except Exception as e:  # noqa
        return [f"scenario.json unreadable: {e}"], {}
    for k in ("id", "workspace", "language", "description", "author"):
        if not meta.get(k):
            errs.append(f"scenario.json missing {k}")
    if meta.get("id") != sid or not sid.startswith("ih-"):
        errs.append("scenario id mismatch / missing ih- prefix")
    if not re.fullmatch(r"[a-z0-9-]+", sid):
        errs.append("bad scenario id chars")
    ws = meta.get("workspace", "")
    if not re.fullmatch(r"[a-z0-9-]+", ws):
        errs.append("bad workspace name")

    # files
    md = []
    for dp, _, fns in os.walk(root):
        md += [os.path.join(dp, f) for f in fns if f.endswith(".md")]
    if not 20 <= len(md) <= 60:
        errs.append(f"md file count {len(md)} not in 20..60")
    for rel in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, rel)):
            errs.append(f"missing {rel}")
    led = open(os.path.join(root, ws, "handoff", "LEDGER.md"), encoding="utf-8").read()
    plan = open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read()
    if not 10000 <= len(led) <= 30000:
        errs.append(f"ledger size {len(led)} out of range")
    if not 2000 <= len(plan) <= 12000:
        errs.append(f"plan size {len(plan)} out of range")

    # facts
    lines = [l for l in open(os.path.join(base, "facts.jsonl"), encoding="utf-8").read().splitlines() if l.strip()]
    facts = []
    for i, l in enumerate(lines, 1):
        try:
            facts.append(json.loads(l))
        except Exception as e:  # noqa
            errs.append(f"facts line {i} bad json: {e}")
    if len(facts) != 20:
        errs.append(f"{len(facts)} facts, need 20")
    ids = [f.get("id") for f in facts]
    if len(set(ids)) != len(ids):
        errs.append("duplicate fact ids")
    cache = {}
    kinds_seen = {}
    for f in facts:
        fid = f.get("id")
        for k in ("id", "scenario", "kind", "phrases", "source", "note"):
            if k not in f:
                errs.append(f"{fid}: missing {k}")
        if f.get("scenario") != sid:
            errs.append(f"{fid}: scenario field mismatch")
        kind = f.get("kind")
        if kind not in KINDS:
            errs.append(f"{fid}: bad kind {kind}")
        kinds_seen[kind] = kinds_seen.get(kind, 0) + 1
        src = f.get("source", "")
        if kind == "user_rule" and not (src == "MEMORY.md" or src.startswith("notes/")):
            errs.append(f"{fid}: user_rule source must be root-level note")
        path = os.path.join(root, src)
        if not os.path.isfile(path):
            errs.append(f"{fid}: source {src} missing")
            continue
        if src not in cache:
            raw = open(path, encoding="utf-8").read().splitlines()
            cache[src] = (raw, [norm(x) for x in raw])
        raw, nl = cache[src]
        ph = f.get("phrases", [])
        if not 1 <= len(ph) <= 4:
            errs.append(f"{fid}: {len(ph)} phrases")
        for p in ph:
            if not 3 <= len(p) <= 80:
                errs.append(f"{fid}: phrase length {len(p)}: {p!r}")
            if MARKUP_RE.search(p):
                errs.append(f"{fid}: markup in phrase {p!r}")
            np_ = norm(p)
            hits = [i for i, x in enumerate(nl) if np_ in x]
            if not hits:
                errs.append(f"{fid}: phrase not found in {src}: {p!r}")
                continue
            for i in hits:
                for m in SECRET_RE.finditer(raw[i]):
                    if np_ in norm(m.group(0)) or norm(m.group(0)) in np_:
                        errs.append(f"{fid}: phrase overlaps secret-shaped string: {p!r}")
    if kinds_seen.get("user_rule", 0) < 1 or kinds_seen.get("failed_reason", 0) < 3:
        errs.append("need >=1 user_rule and >=3 failed_reason facts")
    stats = {"md_files": len(md), "ledger_chars": len(led), "plan_chars": len(plan),
             "facts": len(facts), "kinds": kinds_seen}
    return errs, stats


def main():
    bad = 0
    for folder, sid in SCENARIOS:
        errs, st = check_scenario(folder, sid)
        status = "OK" if not errs else "FAIL"
        print(f"[{status}] {folder}/{sid} {json.dumps(st, ensure_ascii=False, sort_keys=True)}")
        for e in errs:
            print("   -", e)
        bad += bool(errs)
    print("ALL OK" if not bad else f"{bad} scenario(s) failing")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
