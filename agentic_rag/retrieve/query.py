"""Layer 2: intent-aware query construction.

`AgentQueryBuilder.build_query(message, agent_state, previous_retrievals)` turns an
agent's message into a `RetrievalIntent`: the intent (fact / code / procedure /
data) from a heuristic or an LLM classifier, chunk-type filters from a
configurable intent → types map, a rewritten query, and a de-duplication verdict
against earlier retrievals (word overlap, or embedding similarity). Which
classifier produced the intent is recorded, including an LLM failure that fell
back to the heuristic: nothing is silently defaulted.

`apply_history_penalty` lowers the score of chunks the agent was already served
(the seed's "same chunks again" failure mode).

In a conversation, `ConversationQueryBuilder.build_query(message, agent_state,
previous_retrievals)` first turns the user's message into the turn's search query from the
earlier turns (`agent_state`: a `ConversationState`; `previous_retrievals`: the queries of
the earlier turns), by `agent.session.query_mode`: `last_turn`, `carry` (a rule, no LLM) or
`llm_rewrite` (a standalone question from the model); the agent's own searches then go
through `AgentQueryBuilder` as in a single question.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentic_rag.config import QueryConfig
from agentic_rag.config_agent import SessionConfig
from agentic_rag.documents import Hit
from agentic_rag.llm.client import ask_json_field
from agentic_rag.llm.types import ChatModel, LLMError

IntentType = Literal["fact", "code", "procedure", "data"]
INTENTS: tuple[str, ...] = ("fact", "code", "procedure", "data")


class RetrievalIntent(BaseModel):
    model_config = ConfigDict(frozen=True)

    query: str
    original: str = ""
    intent: IntentType = "fact"
    filters: dict[str, Any] = Field(default_factory=dict)
    min_confidence: float | None = None
    classifier: str = "heuristic"
    duplicate_of: str | None = None  # a previous retrieval this one repeats
    dropped_filters: list[str] = Field(default_factory=list)  # types the index lacks


# ---- heuristic classifier (the seed's keyword rules, improved) ---------------------
_RULES: dict[str, tuple[str, ...]] = {
    "code": ("code", "snippet", "function", "method", "syntax", "example of", "implement",
             "script", "traceback", "exception", "error:", "import ", "def ", "class ", "regex",
             "api call", "decorator", "```", "()"),
    "procedure": ("how to", "how do i", "how can i", "steps", "step by step", "procedure",
                  "process for", "walk me through", "set up", "setup", "install", "configure",
                  "enable", "unlock", "reset", "open an", "close an", "apply for", "what should i do"),
    "data": ("how much", "how many", "fee", "fees", "rate", "rates", "price", "cost", "limit",
             "limits", "percentage", "percent", "%", "$", "table", "compare", "comparison",
             "minimum", "maximum", "threshold", "apr", "apy", "amount", "number of"),
}
_PRIORITY = ("code", "data", "procedure")  # tie-break: the more specific intent wins


def classify_intent_heuristic(message: str) -> IntentType:
    """Count keyword hits per intent; the best count wins, ties broken by specificity."""
    text = f" {message.lower()} "
    counts = {intent: sum(1 for kw in kws if kw in text) for intent, kws in _RULES.items()}
    if "`" in message:
        counts["code"] += 2
    best = max(_PRIORITY, key=lambda i: (counts[i], -_PRIORITY.index(i)))
    return best if counts[best] > 0 else "fact"  # type: ignore[return-value]


_INTENT_SCHEMA = {"type": "object", "properties": {"intent": {"type": "string", "enum": list(INTENTS)}},
                  "required": ["intent"]}
_INTENT_PROMPT = (
    "Classify what the user needs from the documentation. Answer with JSON {\"intent\": X} where "
    "X is one of: \"code\" (a code example, function or syntax), \"procedure\" (steps to do "
    "something), \"data\" (a number, fee, rate, limit or table value), \"fact\" (anything else).")


class LLMIntentClassifier:
    def __init__(self, model: ChatModel) -> None:
        self.model = model

    def __call__(self, message: str) -> IntentType:
        intent, _ = ask_json_field(self.model, _INTENT_PROMPT, message, "intent", _INTENT_SCHEMA,
                                   lambda v: v in INTENTS, max_tokens=20)
        return intent


# ---- rewriting ----------------------------------------------------------------------
_FRAMING = (
    "can you tell me", "could you tell me", "can you please", "could you please", "can you",
    "could you", "would you", "please", "i want to know", "i would like to know", "i'd like to know",
    "i was wondering", "i wonder", "do you know", "tell me", "help me understand", "help me",
    "i need to know", "i need", "hey", "hi", "hello", "so", "ok", "okay", "quick question",
)
_TRAILING = ("thanks", "thank you", "thx", "please")


def rewrite_heuristic(message: str) -> str:
    """Strip conversational framing (greetings, 'can you tell me', trailing thanks)."""
    q = " ".join(message.strip().split())
    changed = True
    while changed:
        changed = False
        low = q.lower()
        for frame in _FRAMING:
            if low.startswith(frame) and (len(low) == len(frame) or not low[len(frame)].isalnum()):
                q = q[len(frame):].lstrip(" ,.!:;-")
                changed = True
                break
        low = q.lower().rstrip(" .!?")
        for tail in _TRAILING:
            if low.endswith(tail) and (len(low) == len(tail) or not low[-len(tail) - 1].isalnum()):
                q = q[:len(low) - len(tail)].rstrip(" ,.!")
                changed = True
                break
    q = q.strip()
    if q.lower().startswith(("if ", "whether ")):
        q = q.split(" ", 1)[1] if " " in q else q
    return q or message.strip()


_REWRITE_SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}},
                   "required": ["query"]}
_REWRITE_PROMPT = ("Rewrite the user's message as a short search query for a documentation "
                   "search engine: keep names, numbers and technical terms, drop politeness. "
                   "Answer with JSON {\"query\": \"...\"}.")


class LLMRewriter:
    def __init__(self, model: ChatModel) -> None:
        self.model = model

    def __call__(self, message: str) -> str:
        q, _ = ask_json_field(self.model, _REWRITE_PROMPT, message, "query", _REWRITE_SCHEMA,
                              lambda v: isinstance(v, str) and bool(v.strip()), max_tokens=60)
        return q.strip()


class QueryRewriter:
    """The seed's heuristic (strip conversational framing), an LLM rewriter, or none.
    An LLM failure raises `LLMError` (the caller records it), never a silent fallback."""

    def __init__(self, mode: Literal["none", "heuristic", "llm"] = "heuristic",
                 chat_model: ChatModel | None = None) -> None:
        if mode == "llm" and chat_model is None:
            raise ValueError("QueryRewriter('llm') needs a chat model")
        self.mode = mode
        self._llm = LLMRewriter(chat_model) if mode == "llm" else None

    def rewrite(self, message: str) -> str:
        if self._llm is not None:
            return self._llm(message)
        return rewrite_heuristic(message) if self.mode == "heuristic" else message

    __call__ = rewrite


_QUESTION_WORDS = frozenset(
    "what which who whom whose when where why how is are was were do does did can could "
    "should would will shall may might must a an the of to in on for and or be been being "
    "i me my we our you your it its this that these those there their they them he she his "
    "her with about from by as at into than then so if any some".split())


def rewrite_keywords(query: str) -> str:
    """Keyword extraction for the gate's `rewrite_query`: drop question and function words,
    keep content words, numbers, identifiers and quoted phrases, in their order. Returns
    the query unchanged when nothing would be left."""
    words = re.findall(r"\"[^\"]+\"|[\w.$%/+#-]+", query)
    kept = [w for w in words if w.lower().strip(".") not in _QUESTION_WORDS]
    out = " ".join(w.strip(".") for w in kept).strip()
    return out or query


# ---- de-duplication -----------------------------------------------------------------
_WORD = re.compile(r"[a-z0-9_]+")
_STOP = frozenset("a an the of to in on for and or is are was be how do i what can my me with "
                  "does it this that".split())


def query_words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


def word_overlap(a: str, b: str) -> float:
    """Jaccard similarity of content words."""
    wa, wb = query_words(a), query_words(b)
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def apply_history_penalty(hits: Sequence[Hit], served: set[str], penalty: float) -> list[Hit]:
    """Multiply the score of already-served chunks by (1 − penalty) and re-rank."""
    if not served or penalty <= 0:
        return list(hits)
    scored = [h.model_copy(update={"score": h.score * (1 - penalty)}) if h.chunk.id in served else h
              for h in hits]
    scored.sort(key=lambda h: (-h.score, h.chunk.id))
    return [h.model_copy(update={"rank": r}) for r, h in enumerate(scored, 1)]


class AgentQueryBuilder:
    def __init__(self, config: QueryConfig, chat_model: ChatModel | None = None,
                 embed=None) -> None:  # noqa: ANN001 - Callable[[list[str]], np.ndarray]
        self.config = config
        self.embed = embed
        if (config.classifier == "llm" or config.rewriter == "llm") and chat_model is None:
            raise ValueError("query.classifier/rewriter 'llm' needs a chat model")
        if config.dedup == "embedding" and embed is None:
            raise ValueError("query.dedup 'embedding' needs an embed function")
        self._llm_classifier = LLMIntentClassifier(chat_model) if chat_model else None
        self.rewriter = QueryRewriter(config.rewriter, chat_model)

    def classify(self, message: str) -> tuple[IntentType, str]:
        if self.config.classifier == "llm":
            try:
                return self._llm_classifier(message), "llm"  # type: ignore[misc]
            except LLMError as exc:
                return classify_intent_heuristic(message), f"heuristic (llm failed: {exc.kind})"
        return classify_intent_heuristic(message), "heuristic"

    def rewrite(self, message: str) -> str:
        return self.rewriter.rewrite(message)  # an LLM failure propagates as LLMError

    def is_duplicate(self, query: str, previous: Sequence[str]) -> str | None:
        if self.config.dedup == "none" or not previous:
            return None
        if self.config.dedup == "overlap":
            for p in previous:
                if word_overlap(query, p) >= self.config.overlap_threshold:
                    return p
            return None
        vecs = np.asarray(self.embed([query, *previous]))
        sims = vecs[1:] @ vecs[0]
        best = int(np.argmax(sims))
        return previous[best] if sims[best] >= self.config.embedding_threshold else None

    def build_query(self, message: str, agent_state: dict[str, Any] | None = None,
                    previous_retrievals: Sequence[str] = ()) -> RetrievalIntent:
        state = agent_state or {}
        intent, source = self.classify(message)
        if state.get("task_type") in INTENTS:  # the agent knows better than keywords
            intent, source = state["task_type"], "agent_state"
        types = self.config.intent_filters.get(intent, ())
        filters: dict[str, Any] = {}
        if types:
            filters["chunk_type"] = list(types) if len(types) > 1 else types[0]
        query = self.rewrite(message)
        return RetrievalIntent(query=query, original=message, intent=intent, filters=filters,
                               min_confidence=state.get("min_confidence"), classifier=source,
                               duplicate_of=self.is_duplicate(query, previous_retrievals))


# ---- a conversation: the turn's search query from the history ---------------------------
class ConversationState(BaseModel):
    """What a conversation's earlier turns hold for query building (oldest first, one entry per
    turn): the user's messages, the answers, the title of the document each answer drew on
    (the first cited passage's, else the first served one's; "" when none), and whether the
    turn asked a clarifying question. Built by `agent.session.Session.state()`."""

    model_config = ConfigDict(frozen=True)

    messages: list[str] = Field(default_factory=list)
    answers: list[str] = Field(default_factory=list)
    titles: list[str] = Field(default_factory=list)
    clarifying: list[bool] = Field(default_factory=list)


class ConversationQuery(BaseModel):
    """A turn's search query and how it was built: `mode` as run (`"carry (llm failed:
    transport)"` when the rewrite failed), `follow_up` and its `reason` (the carry rule's
    verdict), the words `carried` from earlier turns."""

    model_config = ConfigDict(frozen=True)

    query: str
    message: str
    mode: str
    follow_up: bool = False
    reason: str | None = None
    carried: list[str] = Field(default_factory=list)


# words that point back at something said before (an antecedent in an earlier turn)
_REFERENCES = frozenset("it its itself they them their theirs themselves this these those he "
                        "him his she her hers former latter".split())
_ONE = re.compile(r"\b(?:the|that|this|which|other|another|each|either)\s+ones?\b", re.I)
# openings that continue the previous turn ("and on Windows?", "what about the fees?")
_CONTINUES = ("and", "but", "or", "also", "so", "then", "what about", "how about",
              "what else", "same", "as well", "too", "what if")
# asked of anything, name nothing: not the subject of a message
_REQUEST_WORDS = frozenset(
    "explain describe tell show give mean means meaning example examples more else detail "
    "details please thanks thank okay ok yes no sure about also too again other another one ones "
    "same way get use used using work works need want know find help there here".split())
_NUMBERING = re.compile(r"^\s*(?:\d+\.)+\d*\s*")  # "12. Virtual Environments": a section number
_CONTENT = re.compile(r"[A-Za-z0-9][\w.+#/-]*(?:['’]s\b)?|`[^`]+`")
_POSSESSIVE = re.compile(r"['’]s$")


def content_words(text: str) -> list[str]:
    """The words of `text` that name something: not question or function words, pronouns or
    request words ("explain", "more"), in order, once each (case kept)."""
    out: list[str] = []
    seen: set[str] = set()
    for w in _CONTENT.findall(text):
        w = _POSSESSIVE.sub("", w.strip("`.,;:!?"))
        low = w.lower()
        if (w and low not in _QUESTION_WORDS and low not in _REFERENCES
                and low not in _REQUEST_WORDS and low not in _STOP and word_key(w) not in seen):
            seen.add(word_key(w))
            out.append(w)
    return out


def word_key(word: str) -> str:
    """A word compared without case or a plural s ("Environments" is "environment")."""
    low = word.lower()
    return low[:-1] if len(low) > 3 and low.endswith("s") and not low.endswith("ss") else low


def reference_word(message: str) -> str | None:
    """The first word of `message` that points back ("it", "those", "the other one"), or None."""
    words = re.findall(r"[a-z]+", message.lower())  # "it's": "it"
    ref = next((w for w in words if w in _REFERENCES), None)
    return ref or (m.group(0).lower() if (m := _ONE.search(message)) else None)


def continuing_opening(message: str) -> str | None:
    """The opening of `message` that continues a previous turn ("and", "what about"), or None."""
    low = " ".join(re.findall(r"[a-z']+", message.lower()))
    return next((c for c in _CONTINUES if low == c or low.startswith(c + " ")), None)


def follow_up_reason(message: str, state: ConversationState) -> str | None:
    """The carry rule's first half: why `message` continues the conversation, or None.

    With no earlier turn nothing is a follow-up. Otherwise, in order: (1) the previous turn
    asked a clarifying question, so this is the reply; (2) a reference word ("it", "its",
    "they", "those", "this", "her", "the other one": `_REFERENCES`, `_ONE`); (3) an opening
    that continues ("and ...", "what about ...", "also ...": `_CONTINUES`); (4) a short turn:
    at most one content word (`content_words`: "On Windows?", "fees?", "Why?"), unless the
    message says it is "about" it ("tell me more about lists"). A turn that changes the
    subject in one word ("decorators?") is carried too: a first rule, to be measured on
    MTRAG's follow-ups."""
    if not state.messages:
        return None
    if state.clarifying and state.clarifying[-1]:
        return "replies to a clarifying question"
    ref = reference_word(message)
    if ref:
        return f"refers back ({ref!r})"
    opening = continuing_opening(message)
    if opening:
        return f"continues ({opening!r} ...)"
    own = content_words(message)
    if len(own) <= 1 and not (own and re.search(rf"\babout\s+(?:the\s+)?{re.escape(own[0])}",
                                                message, re.I)):
        return "names at most one thing of its own"
    return None


