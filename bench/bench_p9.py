"""The P9 evaluation (seed 004, task P9; issue 10): how much of what a fresh context must know
survives a hand-off, per arm, with paired bootstrap CIs over scenarios.

    python bench/bench_p9.py [--split dev|test|all | --scenarios DIR ...] [--json] [--dump DIR]

`--split` reads the independent scenarios (`bench/p9/independent/{dev,test}`, written without
sight of carryd): `dev` prints the per-scenario table; `test` and `all` (held-out data) print
aggregate figures only — no per-scenario row, note, fact or problem detail — and refuse
`--dump`, `--only` and `--json`.

Scenarios and facts: `bench/p9/FORMAT.md` (the definitions of every metric live there too).
Arms, per scenario (a temp copy of its `root/`):

  ① flat    `carryd.carry.flat.build_flat_carry` — plan 3,000 / ledger 8,000 / total 18,000,
            the discipline of the default settings (what carryd's own fallback injects)
  ①s flat@  the same flat truncation with its total cut to `hooks.inline_chars` (9,000): what
            ④ must beat, like with like
  ② full    the whole ledger, plan and every other `.md` note of the root, concatenated
  ③ carry   `carryd index --root R`, then `carryd carry --root R --workspace W --print`
  ④ inline  the SessionStart hook's `additionalContext`
            (`carryd hook claude-code session-start --root R`, cwd = R/W, source "clear"),
            after `carryd carry --root R --workspace W` wrote the carry files the way the
            daemon would have

carryd runs as `sys.executable -m carryd.daemon.cli`, so running this file with another
worktree's venv python measures that worktree's code; nothing is imported by path except the
test-model builder, taken from the tests/ folder beside the `carryd` package being measured.
`CARRYD_MODEL_PATH` = the offline test model; `CARRYD_CONFIG` = an empty file (defaults, no user
config); `CARRYD_ROOT` and the hook bypass variable are removed from the environment.

Tokens are counted with the test model's `tokenizer.json` (BERT WordPiece, all-MiniLM-L6-v2)
through the `tokenizers` package: not a host LLM's tokenizer, so compare arms, not absolutes.
The temp directory's random prefix is replaced by a fixed string before anything is measured,
so absolute paths a carry names do not make counts vary from run to run.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_SCENARIOS = HERE / "p9" / "scenarios"
INDEPENDENT = HERE / "p9" / "independent"
SPLITS = {"dev": ("dev",), "test": ("test",), "all": ("dev", "test")}
KINDS = (
    "goal",
    "next_step",
    "current_edit",
    "failed_reason",
    "decision",
    "command",
    "id_ref",
    "user_rule",
    "status_number",
)
ARMS = ("flat", "flat_s", "full", "carry", "inline")
ARM_LABEL = {
    "flat": "① flat",
    "flat_s": "①s flat@",
    "full": "② full",
    "carry": "③ carry",
    "inline": "④ inline",
}
CONTRASTS = (("carry", "flat"), ("inline", "flat_s"), ("carry", "full"))
METRICS = ("coverage", "dead_end", "drilldown", "lost", "chars", "injected_tokens", "total_tokens")
CANONICAL_TMP = "/tmp/carryd-p9"
COMMAND_TIMEOUT = 600
FLAT_PLAN, FLAT_LEDGER, FLAT_TOTAL = 3_000, 8_000, 18_000

# A line-range pointer: a root-relative (or absolute) path with an extension, ':' and spans.
POINTER_RE = re.compile(
    r"(?P<path>/?(?:[\w.\-]+/)*[\w.\-]+\.[A-Za-z0-9]+):(?P<spans>\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)"
)
# A cut names lines of the file its section's heading names: "… not shown: L12-30", "(L7-9)".
LINE_POINTER_RE = re.compile(r"(?:… not shown: |\()L(?P<spans>\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*)")
SECTION_PATH_RE = re.compile(r"^#+ .*\(`(?P<path>[^`]+)`\)\s*$")
MEM_RE = re.compile(r"\bmem_[0-9a-f]{32}\b")


# --- scenarios and facts --------------------------------------------------------------------------


def norm(text: str) -> str:
    """FORMAT.md's normalisation: NFKC, casefold, no backticks, whitespace runs → one space."""
    text = unicodedata.normalize("NFKC", text).casefold().replace("`", "")
    return re.sub(r"\s+", " ", text).strip()


