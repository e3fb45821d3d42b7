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

A run of 8 characters of a secret that the text also holds outside every copy of the secret is
no evidence of a leak: `:rubygems_api_key: rubygems_<hex>` keeps `rubygems` in its name. The
summary gives the strict count beside it (every 8-character run counts, as
`tests/secret_corpus.py` checks), so figures stay comparable with earlier ones.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from carryd.index.redact import redact  # noqa: E402

from tests.secret_corpus import WINDOW, leaks  # noqa: E402


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
    strict_caught: int

    def summary(self, split: str) -> str:
        share = 100 * self.caught / self.total if self.total else 0.0
        return (
            f"{split}: caught {self.caught}/{self.total} ({share:.1f}%; strict "
            f"{self.strict_caught}), false positives {self.false_positives}/{self.ordinary} "
            "ordinary"
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


def _leaked(piece: str, redacted: str, elsewhere: str | None) -> bool:
    """Given a piece of a secret, the redacted text and the original text with the secret taken
    out (None: strict), return whether a run of the piece survived that is not also elsewhere."""
    if elsewhere is None or len(piece) <= WINDOW:
        found = leaks(piece, redacted)
        return found is not None and (elsewhere is None or found.lower() not in elsewhere)
    haystack, needle = redacted.lower(), piece.lower()
    return any(
        needle[start : start + WINDOW] in haystack
        and needle[start : start + WINDOW] not in elsewhere
        for start in range(len(needle) - WINDOW + 1)
    )


def left_secrets(secrets: tuple[str, ...], redacted: str, original: str | None = None) -> list[str]:
    """Given a case's secrets, its redacted text and (unless strict) its original text, return
    the secrets of which a piece survived."""
    left = []
    for secret in secrets:
        elsewhere = None
        if original is not None:
            elsewhere = original
            for other in secrets:
                elsewhere = elsewhere.replace(other, "\0")
            elsewhere = elsewhere.lower()
        if any(_leaked(piece, redacted, elsewhere) for piece in scored_pieces(secret)):
            left.append(secret)
    return left


def score(split: str) -> Score:
    """Given a split name (dev, dev2 or test), return its score under carryd's redaction."""
    module = importlib.import_module(f"tests.secrets_independent.corpus_{split}")
    redacted = {case.id: redact(case.text) for case in module.CASES}
    missed = tuple(
        case.id for case in module.CASES if left_secrets(case.secrets, redacted[case.id], case.text)
    )
    strict_missed = sum(1 for case in module.CASES if left_secrets(case.secrets, redacted[case.id]))
    changed = tuple(name for name, text in module.ORDINARY if redact(text) != text)
    return Score(
        len(module.CASES) - len(missed),
        len(module.CASES),
        len(changed),
        len(module.ORDINARY),
        missed,
        changed,
        len(module.CASES) - strict_missed,
    )


def _detail(split: str) -> None:
    """Print, for a dev split only, each missed case's text as redacted and each changed
    ordinary text."""
    assert split in _DETAILED, "the held-out split is never printed"
    module = importlib.import_module(f"tests.secrets_independent.corpus_{split}")
    for case in module.CASES:
        redacted = redact(case.text)
        left = left_secrets(case.secrets, redacted, case.text)
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
