"""Hybrid recall and expand end to end: real parser, real SQLite, real fastembed with the offline
test model (all-MiniLM-L6-v2, English-only)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from carryd.daemon.cli.dispatch import main
from carryd.daemon.config import Settings, parse_settings
from carryd.daemon.indexer.indexing import sync_root
from carryd.daemon.indexer.model import load_embedder_for
from carryd.daemon.layout import open_store
from carryd.daemon.recall.recalling import Recaller, WarmSnapshot
from carryd.index.embed import Embedder
from carryd.index.store import Store

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def embedder(model_dir: Path) -> Embedder:
    """One loaded test model for the module (loading it per test would dominate the runtime)."""
    loaded, why = load_embedder_for(parse_settings({"model": {"model_path": str(model_dir)}}))
    assert loaded is not None, why
    return loaded


def write_root(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def settings_for(root: Path, model_dir: Path, **recall: Any) -> Settings:
    data: dict[str, Any] = {"root": str(root), "model": {"model_path": str(model_dir)}}
    if recall:
        data["recall"] = recall
    return parse_settings(data)


class Indexed:
    """A synced root with an open store and a warm Recaller over it."""

    def __init__(self, settings: Settings, embedder: Embedder | None) -> None:
        self.settings = settings
        self.store: Store = open_store(settings)
        report = sync_root(settings, store=self.store, embedder=embedder)
        assert not report.problems
        self.recaller = Recaller(settings, self.store, embedder, None if embedder else "no model")

    def recall(self, query: str, **kwargs: Any) -> dict[str, Any]:
        return self.recaller.recall(query, **kwargs)


@pytest.fixture
def indexed(tmp_path: Path, model_dir: Path, embedder: Embedder) -> Iterator[Any]:
    opened: list[Indexed] = []

    def build(files: dict[str, str], *, model: bool = True, **recall: Any) -> Indexed:
        root = tmp_path / f"root{len(opened)}"
        write_root(root, files)
        result = Indexed(settings_for(root, model_dir, **recall), embedder if model else None)
        opened.append(result)
        return result

    yield build
    for item in opened:
        item.store.close()


NOTES = {
    "MEMORY.md": "# Habits\n\n## Doctor visit\n\nSee the doctor on Tuesday.\n\n"
    "## Editor\n\nI use vim with a light theme.\n",
    # The error code and the path come after the bodies' opening ~100 characters, so that they
    # are in the full text but not in the L0 (which holds the heading and the opening).
    "webshop/notes.md": "# Webshop\n\n## Proxy notes\n\nThe checkout socket kept dying under "
    "load on busy evenings, whenever the traffic peaked and the upstream pool ran dry. "
    "The log said ERR_CONN_RESET whenever the proxy restarted; we now retry twice.\n\n"
    "## Build entry\n\nThe bundler needs one entry point, a plain script that the build can "
    "resolve without any plugins or loaders. It starts from lib/index.js and "
    "emits dist/app.js.\n\n"
    "## Money\n\nAmounts are integers in cents everywhere.\n",
    "tooling/notes.md": "# Tooling\n\n## Money in tooling\n\nThe tooling scripts never touch "
    "cents or amounts.\n",
    "中文/笔记.md": "# 笔记\n\n## 向量数据库\n\n上周决定用向量数据库替代全文检索，"
    "发布时踩了坑。\n\n## 周会\n\n每周一上午开周会，讨论进度。\n",
}


def ids_of(answer: dict[str, Any]) -> list[str]:
    return [hit["path"] + ":" + str(hit["line_start"]) for hit in answer["hits"]]


# --- the two arms ----------------------------------------------------------------------------


def test_a_topical_query_finds_an_entry_sharing_no_word_with_it(indexed: Any) -> None:
    root = indexed(NOTES)
    # Ranked first and injected at the default gate; a lone semantic vote is a probability of
    # relevance well short of certain (issue 12: calibrated confidence).
    answer = root.recall("physician appointment")
    assert answer["degraded"] is None
    top = answer["hits"][0]
    assert top["l0"].startswith("Doctor visit")
    assert top["decision"] == "inject"
    assert top["confidence"] < 0.5
    assert top["match_reason"] == "semantic"
    assert top["arms"]["lexical"] is None
    assert top["arms"]["semantic"]["cosine"] > 0.65


@pytest.mark.parametrize(
    ("query", "heading"),
    [
        ("ERR_CONN_RESET", "Proxy notes"),
        ("conn reset", "Proxy notes"),
        ("lib/index.js", "Build entry"),
    ],
)
def test_an_error_code_or_path_finds_its_entry_through_the_full_text(
    indexed: Any, query: str, heading: str
) -> None:
    root = indexed(NOTES)
    top = root.recall(query)["hits"][0]
    assert top["l0"].startswith(heading)
    assert query.split()[0].casefold() not in top["l0"].casefold()  # not in the L0
    assert top["arms"]["lexical"]["rank"] == 1
    assert top["decision"] == "inject"


def test_a_chinese_query_finds_chinese_entries_through_the_lexical_arm(indexed: Any) -> None:
    root = indexed(NOTES)
    answer = root.recall("发布踩坑", min_confidence=0.0)
    top = answer["hits"][0]
    assert top["path"] == "中文/笔记.md" and top["l0"].startswith("向量数据库")
    # The English-only test model cannot read Chinese: its arm abstains instead of adding noise.
    assert all(hit["arms"]["semantic"] is None for hit in answer["hits"])
    assert top["match_reason"] == "lexical"


# --- scope -----------------------------------------------------------------------------------


def test_a_workspace_sees_itself_and_the_root_level_never_another_workspace(
    indexed: Any,
) -> None:
    root = indexed(NOTES)
    for query in ("cents amounts", "money", "doctor", "physician appointment", "ERR_CONN_RESET"):
        answer = root.recall(query, workspace="tooling", min_confidence=0.0, limit=100)
        assert answer["workspace"] == "tooling"
        assert {hit["workspace"] for hit in answer["hits"]} <= {"tooling", None}
    scoped = root.recall("cents amounts", workspace="webshop", min_confidence=0.0, limit=100)
    assert "tooling/notes.md" not in {hit["path"] for hit in scoped["hits"]}
    everywhere = root.recall("cents amounts", min_confidence=0.0, limit=100)
    assert {"tooling/notes.md", "webshop/notes.md"} <= {hit["path"] for hit in everywhere["hits"]}


# --- decisions and ranking -------------------------------------------------------------------


def test_two_candidates_are_ordered_by_raw_similarity_with_distinct_scores(
    indexed: Any,
) -> None:
    root = indexed(
        {
            "a.md": "## Cache\n\nRedis holds the session cache; redis restarts nightly.\n",
            "b.md": "## Queue\n\nThe queue is Postgres; a redis cache sits in front.\n",
        }
    )
    answer = root.recall("redis cache restarts nightly", min_confidence=0.0)
    hits = answer["hits"]
    assert len(hits) == 2
    assert hits[0]["l0"].startswith("Cache")
    assert hits[0]["score"] > hits[1]["score"]
    # raw order: the score is the confidence (rounded to 8 and 6 places in the JSON)
    assert hits[0]["score"] == pytest.approx(hits[0]["confidence"], abs=1e-6)


def test_a_hits_confidence_does_not_depend_on_how_many_candidates_came_back(
    indexed: Any,
) -> None:
    files = {"target.md": "## Doctor visit\n\nSee the doctor on Tuesday about the knee.\n"}
    for number in range(49):
        files[f"filler/{number:02}.md"] = (
            f"## Knee note {number}\n\nThe knee felt fine on day {number} of the walk.\n"
        )
    root = indexed(files)
    many = root.recall("doctor knee", min_confidence=0.0, limit=50)
    one = root.recall("doctor knee", min_confidence=0.0, limit=1)
    assert len(many["hits"]) == 50 and len(one["hits"]) == 1
    by_id = {hit["id"]: hit for hit in many["hits"]}
    assert one["hits"][0]["confidence"] == by_id[one["hits"][0]["id"]]["confidence"]
    # (Not across roots: the semantic confidence reads the cosine through the calibration
    # measured on each root's own corpus, `carryd.daemon.indexer.calibrating`.)


def test_default_answers_only_inject_hits_and_zero_returns_every_candidate(
    indexed: Any,
) -> None:
    root = indexed(NOTES)
    query = "proxy kubernetes ingress helm chart"  # one term of five: a weak lexical match
    default = root.recall(query)
    everything = root.recall(query, min_confidence=0.0)
    assert default["hits"] == []
    assert everything["hits"][0]["l0"].startswith("Proxy notes")
    assert everything["hits"][0]["decision"] == "inject"  # threshold 0: every candidate passes
    strict = root.recall("ERR_CONN_RESET checkout socket", min_confidence=0.99)
    assert all(hit["confidence"] >= 0.99 for hit in strict["hits"])


def test_parent_propagation_is_off_by_default_and_fills_in_only_when_asked(
    indexed: Any,
) -> None:
    files = {
        "ws/log.md": "# Week 48\n\n## Refund bug\n\nPartial refunds used the wrong currency.\n\n"
        "## Refund fix\n\nCompute partial amounts from line items.\n",
        "ws/other.md": "## Lunch\n\nSoup on Mondays.\n",
    }
    query = "wrong currency"
    plain = indexed(files).recall(query, min_confidence=0.0)
    assert [hit["l0"].split(" —")[0] for hit in plain["hits"]] == ["Refund bug"]
    propagated = indexed(files, parent_propagation=True).recall(query, min_confidence=0.0)
    reasons = [(hit["l0"].split(" —")[0], hit["match_reason"]) for hit in propagated["hits"]]
    assert reasons[0][0] == "Refund bug" and reasons[0][1] != "parent_topic"
    assert ("Refund fix", "parent_topic") in reasons
    assert ("Lunch", "parent_workspace") in reasons
    assert all(hit["parent_of"] == propagated["hits"][0]["id"] for hit in propagated["hits"][1:])


def test_the_same_query_gives_the_same_answer(indexed: Any) -> None:
    root = indexed(NOTES)
    first = root.recall("money cents", min_confidence=0.0)
    assert root.recall("money cents", min_confidence=0.0) == first


def test_the_answer_has_exactly_the_contract_keys(indexed: Any) -> None:
    root = indexed(NOTES)
    answer = root.recall("ERR_CONN_RESET", workspace="webshop")
    assert set(answer) == {"query", "workspace", "degraded", "hits"}
    hit = answer["hits"][0]
    assert set(hit) == {
        "id", "workspace", "path", "line_start", "line_end", "l0", "l0_source", "score",
        "confidence", "decision", "match_reason", "arms", "place",
    }  # fmt: skip
    assert set(hit["arms"]) == {"lexical", "semantic"}
    assert hit["arms"]["lexical"]["matched"] == ["err_conn_reset", "err", "conn", "reset"]
    # The evidence the confidence read: the lexical shares and the cosine's place (any hit the
    # model reads has one, nominated by the semantic arm or not).
    assert {"share", "saturation"} <= set(hit["arms"]["lexical"])
    assert isinstance(hit["place"], float)
    json.dumps(answer)  # serialisable as is


def test_an_empty_query_has_no_hits(indexed: Any) -> None:
    root = indexed(NOTES)
    assert root.recall("   ")["hits"] == []


def test_a_secret_in_an_l0_never_leaves_carryd(indexed: Any) -> None:
    key = "AKIA" + "IOSFODNN7EXAMPLE"
    root = indexed({"keys.md": f"## Deploy key {key}\n\nUse the deploy key for the bucket.\n"})
    for hit in root.recall("deploy key bucket", min_confidence=0.0)["hits"]:
        assert key not in json.dumps(hit)


# --- warm caches and fail-soft ---------------------------------------------------------------


def test_the_recaller_sees_a_new_entry_after_the_store_moves_on(
    indexed: Any, embedder: Embedder
) -> None:
    root = indexed(NOTES)
    assert root.recall("kubernetes ingress", min_confidence=0.0)["hits"] == []
    write_root(root.settings.root_path, {"ops.md": "## Ingress\n\nKubernetes ingress times out.\n"})
    sync_root(root.settings, store=root.store, embedder=embedder, paths=["ops.md"])
    assert root.recall("kubernetes ingress")["hits"][0]["path"] == "ops.md"


def test_without_a_model_recall_is_lexical_only_and_says_so(indexed: Any) -> None:
    root = indexed(NOTES, model=False)
    answer = root.recall("ERR_CONN_RESET")
    assert answer["degraded"]
    assert answer["hits"][0]["l0"].startswith("Proxy notes")
    assert answer["hits"][0]["arms"]["semantic"] is None


def test_a_broken_vector_table_degrades_to_lexical_instead_of_raising(
    indexed: Any, embedder: Embedder
) -> None:
    root = indexed(NOTES)
    with sqlite3.connect(root.settings.db_path) as connection:
        connection.execute("UPDATE vectors SET vector = x'00010203040506'")
        connection.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
    answer = root.recall("ERR_CONN_RESET")
    assert answer["degraded"]
    assert answer["hits"][0]["l0"].startswith("Proxy notes")


# --- expand ----------------------------------------------------------------------------------


def test_expand_returns_the_exact_current_text_and_reports_unknown_and_vanished(
    indexed: Any,
) -> None:
    root = indexed(NOTES)
    proxy = root.recall("ERR_CONN_RESET")["hits"][0]
    money = root.recall("integers cents", workspace="webshop")["hits"][0]
    chinese = root.recall("周会", min_confidence=0.0)["hits"][0]
    answer = root.recaller.expand([proxy["id"], "mem_" + "0" * 32, money["id"], chinese["id"]])
    texts = {entry["id"]: entry["text"] for entry in answer["entries"]}
    assert texts[proxy["id"]].rstrip("\n") == (
        "## Proxy notes\n\nThe checkout socket kept dying under load on busy evenings, "
        "whenever the traffic peaked and the upstream pool ran dry. The log said "
        "ERR_CONN_RESET whenever the proxy restarted; we now retry twice."
    )
    assert texts[money["id"]].startswith("## Money\n\nAmounts are integers in cents")
    assert "ERR_CONN_RESET" not in texts[money["id"]]  # never another entry's text
    assert texts[chinese["id"]].startswith("## 周会")
    assert answer["missing"] == [{"id": "mem_" + "0" * 32, "reason": "unknown"}]
    (root.settings.root_path / "中文" / "笔记.md").unlink()
    again = root.recaller.expand([chinese["id"], proxy["id"]])
    assert again["missing"] == [{"id": chinese["id"], "reason": "vanished"}]
    assert [entry["id"] for entry in again["entries"]] == [proxy["id"]]


def test_expand_reads_the_file_as_it_is_now_and_redacts(indexed: Any) -> None:
    root = indexed(NOTES)
    proxy = root.recall("ERR_CONN_RESET")["hits"][0]
    path = root.settings.root_path / "webshop" / "notes.md"
    key = "AKIA" + "IOSFODNN7EXAMPLE"
    path.write_text(
        path.read_text(encoding="utf-8").replace("retry twice.", f"retry twice with {key}."),
        encoding="utf-8",
    )
    (entry,) = root.recaller.expand([proxy["id"]])["entries"]
    assert "retry twice with" in entry["text"] and key not in entry["text"]


# --- the command line ------------------------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_cli_recall_json_batch_and_expand(
    tmp_path: Path, use_model: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "root"
    write_root(root, NOTES)
    # No index yet: the first recall syncs the root once.
    code, out = run_cli(capsys, "recall", "ERR_CONN_RESET", "--root", str(root), "--json")
    assert code == 0
    answer = json.loads(out)
    assert answer["hits"][0]["l0"].startswith("Proxy notes")
    assert (root / ".carryd" / "index.sqlite").exists()

    batch = tmp_path / "batch.jsonl"
    batch.write_text(
        json.dumps({"query": "lib/index.js", "workspace": "webshop"})
        + "\n"
        + json.dumps({"query": "发布踩坑"}, ensure_ascii=False)
        + "\n",
        encoding="utf-8",
    )
    code, out = run_cli(
        capsys, "recall", "--batch", str(batch), "--root", str(root), "--min-confidence", "0"
    )
    assert code == 0
    first, second = (json.loads(line) for line in out.splitlines())
    assert first["workspace"] == "webshop" and first["hits"][0]["l0"].startswith("Build entry")
    assert second["query"] == "发布踩坑" and second["hits"][0]["path"] == "中文/笔记.md"

    code, out = run_cli(capsys, "recall", "physician appointment", "--root", str(root))
    assert code == 0 and "Doctor visit" in out and "carryd expand" in out

    entry_id = answer["hits"][0]["id"]
    code, out = run_cli(capsys, "expand", entry_id, "--root", str(root), "--json")
    assert code == 0
    assert json.loads(out)["entries"][0]["text"].startswith("## Proxy notes")
    code, out = run_cli(capsys, "expand", entry_id, "mem_" + "f" * 32, "--root", str(root))
    assert code == 1 and "ERR_CONN_RESET" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["recall"],
        ["recall", "q", "--batch", "x.jsonl"],
        ["recall", "q", "--min-confidence", "1.5"],
        ["recall", "q", "--limit", "-1"],
        ["recall", "  "],
    ],
)
def test_cli_recall_usage_errors_exit_2(
    tmp_path: Path, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "root").mkdir()
    assert main([*argv, "--root", str(tmp_path / "root")]) == 2


def test_cli_a_bad_batch_line_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "MEMORY.md").write_text("# Defaults\n", encoding="utf-8")
    batch = tmp_path / "batch.jsonl"
    batch.write_text('{"query": "ok"}\n{"workspace": "w"}\n', encoding="utf-8")
    assert main(["recall", "--batch", str(batch), "--root", str(tmp_path / "root")]) == 2
    assert "batch.jsonl:2" in capsys.readouterr().err


# --- P4: progressive loading pays --------------------------------------------------------------


def test_five_l0_abstracts_are_far_smaller_than_the_five_full_entries(
    tmp_path: Path, model_dir: Path, embedder: Embedder
) -> None:
    """P4's measurement on the example root: five L0 hits vs expanding the same five.

    The issue's bar: the L0 answer is at least 80% smaller in characters.
    """
    root = tmp_path / "examples"
    shutil.copytree(REPO / "examples" / "memory", root)
    indexed_root = Indexed(settings_for(root, model_dir), embedder)
    try:
        l0_chars = full_chars = 0
        queries = ("checkout refunds", "what did we try and what failed", "refund currency")
        for query in queries:
            hits = indexed_root.recall(query, min_confidence=0.0, limit=5)["hits"]
            assert len(hits) == 5
            full = indexed_root.recaller.expand([hit["id"] for hit in hits])["entries"]
            assert [entry["id"] for entry in full] == [hit["id"] for hit in hits]
            l0_chars += sum(len(hit["l0"]) for hit in hits)
            full_chars += sum(len(entry["text"]) for entry in full)
        assert 1 - l0_chars / full_chars >= 0.8
    finally:
        indexed_root.store.close()


# --- the warm cache --------------------------------------------------------------------------

QUERIES = (
    ("physician appointment", None),
    ("ERR_CONN_RESET proxy", "webshop"),
    ("money cents amounts", "tooling"),
    ("money cents amounts", "webshop"),
    ("发布踩坑", None),
    ("kubernetes ingress timeout", "ops"),
    ("editor theme", "ops"),
)

# Each step: files to write (None: delete), then a sync of exactly those paths.
STEPS: tuple[dict[str, str | None], ...] = (
    {"webshop/notes.md": NOTES["webshop/notes.md"].replace("retry twice", "retry thrice")},
    # The same ids, a queried term gone from one entry and new in another: the warm
    # recaller's cached postings of exactly those terms must go.
    {
        "webshop/notes.md": NOTES["webshop/notes.md"]
        .replace("retry twice", "retry thrice")
        .replace("integers in cents", "integers")
        .replace("one entry point", "one entry point, amounts aside")
    },
    {"ops/ingress.md": "## Ingress\n\nKubernetes ingress times out after 60 s.\n"},
    {
        "MEMORY.md": NOTES["MEMORY.md"] + "\n## Theme\n\n<!-- slot: preference:theme -->\n"
        "A dark editor theme at night.\n"
    },
    {"tooling/notes.md": None},
    {"ops/ingress.md": "## 入口\n\nKubernetes 入口网关超时，已改为九十秒。\n"},
    {"webshop/notes.md": None, "ops/money.md": "## Money in ops\n\nCents, never floats.\n"},
    {"tooling/notes.md": NOTES["tooling/notes.md"]},
)


def answers(recaller: Recaller) -> list[dict[str, Any]]:
    return [
        recaller.recall(query, workspace=workspace, min_confidence=0.0)
        for query, workspace in QUERIES
    ]


def apply_step(root: Indexed, step: dict[str, str | None], embedder: Embedder | None) -> None:
    for relative, text in step.items():
        path = root.settings.root_path / relative
        if text is None:
            path.unlink()
        else:
            write_root(root.settings.root_path, {relative: text})
    sync_root(root.settings, store=root.store, embedder=embedder, paths=sorted(step))


@pytest.mark.parametrize("model", [True, False])
@pytest.mark.parametrize("ask_between", [True, False])
def test_a_warm_recaller_answers_as_a_fresh_one_after_edits_adds_and_deletes(
    indexed: Any, embedder: Embedder, model: bool, ask_between: bool
) -> None:
    """The incremental refresh is invisible: after every step (or only after the last, when
    several generations passed unseen) the warm recaller's answers and slots are exactly a
    fresh recaller's over the same store."""
    root = indexed(NOTES, model=model)
    used = embedder if model else None
    degraded = None if model else "no model"
    warm = root.recaller
    assert answers(warm)  # warm up
    for step in STEPS:
        apply_step(root, step, used)
        if ask_between or step is STEPS[-1]:
            fresh = Recaller(root.settings, root.store, used, degraded)
            assert answers(warm) == answers(fresh)
            ids = sorted(row.id for row in root.store.entries())
            assert warm.slots(ids) == fresh.slots(ids)
    assert "preference:theme" in warm.slots(sorted(row.id for row in root.store.entries())).values()
    # After the first load every refresh came from the store's change log.
    assert warm.warm.refreshes["full"] == 1 and warm.warm.refreshes["log"] >= 1


