#!/usr/bin/env python3
"""Self-check for author iw's two hand-off scenarios (pure stdlib).

Usage: python3 check.py            (from anywhere)
Exit code 0 = all checks passed.
"""
import json
import os
import re
import sys
import unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
# secret-shaped strings that appear in the memory roots; no phrase may touch them
SECRET_PATTERNS = [
    r"sw_live_[A-Za-z0-9]+",
    r"postgres(?:ql)?://[^\s`]*:[^\s`@]*@[^\s`]*",
    r"(?:repo\d-s3-key(?:-secret)?|repo\d-cipher-pass|tls-server-.*pass)\s*=\s*\S+",
    r"SCW[A-Z0-9]{15,}",
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    r"test_[A-Za-z0-9]{20,}",
    r"live_[A-Za-z0-9]{20,}",
    r"PGPASSWORD=\S+",
]

errors = []


def err(msg):
    errors.append(msg)


def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()


def md_files(root):
    out = []
    for d, _, fs in os.walk(root):
        for f in fs:
            if f.endswith(".md"):
                out.append(os.path.join(d, f))
    return out


def secret_spans(line):
    spans = []
    for pat in SECRET_PATTERNS:
        for m in re.finditer(pat, line):
            spans.append((m.start(), m.end()))
    return spans


def phrase_ok_in_line(phrase_n, raw_line):
    """phrase occurs in the normalised line and not overlapping a secret."""
    # normalise the line piecewise so secret spans can be mapped: we check on the
    # normalised line, and separately make sure the phrase is not inside a
    # normalised secret string.
    line_n = norm(raw_line)
    if phrase_n not in line_n:
        return False, False
    secrets_n = [norm(raw_line[a:b]) for a, b in secret_spans(raw_line)]
    touches = False
    for sec in secrets_n:
        if not sec:
            continue
        # phrase inside secret, or secret inside phrase, or partial overlap
        idx = 0
        while True:
            i = line_n.find(phrase_n, idx)
            if i < 0:
                break
            j = line_n.find(sec)
            while j >= 0:
                if i < j + len(sec) and j < i + len(phrase_n):
                    touches = True
                j = line_n.find(sec, j + 1)
            idx = i + 1
    return True, touches


MARKUP = [
    (re.compile(r"\*\*"), "bold markup"),
    (re.compile(r"`"), "backtick"),
    (re.compile(r"#"), "hash"),
    (re.compile(r"\[[ xX]\]"), "checkbox"),
    (re.compile(r"^\s*[-*+>]\s"), "bullet/quote"),
    (re.compile(r"^\s*\d+\.\s"), "list number"),
    (re.compile(r"~~"), "strikethrough"),
]


def check_scenario(folder, sdir, all_ids):
    sid = os.path.basename(sdir)
    tag = f"[{folder}/{sid}]"
    if not sid.startswith("iw-") or not re.fullmatch(r"[a-z0-9-]+", sid):
        err(f"{tag} bad scenario id")
    try:
        meta = json.load(open(os.path.join(sdir, "scenario.json"), encoding="utf-8"))
    except Exception as e:  # noqa
        err(f"{tag} scenario.json unreadable: {e}")
        return None
    for k in ("id", "workspace", "language", "description", "author"):
        if k not in meta:
            err(f"{tag} scenario.json missing {k}")
    if meta.get("id") != sid:
        err(f"{tag} scenario.json id {meta.get('id')} != folder")
    ws = meta.get("workspace", "")
    if not re.fullmatch(r"[a-z0-9-]+", ws):
        err(f"{tag} bad workspace name {ws}")
    root = os.path.join(sdir, "root")
    for must in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not os.path.isfile(os.path.join(root, must)):
            err(f"{tag} missing {must}")
    if not os.path.isdir(os.path.join(root, "notes")):
        err(f"{tag} missing root notes/")
    n_md = len(md_files(root))
    if not 20 <= n_md <= 60:
        err(f"{tag} {n_md} markdown notes, want 20-60")
    ledger = open(os.path.join(root, ws, "handoff/LEDGER.md"), encoding="utf-8").read()
    plan = open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read()
    if not 10000 <= len(ledger) <= 30000:
        err(f"{tag} ledger {len(ledger)} chars, want 10000-30000")
    if not 2000 <= len(plan) <= 12000:
        err(f"{tag} plan {len(plan)} chars, want 2000-12000")

    # facts
    fpath = os.path.join(sdir, "facts.jsonl")
    facts = []
    with open(fpath, encoding="utf-8") as fh:
        for ln, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                facts.append(json.loads(line))
            except Exception as e:  # noqa
                err(f"{tag} facts.jsonl line {ln}: {e}")
    if len(facts) != 20:
        err(f"{tag} {len(facts)} facts, want 20")
    kinds_seen = set()
    for f in facts:
        fid = f.get("id", "?")
        for k in ("id", "scenario", "kind", "phrases", "source", "note"):
            if k not in f:
                err(f"{tag} {fid} missing key {k}")
        if fid in all_ids:
            err(f"{tag} duplicate fact id {fid}")
        all_ids.add(fid)
        if f.get("scenario") != sid:
            err(f"{tag} {fid} scenario mismatch")
        if f.get("kind") not in KINDS:
            err(f"{tag} {fid} bad kind {f.get('kind')}")
        kinds_seen.add(f.get("kind"))
        src = os.path.join(root, f.get("source", ""))
        if not os.path.isfile(src):
            err(f"{tag} {fid} source missing: {f.get('source')}")
            continue
        lines = open(src, encoding="utf-8").read().splitlines()
        phrases = f.get("phrases", [])
        if not 1 <= len(phrases) <= 4:
            err(f"{tag} {fid} has {len(phrases)} phrases")
        for p in phrases:
            if not 3 <= len(p) <= 80:
                err(f"{tag} {fid} phrase length {len(p)}: {p!r}")
            for rx, what in MARKUP:
                if rx.search(p):
                    err(f"{tag} {fid} phrase has {what}: {p!r}")
            pn = norm(p)
            found = False
            touched = False
            for raw in lines:
                ok, touches = phrase_ok_in_line(pn, raw)
                if ok:
                    found = True
                    touched = touched or touches
            if not found:
                err(f"{tag} {fid} phrase not in one line of {f.get('source')}: {p!r}")
            if touched:
                err(f"{tag} {fid} phrase overlaps a secret-shaped string: {p!r}")
        if f.get("kind") == "user_rule":
            s = f.get("source", "")
            if not (s == "MEMORY.md" or s.startswith("notes/")):
                err(f"{tag} {fid} user_rule must come from a root-level note")
    for k in ("failed_reason", "next_step", "user_rule", "status_number", "command"):
        if k not in kinds_seen:
            err(f"{tag} no fact of kind {k}")
    return meta, ledger, plan, n_md


