#!/usr/bin/env python3
"""Check the ja scenarios (one/ and two/) against the brief's rules. Pure stdlib."""
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
MARKUP = ["**", "`", "[x]", "[ ]", "~~"]


def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()


def main():
    errors = []
    seen_ids = set()
    scenarios = []
    for folder in ("one", "two"):
        d = os.path.join(HERE, folder)
        subs = [s for s in os.listdir(d) if os.path.isdir(os.path.join(d, s))] if os.path.isdir(d) else []
        if len(subs) != 1:
            errors.append(f"{folder}: expected exactly one scenario folder, got {subs}")
            continue
        scenarios.append((folder, os.path.join(d, subs[0]), subs[0]))

    for folder, sdir, sid in scenarios:
        tag = f"[{folder}/{sid}]"
        if not sid.startswith("ja-") or not ID_RE.match(sid):
            errors.append(f"{tag} bad scenario id")
        try:
            meta = json.load(open(os.path.join(sdir, "scenario.json"), encoding="utf-8"))
        except Exception as e:  # noqa
            errors.append(f"{tag} scenario.json: {e}")
            continue
        for k in ("id", "workspace", "language", "description", "author"):
            if not meta.get(k):
                errors.append(f"{tag} scenario.json missing {k}")
        if meta.get("id") != sid:
            errors.append(f"{tag} scenario.json id != folder name")
        ws = meta.get("workspace", "")
        if not WS_RE.match(ws):
            errors.append(f"{tag} bad workspace name {ws!r}")
        root = os.path.join(sdir, "root")
        for need in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
            if not os.path.isfile(os.path.join(root, need)):
                errors.append(f"{tag} missing root/{need}")
        mds = []
        for dp, _, fns in os.walk(root):
            mds += [os.path.join(dp, f) for f in fns if f.endswith(".md")]
        if not 20 <= len(mds) <= 60:
            errors.append(f"{tag} {len(mds)} markdown notes (want 20-60)")
        ledger_len = plan_len = 0
        try:
            ledger_len = len(open(os.path.join(root, ws, "handoff/LEDGER.md"), encoding="utf-8").read())
            plan_len = len(open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read())
        except OSError:
            pass
        if not 10000 <= ledger_len <= 30000:
            errors.append(f"{tag} ledger {ledger_len} chars (want 10000-30000)")
        if not 2000 <= plan_len <= 12000:
            errors.append(f"{tag} plan {plan_len} chars (want 2000-12000)")

        facts = []
        for n, line in enumerate(open(os.path.join(sdir, "facts.jsonl"), encoding="utf-8"), 1):
            if not line.strip():
                continue
            try:
                facts.append(json.loads(line))
            except json.JSONDecodeError as e:
                errors.append(f"{tag} facts.jsonl line {n}: {e}")
        if len(facts) != 20:
            errors.append(f"{tag} {len(facts)} facts (want 20)")
        cache = {}
        for f in facts:
            fid = f.get("id", "?")
            ft = f"{tag} {fid}"
            if fid in seen_ids:
                errors.append(f"{ft} duplicate id")
            seen_ids.add(fid)
            if f.get("scenario") != sid:
                errors.append(f"{ft} scenario mismatch")
            if f.get("kind") not in KINDS:
                errors.append(f"{ft} bad kind {f.get('kind')}")
            if not f.get("note"):
                errors.append(f"{ft} missing note")
            src = f.get("source", "")
            p = os.path.join(root, src)
            if not os.path.isfile(p):
                errors.append(f"{ft} source not found: {src}")
                continue
            if src not in cache:
                text = open(p, encoding="utf-8").read()
                cache[src] = (norm(text), [norm(l) for l in text.splitlines()])
            whole, lines = cache[src]
            if src.startswith(("notes/", "MEMORY.md")) is False and f.get("kind") == "user_rule":
                errors.append(f"{ft} user_rule must come from a root-level note")
            phrases = f.get("phrases", [])
            if not 1 <= len(phrases) <= 4:
                errors.append(f"{ft} {len(phrases)} phrases (want 1-4)")
            for ph in phrases:
                if not 3 <= len(ph) <= 80:
                    errors.append(f"{ft} phrase length {len(ph)}: {ph!r}")
                if any(m in ph for m in MARKUP) or ph.lstrip().startswith(("#", "- ", "* ", ">")):
                    errors.append(f"{ft} phrase has markup: {ph!r}")
                nph = norm(ph)
                if nph not in whole:
                    errors.append(f"{ft} phrase not in {src}: {ph!r}")
                elif not any(nph in l for l in lines):
                    errors.append(f"{ft} phrase spans lines in {src}: {ph!r}")
        print(f"{tag} lang={meta.get('language')} notes={len(mds)} ledger={ledger_len} plan={plan_len} facts={len(facts)}")

    if errors:
        print("\n".join("ERROR " + e for e in errors))
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
