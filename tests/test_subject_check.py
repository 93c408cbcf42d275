"""Generated questions on a product's pages must say which product they are about (issue 40,
`testset_filters.SubjectCheck`): no LLM, a small bank whose product names overlap."""

from __future__ import annotations

import json

from agentic_rag.datasets.testset import generate_testset
from agentic_rag.datasets.testset_filters import REASONS, SubjectCheck
from agentic_rag.documents import Document
from agentic_rag.ingest.chunking import AgenticChunker
from agentic_rag.llm.types import ChatReply

PAGES = {
    "checking_accounts_blue_account_001": "# Blue Account fees\n\nThe Blue Account has a "
    "monthly maintenance fee of $20.00, waived with a balance of $1,500.",
    "checking_accounts_blue_account_002": "# Blue Account transfers\n\nAn incoming domestic "
    "wire costs $12.50 on the Blue Account.",
    "business_checking_accounts_world_blue_001": "# World Blue fees\n\nWorld Blue has a "
    "monthly maintenance fee of $50.00 and supports 35 currencies.",
    "business_checking_accounts_world_blue_002": "# World Blue transfers\n\nAn incoming "
    "domestic wire costs $12.50 on World Blue.",
    "business_checking_accounts_lime_green_001": "# Lime Green fees\n\nThe Lime Green "
    "business account charges $10.00 for a domestic outgoing wire.",
    "business_checking_accounts_lime_green_002": "# Lime Green limits\n\nMobile check "
    "deposits on Lime Green are limited to $15,000 a day.",
    "checking_accounts_green_account_001": "# Green Account fees\n\nThe Green Account "
    "charges $15.00 for a domestic outgoing wire.",
    "checking_accounts_green_account_002": "# Green Account API\n\nCall "
    "`clear_debit_card_fraud_alert_4892` with the card_id of the blocked card.",
}


def _docs() -> list[Document]:
    return [Document(id=f"bank/{k}.md", text=v, title=v.split("\n")[0][2:])
            for k, v in PAGES.items()]


def _check() -> SubjectCheck:
    docs = _docs()
    return SubjectCheck.of([c for d in docs for c in AgenticChunker().chunk(d)], docs)


def test_it_applies_where_products_span_pages_only():
    assert SubjectCheck.applies([d.id for d in _docs()])
    assert not SubjectCheck.applies(["pydocs/library/json.rst", "pydocs/library/csv.rst"])


def test_a_question_naming_its_own_product_passes_even_when_names_overlap():
    sc = _check()
    blue, lime = "bank/checking_accounts_blue_account_001.md", \
        "bank/business_checking_accounts_lime_green_001.md"
    assert sc.check("What is the monthly maintenance fee of the Blue checking account?",
                    "$20.00", blue) is None
    # "green" is also the Green Account's: Lime Green's name carries both words
    assert sc.check("How much is a domestic outgoing wire on a Lime Green account?",
                    "$10.00", lime) is None
    # a subject named by a word no document's name carries
    assert sc.check("Which parameter does clear_debit_card_fraud_alert_4892 take?", "card_id",
                    "bank/checking_accounts_green_account_002.md") is None


def test_a_question_naming_a_neighbour_or_no_product_is_rejected_with_its_reason():
    sc = _check()
    blue = "bank/checking_accounts_blue_account_001.md"
    # World Blue carries {world, blue}: more than the Blue Account's {blue}
    out = sc.check("How many currencies does World Blue support?", "35", blue)
    assert out["reason"] == "names another subject" and "world blue" in out["detail"]
    assert out["reason"] in REASONS
    # no product named, and World Blue's page fits the question as well as its source
    out = sc.check("What does an incoming domestic wire cost?", "$12.50",
                   "bank/checking_accounts_blue_account_002.md")
    assert out["reason"] == "ambiguous subject" and "world_blue" in out["detail"]
    assert out["reason"] in REASONS


class _Writer:
    """Span mode's generator: asks about the fee without naming the product on every page
    but the Lime Green ones; answers the round trip with the span it was given."""

    model_id = "writer"

    def __init__(self) -> None:
        self.spans: dict[str, str] = {}

    def chat(self, messages, *, json_schema=None, max_tokens=None, **kw):  # noqa: ANN001, ANN003
        user = messages[-1]["content"]
        if json_schema is None:
            q = user.rsplit("Question: ", 1)[-1]
            return ChatReply(content=self.spans.get(q, "no idea"))
        span = user.rsplit("ANSWER: ", 1)[1].strip()
        subject = "Lime Green account" if "Lime Green" in user else "account"
        q = f"Which figure does the {subject} page give for this ({len(self.spans)})?"
        self.spans[q] = span
        return ChatReply(content=json.dumps({"question": q}))


def test_generation_on_product_pages_records_the_subject_rejections():
    docs = _docs()
    res = generate_testset(docs, _Writer(), n=8, unanswerable=0.0, min_tokens=3,
                           max_knowable_share=None, check_knowable=False)
    assert res.summary["settings"]["subject_check"] is True
    reasons = {r["reason"] for r in res.rejected}
    assert reasons & {"ambiguous subject", "names another subject"}
    # what is kept names its product
    assert res.records and all("Lime Green" in r.question for r in res.records if r.answerable)