def test_vectors_filled_in_later_reach_the_warm_recaller(indexed: Any, embedder: Embedder) -> None:
    """Entries synced without a model (no vectors), then a sync that embeds them: the warm
    recaller picks the new vectors up without any file having changed."""
    root = indexed(NOTES)
    warm = root.recaller
    assert answers(warm)
    apply_step(root, {"ops/ingress.md": "## Ingress\n\nKubernetes ingress times out.\n"}, None)
    assert answers(warm) == answers(Recaller(root.settings, root.store, embedder, None))
    sync_root(root.settings, store=root.store, embedder=embedder)  # catches the vector up
    fresh = Recaller(root.settings, root.store, embedder, None)
    assert answers(warm) == answers(fresh)
    top = warm.recall("kubernetes ingress timeout", workspace="ops")["hits"][0]
    assert top["path"] == "ops/ingress.md" and top["arms"]["semantic"] is not None


def test_a_repeated_query_is_embedded_once_and_answers_the_same(indexed: Any) -> None:
    """The carry asks the same few questions after every edit: the query vector is kept by
    query text, and the answer is the one a fresh embedding gives."""
    root = indexed(NOTES)
    embedder = root.recaller._embedder  # noqa: SLF001
    calls: list[str] = []

    class Counting:
        identity = embedder.identity

        def embed_query(self, text: str) -> Any:
            calls.append(text)
            return embedder.embed_query(text)

        def embed_passages(self, texts: Any) -> Any:
            return embedder.embed_passages(texts)

    recaller = Recaller(root.settings, root.store, Counting(), None)
    first = recaller.recall("physician appointment")
    again = recaller.recall("physician appointment")
    assert first == again == root.recall("physician appointment")
    assert calls == ["physician appointment"]
    recaller.recall("money in cents")
    assert calls == ["physician appointment", "money in cents"]