@dataclass(frozen=True)
class Fact:
    id: str
    scenario: str
    kind: str
    phrases: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Scenario:
    id: str
    folder: Path
    workspace: str
    language: str
    description: str
    facts: tuple[Fact, ...]
    sidecar: bool


def load_scenarios(folders: list[Path]) -> tuple[list[Scenario], list[str]]:
    """Given scenario folders' parents, return the valid scenarios and the problems found."""
    scenarios: list[Scenario] = []
    problems: list[str] = []
    seen_facts: set[str] = set()
    for parent in folders:
        if not parent.is_dir():
            problems.append(f"{parent}: not a folder")
            continue
        for folder in sorted(p for p in parent.iterdir() if (p / "scenario.json").is_file()):
            scenario, trouble = _load_one(folder, seen_facts)
            problems.extend(trouble)
            if scenario is not None:
                scenarios.append(scenario)
    ids = [s.id for s in scenarios]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"scenario id {dup!r} appears more than once")
    return scenarios, problems


PROBLEM_KINDS = (
    ("duplicate fact id", "missing or duplicate id"),
    ("phrase not in its source", "phrase(s) not in"),
    ("unknown kind", "unknown kind"),
    ("bad JSON", "not JSON"),
    ("bad phrases", "phrases must be"),
    ("bad source", "is not a file of root/"),
    ("scenario without a valid fact", "no valid facts"),
)


def problem_kinds(problems: list[str]) -> dict[str, int]:
    """Given scenario problems, return how many there are of each kind (no content: what a
    held-out split may show)."""
    counts: dict[str, int] = {}
    for problem in problems:
        kind = next((name for name, cue in PROBLEM_KINDS if cue in problem), "other")
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def _load_one(folder: Path, seen_facts: set[str]) -> tuple[Scenario | None, list[str]]:
    problems: list[str] = []
    try:
        meta = json.loads((folder / "scenario.json").read_text("utf-8"))
    except (OSError, ValueError) as error:
        return None, [f"{folder}/scenario.json: {error}"]
    sid, workspace = meta.get("id"), meta.get("workspace")
    root = folder / "root"
    if not isinstance(sid, str) or not isinstance(workspace, str):
        return None, [f"{folder}/scenario.json: needs string 'id' and 'workspace'"]
    if not (root / workspace).is_dir():
        return None, [f"{sid}: no workspace folder root/{workspace}"]
    if (root / ".carryd").exists():
        problems.append(f"{sid}: root/.carryd must not be part of a scenario")
    facts: list[Fact] = []
    try:
        lines = (folder / "facts.jsonl").read_text("utf-8").splitlines()
    except OSError as error:
        return None, [f"{sid}: facts.jsonl: {error}"]
    texts: dict[str, str] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{sid}/facts.jsonl:{number}"
        try:
            raw = json.loads(line)
        except ValueError as error:
            problems.append(f"{where}: not JSON ({error})")
            continue
        phrases = raw.get("phrases")
        fid, kind, source = raw.get("id"), raw.get("kind"), raw.get("source")
        if not isinstance(fid, str) or fid in seen_facts:
            problems.append(f"{where}: missing or duplicate id {fid!r}")
            continue
        if kind not in KINDS:
            problems.append(f"{where}: unknown kind {kind!r}")
            continue
        if raw.get("scenario") != sid:
            problems.append(f"{where}: scenario {raw.get('scenario')!r} is not {sid!r}")
            continue
        if (
            not isinstance(phrases, list)
            or not phrases
            or not all(isinstance(p, str) and norm(p) for p in phrases)
        ):
            problems.append(f"{where}: phrases must be a non-empty list of strings")
            continue
        if not isinstance(source, str) or not (root / source).is_file():
            problems.append(f"{where}: source {source!r} is not a file of root/")
            continue
        if source not in texts:
            texts[source] = norm((root / source).read_text("utf-8"))
        missing = [p for p in phrases if norm(p) not in texts[source]]
        if missing:
            problems.append(f"{where}: phrase(s) not in {source}: {missing}")
            continue
        seen_facts.add(fid)
        facts.append(Fact(fid, sid, kind, tuple(phrases), source))
    if not facts:
        return None, [*problems, f"{sid}: no valid facts"]
    scenario = Scenario(
        sid,
        folder,
        workspace,
        str(meta.get("language", "")),
        str(meta.get("description", "")),
        tuple(facts),
        (root / workspace / "handoff" / "sidecar.json").is_file(),
    )
    return scenario, problems


