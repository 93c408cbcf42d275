"""A conversation with the agent (agent/session.py, retrieve/query.py's conversation part) on
the project's fakes: a scripted OpenAI client and the hashing embedder. No server."""

from __future__ import annotations

import json

import pytest

from agentic_rag.agent.loop import SYSTEM_NATIVE, run_agent
from agentic_rag.agent.result import strip_citations
from agentic_rag.agent.session import (
    ASK_UNCLEAR,
    ASK_WHAT,
    ASK_WHICH,
    MESSAGE_MAX_CHARS,
    ServedPassage,
    Session,
    Turn,
    ask_which,
    history_start,
    run_turn,
)
from agentic_rag.agent.tool import AgenticRAGTool
from agentic_rag.config import AgentConfig, RAGConfig
from agentic_rag.config_agent import SessionConfig
from agentic_rag.config_llm import LLMConfig
from agentic_rag.documents import Document
from agentic_rag.llm.cache import ChatCache
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.retrieve.context import citation_id
from agentic_rag.retrieve.pipeline import Pipeline
from agentic_rag.retrieve.query import (
    ConversationQueryBuilder,
    ConversationState,
    carry_subject,
    follow_up_reason,
)
from agentic_rag.store.index import AgenticIndex

from .fakes import HashingEmbedder, fake_openai_client

VENV = ConversationState(messages=["How do I create a virtual environment?"],
                         answers=["Run python -m venv tutorial-env."],
                         titles=["12. Virtual Environments and Packages"], clarifying=[False])
VENV_Q = ["How do I create a virtual environment?"]


def model(script, cache=None):  # noqa: ANN001, ANN201
    client, completions = fake_openai_client(script)
    return OpenAIChatModel(LLMConfig(max_retries=0), client=client, cache=cache,
                           sleep=lambda s: None), completions


def session_cfg(**kw) -> AgentConfig:  # noqa: ANN003
    return AgentConfig(session=SessionConfig(**kw))


# ---- build_query's modes ------------------------------------------------------------------
def test_last_turn_searches_the_message_alone():
    b = ConversationQueryBuilder(SessionConfig(query_mode="last_turn"))
    got = b.build_query("How do I activate it on Windows?", VENV, VENV_Q)
    assert got.query == "How do I activate it on Windows?" and not got.follow_up
    assert got.mode == "last_turn"


@pytest.mark.parametrize("message,reason", [
    ("How do I activate it on Windows?", "refers back ('it')"),
    ("Which one is faster?", "refers back ('which one')"),
    ("And on macOS?", "continues ('and' ...)"),
    ("What about Linux?", "continues ('what about' ...)"),
    ("On Windows?", "names at most one thing of its own"),
    ("fees?", "names at most one thing of its own"),
])
def test_carry_detects_follow_ups(message, reason):
    assert follow_up_reason(message, VENV) == reason


@pytest.mark.parametrize("message", [
    "What is a decorator in Python?",  # names its own subject
    "Can you tell me more about lists?",  # "about" what: its own subject
])
def test_carry_leaves_standalone_turns_alone(message):
    assert follow_up_reason(message, VENV) is None
    got = ConversationQueryBuilder(SessionConfig()).build_query(message, VENV, VENV_Q)
    assert got.query == message and not got.follow_up and got.carried == []


def test_nothing_is_a_follow_up_on_the_first_turn():
    assert follow_up_reason("How do I activate it?", ConversationState()) is None
    got = ConversationQueryBuilder(SessionConfig()).build_query("How do I activate it?")
    assert got.query == "How do I activate it?" and not got.follow_up


def test_carry_prepends_the_previous_subject_and_title():
    got = ConversationQueryBuilder(SessionConfig()).build_query(
        "How do I activate it on Windows?", VENV, VENV_Q)
    # the previous query's content words, then the title's (section number and words already
    # there dropped: "Environments" is "environment"), then the message, whole
    assert got.carried == ["create", "virtual", "environment", "Packages"]
    assert got.query == "create virtual environment Packages: How do I activate it on Windows?"
    assert got.follow_up and got.mode == "carry"


