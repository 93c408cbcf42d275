"""`tune` (issue 38): a folder to a chosen, servable config; the rule; the search space chosen
from the documents; resume after a cap; clear errors that cost no LLM call. The generator
is a scripted OpenAI client behind the real client and reply cache; the embedder hashes words
(tests/fakes.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace as NS

import pandas as pd
import pytest

from agentic_rag.config import RAGConfig
from agentic_rag.ingest.readers import FORMATS
from agentic_rag.llm.cache import ChatCache
from agentic_rag.llm.calls import LLMCallCap
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.studies.tune import tune
from agentic_rag.studies.tune_run import TuneRun, read_folder
from agentic_rag.studies.tune_space import TuneError, choose_by_rule, profile, rule_table, search_space

from .fakes import HashingEmbedder

TOPICS = ["harbor", "meadow", "copper", "lantern", "orchid", "falcon", "granite", "willow"]


def _folder(tmp_path, n_docs: int = 8):  # noqa: ANN001, ANN202
    folder = tmp_path / "my-docs"
    folder.mkdir()
    for i, t in enumerate(TOPICS[:n_docs]):
        (folder / f"{t}.md").write_text(
            f"# {t.title()} client\n\n## Timeouts\n\nThe `{t}.connect` call of the {t} client "
            f"waits {10 + i} seconds before it gives up, and retries {3 + i} times with a "
            f"{t}-specific backoff that doubles each attempt.\n\n## Limits\n\nEach {t} "
            f"account may open {100 + i} sessions per day; the `{t}_max_rows` option caps a "
            f"query at {500 + i} rows unless the {t} administrator raises it.\n")
    return folder


class _Completions:
    """The OpenAI client's `chat.completions`: a question for the span it is given (with
    words of the passage's topic, so no two are alike), that span again from the passage
    (the round trip), "I don't know" closed-book."""

    def __init__(self) -> None:
        self.calls = 0
        self.spans: dict[str, str] = {}  # question → the span it was written for

    def create(self, **kw):  # noqa: ANN003, ANN202
        self.calls += 1
        user = kw["messages"][-1]["content"]
        m = re.search(r"ANSWER: (.+)$", user)
        if m:
            topic = re.search(r"\[(\w+)", user).group(1)
            section = "limits" if "Limits" in user.split("\n")[0] else "timeouts"
            question = f"For the {topic} client {section}, which {topic} value applies?"
            self.spans[question] = m.group(1)
            content = json.dumps({"question": question})
        elif kw["messages"][0]["content"].startswith("Answer the question from the passage "):
            content = self.spans.get(user.rsplit("Question: ", 1)[-1], "I don't know")
        else:
            content = "I don't know"
        return NS(choices=[NS(message=NS(content=content, tool_calls=[]), finish_reason="stop")],
                  usage=NS(prompt_tokens=50, completion_tokens=10))


def _chat(tmp_path, completions):  # noqa: ANN001, ANN202
    cfg = RAGConfig().llm.model_copy(update={"base_url": "http://scripted.invalid/v1"})
    return OpenAIChatModel(cfg, client=NS(chat=NS(completions=completions)),
                           cache=ChatCache(tmp_path / "llm.sqlite"), sleep=lambda s: None)


@pytest.fixture
def fake_embedder(monkeypatch):  # noqa: ANN001, ANN201
    emb = HashingEmbedder()
    monkeypatch.setattr("agentic_rag.experiments.plan.make_embedder", lambda *a, **k: emb)
    return emb


def _tune(tmp_path, folder, chat, **kw):  # noqa: ANN001, ANN003, ANN202
    base = RAGConfig().with_overrides({"home": str(tmp_path / "home")})
    args = {"n": 12, "out": tmp_path / "tuned", "config": base, "chat": chat,
            "log": lambda *a: None, "min_tokens": 5, **kw}
    return tune(folder, **args)


def test_tune_writes_a_servable_config_a_report_and_continues_for_free(tmp_path, fake_embedder):
    folder = _folder(tmp_path)
    completions = _Completions()
    res = _tune(tmp_path, folder, _chat(tmp_path, completions))
    out = tmp_path / "tuned"
    for name in ("best-config.yaml", "report.md", "tune.png", "questions.jsonl",
                 "questions.dev.jsonl", "questions.test.jsonl", "tune.json"):
        assert (out / name).exists(), name
    loaded = RAGConfig.load(out / "best-config.yaml")  # the provenance block is ignored
    assert loaded == res.config
    prov = json.loads((out / "tune.json").read_text())
    assert res.chosen in prov["search_space"] and prov["chosen"] == res.chosen
    # the served index is the chosen config's, built by the sweep
    assert (tmp_path / "home" / "tune-cache").exists() and "tune-cache" in res.config.home
    assert "agentic-rag serve --config" in res.report and "Rule `noninferiority`" in res.report
    # issue 63: δ, each candidate's verdict with its reason, the acceptance rate beside it
    assert "δ (the margin" in res.report and "acceptance 12/" in res.report
    assert "| baseline |" in res.report and prov["rule_name"] == "noninferiority"
    assert all(("eligible: " in line) for line in res.report.splitlines()
               if line.startswith("| ") and "| baseline |" not in line
               and "context tokens" not in line and "---" not in line
               and line.count("|") == 6)
    # every kept answer is a verbatim span of at most 8 words, from its document
    rows = [json.loads(x) for x in (out / "questions.jsonl").read_text().splitlines()]
    assert len(rows) == 12 and {r["split"] for r in rows} == {"dev", "test"}
    for r in rows:
        sp = r["spans"][0]
        text = (folder / sp["doc_id"].split("/", 1)[1]).read_text()
        assert text[sp["start"]:sp["end"]] == r["answer"] and len(r["answer"].split()) <= 8
    # the test table holds the default first, scored on the test questions only
    assert list(res.summary["config"])[0] == "base"
    calls = completions.calls
    again = _tune(tmp_path, folder, _chat(tmp_path, completions))
    assert completions.calls == calls and again.chosen == res.chosen  # all cached


def test_a_cap_stops_cleanly_and_a_rerun_continues(tmp_path, fake_embedder):
    folder = _folder(tmp_path)
    completions = _Completions()
    with pytest.raises(LLMCallCap):
        _tune(tmp_path, folder, _chat(tmp_path, completions), max_llm_calls=5)
    assert completions.calls == 5 and not (tmp_path / "tuned" / "best-config.yaml").exists()
    res = _tune(tmp_path, folder, _chat(tmp_path, completions))
    assert res.paths["config"].exists()
    # the first five replies were read back, not asked again: a fresh run asks as many as
    # both together
    fresh = _Completions()
    (tmp_path / "x").mkdir()
    _tune(tmp_path / "x", folder, _chat(tmp_path / "x", fresh))
    assert completions.calls == fresh.calls


def test_fewer_questions_than_asked_are_said_with_the_reason(tmp_path, fake_embedder):
    class HalfRoundTrip(_Completions):  # the "limits" questions fail their round trip
        def create(self, **kw):  # noqa: ANN003, ANN202
            reply = super().create(**kw)
            if "limits, which" in kw["messages"][-1]["content"]:
                reply.choices[0].message.content = "I don't know"
            return reply

    lines: list[str] = []
    res = _tune(tmp_path, _folder(tmp_path), _chat(tmp_path, HalfRoundTrip()), log=lines.append)
    short = [x for x in lines if x.startswith("only ")]
    assert len(short) == 1, lines
    kept = len((tmp_path / "tuned" / "questions.jsonl").read_text().splitlines())
    assert short[0].startswith(f"only {kept} of --n 12 questions: every chunk with an answer "
                               "span was drawn") and "add documents" in short[0]
    assert 0 < kept < 12 and res.paths["config"].exists()
    # the draw cap counts the chunks without an answer span too (the committed Node.js run:
    # 210 drawn + 30 without a span = 240 = 3 x 40 / 0.5)
    summary = json.loads((Path(__file__).parents[1] / "experiments/tune/nodejs/"
                          "questions.summary.json").read_text())
    assert summary["drawn"] + summary["no_answer_span"] == 240
    assert "the draw cap (240 = 3 x --n / 0.5) was reached" in TuneRun._shortfall(
        NS(n=40), summary)


def test_bad_folders_are_named_before_any_llm_call(tmp_path, fake_embedder):
    completions = _Completions()
    chat = _chat(tmp_path, completions)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TuneError, match=f"no {re.escape(FORMATS)} documents"):
        _tune(tmp_path, empty, chat)
    with pytest.raises(TuneError, match="no such folder"):
        _tune(tmp_path, tmp_path / "missing", chat)
    folder = _folder(tmp_path)
    (folder / "broken.md").write_bytes(b"\xff\xfe\x00binary")
    (folder / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    with pytest.raises(TuneError, match=r"(?s)2 of 10 files .*broken\.md: looks like a "
                                        r"binary.*latin\.txt: not valid UTF-8"):
        _tune(tmp_path, folder, chat)
    (tmp_path / "s").mkdir()
    small = _folder(tmp_path / "s", 1)
    with pytest.raises(TuneError, match=r"at most \d+ questions .*fewer than --n 50"):
        _tune(tmp_path, small, chat, n=50)
    assert completions.calls == 0


def test_the_search_space_follows_the_documents_and_the_budget():
    flat = {"documents": 5, "chunks": 50, "sectioned_share": 0.0, "titled_share": 0.0,
            "code_share": 0.0, "mean_section_tokens": 0}
    assert set(search_space(flat)) == {"default", "chunks 128"}  # nothing to grow or match
    docs = {**flat, "sectioned_share": 0.9, "titled_share": 1.0, "code_share": 0.3,
            "mean_section_tokens": 90}
    quick = search_space(docs)
    assert list(quick)[0] == "default" and "small-to-big 128→256" in quick
    assert "title 0.5" in quick and "bm25 0.6" in quick and "chunks 128" not in quick
    standard = search_space(docs, "standard")
    assert set(quick) < set(standard) and "gate static" in standard
    assert not any("rerank" in k for k in search_space(docs, "thorough"))
    llm = search_space(docs, "quick", llm_strategies=True)
    assert "rerank pointwise 10" in llm and "hyde" not in llm
    with pytest.raises(TuneError, match="budget 'huge'"):
        search_space(docs, "huge")
    assert not any("named" in k for k in search_space(docs, "thorough"))
    products = {**docs, "shared_name_share": 0.9}
    assert search_space(products)["named scope off"] == {"fusion.named_scope": "off"}
    assert "named boost" in search_space(products, "standard")


def test_the_profile_counts_documents_sharing_a_name(banking):
    from agentic_rag.ingest.chunking import AgenticChunker

    docs = banking[:60]
    p = profile(docs, [c for d in docs for c in AgenticChunker().chunk(d)])
    assert p["shared_name_share"] > 0.9  # a product's pages _001 ... _012 share its name
    assert profile(docs[:1], [])["shared_name_share"] == 0.0


def _summary(rows):  # noqa: ANN001, ANN202
    out = []
    for nd, a5, ctx in rows:
        out.append({"n_queries": 20, "ndcg@10": nd, "answer@5": a5, "context_tokens_mean": ctx,
                    "latency_p50_ms": 1.0, "ndcg@10_diff_vs_base": nd - rows[0][0],
                    "answer@5_diff_vs_base": a5 - rows[0][1]})
    return pd.DataFrame(out)


def test_the_sign_rule_takes_no_loss_anywhere_and_the_best_worst_case():
    # the rule before issue 63, kept by name (`--rule sign`); the default rule's tests:
    # tests/test_tune_rule.py
    names = ["default", "big ndcg, loses answers", "small gain both", "tie", "bigger worst"]
    t = rule_table(_summary([(0.5, 0.6, 900), (0.8, 0.5, 900), (0.52, 0.62, 900),
                             (0.5, 0.6, 800), (0.55, 0.65, 1000)]), names, "sign")
    assert list(t["eligible"]) == [False, False, True, False, True]
    assert choose_by_rule(t) == "bigger worst"
    t = rule_table(_summary([(0.5, 0.6, 900), (0.8, 0.5, 900)]), names[:2], "sign")
    assert choose_by_rule(t) == "default"  # a loss on answer@5: the default is kept


def test_the_profile_reads_sections_titles_and_code(tmp_path):
    from agentic_rag.ingest.chunking import AgenticChunker

    docs = read_folder(_folder(tmp_path, 2))
    chunks = [c for d in docs for c in AgenticChunker().chunk(d)]
    p = profile(docs, chunks)
    assert p["documents"] == 2 and p["sectioned_share"] > 0.5 and p["titled_share"] == 1.0


def test_the_first_characters_of_a_hashed_paragraph_are_no_title():
    """HaluEval's paragraphs (hash ids) carry `title = text[:60]`: no title field is tried
    for them; a document with a name (its id) and a title still counts, even when its text
    starts with its title."""
    from agentic_rag.documents import Document
    from agentic_rag.ingest.chunking import AgenticChunker

    text = "Arthur's Magazine (1844-1846) was an American literary periodical published in Philadelphia."
    cut = [Document(id=f"{i}3f9a0c1d2e4b5a6", text=text, title=text[:60]) for i in range(3)]
    named = [Document(id=f"wiki/arthurs_magazine_{i}.md", text=text, title="Arthur's Magazine")
             for i in range(3)]
    for docs, share in ((cut, 0.0), (named, 1.0)):
        chunks = [c for d in docs for c in AgenticChunker().chunk(d)]
        p = profile(docs, chunks)
        assert p["titled_share"] == share
        assert ("title 0.5" in search_space(p)) is (share == 1.0)


def test_the_cli_runs_tune_and_prints_the_serve_line(tmp_path, fake_embedder, monkeypatch):
    from typer.testing import CliRunner

    from agentic_rag.cli.main import app

    completions = _Completions()
    monkeypatch.setattr("agentic_rag.llm.chat.make_chat_model",
                        lambda *a, **k: _chat(tmp_path, completions))
    folder = _folder(tmp_path)
    cfg = tmp_path / "c.yaml"
    RAGConfig().with_overrides({"home": str(tmp_path / "home"),
                                "llm.base_url": "http://scripted.invalid/v1"}).save(cfg)
    r = CliRunner().invoke(app, ["tune", str(folder), "--n", "12", "--out",
                                 str(tmp_path / "t"), "-c", str(cfg)])
    assert r.exit_code == 0, r.output
    assert f"agentic-rag serve --config {tmp_path / 't' / 'best-config.yaml'}" in r.output
    assert "expected: " in r.output and "12 LLM calls" not in r.output  # the estimate first
    assert r.output.index("expected: ") < r.output.index("questions kept of")
    # issue 63: --explain on the finished run, nothing rerun (no LLM call, no sweep)
    calls = completions.calls
    r = CliRunner().invoke(app, ["tune", "--explain", str(tmp_path / "t")])
    assert r.exit_code == 0, r.output
    assert "rule: noninferiority" in r.output and "δ: ndcg@10 0.02, answer@5 0.02" in r.output
    assert "baseline" in r.output and "chosen: " in r.output and completions.calls == calls
    prov = json.loads((tmp_path / "t" / "tune.json").read_text())
    for row in prov["dev_table"]:
        assert row["config"] in r.output
    r = CliRunner().invoke(app, ["tune", "--explain", str(tmp_path / "t"), "--rule", "sign"])
    assert r.exit_code == 0 and "rule: sign" in r.output
    r = CliRunner().invoke(app, ["tune", "--explain", str(tmp_path / "nowhere")])
    assert r.exit_code == 2 and "neither tune.json" in r.output
    r = CliRunner().invoke(app, ["tune", "--explain", str(tmp_path / "t"), str(folder)])
    assert r.exit_code == 2 and "give no FOLDER" in r.output
    r = CliRunner().invoke(app, ["tune", str(tmp_path / "nowhere"), "-c", str(cfg)])
    assert r.exit_code == 2 and "no such folder" in r.output
