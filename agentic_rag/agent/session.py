"""A conversation with the agent: the `Session` record and the turn loop, `run_turn`.

A `Session` is a record, passed and never global: its `Turn`s, each with the user's message,
the search query built from the history, every query searched, the passages served to the
model (source document, chunk id, text), the answer and the ids it cites, and whether the
agent abstained ("I don't know") or asked a clarifying question. `run_turn(session, message,
chat, tool, cfg)` runs one turn on `run_agent` and appends it (`cfg.session`, `SessionConfig`):

1. **The query** (`retrieve/query.py`'s `ConversationQueryBuilder`, `session.query_mode`):
   the message alone (`last_turn`), the previous turn's subject carried into a follow-up by
   a rule (`carry`, default), or the model's standalone rewrite (`llm_rewrite`).
2. **Clarify or search** (`session.clarify: rule`, a first rule, to be measured on MTRAG's
   UNDERSPECIFIED turns; no LLM): the agent asks instead of answering when, on the first turn,
   (a) the message names nothing to search ("Tell me more", "Hello"), or (b) it refers back
   ("How do I activate it?", "And the fees?") with at most two content words; or when (c) the
   turn's query holds a single content word and its first search serves passages of
   `clarify_documents` (3) or more documents ("fees?" over the bank's accounts: "Which do you
   mean: ...?", naming their titles). `session.clarify: llm` adds (d): after the first
   search, the model is asked whether the message says which thing it means ("this court",
   "the actor" with none named before: `CLARIFY_SYSTEM`, one cached JSON call); when it
   says no, the agent asks which, naming the titles of the documents found (or, with fewer
   than two, asking what the user means). A failed check answers as usual and is recorded
   (`Turn.clarify_check`). The reply to a clarifying question is a follow-up: its query
   carries the question's subject.
3. **The history penalty across turns**: the tool's session starts with the passages served
   on the earlier turns (`session.penalty_turns`: the last N, default all), so
   `query.history_penalty` ranks them lower, as within one turn. The "already searched" note
   stays within a turn.
4. **The prompt**: the earlier turns as chat messages (the user's message, the answer without
   its citation ids, which name passages no longer shown) between the system prompt and the
   turn's user message, which holds the passages and the question as in a single question:
   the message as written, or (`session.answer_question: rewrite`) the model's standalone
   rewrite of it, for a model that does not resolve "it" from the history.
   The history is a stable prefix, so llama-server's prompt cache reuses it. Its budget
   (`session.history_tokens`) keeps the newest turns ("recent > relevant": an older turn is
   never kept in place of a newer one; older subjects reach the prompt through the carried
   query's passages); past it, the oldest turns are dropped until the rest fit in half the
   budget, so the prefix changes once per block of turns, not at every turn
   (`history_start`).
5. **Unanswerable turns**: the single question's paths: the model is told to say "I don't
   know" when no passage is about the question, the support gate replaces an answer whose
   figures no cited passage states (reading the turn's query, which carries the subject, for
   the documents the turn names and its search again), and a search that served nothing is
   answered "I don't know" without the model.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from agentic_rag import tracing
from agentic_rag.agent.loop import TurnContext, run_agent
from agentic_rag.agent.result import AgentResult, passages_by_citation, strip_citations
from agentic_rag.agent.tool import QUERY_MAX_CHARS, TOOL_NAME, AgenticRAGTool, ToolOutput
from agentic_rag.config import AgentConfig
from agentic_rag.config_agent import SessionConfig
from agentic_rag.llm.client import ask_json_field
from agentic_rag.llm.types import ChatModel, LLMError
from agentic_rag.retrieve.context import citation_id
from agentic_rag.retrieve.query import (
    ConversationQuery,
    ConversationQueryBuilder,
    ConversationState,
    content_words,
    continuing_opening,
    reference_word,
    standalone_prompt,
)

MESSAGE_MAX_CHARS = QUERY_MAX_CHARS  # a user turn is searched: the tool's query limit


class ServedPassage(BaseModel):
    """A passage the model was shown on a turn."""

    model_config = ConfigDict(frozen=True)

    doc_id: str  # the source document
    chunk_id: str
    citation_id: str  # the id the answer cites it by
    title: str = ""
    text: str


class Turn(BaseModel):
    """One turn: the message, how it was searched, what the model was shown and answered.
    `result` is the agent's whole run (steps, support, gate); it stays out of the JSON."""

    model_config = ConfigDict(frozen=True)

    n: int
    message: str
    query: str  # the search query built from the history
    query_mode: str
    # what the answering prompt asked (`session.answer_question`): the message, or the model's
    # standalone rewrite of it; `question_error`: the rewrite failed, the message was asked
    question: str = ""
    question_error: str | None = None
    follow_up: bool = False
    follow_up_reason: str | None = None
    carried: list[str] = Field(default_factory=list)
    queries: list[str] = Field(default_factory=list)  # every query searched, in order
    answer: str
    abstained: bool = False
    clarifying: bool = False
    clarify_reason: str | None = None
    # `session.clarify: llm`'s check after the first search: "ambiguous", "clear", or the
    # failure's kind (the turn then answered as usual); None when not asked
    clarify_check: str | None = None
    stop_reason: str
    passages: list[ServedPassage] = Field(default_factory=list)
    cited: list[str] = Field(default_factory=list)  # chunk ids of valid citations
    citations: list[str] = Field(default_factory=list)  # citation ids, as written
    invalid_citations: list[str] = Field(default_factory=list)
    history_turns: int = 0  # earlier turns in the prompt
    # the turn's calls: the agent's and `session.clarify: llm`'s check (not the rewrites')
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # of prompt_tokens, those llama-server evaluated / reused from its prompt cache, summed over
    # the turn's calls; None when the server did not say or every reply came from the cache
    prompt_evaluated: int | None = None
    prompt_reused: int | None = None
    latency_s: float = 0.0
    result: AgentResult | None = Field(None, exclude=True)

    @property
    def title(self) -> str:
        """The title of the document the answer drew on: the first cited passage's, else the
        first served one's ("" when none)."""
        by_id = {p.chunk_id: p for p in self.passages}
        first = next((by_id[c] for c in self.cited if c in by_id), None) or \
            (self.passages[0] if self.passages else None)
        return first.title if first is not None else ""