def test_carry_follows_a_chain_and_a_clarifying_reply():
    b = ConversationQueryBuilder(SessionConfig())
    second = b.build_query("How do I activate it on Windows?", VENV, VENV_Q).query
    state = VENV.model_copy(update={"messages": [*VENV.messages, "How do I activate it?"],
                                    "answers": [*VENV.answers, "Run activate.bat."],
                                    "titles": [*VENV.titles, ""],
                                    "clarifying": [False, False]})
    third = b.build_query("And deactivate?", state, [*VENV_Q, second])
    assert {"virtual", "environment", "activate", "Windows"} <= set(third.carried)
    asked = ConversationState(messages=["fees?"], answers=["Which one do you mean: ...?"],
                              titles=[""], clarifying=[True])
    reply = b.build_query("The Blue Account", asked, ["fees?"])
    assert reply.reason == "replies to a clarifying question"
    assert reply.query == "fees: The Blue Account"


def test_carry_keeps_the_query_within_the_limit_and_the_message_whole():
    long_q = ["virtual environment " + " ".join(f"word{i}" for i in range(40))]
    b = ConversationQueryBuilder(SessionConfig(carry_words=64), max_chars=60)
    got = b.build_query("And on Windows, how do I activate it?", VENV, long_q)
    assert len(got.query) <= 60 and got.query.endswith("And on Windows, how do I activate it?")
    assert carry_subject("x", VENV, VENV_Q, max_words=2) == ["create", "virtual"]


def test_llm_rewrite_asks_once_per_later_turn_and_is_cached(tmp_path):
    cache = ChatCache(tmp_path / "llm.sqlite")
    chat, calls = model([json.dumps({"question": "How do I activate a virtual environment "
                                                 "on Windows?"})], cache=cache)
    b = ConversationQueryBuilder(SessionConfig(query_mode="llm_rewrite"), chat)
    assert b.build_query("How do I create a virtual environment?").query == \
        "How do I create a virtual environment?"  # the first turn: no call
    assert calls.requests == []
    got = b.build_query("How do I activate it on Windows?", VENV, VENV_Q)
    assert got.query == "How do I activate a virtual environment on Windows?"
    assert got.mode == "llm_rewrite" and got.follow_up
    user = calls.requests[0]["messages"][-1]["content"]
    assert "User: How do I create a virtual environment?" in user
    assert "Assistant: Run python -m venv tutorial-env." in user
    assert user.endswith("Last user message: How do I activate it on Windows?")
    again, calls2 = model([], cache=cache)  # same model identity: read from the cache
    got2 = ConversationQueryBuilder(SessionConfig(query_mode="llm_rewrite"), again).build_query(
        "How do I activate it on Windows?", VENV, VENV_Q)
    assert got2.query == got.query and calls2.requests == []


def test_a_failed_llm_rewrite_falls_back_to_carry_and_says_so():
    chat, _ = model(["not json", "still not json"])
    got = ConversationQueryBuilder(SessionConfig(query_mode="llm_rewrite"), chat).build_query(
        "How do I activate it on Windows?", VENV, VENV_Q)
    assert got.mode == "carry (llm failed: malformed)"
    assert got.query.startswith("create virtual environment")
    with pytest.raises(ValueError, match="needs a chat model"):
        ConversationQueryBuilder(SessionConfig(query_mode="llm_rewrite"))


