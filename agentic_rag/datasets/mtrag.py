"""MTRAG: IBM's human multi-turn RAG conversations (Apache-2.0), committed under `datasets/mtrag/`.

Read offline from the gzipped files of IBM/mt-rag-benchmark (commit cc5b1d4; what was taken and
left out: `datasets/mtrag/README.md`):

- `mtragun-human/generation_tasks/reference.jsonl.gz`: 507 tasks of MTRAG-UN, one per
  conversation, each the history up to a final user turn, the reference answer, the reference
  passages, answerability, multi-turn type and question types (`MtragTask`).
- `mtragun-human/retrieval_tasks/qrels/<stem>.tsv.gz`: the qrels of the 332 ANSWERABLE and
  PARTIAL tasks (query-id = task id, corpus-id = a reference passage).
- `mtrag-human/retrieval_tasks/<stem>/<stem>_{questions,lastturn,rewrite}.jsonl.gz`: MTRAG's
  (not MTRAG-UN's) 777 retrieval turns, each as written with its earlier user turns, alone, and
  rewritten by a person into a standalone question. MTRAG-UN re-issued every conversation and task
  id, so no id joins the two; a task gets the human rewrite where its user turns, in order, equal
  those of an MTRAG turn of the same collection (case and spacing aside): 15 of 507.
- `mtrag-human/evaluations/reference_subset_with_human_evaluations.json.gz`: 159 MTRAG tasks × 3
  responses, each rated 1-4 by (mostly) three people (`load_mtrag_ratings`).

The corpus is the pooled reference passages of each collection (1,152 passages): the full
corpora (zips) are not in the public snapshot, so a retrieval figure on it is over a small,
easy corpus of other tasks' gold passages, and must say so. The split is by conversation: a
hash of the conversation id, 20 % dev (`base._bucket`, like every hash-split set here).

A conversation file with an unknown speaker or an empty turn, and a qrels row whose passage
is not in its collection's corpus, are `DatasetError`s naming the file and the line.

    from agentic_rag.datasets.mtrag import load_mtrag
    m = load_mtrag()                        # cached per data folder
    t = m.tasks[0]; t.question, t.query("rewrite"), m.qrels[t.id]
    m.split("dev").dataset("conversation")  # a `Dataset` for the runner
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from agentic_rag.datasets.base import Dataset, DatasetError, DatasetMissing, Query, _bucket
from agentic_rag.documents import Document
from agentic_rag.jsonl import JsonlError, iter_records

MTRAG_DIR = Path(__file__).resolve().parents[2] / "datasets" / "mtrag"
TASKS_FILE = "mtragun-human/generation_tasks/reference.jsonl.gz"
QRELS_FILE = "mtragun-human/retrieval_tasks/qrels/{stem}.tsv.gz"
TURNS_FILE = "mtrag-human/retrieval_tasks/{stem}/{stem}_{kind}.jsonl.gz"
RATINGS_FILE = "mtrag-human/evaluations/reference_subset_with_human_evaluations.json.gz"
# collection (as the tasks name it) → the stem of its qrels / retrieval files
COLLECTIONS = {"clapnq": "clapnq", "ibmcloud": "cloud", "fiqa": "fiqa", "govt": "govt"}
SPEAKERS = ("user", "agent")
QueryMode = Literal["last_turn", "conversation", "rewrite"]
QUERY_MODES: tuple[str, ...] = ("last_turn", "conversation", "rewrite")
DEV_SHARE = 20  # percent of conversations in dev, as `Dataset.split`


class Turn(BaseModel):
    model_config = ConfigDict(frozen=True)

    speaker: Literal["user", "agent"]
    text: str


class MtragTask(BaseModel):
    """One task: a conversation up to its final user turn, with its references."""

    model_config = ConfigDict(frozen=True)

    id: str                      # task id, "<conversation id><::><turn>"
    conversation_id: str
    turn: int                    # the final user turn's number (1 = first)
    collection: str              # clapnq, ibmcloud, fiqa, govt
    turns: list[Turn]            # the history and, last, the final user turn
    reference_answer: str
    passage_ids: list[str]       # the reference passages (the qrels where it has qrels)
    answerability: str           # ANSWERABLE, PARTIAL, UNANSWERABLE, UNDERSPECIFIED
    multi_turn: str              # Follow-up, Clarification, N/A
    question_types: list[str]
    rewrite: str | None = None   # a person's standalone rewrite of the final turn (MTRAG)
    rewrite_source: str | None = None  # the MTRAG turn id the rewrite was joined from
    split: Literal["dev", "test"]

    @property
    def question(self) -> str:
        return self.turns[-1].text

    @property
    def history(self) -> list[Turn]:
        return self.turns[:-1]

    def transcript(self) -> tuple[list[str], list[str]]:
        """The user messages (the final turn last) and, for each earlier one, the agent's reply
        as written (the agent messages up to the next user turn, joined; "" when none)."""
        users: list[str] = []
        answers: list[str] = []
        for t in self.turns:
            if t.speaker == "user":
                users.append(t.text)
                answers.append("")
            elif users:
                answers[-1] = f"{answers[-1]} {t.text}".strip()
        return users, answers[:-1]

    def query(self, mode: QueryMode) -> str | None:
        """The final turn as a search query: `last_turn` alone; `conversation`, every user
        turn as written, one a line (MTRAG's `questions` files do the same: user turns only);
        `rewrite`, the person's standalone rewrite, None where MTRAG has none."""
        if mode == "last_turn":
            return self.question
        if mode == "conversation":
            return "\n".join(t.text for t in self.turns if t.speaker == "user")
        if mode == "rewrite":
            return self.rewrite
        raise ValueError(f"query mode {mode!r}: choose one of {QUERY_MODES}")


class Mtrag(BaseModel):
    """The tasks, each collection's corpus (its pooled reference passages) and the qrels."""

    model_config = ConfigDict(frozen=True)

    tasks: list[MtragTask]
    corpus: dict[str, list[Document]]  # collection → passages
    qrels: dict[str, dict[str, int]]   # task id → passage id → relevance
    name: str = "mtrag"

    def documents(self, collection: str | None = None) -> list[Document]:
        if collection is None:
            return [d for docs in self.corpus.values() for d in docs]
        if collection not in self.corpus:
            raise ValueError(f"unknown MTRAG collection {collection!r}; one of {sorted(self.corpus)}")
        return self.corpus[collection]

    def split(self, which: Literal["dev", "test", "all"]) -> Mtrag:
        """The tasks of `which` split (by conversation, fixed)."""
        if which == "all":
            return self
        keep = [t for t in self.tasks if t.split == which]
        return self.model_copy(update={"tasks": keep, "name": f"{self.name}:{which}",
                                       "qrels": {t.id: self.qrels[t.id] for t in keep
                                                 if t.id in self.qrels}})

    def collection(self, name: str) -> Mtrag:
        keep = [t for t in self.tasks if t.collection == name]
        self.documents(name)  # unknown names raise
        return self.model_copy(update={
            "tasks": keep, "corpus": {name: self.corpus[name]}, "name": f"{self.name}[{name}]",
            "qrels": {t.id: self.qrels[t.id] for t in keep if t.id in self.qrels}})

    def queries(self, mode: QueryMode) -> dict[str, str | None]:
        """Task id → the final turn as a `mode` query (None: no rewrite for this task)."""
        return {t.id: t.query(mode) for t in self.tasks}

    def dataset(self, mode: QueryMode = "last_turn", with_qrels_only: bool = True,
                sessions: bool = False) -> Dataset:
        """The runner's `Dataset`: the pooled passages of the collections here, a query per
        task (`mode`; under `rewrite`, only the tasks that have one) with the reference answer,
        the other modes' texts and the task's labels in its metadata; by default only the
        tasks with qrels (ANSWERABLE and PARTIAL); the split kept (`fixed_split`). With
        `sessions`, each query's metadata holds its conversation's history as written
        (`session`: the earlier user turns and the agent's replies), so the sweep runner
        runs the final turn as a session turn (`experiments/sessions.py`)."""
        queries, fixed = [], {}
        for t in self.tasks:
            text = t.query(mode)
            if text is None or (with_qrels_only and t.id not in self.qrels):
                continue
            meta: dict[str, Any] = {f"query_{m}": t.query(m) for m in QUERY_MODES}
            meta.update(conversation_id=t.conversation_id, collection=t.collection,
                        turn=t.turn, answerability=t.answerability, multi_turn=t.multi_turn)
            if sessions:  # the runner runs the final turn as a session's (experiments/sessions.py)
                users, answers = t.transcript()
                meta["session"] = {"users": users[:-1], "answers": answers}
            queries.append(Query(id=t.id, text=text, answers=[t.reference_answer], metadata=meta))
            fixed[t.id] = t.split
        ids = {q.id for q in queries}
        if sessions:  # in id order (a hash): a prefix is a seeded sample (an LLM sample's)
            queries.sort(key=lambda q: q.id)
        name = f"{self.name}[sessions]" if sessions else f"{self.name}[{mode}]"
        return Dataset(name=name, corpus=self.documents(), queries=queries,
                       qrels={k: v for k, v in self.qrels.items() if k in ids},
                       fixed_split=fixed,
                       description="MTRAG-UN human conversations (IBM, Apache-2.0); corpus = "
                       "the pooled reference passages, not the full collections"
                       + (f" ({', '.join(f'{c} {len(d)}' for c, d in self.corpus.items())} "
                          "passages; other tasks' gold passages are the only distractors: "
                          "easier than MTRAG's own setting)" if sessions else ""))

    def stats(self) -> dict[str, Any]:
        return {"tasks": len(self.tasks),
                "conversations": len({t.conversation_id for t in self.tasks}),
                "passages": {c: len(d) for c, d in self.corpus.items()},
                "qrels tasks": len(self.qrels),
                "qrels": sum(len(v) for v in self.qrels.values()),
                "dev": sum(t.split == "dev" for t in self.tasks),
                "test": sum(t.split == "test" for t in self.tasks),
                "rewrites": sum(t.rewrite is not None for t in self.tasks)}


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, line) of a text file, gzipped or not; blank lines skipped."""
    if not path.exists():
        raise DatasetMissing(f"MTRAG: {path} not found (committed with the repository under "
                             "datasets/mtrag/)")
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if line.strip():
                yield n, line


def _records(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) of a JSONL file, gzipped or not (`jsonl.iter_records`); a line
    that is not a JSON object is an error naming the file and the line."""
    if not path.exists():
        list(_lines(path))  # DatasetMissing, saying where the file is committed
    try:
        yield from iter_records(path)
    except JsonlError as exc:
        raise DatasetError(str(exc)) from None