class Session(BaseModel):
    """A conversation: its turns, oldest first, and `history_from`, the first earlier turn the
    prompt holds (the budget's window, `history_start`)."""

    turns: list[Turn] = Field(default_factory=list)
    history_from: int = 0
    # the conversation's id in its traces (`gen_ai.conversation.id`); not in the JSON
    id: str = Field(default_factory=lambda: uuid.uuid4().hex, exclude=True)

    def state(self) -> ConversationState:
        """What the earlier turns hold for query building."""
        return ConversationState(messages=[t.message for t in self.turns],
                                 answers=[strip_citations(t.answer) for t in self.turns],
                                 titles=[t.title for t in self.turns],
                                 clarifying=[t.clarifying for t in self.turns])

    def queries(self) -> list[str]:
        """The query built on each earlier turn (the design's `previous_retrievals`)."""
        return [t.query for t in self.turns]

    def served_before(self, last: int | None = None) -> set[str]:
        """Chunk ids served on the last `last` turns (None: all of them; 0: none)."""
        turns = self.turns if last is None else self.turns[len(self.turns) - last:] if last else []
        return {p.chunk_id for t in turns for p in t.passages}

    def messages(self, start: int = 0) -> list[dict[str, str]]:
        """Turns `start`.. as chat messages; a turn without an answer (a failed call) is left
        out."""
        out: list[dict[str, str]] = []
        for t in self.turns[start:]:
            if t.answer:
                out += [{"role": "user", "content": t.message},
                        {"role": "assistant", "content": strip_citations(t.answer)}]
        return out