# ---- the turn loop on a small index -------------------------------------------------------
DOCS = [
    Document(id="venv.md", title="Virtual environments",
             text="# Virtual environments\n\nCreate one with `python -m venv env`. Activate it "
                  "with `env\\Scripts\\activate.bat` on Windows or `source env/bin/activate`.\n"),
    Document(id="blue.md", title="Blue Account",
             text="# Blue Account\n\nThe Blue Account's monthly fee is $20.\n"),
    Document(id="green.md", title="Green Account",
             text="# Green Account\n\nThe Green Account's monthly fee is $5.\n"),
    Document(id="gold.md", title="Gold Account",
             text="# Gold Account\n\nThe Gold Account's monthly fee is $30.\n"),
]


class RecordingTool(AgenticRAGTool):
    """The real tool, recording the session (served chunks) each search started with."""

    def __init__(self, pipeline: Pipeline) -> None:
        super().__init__(pipeline)
        self.seen: list[tuple[str, set[str]]] = []

    def search(self, query, max_results=5, focus_area="any"):  # noqa: ANN001, ANN201
        self.seen.append((query, set(self.served)))
        return super().search(query, max_results, focus_area)


@pytest.fixture
def tool(tmp_path):
    idx = AgenticIndex(RAGConfig(home=str(tmp_path / "home")), embedder=HashingEmbedder())
    idx.add_documents(DOCS)
    return RecordingTool(Pipeline(idx.config, index=idx))


def answers(n: int, text: str = "From the passages.") -> list[str]:
    return [text] * n


def test_a_turn_records_queries_passages_and_citations(tool):
    served = tool.search("How do I create a virtual environment?").chunk_ids
    chat, _ = model([f"Run python -m venv env [{citation_id(served[0])}]."])
    s = Session()
    turn = run_turn(s, "How do I create a virtual environment?", chat, tool,
                    AgentConfig(max_steps=1))
    assert s.turns == [turn] and turn.n == 1 and not turn.follow_up
    assert turn.queries == ["How do I create a virtual environment?"]  # as the tool searched it
    assert turn.passages and turn.passages[0].chunk_id == served[0]
    p = turn.passages[0]
    assert p.doc_id == "venv.md" and p.title == "Virtual environments" and "venv" in p.text
    assert turn.cited == [served[0]] and turn.citations == [citation_id(served[0])]
    assert not turn.abstained and not turn.clarifying and turn.stop_reason == "answer"
    row = json.loads(json.dumps(turn.model_dump(mode="json")))
    assert "result" not in row and row["passages"][0]["chunk_id"] == served[0]


def test_the_history_is_a_stable_prefix_and_the_new_turn_comes_last(tool):
    chat, calls = model(answers(3))
    s, cfg = Session(), AgentConfig(max_steps=2)  # one decision turn: the model answers there
    for m in ("How do I create a virtual environment?", "How do I activate it on Windows?",
              "And on Linux?"):
        run_turn(s, m, chat, tool, cfg)
    prompts = [r["messages"] for r in calls.requests]
    assert [len(p) for p in prompts] == [2, 4, 6]
    assert prompts[0][0]["content"] == SYSTEM_NATIVE
    assert prompts[1][1:3] == [{"role": "user", "content": "How do I create a virtual environment?"},
                               {"role": "assistant", "content": "From the passages."}]
    assert prompts[2][:4] == prompts[1][:3] + [prompts[2][3]]  # turn 2's prefix, grown
    last = prompts[2][-1]
    assert last["role"] == "user" and "Question: And on Linux?" in last["content"]
    assert last["content"].startswith("Passages from the documentation:")
    assert s.turns[1].follow_up and s.turns[1].query.startswith("create virtual environment")
    assert s.turns[2].history_turns == 2


