#!/usr/bin/env python3
"""Self-check for author-ic scenarios (stdlib only)."""
import json, re, sys, unicodedata
from pathlib import Path

BASE = Path(__file__).resolve().parent
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision", "command",
         "id_ref", "user_rule", "status_number"}
# secret-shaped strings pasted in the scenarios; no phrase may lie inside one
SECRET_RE = re.compile(r"(stg_[A-Za-z0-9]{10,}|rds_[0-9a-f]{10,}|://[^:\s]+:[^@\s]+@|Hf7!kPq2wEr9|"
                       r"[A-Za-z0-9_]*(PASSWORD|TOKEN|SECRET|passwort)[A-Za-z0-9_]*\s*[=:]\s*\S+|"
                       r"glpat-[A-Za-z0-9_-]+|xoxb-[A-Za-z0-9-]+)", re.I)

def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()

errors = []
def err(m): errors.append(m)

scen_dirs = [p.parent for p in BASE.glob("*/ic-*/scenario.json")]
if len(scen_dirs) != 2:
    err(f"expected 2 scenarios, found {len(scen_dirs)}")
all_ids = set()
for sd in sorted(scen_dirs):
    meta = json.loads((sd / "scenario.json").read_text(encoding="utf-8"))
    for k in ("id", "workspace", "language", "description", "author"):
        if k not in meta: err(f"{sd}: scenario.json missing {k}")
    if meta["id"] != sd.name: err(f"{sd}: id mismatch")
    if not re.fullmatch(r"ic-[a-z0-9-]+", meta["id"]): err(f"{sd}: bad id")
    if meta.get("author") != "author-ic": err(f"{sd}: author")
    root = sd / "root"; ws = root / meta["workspace"]
    if not re.fullmatch(r"[a-z0-9-]+", meta["workspace"]): err("bad ws name")
    for req in ("MEMORY.md", f"{meta['workspace']}/PLAN.md", f"{meta['workspace']}/handoff/LEDGER.md"):
        if not (root / req).is_file(): err(f"{sd.name}: missing {req}")
    mds = list(root.rglob("*.md"))
    if not 20 <= len(mds) <= 60: err(f"{sd.name}: {len(mds)} md files")
    led = (ws / "handoff/LEDGER.md").read_text(encoding="utf-8")
    plan = (ws / "PLAN.md").read_text(encoding="utf-8")
    if not 10000 <= len(led) <= 30000: err(f"{sd.name}: ledger {len(led)} chars")
    if not 2000 <= len(plan) <= 12000: err(f"{sd.name}: plan {len(plan)} chars")
    secrets = []
    for md in mds:
        for m in SECRET_RE.finditer(md.read_text(encoding="utf-8")):
            secrets.append(norm(m.group(0)))
    lines = [l.strip() for l in (sd / "facts.jsonl").read_text(encoding="utf-8").splitlines() if l.strip()]
    if len(lines) != 20: err(f"{sd.name}: {len(lines)} facts")
    for ln in lines:
        f = json.loads(ln)
        fid = f["id"]
        if fid in all_ids: err(f"dup id {fid}")
        all_ids.add(fid)
        if f["scenario"] != meta["id"]: err(f"{fid}: scenario")
        if f["kind"] not in KINDS: err(f"{fid}: kind {f['kind']}")
        if f["kind"] == "user_rule" and f["source"].startswith(meta["workspace"] + "/"):
            err(f"{fid}: user_rule must come from a root-level note")
        src = root / f["source"]
        if not src.is_file(): err(f"{fid}: no source {f['source']}"); continue
        src_lines = [norm(l) for l in src.read_text(encoding="utf-8").splitlines()]
        if not 1 <= len(f["phrases"]) <= 4: err(f"{fid}: phrase count")
        for ph in f["phrases"]:
            if not 3 <= len(ph) <= 80: err(f"{fid}: length {ph!r}")
            if re.search(r"\*\*|`|\[[ xX]\]|^#|^\s*[-*+]\s|~~", ph): err(f"{fid}: markup in {ph!r}")
            n = norm(ph)
            if not any(n in l for l in src_lines): err(f"{fid}: not found on one line: {ph!r}")
            if any(n in s for s in secrets): err(f"{fid}: phrase inside secret {ph!r}")
    print(f"{meta['id']}: {len(mds)} md, ledger {len(led)}, plan {len(plan)}, facts {len(lines)}")

if errors:
    print("\n".join("ERROR: " + e for e in errors)); sys.exit(1)
print("OK")
