"""The development sets, their halves, the negative controls and the near misses."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent.parent
NEARMISS = REPO / "bench" / "recall_nearmiss"
# The independent near-miss roots: `dev` and `dev2` (two authors) are development roots, `test`
# is held out (one summary line). Those on disk, in this order.
INDEPENDENT = tuple(
    which for which in ("dev", "dev2", "test") if (NEARMISS / which / "queries.jsonl").is_file()
)
HELD_OUT = "test"

SETS = {
    "locomo": "negative_queries_locomo.jsonl",
    "cmrc-trial": "negative_queries_cmrc.jsonl",
}
# The fused rows: the config defaults, and other divisors (rank-space priority) for comparison:
# with nomination gated by the semantic floor the divisors move recall@5 by a point at most.
TOP = 10
ARM_DEPTH = 50


@dataclasses.dataclass(frozen=True)
class Span:
    path: str
    line_start: int
    line_end: int

    def overlaps(self, other: Span) -> bool:
        return (
            self.path == other.path
            and self.line_start <= other.line_end
            and other.line_start <= self.line_end
        )


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def metrics(ranked: Sequence[Span], gold: Sequence[Span]) -> tuple[float, float, float, float]:
    """Given a ranked list and the gold spans, return recall@1, @5, @10 and MRR@10."""

    def found(depth: int) -> float:
        top = ranked[:depth]
        return sum(any(g.overlaps(hit) for hit in top) for g in gold) / len(gold)

    reciprocal = next(
        (
            1.0 / position
            for position, hit in enumerate(ranked[:TOP], 1)
            if any(g.overlaps(hit) for g in gold)
        ),
        0.0,
    )
    return found(1), found(5), found(10), reciprocal


def fit_half(item: dict[str, Any]) -> int:
    """Given a query, return its half of the set (0: the half confidence constants may be
    fitted on, 1: held out from any fit): LoCoMo by conversation, CMRC by the gold entry's
    article."""
    key = item.get("workspace") or item["gold"][0]["path"]
    return int(hashlib.sha256(key.encode("utf-8")).hexdigest(), 16) % 2


def default_data() -> Path:
    """The shared development sets: beside the repository (/work/main) or, from a worktree
    (/work/wt/NAME), two levels up."""
    for base in (REPO.parent, REPO.parent.parent):
        if (base / "shared" / "data" / "dev").is_dir():
            return base / "shared" / "data" / "dev"
    return REPO.parent / "shared" / "data" / "dev"


def gold_of(item: dict[str, Any]) -> list[Span]:
    return [Span(g["path"], g["line_start"], g["line_end"]) for g in item["gold"]]


# --- where a set's files go, and its near misses -------------------------------------------


def article_workspace(path: str) -> str:
    """Given a CMRC article's path (relative to the set's root), return the workspace the bench
    puts it in: one of four, two per half (`fit_half`), so each question has a workspace of
    unrelated articles of its own half to be asked in as a near miss (fitting never reads the
    held-out half's articles)."""
    half = int(hashlib.sha256(path.encode("utf-8")).hexdigest(), 16) % 2
    part = int(hashlib.sha256(("part " + path).encode("utf-8")).hexdigest(), 16) % 2
    return f"articles-{half}{part}"


@dataclasses.dataclass(frozen=True)
class Layout:
    """How a set's memory root is copied: the path each file gets (CMRC's articles move into
    workspaces; LoCoMo keeps its own), the queries with their gold paths moved alike, and the
    near misses: each question asked in another workspace, (half, query, workspace)."""

    queries: list[dict[str, Any]]
    near_misses: list[dict[str, Any]]
    place: Callable[[str], str]


def layout(name: str, queries: list[dict[str, Any]], workspaces: Sequence[str]) -> Layout:
    """Given a set's name, its queries (as read) and its workspaces, return its layout.

    LoCoMo: every question asked in every other conversation's workspace (its people absent,
    its topic words not). CMRC (root-level articles): the articles go into `article_workspace`
    folders, the real questions are asked of the whole root as before, and each is also asked
    in the other workspace of its half: a workspace of unrelated articles."""
    if name.startswith("cmrc"):
        moved = []
        near = []
        for item in queries:
            path = item["gold"][0]["path"]
            own = article_workspace(path)
            gold = [
                {**g, "path": f"{article_workspace(g['path'])}/{g['path']}"} for g in item["gold"]
            ]
            moved.append({**item, "gold": gold, "half": fit_half(item)})
            other = own[:-1] + str(1 - int(own[-1]))
            near.append(
                {
                    "query": item["query"],
                    "workspace": other,
                    "half": fit_half(item),
                    "category": item.get("category"),
                }
            )
        return Layout(moved, near, lambda p: p if "/" in p else f"{article_workspace(p)}/{p}")
    real = [{**item, "half": fit_half(item)} for item in queries]
    near = [
        {
            "query": item["query"],
            "workspace": other,
            "half": item["half"],
            "category": item.get("category"),
        }
        for item in real
        for other in workspaces
        if item.get("workspace") is not None and other != item["workspace"]
    ]
    return Layout(real, near, lambda p: p)


def copy_root(source: Path, target: Path, place: Callable[[str], str]) -> None:
    """Copy a set's memory root, each file to `place(its relative path)`."""
    for path in sorted(source.rglob("*")):
        if path.is_file():
            destination = target / place(path.relative_to(source).as_posix())
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, destination)
