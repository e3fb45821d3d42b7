"""How many facts the carry keeps as its budget grows: the room issue 20's bars would need.

Builds the full carry (③) and the SessionStart text (④) of every scenario of a split in
process — the daemon's own `build_workspace_carry`, without recall (the recalled-memory
segment is empty on these scenarios: their notes are root-level rules or knowledge, which the
standing-rules segment carries) — at several budgets: ③ with the slack over flat injection
raised from carryd's 9.5% (`carryd.carry.render.COST_SLACK`, set here for the run only), ④
with `hooks.inline_chars` raised from 9,000. It prints, per budget, the share of facts present
in full and the mean characters. The test split prints the same aggregate lines only.

    .venv/bin/python bench/p9_headroom.py [--split dev|test]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import carryd.carry.render as render  # noqa: E402
from bench_p9 import INDEPENDENT, norm  # noqa: E402
from carryd.daemon.carries.carrying import build_workspace_carry  # noqa: E402
from carryd.daemon.carries.inline import compose_context  # noqa: E402
from carryd.daemon.config import load_settings  # noqa: E402

SLACKS = (0.095, 0.25, 0.5, 1.0)
INLINE = (9_000, 12_000, 15_000, 18_000)


class NoRecall:
    """A recall that finds nothing (the scenarios' recalled-memory segment is empty)."""

    def answer(self, query: str, **_: object) -> SimpleNamespace:
        return SimpleNamespace(hits=(), degraded=None)

    def close(self) -> None:
        pass


def facts_kept(folder: Path, text: str) -> tuple[int, int]:
    normalised = norm(text)
    kept = total = 0
    for line in (folder / "facts.jsonl").read_text("utf-8").splitlines():
        if line.strip():
            fact = json.loads(line)
            total += 1
            kept += all(norm(phrase) in normalised for phrase in fact["phrases"])
    return kept, total


def build(folder: Path, work: Path, inline_chars: int) -> tuple[str, str]:
    """Given a scenario, return its ③ and ④ texts with `hooks.inline_chars` set."""
    meta = json.loads((folder / "scenario.json").read_text("utf-8"))
    root = work / meta["id"] / "root"
    if not root.exists():
        shutil.copytree(folder / "root", root)
    config = work / "config.toml"
    config.write_text(f"[hooks]\ninline_chars = {inline_chars}\n", "utf-8")
    settings = load_settings(config, root=root, environ={})
    built = build_workspace_carry(settings, meta["workspace"], recaller=NoRecall())  # type: ignore[arg-type]
    inline = built.inline_text if built.inline_text is not None else built.text
    path = str(settings.carry_dir / f"{meta['workspace']}.md")
    return built.text, compose_context(inline, path)


def measure(folders: Sequence[Path], work: Path, inline_chars: int, arm: int) -> str:
    """Given the scenarios, return the coverage and mean characters of arm ③ (0) or ④ (1)."""
    kept = total = chars = 0
    for folder in folders:
        text = build(folder, work, inline_chars)[arm]
        k, t = facts_kept(folder, text)
        kept, total, chars = kept + k, total + t, chars + len(text)
    return f"coverage {100 * kept / total:5.1f}% chars {chars / len(folders):7.0f}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    args = parser.parse_args(argv)
    folders = sorted(
        p for p in (INDEPENDENT / args.split).iterdir() if (p / "scenario.json").is_file()
    )
    work = Path(tempfile.mkdtemp(prefix="carryd-headroom-"))
    try:
        for slack in SLACKS:
            render.COST_SLACK = slack
            print(f"{args.split}: ③ slack +{slack:.1%}: {measure(folders, work, INLINE[0], 0)}")
        render.COST_SLACK = SLACKS[0]
        for chars in INLINE:
            print(f"{args.split}: ④ inline_chars {chars:6d}: {measure(folders, work, chars, 1)}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