# --- the test model and its tokenizer -------------------------------------------------------------


def carryd_repo() -> Path:
    """The checkout whose `carryd` this interpreter imports (carry/ sits at its top level)."""
    import carryd.carry

    return Path(carryd.carry.__file__).resolve().parent.parent


def build_model(cache: Path) -> Path:
    """Build the offline test model with the measured checkout's tests/testmodel.py."""
    spec = importlib.util.spec_from_file_location(
        "_p9_testmodel", carryd_repo() / "tests" / "testmodel.py"
    )
    if spec is None or spec.loader is None:
        raise SystemExit(f"no tests/testmodel.py in {carryd_repo()}")
    module = importlib.util.module_from_spec(spec)
    # The model packages print a banner on import: keep stdout for the table / JSON.
    with contextlib.redirect_stdout(sys.stderr):
        spec.loader.exec_module(module)
        return Path(module.build_test_model(cache))


class TokenCounter:
    def __init__(self, model: Path) -> None:
        from tokenizers import Tokenizer

        self._tok = Tokenizer.from_file(str(model / "tokenizer.json"))
        self._tok.no_truncation()
        self._tok.no_padding()
        self.name = f"{model.name}/tokenizer.json (all-MiniLM-L6-v2 WordPiece, tokenizers)"

    def __call__(self, text: str) -> int:
        if not text:
            return 0
        return len(self._tok.encode(text, add_special_tokens=False).ids)


# --- running carryd -------------------------------------------------------------------------------


@dataclass
class Run:
    """One scenario's arms: texts, plus what carryd said on the way."""

    texts: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0


def tail(text: str, limit: int = 300) -> str:
    return text.strip()[-limit:]


def carryd_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "carryd.daemon.cli", *args]


def carryd_env(model: Path, config: Path) -> dict[str, str]:
    """The environment carryd runs in: no CARRYD_* of the caller's, the test model, no config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CARRYD_")}
    env.update({"CARRYD_MODEL_PATH": str(model), "CARRYD_CONFIG": str(config)})
    return env


def run_carryd(
    args: list[str], env: dict[str, str], *, stdin: str | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        carryd_cmd(*args),
        env=env,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        cwd=cwd,
        check=False,
    )


def build_arms(scenario: Scenario, work: Path, model: Path) -> Run:
    """Given a scenario and a private temp folder, return its four arms' texts."""
    started = time.perf_counter()
    run = Run()
    root = work / scenario.id / "root"
    shutil.copytree(scenario.folder / "root", root)
    config = work / "config.toml"
    config.write_text("# empty: carryd's defaults\n", "utf-8")
    env = carryd_env(model, config)
    w, r = scenario.workspace, str(root)

    run.texts["flat"] = flat_text(root, w, config)
    run.texts["flat_s"] = flat_text(root, w, config, inline=True)
    run.texts["full"] = full_text(root, w)

    index = run_carryd(["index", "--root", r, "--json"], env)
    if index.returncode != 0:
        run.notes.append(f"index exit {index.returncode}: {index.stderr.strip()[-300:]}")
    else:
        try:
            degraded = json.loads(index.stdout).get("degraded")
        except ValueError:
            degraded = "unparsable index output"
        if degraded:
            run.notes.append(f"index degraded: {degraded}")
    written = run_carryd(["carry", "--root", r, "--workspace", w], env)
    if written.returncode != 0:
        run.notes.append(f"carry (write) exit {written.returncode}: {tail(written.stderr)}")
    manifest = root / ".carryd" / "carry" / f"{w}.json"
    try:
        data = json.loads(manifest.read_text("utf-8"))
        if data.get("fallback"):
            run.notes.append(f"manifest: fallback: {data.get('reason')}")
    except (OSError, ValueError):
        run.notes.append("no carry manifest")

    printed = run_carryd(["carry", "--root", r, "--workspace", w, "--print"], env)
    run.texts["carry"] = printed.stdout
    if printed.returncode != 0 or printed.stderr.strip():
        run.notes.append(f"carry --print exit {printed.returncode}: {tail(printed.stderr)}")

    hook_input = json.dumps(
        {
            "session_id": "p9-bench",
            "hook_event_name": "SessionStart",
            "source": "clear",
            "cwd": str(root / w),
        }
    )
    hook = run_carryd(
        ["hook", "claude-code", "session-start", "--root", r], env, stdin=hook_input, cwd=root / w
    )
    inline = ""
    try:
        answer = json.loads(hook.stdout or "{}")
        inline = answer.get("hookSpecificOutput", {}).get("additionalContext", "") or ""
    except ValueError:
        run.notes.append(f"hook: not JSON: {hook.stdout[:200]!r}")
    if not inline:
        run.notes.append(f"hook: empty answer (exit {hook.returncode}) {tail(hook.stderr)}")
    run.texts["inline"] = inline

    prefix = str(work)
    for arm, text in run.texts.items():
        run.texts[arm] = text.replace(prefix, CANONICAL_TMP)
    run.seconds = time.perf_counter() - started
    return run


