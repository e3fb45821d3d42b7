#!/usr/bin/env python3
"""Validate the ig scenarios (stdlib only).

Checks, per scenario folder under dev/ and test/:
  - scenario.json keys, id == folder name, id prefix "ig-", allowed charset
  - root/MEMORY.md, root/<ws>/PLAN.md, root/<ws>/handoff/LEDGER.md exist
  - 20..60 Markdown notes under root/
  - ledger 10,000..30,000 characters, plan 2,000..12,000 characters
  - facts.jsonl: exactly 20 facts, unique ids, valid kinds, scenario field,
    1..4 phrases of 3..80 chars, no Markdown markup, each phrase found within a
    single line of its source after NFKC + casefold + backtick removal +
    whitespace collapsing; user_rule sources are root-level notes.
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
MARKUP_RE = re.compile(r"(\*\*|`|^\s*[-*+]\s|^\s*#|\[[ xX]\]|~~|^\s*>\s|^\s*\|)")
SECRET_RE = re.compile(r"(hvs\.[A-Za-z0-9]{10,}|://[^:/\s]+:[^@\s]+@|(?:token|secret|password|key)\s*[=:]\s*\S{12,})", re.I)


def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()


def check_scenario(path, errors):
    name = os.path.basename(path)
    def err(msg):
        errors.append(f"{name}: {msg}")

    try:
        sc = json.load(open(os.path.join(path, "scenario.json"), encoding="utf-8"))
    except Exception as e:  # noqa
        err(f"scenario.json unreadable: {e}")
        return None
    for k in ("id", "workspace", "language", "description", "author"):
        if not sc.get(k):
            err(f"scenario.json missing {k}")
    sid, ws = sc.get("id", ""), sc.get("workspace", "")
    if sid != name:
        err(f"id {sid!r} != folder {name!r}")
    if not sid.startswith("ig-") or not ID_RE.match(sid):
        err(f"bad scenario id {sid!r}")
    if not ID_RE.match(ws or "?"):
        err(f"bad workspace {ws!r}")

    root = os.path.join(path, "root")
    plan = os.path.join(root, ws, "PLAN.md")
    ledger = os.path.join(root, ws, "handoff", "LEDGER.md")
    for p in (os.path.join(root, "MEMORY.md"), plan, ledger):
        if not os.path.isfile(p):
            err(f"missing {os.path.relpath(p, path)}")
    md = []
    for dp, _, fns in os.walk(root):
        md += [os.path.join(dp, f) for f in fns if f.endswith(".md")]
    if not 20 <= len(md) <= 60:
        err(f"{len(md)} markdown notes (want 20..60)")
    lsz = len(open(ledger, encoding="utf-8").read()) if os.path.isfile(ledger) else 0
    psz = len(open(plan, encoding="utf-8").read()) if os.path.isfile(plan) else 0
    if not 10000 <= lsz <= 30000:
        err(f"ledger {lsz} chars (want 10000..30000)")
    if not 2000 <= psz <= 12000:
        err(f"plan {psz} chars (want 2000..12000)")

    facts_path = os.path.join(path, "facts.jsonl")
    lines = [l for l in open(facts_path, encoding="utf-8").read().splitlines() if l.strip()]
    if len(lines) != 20:
        err(f"{len(lines)} facts (want 20)")
    seen = set()
    cache = {}
    kinds_count = {}
    for n, line in enumerate(lines, 1):
        try:
            f = json.loads(line)
        except Exception as e:  # noqa
            err(f"fact line {n} not JSON: {e}")
            continue
        fid = f.get("id")
        if fid in seen:
            err(f"duplicate fact id {fid}")
        seen.add(fid)
        if f.get("scenario") != sid:
            err(f"{fid}: scenario {f.get('scenario')!r}")
        kind = f.get("kind")
        kinds_count[kind] = kinds_count.get(kind, 0) + 1
        if kind not in KINDS:
            err(f"{fid}: bad kind {kind!r}")
        if not f.get("note"):
            err(f"{fid}: no note")
        src = f.get("source", "")
        sp = os.path.join(root, src)
        if not os.path.isfile(sp):
            err(f"{fid}: source {src!r} missing")
            continue
        if kind == "user_rule" and not (src == "MEMORY.md" or src.startswith("notes/")):
            err(f"{fid}: user_rule source must be root-level, got {src}")
        if sp not in cache:
            raw = open(sp, encoding="utf-8").read().splitlines()
            cache[sp] = (raw, [norm(l) for l in raw])
        raw, normed = cache[sp]
        phrases = f.get("phrases") or []
        if not 1 <= len(phrases) <= 4:
            err(f"{fid}: {len(phrases)} phrases")
        for ph in phrases:
            if not 3 <= len(ph) <= 80:
                err(f"{fid}: phrase length {len(ph)}: {ph!r}")
            if MARKUP_RE.search(ph):
                err(f"{fid}: markup in phrase {ph!r}")
            np_ = norm(ph)
            hits = [i for i, l in enumerate(normed) if np_ in l]
            if not hits:
                err(f"{fid}: phrase not found in {src}: {ph!r}")
                continue
            for i in hits:
                for m in SECRET_RE.finditer(raw[i]):
                    if np_ in norm(m.group(0)):
                        err(f"{fid}: phrase inside secret-shaped string: {ph!r}")
    return {"id": sid, "ledger": lsz, "plan": psz, "notes": len(md),
            "lang": sc.get("language"), "kinds": kinds_count}


def main():
    errors, summary = [], []
    for folder in ("dev", "test"):
        base = os.path.join(HERE, folder)
        if not os.path.isdir(base):
            errors.append(f"missing folder {folder}/")
            continue
        subs = sorted(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d)) and d.startswith("ig-"))
        if not subs:
            errors.append(f"no scenario in {folder}/")
        for d in subs:
            r = check_scenario(os.path.join(base, d), errors)
            if r:
                summary.append((folder, r))
    for folder, r in summary:
        print(f"{folder}/{r['id']}: lang={r['lang']} notes={r['notes']} "
              f"ledger={r['ledger']} chars plan={r['plan']} chars kinds={r['kinds']}")
    if errors:
        print(f"FAIL ({len(errors)} problems)")
        for e in errors:
            print("  -", e)
        return 1
    print("OK: all scenarios valid")
    return 0


if __name__ == "__main__":
    sys.exit(main())
