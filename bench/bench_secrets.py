"""Score carryd's redaction on the independent secrets corpus (`tests/secrets_independent/`).

    python bench/bench_secrets.py --split dev     # per-case detail, then the summary line
    python bench/bench_secrets.py --split test    # the held-out split: one summary line only

A case is caught when no run of 8 characters of any of its secret values survives
`carryd.index.redact.redact` (compared case-insensitively, the check `tests/secret_corpus.py`
holds every channel to). An ordinary text is a false positive when redaction changes it at all.
The held-out split is imported as a module and scored; none of its text is printed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from carryd.index.redact import redact  # noqa: E402

from tests.secret_corpus import leaks  # noqa: E402


@dataclass(frozen=True)
class Score:
    """The outcome of one split: caught cases, cases, false positives, ordinary texts, and the
    ids of the missed cases and of the false positives."""

    caught: int
    total: int
    false_positives: int
    ordinary: int
    missed: tuple[str, ...]
    changed: tuple[str, ...]

    def summary(self, split: str) -> str:
        share = 100 * self.caught / self.total if self.total else 0.0
        return (
            f"{split}: caught {self.caught}/{self.total} ({share:.1f}%), "
            f"false positives {self.false_positives}/{self.ordinary} ordinary"
        )


def score(split: str) -> Score:
    """Given a split name (dev or test), return its score under carryd's redaction."""
    module = importlib.import_module(f"tests.secrets_independent.corpus_{split}")
    missed = tuple(
        case.id
        for case in module.CASES
        if any(leaks(secret, redact(case.text)) for secret in case.secrets)
    )
    changed = tuple(name for name, text in module.ORDINARY if redact(text) != text)
    return Score(
        len(module.CASES) - len(missed),
        len(module.CASES),
        len(changed),
        len(module.ORDINARY),
        missed,
        changed,
    )


def _detail() -> None:
    """Print, for the dev split only, each missed case's text as redacted and each changed
    ordinary text."""
    module = importlib.import_module("tests.secrets_independent.corpus_dev")
    for case in module.CASES:
        redacted = redact(case.text)
        left = [secret for secret in case.secrets if leaks(secret, redacted)]
        if left:
            print(f"MISSED {case.id} ({case.kind}): {len(left)} of {len(case.secrets)} left")
            print("    " + redacted.replace("\n", "\n    "))
    for name, text in module.ORDINARY:
        redacted = redact(text)
        if redacted != text:
            print(f"CHANGED ordinary {name}:")
            print("    " + redacted.replace("\n", "\n    "))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--split", choices=("dev", "test"), required=True)
    arguments = parser.parse_args(argv)
    if arguments.split == "dev":
        _detail()
    print(score(arguments.split).summary(arguments.split))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
