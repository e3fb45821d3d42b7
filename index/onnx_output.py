"""Given an ONNX graph's outputs, pick the token embeddings output to pool (pure).

`embed.py` reads the outputs from the loaded session; the choice and its reasons live here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class OnnxOutput:
    """One output of an ONNX graph: name, element type ("tensor(float)") and shape (an int per
    fixed axis, None or a name for a symbolic one)."""

    name: str
    type: str
    shape: tuple[int | str | None, ...]


@dataclass(frozen=True)
class OutputProblem:
    reason: str
    fixed: bool = False  # the reason says how to fix it


FLOAT_TYPES = ("tensor(float)", "tensor(float16)", "tensor(double)", "tensor(bfloat16)")


def pick_output(outputs: Sequence[OnnxOutput], dim: int) -> str | OutputProblem:
    """Given an ONNX graph's outputs and the identity's dim, return the name of the token
    embeddings output to pool ([batch, tokens, dim] floats), or why there is none.

    The first output wins when it fits (what fastembed does by default); otherwise the first
    output that fits with exactly `dim` as its last axis.
    """
    tokens = [o for o in outputs if o.type in FLOAT_TYPES and len(o.shape) == 3]
    if tokens and tokens[0] is outputs[0]:
        size = outputs[0].shape[2]
        if size == dim or not isinstance(size, int):  # a symbolic size: the test sentence checks
            return outputs[0].name
    for output in tokens:
        if output.shape[2] == dim:
            return output.name
    described = ", ".join(f"{o.name!r} {o.type} {list(o.shape)}" for o in outputs) or "none"
    if tokens:
        sizes = sorted({str(o.shape[2]) for o in tokens})
        return OutputProblem(
            f"its token embeddings have {' or '.join(sizes)} dimensions, not {dim} (outputs: "
            f"{described}); set model.dim = {sizes[0]} in the config, or fix hidden_size in "
            "config.json",
            fixed=True,
        )
    return OutputProblem(
        "no output of its ONNX graph is token embeddings [batch, tokens, "
        f"{dim}] floats (outputs: {described})"
    )