def test_an_edit_patches_the_cached_postings_of_its_terms_instead_of_dropping_them(
    indexed: Any,
) -> None:
    """A common term's postings are costly to read again at 100,000 entries: after an edit
    that keeps every entry id, the recaller patches the cached postings of the terms the
    changed entries held or hold, and they equal what a fresh read builds."""
    import numpy as np
    from carryd.index.lexical import TermPostings

    root = indexed(NOTES, model=False)
    recaller = root.recaller
    recaller.recall("money cents amounts")  # caches the three terms' postings
    cached = recaller._term_postings  # noqa: SLF001
    terms = [term for term in cached if term.startswith(("cent", "amount", "money"))]
    assert terms
    edited = NOTES["webshop/notes.md"].replace(
        "Amounts are integers in cents everywhere.",
        "Amounts are integers in cents, cents only, never floats.",
    )
    apply_step(root, {"webshop/notes.md": edited}, None)
    snapshot, _, _, cached, _ = recaller._current()  # noqa: SLF001 — the refresh, no query yet
    for term in terms:
        assert term in cached, term  # patched, not dropped
        rebuilt = TermPostings.of(root.store.postings([term]).get(term, {}), snapshot.row_of)
        assert np.array_equal(cached[term].rows, rebuilt.rows)
        assert np.array_equal(cached[term].frequencies, rebuilt.frequencies)
    answer = recaller.recall("money cents amounts")
    assert answer == Recaller(root.settings, root.store, None, "no model").recall(
        "money cents amounts"
    )


