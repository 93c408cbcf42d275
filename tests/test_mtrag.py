"""The MTRAG loader: the committed files' counts, the split by conversation, the human rewrite
join, the query modes, and bad input (an unknown speaker, an empty turn, a qrels id not in the
corpus) refused with the file and the line."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from agentic_rag.datasets.base import DatasetError
from agentic_rag.datasets.mtrag import (
    COLLECTIONS,
    QRELS_FILE,
    TASKS_FILE,
    TURNS_FILE,
    load_mtrag,
    load_mtrag_ratings,
)


def test_committed_counts() -> None:
    m = load_mtrag()
    s = m.stats()
    assert (s["tasks"], s["conversations"], s["qrels tasks"], s["qrels"]) == (507, 507, 332, 851)
    assert s["passages"] == {"clapnq": 312, "ibmcloud": 248, "fiqa": 157, "govt": 435}
    assert sum(s["passages"].values()) == 1152
    count = lambda f: {v: sum(getattr(t, f) == v for t in m.tasks)  # noqa: E731
                       for v in {getattr(t, f) for t in m.tasks}}
    assert count("collection") == {"govt": 157, "clapnq": 142, "ibmcloud": 131, "fiqa": 77}
    assert count("answerability") == {"ANSWERABLE": 285, "UNANSWERABLE": 97,
                                      "UNDERSPECIFIED": 78, "PARTIAL": 47}
    assert count("multi_turn") == {"Follow-up": 330, "Clarification": 74, "N/A": 103}
    assert all(t.turns[-1].speaker == "user" and t.question for t in m.tasks)
    assert load_mtrag() is m  # cached


def test_split_by_conversation_and_dataset() -> None:
    m = load_mtrag()
    dev, test = m.split("dev"), m.split("test")
    assert (len(dev.tasks), len(test.tasks)) == (94, 413)
    assert not {t.conversation_id for t in dev.tasks} & {t.conversation_id for t in test.tasks}
    ds = m.dataset("last_turn")
    assert ds.stats() == {"documents": 1152, "queries": 332, "qrels": 851}
    assert {len(ds.split("dev").queries), len(ds.split("test").queries)} == {67, 265}
    known = {d.id for d in ds.corpus}
    assert all(d in known for rel in ds.qrels.values() for d in rel)


def test_query_modes_and_rewrite_join() -> None:
    m = load_mtrag()
    joined = [t for t in m.tasks if t.rewrite is not None]
    assert len(joined) == 15  # MTRAG-UN re-issued the ids: joined by the user turns' text
    t = next(t for t in joined if t.id.startswith("18ef2605"))
    assert t.rewrite_source == "535ebd306304982e4e49cc989ce5b10b<::>7"
    assert t.query("rewrite").startswith("What do you think about the current EV battery")
    assert t.query("last_turn") == t.question
    conv = t.query("conversation").split("\n")
    assert conv[-1] == t.question and len(conv) == sum(x.speaker == "user" for x in t.turns)
    assert len(m.dataset("rewrite", with_qrels_only=False).queries) == 15
    with pytest.raises(ValueError, match="query mode"):
        t.query("nope")  # type: ignore[arg-type]


def test_ratings() -> None:
    r = load_mtrag_ratings()
    assert len(r) == 477 and len({x.task_id for x in r}) == 159
    assert sum(len(x.ratings["faithfulness"]) == 3 for x in r) == 465
    assert {x.model_id for x in r} == {"reference", "llama-3.1-405b-instruct", "gpt-4o"}


def _write(root: Path, rel: str, lines: list[str]) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(p, "wt", encoding="utf-8") as f:
        f.write("".join(line + "\n" for line in lines))
    return p


def _task(tid: str, turns: list[dict], doc: str = "d1") -> str:
    return json.dumps({"task_id": tid, "conversation_id": tid.split("<::>")[0], "turn": "1",
                       "Collection": "fiqa", "input": turns,
                       "targets": [{"speaker": "agent", "text": "an answer"}],
                       "contexts": [{"document_id": doc, "text": "a passage"}],
                       "answerability": ["ANSWERABLE"], "Multi-Turn": ["N/A"],
                       "Question Type": ["Factoid"]})


def _tiny(root: Path, second_turns: list[dict], qrels_doc: str = "d1") -> Path:
    """A folder laid out like datasets/mtrag/ with two tasks; the second one's turns given."""
    ok = [{"speaker": "user", "text": "how do I pay cash?"}]
    tasks = _write(root, TASKS_FILE, [_task("a<::>1", ok), _task("b<::>1", second_turns)])
    for stem in COLLECTIONS.values():
        rows = ["query-id\tcorpus-id\tscore"] + (
            [f"a<::>1\t{qrels_doc}\t1"] if stem == "fiqa" else [])
        _write(root, QRELS_FILE.format(stem=stem), rows)
        for kind in ("questions", "rewrite"):
            _write(root, TURNS_FILE.format(stem=stem, kind=kind), [])
    return tasks


def test_tiny_folder_loads(tmp_path: Path) -> None:
    _tiny(tmp_path, [{"speaker": "user", "text": "hi"}, {"speaker": "agent", "text": "hello"},
                     {"speaker": "user", "text": "and?"}])
    m = load_mtrag(tmp_path)
    assert m.stats()["tasks"] == 2 and m.qrels == {"a<::>1": {"d1": 1}}
    assert m.tasks[1].query("conversation") == "hi\nand?"


def test_unknown_speaker_names_file_and_line(tmp_path: Path) -> None:
    tasks = _tiny(tmp_path, [{"speaker": "bot", "text": "hi"}, {"speaker": "user", "text": "x"}])
    with pytest.raises(DatasetError, match=rf"{re.escape(str(tasks))}:2 .*turn 1: speaker 'bot'"):
        load_mtrag(tmp_path)


def test_empty_turn_names_file_and_line(tmp_path: Path) -> None:
    tasks = _tiny(tmp_path, [{"speaker": "user", "text": "  "}])
    with pytest.raises(DatasetError, match=rf"{re.escape(str(tasks))}:2 .*turn 1 \(user\) is empty"):
        load_mtrag(tmp_path)


def test_qrels_id_not_in_corpus_names_file_and_line(tmp_path: Path) -> None:
    _tiny(tmp_path, [{"speaker": "user", "text": "x"}], qrels_doc="d9")
    qrels = tmp_path / QRELS_FILE.format(stem="fiqa")
    with pytest.raises(DatasetError, match=rf"{re.escape(str(qrels))}:2: corpus-id 'd9' is not in the fiqa"):
        load_mtrag(tmp_path)
