"""A run that cannot load the configured model degrades without touching the vectors.

Before: one `carryd index` from a shell without CARRYD_MODEL_PATH (so the configured model is
the default one, which could not load) said "model identity changed … 905 old vectors
dropped", then "embedded 0"; recall was lexical from then on. Now the vectors stay, the run
says why it made none, and the model that built them is used again as soon as it is back.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from tests.cli_process import carryd

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "memory"


def vectors(root: Path) -> int:
    connection = sqlite3.connect(f"file:{root / '.carryd' / 'index.sqlite'}?mode=ro", uri=True)
    try:
        return int(connection.execute("SELECT count(*) FROM vectors").fetchone()[0])
    finally:
        connection.close()


@pytest.mark.parametrize("allow_download", [True, False])
def test_a_model_that_cannot_load_keeps_the_vectors(
    tmp_path: Path, use_model: Path, allow_download: bool
) -> None:
    import shutil

    root = tmp_path / "root"
    shutil.copytree(EXAMPLES, root)
    with_model = dict(os.environ)
    built = carryd("index", "--root", str(root), env=with_model)
    assert built.returncode == 0, built.stderr
    before = vectors(root)
    assert before > 0

    config = tmp_path / "config.toml"
    config.write_text(f"[model]\nallow_download = {'true' if allow_download else 'false'}\n")
    without = {k: v for k, v in os.environ.items() if k != "CARRYD_MODEL_PATH"}
    # No network at test time: a download of the default model fails at once.
    without.update(HTTPS_PROXY="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9")
    if not allow_download:  # the setting, not the test session's HF_HUB_OFFLINE, turns it off
        without.pop("HF_HUB_OFFLINE", None)
    degraded = carryd("index", "--root", str(root), "--config", str(config), env=without)
    assert degraded.returncode == 0, degraded.stderr
    assert "Traceback" not in degraded.stderr
    if not allow_download:  # fastembed's "ValueError: Could not load model carryd/87d7…"
        assert "ValueError" not in degraded.stdout + degraded.stderr
        assert "downloads are off (model.allow_download = false)" in degraded.stdout
    assert "old vectors dropped" not in degraded.stdout + degraded.stderr
    assert "degraded" in degraded.stdout
    assert f"the index's {before} vectors of" in degraded.stdout
    assert vectors(root) == before

    again = carryd("index", "--root", str(root), "--json", env=with_model)
    assert again.returncode == 0, again.stderr
    assert '"embedded": 0' in again.stdout  # the kept vectors are the model's own
    assert vectors(root) == before
