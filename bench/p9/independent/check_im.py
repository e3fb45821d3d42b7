#!/usr/bin/env python3
"""Self-check for the im-* hand-off scenarios (stdlib only).

Usage: python3 check.py            # checks dev/ and test/ next to this file
Exit code 0 = all checks passed.
"""
import json
import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
SPLITS = ("dev", "test")
AUTHOR_TAG = "im-"
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
FACTS_PER_SCENARIO = 20
NOTES_MIN, NOTES_MAX = 20, 60
LEDGER_MIN, LEDGER_MAX = 10_000, 30_000
PLAN_MIN, PLAN_MAX = 2_000, 12_000

# Patterns for secret-shaped strings; each match is one "secret" region.
SECRET_PATTERNS = [
    r"glpat-[A-Za-z0-9_\-]{16,}",
    r"ghp_[A-Za-z0-9]{20,}",
    r"AKIA[0-9A-Z]{16}",
    r"(?i)aws_secret_access_key\s*=\s*\S+",
    r"(?i)\b[A-Z_]*(?:PASS|PASSWORD|SECRET|TOKEN|API_KEY|APIKEY)[A-Z_]*\s*[=:]\s*\S+",
    r"(?i)\bpassword=\S+",
    r"(?i)\bpsk=[0-9a-f]{16,}",
    r"[a-z][a-z0-9+.\-]*://[^\s:/@]+:[^\s@]+@[^\s]+",
    r"xox[abp]-[A-Za-z0-9\-]{10,}",
    r"sk_(?:live|test)_[A-Za-z0-9]{16,}",
    r"dd[a-z]*_[0-9a-f]{32}",
]
MIN_SECRETS = 2

errors = []


def err(msg):
    errors.append(msg)


def norm(s):
    s = unicodedata.normalize("NFKC", s)
    s = s.casefold()
    s = s.replace("`", "")
    s = re.sub(r"\s+", " ", s)
    return s.strip()


def markup_problem(p):
    if "`" in p:
        return "backtick"
    if "**" in p or "__" in p:
        return "bold markup"
    if "#" in p:
        return "'#'"
    if "|" in p:
        return "table pipe"
    if re.search(r"\[[ xX]\]", p):
        return "checkbox"
    if re.match(r"\s*([-*+>]\s|\d+\.\s)", p):
        return "list/quote marker at start"
    if "~~" in p:
        return "strikethrough"
    return None


def md_files(root):
    out = []
    for d, _, fs in os.walk(root):
        for f in fs:
            if f.endswith(".md"):
                out.append(os.path.join(d, f))
    return sorted(out)


