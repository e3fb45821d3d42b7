"""Progress of long work for a person watching: a cold index of thousands of entries runs for
a minute, and silence looks like a hang (issue 11, "the first hour").

`Progress` is a `progress(done, total)` callback (`sync_root`'s) that shows it:

- on a terminal, a tqdm bar on stderr (tqdm is maintained and already installed with
  fastembed, which uses it for model downloads);
- when stderr is not a terminal (a log, a pipe, CI), a plain line now and then: at the start,
  every `LINE_EVERY` seconds and at the end, never a carriage-return animation;
- nothing with `--json` (a program reads the output) or when there is nothing to do.

`SyncDisplay` shows a whole sync that way, phase by phase (reading, parsing, indexing terms,
writing, embedding): a cold index without a model spends seconds in each of the first four,
and none of them may be a silent stretch. A phase below its size floor (`PHASE_FLOORS`) is
over in a blink and shows nothing, so an edit's sync stays quiet.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from tqdm import tqdm

ProgressMode = Literal["bar", "lines", "off"]

LINE_EVERY = 5.0  # seconds between two plain lines


def progress_mode(*, as_json: bool, stream: IO[str] | None = None) -> ProgressMode:
    """Given whether the output is JSON and the stream progress goes to, return how to show it."""
    if as_json:
        return "off"
    target = sys.stderr if stream is None else stream
    isatty = getattr(target, "isatty", None)
    return "bar" if callable(isatty) and isatty() else "lines"


class Progress:
    """A `progress(done, total)` callback that shows `label` advancing; close() when done."""

    def __init__(
        self,
        label: str,
        *,
        mode: ProgressMode,
        unit: str = "entries",
        stream: IO[str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.mode = mode
        self.unit = unit
        self._stream = sys.stderr if stream is None else stream
        self._clock = clock
        self._bar: tqdm[object] | None = None
        self._last_line: float | None = None
        self._last: tuple[int, int] = (0, 0)

    def __call__(self, done: int, total: int) -> None:
        self._last = (done, total)
        if self.mode == "off" or total <= 0:
            return
        if self.mode == "bar":
            self._show_bar(done, total)
            return
        now = self._clock()
        if self._last_line is None or now - self._last_line >= LINE_EVERY or done >= total:
            self._last_line = now
            percent = 100 * done // total
            print(
                f"carryd: {self.label}: {done}/{total} {self.unit} ({percent}%)",
                file=self._stream,
                flush=True,
            )

    def _show_bar(self, done: int, total: int) -> None:
        if self._bar is None:
            from tqdm import tqdm  # lazy: only a terminal user with work to show pays for it

            self._bar = tqdm(
                total=total, desc=f"carryd: {self.label}", unit=f" {self.unit}", file=self._stream
            )
        self._bar.total = total
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# Below this much work a phase shows nothing (it is over in well under a second). The
# embedding is shown from the first entry: each one costs milliseconds.
PHASE_FLOORS = {"reading": 100, "parsing": 100, "indexing terms": 1000, "writing": 100}
PHASE_UNITS = {
    "reading": "files",
    "parsing": "files",
    "indexing terms": "entries",
    "embedding": "entries",
}


class SyncDisplay:
    """`sync_root`'s callbacks shown as `Progress` per phase: `phase(name, done, total)` for
    the phases before the embedding, `embedding(done, total)` for it; close() when done."""

    def __init__(self, *, mode: ProgressMode, stream: IO[str] | None = None) -> None:
        self.mode = mode
        self._stream = stream
        self._shown: dict[str, Progress] = {}

    def phase(self, name: str, done: int, total: int) -> None:
        if total < PHASE_FLOORS.get(name, 0):
            return
        shown = self._shown.get(name)
        if shown is None:
            for other in self._shown.values():
                other.close()  # one bar at a time: the earlier phase is over
            shown = self._shown[name] = Progress(
                name, mode=self.mode, unit=PHASE_UNITS.get(name, "files"), stream=self._stream
            )
        shown(done, total)

    def embedding(self, done: int, total: int) -> None:
        self.phase("embedding", done, total)

    def close(self) -> None:
        for shown in self._shown.values():
            shown.close()

    def __enter__(self) -> SyncDisplay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
