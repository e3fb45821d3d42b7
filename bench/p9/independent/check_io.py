#!/usr/bin/env python3
"""Self-check for the io scenarios (stdlib only).

Usage: python3 check.py            # checks dev/ and test/ next to this file
Exit code 0 = all checks pass.
"""
import json
import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
SPLITS = ("dev", "test")
AUTHOR_TAG = "io-"
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
FACT_KEYS = {"id", "scenario", "kind", "phrases", "source", "note"}
SCEN_KEYS = {"id", "workspace", "language", "description", "author"}

SECRET_RES = [
    re.compile(r"ghp_[a-z0-9]{20,}", re.I),
    re.compile(r"hooks\.slack\.com/services/\S+", re.I),
    re.compile(r"://[^\s:/@]+:[^\s@]+@", re.I),                       # user:pass@ in URLs
    re.compile(r"\b[a-z_]*(password|passwd|secret|token|webhook_url|csc|senha)[a-z_]*\s*[=:]\s*\S+", re.I),
    re.compile(r"[?&;]password=[^\s&;]+", re.I),
    re.compile(r"\bAKIA[0-9A-Z]{16}\b"),
    re.compile(r"\bsk_(live|test)_[a-z0-9]{16,}", re.I),
]
MARKUP_RES = [
    re.compile(r"^\s*([-*+]|\d+[.)])\s"),   # bullet / numbered list marker
    re.compile(r"\[[ xX]\]"),               # checkbox
    re.compile(r"\*\*|__"),                 # bold
    re.compile(r"#"),                       # heading / hash
    re.compile(r"`"),                       # backticks
    re.compile(r"^\s*>"),                   # blockquote
    re.compile(r"~~"),                      # strikethrough
]


def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()


def secret_spans(line_norm):
    spans = []
    for rx in SECRET_RES:
        for m in rx.finditer(line_norm):
            spans.append((m.start(), m.end()))
    return spans


def count_secrets(text):
    n = 0
    for line in text.splitlines():
        n += len(secret_spans(norm(line)))
    return n


