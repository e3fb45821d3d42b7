"""Progress on long work (issue 11, "the first hour"): a cold `carryd index` shows a bar on a
terminal, plain lines when stderr is a log or a pipe, and nothing with --json."""

from __future__ import annotations

import fcntl
import io
import json
import os
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest
from carryd.daemon.progress import LINE_EVERY, Progress, progress_mode


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_plain_lines_at_the_start_every_few_seconds_and_at_the_end() -> None:
    stream, clock = io.StringIO(), Clock()
    progress = Progress("embedding", mode="lines", stream=stream, clock=clock)
    progress(0, 6000)
    for done in range(100, 6000, 100):
        clock.now += LINE_EVERY / 4
        progress(done, 6000)
    progress(6000, 6000)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "carryd: embedding: 0/6000 entries (0%)"
    assert lines[-1] == "carryd: embedding: 6000/6000 entries (100%)"
    assert 10 <= len(lines) <= 20  # about one line per LINE_EVERY seconds, not one per call
    assert "\r" not in stream.getvalue()


def test_a_bar_on_a_terminal_and_nothing_when_off_or_idle() -> None:
    stream = io.StringIO()
    with Progress("embedding", mode="bar", stream=stream) as progress:
        progress(0, 60)
        progress(60, 60)
    assert "60/60" in stream.getvalue() and "100%" in stream.getvalue()
    quiet = io.StringIO()
    with Progress("embedding", mode="off", stream=quiet) as progress:
        progress(0, 60)
        progress(60, 60)
    with Progress("embedding", mode="lines", stream=quiet) as progress:
        progress(0, 0)  # nothing to embed: nothing to show
    assert quiet.getvalue() == ""


def test_the_mode_follows_the_stream_and_json() -> None:
    assert progress_mode(as_json=False, stream=io.StringIO()) == "lines"
    assert progress_mode(as_json=True, stream=sys.__stderr__) == "off"


def write_root(root: Path, entries: int) -> Path:
    (root / "proj").mkdir(parents=True)
    text = "\n".join(f"# Note {n}\nThe {n}th fact about queue q{n % 7}.\n" for n in range(entries))
    (root / "proj" / "notes.md").write_text(text, encoding="utf-8")
    return root


def index_command(root: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "carryd.daemon.cli", "index", "--root", str(root), *extra]