def flat_text(root: Path, workspace: str, config: Path, *, inline: bool = False) -> str:
    """Arm ① (with `inline`, ①s: its total cut to `hooks.inline_chars`): the flat fixed
    truncation, built by the function carryd's fallback uses."""
    from carryd.carry.flat import FlatInputs, build_flat_carry
    from carryd.daemon.config import load_settings

    settings = load_settings(config, root=root)
    plan_rel = f"{workspace}/{settings.carry.plan_file}"
    ledger_rel = f"{workspace}/{settings.carry.ledger_file}"

    def read(rel: str) -> str | None:
        try:
            return (root / rel).read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    inputs = FlatInputs(
        workspace=workspace,
        discipline=settings.carry.discipline,
        plan_text=read(plan_rel),
        ledger_text=read(ledger_rel),
        plan_path=plan_rel,
        ledger_path=ledger_rel,
    )
    total = settings.hooks.inline_chars if inline else FLAT_TOTAL
    plan = build_flat_carry(
        inputs, total_chars=total, plan_chars=FLAT_PLAN, ledger_chars=FLAT_LEDGER
    )
    return plan.text


def full_text(root: Path, workspace: str) -> str:
    """Arm ②: ledger, plan, then every other Markdown note of the root (sorted), whole."""
    first = [root / workspace / "handoff" / "LEDGER.md", root / workspace / "PLAN.md"]
    rest = sorted(
        p
        for p in root.rglob("*.md")
        if p not in first and ".carryd" not in p.relative_to(root).parts
    )
    parts = []
    for path in [*first, *rest]:
        if path.is_file():
            rel = path.relative_to(root).as_posix()
            parts.append(f"# {rel}\n\n{path.read_text('utf-8')}")
    return "\n\n".join(parts)


# --- pointers and metrics -------------------------------------------------------------------------


@dataclass(frozen=True)
class Pointer:
    label: str  # "path:spans" or "mem_…"
    text: str  # what expanding it gives (normalised separately)
    tokens: int


def line_pointers(text: str, root: Path, work: Path, count: TokenCounter) -> list[Pointer]:
    found: dict[str, Pointer] = {}
    matches = [(m.group("path"), m.group("spans")) for m in POINTER_RE.finditer(text)]
    section = ""
    for line in text.split("\n"):
        heading = SECTION_PATH_RE.match(line)
        if heading is not None:
            section = heading.group("path")
        elif section:
            matches.extend((section, m.group("spans")) for m in LINE_POINTER_RE.finditer(line))
    for raw_path, spans in matches:
        path = raw_path
        if path.startswith(CANONICAL_TMP + "/"):
            path = str(work) + path[len(CANONICAL_TMP) :]
        candidate = Path(path)
        if candidate.is_absolute():
            try:
                rel = candidate.resolve().relative_to(root.resolve()).as_posix()
            except ValueError:
                continue
        else:
            rel = path.lstrip("/")
        file = root / rel
        if not file.is_file():
            continue
        lines = file.read_text("utf-8").split("\n")
        picked: list[str] = []
        for span in spans.split(","):
            start, _, end = span.partition("-")
            a, b = int(start), int(end or start)
            picked.extend(lines[max(0, a - 1) : b])
        label = f"{rel}:{spans}"
        if label not in found and picked:
            body = "\n".join(picked)
            found[label] = Pointer(label, body, count(body))
    return list(found.values())