def test_answer_question_rewrite_asks_the_standalone_question_after_the_history(tool):
    """`answer_question: rewrite`: the answering prompt asks the model's rewrite (one more
    call under carry, none more under llm_rewrite); the history stays in front; the search
    is the carry query either way; the message is the default."""
    rewrite = json.dumps({"question": "How do I activate a virtual environment on Windows?"})
    first = "How do I create a virtual environment?"
    chat, calls = model(["Run python -m venv env.", rewrite, "Run activate.bat."])
    s, cfg = Session(), AgentConfig(max_steps=1, session=SessionConfig(answer_question="rewrite"))
    run_turn(s, first, chat, tool, cfg)
    turn = run_turn(s, "How do I activate it on Windows?", chat, tool, cfg)
    assert [t.question for t in s.turns] == [first, "How do I activate a virtual environment "
                                             "on Windows?"]  # the first turn: no call
    assert turn.question_error is None and turn.query.startswith("create virtual environment")
    asked = calls.requests[2]["messages"]
    assert asked[1:3] == [{"role": "user", "content": first},
                          {"role": "assistant", "content": "Run python -m venv env."}]
    assert "Question: How do I activate a virtual environment on Windows?" in asked[-1]["content"]
    assert "Question: How do I activate it on Windows?" not in asked[-1]["content"]

    chat2, calls2 = model(["Run python -m venv env.", rewrite, "Run activate.bat."])
    cfg2 = AgentConfig(max_steps=1, session=SessionConfig(answer_question="rewrite",
                                                          query_mode="llm_rewrite"))
    s2 = Session()
    run_turn(s2, first, chat2, tool, cfg2)
    t2 = run_turn(s2, "How do I activate it on Windows?", chat2, tool, cfg2)
    assert len(calls2.requests) == 3 and t2.query == t2.question  # the search's rewrite, reused

    chat3, calls3 = model(["Run python -m venv env.", "not json", "still not json", "Fine."])
    s3 = Session()
    run_turn(s3, first, chat3, tool, cfg)
    t3 = run_turn(s3, "How do I activate it on Windows?", chat3, tool, cfg)
    assert t3.question == "How do I activate it on Windows?" and t3.question_error == "malformed"
    assert "Question: How do I activate it on Windows?" in calls3.requests[-1]["messages"][-1][
        "content"]
    assert SessionConfig().answer_question == "message"


def test_a_single_question_sends_what_it_sent_before(tool):
    """No session: run_agent's messages are the single question's (system, then user)."""
    chat, calls = model(answers(1))
    run_agent("How do I create a virtual environment?", chat, tool, max_steps=1)
    roles = [m["role"] for m in calls.requests[0]["messages"]]
    assert roles == ["system", "user"]


def test_passages_of_earlier_turns_are_penalised(tool):
    chat, _ = model(answers(3))
    s = Session()
    cfg = AgentConfig(max_steps=1)
    for m in ("What is the Blue Account's monthly fee?", "What is the Blue Account's monthly fee?",
              "What is the Green Account's monthly fee?"):
        run_turn(s, m, chat, tool, cfg)
    first = {p.chunk_id for p in s.turns[0].passages}
    assert tool.seen[0][1] == set() and tool.seen[1][1] == first
    # the same query again: the passages served on turn 1 score x (1 - 0.3)
    before = {p.chunk_id: p for p in s.turns[0].passages}
    scores = [_score(s.turns[t].result, s.turns[0].passages[0].chunk_id) for t in (0, 1)]
    assert scores[1] == pytest.approx(scores[0] * 0.7, abs=0.011), (scores, before)
    assert tool.seen[2][1] == first | {p.chunk_id for p in s.turns[1].passages}


def test_penalty_turns_limits_the_penalty_to_recent_turns(tool):
    chat, _ = model(answers(3))
    s = Session()
    for m in ("What is the Blue Account's monthly fee?", "How do I create a virtual environment?",
              "What is the Gold Account's monthly fee?"):
        run_turn(s, m, chat, tool, session_cfg(penalty_turns=1).model_copy(
            update={"max_steps": 1}))
    assert tool.seen[2][1] == {p.chunk_id for p in s.turns[1].passages}
    chat0, _ = model(answers(1))
    run_turn(s, "And the Green one?", chat0, tool,
             session_cfg(penalty_turns=0).model_copy(update={"max_steps": 1}))
    assert tool.seen[3][1] == set()