def _one(value: Any, where: str, field: str) -> str:
    """MTRAG keeps single labels in one-element lists (`["ANSWERABLE"]`); [] is "N/A"."""
    if isinstance(value, list):
        return str(value[0]) if value else "N/A"
    if isinstance(value, str):
        return value
    raise DatasetError(f"{where}: {field!r} must be a label or a list of labels, got {value!r}")


def _turns(value: Any, where: str) -> list[Turn]:
    if not isinstance(value, list) or not value:
        raise DatasetError(f"{where}: 'input' must be a non-empty list of {{speaker, text}}")
    out = []
    for i, m in enumerate(value, 1):
        speaker = m.get("speaker") if isinstance(m, dict) else None
        text = m.get("text") if isinstance(m, dict) else None
        if speaker not in SPEAKERS:
            raise DatasetError(f"{where}: turn {i}: speaker {speaker!r} is not one of {SPEAKERS}")
        if not isinstance(text, str) or not text.strip():
            raise DatasetError(f"{where}: turn {i} ({speaker}) is empty")
        out.append(Turn(speaker=speaker, text=text))
    if out[-1].speaker != "user":
        raise DatasetError(f"{where}: the last turn is the agent's; a task ends on a user turn")
    return out


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


_USER = re.compile(r"(?:^|\n)\|user\|: ?")