def mem_pointers(
    ids: set[str], root: Path, env: dict[str, str], count: TokenCounter
) -> tuple[dict[str, Pointer], str | None]:
    if not ids:
        return {}, None
    answer = run_carryd(["expand", *sorted(ids), "--root", str(root), "--json"], env)
    try:
        data = json.loads(answer.stdout)
    except ValueError:
        return {}, f"expand: not JSON (exit {answer.returncode}): {answer.stderr.strip()[-200:]}"
    out = {}
    for entry in data.get("entries", []):
        text = entry.get("text", "")
        out[entry["id"]] = Pointer(entry["id"], text, count(text))
    missing = data.get("missing") or []
    return out, (f"expand: {len(missing)} id(s) missing" if missing else None)


def measure(
    scenario: Scenario,
    text: str,
    pointers: list[Pointer],
    count: TokenCounter,
) -> dict[str, Any]:
    normal = norm(text)
    expansions = [(p, norm(p.text)) for p in pointers]
    present, drill, lost = [], [], []
    chosen: dict[str, Pointer] = {}
    for fact in scenario.facts:
        phrases = [norm(p) for p in fact.phrases]
        if all(p in normal for p in phrases):
            present.append(fact.id)
            continue
        covering = [
            p for p, body in expansions if all(ph in normal or ph in body for ph in phrases)
        ]
        if covering:
            best = min(covering, key=lambda p: (p.tokens, p.label))
            chosen[best.label] = best
            drill.append(fact.id)
        else:
            lost.append(fact.id)
    failed = [f.id for f in scenario.facts if f.kind == "failed_reason"]
    n = len(scenario.facts)
    injected = count(text)
    return {
        "coverage": len(present) / n,
        "dead_end": (sum(1 for f in failed if f in present) / len(failed)) if failed else None,
        "drilldown": len(drill) / n,
        "lost": len(lost) / n,
        "chars": len(text),
        "injected_tokens": injected,
        "total_tokens": injected + sum(p.tokens for p in chosen.values()),
        "expands": sorted(chosen),
        "facts_present": present,
        "facts_drilldown": drill,
        "facts_lost": lost,
    }


# --- bootstrap ------------------------------------------------------------------------------------


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


def paired_bootstrap(
    diffs: list[float], *, b: int, seed: int
) -> tuple[float, float, float]:
    """Given per-scenario paired differences, return (mean, 2.5th, 97.5th percentile)."""
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(mean([diffs[rng.randrange(n)] for _ in range(n)]) for _ in range(b))
    lo = means[int(0.025 * (b - 1))]
    hi = means[int(round(0.975 * (b - 1)))]
    return mean(diffs), lo, hi


# --- output ---------------------------------------------------------------------------------------


def pct(value: float | None) -> str:
    return "  –  " if value is None else f"{100 * value:5.1f}%"