def history_start(sizes: Sequence[int], start: int, budget: int) -> int:
    """The first earlier turn the prompt keeps, given each turn's tokens (`sizes`), the
    session's window (`start`) and the budget: `start` while the turns from it fit; past the
    budget the oldest are dropped until the rest fit in half of it (module doc, 4)."""
    n = len(sizes)
    if budget <= 0:
        return n
    start = min(start, n)
    if sum(sizes[start:]) <= budget:
        return start
    while start < n and sum(sizes[start:]) > budget // 2:
        start += 1
    return start


def approx_tokens(text: str) -> int:
    """A token count without a tokenizer: 4 tokens per 3 words."""
    return (4 * len(text.split()) + 2) // 3


def _counter(tool: AgenticRAGTool | None) -> Callable[[str], int]:
    counter = getattr(getattr(getattr(tool, "pipeline", None), "formatter", None), "counter", None)
    return counter.count if counter is not None else approx_tokens


# ---- the clarifying rule (module doc, 2) ----------------------------------------------------
ASK_WHAT = ("What would you like to know? Please name the product, function or task you are "
            "asking about.")
ASK_REFERENCE = ("What does '{ref}' refer to? Please name the product, function or task you "
                 "are asking about.")
ASK_WHICH = "Which one do you mean: {options}? Or tell me more about what you are looking for."
ASK_UNCLEAR = "Which one do you mean? Please name what you are asking about."
CLARIFY_SYSTEM = (
    "You check the last user message of a conversation with a document assistant before it "
    "is answered. The message is ambiguous when it asks about 'this', 'that' or 'the' "
    "something (a device, a plan, a person, a place, an event) that neither the message nor "
    "the earlier turns identify, or about a subject so broad that it could mean many "
    "different things, so that the assistant should first ask which one the user means. A "
    "message whose subject is named, or is clear from the earlier turns, is not ambiguous. "
    "Examples: 'How do I reset this router?' with no router named before: ambiguous. 'What "
    "does the plan cost?' with no plan named before: ambiguous. 'Tell me about history.': "
    "ambiguous. 'How do I reset a Netgear R7000 router?': not ambiguous. 'Does it run on "
    "Windows?' after a turn about Docker Desktop: not ambiguous. Answer with JSON "
    "{\"ambiguous\": true} or {\"ambiguous\": false}.")
_CLARIFY_SCHEMA = {"type": "object", "properties": {"ambiguous": {"type": "boolean"}},
                   "required": ["ambiguous"]}


def clarify_before_search(built: ConversationQuery, state: ConversationState
                          ) -> tuple[str, str] | None:
    """(reason, question) for rules (a) and (b), which need no search; None to go on."""
    if state.messages:
        return None
    words = content_words(built.query)
    if not words:
        return "names nothing to search", ASK_WHAT
    ref = reference_word(built.message) or continuing_opening(built.message)
    if ref and len(words) <= 2:
        return f"refers back ({ref!r}) on the first turn", ASK_REFERENCE.format(ref=ref)
    return None


def clarify_after_search(built: ConversationQuery, passages: Sequence[ServedPassage],
                         config: SessionConfig) -> tuple[str, str] | None:
    """(reason, question) for rule (c): a one-word query whose passages span
    `config.clarify_documents` or more documents; None to go on."""
    if len(content_words(built.query)) != 1:
        return None
    docs: dict[str, str] = {}
    for p in passages:
        docs.setdefault(p.doc_id, p.title or p.doc_id)
    if len(docs) < config.clarify_documents:
        return None
    return (f"one word, passages of {len(docs)} documents",
            ask_which(passages, config.clarify_documents))


def ask_which(passages: Sequence[ServedPassage], n: int) -> str:
    """"Which one do you mean: A, B or C?" over the first `n` distinct titles of `passages`
    (spacing normalised; a passage without a title is left out), else `ASK_UNCLEAR`."""
    names = list(dict.fromkeys(t for p in passages if (t := " ".join(p.title.split()))))[:n]
    if len(names) < 2:
        return ASK_UNCLEAR
    return ASK_WHICH.format(options=", ".join(names[:-1]) + " or " + names[-1])


