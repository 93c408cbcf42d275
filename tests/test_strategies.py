"""Retrieval strategies beyond the seed: field matching on titles and headings (`title`
retriever) and small-to-big (`fusion.small_to_big`), each a config switch."""

from __future__ import annotations

import json

import pytest

from agentic_rag.config import RAGConfig
from agentic_rag.config_base import ConfigError
from agentic_rag.documents import Chunk, Document, GoldSpan, Hit
from agentic_rag.evaluation.containment import answer_at_k
from agentic_rag.evaluation.retrieval import span_metrics
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.store.index import AgenticIndex
from agentic_rag.store.lexical import LexicalIndex, field_text
from agentic_rag.store.sections import SectionMap, expand_hits, served_spans, stitch

from .fakes import HashingEmbedder

DOC = "0123456789" * 10  # offsets are easy to read: DOC[s:e]


def _chunk(s: int, e: int, path: str = "A", ctype: str = "prose", doc: str = "d") -> Chunk:
    return Chunk(id=f"{doc}#{ctype}@{s}-{e}", doc_id=doc, text=DOC[s:e], chunk_type=ctype,
                 heading_path=path, start_char=s, end_char=e, token_count=e - s)


def _hit(c: Chunk, rank: int, score: float = 1.0) -> Hit:
    return Hit(chunk=c, score=score, rank=rank, retriever="dense+bm25")


# ---- field matching --------------------------------------------------------------------
def test_field_text_is_title_heading_and_api_names():
    c = Chunk(id="x", doc_id="pydocs/library/functools.rst", chunk_type="prose",
              text="Some prose.\n\n.. function:: reduce(function, iterable[, initializer])\n\n"
                   "   Apply function of two arguments cumulatively.",
              heading_path=":mod:`functools` --- Higher-order functions",
              start_char=0, end_char=10, token_count=5,
              metadata={"title": "Blue Account"})
    assert field_text(c).split("\n") == [
        "functools", "Blue Account", ":mod:`functools` --- Higher-order functions",
        "reduce(function, iterable[, initializer])"]
    # the title is not repeated when the heading path starts with it; body words never count
    c2 = c.model_copy(update={"metadata": {"title": ":mod:`functools`"}, "text": "cumulatively",
                              "doc_id": "p00e93f5ba251"})
    assert field_text(c2) == ":mod:`functools` --- Higher-order functions"


def test_doc_name_is_the_id_as_words_and_hashes_give_none():
    from agentic_rag.store.lexical import doc_name

    assert doc_name("doc_checking_accounts_blue_account_003") == "checking accounts blue account"
    assert doc_name("pydocs/library/os.path.rst") == "os path"
    assert doc_name("p00e93f5ba251") == "" and doc_name("docs/install.md") == "install"
    # every format's extension off; a landing page named by its folder (77 Hugo `_index.md`
    # pages, 13 Antora `index.adoc` pages once shared the name "index")
    assert doc_name("site/guide/setup.adoc") == "setup" and doc_name("d/x/notes.ipynb") == "notes"
    assert doc_name("hugo/content/en/functions/_index.md") == "functions"
    assert doc_name("asciidoctor/docs/modules/api/pages/index.adoc") == "api"
    assert doc_name("pydocs/library/index.rst") == "library" and doc_name("docs/index.md") == "index"
    assert doc_name("hugo/functions/compare/Default.md") == "Default"
    assert doc_name("site/_sources/library/functools.rst.txt") == "functools"


def test_field_index_ranks_by_title_not_body():
    # the body of "World Blue" mentions the Blue Account's fee words many times; the title
    # field of the Blue Account names it: field matching ranks it first, body BM25 does not
    blue = Chunk(id="blue", doc_id="blue", chunk_type="prose", heading_path="Fees",
                 text="The monthly fee is $12.", start_char=0, end_char=23, token_count=8,
                 metadata={"title": "Blue Account"})
    world = Chunk(id="world", doc_id="world", chunk_type="prose", heading_path="Fees",
                  text="Unlike the Blue Account, the World Blue monthly maintenance fee of the "
                       "account is $25; account fee, monthly fee.",
                  start_char=0, end_char=80, token_count=25,
                  metadata={"title": "World Blue Premium"})
    other = Chunk(id="o", doc_id="o", chunk_type="prose", heading_path="Rates", text="x",
                  start_char=0, end_char=1, token_count=1, metadata={"title": "Savings"})
    chunks = [blue, world, other]
    body = LexicalIndex().build(chunks, [c.index_text() for c in chunks])
    assert body.search("Blue Account monthly maintenance fee", 3)[0].chunk.id == "world"
    fields = body.fields()
    hits = fields.search("Blue Account monthly maintenance fee", 3)
    assert [h.chunk.id for h in hits][:1] == ["blue"] and hits[0].retriever == "title"
    assert "o" not in [h.chunk.id for h in hits]  # no title word matches: not ranked