def _score(res, chunk_id: str) -> float:  # noqa: ANN001 - AgentResult
    """The score the served passage's header shows for `chunk_id`."""
    content = next(s.tool.content for s in res.steps if s.tool)
    cid = citation_id(chunk_id)
    head = content[content.index(f"[{cid}]"):].split("\n", 2)[1]
    return float(head.rsplit("score: ", 1)[1])


# ---- the context budget -------------------------------------------------------------------
def test_history_start_keeps_recent_turns_and_moves_in_blocks():
    assert history_start([100, 100, 100], 0, 1000) == 0  # all fit
    assert history_start([100] * 12, 0, 1000) == 7  # over: the oldest go until 500 fit
    assert history_start([100] * 13, 7, 1000) == 7  # the window stays while the rest fit
    assert history_start([100, 100, 2000], 0, 1000) == 3  # a turn over half: none kept
    assert history_start([100, 100], 0, 0) == 2  # no history in the prompt
    assert history_start([100, 100], 5, 1000) == 2


def test_the_budget_drops_the_oldest_turns_from_the_prompt(tool):
    chat, calls = model(answers(4, "word " * 30))
    s = Session()
    cfg = session_cfg(history_tokens=100).model_copy(update={"max_steps": 1})
    for m in ("What is the Blue Account's monthly fee?", "What is the Green Account's fee?",
              "What is the Gold Account's monthly fee?", "How do I create a virtual environment?"):
        run_turn(s, m, chat, tool, cfg)
    held = [[m["content"] for m in r["messages"][1:-1] if m["role"] == "user"]
            for r in calls.requests]
    # a turn is ~40 tokens: two fit in 100; at the fourth, three do not, and the oldest go
    # until the rest fit in 50
    assert held[:2] == [[], ["What is the Blue Account's monthly fee?"]]
    assert held[2] == ["What is the Blue Account's monthly fee?", "What is the Green Account's fee?"]
    assert held[3] == ["What is the Gold Account's monthly fee?"]
    assert [t.history_turns for t in s.turns] == [0, 1, 2, 1] and s.history_from == 2


# ---- clarifying questions -----------------------------------------------------------------
def test_a_first_turn_that_names_nothing_gets_a_clarifying_question(tool):
    chat, calls = model([])
    s = Session()
    turn = run_turn(s, "Tell me more", chat, tool)
    assert turn.clarifying and turn.answer == ASK_WHAT and turn.stop_reason == "clarify"
    assert calls.requests == [] and tool.seen == [] and turn.queries == []
    ref = run_turn(Session(), "How do I activate it?", chat, tool)
    assert ref.clarifying and "'it'" in ref.answer and calls.requests == []


def test_a_one_word_question_over_many_documents_asks_which(tool):
    chat, calls = model(answers(1, "The Blue Account's monthly fee is $20."))
    s = Session()
    turn = run_turn(s, "fee?", chat, tool, AgentConfig(max_steps=1))
    assert turn.clarifying and turn.answer.startswith("Which one do you mean: ")
    assert "Blue Account" in turn.answer and calls.requests == []
    assert turn.queries and turn.passages == []  # searched; the model was shown nothing
    reply = run_turn(s, "The Blue one", chat, tool, AgentConfig(max_steps=1))
    assert reply.follow_up and reply.query == "fee: The Blue one" and not reply.clarifying
    assert reply.passages and reply.history_turns == 1


def test_clarify_off_always_answers(tool):
    chat, calls = model(answers(2))
    off = session_cfg(clarify="off").model_copy(update={"max_steps": 1})
    assert not run_turn(Session(), "fee?", chat, tool, off).clarifying
    assert not run_turn(Session(), "How do I activate it?", chat, tool, off).clarifying
    assert len(calls.requests) == 2


