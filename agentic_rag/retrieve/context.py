"""Layer 4: token-budgeted context formatting for an agent.

`pack_context` is the pure core: order hits (by score, or most recent first for
time-stamped chunks), render each with its source attribution, and keep what
fits the token budget. The top result is truncated rather than dropped when it
alone exceeds the budget; later hits that do not fit are skipped (a smaller one
after them may still fit). Code is re-fenced so the agent sees a code block.
Document boundaries can be switched off and their header style changed, so their
effect on hallucination can be measured. `group_by_document` (issue 40) serves the passages
of one document together, under a line with the document's human-readable title
(`=== From the document: Lime Green Account: Wire Transfer Pricing (doc_...) ===`), documents
in the order of their best passage. Each header carries the chunk's citation id
(`citation_id`: 5 hex characters of a hash of the chunk id, the same in every search), which
an agent cites in square brackets, e.g. `[3fa9c]`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict

from agentic_rag.config import ContextConfig
from agentic_rag.documents import Hit
from agentic_rag.ingest.tokens import TokenCounter, make_token_counter

TRUNCATION_MARK = "\n… [truncated]"


class FormattedContext(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    tokens: int
    budget: int
    included: list[str]  # chunk ids, in context order
    truncated: list[str]
    dropped: list[str]


def render_body(hit: Hit, refence_code: bool = True) -> str:
    c = hit.chunk
    body = c.text.strip("\n")
    if refence_code and c.chunk_type == "code" and not body.lstrip().startswith(("```", "~~~")):
        import textwrap

        lang = c.metadata.get("language") or ""
        body = f"```{lang}\n{textwrap.dedent(body)}\n```"
    return body


def citation_id(chunk_id: str) -> str:
    """A short, stable id an agent can cite for a chunk: 5 hex characters of sha1(chunk id)."""
    return hashlib.sha1(chunk_id.encode()).hexdigest()[:5]


def render_header(hit: Hit, n: int, style: str, boundaries: bool = True,
                  attribution: bool = True) -> tuple[str, str]:
    """(head, tail) around one chunk. `boundaries` draws the numbered document frame (with
    the citation id); `attribution` names the source. They are separate switches, so the
    effect of boundaries on hallucination is not confounded with losing the source line."""
    c = hit.chunk
    cid = citation_id(c.id)
    where = f"{c.source or c.doc_id}" + (f" — {c.heading_path}" if c.heading_path else "")
    if not boundaries:
        return (f"Source: {where}" if attribution else ""), ""
    if style == "xml":
        src = f' source="{where}"' if attribution else ""
        return (f'<document index="{n}" id="{cid}"{src} type="{c.chunk_type}" '
                f'score="{hit.score:.2f}">', "</document>")
    if style == "markdown":
        title = where if attribution else "passage"
        return f"### [{n}] {title}\n_id: [{cid}], type: {c.chunk_type}, score: {hit.score:.2f}_", ""
    src = f"Source: {where} | " if attribution else ""
    return (f"--- Document {n} [{cid}] ---\n{src}type: {c.chunk_type} | "
            f"score: {hit.score:.2f}"), ""


def _order(hits: Sequence[Hit], priority: str, recency_field: str) -> list[Hit]:
    by_score = sorted(hits, key=lambda h: (-h.score, h.chunk.id))
    if priority == "recent_first":
        # ISO dates sort as strings; undated chunks go last, each group by score
        return sorted(by_score, key=lambda h: str(h.chunk.metadata.get(recency_field, "")),
                      reverse=True)
    return by_score


def group_title(hit: Hit) -> str:
    """The line above one document's passages (`context.group_by_document`): its
    human-readable title and its id."""
    c = hit.chunk
    title = str(c.metadata.get("title") or "").strip()
    return f"=== From the document: {title} ({c.doc_id}) ===" if title else \
        f"=== From the document: {c.doc_id} ==="


def _grouped(hits: list[Hit]) -> list[Hit]:
    """Hits by document, documents in the order of their best hit, each one's hits in order."""
    order: dict[str, list[Hit]] = {}
    for h in hits:
        order.setdefault(h.chunk.doc_id, []).append(h)
    return [h for group in order.values() for h in group]


def pack_context(hits: Sequence[Hit], config: ContextConfig, count: Callable[[str], int],
                 truncate: Callable[[str, int], str]) -> FormattedContext:
    """Pure packing: `count(text)` gives tokens, `truncate(text, n)` cuts text to n tokens."""
    parts: list[str] = []
    included, truncated, dropped = [], [], []
    used = 0
    sep = "\n\n"
    ordered = _order(hits, config.priority, config.recency_field)
    if config.group_by_document:
        ordered = _grouped(ordered)
    last_doc: str | None = None
    for hit in ordered:
        n = len(included) + 1
        body = render_body(hit, config.refence_code)
        head, tail = render_header(hit, n, config.header_style, config.boundaries,
                                   config.attribution)
        if config.group_by_document and hit.chunk.doc_id != last_doc:
            head = group_title(hit) + "\n" + head if head else group_title(hit)
        block = "\n".join(p for p in (head, body, tail) if p)
        cost = count(block) + (count(sep) if parts else 0)
        if used + cost <= config.max_tokens:
            parts.append(block)
            included.append(hit.chunk.id)
            used += cost
            last_doc = hit.chunk.doc_id
            continue
        if not included and config.truncate_top:
            frame = count("\n".join(p for p in (head, tail) if p)) + count(TRUNCATION_MARK) + 2
            room = config.max_tokens - frame
            if room > 0:
                block = "\n".join(p for p in (head, truncate(body, room) + TRUNCATION_MARK, tail) if p)
                parts.append(block)
                included.append(hit.chunk.id)
                truncated.append(hit.chunk.id)
                used += count(block)
                last_doc = hit.chunk.doc_id
                continue
        dropped.append(hit.chunk.id)
    text = sep.join(parts)
    return FormattedContext(text=text, tokens=count(text), budget=config.max_tokens,
                            included=included, truncated=truncated, dropped=dropped)


class AgenticContextFormatter:
    def __init__(self, config: ContextConfig | None = None,
                 counter: TokenCounter | None = None) -> None:
        self.config = config or ContextConfig()
        self.counter: TokenCounter = counter or make_token_counter(self.config.tokenizer)

    def _truncate(self, text: str, n: int) -> str:
        return self.counter.decode(self.counter.encode(text)[:n])

    def format_for_agent(self, results: Sequence[Hit], query: str = "",
                         task_type: str | None = None) -> FormattedContext:
        """Pack `results` for an agent working on `query`; `task_type` "code" keeps fences."""
        cfg = self.config
        if task_type == "code" and not cfg.refence_code:
            cfg = cfg.model_copy(update={"refence_code": True})
        return pack_context(results, cfg, self.counter.count, self._truncate)


# the evidence as the hallucination judge sees it, whatever the arm under test serves: the
# default boundaries, attribution and order, and room for every placed chunk
JUDGE_VIEW = ContextConfig(max_tokens=200_000)


def judge_view(hits: Sequence[Hit], included: Sequence[str]) -> str:
    """The evidence as the hallucination judge sees it: the chunks placed in the answer's
    context (`included`: their ids), always rendered with `JUDGE_VIEW`."""
    keep = set(included)
    return AgenticContextFormatter(JUDGE_VIEW).format_for_agent(
        [h for h in hits if h.chunk.id in keep]).text
