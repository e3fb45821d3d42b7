#!/usr/bin/env python3
"""Self-check for the ii-* hand-off scenarios (stdlib only).

Run:  python3 check.py        (from anywhere; paths are relative to this file)
Exit code 0 = all checks passed.
"""
import json
import re
import sys
import unicodedata
from pathlib import Path

HERE = Path(__file__).resolve().parent
AUTHOR = "ii"
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision",
         "command", "id_ref", "user_rule", "status_number"}
# folder -> size limits (chars) and ledger-style expectations
LIMITS = {
    "dev": {"ledger": (15000, 28000), "plan": (2000, 12000), "ledger_headings": False},
    "test": {"ledger": (10000, 30000), "plan": (6000, 12000), "ledger_headings": True},
}
BANNED_HEADINGS = {"status", "next", "failed", "next steps", "failed attempts"}

errors = []
report = []


def err(msg):
    errors.append(msg)


def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()


def headings(text):
    """Return Markdown headings (ATX and setext) outside fenced code blocks."""
    out, fence, prev = [], None, ""
    for line in text.splitlines():
        s = line.strip()
        m = re.match(r"(`{3,}|~{3,})", s)
        if m:
            if fence is None:
                fence = m.group(1)[0]
            elif s.startswith(fence * 3):
                fence = None
            prev = ""
            continue
        if fence:
            continue
        if re.match(r"^ {0,3}#{1,6}(\s|$)", line):
            out.append(s)
        elif re.match(r"^ {0,3}(=+|-+)\s*$", line) and prev.strip() and \
                not re.match(r"^\s*([-*+]|\d+\.)\s", prev) and "|" not in prev:
            out.append(prev.strip() + " [setext]")
        prev = line
    return out


SECRET_RES = [
    re.compile(r"(?i)\b[A-Z0-9_]*(?:PASSWORD|TOKEN|_KEY|SECRET)[A-Z0-9_]*=(\S+)"),
    re.compile(r"://[^:\s/@]*:([^@\s]+)@"),
    re.compile(r"(?i)senha provis[oó]ria:\s*(\S+?)\"?(?:\s|$)"),
]


def secrets_in(text):
    found = set()
    for rx in SECRET_RES:
        for m in rx.finditer(text):
            v = m.group(1).strip("\"'`,.")
            if len(v) >= 8 and not v.startswith("/"):
                found.add(v)
    return found


def bad_markup(p):
    if p != p.strip():
        return "leading/trailing whitespace"
    if re.match(r"^([-*+]\s|\d+\.\s|#|>)", p):
        return "starts with list/heading/quote markup"
    for tok in ("**", "`", "~~", "[x]", "[ ]", "|"):
        if tok in p:
            return f"contains markup {tok!r}"
    return None