def table(result: dict[str, Any]) -> str:
    out: list[str] = []
    head = (
        f"| {'scenario':<24} | {'arm':<9} | {'cover':>6} | {'dead-end':>8} | {'drill':>6} | "
        f"{'lost':>6} | {'chars':>7} | {'inj tok':>7} | {'total tok':>9} |"
    )
    out.append(head)
    out.append("|" + "|".join("-" * (len(c)) for c in head.split("|")[1:-1]) + "|")
    rows = [(s["id"], s["arms"]) for s in result["scenarios"]]
    rows.append(("overall (mean)", result["overall"]))
    for sid, arms in rows:
        for arm in ARMS:
            m = arms[arm]
            out.append(
                f"| {sid:<24} | {ARM_LABEL[arm]:<9} | {pct(m['coverage']):>6} | "
                f"{pct(m['dead_end']):>8} | {pct(m['drilldown']):>6} | {pct(m['lost']):>6} | "
                f"{m['chars']:>7.0f} | {m['injected_tokens']:>7.0f} | {m['total_tokens']:>9.0f} |"
            )
    out.append("")
    out.append(
        f"Paired bootstrap over {len(result['scenarios'])} scenarios, "
        f"B = {result['bootstrap']['b']}, seed {result['bootstrap']['seed']}: "
        "mean difference [95% CI]"
    )
    out.append(f"| {'metric':<16} | " + " | ".join(f"{c:<26}" for c in result["contrasts"]) + " |")
    out.append("|" + "-" * 18 + "|" + "|".join("-" * 28 for _ in result["contrasts"]) + "|")
    for metric in METRICS:
        cells = []
        for contrast in result["contrasts"]:
            ci = result["contrasts"][contrast].get(metric)
            if ci is None:
                cells.append(f"{'–':<26}")
            elif metric in ("chars", "injected_tokens", "total_tokens"):
                cells.append(f"{ci['mean']:+8.0f} [{ci['lo']:+7.0f}, {ci['hi']:+7.0f}]".ljust(26))
            else:
                cells.append(
                    f"{100 * ci['mean']:+6.1f} pp [{100 * ci['lo']:+6.1f}, {100 * ci['hi']:+6.1f}]"
                    .ljust(26)
                )
        out.append(f"| {metric:<16} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def summarise(
    scenarios: list[Scenario], measured: dict[str, dict[str, dict[str, Any]]], b: int, seed: int
) -> tuple[dict[str, Any], dict[str, Any]]:
    overall: dict[str, Any] = {}
    for arm in ARMS:
        overall[arm] = {}
        for metric in METRICS:
            values = [measured[s.id][arm][metric] for s in scenarios]
            values = [v for v in values if v is not None]
            overall[arm][metric] = mean(values) if values else None
    contrasts: dict[str, Any] = {}
    for index, (a, base) in enumerate(CONTRASTS):
        name = f"{ARM_LABEL[a].split()[0]}−{ARM_LABEL[base].split()[0]} ({a}−{base})"
        contrasts[name] = {}
        for m_index, metric in enumerate(METRICS):
            pairs = [(measured[s.id][a][metric], measured[s.id][base][metric]) for s in scenarios]
            diffs = [x - y for x, y in pairs if x is not None and y is not None]
            if not diffs:
                contrasts[name][metric] = None
                continue
            avg, lo, hi = paired_bootstrap(diffs, b=b, seed=seed + 101 * index + m_index)
            contrasts[name][metric] = {"mean": avg, "lo": lo, "hi": hi, "n": len(diffs)}
    return overall, contrasts


def done_when(result: dict[str, Any]) -> dict[str, Any]:
    """Issue 20's bars: ③ coverage ≥ 95% and ④ ≥ 90%; in every scenario ③ keeps at least ①'s
    facts and ④ at least ①s'; dead-end inheritance in ③ 100%; ③'s chars ≤ ①'s + 10%."""
    overall = result["overall"]
    carry, flat, inline = overall["carry"], overall["flat"], overall["inline"]
    rows = [s["arms"] for s in result["scenarios"]]
    return {
        "carry_coverage_ge_95": carry["coverage"] >= 0.95,
        "inline_coverage_ge_90": inline["coverage"] >= 0.90,
        "carry_ge_flat_every_scenario": all(
            r["carry"]["coverage"] >= r["flat"]["coverage"] for r in rows
        ),
        "inline_ge_flat_s_every_scenario": all(
            r["inline"]["coverage"] >= r["flat_s"]["coverage"] for r in rows
        ),
        "dead_end_100": carry["dead_end"] is not None and carry["dead_end"] >= 1.0,
        "chars_le_flat_plus_10pct": carry["chars"] <= 1.10 * flat["chars"],
    }