def carry_subject(message: str, state: ConversationState, previous_retrievals: Sequence[str],
                  max_words: int = 12) -> list[str]:
    """The carry rule's second half: the previous turn's subject, as the words to prepend.

    The content words of the previous turn's query (`previous_retrievals[-1]`, itself carried
    when that turn was a follow-up, so a chain of follow-ups keeps the first subject; its
    message when no query is given), then the words of the title of the document its answer
    drew on (`state.titles[-1]`, its section number dropped); the words the message already holds are left out, at most
    `max_words` in all."""
    source = previous_retrievals[-1] if previous_retrievals else \
        (state.messages[-1] if state.messages else "")
    title = _NUMBERING.sub("", state.titles[-1]) if state.titles else ""
    have = {word_key(w) for w in content_words(message)}
    out: list[str] = []
    for w in content_words(source) + content_words(title):
        if word_key(w) not in have:
            have.add(word_key(w))
            out.append(w)
    return out[:max_words]


_STANDALONE_PROMPT = (
    "You rewrite the last user message of a conversation with a documentation assistant as "
    "one standalone question: say what 'it', 'that', 'the other one' or a missing subject "
    "refers to, from the earlier turns; keep names, numbers and technical terms; add nothing "
    "else. A message that is already standalone is returned unchanged. Answer with JSON "
    "{\"question\": \"...\"}.")


