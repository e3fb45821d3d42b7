"""A recall answer as JSON: the CLI contract's shape, and back from the daemon's socket.

`answer_json` / `hit_json` give what `carryd recall --json` prints and what the daemon sends over
its control socket (every L0 and slot redacted, I3); `answer_from_json` turns the daemon's answer
back into the typed `RecallAnswer`. Each hit carries its per-arm evidence both ways.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from carryd.index.fusion import ArmEvidence
from carryd.index.recall import RecallAnswer, RecallHit
from carryd.index.redact import redact


def _evidence_json(evidence: ArmEvidence | None, arm: str) -> dict[str, Any] | None:
    if evidence is None:
        return None
    out: dict[str, Any] = {
        "rank": evidence.rank,
        ("bm25" if arm == "lexical" else "cosine"): round(evidence.raw, 6),
        "confidence": round(evidence.confidence, 6),
        "divisor": evidence.divisor,
        "contribution": round(evidence.contribution, 8),
    }
    if arm == "lexical":
        out["matched"] = list(evidence.matched)
        out["share"] = round(evidence.share, 6)
        out["saturation"] = round(evidence.saturation, 6)
    return out


def hit_json(hit: RecallHit) -> dict[str, Any]:
    """Given a hit, return its JSON shape (the CLI contract), redacted (I3)."""
    out: dict[str, Any] = {
        "id": hit.id,
        "workspace": hit.workspace,
        "path": hit.path,
        "line_start": hit.line_start,
        "line_end": hit.line_end,
        "l0": redact(hit.l0),
        "l0_source": hit.l0_source,
        "score": round(hit.score, 8),
        "confidence": round(hit.confidence, 6),
        "decision": hit.decision,
        "match_reason": hit.match_reason,
        "arms": {
            "lexical": _evidence_json(hit.lexical, "lexical"),
            "semantic": _evidence_json(hit.semantic, "semantic"),
        },
    }
    if hit.place is not None:
        # The semantic evidence the confidence read, also for a hit the semantic arm did not
        # nominate (its cosine's place on the calibration ramp).
        out["place"] = round(hit.place, 6)
    if hit.parent_of is not None:
        out["parent_of"] = hit.parent_of
    if hit.slot is not None:
        out["slot"] = redact(hit.slot)
    return out


def answer_json(answer: RecallAnswer) -> dict[str, Any]:
    """Given a typed answer, return the CLI contract's JSON answer (redacted)."""
    return {
        "query": answer.query,
        "workspace": answer.workspace,
        "degraded": answer.degraded,
        "hits": [hit_json(hit) for hit in answer.hits],
    }


def _evidence_of(data: object, arm: str) -> ArmEvidence | None:
    if not isinstance(data, Mapping):
        return None
    return ArmEvidence(
        rank=int(data["rank"]),
        raw=float(data["bm25" if arm == "lexical" else "cosine"]),
        confidence=float(data["confidence"]),
        divisor=float(data["divisor"]),
        contribution=float(data["contribution"]),
        matched=tuple(data.get("matched") or ()),
        share=float(data.get("share", 0.0)),
        saturation=float(data.get("saturation", 0.0)),
    )


def answer_from_json(data: Mapping[str, Any]) -> RecallAnswer:
    """Given a JSON answer (from the daemon's socket), return the typed answer."""
    hits = []
    for item in data.get("hits") or ():
        arms = item.get("arms") or {}
        hits.append(
            RecallHit(
                id=str(item["id"]),
                workspace=item.get("workspace"),
                path=str(item["path"]),
                line_start=int(item["line_start"]),
                line_end=int(item["line_end"]),
                l0=str(item.get("l0") or ""),
                l0_source=item.get("l0_source", "truncate"),
                score=float(item.get("score", 0.0)),
                confidence=float(item.get("confidence", 0.0)),
                decision=item.get("decision", "inject"),
                match_reason=item.get("match_reason", "lexical"),
                lexical=_evidence_of(arms.get("lexical"), "lexical"),
                semantic=_evidence_of(arms.get("semantic"), "semantic"),
                parent_of=item.get("parent_of"),
                slot=item.get("slot"),
                place=None if item.get("place") is None else float(item["place"]),
            )
        )
    return RecallAnswer(
        query=str(data.get("query", "")),
        workspace=data.get("workspace"),
        degraded=data.get("degraded"),
        hits=tuple(hits),
    )
