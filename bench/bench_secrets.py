"""Score carryd's redaction on the independent secrets corpus (`tests/secrets_independent/`).

    python bench/bench_secrets.py --split dev     # per-case detail, then the summary line
    python bench/bench_secrets.py --split dev2    # the second author's dev corpus, the same way
    python bench/bench_secrets.py --split test    # the held-out split: one summary line only

A case is caught when no run of 8 characters of any of its secret values survives
`carryd.index.redact.redact` (compared case-insensitively, the check `tests/secret_corpus.py`
holds every channel to). An ordinary text is a false positive when redaction changes it at all.
The held-out split is imported as a module and scored; none of its text is printed.

A key block listed whole (its `-----BEGIN …-----` and `-----END …-----` lines, as corpus_dev2
lists PEM and PGP blocks) is scored by its body: each line between the armour lines (split at real
newlines and at the `\\n` escapes of a JSON string) must be gone. The armour lines name the kind
of key and are no secret; a redaction that keeps them and drops the body is caught, one that keeps
any 8 characters of the body is not.
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


SPLITS = ("dev", "dev2", "test")
_DETAILED = ("dev", "dev2")


def scored_pieces(secret: str) -> tuple[str, ...]:
    """Given one listed secret value, return the pieces of it that must not survive: the value
    itself, or for a whole key block the body lines between its armour lines."""
    if not secret.lstrip().startswith("-----BEGIN "):
        return (secret,)
    lines = secret.replace("\\n", "\n").split("\n")
    body = tuple(
        line.strip() for line in lines if line.strip() and not line.strip().startswith("-----")
    )
    return body or (secret,)


def left_secrets(secrets: tuple[str, ...], redacted: str) -> list[str]:
    """Given a case's secrets and its redacted text, return those of which a piece survived."""
    return [
        secret
        for secret in secrets
        if any(leaks(piece, redacted) for piece in scored_pieces(secret))
    ]


def score(split: str) -> Score:
    """Given a split name (dev, dev2 or test), return its score under carryd's redaction."""
    module = importlib.import_module(f"tests.secrets_independent.corpus_{split}")
    missed = tuple(
        case.id for case in module.CASES if left_secrets(case.secrets, redact(case.text))
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


def _detail(split: str) -> None:
    """Print, for a dev split only, each missed case's text as redacted and each changed
    ordinary text."""
    assert split in _DETAILED, "the held-out split is never printed"
    module = importlib.import_module(f"tests.secrets_independent.corpus_{split}")
    for case in module.CASES:
        redacted = redact(case.text)
        left = left_secrets(case.secrets, redacted)
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
    parser.add_argument("--split", choices=SPLITS, required=True)
    arguments = parser.parse_args(argv)
    if arguments.split in _DETAILED:
        _detail(arguments.split)
    print(score(arguments.split).summary(arguments.split))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