def _rewrites(root: Path, stem: str) -> dict[tuple[str, ...], tuple[str, str]]:
    """MTRAG's user turns (normalised, in order) → (turn id, the person's rewrite)."""
    qfile = root / TURNS_FILE.format(stem=stem, kind="questions")
    rfile = root / TURNS_FILE.format(stem=stem, kind="rewrite")
    rewrite = {}
    for n, r in _records(rfile):
        if not isinstance(r.get("_id"), str) or not isinstance(r.get("text"), str):
            raise DatasetError(f"{rfile}:{n}: needs '_id' and 'text'")
        rewrite[r["_id"]] = _USER.sub("", r["text"], count=1).strip()
    out = {}
    for n, r in _records(qfile):
        tid, text = r.get("_id"), r.get("text")
        if not isinstance(tid, str) or not isinstance(text, str):
            raise DatasetError(f"{qfile}:{n}: needs '_id' and 'text'")
        users = tuple(_norm(u) for u in _USER.split(text) if u.strip())
        if tid in rewrite and users:
            out[users] = (tid, rewrite[tid])
    return out


def _read(root: Path) -> Mtrag:
    path = root / TASKS_FILE
    passages: dict[str, dict[str, Document]] = {c: {} for c in COLLECTIONS}
    rows: list[tuple[dict, str, list[Turn]]] = []
    seen: dict[str, int] = {}
    for n, r in _records(path):
        where = f"{path}:{n}"
        tid, cid, coll = r.get("task_id"), r.get("conversation_id"), r.get("Collection")
        if not isinstance(tid, str) or not isinstance(cid, str):
            raise DatasetError(f"{where}: needs 'task_id' and 'conversation_id'")
        if tid in seen:
            raise DatasetError(f"{where}: task {tid} repeats line {seen[tid]}")
        seen[tid] = n
        where = f"{where} (task {tid})"
        if coll not in COLLECTIONS:
            raise DatasetError(f"{where}: Collection {coll!r} is not one of {sorted(COLLECTIONS)}")
        turns = _turns(r.get("input"), where)
        for c in r.get("contexts") or []:
            did, text = c.get("document_id"), c.get("text")
            if not isinstance(did, str) or not isinstance(text, str) or not text.strip():
                raise DatasetError(f"{where}: a context needs 'document_id' and a non-empty 'text'")
            known = passages[coll].get(did)
            if known is not None and known.metadata["raw"] != text:
                raise DatasetError(f"{where}: passage {did} has another text than on an "
                                   "earlier line")
            if known is None:
                passages[coll][did] = Document(
                    id=did, text=text.strip(), title=c.get("title") or "",
                    source=f"mtrag:{coll}", metadata={"collection": coll, "raw": text})
        rows.append((r, coll, turns))
    joins = {c: _rewrites(root, stem) for c, stem in COLLECTIONS.items()}
    tasks = []
    for r, coll, turns in rows:
        where = f"{path} (task {r['task_id']})"
        targets = r.get("targets") or []
        answer = targets[0].get("text") if targets and isinstance(targets[0], dict) else None
        if not isinstance(answer, str):
            raise DatasetError(f"{where}: 'targets' needs one {{speaker, text}}")
        users = tuple(_norm(t.text) for t in turns if t.speaker == "user")
        src, rewrite = joins[coll].get(users, (None, None))
        tasks.append(MtragTask(
            id=r["task_id"], conversation_id=r["conversation_id"], turn=int(r.get("turn") or 0),
            collection=coll, turns=turns, reference_answer=answer,
            passage_ids=[c["document_id"] for c in r.get("contexts") or []],
            answerability=_one(r.get("answerability"), where, "answerability"),
            multi_turn=_one(r.get("Multi-Turn"), where, "Multi-Turn"),
            question_types=list(r.get("Question Type") or []), rewrite=rewrite,
            rewrite_source=src,
            split="dev" if _bucket(r["conversation_id"]) < DEV_SHARE else "test"))
    corpus = {c: [d.model_copy(update={"metadata": {"collection": c}}) for d in p.values()]
              for c, p in passages.items()}
    return Mtrag(tasks=tasks, corpus=corpus, qrels=_qrels(root, passages, set(seen)))


