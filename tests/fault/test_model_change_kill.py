"""`kill -9` while a model change re-embeds the index (issue 22, "a real model change
re-embeds into a new vector set and swaps when complete").

The real CLI in subprocesses, the two offline test models: an index built with the first model,
`carryd index` with the second one killed once its new vector set has a first batch; then recall
still answers from the old set (by meaning, with the old model), `status` shows how far the new
set got, and the next `carryd index` embeds only what is missing and swaps the new set in.
"""

from __future__ import annotations

import json
import random
import re
import signal
import sqlite3
from pathlib import Path

import pytest
from carryd.daemon.config import load_settings
from carryd.daemon.control import request

from tests.fault.helpers import Daemon, cli, start_cli, wait_for
from tests.testmodel import build_second_model

pytestmark = pytest.mark.fault

FILES, SECTIONS = 40, 20  # 800 entries: a few commits of about 256 embeddings each
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "memory"


def notes(seed: int, vocabulary: list[str]) -> str:
    """Given a seed, return a note of `SECTIONS` sections of words drawn from `vocabulary`:
    entries unlike each other, so the semantic calibration is a real one (a root of near-copies
    puts its floor above every cosine, and recall would be lexical whatever the model)."""
    draw = random.Random(seed)
    lines: list[str] = []
    for _ in range(SECTIONS):
        heading = " ".join(draw.sample(vocabulary, 5)).capitalize()
        lines += [f"## {heading}", "", " ".join(draw.sample(vocabulary, 12)).capitalize() + ".", ""]
    return "\n".join(lines)


def vector_counts(db: Path) -> tuple[dict[str, int], int]:
    """Given the index, return (serving set's identity -> vectors, vectors in the next set)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as connection:
            serving = dict(
                connection.execute("SELECT identity, count(*) FROM vectors GROUP BY identity")
            )
            tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
            if "next_vectors" not in tables:
                return serving, 0
            pending = connection.execute("SELECT count(*) FROM next_vectors").fetchone()[0]
            return serving, int(pending)
    except sqlite3.Error:
        return {}, 0


def config(tmp_path: Path, name: str, model: Path) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'[model]\nmodel_path = "{model}"\n', encoding="utf-8")
    return path


def write_root(root: Path, files: int = FILES) -> int:
    """Given a folder, write `files` notes of distinct entries there; return the entry count."""
    vocabulary = sorted(
        {
            word.lower()
            for source in EXAMPLES.rglob("*.md")
            for word in re.findall(r"[A-Za-z]{4,}", source.read_text(encoding="utf-8"))
        }
    )
    for number in range(files):
        path = root / ("proj" if number % 2 else "ops") / f"notes-{number:02d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(notes(number, vocabulary), encoding="utf-8")
    return files * SECTIONS


def test_a_killed_re_embedding_keeps_the_old_set_serving_and_resumes(
    tmp_path: Path, model_dir: Path
) -> None:
    root = tmp_path / "root"
    total = write_root(root)
    db = root / ".carryd" / "index.sqlite"
    old = config(tmp_path, "old", model_dir)
    new = config(tmp_path, "new", build_second_model(tmp_path / "second-model"))
    heading = (root / "proj" / "notes-07.md").read_text(encoding="utf-8").splitlines()[0][3:]
    query = ("recall", heading, "--json", "--min-confidence", "0")

    built = cli(root, "index", "--json", "--config", str(old))
    assert built.returncode == 0, built.stderr
    [(old_key, count)] = vector_counts(db)[0].items()
    assert count == total
    before = json.loads(cli(root, *query, "--config", str(old)).stdout)
    assert any(hit["arms"]["semantic"] for hit in before["hits"]), before

    run = start_cli(root, "index", "--json", "--config", str(new))
    wait_for(lambda: vector_counts(db)[1] > 0 or run.poll() is not None, 180, "a first batch")
    run.send_signal(signal.SIGKILL)
    run.wait(60)
    serving, done = vector_counts(db)
    if done == 0 or done == total:
        pytest.fail("the re-embedding finished before it could be killed; make the root larger")
    assert serving == {old_key: total}  # the old set is whole

    # Recall, configured for the new model, answers as before the change: the old set.
    during = cli(root, *query, "--config", str(new))
    assert during.returncode == 0, during.stderr
    answer = json.loads(during.stdout)
    assert answer["degraded"] is None
    assert answer["hits"] == before["hits"]

    status = cli(root, "status", "--config", str(new))
    assert f": {done}/{total}; recall answers from" in status.stdout, status.stdout
    assert "re-embedding for model sentence-transformers/paraphrase-MiniLM-L3-v2" in status.stdout

    again = cli(root, "index", "--json", "--config", str(new))
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["embedded"] == total - done  # nothing done twice
    assert "re-embedding for model" in again.stderr and "complete" in again.stderr
    serving, pending = vector_counts(db)
    assert pending == 0 and list(serving.values()) == [total] and old_key not in serving
    assert "re-embedding" not in cli(root, "status", "--config", str(new)).stdout
    verify = cli(root, "verify", "--json", "--config", str(new))
    assert verify.returncode == 0 and json.loads(verify.stdout)["ok"], verify.stdout


def test_the_daemon_answers_from_the_old_set_while_it_re_embeds_then_swaps(
    tmp_path: Path, model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon started with a new model: its start-up reconcile re-embeds (in a child
    process: over `CHILD_EMBEDDINGS`) while its warm recall answers from the old set, and the
    same warm recall follows the swap."""
    root = tmp_path / "root"
    total = write_root(root, files=60)  # 1,200 entries
    db = root / ".carryd" / "index.sqlite"
    monkeypatch.setenv("CARRYD_MODEL_PATH", str(model_dir))
    assert cli(root, "index").returncode == 0
    [old_key] = vector_counts(db)[0]
    heading = (root / "proj" / "notes-07.md").read_text(encoding="utf-8").splitlines()[0][3:]
    params = {"query": heading, "min_confidence": 0, "workspace": None, "limit": None}
    before = json.loads(cli(root, "recall", heading, "--json", "--min-confidence", "0").stdout)
    assert any(hit["arms"]["semantic"] for hit in before["hits"]), before

    monkeypatch.setenv("CARRYD_MODEL_PATH", str(build_second_model(tmp_path / "second")))
    settings = load_settings(None, root=str(root))
    daemon = Daemon(root, tmp_path / "daemon.log")
    try:
        daemon.wait_ready()
        wait_for(lambda: vector_counts(db)[1] > 0, 180, "the new vector set's first batch")
        during = request(settings, "recall", params, timeout=60)
        serving, pending = vector_counts(db)
        if not pending:
            pytest.fail("the re-embedding finished before recall was asked; make the root larger")
        assert serving == {old_key: total}  # still mid-way after the answer: the old set's
        assert during is not None and during["degraded"] is None
        assert during["hits"] == before["hits"]

        wait_for(lambda: old_key not in vector_counts(db)[0], 300, "the swap")
        serving, pending = vector_counts(db)
        assert pending == 0 and list(serving.values()) == [total]
        after = wait_for(
            lambda: request(settings, "recall", params, timeout=60), 60, "an answer after it"
        )
        assert after["degraded"] is None
        # The daemon's warm recall now answers as a fresh in-process one with the new model.
        daemon.stop()
        fresh = json.loads(cli(root, "recall", heading, "--json", "--min-confidence", "0").stdout)
        assert after["hits"] == fresh["hits"]
        assert "re-embedding for model" in daemon.text() and "complete" in daemon.text()
    finally:
        daemon.ensure_dead()
