"""Model identity inference and the fastembed embedder, with the real offline model."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from carryd.index.embed import (
    DEFAULT_IDENTITY,
    FastEmbedder,
    ModelIdentity,
    OnnxOutput,
    OutputProblem,
    identity_for_default,
    identity_for_folder,
    pick_output,
)
from carryd.index.errors import EmbedderUnavailable


def fake_folder(tmp_path: Path, files: dict[str, str], name: str = "model") -> Path:
    folder = tmp_path / name
    for relative, text in files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text)
    folder.mkdir(exist_ok=True)
    return folder


BERT = json.dumps({"hidden_size": 384, "_name_or_path": "org/some-bert"})


def test_the_test_model_folder_works_with_no_config_at_all(model_dir: Path):
    identity = identity_for_folder(model_dir, {})
    assert identity == ModelIdentity(
        name="nreimers/MiniLM-L6-H384-uncased",
        file="model.onnx",
        query_prefix="",
        passage_prefix="",
        dim=384,
        pooling="mean",
    )


@pytest.mark.parametrize(
    ("files", "configured", "expected"),
    [
        # quantized E5 layout: onnx/model_quantized.onnx, E5 prefixes from the name
        (
            {
                "onnx/model_quantized.onnx": "x",
                "tokenizer.json": "{}",
                "config.json": json.dumps(
                    {"hidden_size": 384, "_name_or_path": "intfloat/multilingual-e5-small"}
                ),
            },
            {},
            ModelIdentity(
                "intfloat/multilingual-e5-small",
                "onnx/model_quantized.onnx",
                "query: ",
                "passage: ",
                384,
                "mean",
            ),
        ),
        # the only *.onnx, CLS pooling from 1_Pooling, name from the folder
        (
            {
                "weird.onnx": "x",
                "tokenizer.json": "{}",
                "config.json": json.dumps({"hidden_size": 768, "_name_or_path": "/home/me/x"}),
                "1_Pooling/config.json": json.dumps(
                    {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}
                ),
            },
            {},
            ModelIdentity("model", "weird.onnx", "", "", 768, "cls"),
        ),
        # explicit keys win over what the folder says
        (
            {"model.onnx": "x", "tokenizer.json": "{}", "config.json": BERT},
            {"name": "my-e5", "dim": 256, "pooling": "cls", "query_prefix": "q> "},
            ModelIdentity("my-e5", "model.onnx", "q> ", "passage: ", 256, "cls"),
        ),
    ],
    ids=["e5-quantized", "only-onnx-cls", "explicit-wins"],
)
def test_identity_is_inferred_from_the_folder(tmp_path, files, configured, expected):
    assert identity_for_folder(fake_folder(tmp_path, files), configured) == expected


@pytest.mark.parametrize(
    ("files", "configured", "missing"),
    [
        ({}, {}, "no ONNX model file"),
        ({"a.onnx": "x", "b.onnx": "x", "tokenizer.json": "{}"}, {}, "several ONNX files"),
        ({"model.onnx": "x", "config.json": BERT}, {}, "tokenizer.json is missing"),
        ({"model.onnx": "x", "tokenizer.json": "{}"}, {}, "dimension"),
        (
            {"model.onnx": "x", "tokenizer.json": "{}", "config.json": BERT},
            {"file": "no.onnx"},
            "no ONNX file 'no.onnx'",
        ),
        (
            {"model.onnx": "x", "tokenizer.json": "{}", "config.json": BERT},
            {"pooling": "max"},
            "pooling 'max' is not supported",
        ),
    ],
)
def test_a_folder_without_a_usable_model_says_what_is_missing(tmp_path, files, configured, missing):
    with pytest.raises(EmbedderUnavailable, match=missing):
        identity_for_folder(fake_folder(tmp_path, files), configured)


def test_a_missing_folder_names_the_fix(tmp_path: Path):
    with pytest.raises(EmbedderUnavailable, match="CARRYD_MODEL_PATH"):
        identity_for_folder(tmp_path / "nope", {})


def test_default_identity_and_e5_prefixes_only_for_e5_names():
    assert identity_for_default({}) == DEFAULT_IDENTITY
    assert DEFAULT_IDENTITY.query_prefix == "query: "
    other = identity_for_default({"name": "BAAI/bge-small-en-v1.5", "file": "onnx/model.onnx"})
    assert (other.query_prefix, other.passage_prefix) == ("", "")
    assert identity_for_default({"name": "intfloat/e5-base"}).passage_prefix == "passage: "


def test_identity_key_is_stable_and_tells_identities_apart():
    key = DEFAULT_IDENTITY.key()
    assert key == identity_for_default({}).key()
    assert json.loads(key)["dim"] == 384
    changed = [
        ModelIdentity(**{**DEFAULT_IDENTITY.__dict__, field: value}).key()
        for field, value in [
            ("name", "x"),
            ("file", "y.onnx"),
            ("query_prefix", ""),
            ("passage_prefix", ""),
            ("dim", 3),
            ("pooling", "cls"),
        ]
    ]
    assert len({key, *changed}) == 7


def test_real_embeddings_are_normalised_float32_in_input_order(model_dir: Path):
    embedder = FastEmbedder(identity_for_folder(model_dir, {}), model_dir=model_dir, threads=1)
    texts = ["sqlite write-ahead log", "a", "cats sleep on warm laptops all afternoon long", "a"]
    vectors = embedder.embed_passages(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (4, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.allclose(vectors[1], vectors[3], atol=1e-6)  # same text, same vector
    one_by_one = np.stack([embedder.embed_passages([text])[0] for text in texts])
    assert np.allclose(vectors, one_by_one, atol=1e-5)  # length-sorted batching keeps order
    query = embedder.embed_query("write-ahead logging in sqlite")
    assert query.shape == (384,) and query.dtype == np.float32
    assert int(np.argmax(vectors @ query)) == 0
    assert embedder.embed_passages([]).shape == (0, 384)


def test_prefixes_are_added_by_carryd(model_dir: Path):
    plain = FastEmbedder(identity_for_folder(model_dir, {}), model_dir=model_dir)
    prefixed = FastEmbedder(
        identity_for_folder(model_dir, {"passage_prefix": "passage: ", "query_prefix": "query: "}),
        model_dir=model_dir,
    )
    text = "the ledger lists failed approaches"
    assert np.allclose(
        prefixed.embed_passages([text])[0], plain.embed_passages(["passage: " + text])[0], atol=1e-6
    )
    assert np.allclose(prefixed.embed_query(text), plain.embed_query("query: " + text), atol=1e-6)
    assert not np.allclose(prefixed.embed_query(text), plain.embed_query(text), atol=1e-3)


def test_a_wrong_configured_dim_is_caught_on_first_use(model_dir: Path):
    embedder = FastEmbedder(identity_for_folder(model_dir, {"dim": 128}), model_dir=model_dir)
    with pytest.raises(EmbedderUnavailable, match="set model.dim = 384"):
        embedder.embed_passages(["x"])


def test_a_broken_onnx_file_is_unavailable_not_a_crash(tmp_path: Path, model_dir: Path):
    folder = tmp_path / "broken"
    shutil.copytree(model_dir, folder)
    (folder / "model.onnx").write_bytes(b"not an onnx graph")
    embedder = FastEmbedder(identity_for_folder(folder, {}), model_dir=folder)
    with pytest.raises(EmbedderUnavailable, match="cannot load the model in"):
        embedder.load()


@pytest.mark.parametrize("allow_download", [True, False])
def test_a_missing_default_model_fails_fast_offline(tmp_path: Path, allow_download: bool):
    # conftest sets HF_HUB_OFFLINE=1: nothing may be downloaded, and no retry loop may wait.
    embedder = FastEmbedder(
        DEFAULT_IDENTITY, cache_dir=tmp_path / "cache", allow_download=allow_download
    )
    started = time.monotonic()
    with pytest.raises(EmbedderUnavailable) as raised:
        embedder.embed_query("anything")
    assert time.monotonic() - started < 5.0
    message = str(raised.value)
    assert "Xenova/multilingual-e5-small" in message
    assert "CARRYD_MODEL_PATH" in message
    assert str(tmp_path / "cache") in message


@pytest.fixture(scope="session")
def second_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.testmodel import build_second_model

    return build_second_model(tmp_path_factory.getbasetemp() / "second-model")


def test_the_second_test_model_embeds_through_carryds_folder_loading(
    second_model_dir: Path, model_dir: Path
):
    # paraphrase-MiniLM-L3-v2's ONNX export lists input ids first and the token embeddings
    # third: the embedder pools the token embeddings, as sentence-transformers does.
    identity = identity_for_folder(second_model_dir, {})
    assert identity == ModelIdentity(
        name="sentence-transformers/paraphrase-MiniLM-L3-v2",
        file="model.onnx",
        query_prefix="",
        passage_prefix="",
        dim=384,
        pooling="mean",
    )
    second = FastEmbedder(identity, model_dir=second_model_dir, threads=1)
    texts = ["sqlite write-ahead log", "cats sleep on warm laptops all afternoon long"]
    vectors = second.embed_passages(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert int(np.argmax(vectors @ second.embed_query("write-ahead logging in sqlite"))) == 0
    # Another model, another embedding space: same text, unrelated vectors.
    first = FastEmbedder(identity_for_folder(model_dir, {}), model_dir=model_dir, threads=1)
    assert identity.key() != first.identity.key()
    assert float(first.embed_passages(texts[:1])[0] @ vectors[0]) < 0.5


def test_the_token_embeddings_output_is_picked_by_shape_or_the_problem_is_named():
    ids = OnnxOutput("output", "tensor(int64)", ("batch", "tokens"))
    tokens = OnnxOutput("onnx::Shape_422", "tensor(float)", ("batch", "tokens", 384))
    pooled = OnnxOutput("461", "tensor(float)", ("batch", 384))
    symbolic = OnnxOutput("last_hidden_state", "tensor(float)", ("batch", "tokens", "hidden"))
    assert pick_output([tokens, pooled], 384) == "onnx::Shape_422"
    assert pick_output([ids, pooled, tokens], 384) == "onnx::Shape_422"
    assert pick_output([symbolic, tokens], 384) == "last_hidden_state"
    wrong_dim = pick_output([tokens], 768)
    assert isinstance(wrong_dim, OutputProblem) and "model.dim = 384" in wrong_dim.reason
    none = pick_output([ids, pooled], 384)
    assert isinstance(none, OutputProblem) and "'461' tensor(float)" in none.reason


def test_undecodable_argument_bytes_embed_instead_of_raising(model_dir: Path):
    # `carryd recall "$(printf 'refund \xff')"`: Python hands the byte over as a lone surrogate.
    embedder = FastEmbedder(identity_for_folder(model_dir, {}), model_dir=model_dir)
    vector = embedder.embed_query("refund \udcff")
    assert vector.shape == (384,) and np.isfinite(vector).all()
    assert np.allclose(vector, embedder.embed_query("refund \ufffd"), atol=1e-6)
