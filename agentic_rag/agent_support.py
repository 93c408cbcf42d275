"""What the agent's final answer says about itself: the passages it cites (`parse_citations`,
`strip_citations`), whether it abstains (`is_abstention`), and how well the passages it cites
support it (`answer_support`, the `support_*` fields of `AgentResult`; see `agent`'s module doc)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from .config import SupportConfig
from .context import citation_id
from .llm import ChatModel, LLMError
from .tool import ToolOutput

if TYPE_CHECKING:
    from .agent import AgentResult

_BRACKETS = re.compile(r"\[([^\[\]\n]{1,80})\]")
_CITE_ID = re.compile(r"^[0-9a-f]{5}$")
_ABSTAIN = re.compile(r"\b(i don'?t know|i do not know|cannot (?:find|answer|determine)|"
                      r"(?:do|does) not (?:contain|mention|provide|specify|say))\b", re.I)


def parse_citations(answer: str) -> list[str]:
    """Citation ids written in square brackets (`[3fa9c]`, `[3fa9c, 1b2c3]`, `[id: 3fa9c]`),
    in order of first appearance."""
    out: list[str] = []
    for group in _BRACKETS.findall(answer):
        for token in re.split(r"[,;\s]+", group.strip().lower()):
            token = token.removeprefix("id:").removeprefix("#").strip()
            if _CITE_ID.match(token) and token not in out:
                out.append(token)
    return out


def strip_citations(answer: str) -> str:
    """The answer without its citation brackets (`[3fa9c]`): an id is no claim, and the cited
    passage's header carries it, so it would count as support."""
    text = _BRACKETS.sub(lambda m: "" if parse_citations(m.group(0)) else m.group(0), answer)
    return re.sub(r"\s+([.,;:!?])", r"\1", " ".join(text.split()))


def is_abstention(answer: str) -> bool:
    return bool(_ABSTAIN.search(answer))


_PASSAGE_HEAD = re.compile(  # a passage's header in each `context.header_style`
    r'^(?:--- Document \d+ \[(?P<dashes>[0-9a-f]{5})\] ---'
    r'|<document index="\d+" id="(?P<xml>[0-9a-f]{5})"'
    r'|### \[\d+\] [^\n]*\n_id: \[(?P<markdown>[0-9a-f]{5})\])', re.M)


def passages_by_citation(content: str) -> dict[str, str]:
    """One search's passages by citation id, each as the model read it: from its header to
    the next passage's header (a passage served twice: its first text)."""
    heads = list(_PASSAGE_HEAD.finditer(content))
    out: dict[str, str] = {}
    for m, nxt in zip(heads, [*heads[1:], None]):
        cid = m.group("dashes") or m.group("xml") or m.group("markdown")
        out.setdefault(cid, content[m.start():nxt.start() if nxt else len(content)].strip())
    return out


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
    from .evaluation.support import support_score

    try:
        score = support_score(cfg.detector, chat, "\n\n".join(cited or served),
                              strip_citations(res.answer), res.question)
    except LLMError as exc:
        return {**out, "support_error": f"{exc.kind}: {exc}"}
    return {**out, "support_score": score, "supported": score >= cfg.threshold}
