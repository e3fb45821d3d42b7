"""An unusable model folder degrades `carryd index` to lexical-only with a message that names the
folder and what is wrong, never a traceback (issue 11). Real ONNX files, real fastembed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from carryd.index.store import Store
from carryd.index.tokenize import terms

REPO = Path(__file__).resolve().parents[2]


def no_token_embeddings_graph(path: Path) -> None:
    """A real ONNX graph with BERT's inputs whose outputs are input ids and a float mask: what
    an export with extra outputs first (and no token embeddings) gives fastembed to pool."""
    from onnx import TensorProto, helper, save_model

    axes = ["batch", "tokens"]
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, axes)
        for name in ("input_ids", "attention_mask", "token_type_ids")
    ]
    outputs = [
        helper.make_tensor_value_info("ids", TensorProto.INT64, axes),
        helper.make_tensor_value_info("mask", TensorProto.FLOAT, axes),
        helper.make_tensor_value_info("types", TensorProto.INT64, axes),
    ]
    nodes = [
        helper.make_node("Identity", ["input_ids"], ["ids"]),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Identity", ["token_type_ids"], ["types"]),
    ]
    graph = helper.make_graph(nodes, "not-an-encoder", inputs, outputs)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save_model(model, str(path))


def extra_outputs_first(folder: Path) -> str:
    no_token_embeddings_graph(folder / "model.onnx")
    return "no output of its ONNX graph is token embeddings"


def hidden_size_disagrees(folder: Path) -> str:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "hidden_size": 768}))
    return "token embeddings have 384 dimensions, not 768"


def truncated_onnx(folder: Path) -> str:
    data = (folder / "model.onnx").read_bytes()
    (folder / "model.onnx").write_bytes(data[: len(data) // 3])
    return "cannot load the model in"


def garbage_onnx(folder: Path) -> str:
    (folder / "model.onnx").write_bytes(os.urandom(4096))
    return "cannot load the model in"


def no_tokenizer(folder: Path) -> str:
    (folder / "tokenizer.json").unlink()
    return "tokenizer.json is missing"


def no_tokenizer_config(folder: Path) -> str:
    (folder / "tokenizer_config.json").unlink()
    return "tokenizer_config.json"


@pytest.mark.parametrize(
    "breakage",
    [
        extra_outputs_first,
        hidden_size_disagrees,
        truncated_onnx,
        garbage_onnx,
        no_tokenizer,
        no_tokenizer_config,
    ],
)
def test_an_unusable_model_folder_degrades_index_to_lexical_and_says_why(
    tmp_path: Path, model_dir: Path, breakage: Callable[[Path], str]
):
    folder = tmp_path / "broken-model"
    shutil.copytree(model_dir, folder)
    what = breakage(folder)
    root = tmp_path / "root"
    (root / "alpha").mkdir(parents=True)
    (root / "alpha" / "notes.md").write_text(
        "## Refund currency\n\nThe refund job used the wrong currency.\n", encoding="utf-8"
    )
    environment = {**os.environ, "CARRYD_MODEL_PATH": str(folder), "PYTHONPATH": str(REPO)}
    command = [sys.executable, "-m", "carryd.daemon.cli", "index", "--root", str(root)]
    result = subprocess.run(
        [*command, "--json"], capture_output=True, text=True, env=environment, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    answer = json.loads(result.stdout)
    assert (answer["files"], answer["entries"], answer["embedded"]) == (1, 1, 0)
    assert str(folder) in answer["degraded"] and what in answer["degraded"]
    with Store.open(root / ".carryd" / "index.sqlite") as store:
        assert store.counts()["vectors"] == 0
        [term] = terms("currency")
        assert len(store.postings([term])[term]) == 1  # lexical recall still finds it
    # The human summary says it too, in plain words.
    (root / "alpha" / "more.md").write_text("## Another\n\nMore text here.\n", encoding="utf-8")
    human = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=120)
    assert human.returncode == 0 and "Traceback" not in human.stderr
    assert "lexical recall only" in human.stdout and str(folder) in human.stdout
