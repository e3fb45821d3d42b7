#!/usr/bin/env python3
"""Checks the `is` author's hand-off scenarios (pure stdlib)."""
import json, os, re, sys, unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision", "command",
         "id_ref", "user_rule", "status_number"}
# secret-shaped strings: tokens, passwords in env snippets / conn strings / pgpass
SECRET_RES = [
    re.compile(r"ATATT[0-9A-Za-z]{20,}"),
    re.compile(r"cf_[0-9A-Za-z]{20,}"),
    re.compile(r"(?i)(?:pass(?:word)?|token|secret)[A-Z_]*\s*[=:]\s*'?([^\s'\"]{6,})"),
    re.compile(r"[a-z]+://[^:\s/]+:([^@\s]+)@"),
    re.compile(r"^[\w.-]+:\d+:[\w*]+:[\w]+:(\S+)$", re.M),  # .pgpass line
]
errors = []

def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()

def err(msg):
    errors.append(msg)

def check_scenario(d, expect_lang):
    sj = json.load(open(os.path.join(d, "scenario.json"), encoding="utf-8"))
    sid, ws = sj["id"], sj["workspace"]
    for k in ("id", "workspace", "language", "description", "author"):
        if not sj.get(k):
            err(f"{d}: scenario.json missing {k}")
    if os.path.basename(d) != sid or not re.fullmatch(r"is-[a-z0-9-]+", sid):
        err(f"{d}: bad scenario id {sid}")
    if not re.fullmatch(r"[a-z0-9-]+", ws):
        err(f"{sid}: bad workspace {ws}")
    if sj["language"] != expect_lang:
        err(f"{sid}: language {sj['language']} != {expect_lang}")
    root = os.path.join(d, "root")
    mds = [os.path.join(dp, f) for dp, _, fs in os.walk(root) for f in fs if f.endswith(".md")]
    if not 20 <= len(mds) <= 60:
        err(f"{sid}: {len(mds)} md notes, need 20-60")
    for req in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, req)):
            err(f"{sid}: missing {req}")
    if not os.path.isdir(os.path.join(root, "notes")):
        err(f"{sid}: missing root notes/")
    ledger = open(os.path.join(root, ws, "handoff/LEDGER.md"), encoding="utf-8").read()
    plan = open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read()
    if not 10000 <= len(ledger) <= 30000:
        err(f"{sid}: ledger {len(ledger)} chars")
    if not 2000 <= len(plan) <= 12000:
        err(f"{sid}: plan {len(plan)} chars")
    # collect secrets from all md files
    secrets = set()
    for p in mds:
        t = open(p, encoding="utf-8").read()
        for rx in SECRET_RES:
            for m in rx.finditer(t):
                secrets.add(norm(m.group(m.lastindex or 0)))
    facts = [json.loads(l) for l in open(os.path.join(d, "facts.jsonl"), encoding="utf-8") if l.strip()]
    if len(facts) != 20:
        err(f"{sid}: {len(facts)} facts, need 20")
    ids = set()
    cache = {}
    for f in facts:
        fid = f.get("id")
        if fid in ids:
            err(f"{sid}: duplicate id {fid}")
        ids.add(fid)
        if f.get("scenario") != sid:
            err(f"{fid}: scenario {f.get('scenario')}")
        if f.get("kind") not in KINDS:
            err(f"{fid}: bad kind {f.get('kind')}")
        if not f.get("note"):
            err(f"{fid}: no note")
        src = f.get("source", "")
        if f.get("kind") == "user_rule" and "/" in src and not src.startswith("notes/"):
            err(f"{fid}: user_rule must come from a root-level note")
        sp = os.path.join(root, src)
        if not os.path.isfile(sp):
            err(f"{fid}: missing source {src}")
            continue
        if sp not in cache:
            cache[sp] = [norm(l) for l in open(sp, encoding="utf-8").read().splitlines()]
        lines = cache[sp]
        ph = f.get("phrases", [])
        if not 1 <= len(ph) <= 4:
            err(f"{fid}: {len(ph)} phrases")
        for p in ph:
            if not 3 <= len(p) <= 80:
                err(f"{fid}: phrase length {len(p)}: {p!r}")
            if "`" in p or "**" in p or "#" in p or re.search(r"\[[ xX]\]", p) or re.match(r"\s*([-*+]|\d+\.)\s", p) or "~~" in p:
                err(f"{fid}: markup in phrase {p!r}")
            n = norm(p)
            if not any(n in l for l in lines):
                err(f"{fid}: phrase not found on a single line of {src}: {p!r}")
            for s in secrets:
                if n in s or s in n:
                    err(f"{fid}: phrase overlaps secret-shaped string: {p!r}")
    return sid, ws, len(ledger), len(plan), len(mds), secrets

def main():
    out = []
    for folder, lang in (("one", "ko"), ("two", "es")):
        base = os.path.join(HERE, folder)
        subs = [s for s in os.listdir(base) if os.path.isdir(os.path.join(base, s))] if os.path.isdir(base) else []
        if len(subs) != 1:
            err(f"{folder}: expected exactly one scenario folder, got {subs}")
            continue
        d = os.path.join(base, subs[0])
        sid, ws, nl, np_, nmd, secrets = check_scenario(d, lang)
        out.append(f"{folder}: {sid} ws={ws} ledger={nl} plan={np_} notes={nmd} secrets_seen={len(secrets)}")
        if folder == "two":
            led = open(os.path.join(d, "root", ws, "handoff/LEDGER.md"), encoding="utf-8").read()
            if any(l.lstrip().startswith("#") for l in led.splitlines()):
                err(f"{sid}: Spanish ledger must have no headings (no line starting with #)")
            if not re.search(r"(?m)^#{1,3} ", open(os.path.join(d, "root", ws, "PLAN.md"), encoding="utf-8").read()):
                err(f"{sid}: plan should have its own headings")
    print("\n".join(out))
    if errors:
        print("\nERRORS:")
        print("\n".join(errors))
        sys.exit(1)
    print("OK")

main()
