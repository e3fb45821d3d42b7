#!/usr/bin/env python3
"""Self-check for the scenarios of author tag `in` (stdlib only).

Usage: python3 check.py            (checks dev/ and test/ next to this file)
Exit code 0 when everything passes, 1 otherwise.
"""
import json
import os
import re
import sys
import unicodedata

BASE = os.path.dirname(os.path.abspath(__file__))
TAG = "in"
SPLITS = ("dev", "test")
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
FACT_KEYS = {"id", "scenario", "kind", "phrases", "source", "note"}
SCEN_KEYS = {"id", "workspace", "language", "description", "author"}

# fake secret-shaped strings planted in each scenario (must exist, must never be in a fact)
SECRETS = {
    "in-fr-dbt-ventes-berthier": [
        "Zq8vR2mXy7KpL4nW9tB3cF6hJd2sQ",
        "glpat-Xk3vP9qR2sT7wY1zB4nM",
        "N4s!Backup-2023x",
    ],
    "in-ko-pg-toss-migration": [
        "test_sk_zXLkKEypNArWmo50nX3lmeaxYG5R",
        "live_sk_Ba5PzR0ArnGkL7wqJ2xe9vYmEodM",
        "Qw7!rT9zPx-ord",
        "whsec_8fK2pLm9QxR4vT7nB1cZ",
    ],
}

GENERIC = {"failed", "error", "todo", "done", "fix", "test", "ok", "next", "plan",
           "échec", "erreur", "fait", "실패", "완료", "오류", "다음"}

errors = []


def err(msg):
    errors.append(msg)


def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


MARKUP = [
    (re.compile(r"`"), "backtick"),
    (re.compile(r"\*\*"), "bold markup"),
    (re.compile(r"~~"), "strikethrough markup"),
    (re.compile(r"\|"), "table pipe"),
    (re.compile(r"\[[ xX]\]"), "checkbox"),
    (re.compile(r"^\s*([-*+>]\s|#)"), "leading bullet/heading/quote"),
    (re.compile(r"^\s*\d+\.\s"), "leading numbered-list marker"),
]

HEADING = re.compile(r"^ {0,3}#{1,6}(\s|$)")
HANGUL = re.compile(r"[\uac00-\ud7a3]")
DATE = re.compile(r"\b20\d\d-\d\d-\d\d\b|\b\d{1,2}/\d{1,2}\b")