def test_clarify_llm_asks_which_when_the_model_finds_the_message_ambiguous(tool):
    """Rule (d): the check is one JSON call after the first search, with the conversation and
    the titles of the documents found; "ambiguous" asks which, naming them, and the model is
    not asked to answer."""
    chat, calls = model(['{"ambiguous": true}'])
    cfg = session_cfg(clarify="llm").model_copy(update={"max_steps": 1})
    turn = run_turn(Session(), "What does the account cost a month?", chat, tool, cfg)
    assert turn.clarifying and turn.clarify_check == "ambiguous"
    assert turn.answer.startswith("Which one do you mean: ") and "Account" in turn.answer
    assert turn.stop_reason == "clarify" and turn.queries and len(calls.requests) == 1
    assert turn.prompt_tokens > 0  # the check's call is the turn's cost
    sent = calls.requests[0]
    assert "ambiguous" in sent["messages"][0]["content"]
    assert "Last user message: What does the account cost a month?" in \
        sent["messages"][1]["content"]
    assert "The search for it found passages of: " in sent["messages"][1]["content"]


def test_ask_which_names_distinct_titles_only():
    def p(doc, title):  # noqa: ANN001, ANN202
        return ServedPassage(doc_id=doc, chunk_id=f"{doc}#0", citation_id="abcde", title=title,
                             text="x")
    got = ask_which([p("a", "Poverty in the UK"), p("b", "Poverty in\tthe  UK"), p("c", ""),
                     p("d", "Gold Account"), p("e", "Blue Account")], 3)
    assert got == ASK_WHICH.format(options="Poverty in the UK, Gold Account or Blue Account")
    assert ask_which([p("a", "Gold Account"), p("b", "Gold Account"), p("c", "")], 3) == \
        ASK_UNCLEAR


def test_clarify_llm_answers_a_clear_message_and_a_failed_check(tool):
    chat, calls = model(['{"ambiguous": false}', "The Blue Account's fee is $20.",
                         "not json", "The Blue Account's fee is $20."])  # no retries
    cfg = session_cfg(clarify="llm").model_copy(update={"max_steps": 1})
    clear = run_turn(Session(), "What is the Blue Account's monthly fee?", chat, tool, cfg)
    assert not clear.clarifying and clear.clarify_check == "clear" and clear.passages
    assert clear.answer.startswith("The Blue Account")
    failed = run_turn(Session(), "What is the Blue Account's monthly fee?", chat, tool, cfg)
    assert not failed.clarifying and failed.clarify_check == "malformed"
    assert failed.answer.startswith("The Blue Account")
    # the rule still comes first: no check is asked for a turn the rule clarifies
    n = len(calls.requests)
    assert run_turn(Session(), "Tell me more", chat, tool, cfg).clarify_check is None
    assert len(calls.requests) == n


def test_an_unanswerable_turn_still_says_i_dont_know(tool):
    """The single question's path: a search that serves nothing is "I don't know" without
    the model."""
    from .test_agent_policy import EmptyTool

    chat, calls = model([])
    turn = run_turn(Session(), "What is the capital of France?", chat, EmptyTool(),
                    AgentConfig(max_steps=1))
    assert turn.abstained and turn.stop_reason == "nothing_found" and calls.requests == []


def test_turns_over_the_limit_or_empty_are_refused(tool):
    chat, _ = model([])
    with pytest.raises(ValueError, match=f"query limit of {MESSAGE_MAX_CHARS}"):
        run_turn(Session(), "x" * (MESSAGE_MAX_CHARS + 1), chat, tool)
    with pytest.raises(ValueError, match="empty turn"):
        run_turn(Session(), "   ", chat, tool)