def test_field_index_with_no_indexable_title_matches_nothing():
    c = Chunk(id="p", doc_id="p00e93f5ba251", chunk_type="prose", text="Arthur's Magazine was ...",
              start_char=0, end_char=5, token_count=5)
    idx = LexicalIndex().build([c], [c.index_text()]).fields()
    assert field_text(c) == "" and idx.search("Arthur's Magazine", 5) == []


def test_title_retriever_in_the_pipeline_fuses_with_its_own_weight(tmp_path):
    docs = [Document(id="blue.md", title="Blue Account",
                     text="# Fees\n\nThe monthly fee is $12.\n"),
            Document(id="world.md", title="World Blue Premium",
                     text="# Fees\n\nUnlike the Blue Account, the World Blue monthly fee of the "
                          "account is $25; account fee, monthly fee, Blue Account fee.\n")]
    cfg = RAGConfig(home=str(tmp_path)).with_overrides(
        {"gate.mode": "static", "fusion.retrievers": ["bm25", "title"],
         "fusion.weights": {"bm25": 1.0, "title": 0.0}})
    idx = AgenticIndex(cfg, embedder=HashingEmbedder())
    idx.add_documents(docs)
    q = "Blue Account monthly fee"
    _, off = Pipeline(cfg, index=idx).retrieve(q, k=2)
    assert off.hits[0].chunk.doc_id == "world.md"  # title weight 0: body BM25 decides
    on = cfg.with_overrides({"fusion.weights": {"bm25": 1.0, "title": 2.0}})
    _, res = Pipeline(on, index=idx).retrieve(q, k=2)
    assert res.hits[0].chunk.doc_id == "blue.md" and res.hits[0].retriever == "bm25+title"


def test_unknown_retriever_and_bad_parent_tokens_are_config_errors():
    with pytest.raises(ConfigError, match="fusion.retrievers"):
        RAGConfig().with_overrides({"fusion.retrievers": ["dense", "titles"]})
    with pytest.raises(ConfigError, match="fusion.parent_tokens"):
        RAGConfig().with_overrides({"fusion.parent_tokens": 4})
    with pytest.raises(ConfigError, match="fusion.small_to_big"):
        RAGConfig().with_overrides({"fusion.small_to_big": "doc"})


# ---- small-to-big ----------------------------------------------------------------------
def test_stitch_keeps_overlaps_once_and_records_spans():
    a, b, c = _chunk(0, 20), _chunk(15, 30), _chunk(40, 50)
    text, spans = stitch([a, b, c])
    assert text == DOC[0:30] + "\n\n" + DOC[40:50]
    assert spans == [(0, 30), (40, 50)]


def test_expand_grows_within_the_section_and_the_budget():
    sec = [_chunk(0, 10), _chunk(10, 20), _chunk(20, 30), _chunk(30, 40)]
    other = _chunk(40, 50, path="B")  # another section: never a neighbour
    smap = SectionMap(sec + [other])
    out = expand_hits([_hit(sec[1], 1)], smap, max_tokens=30)
    # next chunk first (20-30), then the one before (0-10): 30 tokens, the budget
    assert len(out) == 1
    p = out[0].chunk
    assert (p.start_char, p.end_char, p.text) == (0, 30, DOC[0:30])
    assert p.metadata["child_id"] == sec[1].id and served_spans(p) == [(0, 30)]
    assert p.heading_path == "A" and out[0].score == 1.0 and out[0].rank == 1
    # a budget below two chunks leaves the hit as it is (same chunk id)
    assert expand_hits([_hit(sec[1], 1)], smap, max_tokens=15)[0].chunk == sec[1]
    # the last chunk of a section grows backwards only, never into section B
    last = expand_hits([_hit(sec[3], 1)], smap, max_tokens=100)[0].chunk
    assert (last.start_char, last.end_char) == (0, 40)