def clarify_by_model(message: str, state: ConversationState,
                     passages: Sequence[ServedPassage], chat: ChatModel, config: SessionConfig
                     ) -> tuple[tuple[str, str] | None, str, tuple[int, int]]:
    """Rule (d), `session.clarify: llm`: the model's check of `message` after the first
    search (`CLARIFY_SYSTEM`; the conversation as the rewrite reads it, then the first five
    documents found, by title, or id when untitled): ((reason, question) or None, the
    check's verdict or failure's kind, its (prompt, completion) tokens)."""
    docs: dict[str, str] = {}
    for p in passages:
        docs.setdefault(p.doc_id, p.title or p.doc_id)
    found = "; ".join(list(docs.values())[:5]) or "nothing"
    user = standalone_prompt(message, state, config.rewrite_turns) + \
        f"\n\nThe search for it found passages of: {found}"
    try:
        ambiguous, reply = ask_json_field(chat, CLARIFY_SYSTEM, user, "ambiguous",
                                          _CLARIFY_SCHEMA, lambda v: isinstance(v, bool),
                                          max_tokens=16)
    except LLMError as exc:
        return None, exc.kind, (0, 0)
    tokens = (reply.prompt_tokens, reply.completion_tokens)
    if not ambiguous:
        return None, "clear", tokens
    return (("the model found the message ambiguous",
             ask_which(passages, config.clarify_documents)), "ambiguous", tokens)


# ---- the turn loop ------------------------------------------------------------------------
def served_passages(tool: AgenticRAGTool | None, outputs: Sequence[ToolOutput]
                    ) -> list[ServedPassage]:
    """The passages of `outputs`, in order, once each: the chunk's text and title from the
    tool's index, or, for a tool without one, the text the model read (its header dropped)."""
    ids = list(dict.fromkeys(c for o in outputs for c in o.chunk_ids))
    index = getattr(getattr(tool, "pipeline", None), "index", None)
    chunks = {}
    if index is not None and ids:
        wanted = set(ids)
        chunks = {c.id: c for c in index.lexical.chunks if c.id in wanted}
    read = {cid: text for o in outputs for cid, text in passages_by_citation(o.content).items()}
    out = []
    for cid in ids:
        c = chunks.get(cid)
        text = c.text if c is not None else read.get(citation_id(cid), "").split("\n", 2)[-1]
        title = str(c.metadata.get("title") or "") if c is not None else ""
        out.append(ServedPassage(doc_id=cid.split("#", 1)[0], chunk_id=cid,
                                 citation_id=citation_id(cid), title=title, text=text))
    return out


def run_turn(session: Session, message: str, chat: ChatModel, tool: AgenticRAGTool | None,
             cfg: AgentConfig | None = None) -> Turn:
    """One turn of `session` (module doc): the query from the history, a clarifying question
    or the agent's answer with the earlier turns in its prompt; the turn is appended to
    `session` and returned. `tool` may be None only under the closed_book policy. The turn is
    a `conversation_turn` span (`tracing`), its first search and the agent's run inside."""
    with tracing.turn_span(session.id, len(session.turns) + 1, message) as span:
        turn = _run_turn(session, message, chat, tool, cfg)
        tracing.turn_done(span, turn)
    return turn