def check_scenario(split, sdir, seen_ids):
    sid = os.path.basename(sdir)
    where = f"{split}/{sid}"
    if not re.fullmatch(rf"{TAG}-[a-z0-9-]+", sid):
        err(f"{where}: scenario id must be lowercase [a-z0-9-] and start with '{TAG}-'")
    # scenario.json
    try:
        sc = json.loads(read(os.path.join(sdir, "scenario.json")))
    except Exception as e:  # noqa
        err(f"{where}: scenario.json unreadable: {e}")
        return
    if set(sc) != SCEN_KEYS:
        err(f"{where}: scenario.json keys {sorted(sc)} != {sorted(SCEN_KEYS)}")
    if sc.get("id") != sid:
        err(f"{where}: scenario.json id {sc.get('id')!r} != folder name")
    if sc.get("author") != TAG:
        err(f"{where}: author must be {TAG!r}")
    ws = sc.get("workspace", "")
    if not re.fullmatch(r"[a-z0-9-]+", ws or ""):
        err(f"{where}: bad workspace name {ws!r}")
    if not sc.get("description") or not sc.get("language"):
        err(f"{where}: description/language missing")

    root = os.path.join(sdir, "root")
    for rel in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, rel)):
            err(f"{where}: missing root/{rel}")
    if errors and any(e.startswith(f"{where}: missing") for e in errors):
        return

    # note count
    md = []
    for dp, _dn, fn in os.walk(root):
        for f in fn:
            if f.endswith(".md"):
                md.append(os.path.relpath(os.path.join(dp, f), root))
    if not 20 <= len(md) <= 60:
        err(f"{where}: {len(md)} markdown notes, need 20-60")
    for rel in md:
        top = rel.split(os.sep)[0]
        if os.sep in rel and top not in ("notes",) and not re.fullmatch(r"[a-z0-9-]+", top):
            err(f"{where}: folder {top!r} is not [a-z0-9-]")

    ledger = read(os.path.join(root, ws, "handoff", "LEDGER.md"))
    plan = read(os.path.join(root, ws, "PLAN.md"))
    if not 10000 <= len(ledger) <= 30000:
        err(f"{where}: ledger {len(ledger)} chars, need 10000-30000")
    if not 2000 <= len(plan) <= 12000:
        err(f"{where}: plan {len(plan)} chars, need 2000-12000")

    # split-specific shape requirements from the task
    if split == "dev":
        heads = [l for l in ledger.splitlines() if HEADING.match(l)]
        if heads:
            err(f"{where}: dev ledger must have NO headings, found {heads[:3]}")
        for needle in ("~~", "✅", "❌", "abandonné", "annulé"):
            if needle not in ledger:
                err(f"{where}: dev ledger lacks {needle!r}")
        if sc.get("language") != "fr":
            err(f"{where}: dev scenario language should be 'fr'")
    if split == "test":
        heads = [l for l in ledger.splitlines() if HEADING.match(l)]
        if not heads or not all(HANGUL.search(h) for h in heads):
            err(f"{where}: test ledger needs Korean headings (all headings with Hangul)")
        if not re.search(r"^\s*[-*] \[[ xX]\]", ledger, re.M):
            err(f"{where}: test ledger lacks a checklist")
        if len([l for l in ledger.splitlines() if l.strip().startswith("|")]) < 6:
            err(f"{where}: test ledger lacks a status table")
        if len(DATE.findall(plan)) < 8:
            err(f"{where}: test plan needs a long dated history (>=8 dates)")
        if sc.get("language") != "ko":
            err(f"{where}: test scenario language should be 'ko'")
        letters = [c for c in ledger if c.isalpha()]
        ratio = sum(1 for c in letters if HANGUL.match(c)) / max(1, len(letters))
        if ratio < 0.35:
            err(f"{where}: ledger Hangul ratio {ratio:.2f} too low")

    # secrets
    secrets = SECRETS.get(sid, [])
    if len(secrets) < 2:
        err(f"{where}: declare at least 2 fake secrets in check.py")
    alltext = "\n".join(read(os.path.join(root, r)) for r in md)
    for s in secrets:
        if s not in alltext:
            err(f"{where}: planted secret {s!r} not found in root")
    nsecrets = [norm(s) for s in secrets]

    # facts
    fpath = os.path.join(sdir, "facts.jsonl")
    lines = [l for l in read(fpath).splitlines() if l.strip()]
    if len(lines) != 20:
        err(f"{where}: {len(lines)} facts, need 20")
    kinds = {}
    line_cache = {}
    for n, line in enumerate(lines, 1):
        try:
            fact = json.loads(line)
        except Exception as e:  # noqa
            err(f"{where}: facts line {n} not JSON: {e}")
            continue
        fid = fact.get("id", f"<line {n}>")
        if set(fact) != FACT_KEYS:
            err(f"{where}: {fid}: keys {sorted(fact)}")
        if fid in seen_ids:
            err(f"{where}: duplicate fact id {fid}")
        seen_ids.add(fid)
        if not re.fullmatch(r"[a-z0-9-]+-\d\d", str(fid)):
            err(f"{where}: {fid}: id should look like <short>-NN")
        if fact.get("scenario") != sid:
            err(f"{where}: {fid}: scenario {fact.get('scenario')!r} != {sid}")
        kind = fact.get("kind")
        if kind not in KINDS:
            err(f"{where}: {fid}: bad kind {kind!r}")
        kinds[kind] = kinds.get(kind, 0) + 1
        if not str(fact.get("note", "")).strip():
            err(f"{where}: {fid}: empty note")
        src = fact.get("source", "")
        spath = os.path.join(root, src)
        if not src or src.startswith("/") or ".." in src.split("/") or not os.path.isfile(spath):
            err(f"{where}: {fid}: source {src!r} not a file under root/")
            continue
        if kind == "user_rule" and not (src == "MEMORY.md" or src.startswith("notes/")):
            err(f"{where}: {fid}: user_rule must come from MEMORY.md or root notes/")
        if src not in line_cache:
            line_cache[src] = [norm(l) for l in read(spath).splitlines()]
        nlines = line_cache[src]
        phrases = fact.get("phrases")
        if not isinstance(phrases, list) or not 1 <= len(phrases) <= 4:
            err(f"{where}: {fid}: need 1-4 phrases")
            continue
        for p in phrases:
            if not isinstance(p, str):
                err(f"{where}: {fid}: phrase not a string")
                continue
            if not 3 <= len(p) <= 80:
                err(f"{where}: {fid}: phrase length {len(p)} out of 3-80: {p!r}")
            for rx, what in MARKUP:
                if rx.search(p):
                    err(f"{where}: {fid}: phrase has {what}: {p!r}")
            np_ = norm(p)
            if np_ in GENERIC:
                err(f"{where}: {fid}: phrase too generic: {p!r}")
            if not any(np_ in l for l in nlines):
                err(f"{where}: {fid}: phrase not found within one line of {src}: {p!r}")
            for s in nsecrets:
                if np_ in s or s in np_:
                    err(f"{where}: {fid}: phrase overlaps a secret: {p!r}")
    # weighting toward what a fresh context needs
    need = {"failed_reason": 4, "user_rule": 2, "status_number": 2, "next_step": 2,
            "command": 1, "id_ref": 1, "goal": 1, "decision": 1, "current_edit": 1}
    for k, m in need.items():
        if kinds.get(k, 0) < m:
            err(f"{where}: only {kinds.get(k, 0)} facts of kind {k}, want >= {m}")
    return {"id": sid, "split": split, "lang": sc.get("language"), "notes": len(md),
            "ledger": len(ledger), "plan": len(plan), "kinds": kinds}


def main():
    seen = set()
    summary = []
    for split in SPLITS:
        d = os.path.join(BASE, split)
        if not os.path.isdir(d):
            err(f"missing split folder {split}/")
            continue
        scen = sorted(x for x in os.listdir(d) if os.path.isdir(os.path.join(d, x)) and x.startswith("in-"))  # the other authors share this folder
        if len(scen) != 1:
            err(f"{split}/: expected exactly one scenario, found {scen}")
        for s in scen:
            r = check_scenario(split, os.path.join(d, s), seen)
            if r:
                summary.append(r)
    for r in summary:
        print(f"{r['split']:4} {r['id']}: lang={r['lang']} notes={r['notes']} "
              f"ledger={r['ledger']} plan={r['plan']} kinds={dict(sorted(r['kinds'].items()))}")
    if errors:
        print(f"\nFAIL ({len(errors)} problems):")
        for e in errors:
            print(" -", e)
        return 1
    print("\nOK: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