def check_scenario(folder, sdir):
    lim = LIMITS[folder]
    sid = sdir.name
    sj = sdir / "scenario.json"
    if not sj.is_file():
        err(f"{sid}: scenario.json missing")
        return
    meta = json.loads(sj.read_text(encoding="utf-8"))
    for k in ("id", "workspace", "language", "description", "author"):
        if not meta.get(k):
            err(f"{sid}: scenario.json lacks {k}")
    if meta.get("id") != sid:
        err(f"{sid}: id in scenario.json != folder name")
    if not re.fullmatch(r"[a-z0-9-]+", sid) or not sid.startswith(AUTHOR + "-"):
        err(f"{sid}: bad scenario id")
    if meta.get("author") != AUTHOR:
        err(f"{sid}: author must be {AUTHOR}")
    ws = meta.get("workspace", "")
    if not re.fullmatch(r"[a-z0-9-]+", ws):
        err(f"{sid}: bad workspace name {ws!r}")
    root = sdir / "root"
    for rel in ("MEMORY.md", "notes", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
        if not (root / rel).exists():
            err(f"{sid}: missing root/{rel}")
    if errors and any(e.startswith(sid + ": missing") for e in errors):
        return

    # note counts
    mds = sorted(root.rglob("*.md"))
    if not 20 <= len(mds) <= 60:
        err(f"{sid}: {len(mds)} notes, need 20-60")
    decoys = [d.name for d in root.iterdir()
              if d.is_dir() and d.name not in (ws, "notes") and list(d.rglob("*.md"))]
    if not decoys:
        err(f"{sid}: no decoy workspace")
    root_notes = list((root / "notes").glob("*.md"))
    if len(root_notes) < 8:
        err(f"{sid}: only {len(root_notes)} root notes")

    # sizes
    ledger = (root / ws / "handoff" / "LEDGER.md").read_text(encoding="utf-8")
    plan = (root / ws / "PLAN.md").read_text(encoding="utf-8")
    lo, hi = lim["ledger"]
    if not lo <= len(ledger) <= hi:
        err(f"{sid}: ledger {len(ledger)} chars, need {lo}-{hi}")
    lo, hi = lim["plan"]
    if not lo <= len(plan) <= hi:
        err(f"{sid}: plan {len(plan)} chars, need {lo}-{hi}")
    hs = headings(ledger)
    if lim["ledger_headings"]:
        if len(hs) < 4:
            err(f"{sid}: ledger should use the author's own headings, found {hs}")
        for h in hs:
            if norm(h.lstrip("#")).strip(" :") in BANNED_HEADINGS:
                err(f"{sid}: generic heading {h!r}")
    elif hs:
        err(f"{sid}: ledger must have no headings, found {hs}")
    entries = len(re.findall(r"^\s*(?:[-*]\s|\|\s*\d+\s*\|)", ledger, re.M))
    if entries < 30:
        err(f"{sid}: only {entries} ledger entries/rows")

    # secrets
    all_text = "\n".join(p.read_text(encoding="utf-8") for p in mds)
    secrets = secrets_in(all_text)
    if len(secrets) < 2:
        err(f"{sid}: need a couple of fake secret-shaped strings, found {secrets}")

    # facts
    lines = [l for l in (sdir / "facts.jsonl").read_text(encoding="utf-8").splitlines() if l.strip()]
    if len(lines) != 20:
        err(f"{sid}: {len(lines)} facts, need 20")
    kinds = {}
    for n, line in enumerate(lines, 1):
        try:
            f = json.loads(line)
        except json.JSONDecodeError as e:
            err(f"{sid}: facts line {n} not JSON: {e}")
            continue
        fid = f.get("id")
        if fid in SEEN_IDS:
            err(f"{sid}: duplicate fact id {fid}")
        SEEN_IDS.add(fid)
        if f.get("scenario") != sid:
            err(f"{fid}: scenario mismatch")
        if f.get("kind") not in KINDS:
            err(f"{fid}: bad kind {f.get('kind')}")
        kinds[f.get("kind")] = kinds.get(f.get("kind"), 0) + 1
        if not f.get("note"):
            err(f"{fid}: note missing")
        src = root / f.get("source", "")
        if not f.get("source") or not src.is_file():
            err(f"{fid}: source {f.get('source')} missing")
            continue
        src_lines = [norm(l) for l in src.read_text(encoding="utf-8").splitlines()]
        ph = f.get("phrases")
        if not isinstance(ph, list) or not 1 <= len(ph) <= 4:
            err(f"{fid}: need 1-4 phrases")
            continue
        for p in ph:
            if not 3 <= len(p) <= 80:
                err(f"{fid}: phrase length {len(p)}: {p!r}")
            bm = bad_markup(p)
            if bm:
                err(f"{fid}: phrase {p!r}: {bm}")
            np_ = norm(p)
            if not any(np_ in l for l in src_lines):
                err(f"{fid}: phrase not found within one line of {f['source']}: {p!r}")
            for s in secrets:
                ns = norm(s)
                if np_ in ns or ns in np_:
                    err(f"{fid}: phrase {p!r} overlaps secret-shaped string")
        if f.get("kind") == "user_rule":
            rel = f["source"]
            if not (rel == "MEMORY.md" or rel.startswith("notes/")):
                err(f"{fid}: user_rule must come from a root-level note")
    for k in ("failed_reason", "next_step", "status_number", "user_rule", "command"):
        if not kinds.get(k):
            err(f"{sid}: no fact of kind {k}")
    report.append(f"{folder}/{sid}: lang={meta.get('language')} notes={len(mds)} "
                  f"ledger={len(ledger)} plan={len(plan)} facts={len(lines)} "
                  f"secrets={len(secrets)} decoys={decoys} kinds={dict(sorted(kinds.items()))}")


SEEN_IDS = set()


def main():
    n = 0
    for folder in LIMITS:
        base = HERE / folder
        if not base.is_dir():
            err(f"folder {folder}/ missing")
            continue
        for sdir in sorted(p for p in base.iterdir() if p.is_dir() and p.name.startswith("ii-")):
            n += 1
            check_scenario(folder, sdir)
    if n == 0:
        err("no scenarios found")
    for r in report:
        print(r)
    if errors:
        print(f"\n{len(errors)} problem(s):")
        for e in errors:
            print(" -", e)
        return 1
    print(f"\nOK: {n} scenario(s) passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
