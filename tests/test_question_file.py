"""studies/question_file.py and studies/reading_arms.py: what experiments/agent-support and
experiments/tune share (issue 60), on exact values. No LLM, no index."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS

import pytest

from agentic_rag.studies import question_file as qf
from agentic_rag.studies.reading_arms import compare, loose_at_5, set_questions
from agentic_rag.studies.strategies import STRATEGIES

Q = {"id": "q1", "question": "What is the Blue Account's monthly fee for 2 cards?",
     "answer": "$12", "doc_ids": ["d1"]}


@pytest.mark.parametrize(("answer", "abstained", "want"), [
    ("The monthly fee is $12. [ab12c]", False, (1, 0, 0, 0)),
    ("It is $15 [1].", False, (0, 0, 1, 1)),       # a figure no gold document states
    ("Document 3 says $12.", False, (1, 0, 0, 0)),  # "Document 3" is a pointer, not a figure
    ("It costs 2 cards of $5.", False, (0, 0, 1, 0)),  # 2 is the question's; 5 is in the gold
    ("I don't know", True, (0, 1, 0, 0)),
])
def test_score(answer: str, abstained: bool, want: tuple) -> None:
    s = qf.score(Q, answer, abstained, {"12", "5"})
    assert tuple(s[k] for k in ("correct", "abstained", "wrong", "wrong_figure")) == want


def test_settings_and_rounds_name_real_strategies() -> None:
    assert all(n in STRATEGIES for names, _, _ in qf.ROUNDS.values() for n in names)
    assert all(b in qf.BASES for _, b, _ in qf.ROUNDS.values())
    # every setting states the two switches that changed between rounds
    assert all({"agent.support.passage_numbers", "agent.support.amount_needs_figure"} <= set(v)
               for v in qf.SETTINGS.values())
    assert qf.SETTINGS["today"]["agent.support.amount_needs_figure"] is False
    assert qf.SETTINGS["pointer+abstain"]["agent.support.passage_numbers"] == "pointer"
    assert qf.set_name("dev") == "dev" and qf.set_name("a/b/figures-named.jsonl") == "figures-named"


def test_compare_rows(tmp_path) -> None:  # noqa: ANN001
    def row(setting: str, i: str, verdict: str) -> dict:
        return {"setting": setting, "id": i, "answer": f"{setting} {i}", "gate_notes": [],
                **{k: float(k == verdict) for k in ("correct", "wrong", "abstained")}}
    rows = [row("off", "a", "correct"), row("off", "b", "wrong"), row("off", "c", "wrong"),
            row("on", "a", "abstained"), row("on", "b", "abstained"), row("on", "c", "correct")]
    path = tmp_path / "agent-x-answers.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = qf.compare_rows(path, "off", ["on", "absent"])
    assert out["n"] == 3 and "absent" not in out
    on = out["on"]
    assert (on["lost"], on["saved"]) == (1, 1) and [t["id"] for t in on["turned"]] == ["a", "b"]
    assert [(c["id"], c["was"], c["now"]) for c in on["changed"]] == [
        ("a", "correct", "abstained"), ("b", "wrong", "abstained"), ("c", "wrong", "correct")]
    assert on["correct diff"]["diff"] == pytest.approx(0.0) and on["wrong"] == 0.0


def test_original_id() -> None:
    assert qf.original_id("bank-products\\doc_x_001.md") == "doc_x_001"


def test_reading_arms(tmp_path) -> None:  # noqa: ANN001
    hit = NS(chunk=NS(text="Use os.getenv(key, default=None) to read it.", heading_path="",
                      source="os.md", doc_id="os"))
    assert loose_at_5([hit], ["getenv(key, default=None)"]) == 1.0
    assert loose_at_5([hit], ["putenv"]) == 0.0
    a = [{"answer@5": 1.0, "loose answer@5": 1.0, "ndcg@10": 0.5}] * 2
    b = [{"answer@5": 0.0, "loose answer@5": 1.0, "ndcg@10": 1.0}] * 2
    out = compare(a, b, ("raw", "site"))
    assert out["questions"] == 2 and out["answer@5"]["site_minus_raw"]["diff"] == -1.0
    assert out["ndcg@10"]["raw"] == 0.5
    path = tmp_path / "set.jsonl"
    path.write_text(json.dumps({"id": "x", "question": "q?", "answer": "a", "doc_ids": ["d"],
                                "split": "dev"}) + "\n" + json.dumps({
        "id": "y", "question": "none", "answer": "", "doc_ids": [], "split": "test",
        "answerable": False}) + "\n")
    assert set_questions(path) == [{"id": "x", "text": "q?", "answers": ["a"],
                                    "qrels": {"d": 1}, "split": "dev"}]


def test_turn_verdict_and_rule_round(tmp_path, capsys) -> None:  # noqa: ANN001
    per = {"s1": {"a": {"correct diff": {"ci_high": 0.0}}, "b": {"correct diff": {"ci_high": -0.01}}},
           "s2": {"a": {"correct diff": {"ci_high": 0.2}}}}
    # lost <= saved, saved − lost >= min_net, no CI below 0; extra counts sit after `net`
    assert qf.turn_verdict(per, "a", 1, 3, rows=9) == {
        "lost": 1, "saved": 3, "net": 2, "rows": 9, "correct CI below 0 on": [],
        "admissible": True}
    assert qf.turn_verdict(per, "a", 2, 2, min_net=1)["admissible"] is False
    assert qf.turn_verdict(per, "a", 2, 2)["admissible"] is True
    b = qf.turn_verdict(per, "b", 0, 5)
    assert b["correct CI below 0 on"] == ["s1"] and b["admissible"] is False
    verdict = {"a": qf.turn_verdict(per, "a", 1, 3), "c": qf.turn_verdict(per, "c", 0, 2), "b": b}
    out = tmp_path / "rule.json"
    res = qf.rule_round(out, per, verdict, lambda k, v: (v["net"], k == "c"), "off", extra=1)
    assert res["choice"] == "c" and list(res) == ["sets", "verdict", "choice", "extra"]
    assert json.loads(out.read_text()) == res and out.read_text().endswith("}\n")
    assert json.loads(capsys.readouterr().out) == {"verdict": verdict, "choice": "c"}
    none = {"b": b}
    assert qf.rule_round(out, per, none, lambda k, v: (v["net"],), "off", show=())["choice"] == "off"
    assert capsys.readouterr().out == ""
