"""The agent's configuration sections (`RAGConfig.agent`): the tool-use loop, its support
gate and detector, and a conversation's session; the traces of its runs (`RAGConfig.tracing`);
and where a question ends and a ticket
begins (`QUESTION_WORDS`), shared by the named lists of retrieval
(`fusion.named_question_words`) and the gate's amount rule (`evaluation.figures.asks_amount`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agentic_rag.config_base import _Section

# a question, not a ticket: a customer's whole message (τ²-banking's scenarios, 198–1,255
# words) names products in passing and asks for many things; questions have 3–24 words in
# every set here (issue 40's fourth round chose 64 for the named lists)
QUESTION_WORDS = 64


SupportDetector = Literal["graded_judge", "lexical", "mean", "lexical_numbers", "mean_numbers",
                          "graded_judge_q", "mean_numbers_q"]


class SupportConfig(_Section):
    """How well an answer is supported by its passages (`evaluation/support.py`; validation
    figures in docs/experiments.md): the agent's final answer against the passages it cites,
    and a sweep's `hallucinated` metric (support below `threshold` under `detector`, the
    answer against the served chunks; `enabled` is about the agent only)."""

    enabled: bool = Field(
        False, description="score run_agent's final answer against the passages it cites (the "
        "served ones when it cites none); graded_judge and mean cost one more LLM call per "
        "answer, so it is off in the library (the agent evaluation keeps its cost); "
        "`agentic-rag ask` turns it on unless --no-support")
    detector: SupportDetector = Field(
        "graded_judge_q", description="graded_judge: the LLM judge's P(yes) from its log-probabilities; "
        "lexical: the share of the answer's content words found in the passages (no LLM); "
        "mean: the average of the two; "
        "lexical_numbers: lexical, but 0 when a number of the answer is not in the passages; "
        "mean_numbers: the average of graded_judge and lexical_numbers; "
        "graded_judge_q (default), mean_numbers_q: the same with a judge that also reads the "
        "question. The question-blind parts do not score an answer without checkable words (a "
        "bare yes/no, number or word: `support.checkable`), so only the _q detectors decide "
        "every answer. graded_judge_q wins on decisions: held-out balanced accuracy 0.607 "
        "[0.530, 0.686] on the 150 LLM-labelled own answers (5-fold CV of the threshold; "
        "mean_numbers 0.599 deciding 63 % of answers, call-everything-supported 0.500; "
        "experiments/detectors/halueval-own/decisions.csv)")
    threshold: float = Field(0.536, ge=0.0, le=1.0,
                             description="an answer whose support is below this is unsupported; "
                             "0.536: the threshold that maximises graded_judge_q's balanced "
                             "accuracy on all 150 LLM-labelled own answers (a different "
                             "detector needs its own: decisions.csv, threshold_all)")
    on_unsupported: Literal["flag", "retry", "abstain"] = Field(
        "abstain", description="the support gate (agent/gate.py; no LLM): every figure of the "
        "answer must be stated in a passage it cites, from a document about the product, plan, "
        "function or command the question names. flag: record the verdict, keep the answer; "
        "retry: search once more for the missing fact (within the named documents) and answer "
        "again, then 'I don't know' naming what was looked for if it still fails; abstain: "
        "'I don't know' at once. Runs whether or not `enabled` (the detector) is on. "
        "abstain (default): chosen on the 67 banking-products dev questions by the rule in "
        "experiments/agent-support/CHOICE-RULE.md: with title coverage, wrong answers 0.134 "
        "(flag) -> 0.075 (-0.060 [-0.134, -0.015]), at a cost of correct 0.731 -> 0.627; retry "
        "tied on wrong (0.075) with more calls")
    amount_needs_figure: bool = Field(
        True, description="the gate also fails an answer that states no figure (nor a zero in "
        "words: 'free', 'does not charge', 'unlimited') to a question asking for an amount "
        "('how much/many', 'what is the <fee, rate, limit, balance...>', 'tell me the ...'; "
        "not a how-to or yes/no question, nor a message over 64 words: "
        "evaluation.figures.asks_amount); "
        "on_unsupported then acts on it. true (default) by the rule in "
        "experiments/agent-support/CHOICE-RULE-AMOUNT.md: on the three dev sets (201 questions) "
        "wrong 0.015 -> 0, 0.060 -> 0.045, 0.042 -> 0.014, correct unchanged; the 4 answers it "
        "turned into 'I don't know' were all wrong")
    passage_numbers: Literal["figure", "pointer", "citation"] = Field(
        "figure", description="how the gate reads a bracketed passage number in an answer "
        "('... is $10,000. [4]', '[Document 2]'): figure, as a figure the answer states; "
        "pointer, as a pointer at a passage, not a figure (as the evaluation reads it); "
        "citation, as a pointer that also cites the passage numbered so in the latest search "
        "that served it. figure (default) by the rule in "
        "experiments/agent-support/CHOICE-RULE-ORDINAL.md (no rise of wrong answers on any dev "
        "set): on the three dev sets (206 questions) pointer turned 10 abstentions into correct "
        "answers and 1 into a wrong one (correct 0.896 -> 0.970, 0.687 -> 0.731, 0.833 -> "
        "0.861; wrong 1 -> 2 of 72 on generated-s2); citation +8 and -2 correct (net +6), "
        "+1 wrong")



class SessionConfig(_Section):
    """A conversation (`agent/session.py`, `agentic-rag chat`): how each turn's search query is
    built from the history (`retrieve/query.py`'s `ConversationQueryBuilder`), how much of the
    history the prompt keeps, the history penalty across turns and the clarifying rule. A
    single question (`run_agent`, `ask`, the evaluations) never reads it. First values, to be
    measured on MTRAG's human conversations (issue 61)."""

    query_mode: Literal["last_turn", "carry", "llm_rewrite"] = Field(
        "carry", description="the search query of a turn: last_turn, the message alone; carry, "
        "a follow-up (a reference word such as 'it' or 'those', an opening such as 'and' or "
        "'what about', a message naming at most one thing of its own, or the reply to a "
        "clarifying question) gets the previous turn's subject prepended: the content words of "
        "its query and the title of the document its answer cited (no LLM); llm_rewrite, the "
        "model rewrites every turn after the first into a standalone question (one cached call "
        "a turn; a failure falls back to carry and is recorded)")
    history_tokens: int = Field(
        1024, ge=0, le=32768, description="tokens of earlier turns (each the user's message and "
        "the answer, citations removed) kept at the front of the prompt, newest first ('recent "
        "> relevant'): past the budget the oldest are dropped until the rest fit in half of it, "
        "so the prompt's prefix, which llama-server's prompt cache reuses, changes once per "
        "block of turns; 0: no history in the prompt")
    penalty_turns: int | None = Field(
        None, ge=0, description="passages served on the last N earlier turns are penalised "
        "like those served earlier in the turn (query.history_penalty); None: every earlier "
        "turn; 0: within the turn only")
    carry_words: int = Field(12, ge=1, le=64, description="carry: at most this many words "
                             "carried from the earlier turns")
    rewrite_turns: int = Field(4, ge=1, le=32, description="llm_rewrite: the earlier turns the "
                               "model reads")
    answer_question: Literal["message", "rewrite"] = Field(
        "message", description="the question the answering prompt asks after the passages: "
        "message, the turn as written (the history before it); rewrite, the model's "
        "standalone rewrite of a turn after the first (llm_rewrite's search query, else one "
        "more cached call with its prompt; a failed call keeps the message and is recorded): "
        "for a model that does not resolve 'it' from the history (experiments/conversations/"
        "question)")
    clarify: Literal["off", "rule", "llm"] = Field(
        "rule", description="rule: ask a clarifying question instead of answering when the "
        "message names nothing to search and no earlier turn gives it a subject, refers back "
        "('it', 'what about ...') with no earlier turn, or is a single word whose first "
        "search serves passages of clarify_documents or more documents (agent/session.py; a "
        "first rule, to be measured on MTRAG's UNDERSPECIFIED turns); llm: the rule, then the "
        "model asked after the first search whether the message says which thing it means "
        "(one cached call a turn; experiments/conversations/clarify); rules (c) and (d) follow "
        "the first search, so they act under agent.policy retrieve_first only; off: always "
        "answer")
    clarify_documents: int = Field(3, ge=2, le=10, description="clarify: distinct documents "
                                   "among a one-word message's passages that make it ambiguous")


class AgentConfig(_Section):
    """The agent loop around the `search_documents` tool (`agent.py`)."""

    policy: Literal["retrieve_first", "tool_required", "free", "closed_book"] = Field(
        "retrieve_first", description="retrieve_first: the question is searched before the "
        "model's first turn; tool_required: the first step must be a search; free: the model "
        "decides; closed_book: no retrieval at all (the 'without RAG' baseline)")
    mode: Literal["native", "json"] = "native"
    max_steps: int = Field(3, ge=1, le=20)
    action_max_tokens: int = Field(160, ge=16, le=4096,
                                   description="max_tokens of one JSON action / tool-call turn")
    answer_max_tokens: int = Field(256, ge=16, le=8192)
    support: SupportConfig = SupportConfig()
    session: SessionConfig = SessionConfig()


class TracingConfig(_Section):
    """OpenTelemetry traces of agent runs (`agentic_rag/tracing.py`): where the spans of
    `agent-eval`, `chat` and a sweep's agent rows (sessions included) go. The library
    alone records nothing."""

    export: Literal["off", "file", "otlp"] = Field(
        "file", description="file: OTLP-JSON lines in the run folder (traces.jsonl); otlp: sent "
        "to `endpoint` over gRPC (Phoenix, MLflow, Jaeger, a collector), falling back to the "
        "file, said once, when the endpoint does not answer; off: none (the API's no-op spans)")
    endpoint: str = Field("127.0.0.1:4317", min_length=3,
                          description="otlp: host:port of an OTLP/gRPC receiver")
    insecure: bool = Field(True, description="otlp: plain gRPC, no TLS (a local receiver)")
    timeout_s: float = Field(5.0, gt=0, le=60, description="otlp: seconds per export")
