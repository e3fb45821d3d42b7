#!/usr/bin/env python3
"""Validate the iq scenarios against the brief (stdlib only)."""
import json, os, re, sys, unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = [os.path.join(HERE, "dev", "iq-ja-ec-search-relevance"),
             os.path.join(HERE, "test", "iq-ende-can-bootloader")]
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision", "command",
         "id_ref", "user_rule", "status_number"}
MARKUP = re.compile(r"(\*\*|`|\[[ xX]\]|^#|\s#{1,6}\s|^[-*+]\s|^\d+\.\s)")
SECRETS = [re.compile(p) for p in (r"OS_PASS=\S+", r"://[^:\s]+:[^@\s]+@", r"(?i)(token|secret|password|api_key)\s*[=:]\s*\S+")]

def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s)

def check(sdir, errors, seen_ids):
    name = os.path.basename(sdir)
    def err(m): errors.append(f"[{name}] {m}")
    meta = json.load(open(os.path.join(sdir, "scenario.json"), encoding="utf-8"))
    for k in ("id", "workspace", "language", "description", "author"):
        if k not in meta: err(f"scenario.json missing {k}")
    if meta.get("id") != name: err("scenario id != folder name")
    if not re.fullmatch(r"[a-z0-9-]+", meta.get("workspace", "")): err("bad workspace name")
    if not name.startswith("iq-"): err("id lacks author tag")
    root = os.path.join(sdir, "root")
    ws = os.path.join(root, meta["workspace"])
    for req in ("MEMORY.md", os.path.join(meta["workspace"], "PLAN.md"),
                os.path.join(meta["workspace"], "handoff", "LEDGER.md")):
        if not os.path.isfile(os.path.join(root, req)): err(f"missing {req}")
    if not os.path.isdir(os.path.join(root, "notes")): err("missing root notes/")
    mds = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".md")]
    if not 20 <= len(mds) <= 60: err(f"{len(mds)} notes (want 20-60)")
    led = open(os.path.join(ws, "handoff", "LEDGER.md"), encoding="utf-8").read()
    plan = open(os.path.join(ws, "PLAN.md"), encoding="utf-8").read()
    if not 10000 <= len(led) <= 30000: err(f"ledger {len(led)} chars")
    if not 2000 <= len(plan) <= 12000: err(f"plan {len(plan)} chars")
    facts = [json.loads(l) for l in open(os.path.join(sdir, "facts.jsonl"), encoding="utf-8") if l.strip()]
    if len(facts) != 20: err(f"{len(facts)} facts (want 20)")
    cache = {}
    for f in facts:
        fid = f.get("id")
        if fid in seen_ids: err(f"duplicate id {fid}")
        seen_ids.add(fid)
        if f.get("scenario") != name: err(f"{fid}: scenario mismatch")
        if f.get("kind") not in KINDS: err(f"{fid}: bad kind {f.get('kind')}")
        if not f.get("note"): err(f"{fid}: no note")
        ph = f.get("phrases", [])
        if not 1 <= len(ph) <= 4: err(f"{fid}: {len(ph)} phrases")
        src = f.get("source", "")
        path = os.path.join(root, src)
        if not os.path.isfile(path): err(f"{fid}: source {src} missing"); continue
        if f["kind"] == "user_rule" and src.split("/")[0] not in ("MEMORY.md", "notes"):
            err(f"{fid}: user_rule not from a root-level note")
        if path not in cache:
            lines = open(path, encoding="utf-8").read().splitlines()
            cache[path] = [norm(l) for l in lines]
        lines = cache[path]
        for p in ph:
            if not 3 <= len(p) <= 80: err(f"{fid}: phrase length {len(p)}: {p!r}")
            if MARKUP.search(p): err(f"{fid}: markup in phrase {p!r}")
            np_ = norm(p)
            hit = [l for l in lines if np_ in l]
            if not hit: err(f"{fid}: phrase not found in {src}: {p!r}")
            for l in hit:
                for rx in SECRETS:
                    for m in rx.finditer(l):
                        if np_ in m.group(0): err(f"{fid}: phrase inside secret-shaped string {p!r}")
    kinds = {f.get("kind") for f in facts}
    for k in ("failed_reason", "next_step", "user_rule", "status_number", "command"):
        if k not in kinds: err(f"no fact of kind {k}")
    print(f"{name}: notes={len(mds)} ledger={len(led)} plan={len(plan)} facts={len(facts)}")

def main():
    errors, seen = [], set()
    for s in SCENARIOS:
        if not os.path.isdir(s): errors.append(f"missing scenario {s}"); continue
        check(s, errors, seen)
    for e in errors: print("ERROR", e)
    print("OK" if not errors else f"{len(errors)} error(s)")
    sys.exit(1 if errors else 0)

if __name__ == "__main__":
    main()
