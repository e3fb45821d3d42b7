#!/usr/bin/env python3
"""Self-check for author ix's scenarios (pure stdlib).

Checks both /work/indep/ix/one/<id>/ and /work/indep/ix/two/<id>/:
- scenario.json fields, id prefix, workspace folder exists
- facts.jsonl: 20 facts, unique ids, valid kinds, scenario field, source exists,
  1-4 phrases, 3-80 chars, no markdown markup, distinct-ish, each phrase found
  inside a single line of the source after NFKC + casefold + backtick removal +
  whitespace collapse, and not inside a secret-shaped string
- memory root: 20-60 .md files, MEMORY.md, notes/, PLAN.md + handoff/LEDGER.md
- sizes: ledger 10,000-30,000 chars, plan 2,000-12,000 chars
"""
import json
import re
import sys
import unicodedata
from pathlib import Path

BASE = Path(__file__).resolve().parent
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
SECRET_RES = [
    re.compile(r"hf_[A-Za-z0-9]{20,}"),
    re.compile(r"(?i)(api[_-]?key|token|secret|password|passwd|parola|sifre|şifre)\s*[=:]\s*\S+"),
    re.compile(r"[a-z]+://[^\s:/@]+:[^\s@]+@"),          # user:pass@ in URLs
    re.compile(r"\b[0-9a-f]{32,}\b"),
    re.compile(r"\b(md5|SCRAM-SHA-256\$)[A-Za-z0-9$:+/=]{16,}"),
    re.compile(r"\b(ghp|glpat|xox[bp]|sk)[-_][A-Za-z0-9-_]{16,}"),
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


def secret_spans(line):
    spans = []
    for rx in SECRET_RES:
        for m in rx.finditer(line):
            spans.append((m.start(), m.end()))
    return spans


def check_scenario(folder: Path, which: str):
    sj = folder / "scenario.json"
    if not sj.exists():
        err(f"{folder}: no scenario.json")
        return
    sc = json.loads(sj.read_text(encoding="utf-8"))
    for k in ("id", "workspace", "language", "description", "author"):
        if k not in sc:
            err(f"{sj}: missing {k}")
    sid = sc["id"]
    if sid != folder.name:
        err(f"{sj}: id {sid} != folder {folder.name}")
    if not re.fullmatch(r"ix-[a-z0-9-]+", sid):
        err(f"{sj}: bad id {sid}")
    ws = sc["workspace"]
    if not re.fullmatch(r"[a-z0-9-]+", ws):
        err(f"{sj}: bad workspace {ws}")
    root = folder / "root"
    wsdir = root / ws
    for p in (root / "MEMORY.md", root / "notes", wsdir / "PLAN.md", wsdir / "handoff" / "LEDGER.md"):
        if not p.exists():
            err(f"{folder}: missing {p.relative_to(folder)}")
    mds = sorted(root.rglob("*.md"))
    if not 20 <= len(mds) <= 60:
        err(f"{folder}: {len(mds)} md files (want 20-60)")
    ledger = (wsdir / "handoff" / "LEDGER.md").read_text(encoding="utf-8")
    plan = (wsdir / "PLAN.md").read_text(encoding="utf-8")
    if not 10000 <= len(ledger) <= 30000:
        err(f"{folder}: ledger {len(ledger)} chars")
    if not 2000 <= len(plan) <= 12000:
        err(f"{folder}: plan {len(plan)} chars")
    # every file valid UTF-8
    for p in mds:
        try:
            p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            err(f"{p}: not UTF-8")

    facts = []
    for n, line in enumerate((folder / "facts.jsonl").read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            facts.append(json.loads(line))
        except json.JSONDecodeError as e:
            err(f"{folder}/facts.jsonl:{n}: {e}")
    if len(facts) != 20:
        err(f"{folder}: {len(facts)} facts (want 20)")
    kinds_seen = {}
    for f in facts:
        fid = f.get("id")
        tag = f"{folder.name}:{fid}"
        if fid in ALL_IDS:
            err(f"{tag}: duplicate id")
        ALL_IDS.add(fid)
        if f.get("scenario") != sid:
            err(f"{tag}: scenario field {f.get('scenario')}")
        k = f.get("kind")
        if k not in KINDS:
            err(f"{tag}: bad kind {k}")
        kinds_seen[k] = kinds_seen.get(k, 0) + 1
        if not f.get("note"):
            err(f"{tag}: no note")
        src = f.get("source", "")
        sp = root / src
        if not sp.is_file():
            err(f"{tag}: source {src} missing")
            continue
        if k == "user_rule" and src.startswith(ws + "/"):
            err(f"{tag}: user_rule must come from a root-level note")
        text = sp.read_text(encoding="utf-8")
        raw_lines = text.splitlines()
        lines = [norm(l) for l in raw_lines]
        phrases = f.get("phrases", [])
        if not 1 <= len(phrases) <= 4:
            err(f"{tag}: {len(phrases)} phrases")
        for ph in phrases:
            if not 3 <= len(ph) <= 80:
                err(f"{tag}: phrase length {len(ph)}: {ph!r}")
            if re.search(r"\*\*|`|\[[ xX]\]|^\s*[-*+] |^\s*#|^\s*\d+\. |~~|\|", ph):
                err(f"{tag}: markdown markup in phrase {ph!r}")
            if ph.strip().lower() in {"failed", "done", "todo", "next", "fixed"}:
                err(f"{tag}: useless phrase {ph!r}")
            np_ = norm(ph)
            hit_lines = [i for i, l in enumerate(lines) if np_ in l]
            if not hit_lines:
                err(f"{tag}: phrase not in a single line of {src}: {ph!r}")
                continue
            # not inside a secret-shaped string (check on raw lines, case-insensitive)
            ok_somewhere = False
            for i in hit_lines:
                raw = raw_lines[i]
                spans = secret_spans(raw)
                low = norm(raw)
                pos = low.find(np_)
                inside = any(a <= pos < b or a < pos + len(np_) <= b for a, b in spans) if spans else False
                if not inside:
                    ok_somewhere = True
            if not ok_somewhere:
                err(f"{tag}: phrase lies in a secret-shaped string: {ph!r}")
    print(f"[{which}] {sid}: lang={sc['language']} md_files={len(mds)} ledger={len(ledger)} "
          f"plan={len(plan)} facts={len(facts)} kinds={dict(sorted(kinds_seen.items()))}")


ALL_IDS = set()


def main():
    for which in ("one", "two"):
        d = BASE / which
        subs = [p for p in d.iterdir() if p.is_dir()] if d.is_dir() else []
        if len(subs) != 1:
            err(f"{d}: expected exactly one scenario folder, found {len(subs)}")
        for s in subs:
            check_scenario(s, which)
    if errors:
        print("\nFAIL")
        for e in errors:
            print(" -", e)
        sys.exit(1)
    print("\nOK")


if __name__ == "__main__":
    main()
