#!/usr/bin/env python3
"""Check the jc scenarios (folders one/ and two/). Pure stdlib.

Usage: python3 check.py   (exit code 0 = all good)
"""
import json
import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDERS = ["one", "two"]
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
SCEN_KEYS = {"id", "workspace", "language", "description", "author"}
ID_RE = re.compile(r"^jc-[a-z0-9-]+$")
WS_RE = re.compile(r"^[a-z0-9-]+$")
# secret-shaped things engineers paste: KEY=value for secret-ish keys, user:pass@ in URLs,
# webhook URLs, vendor token prefixes
SECRET_RES = [
    re.compile(r"(?:password|passwd|secret|token|api_key|webhook[a-z_]*)\s*=\s*\S+", re.I),
    re.compile(r"://[^\s/:@]+:[^\s/@]+@"),
    re.compile(r"hooks\.slack\.com/services/\S+", re.I),
    re.compile(r"\b(?:glsa|sbx|ghp|xox[bp])_[A-Za-z0-9_]+"),
]
MARKUP_RE = re.compile(r"(\*\*|`|^\s*#|^\s*[-*+] |\[[ xX~]\])")

errors = []


def err(msg):
    errors.append(msg)


def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()


def secret_spans(line_n):
    spans = []
    for rx in SECRET_RES:
        for m in rx.finditer(line_n):
            spans.append((m.start(), m.end()))
    return spans


def check_scenario(folder, sdir, all_ids):
    name = os.path.basename(sdir)
    tag = f"{folder}/{name}"
    if not ID_RE.match(name):
        err(f"{tag}: bad scenario folder name")
    try:
        scen = json.load(open(os.path.join(sdir, "scenario.json"), encoding="utf-8"))
    except Exception as e:  # noqa
        err(f"{tag}: scenario.json unreadable: {e}")
        return
    missing = SCEN_KEYS - set(scen)
    if missing:
        err(f"{tag}: scenario.json missing {sorted(missing)}")
    if scen.get("id") != name:
        err(f"{tag}: scenario id {scen.get('id')!r} != folder name")
    ws = scen.get("workspace", "")
    if not WS_RE.match(ws):
        err(f"{tag}: bad workspace name {ws!r}")
    root = os.path.join(sdir, "root")
    for req in ["MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"]:
        if not os.path.isfile(os.path.join(root, req)):
            err(f"{tag}: missing root/{req}")
    if not os.path.isdir(os.path.join(root, "notes")):
        err(f"{tag}: missing root/notes/")

    md = []
    for dp, _dn, fns in os.walk(root):
        for fn in fns:
            if fn.endswith(".md"):
                md.append(os.path.join(dp, fn))
    if not 20 <= len(md) <= 60:
        err(f"{tag}: {len(md)} markdown notes (want 20-60)")

    sizes = {}
    for rel, lo, hi in [(f"{ws}/handoff/LEDGER.md", 10000, 30000), (f"{ws}/PLAN.md", 2000, 12000)]:
        p = os.path.join(root, rel)
        if os.path.isfile(p):
            n = len(open(p, encoding="utf-8").read())
            sizes[rel] = n
            if not lo <= n <= hi:
                err(f"{tag}: {rel} has {n} chars (want {lo}-{hi})")

    facts_path = os.path.join(sdir, "facts.jsonl")
    facts = []
    with open(facts_path, encoding="utf-8") as f:
        for ln, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                facts.append(json.loads(line))
            except Exception as e:  # noqa
                err(f"{tag}: facts.jsonl line {ln} bad JSON: {e}")
    if len(facts) != 20:
        err(f"{tag}: {len(facts)} facts (want 20)")

    cache = {}
    for fa in facts:
        fid = fa.get("id", "?")
        for k in ["id", "scenario", "kind", "phrases", "source", "note"]:
            if k not in fa:
                err(f"{tag} {fid}: missing key {k}")
        if fid in all_ids:
            err(f"{tag} {fid}: duplicate fact id")
        all_ids.add(fid)
        if fa.get("scenario") != name:
            err(f"{tag} {fid}: scenario field {fa.get('scenario')!r}")
        if fa.get("kind") not in KINDS:
            err(f"{tag} {fid}: bad kind {fa.get('kind')!r}")
        src = fa.get("source", "")
        if fa.get("kind") == "user_rule":
            top = src.split("/")[0]
            if not (src == "MEMORY.md" or top == "notes"):
                err(f"{tag} {fid}: user_rule source must be root-level note, got {src}")
        sp = os.path.join(root, src)
        if not os.path.isfile(sp):
            err(f"{tag} {fid}: source {src} missing")
            continue
        if sp not in cache:
            cache[sp] = [norm(l) for l in open(sp, encoding="utf-8").read().splitlines()]
        lines = cache[sp]
        phrases = fa.get("phrases", [])
        if not 1 <= len(phrases) <= 4:
            err(f"{tag} {fid}: {len(phrases)} phrases (want 1-4)")
        for ph in phrases:
            if not 3 <= len(ph) <= 80:
                err(f"{tag} {fid}: phrase length {len(ph)}: {ph!r}")
            if MARKUP_RE.search(ph):
                err(f"{tag} {fid}: phrase contains markup: {ph!r}")
            pn = norm(ph)
            hits = [l for l in lines if pn in l]
            if not hits:
                err(f"{tag} {fid}: phrase not found in {src}: {ph!r}")
                continue
            clean_hit = False
            for l in hits:
                spans = secret_spans(l)
                start = 0
                while True:
                    i = l.find(pn, start)
                    if i < 0:
                        break
                    if not any(i < e and i + len(pn) > s for s, e in spans):
                        clean_hit = True
                    start = i + 1
            if not clean_hit:
                err(f"{tag} {fid}: phrase only occurs inside a secret-shaped string: {ph!r}")
    return len(md), sizes


def main():
    all_ids = set()
    found = 0
    for folder in FOLDERS:
        fdir = os.path.join(HERE, folder)
        subs = [d for d in sorted(os.listdir(fdir)) if os.path.isdir(os.path.join(fdir, d))] if os.path.isdir(fdir) else []
        if len(subs) != 1:
            err(f"{folder}: expected exactly one scenario folder, found {subs}")
        for d in subs:
            res = check_scenario(folder, os.path.join(fdir, d), all_ids)
            found += 1
            if res:
                n, sizes = res
                print(f"{folder}/{d}: {n} notes, " + ", ".join(f"{k}={v}" for k, v in sizes.items()))
    if errors:
        print(f"\n{len(errors)} problem(s):")
        for e in errors:
            print("  -", e)
        sys.exit(1)
    print(f"OK: {found} scenarios, {len(all_ids)} facts")


if __name__ == "__main__":
    main()