def per_scenario_table(result: dict[str, Any]) -> str:
    """Facts kept per scenario, like with like: ③ vs ①, ④ vs ①s (dev only)."""
    out = [
        f"| {'scenario':<32} | facts | ① flat | ③ carry | ①s flat@ | ④ inline |",
        "|" + "-" * 34 + "|-------|--------|---------|----------|----------|",
    ]
    for s in result["scenarios"]:
        n = s["facts"]
        got = {a: round(s["arms"][a]["coverage"] * n) for a in ARMS}
        out.append(
            f"| {s['id']:<32} | {n:>5} | {got['flat']:>6} | {got['carry']:>7} | "
            f"{got['flat_s']:>8} | {got['inline']:>8} |"
        )
    return "\n".join(out)


def aggregate_lines(result: dict[str, Any], split: str) -> list[str]:
    """The held-out output: one line per arm (means over scenarios) and the bars."""
    lines = []
    for arm in ARMS:
        m = result["overall"][arm]
        lines.append(
            f"{split}: {ARM_LABEL[arm]:<9} coverage {pct(m['coverage'])} dead-end "
            f"{pct(m['dead_end'])} chars {m['chars']:.0f}"
        )
    rows = [s["arms"] for s in result["scenarios"]]
    wins3 = sum(r["carry"]["coverage"] >= r["flat"]["coverage"] for r in rows)
    wins4 = sum(r["inline"]["coverage"] >= r["flat_s"]["coverage"] for r in rows)
    lines.append(
        f"{split}: {len(rows)} scenarios; ③ ≥ ① in {wins3}, ④ ≥ ①s in {wins4}; fallbacks or "
        f"notes in {sum(1 for s in result['scenarios'] if s['notes'])}"
    )
    bars = ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in result["done_when"].items())
    lines.append(f"{split}: issue 20 bars: {bars}")
    return lines