def check_scenario(sdir, split, errors, all_ids):
    def err(msg):
        errors.append(f"[{split}/{os.path.basename(sdir)}] {msg}")

    name = os.path.basename(sdir)
    if not name.startswith(AUTHOR_TAG):
        err("scenario folder must start with " + AUTHOR_TAG)
    if not re.fullmatch(r"[a-z0-9-]+", name):
        err("scenario id must be [a-z0-9-]")
    # scenario.json
    try:
        with open(os.path.join(sdir, "scenario.json"), encoding="utf-8") as f:
            scen = json.load(f)
    except Exception as e:  # noqa
        err(f"scenario.json unreadable: {e}")
        return {}
    missing = SCEN_KEYS - set(scen)
    if missing:
        err(f"scenario.json missing keys {sorted(missing)}")
    if scen.get("id") != name:
        err(f"scenario.json id {scen.get('id')!r} != folder {name!r}")
    ws = scen.get("workspace", "")
    if not re.fullmatch(r"[a-z0-9-]+", ws or ""):
        err("workspace must be [a-z0-9-]")
    root = os.path.join(sdir, "root")
    wsdir = os.path.join(root, ws)
    for req in ("MEMORY.md", os.path.join(ws, "PLAN.md"), os.path.join(ws, "handoff", "LEDGER.md")):
        if not os.path.isfile(os.path.join(root, req)):
            err(f"missing required file root/{req}")
    if not os.path.isdir(os.path.join(root, "notes")):
        err("missing root/notes/")

    # sizes and counts
    stats = {"id": name, "split": split, "language": scen.get("language")}
    md = []
    for dp, _dn, fn in os.walk(root):
        for f in fn:
            if f.endswith(".md"):
                md.append(os.path.join(dp, f))
    stats["notes"] = len(md)
    if not 20 <= len(md) <= 60:
        err(f"memory root has {len(md)} .md notes (want 20-60)")
    other = [p for p in os.listdir(root) if os.path.isdir(os.path.join(root, p)) and p not in ("notes", ws)]
    stats["decoy_ws"] = other
    try:
        ledger = open(os.path.join(wsdir, "handoff", "LEDGER.md"), encoding="utf-8").read()
        plan = open(os.path.join(wsdir, "PLAN.md"), encoding="utf-8").read()
    except OSError:
        return stats
    stats["ledger_chars"] = len(ledger)
    stats["plan_chars"] = len(plan)
    if not 10000 <= len(ledger) <= 30000:
        err(f"ledger has {len(ledger)} chars (want 10000-30000)")
    if not 2000 <= len(plan) <= 12000:
        err(f"plan has {len(plan)} chars (want 2000-12000)")
    total_secrets = 0
    for p in md:
        total_secrets += count_secrets(open(p, encoding="utf-8").read())
    stats["secret_shaped"] = total_secrets
    if total_secrets < 2:
        err(f"only {total_secrets} secret-shaped strings found (want a few)")

    # facts
    fpath = os.path.join(sdir, "facts.jsonl")
    try:
        lines = [l for l in open(fpath, encoding="utf-8").read().splitlines() if l.strip()]
    except OSError as e:
        err(f"facts.jsonl unreadable: {e}")
        return stats
    if len(lines) != 20:
        err(f"{len(lines)} facts (want exactly 20)")
    kinds = {}
    for i, line in enumerate(lines, 1):
        try:
            fact = json.loads(line)
        except json.JSONDecodeError as e:
            err(f"facts line {i}: bad JSON: {e}")
            continue
        fid = fact.get("id", f"<line {i}>")
        if set(fact) != FACT_KEYS:
            err(f"{fid}: keys {sorted(fact)} != {sorted(FACT_KEYS)}")
        if fid in all_ids:
            err(f"{fid}: duplicate fact id")
        all_ids.add(fid)
        if fact.get("scenario") != name:
            err(f"{fid}: scenario {fact.get('scenario')!r} != {name!r}")
        kind = fact.get("kind")
        kinds[kind] = kinds.get(kind, 0) + 1
        if kind not in KINDS:
            err(f"{fid}: bad kind {kind!r}")
        if not str(fact.get("note", "")).strip():
            err(f"{fid}: empty note")
        src = fact.get("source", "")
        if os.path.isabs(src) or ".." in src.split("/"):
            err(f"{fid}: source must be relative to root/")
            continue
        if kind == "user_rule" and not (src == "MEMORY.md" or (src.startswith("notes/") and src.count("/") == 1)):
            err(f"{fid}: user_rule source must be root-level MEMORY.md or notes/*.md, got {src}")
        spath = os.path.join(root, src)
        if not os.path.isfile(spath):
            err(f"{fid}: source {src} does not exist")
            continue
        src_lines = [norm(l) for l in open(spath, encoding="utf-8").read().splitlines()]
        phrases = fact.get("phrases")
        if not isinstance(phrases, list) or not 1 <= len(phrases) <= 4:
            err(f"{fid}: want 1-4 phrases")
            continue
        for ph in phrases:
            if not isinstance(ph, str):
                err(f"{fid}: phrase not a string")
                continue
            if not 3 <= len(ph) <= 80:
                err(f"{fid}: phrase length {len(ph)} out of 3-80: {ph!r}")
            for rx in MARKUP_RES:
                if rx.search(ph):
                    err(f"{fid}: phrase contains markup ({rx.pattern}): {ph!r}")
            if "\n" in ph:
                err(f"{fid}: phrase spans lines: {ph!r}")
            if not (re.search(r"\d", ph) or len(ph) >= 12 or re.search(r"[_./=-]", ph)):
                err(f"{fid}: phrase not distinctive enough: {ph!r}")
            n = norm(ph)
            hits = 0
            for ln in src_lines:
                start = ln.find(n)
                while start != -1:
                    hits += 1
                    end = start + len(n)
                    for (a, b) in secret_spans(ln):
                        if start < b and a < end:
                            err(f"{fid}: phrase overlaps a secret-shaped string: {ph!r}")
                    start = ln.find(n, start + 1)
            if hits == 0:
                err(f"{fid}: phrase not found on a single line of {src}: {ph!r}")
    stats["kinds"] = kinds
    for must in ("failed_reason", "user_rule", "next_step", "command", "status_number"):
        if kinds.get(must, 0) == 0:
            err(f"no fact of kind {must}")
    return stats


def main():
    errors, all_ids, report = [], set(), []
    for split in SPLITS:
        d = os.path.join(HERE, split)
        if not os.path.isdir(d):
            errors.append(f"missing split folder {split}/")
            continue
        scen = sorted(s for s in os.listdir(d) if os.path.isdir(os.path.join(d, s)) and s.startswith("io-"))  # the other authors share this folder
        if len(scen) < 1:
            errors.append(f"{split}/ has no scenario")
        for s in scen:
            report.append(check_scenario(os.path.join(d, s), split, errors, all_ids))
    for st in report:
        print(json.dumps(st, ensure_ascii=False))
    if errors:
        print(f"\n{len(errors)} problem(s):")
        for e in errors:
            print("  -", e)
        return 1
    print("\nOK: all checks pass")
    return 0


if __name__ == "__main__":
    sys.exit(main())