@pytest.mark.parametrize("model", [True, False])
def test_the_daemons_snapshot_keeps_common_postings_and_answers_as_a_fresh_recaller(
    indexed: Any, embedder: Embedder, model: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The daemon's warm snapshot keeps the postings of every term at least `resident_min_df`
    entries hold (here 1: every term), patched on each refresh: a query never reads one from
    the store (at 100,000 entries a common term's read cost 100-400 ms), and after edits, adds
    and deletes the answers are exactly a fresh recaller's."""
    root = indexed(NOTES, model=model)
    used = embedder if model else None
    degraded = None if model else "no model"
    shared = WarmSnapshot(root.store, used, resident_min_df=1)
    warm = Recaller(root.settings, root.store, used, degraded, warm=shared)
    read: list[str] = []  # the terms the warm recaller reads from the store
    store_postings = root.store.postings

    def counted(terms: Any) -> dict[str, dict[str, int]]:
        read.extend(terms)
        return store_postings(terms)

    monkeypatch.setattr(root.store, "postings", counted)
    warm.recall("money cents amounts")
    assert shared.current().resident and read == []
    for step in STEPS:
        apply_step(root, step, used)
        got = answers(warm)
        with monkeypatch.context() as fresh_reads:
            fresh_reads.setattr(root.store, "postings", store_postings)
            assert got == answers(Recaller(root.settings, root.store, used, degraded))
        # Only terms no entry held at the full load are read (and kept by the recaller).
        assert not set(read) & set(shared.current().resident)
    assert shared.refreshes["full"] == 1 and shared.refreshes["log"] == len(STEPS)


def test_a_repeated_question_after_an_edit_makes_no_pass_over_every_vector(
    indexed: Any, embedder: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The carry asks the same questions after every edit: the recaller remembers each vector
    search and patches it with the ids the edit changed (`nearest_patch`) instead of scoring
    every vector again, and the answers stay a fresh recaller's."""
    import carryd.daemon.recall.remembered_searches as remembered_searches

    root = indexed(NOTES)
    passes: list[int] = []
    full_pass = remembered_searches.nearest

    def counted(*args: Any, **kwargs: Any) -> Any:
        passes.append(kwargs["limit"])
        return full_pass(*args, **kwargs)

    monkeypatch.setattr(remembered_searches, "nearest", counted)
    warm = root.recaller
    answers(warm)
    asked = len(passes)  # one per question the model reads (not the Chinese one)
    assert asked >= 5
    apply_step(root, STEPS[0], embedder)  # one entry's text (and vector) changes
    assert answers(warm) == answers(Recaller(root.settings, root.store, embedder, None))
    assert len(passes) == 2 * asked  # the fresh recaller's passes only


def test_the_daemons_snapshot_is_kept_out_of_the_collectors_full_passes(indexed: Any) -> None:
    """A full collection walked every row of the warm snapshot (80-120 ms at 100,000 entries):
    the daemon's snapshot moves what is alive after a full load to the permanent generation,
    and still answers as before."""
    import gc

    root = indexed(NOTES, model=False)
    try:
        shared = WarmSnapshot(root.store, None, freeze_heap=True)
        warm = Recaller(root.settings, root.store, None, "no model", warm=shared)
        assert answers(warm) == answers(root.recaller)
        row = next(iter(shared.current().rows.values()))
        assert gc.get_freeze_count() > 0
        assert not any(tracked is row for tracked in gc.get_objects())
        loaded_later = next(iter(WarmSnapshot(root.store, None).current().rows.values()))
        assert any(tracked is loaded_later for tracked in gc.get_objects())  # the CLI's
    finally:
        gc.unfreeze()


# --- evidence of absence: a question asked in the wrong workspace ---------------------------

# Two diaries sharing their topic words (the gym, a trip, a dentist) but not their people.
DIARIES = {
    "jon/diary.md": "# Jon's diary\n\n## Gym\n\nJon went to the gym on Monday morning and lifted "
    "weights with his trainer for an hour.\n\n## Trip\n\nJon took the night train to Lisbon in "
    "May and stayed with his cousin.\n\n## Dentist\n\nJon's dentist appointment moved to the "
    "14th; the filling on the left side hurts when he drinks cold water.\n",
    "gina/diary.md": "# Gina's diary\n\n## Gym\n\nGina goes to the gym every evening after work "
    "and swims twenty lengths before the sauna.\n\n## Trip\n\nGina flew to Tokyo for a dance "
    "festival and bought a kimono for her mother.\n\n## Dentist\n\nGina's dentist said her "
    "teeth are fine; the next check-up is in six months.\n",
}


def test_a_question_asked_in_a_workspace_without_its_person_injects_nothing(
    indexed: Any,
) -> None:
    root = indexed(DIARIES)
    question = "When did Jon go to the gym?"
    # Asked where Jon lives: his gym entry injects.
    own = root.recaller.answer(question, workspace="jon")
    assert own.absent == ()
    assert own.hits and own.hits[0].l0.startswith("Gym")
    assert own.hits[0].path == "jon/diary.md"
    # Asked in Gina's workspace, which shares "gym" but has no Jon: nothing injects, and the
    # answer says what the scope lacks.
    elsewhere = root.recaller.answer(question, workspace="gina")
    assert elsewhere.absent == ("jon",)
    assert elsewhere.hits == ()
    # Gina's gym entry is still the best candidate there, only less sure than it would be for a
    # question about Gina: the topic words match, the person does not.
    ranked = root.recaller.answer(question, workspace="gina", min_confidence=0)
    theirs = root.recaller.answer(
        "When did Gina go to the gym?", workspace="gina", min_confidence=0
    )
    assert ranked.hits[0].l0.startswith("Gym") and theirs.hits[0].l0.startswith("Gym")
    assert ranked.hits[0].confidence < theirs.hits[0].confidence
    assert theirs.absent == () and theirs.hits[0].decision == "inject"


def test_an_identifier_the_root_never_held_injects_nothing_in_any_scope(indexed: Any) -> None:
    root = indexed(
        {
            **DIARIES,
            "jon/incidents.md": "# Incidents\n\n## INC-4471 checkout outage\n\nJon was "
            "incident commander for INC-4471; the root cause was an expired certificate.\n",
        }
    )
    known = root.recaller.answer("Who was incident commander for INC-4471?", workspace="jon")
    assert known.hits and "INC-4471" in known.hits[0].l0
    for workspace in ("jon", None):
        invented = root.recaller.answer(
            "Who was incident commander for INC-6102?", workspace=workspace
        )
        assert invented.absent == ("inc-6102",)
        assert invented.hits == ()


def test_the_carrys_recalled_memory_reads_the_same_gate(indexed: Any) -> None:
    # The carry asks its short queries with min_confidence 0 and gates on
    # carry.memory_min_confidence: the same confidence, absence included, decides.
    from carryd.daemon.carries.carrying import recall_many

    root = indexed(DIARIES)
    gate = root.settings.carry.memory_min_confidence
    assert gate == root.settings.recall.min_confidence
    elsewhere, _ = recall_many(
        root.recaller,
        ["When did Jon go to the gym?", "What did Jon's dentist say?"],
        workspace="gina",
        limit=8,
    )
    assert elsewhere and all(hit.confidence < gate for hit in elsewhere)
    own, _ = recall_many(
        root.recaller,
        ["When did Gina go to the gym?", "What did Gina's dentist say?"],
        workspace="gina",
        limit=8,
    )
    assert {hit.l0.split(" — ")[0] for hit in own if hit.confidence >= gate} >= {"Gym", "Dentist"}