def test_conversation_queries_replays_a_transcript_as_a_session_would():
    from agentic_rag.retrieve.query import conversation_queries

    turns = ["How do I create a virtual environment?", "How do I activate it on Windows?",
             "And deactivate?"]
    got = [q.query for q in conversation_queries(turns)]
    assert got == ["How do I create a virtual environment?",
                   "create virtual environment: How do I activate it on Windows?",
                   "create virtual environment activate Windows: And deactivate?"]
    last = [q.query for q in conversation_queries(turns, config=SessionConfig(
        query_mode="last_turn"))]
    assert last == turns
    titled = conversation_queries(turns[:2], titles=["12. Virtual Environments and Packages"])
    assert titled[1].carried == ["create", "virtual", "environment", "Packages"]


def test_the_gate_reads_the_carried_subject_of_a_follow_up(tool):
    """"What is its monthly fee?" names nothing; its query carries "Blue Account", so an answer
    that cites another account's fee fails the gate's wrong-product check and is replaced."""
    green = next(c.id for c in tool.pipeline.index.lexical.chunks if c.doc_id == "green.md")
    blue = next(c.id for c in tool.pipeline.index.lexical.chunks if c.doc_id == "blue.md")
    chat, _ = model([f"The Blue Account's monthly fee is $20 [{citation_id(blue)}].",
                     f"Its monthly fee is $5 [{citation_id(green)}]."])
    s = Session()
    cfg = AgentConfig(max_steps=1)
    assert not run_turn(s, "What is the Blue Account's monthly fee?", chat, tool, cfg).abstained
    turn = run_turn(s, "What is its monthly fee?", chat, tool, cfg)
    assert turn.query.startswith("Blue Account: ") and green in {p.chunk_id for p in turn.passages}
    assert turn.result.named_documents == ["blue.md"] and turn.result.gate_action == "abstain"
    assert turn.abstained and "Blue Account" in turn.answer


# ---- the prompt cache: a stable prefix across turns (issue 61, item 6) --------------------
def test_each_turn_prompt_starts_with_the_last_one_until_the_budget_drops_a_block(tool):
    """Under the default session settings, turn n+1's first call re-sends turn n's prompt as
    it was up to its last message (the system prompt, the tools, the earlier turns), then turn
    n's message and answer: llama-server's prompt cache reuses all of it. Only when the budget
    drops a block of old turns does the prefix change, once, and then it is stable again."""
    def prefix_kept(before: dict, after: dict, turn: Turn) -> bool:
        a, b = before["messages"], after["messages"]
        return (b[:len(a) - 1] == a[:-1] and b[len(a) - 1:len(a) + 1] ==
                [{"role": "user", "content": turn.message},
                 {"role": "assistant", "content": strip_citations(turn.answer)}]
                and after.get("tools") == before.get("tools"))

    chat, calls = model(answers(4))
    s, messages = Session(), ["How do I create a virtual environment?",
                              "How do I activate it on Windows?", "And on Linux?",
                              "What is the Blue Account's monthly fee?"]
    for m in messages:
        run_turn(s, m, chat, tool)  # AgentConfig(): the default session settings
    req = calls.requests
    assert len(req) == 4 and s.history_from == 0  # one call a turn; nothing dropped
    assert all(prefix_kept(req[i], req[i + 1], s.turns[i]) for i in range(3))
    # a small budget: the turns are ~40 tokens; at the fourth turn the oldest two go
    long = "word " * 30
    chat, calls = model(answers(6, long))
    s, cfg = Session(), session_cfg(history_tokens=100)
    messages = ["What is the Blue Account's monthly fee?", "What is the Green Account's fee?",
                "What is the Gold Account's monthly fee?", "How do I create a virtual environment?",
                "How do I activate it on Windows?"]
    for m in messages:
        run_turn(s, m, chat, tool, cfg)
    req = calls.requests
    assert len(req) == 5
    kept = [prefix_kept(req[i], req[i + 1], s.turns[i]) for i in range(4)]
    assert [t.history_turns for t in s.turns] == [0, 1, 2, 1, 2]
    assert kept == [True, True, False, True]  # the block dropped at turn 4, once