def standalone_prompt(message: str, state: ConversationState, turns: int) -> str:
    """The user turn of the LLM rewrite: the last `turns` earlier turns (answers cut to 300
    characters), then the message."""
    lines = []
    for m, a in list(zip(state.messages, state.answers))[-turns:]:
        lines += [f"User: {m}", f"Assistant: {a[:300]}"]
    return "Conversation:\n" + "\n".join(lines) + f"\n\nLast user message: {message}"


class ConversationQueryBuilder:
    """The design's `build_query(message, agent_state, previous_retrievals)` over a
    conversation (module doc; `agent.session.query_mode`). `max_chars` bounds the query (the
    tool's query limit): carried words past it are dropped, the message never."""

    def __init__(self, config: SessionConfig, chat_model: ChatModel | None = None,
                 max_chars: int = 200) -> None:
        if config.query_mode == "llm_rewrite" and chat_model is None:
            raise ValueError("session.query_mode 'llm_rewrite' needs a chat model")
        self.config, self.chat, self.max_chars = config, chat_model, max_chars

    def build_query(self, message: str, agent_state: ConversationState | None = None,
                    previous_retrievals: Sequence[str] = ()) -> ConversationQuery:
        state = agent_state or ConversationState()
        message = " ".join(message.split())
        mode = self.config.query_mode
        if mode == "last_turn" or not state.messages:
            return ConversationQuery(query=message, message=message, mode=mode)
        if mode == "llm_rewrite":
            try:
                return ConversationQuery(query=self.rewrite(message, state), message=message,
                                         mode=mode, follow_up=True, reason="rewritten")
            except LLMError as exc:
                mode = f"carry (llm failed: {exc.kind})"
        return self._carry(message, state, previous_retrievals, mode)

    def _carry(self, message: str, state: ConversationState,
               previous_retrievals: Sequence[str], mode: str) -> ConversationQuery:
        reason = follow_up_reason(message, state)
        if reason is None:
            return ConversationQuery(query=message, message=message, mode=mode)
        words = carry_subject(message, state, previous_retrievals, self.config.carry_words)
        while words and len(" ".join(words)) + 2 + len(message) > self.max_chars:
            words.pop()
        query = f"{' '.join(words)}: {message}" if words else message
        return ConversationQuery(query=query, message=message, mode=mode, follow_up=True,
                                 reason=reason, carried=words)

    def rewrite(self, message: str, state: ConversationState) -> str:
        """The model's standalone rewrite of `message` after `state`'s turns (one cached call;
        raises `LLMError` when it fails)."""
        schema = {"type": "object", "properties": {"question": {
            "type": "string", "minLength": 1, "maxLength": self.max_chars}},
            "required": ["question"]}
        q, _ = ask_json_field(self.chat, _STANDALONE_PROMPT,  # type: ignore[arg-type]
                              standalone_prompt(message, state, self.config.rewrite_turns),
                              "question", schema, lambda v: isinstance(v, str) and bool(v.strip()),
                              max_tokens=96)
        return " ".join(q.split())[:self.max_chars]


def conversation_queries(messages: Sequence[str], answers: Sequence[str] = (),
                         config: SessionConfig | None = None, chat_model: ChatModel | None = None,
                         titles: Sequence[str] = ()) -> list[ConversationQuery]:
    """The search query of every user turn of a transcript, built in order as a session builds
    them (each from the turns before it and their queries), without searching or answering:
    `answers` and `titles` are the earlier turns' answers and the titles of the documents they
    drew on, where known ("" where not). For replaying human conversations (MTRAG) and for
    comparing `session.query_mode`s on the same turns."""
    b = ConversationQueryBuilder(config or SessionConfig(), chat_model)
    out: list[ConversationQuery] = []
    for i, message in enumerate(messages):
        state = ConversationState(
            messages=list(messages[:i]),
            answers=[answers[j] if j < len(answers) else "" for j in range(i)],
            titles=[titles[j] if j < len(titles) else "" for j in range(i)],
            clarifying=[False] * i)
        out.append(b.build_query(message, state, [q.query for q in out]))
    return out