def test_expand_serves_each_chunk_once_and_keeps_order():
    sec = [_chunk(0, 10), _chunk(10, 20), _chunk(20, 30), _chunk(30, 40), _chunk(40, 50)]
    row = _chunk(60, 70, ctype="table_row")
    smap = SectionMap(sec + [row])
    hits = [_hit(sec[0], 1, 0.9), _hit(sec[1], 2, 0.8), _hit(row, 3, 0.7), _hit(sec[3], 4, 0.6)]
    out = expand_hits(hits, smap, max_tokens=20)
    # sec[0] takes sec[1]; sec[1]'s hit is absorbed; the row is served alone; sec[3] takes
    # sec[4] (the next chunk first), which fills its 20-token budget
    assert [h.chunk.id for h in out] == ["d#section@0-20", row.id, "d#section@30-50"]
    assert [h.rank for h in out] == [1, 2, 3] and [h.score for h in out] == [0.9, 0.7, 0.6]


def test_span_metrics_count_the_parent_spans_not_the_gaps():
    a, b = _chunk(0, 10), _chunk(30, 40)
    smap = SectionMap([a, b])
    parent = expand_hits([_hit(a, 1)], smap, max_tokens=50)[0]
    assert (parent.chunk.start_char, parent.chunk.end_char) == (0, 40)
    gold = [GoldSpan(doc_id="d", start=10, end=30)]  # exactly the gap
    m = span_metrics([parent], gold, 5)
    assert m["span_recall@5"] == 0.0 and m["span_precision@5"] == 0.0
    gold = [GoldSpan(doc_id="d", start=0, end=40)]
    m = span_metrics([parent], gold, 5)
    assert m["span_recall@5"] == pytest.approx(20 / 40) and m["span_precision@5"] == 1.0


def test_small_to_big_in_the_pipeline_serves_the_section(tmp_path):
    paras = [f"Paragraph {i} talks about topic{i} in some detail here." for i in range(6)]
    doc = Document(id="guide.md", title="Guide",
                   text="# Setup\n\n" + "\n\n".join(paras) + "\n\n# Other\n\nUnrelated text.\n")
    cfg = RAGConfig(home=str(tmp_path)).with_overrides(
        {"gate.mode": "static", "chunking.max_tokens": 16, "chunking.overlap_tokens": 0,
         "chunking.merge_small_lists": False})
    idx = AgenticIndex(cfg, embedder=HashingEmbedder())
    idx.add_documents([doc])
    _, small = Pipeline(cfg, index=idx).retrieve("topic3", k=3)
    assert "topic3" in small.hits[0].chunk.text and "topic2" not in small.hits[0].chunk.text
    big = cfg.with_overrides({"fusion.small_to_big": "section", "fusion.parent_tokens": 40})
    _, res = Pipeline(big, index=idx).retrieve("topic3", k=3)
    top = res.hits[0].chunk
    assert "topic3" in top.text and "topic4" in top.text and "Unrelated" not in top.text
    assert top.metadata["child_id"] == small.hits[0].chunk.id
    assert top.token_count <= 40
    assert doc.text[top.start_char:top.end_char].count("Paragraph") >= 2
    assert answer_at_k(res.hits, ["topic4 in some detail"], 1) == 1.0
    assert answer_at_k(small.hits, ["topic4 in some detail"], 1) == 0.0


# ---- the python-library-qa set ---------------------------------------------------------
def test_find_answer_ignores_line_wrapping_only():
    from agentic_rag.datasets.qa import find_answer

    text = "It is\n   created with level :const:`WARNING`. Done"
    assert find_answer(text, "created with level :const:`WARNING`") == (9, 44)
    assert find_answer(text, "is created") is not None
    assert find_answer(text, "created with level WARNING") is None  # markup is verbatim
    assert find_answer(text, "   ") is None


def test_library_qa_loads_with_its_split_and_rejects_a_wrong_answer(tmp_path):
    from agentic_rag.datasets.base import DatasetError, DatasetMissing
    from agentic_rag.datasets.qa import LIBRARY_QA, python_library_qa

    try:
        ds = python_library_qa()
    except DatasetMissing as exc:
        pytest.skip(str(exc))
    assert len(ds.queries) >= 60 and len(ds.split("dev").queries) == len(ds.split("test").queries)
    q = ds.queries[0]
    span = ds.spans[q.id][0]
    doc = next(d for d in ds.corpus if d.id == span.doc_id)
    assert " ".join(doc.text[span.start:span.end].split()) == q.answers[0]
    bad = tmp_path / "q.jsonl"
    row = json.loads(LIBRARY_QA.read_text().splitlines()[0])
    bad.write_text(json.dumps({**row, "answer": "maxsize=129"}) + "\n")
    with pytest.raises(DatasetError, match="maxsize=129.*not found in pydocs/library/functools"):
        python_library_qa(bad)


