"""The support gate (issue 40, `agent.support.on_unsupported`): the figure-and-product check
of `evaluation/figures.py` on the agent's answer, and what the agent does when it fails.

- `flag`: the check's verdict is recorded (`AgentResult.figures_*`, `gate_notes`), the answer
  is kept;
- `retry`: the agent searches once more for the missing fact — within the documents about
  what the question names when it names something (`AgenticRAGTool.search_within`), else
  everywhere — and answers again, told which figure no passage about it stated; if the new
  answer still fails the check, it answers "I don't know" and names what it looked for;
- `abstain`: a failing answer is replaced by that "I don't know" at once.

The check needs no LLM: which documents the question names comes from the index
(`AgenticIndex.named_documents`, the name coverage of `store/coverage.py`); a tool without an
index (a test's replayed tool) names none, and only "is the figure in a cited passage" runs.
"""

from __future__ import annotations

import re

from agentic_rag.agent.result import passages_by_citation, passages_by_number, strip_citations
from agentic_rag.agent.tool import ToolOutput
from agentic_rag.evaluation.figures import FigureCheck, Passage, check_figures, passage_refs
from agentic_rag.retrieve.context import citation_id
from agentic_rag.store.lexical import doc_name

_QUESTION_WORDS = frozenset(
    "what whats what's how much many does do is are the a an of for on my to in i have can "
    "you tell me which when where why at with your it this that there be will would".split())


def named_documents(tool: object, question: str) -> list[str]:
    """The documents about what `question` names, from the tool's index, matched as its
    pipeline's `fusion.named_match` (retrieval and the gate agree on what is named); []
    without an index."""
    pipeline = getattr(tool, "pipeline", None)
    find = getattr(getattr(pipeline, "index", None), "named_documents", None)
    if find is None:
        return []
    config = getattr(pipeline, "config", None)  # without one, the index's own config decides
    return list(find(question, match=config.fusion.named_match if config is not None else None))


def served_passages(searches: list[ToolOutput]) -> list[Passage]:
    """Every served passage once, with the document it comes from (chunk ids start with it)."""
    doc_of = {citation_id(c): c.split("#", 1)[0] for s in searches for c in s.chunk_ids}
    out: dict[str, Passage] = {}
    for s in searches:
        for cid, text in passages_by_citation(s.content).items():
            if cid in doc_of:
                out.setdefault(cid, Passage(cid=cid, doc_id=doc_of[cid], text=text))
    return list(out.values())


def check_answer(question: str, answer: str, cited: list[str], searches: list[ToolOutput],
                 named: list[str], require_figure: bool = False,
                 passage_numbers: str = "figure") -> FigureCheck:
    """`check_figures` on the agent's answer: the passages it cites by citation id (and, with
    `passage_numbers="citation"`, by number: `numbered_citations`)."""
    ids = [citation_id(c) for c in cited]
    if passage_numbers == "citation":
        ids += numbered_citations(answer, searches)
    return check_figures(question, strip_citations(answer), served_passages(searches), ids,
                         named, require_figure, pointers=passage_numbers != "figure")


def numbered_citations(answer: str, searches: list[ToolOutput]) -> list[str]:
    """The citation ids of the passages `answer` points at by number (`figures.passage_refs`):
    the N-th passage of the latest search that served one numbered N."""
    wanted = passage_refs(answer)
    if not wanted:
        return []
    tables = [passages_by_number(s.content) for s in reversed(searches)]
    out: list[str] = []
    for n in wanted:
        cid = next((t[n] for t in tables if n in t), None)
        if cid is not None and cid not in out:
            out.append(cid)
    return out


def subject(named: list[str]) -> str:
    """What the question names, in words ("business checking accounts lime green")."""
    names = list(dict.fromkeys(doc_name(d) for d in named if doc_name(d)))
    return names[0] if len(names) == 1 else " / ".join(names[:3])


def retry_query(question: str, named: list[str]) -> str:
    """The missing fact as a query: the question's content words, the subject's first."""
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z\-]*", question)
             if w.lower() not in _QUESTION_WORDS and len(w) > 1]  # "what's" leaves an "s"
    return " ".join(dict.fromkeys(words))[:200] or question[:200]


def retry_note(check: FigureCheck, named: list[str]) -> str:
    """What the re-answer is told about the first answer."""
    about = f"about {subject(named)} " if named else ""
    said = (f"gave {', '.join(check.failing)}, which no passage {about}that you cited states"
            if check.failing else "left a placeholder where a fact should be"
            if check.placeholder else "stated no figure for the amount asked")
    return (f"\n\n(Your previous answer {said}. Answer only with figures stated in a passage "
            f"{about}and cite it; if no passage states it, say \"I don't know\".)")


def abstention(question: str, query: str, named: list[str]) -> str:
    about = f" in the documents about {subject(named)}" if named else ""
    return (f"I don't know: I searched{about} for '{query}' and found no passage that states "
            "the answer.")


def describe(check: FigureCheck) -> str:
    parts = []
    if check.unsupported:
        parts.append(f"{', '.join(check.unsupported)} in no {check.against} passage")
    if check.wrong_product:
        parts.append(f"{', '.join(check.wrong_product)} only in passages of other products")
    if check.no_figure:
        parts.append("the question asks for an amount and the answer states none")
    if check.placeholder:
        parts.append("the answer holds a placeholder where a fact should be")
    return "; ".join(parts) or "every figure in a cited passage"