def _run_turn(session: Session, message: str, chat: ChatModel, tool: AgenticRAGTool | None,
              cfg: AgentConfig | None) -> Turn:
    cfg = cfg or AgentConfig()
    scfg, t0 = cfg.session, time.perf_counter()
    message = " ".join(message.split())
    if not message:
        raise ValueError("an empty turn: the message has no words")
    if len(message) > MESSAGE_MAX_CHARS:
        raise ValueError(f"a turn of {len(message)} characters is over the query limit of "
                         f"{MESSAGE_MAX_CHARS} characters (search_documents' query)")
    state = session.state()
    builder = ConversationQueryBuilder(scfg, chat if scfg.query_mode == "llm_rewrite" else None,
                                       QUERY_MAX_CHARS)
    built = builder.build_query(message, state, session.queries())
    question, question_error = _question(message, built, state, chat, scfg)
    base = {"n": len(session.turns) + 1, "message": message, "query": built.query,
            "query_mode": built.mode, "follow_up": built.follow_up,
            "follow_up_reason": built.reason, "carried": built.carried,
            "question": question, "question_error": question_error}
    ask = clarify_before_search(built, state) if scfg.clarify != "off" else None
    if ask is not None:
        return _append(session, _clarifying(base, ask, [], t0))
    count = _counter(tool)
    session.history_from = _window(session, count, scfg)
    history = session.messages(session.history_from)
    first, check = None, (0, 0)  # check: the clarify check's (prompt, completion) tokens
    if tool is not None and cfg.policy != "closed_book":
        tool.reset()
        if hasattr(tool, "served"):  # a replayed tool keeps no session
            tool.served.update(session.served_before(scfg.penalty_turns))
        if cfg.policy == "retrieve_first":
            with tracing.execute_tool(TOOL_NAME, "policy") as span:
                first = tool.search(built.query)
                tracing.tool_done(span, {"query": first.query_used}, first)
            served = served_passages(tool, [first])
            ask = clarify_after_search(built, served, scfg) if scfg.clarify != "off" else None
            if ask is None and scfg.clarify == "llm":
                ask, base["clarify_check"], check = clarify_by_model(message, state, served,
                                                                     chat, scfg)
            if ask is not None:
                return _append(session, _clarifying(base, ask, [first.query_used], t0, check))
    res = run_agent(question, chat, tool if cfg.policy != "closed_book" else None, cfg,
                    turn=TurnContext(history=tuple(history), first_search=first,
                                     subject=built.query))
    outputs = [s.tool for s in res.steps if s.tool is not None]
    return _append(session, Turn(
        **base, queries=[o.query_used for o in outputs], answer=res.answer,
        abstained=res.abstained, stop_reason=res.stop_reason,
        passages=served_passages(tool, outputs), cited=res.cited_chunks,
        citations=res.citations, invalid_citations=res.invalid_citations,
        history_turns=sum(1 for m in history if m["role"] == "user"),
        prompt_tokens=res.prompt_tokens + check[0],
        completion_tokens=res.completion_tokens + check[1],
        prompt_evaluated=res.prompt_evaluated, prompt_reused=res.prompt_reused,
        latency_s=time.perf_counter() - t0, result=res))


def _question(message: str, built: ConversationQuery, state: ConversationState, chat: ChatModel,
              config: SessionConfig) -> tuple[str, str | None]:
    """The question the answering prompt asks (`session.answer_question`) and, when the
    rewrite failed and the message is asked instead, the failure's kind."""
    if config.answer_question == "message" or not state.messages:
        return message, None
    if built.mode == "llm_rewrite":  # the search query is already the model's rewrite
        return built.query, None
    rewriter = ConversationQueryBuilder(config, chat, QUERY_MAX_CHARS)
    try:
        return rewriter.rewrite(message, state), None
    except LLMError as exc:
        return message, exc.kind


def _window(session: Session, count: Callable[[str], int], config: SessionConfig) -> int:
    """The session's new `history_from` under `config.history_tokens`."""
    sizes = [count(t.message) + count(strip_citations(t.answer)) if t.answer else 0
             for t in session.turns]
    return history_start(sizes, session.history_from, config.history_tokens)


def _clarifying(base: dict, ask: tuple[str, str], queries: list[str], t0: float,
                tokens: tuple[int, int] = (0, 0)) -> Turn:
    reason, question = ask
    return Turn(**base, queries=queries, answer=question, clarifying=True,
                clarify_reason=reason, stop_reason="clarify", prompt_tokens=tokens[0],
                completion_tokens=tokens[1],
                latency_s=time.perf_counter() - t0)


def _append(session: Session, turn: Turn) -> Turn:
    session.turns.append(turn)
    return turn
