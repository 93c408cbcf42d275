"""What one agent run returns (`AgentResult`, its `AgentStep`s) and what its final answer says about
itself: the passages it cites (`parse_citations`, `strip_citations`, `passages_by_citation`) and
whether it abstains (`abstained`, from `evaluation.answers.is_abstention`). The support fields are
filled by `agent.support.answer_support`."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentic_rag.agent.tool import ToolOutput
from agentic_rag.evaluation.answers import is_abstention
from agentic_rag.evaluation.trajectory import trajectory_metrics


class AgentStep(BaseModel):
    model_config = ConfigDict(frozen=True)

    step: int
    kind: Literal["tool_call", "answer", "invalid_call"]
    via: str  # native | tool_call_text | json | policy (retrieve_first) | tool_choice | json_forced
    arguments: dict[str, Any] | None = None
    tool: ToolOutput | None = None
    error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False  # the reply came from the LLM cache (its latency is not the model's)
    # of prompt_tokens, evaluated by the server / reused from its prompt cache (ChatReply's);
    # None when the server did not say or the reply came from the cache
    prompt_evaluated: int | None = None
    prompt_reused: int | None = None


class AgentResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    question: str
    answer: str
    stop_reason: Literal["answer", "max_steps", "llm_error", "invalid_action", "nothing_found"]
    policy: str = "free"
    mode: str = "native"
    steps: list[AgentStep] = Field(default_factory=list)
    error: str | None = None
    latency_s: float = 0.0
    citations: list[str] = Field(default_factory=list)  # citation ids, as written
    cited_chunks: list[str] = Field(default_factory=list)  # chunk ids of valid citations
    invalid_citations: list[str] = Field(default_factory=list)  # ids of chunks never served
    action_failures: int = 0  # malformed JSON actions (each after its one retry)
    # support of the final answer (module doc); latency_s does not include its judge call
    support_score: float | None = None  # in [0, 1]; None when not scored
    supported: bool | None = None  # support_score >= support_threshold
    support_detector: str | None = None  # graded_judge | lexical | mean
    support_threshold: float | None = None
    support_against: Literal["cited", "served"] | None = None  # the passages scored against
    support_note: str | None = None  # why the answer was not scored, or scored against served
    support_error: str | None = None  # the judge's LLMError ("kind: message"), never a score
    # the support gate (agent/gate.py, `support.on_unsupported`): the figure-and-product check
    figures: list[str] = Field(default_factory=list)  # canonical figures of the answer checked
    figures_unsupported: list[str] = Field(default_factory=list)  # in no cited passage
    figures_wrong_product: list[str] = Field(default_factory=list)  # only in other products'
    named_documents: list[str] = Field(default_factory=list)  # what the question names
    gate_action: Literal["none", "flag", "retry", "abstain"] | None = None  # None: not checked
    gate_notes: list[str] = Field(default_factory=list)  # what the gate did, in words

    @property
    def tool_calls(self) -> int:
        """Searches made, the policy's own (retrieve_first) included."""
        return sum(1 for s in self.steps if s.kind == "tool_call")

    @property
    def model_tool_calls(self) -> int:
        """Searches the model asked for (forced ones included, the policy's pre-search not)."""
        return sum(1 for s in self.steps if s.kind == "tool_call" and s.via != "policy")

    @property
    def served(self) -> list[str]:
        """Chunk ids the agent was shown, in order, without repeats."""
        return list(dict.fromkeys(c for s in self.steps if s.tool for c in s.tool.chunk_ids))

    def trajectory(self, gold_docs: Iterable[str] = ()) -> dict[str, float | None]:
        """The run's trajectory metrics (`evaluation.trajectory.trajectory_metrics`) against the
        gold document ids: its searches' queries and what each served, in order (the policy's
        pre-search and a conversation turn's first search included), and its LLM calls (the
        policy's pre-search is not one), as agent-eval's rows record them."""
        calls = [s for s in self.steps if s.kind == "tool_call"]
        return trajectory_metrics([s.arguments.get("query") for s in calls if s.arguments],
                                  [list(s.tool.chunk_ids) for s in calls if s.tool], gold_docs,
                                  sum(1 for s in self.steps if s.via != "policy"))

    @property
    def citation_valid(self) -> bool:
        """No citation names a chunk that was never served (vacuously true without citations)."""
        return not self.invalid_citations

    @property
    def cites_served(self) -> bool:
        return bool(self.cited_chunks)

    @property
    def abstained(self) -> bool:
        return is_abstention(self.answer)

    @property
    def cached_calls(self) -> int:
        """LLM turns answered from the cache: `latency_s` of such a run is not the model's."""
        return sum(1 for s in self.steps if s.cached)

    @property
    def retrieval_iterations(self) -> int:
        return sum(s.tool.iterations for s in self.steps if s.tool)

    @property
    def prompt_tokens(self) -> int:
        return sum(s.prompt_tokens for s in self.steps)

    @property
    def completion_tokens(self) -> int:
        return sum(s.completion_tokens for s in self.steps)

    @property
    def prompt_evaluated(self) -> int | None:
        """Prompt tokens the server evaluated over the run's calls; None when no call said."""
        return _known_sum([s.prompt_evaluated for s in self.steps])

    @property
    def prompt_reused(self) -> int | None:
        """Prompt tokens reused from the server's prompt cache; None when no call said."""
        return _known_sum([s.prompt_reused for s in self.steps])

    @property
    def context_tokens(self) -> int:
        return sum(s.tool.context_tokens for s in self.steps if s.tool)


def _known_sum(values: list[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


_BRACKETS = re.compile(r"\[([^\[\]\n]{1,80})\]")


_CITE_ID = re.compile(r"^[0-9a-f]{5}$")


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


_PASSAGE_HEAD = re.compile(  # a passage's header in each `context.header_style`, its number
    r'^(?:--- Document (?P<n1>\d+) \[(?P<dashes>[0-9a-f]{5})\] ---'
    r'|<document index="(?P<n2>\d+)" id="(?P<xml>[0-9a-f]{5})"'
    r'|### \[(?P<n3>\d+)\] [^\n]*\n_id: \[(?P<markdown>[0-9a-f]{5})\])', re.M)


def passages_by_number(content: str) -> dict[int, str]:
    """One search's citation ids by the number its header gives the passage ("--- Document
    4 [3aefe] ---": 4 → "3aefe"; the first passage with a number, if two share it)."""
    out: dict[int, str] = {}
    for m in _PASSAGE_HEAD.finditer(content):
        n = m.group("n1") or m.group("n2") or m.group("n3")
        out.setdefault(int(n), m.group("dashes") or m.group("xml") or m.group("markdown"))
    return out


def passages_by_citation(content: str) -> dict[str, str]:
    """One search's passages by citation id, each as the model read it: from its header to
    the next passage's header (a passage served twice: its first text)."""
    heads = list(_PASSAGE_HEAD.finditer(content))
    out: dict[str, str] = {}
    for m, nxt in zip(heads, [*heads[1:], None]):
        cid = m.group("dashes") or m.group("xml") or m.group("markdown")
        out.setdefault(cid, content[m.start():nxt.start() if nxt else len(content)].strip())
    return out