def _qrels(root: Path, passages: dict[str, dict[str, Document]],
           tasks: set[str]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for coll, stem in COLLECTIONS.items():
        path = root / QRELS_FILE.format(stem=stem)
        lines = list(_lines(path))
        if not lines or lines[0][1].split("\t")[:2] != ["query-id", "corpus-id"]:
            raise DatasetError(f"{path}:1: expected the header query-id, corpus-id, score")
        for n, line in lines[1:]:
            row = next(csv.reader(io.StringIO(line), delimiter="\t"))
            if len(row) != 3:
                raise DatasetError(f"{path}:{n}: expected query-id, corpus-id and score, got {row}")
            qid, did, score = row
            if qid not in tasks:
                raise DatasetError(f"{path}:{n}: query-id {qid!r} is not a task")
            if did not in passages[coll]:
                raise DatasetError(f"{path}:{n}: corpus-id {did!r} is not in the {coll} corpus "
                                   "(its tasks' reference passages)")
            try:
                out.setdefault(qid, {})[did] = int(score)
            except ValueError:
                raise DatasetError(f"{path}:{n}: score {score!r} is not an integer") from None
    return out


@lru_cache(maxsize=4)
def _load(root: str) -> Mtrag:
    return _read(Path(root))


def load_mtrag(root: str | Path | None = None) -> Mtrag:
    """MTRAG from the committed files (`datasets/mtrag/`, or `root` laid out the same way),
    parsed once per process and folder; `load_mtrag.cache_clear()`."""
    return _load(str(Path(root or MTRAG_DIR).resolve()))


load_mtrag.cache_clear = _load.cache_clear  # type: ignore[attr-defined]


def mtrag_dataset(collection: str | None = None) -> Dataset:
    """`load_dataset("mtrag")`: all 507 tasks as sessions (`Mtrag.dataset(sessions=True)`: the
    sweep runner builds each final turn's query from its history, `agent.session.query_mode`,
    and scores it against the qrels of the 332 that have them), over the pooled reference
    passages of every collection; `load_dataset("mtrag-<collection>")` (`collection`): one
    collection's tasks over its own pooled passages, as the conversations study searches."""
    m = load_mtrag() if collection is None else load_mtrag().collection(collection)
    return m.dataset("last_turn", with_qrels_only=False, sessions=True)


# --- the human ratings (MTRAG's evaluation subset) ---------------------------------------

RATED = ("faithfulness", "appropriateness", "completeness", "naturalness")


class RatedResponse(BaseModel):
    """One response to an MTRAG task with each rater's 1-4 scores."""

    model_config = ConfigDict(frozen=True)

    task_id: str
    model_id: str                      # reference, llama-3.1-405b-instruct, gpt-4o
    response: str
    turns: list[Turn]                  # the conversation up to the question
    passages: list[Document]           # the passages shown with it (none for some tasks)
    answerability: str
    collection: str
    ratings: dict[str, dict[str, int]]  # metric → rater id → score (1-4)
    # MTRAG's own automatic scores of the response: RougeL, Bert-Rec, Bert-KPrec, rb_agg, and
    # its LLM judges rl_f (RAGAS faithfulness) and rb_llm (RAD-Bench style)
    system_scores: dict[str, float] = {}

    @property
    def question(self) -> str:
        return self.turns[-1].text


def _collection_of(name: str) -> str:
    """The ratings file's collection ("mt-rag-govt-elser-512-100-20240611") as the tasks
    name it ("govt")."""
    return next((c for c in COLLECTIONS if f"-{c}-" in name or f"-{COLLECTIONS[c]}-" in name),
                name)


def load_mtrag_ratings(path: str | Path | None = None) -> list[RatedResponse]:
    """MTRAG's 477 human-rated responses (159 tasks × reference, Llama-3.1-405B, GPT-4o)."""
    path = Path(path) if path is not None else MTRAG_DIR / RATINGS_FILE
    if not path.exists():
        raise DatasetMissing(f"MTRAG ratings: {path} not found (committed under datasets/mtrag/)")
    with gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open() as f:
        data = json.load(f)
    docs = {d["document_id"]: Document(id=d["document_id"], text=d["text"].strip(),
                                       title=d.get("title") or "", source="mtrag")
            for d in data["documents"]}
    tasks = {t["task_id"]: t for t in data["tasks"]}
    out = []
    for e in data["evaluations"]:
        t = tasks.get(e["task_id"])
        if t is None:
            raise DatasetError(f"{path}: evaluation of unknown task {e['task_id']}")
        where = f"{path} (task {e['task_id']})"
        missing = [c["document_id"] for c in t["contexts"] if c["document_id"] not in docs]
        if missing:
            raise DatasetError(f"{where}: passages {missing[:3]} are not in its documents")
        ratings = {m: {r: int(v["value"]) for r, v in e["annotations"].get(m, {}).items()}
                   for m in RATED}
        system = {m: float(v["value"]) for m, a in e["annotations"].items() if m not in RATED
                  for v in a.values() if isinstance(v, dict)
                  and isinstance(v.get("value"), (int, float)) and len(a) == 1}
        out.append(RatedResponse(
            task_id=e["task_id"], model_id=e["model_id"], response=e["model_response"],
            turns=_turns(t["input"], where),
            passages=[docs[c["document_id"]] for c in t["contexts"]],
            answerability=_one(t.get("Answerability"), where, "Answerability"),
            collection=_collection_of(str(t.get("Collection", ""))), ratings=ratings,
            system_scores=system))
    return out
