"""How well the passages an agent's answer cites support it (`answer_support`, the `support_*`
fields of `AgentResult`; see `agent.loop`'s module doc)."""

from __future__ import annotations

from typing import Any

from agentic_rag.agent.result import AgentResult, passages_by_citation, strip_citations
from agentic_rag.agent.tool import ToolOutput
from agentic_rag.config import SupportConfig
from agentic_rag.llm.types import ChatModel, LLMError
from agentic_rag.retrieve.context import citation_id


def answer_support(res: AgentResult, searches: list[ToolOutput], chat: ChatModel,
                   cfg: SupportConfig) -> dict[str, Any]:
    """The `support_*` fields of `res` (module doc): its answer scored by `cfg.detector`
    against the text of the passages it cites, or of every passage served if it cites none."""
    if not cfg.enabled:
        return {"support_note": "not scored: agent.support.enabled is off"}
    if res.stop_reason in ("llm_error", "invalid_action") or not res.answer:
        return {"support_note": f"not scored: no answer ({res.stop_reason})"}
    if res.abstained:
        return {"support_note": "not scored: an abstention makes no claim"}
    served = [s.content for s in searches if s.chunk_ids]
    if not served:
        return {"support_note": "not scored: no passages were served"}
    texts: dict[str, str] = {}
    for s in searches:
        for cid, text in passages_by_citation(s.content).items():
            texts.setdefault(cid, text)
    cited = [texts[c] for c in (citation_id(ch) for ch in res.cited_chunks) if c in texts]
    out: dict[str, Any] = {"support_detector": cfg.detector, "support_threshold": cfg.threshold,
                           "support_against": "cited" if cited else "served"}
    if not cited:
        out["support_note"] = "the answer cites no served passage: scored against all served"
    from agentic_rag.evaluation.support import support_score

    try:
        score = support_score(cfg.detector, chat, "\n\n".join(cited or served),
                              strip_citations(res.answer), res.question)
    except LLMError as exc:
        return {**out, "support_error": f"{exc.kind}: {exc}"}
    return {**out, "support_score": score, "supported": score >= cfg.threshold}
