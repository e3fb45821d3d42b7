"""Hand-set semantic calibrations for unit tests of the arithmetic around them (carryd itself
has none: it measures every model, `carryd.index.calibration`). The numbers are the old
hand-made priors, kept as fixed, readable fixtures."""

from __future__ import annotations

from carryd.index.fusion import SemanticCalibration

# An English-only model whose unrelated cosines sit low (all-MiniLM-like): ramp 0.55 -> 0.65,
# nominating above 0.60.
MINILM = SemanticCalibration(
    name="minilm", floor=0.60, ceiling=0.65, multilingual=False, ramp_from=0.55
)
# A multilingual model whose cosines sit high (E5-like).
E5 = SemanticCalibration(name="e5", floor=0.80, ceiling=0.90, multilingual=True)
# A multilingual model with a wide ramp.
GENERIC = SemanticCalibration(name="generic", floor=0.40, ceiling=0.80, multilingual=True)