def test_cold_index_prints_plain_progress_lines_when_stderr_is_not_a_terminal(
    tmp_path: Path, use_model: Path
) -> None:
    root = write_root(tmp_path / "root", 60)
    result = subprocess.run(index_command(root), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert "carryd: embedding: 0/60 entries (0%)" in result.stderr
    assert "carryd: embedding: 60/60 entries (100%)" in result.stderr
    assert "\r" not in result.stderr


def test_a_cold_index_of_many_files_shows_its_parsing_too(tmp_path: Path) -> None:
    """Parsing thousands of entries takes many seconds before the first embedding line (or
    the whole run, with no model): a log used to see nothing for 44 s."""
    root = tmp_path / "root"
    for number in range(120):
        write_root(root / f"w{number}", 3)
    config = tmp_path / "config.toml"
    config.write_text("[model]\nallow_download = false\n")
    env = {k: v for k, v in os.environ.items() if k != "CARRYD_MODEL_PATH"}
    result = subprocess.run(
        index_command(root, "--config", str(config)),
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "carryd: parsing: 1/120 files (0%)" in result.stderr
    assert "carryd: parsing: 120/120 files (100%)" in result.stderr
    assert "embedding:" not in result.stderr  # no model: nothing to show there
    small = write_root(tmp_path / "small", 5)
    quiet = subprocess.run(
        index_command(small, "--config", str(config)), capture_output=True, text=True, env=env
    )
    assert "parsing:" not in quiet.stderr  # one file parses in a blink


def test_cold_index_with_json_prints_no_progress(tmp_path: Path, use_model: Path) -> None:
    root = write_root(tmp_path / "root", 60)
    result = subprocess.run(
        index_command(root, "--json"), capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["embedded"] == 60
    assert result.stderr == ""


def test_cold_index_shows_a_bar_on_a_terminal(tmp_path: Path, use_model: Path) -> None:
    root = write_root(tmp_path / "root", 60)
    controller, terminal = os.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    try:
        process = subprocess.Popen(index_command(root), stdout=subprocess.PIPE, stderr=terminal)
        os.close(terminal)
        seen = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        assert process.wait(300) == 0
        assert process.stdout is not None
        assert b"embedded 60" in process.stdout.read()
    finally:
        os.close(controller)
    text = seen.decode("utf-8", "replace")
    assert "carryd: embedding" in text and "60/60" in text and "\r" in text  # a redrawn bar
    assert "0/60 entries (0%)\n" not in text.replace("\r\n", "\n")  # not the plain lines


@pytest.mark.parametrize("as_json", [False, True])
def test_mode_of_a_real_terminal(as_json: bool) -> None:
    controller, terminal = os.openpty()
    try:
        with os.fdopen(os.dup(terminal), "w") as stream:
            expected = "off" if as_json else "bar"
            assert progress_mode(as_json=as_json, stream=stream) == expected
    finally:
        os.close(controller)
        os.close(terminal)


def many_entries(root: Path, files: int = 150, sections: int = 20) -> Path:
    """A root of `files` × `sections` entries of distinct words (a few thousand in all)."""
    for number in range(files):
        lines = []
        for section in range(sections):
            words = " ".join(f"w{(number * 31 + section * 7 + k) % 997}" for k in range(40))
            lines += [f"## Section {number}-{section}", "", f"Body {words}.", ""]
        path = root / f"ws{number % 5}" / f"notes-{number:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(lines), encoding="utf-8")
    return root


PHASES = (
    ("reading", "files", 150),
    ("parsing", "files", 150),
    ("indexing terms", "entries", 3000),
    ("writing", "files", 150),
)


def without_a_model(tmp_path: Path) -> tuple[list[str], dict[str, str]]:
    config = tmp_path / "config.toml"
    config.write_text("[model]\nallow_download = false\n")
    env = {k: v for k, v in os.environ.items() if k != "CARRYD_MODEL_PATH"}
    return ["--config", str(config)], env


def test_every_phase_of_a_large_index_without_a_model_prints_lines(tmp_path: Path) -> None:
    """With no model, a cold index of 3,000 entries spent seconds committing and tokenising
    after the parsing line with nothing on stderr (a ~7 s silent stretch): now each phase
    prints its own lines, from its start to its end."""
    root = many_entries(tmp_path / "root")
    extra, env = without_a_model(tmp_path)
    result = subprocess.run(
        index_command(root, *extra), capture_output=True, text=True, timeout=300, env=env
    )
    assert result.returncode == 0, result.stderr
    assert "indexed 150 files, 3000 entries" in result.stdout
    lines = result.stderr.splitlines()
    for phase, unit, total in PHASES:
        mine = [line for line in lines if line.startswith(f"carryd: {phase}: ")]
        assert mine, (phase, result.stderr)
        assert mine[-1] == f"carryd: {phase}: {total}/{total} {unit} (100%)", mine
        assert mine[0] != mine[-1]  # a line when it starts, not only when it is over
    order = [
        next(number for number, line in enumerate(lines) if f": {phase}: " in line)
        for phase, _, _ in PHASES
    ]
    assert order == sorted(order)  # shown in the order they run
    assert "\r" not in result.stderr


def test_every_phase_of_a_large_index_shows_a_bar_on_a_terminal(tmp_path: Path) -> None:
    root = many_entries(tmp_path / "root")
    extra, env = without_a_model(tmp_path)
    controller, terminal = os.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    try:
        process = subprocess.Popen(
            index_command(root, *extra), stdout=subprocess.PIPE, stderr=terminal, env=env
        )
        os.close(terminal)
        seen = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
        assert process.wait(300) == 0
    finally:
        os.close(controller)
    text = seen.decode("utf-8", "replace")
    for phase, _, total in PHASES:
        assert f"carryd: {phase}" in text and f"{total}/{total}" in text, (phase, text[-2000:])
    assert "\r" in text and "(100%)\n" not in text.replace("\r\n", "\n")  # bars, not lines


def test_a_small_index_stays_quiet(tmp_path: Path) -> None:
    root = many_entries(tmp_path / "root", files=3, sections=5)
    extra, env = without_a_model(tmp_path)
    result = subprocess.run(
        index_command(root, *extra), capture_output=True, text=True, timeout=300, env=env
    )
    assert result.returncode == 0, result.stderr
    assert not [line for line in result.stderr.splitlines() if line.endswith("(100%)")]
