#!/usr/bin/env python3
"""Self-check for il- hand-off scenarios (stdlib only)."""
import json, os, re, sys, unicodedata

HERE = os.path.dirname(os.path.abspath(__file__))
KINDS = {"goal", "next_step", "current_edit", "failed_reason", "decision", "command",
         "id_ref", "user_rule", "status_number"}
SECRET_RE = re.compile(r"(mlf_pat_\w+|sk_live_\w+|ghp_\w+|xox[bp]-[\w-]+|AKIA[0-9A-Z]{12,}|"
                       r"://[^:/\s]+:[^@\s]+@|(?:PASSWORD|SECRET|TOKEN|API_KEY)\w*\s*[:=]\s*\S+)", re.I)

def norm(s):
    s = unicodedata.normalize("NFKC", s).casefold().replace("`", "")
    return re.sub(r"\s+", " ", s).strip()

errors = []
def err(m): errors.append(m)
seen_ids = set()
report = []

for split in ("dev", "test"):
    base = os.path.join(HERE, split)
    if not os.path.isdir(base):
        continue
    for sc in sorted(os.listdir(base)):
        if not sc.startswith("il-"):
            continue  # the other authors' scenarios share this folder
        d = os.path.join(base, sc)
        if not os.path.isdir(d):
            continue
        if not sc.startswith("il-") or not re.fullmatch(r"[a-z0-9-]+", sc):
            err(f"{sc}: bad scenario id")
        meta = json.load(open(os.path.join(d, "scenario.json"), encoding="utf-8"))
        for k in ("id", "workspace", "language", "description", "author"):
            if k not in meta: err(f"{sc}: scenario.json missing {k}")
        if meta.get("id") != sc: err(f"{sc}: id mismatch")
        if meta.get("author") != "il": err(f"{sc}: author")
        ws = meta["workspace"]
        if not re.fullmatch(r"[a-z0-9-]+", ws): err(f"{sc}: bad ws name")
        root = os.path.join(d, "root")
        for req in ("MEMORY.md", f"{ws}/PLAN.md", f"{ws}/handoff/LEDGER.md"):
            if not os.path.isfile(os.path.join(root, req)): err(f"{sc}: missing {req}")
        mds = [os.path.join(dp, f) for dp, _, fs in os.walk(root) for f in fs if f.endswith(".md")]
        if not 20 <= len(mds) <= 60: err(f"{sc}: {len(mds)} md notes (need 20-60)")
        dirs = [x for x in os.listdir(root) if os.path.isdir(os.path.join(root, x)) and x not in ("notes", ws)]
        if not dirs: err(f"{sc}: no decoy workspace")
        plan = open(os.path.join(root, ws, "PLAN.md"), encoding="utf-8").read()
        led = open(os.path.join(root, ws, "handoff", "LEDGER.md"), encoding="utf-8").read()
        secrets_found = sum(len(SECRET_RE.findall(open(p, encoding="utf-8").read())) for p in mds)
        if secrets_found < 2: err(f"{sc}: only {secrets_found} secret-shaped strings")
        facts = [json.loads(l) for l in open(os.path.join(d, "facts.jsonl"), encoding="utf-8") if l.strip()]
        if len(facts) != 20: err(f"{sc}: {len(facts)} facts")
        cache = {}
        for f in facts:
            fid = f.get("id")
            if fid in seen_ids: err(f"{sc}: dup id {fid}")
            seen_ids.add(fid)
            if f.get("scenario") != sc: err(f"{fid}: scenario field")
            if f.get("kind") not in KINDS: err(f"{fid}: kind {f.get('kind')}")
            ph = f.get("phrases", [])
            if not 1 <= len(ph) <= 4: err(f"{fid}: {len(ph)} phrases")
            src = f.get("source", "")
            sp = os.path.join(root, src)
            if not os.path.isfile(sp):
                err(f"{fid}: source {src} missing"); continue
            if f["kind"] == "user_rule" and "/" in src and not src.startswith("notes/"):
                err(f"{fid}: user_rule source must be root-level")
            if sp not in cache:
                text = open(sp, encoding="utf-8").read()
                secrets = [norm(m.group(0)) for m in SECRET_RE.finditer(text)]
                cache[sp] = ([norm(l) for l in text.splitlines()], secrets)
            lines, secrets = cache[sp]
            for p in ph:
                if not 3 <= len(p) <= 80: err(f"{fid}: phrase length {p!r}")
                if re.search(r"(\*\*|`|^#|^\s*[-*] |\[[ xX]\])", p): err(f"{fid}: markup in {p!r}")
                n = norm(p)
                if not any(n in l for l in lines): err(f"{fid}: phrase not in {src}: {p!r}")
                if any(n in s for s in secrets): err(f"{fid}: phrase inside secret {p!r}")
        report.append(f"{split}/{sc}: lang={meta['language']} notes={len(mds)} "
                      f"ledger={len(led)} plan={len(plan)} facts={len(facts)} secrets={secrets_found}")

print("\n".join(report))
if errors:
    print("\nERRORS:"); print("\n".join(errors)); sys.exit(1)
print("OK")