def check_scenario(split, sdir):
    sid = os.path.basename(sdir)
    tag = f"[{split}/{sid}]"
    if not re.fullmatch(r"[a-z0-9\-]+", sid):
        err(f"{tag} bad scenario id")
    if not sid.startswith(AUTHOR_TAG):
        err(f"{tag} id must start with {AUTHOR_TAG}")

    # scenario.json
    try:
        with open(os.path.join(sdir, "scenario.json"), encoding="utf-8") as f:
            meta = json.load(f)
    except Exception as e:  # noqa
        err(f"{tag} scenario.json unreadable: {e}")
        return None
    for k in ("id", "workspace", "language", "description", "author"):
        if not isinstance(meta.get(k), str) or not meta.get(k).strip():
            err(f"{tag} scenario.json missing/empty {k}")
    if meta.get("id") != sid:
        err(f"{tag} scenario.json id {meta.get('id')!r} != folder name")
    ws = meta.get("workspace", "")
    if not re.fullmatch(r"[a-z0-9\-]+", ws or "x!"):
        err(f"{tag} bad workspace name {ws!r}")

    root = os.path.join(sdir, "root")
    for rel in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, rel)):
            err(f"{tag} missing root/{rel}")
    if not os.path.isdir(os.path.join(root, "notes")):
        err(f"{tag} missing root/notes/")

    notes = md_files(root)
    if not NOTES_MIN <= len(notes) <= NOTES_MAX:
        err(f"{tag} {len(notes)} markdown notes, want {NOTES_MIN}-{NOTES_MAX}")

    def size(rel):
        p = os.path.join(root, rel)
        if not os.path.isfile(p):
            return 0
        with open(p, encoding="utf-8") as f:
            return len(f.read())

    lsz, psz = size(f"{ws}/handoff/LEDGER.md"), size(f"{ws}/PLAN.md")
    if not LEDGER_MIN <= lsz <= LEDGER_MAX:
        err(f"{tag} ledger {lsz} chars, want {LEDGER_MIN}-{LEDGER_MAX}")
    if not PLAN_MIN <= psz <= PLAN_MAX:
        err(f"{tag} plan {psz} chars, want {PLAN_MIN}-{PLAN_MAX}")

    # secrets present in the memory root
    secrets = set()
    for p in notes:
        with open(p, encoding="utf-8") as f:
            txt = f.read()
        for pat in SECRET_PATTERNS:
            for m in re.finditer(pat, txt):
                secrets.add(m.group(0))
    if len(secrets) < MIN_SECRETS:
        err(f"{tag} only {len(secrets)} secret-shaped strings, want >= {MIN_SECRETS}")
    nsecrets = [norm(s) for s in secrets]

    # facts
    fpath = os.path.join(sdir, "facts.jsonl")
    facts = []
    try:
        with open(fpath, encoding="utf-8") as f:
            for ln, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    facts.append(json.loads(line))
                except Exception as e:  # noqa
                    err(f"{tag} facts.jsonl line {ln}: bad json {e}")
    except OSError as e:
        err(f"{tag} facts.jsonl: {e}")
    if len(facts) != FACTS_PER_SCENARIO:
        err(f"{tag} {len(facts)} facts, want {FACTS_PER_SCENARIO}")

    cache = {}
    kinds = {}
    for fact in facts:
        fid = fact.get("id", "?")
        ft = f"{tag} fact {fid}"
        for k in ("id", "scenario", "kind", "phrases", "source", "note"):
            if k not in fact:
                err(f"{ft}: missing key {k}")
        if fact.get("scenario") != sid:
            err(f"{ft}: scenario {fact.get('scenario')!r} != {sid}")
        kind = fact.get("kind")
        if kind not in KINDS:
            err(f"{ft}: bad kind {kind!r}")
        kinds[kind] = kinds.get(kind, 0) + 1
        src = fact.get("source", "")
        if kind == "user_rule" and not (src == "MEMORY.md" or src.startswith("notes/")):
            err(f"{ft}: user_rule must come from MEMORY.md or notes/ (got {src})")
        spath = os.path.join(root, src)
        if not os.path.isfile(spath):
            err(f"{ft}: source {src} missing")
            continue
        if spath not in cache:
            with open(spath, encoding="utf-8") as f:
                raw = f.read()
            cache[spath] = (norm(raw), [norm(l) for l in raw.splitlines()])
        whole, lines = cache[spath]
        phrases = fact.get("phrases")
        if not isinstance(phrases, list) or not 1 <= len(phrases) <= 4:
            err(f"{ft}: need 1-4 phrases")
            continue
        for ph in phrases:
            if not isinstance(ph, str):
                err(f"{ft}: phrase not a string")
                continue
            if not 3 <= len(ph) <= 80:
                err(f"{ft}: phrase length {len(ph)} out of 3-80: {ph!r}")
            mp = markup_problem(ph)
            if mp:
                err(f"{ft}: phrase has markup ({mp}): {ph!r}")
            n = norm(ph)
            if n not in whole:
                err(f"{ft}: phrase not in {src}: {ph!r}")
            elif not any(n in l for l in lines):
                err(f"{ft}: phrase spans lines in {src}: {ph!r}")
            for s in nsecrets:
                if n in s or s in n:
                    err(f"{ft}: phrase overlaps secret-shaped string: {ph!r}")
    ids = [f.get("id") for f in facts]
    return {"sid": sid, "ids": ids, "notes": len(notes), "ledger": lsz,
            "plan": psz, "secrets": len(secrets), "kinds": kinds,
            "lang": meta.get("language")}


def main():
    all_ids = []
    results = []
    for split in SPLITS:
        sp = os.path.join(HERE, split)
        if not os.path.isdir(sp):
            err(f"missing split folder {split}/")
            continue
        scen = [d for d in sorted(os.listdir(sp)) if os.path.isdir(os.path.join(sp, d)) and d.startswith("im-")]  # the other authors share this folder
        if not scen:
            err(f"no scenario in {split}/")
        for d in scen:
            r = check_scenario(split, os.path.join(sp, d))
            if r:
                results.append((split, r))
                all_ids.extend(r["ids"])
    dup = {i for i in all_ids if all_ids.count(i) > 1}
    if dup:
        err(f"duplicate fact ids: {sorted(dup)}")
    for split, r in results:
        print(f"{split}/{r['sid']}: lang={r['lang']} notes={r['notes']} ledger={r['ledger']} "
              f"plan={r['plan']} secrets={r['secrets']} kinds={dict(sorted(r['kinds'].items()))}")
    if errors:
        print(f"\n{len(errors)} problem(s):")
        for e in errors:
            print("  -", e)
        return 1
    print("\nall checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