# ---- the comparison ----------------------------------------------------------------------
def test_strategy_spec_variants_are_configs_and_the_default_is_the_baseline():
    from agentic_rag.experiments.spec import SweepSpec
    from agentic_rag.studies.strategies import STRATEGIES, strategy_spec

    spec = strategy_spec("tau2-banking", "test")
    configs = spec.configs()
    assert len(configs) == len(STRATEGIES) and configs[0][0] == "base"
    assert configs[0][2] == RAGConfig()
    s2b = dict(zip(STRATEGIES, configs))["small-to-big 128→256"][2]
    assert (s2b.chunking.max_tokens, s2b.fusion.small_to_big) == (128, "section")
    assert spec.dataset.split == "test" and spec.k == 10
    with pytest.raises(ValueError, match="variant"):
        SweepSpec(name="x", variants=[{"fusion.retrievers": ["nope"]}])
    with pytest.raises(ValueError, match="baseline"):
        strategy_spec("python-faq", "dev", ("title 0.5",))


def test_choose_needs_no_loss_anywhere_and_a_gain():
    import pandas as pd

    from agentic_rag.studies.strategies import choose

    def table(default, title, small, comps):
        return pd.DataFrame({"strategy": ["default", "title 0.5", "chunks 128", "dense", "bm25"],
                             "ndcg@10": [default, title, small, *comps],
                             "answer@5": [0.5, 0.5, 0.5, 0.4, 0.4]})

    tables = {"a": table(0.70, 0.75, 0.71, (0.6, 0.65)),
              "b": table(0.50, 0.50, 0.49, (0.45, 0.40))}  # chunks 128 loses on b
    got = choose(tables, candidates=("title 0.5", "chunks 128")).set_index("strategy")
    assert bool(got.loc["title 0.5", "no_loss"]) and bool(got.loc["title 0.5", "gain"])
    assert got.loc["title 0.5", "worst_margin_vs_components"] == pytest.approx(0.05)
    assert not bool(got.loc["chunks 128", "no_loss"])
    assert got.loc["chunks 128", "worst_diff_vs_default"] == pytest.approx(-0.01)
    # a gain on answer@5 alone (longer hits serve more text) is not a reason to switch
    longer = {"a": table(0.70, 0.70, 0.70, (0.6, 0.65)).assign(
        **{"answer@5": [0.5, 0.6, 0.5, 0.4, 0.4]})}
    got = choose(longer, candidates=("title 0.5",)).set_index("strategy")
    assert bool(got.loc["title 0.5", "no_loss"]) and not bool(got.loc["title 0.5", "gain"])


def test_tuner_replays_small_to_big_and_the_title_field_without_new_dense_searches(tmp_path,
                                                                                    monkeypatch):
    from agentic_rag.datasets.base import Dataset, Query
    from agentic_rag.experiments.replay import Tuner

    paras = [f"Paragraph {i} talks about topic{i} in some detail here." for i in range(6)]
    docs = [Document(id=f"guide{j}.md", title=f"Guide {j}",
                     text="# Setup\n\n" + "\n\n".join(p + f" g{j}" for p in paras) + "\n")
            for j in range(3)]
    ds = Dataset(name="tiny", corpus=docs, queries=[Query(id=f"q{j}", text=f"topic3 g{j}")
                                                   for j in range(3)],
                 qrels={f"q{j}": {f"guide{j}.md": 1} for j in range(3)})
    base = RAGConfig().with_overrides({"chunking.max_tokens": 16, "chunking.overlap_tokens": 0})
    emb = HashingEmbedder()
    monkeypatch.setattr("agentic_rag.experiments.plan.make_embedder", lambda *a, **k: emb)
    t = Tuner(ds, n=3, split="all", chunk_sizes=(16,), base=base, cache_dir=tmp_path,
              log=lambda *a: None)
    plain = t.score(mode="static", retrievers=("dense", "bm25"))
    grown = t.score(mode="static", retrievers=("dense", "bm25"), small_to_big="section",
                    parent_tokens=40)
    assert grown["new_searches"] == 0 and plain["ndcg@10"] == grown["ndcg@10"]
    titled = t.score(mode="static", retrievers=("dense", "bm25", "title"), weights=None)
    assert titled["new_searches"] == 3  # one title-field search per query, nothing else