def check_one_shape(ledger, tag):
    """one: single long numbered list, no headings below title, numbering restarts once."""
    in_code = False
    headings = 0
    nums = []
    for line in ledger.splitlines():
        if line.strip().startswith("```"):
            in_code = not in_code
            continue
        if in_code:
            continue
        if re.match(r"#{1,6}\s", line):
            headings += 1
        m = re.match(r"(\d+)\.\s", line)
        if m:
            nums.append(int(m.group(1)))
    if headings != 1:
        err(f"{tag} ledger should have exactly one heading (the title), has {headings}")
    if len(nums) < 60:
        err(f"{tag} ledger has {len(nums)} numbered items, want 60+")
    restarts = sum(1 for a, b in zip(nums, nums[1:]) if b <= a)
    if restarts != 1:
        err(f"{tag} numbering restarts {restarts} times, want exactly 1")
    for a, b in zip(nums, nums[1:]):
        if b != a + 1 and b != 1:
            err(f"{tag} numbering jumps {a} -> {b}")


def check_two_shape(ledger, tag):
    """two: bilingual headings, a gotchas section, long pasted log block."""
    heads = [l for l in ledger.splitlines() if re.match(r"#{1,6}\s", l)]
    if len(heads) < 6:
        err(f"{tag} expected several headings, got {len(heads)}")
    low = ledger.lower()
    if "gotcha" not in low:
        err(f"{tag} no gotchas section")
    dutch = sum(low.count(w) for w in (" niet ", " het ", " een ", " voor ", " nog ", " dat "))
    if dutch < 40:
        err(f"{tag} not much Dutch in ledger ({dutch} markers)")
    # longest fenced block
    blocks = re.findall(r"```[^\n]*\n(.*?)```", ledger, re.S)
    longest = max((b.count("\n") for b in blocks), default=0)
    if longest < 40:
        err(f"{tag} longest pasted block only {longest} lines, want 40+")
    # current state heading somewhere in the middle third-ish
    m = re.search(r"^#+ .*(huidige stand|current state)", ledger, re.I | re.M)
    if not m:
        err(f"{tag} no current-state heading")
    else:
        frac = m.start() / len(ledger)
        if not 0.2 <= frac <= 0.7:
            err(f"{tag} current state at {frac:.2f} of file, want buried in the middle")


def main():
    all_ids = set()
    report = []
    for folder in ("one", "two"):
        base = os.path.join(HERE, folder)
        subs = [d for d in sorted(os.listdir(base)) if os.path.isdir(os.path.join(base, d))] if os.path.isdir(base) else []
        if len(subs) != 1:
            err(f"[{folder}] want exactly one scenario folder, got {subs}")
            continue
        sdir = os.path.join(base, subs[0])
        res = check_scenario(folder, sdir, all_ids)
        if not res:
            continue
        meta, ledger, plan, n_md = res
        tag = f"[{folder}/{subs[0]}]"
        if folder == "one":
            check_one_shape(ledger, tag)
        else:
            check_two_shape(ledger, tag)
        report.append(f"{folder}: {meta['id']} lang={meta['language']} ledger={len(ledger)} plan={len(plan)} notes={n_md}")
    for r in report:
        print(r)
    if errors:
        print(f"\n{len(errors)} problem(s):")
        for e in errors:
            print(" -", e)
        sys.exit(1)
    print("OK")


if __name__ == "__main__":
    main()