def kind_table(result: dict[str, Any]) -> str:
    out = [
        "Facts present in full (+ reachable by drill-down) by kind, pooled over scenarios:",
        f"| {'kind':<14} | {'facts':>5} | "
        + " | ".join(f"{ARM_LABEL[a]:<13}" for a in ARMS)
        + " |",
        "|" + "-" * 16 + "|" + "-" * 7 + "|" + "|".join("-" * 15 for _ in ARMS) + "|",
    ]
    for kind in KINDS:
        cells = []
        total = 0
        for arm in ARMS:
            cell = result["by_kind"][arm].get(kind)
            if cell is None:
                cells.append(f"{'–':<13}")
                continue
            total = cell["facts"]
            cells.append(f"{cell['present']:>3} (+{cell['drilldown']:>2})".ljust(13))
        if total:
            out.append(f"| {kind:<14} | {total:>5} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scenarios",
        action="append",
        type=Path,
        help=f"a folder of scenario folders (repeatable; default {DEFAULT_SCENARIOS})",
    )
    parser.add_argument("--json", action="store_true", help="print JSON instead of the table")
    parser.add_argument("--dump", type=Path, help="write every arm's text to this folder")
    parser.add_argument("--bootstrap", type=int, default=2000, help="resamples (default 2000)")
    parser.add_argument("--seed", type=int, default=20261130, help="bootstrap seed")
    parser.add_argument("--model-cache", type=Path, help="where to build the test model")
    parser.add_argument("--only", action="append", help="run only this scenario id (repeatable)")
    parser.add_argument(
        "--split",
        choices=sorted(SPLITS),
        help="the independent scenarios: dev (per-scenario table) or test/all (aggregates only)",
    )
    args = parser.parse_args(argv)
    held_out = args.split in ("test", "all")
    if held_out and (args.dump or args.only or args.json or args.scenarios):
        parser.error("--split test/all prints aggregates only: no --dump/--only/--json/--scenarios")

    folders = args.scenarios or [DEFAULT_SCENARIOS]
    if args.split:
        folders = [INDEPENDENT / part for part in SPLITS[args.split]]
    scenarios, problems = load_scenarios(folders)
    if args.only:
        scenarios = [s for s in scenarios if s.id in args.only]
    if held_out and problems:
        kinds = ", ".join(f"{count} {kind}" for kind, count in problem_kinds(problems).items())
        print(
            f"bench_p9: {len(problems)} problem(s) in the scenarios (held-out: only their kinds "
            f"are shown: {kinds})",
            file=sys.stderr,
        )
        return 2
    for problem in problems:
        print(f"bench_p9: {problem}", file=sys.stderr)
    if problems:
        print("bench_p9: fix the scenarios above first (FORMAT.md)", file=sys.stderr)
        return 2
    if not scenarios:
        print("bench_p9: no scenarios", file=sys.stderr)
        return 2

    cache = args.model_cache or Path(tempfile.gettempdir()) / f"carryd-p9-model-{os.getuid()}"
    model = build_model(cache)
    count = TokenCounter(model)
    measured: dict[str, dict[str, dict[str, Any]]] = {}
    per_scenario: list[dict[str, Any]] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="carryd-p9-") as tmp:
        work = Path(tmp)
        for scenario in scenarios:
            if not held_out:
                print(f"bench_p9: {scenario.id} …", file=sys.stderr, flush=True)
            run = build_arms(scenario, work, model)
            root = work / scenario.id / "root"
            env = carryd_env(model, work / "config.toml")
            ids = set()
            for arm in ("flat", "flat_s", "carry", "inline"):
                ids |= set(MEM_RE.findall(run.texts[arm]))
            mems, trouble = mem_pointers(ids, root, env, count)
            if trouble:
                run.notes.append(trouble)
            measured[scenario.id] = {}
            for arm in ARMS:
                text = run.texts[arm]
                pointers: list[Pointer] = []
                if arm != "full":
                    pointers = line_pointers(text, root, work, count)
                    pointers += [mems[i] for i in sorted(set(MEM_RE.findall(text))) if i in mems]
                measured[scenario.id][arm] = measure(scenario, text, pointers, count)
                if args.dump:
                    target = args.dump / scenario.id / f"{arm}.md"
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_text(text, "utf-8")
            per_scenario.append(
                {
                    "id": scenario.id,
                    "workspace": scenario.workspace,
                    "language": scenario.language,
                    "sidecar": scenario.sidecar,
                    "facts": len(scenario.facts),
                    "failed_reason_facts": sum(f.kind == "failed_reason" for f in scenario.facts),
                    "notes": run.notes,
                    "seconds": round(run.seconds, 1),
                    "arms": measured[scenario.id],
                }
            )
            for note in [] if held_out else run.notes:
                print(f"bench_p9:   {scenario.id}: {note}", file=sys.stderr)
    overall, contrasts = summarise(scenarios, measured, args.bootstrap, args.seed)
    kinds: dict[str, dict[str, list[int]]] = {arm: {} for arm in ARMS}
    for scenario in scenarios:
        for fact in scenario.facts:
            for arm in ARMS:
                cell = kinds[arm].setdefault(fact.kind, [0, 0, 0])
                cell[2] += 1
                if fact.id in measured[scenario.id][arm]["facts_present"]:
                    cell[0] += 1
                elif fact.id in measured[scenario.id][arm]["facts_drilldown"]:
                    cell[1] += 1
    result = {
        "carryd": str(carryd_repo()),
        "python": sys.executable,
        "tokenizer": count.name,
        "bootstrap": {"b": args.bootstrap, "seed": args.seed, "resampling": "scenarios"},
        "seconds": round(time.perf_counter() - started, 1),
        "scenarios": per_scenario,
        "overall": overall,
        "contrasts": contrasts,
        "by_kind": {
            arm: {k: dict(zip(("present", "drilldown", "facts"), v, strict=True))
                  for k, v in sorted(kinds[arm].items())}
            for arm in ARMS
        },
    }
    result["done_when"] = done_when(result)
    if held_out:
        print(f"carryd from {result['carryd']}; split {args.split} (held-out: aggregates only)")
        for line in aggregate_lines(result, args.split):
            print(line)
    elif args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print(f"carryd from {result['carryd']}; tokens: {result['tokenizer']}")
        print(table(result))
        print()
        print(kind_table(result))
        print()
        bars = ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in result["done_when"].items())
        print(f"Issue 20 bars: {bars}")
        print()
        print(per_scenario_table(result))
        for line in aggregate_lines(result, args.split or "scenarios"):
            print(line)
        print(f"\n{len(scenarios)} scenarios, {sum(len(s.facts) for s in scenarios)} facts, "
              f"{result['seconds']} s")
        for s in per_scenario:
            for note in s["notes"]:
                print(f"note: {s['id']}: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
