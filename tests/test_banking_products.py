"""The banking-products set (issue 40): template questions on the real τ²-banking documents,
span first; the committed files are what `products.build` writes."""

from __future__ import annotations

import json
from pathlib import Path

from agentic_rag.datasets.products import build, product_name, product_of

ROOT = Path(__file__).resolve().parent.parent / "datasets" / "banking-products"


def test_product_of_and_name():
    assert product_of("doc_checking_accounts_blue_account_003") == ("checking_accounts", "blue_account")
    assert product_of("doc_business_checking_accounts_lime_green_004") == \
        ("business_checking_accounts", "lime_green")
    assert product_of("doc_bank_accounts_bank_accounts_(general)_004") is None
    assert product_name("business_checking_accounts", "lime_green") == \
        "Lime Green business checking account"
    assert product_name("checking_accounts", "blue_account") == "Blue Account"


def test_every_answer_verbatim_in_every_gold_document(banking):
    docs = {d.id: d for d in banking}
    rows = build(banking)
    assert len(rows) >= 100
    for r in rows:
        assert r["spans"] and {s["doc_id"] for s in r["spans"]} == set(r["doc_ids"])
        for s in r["spans"]:
            assert docs[s["doc_id"]].text[s["start"]:s["end"]] == r["answer"]
        assert r["product"] in r["question"]


def test_committed_files_are_the_build_split_by_product(banking):
    rows = {r["id"]: r for r in build(banking)}
    dev = [json.loads(x) for x in (ROOT / "dev.jsonl").open()]
    test = [json.loads(x) for x in (ROOT / "test.jsonl").open()]
    assert len(dev) >= 60 and len(dev) + len(test) == len(rows)
    assert all(rows[r["id"]] == r for r in dev + test)
    assert not {r["product"] for r in dev} & {r["product"] for r in test}
    assert sum(r["overlap"] for r in dev) >= 30  # product names that share words
    blue = [r for r in dev + test if r["product"] == "Blue Account"]
    assert blue and all(d.startswith("doc_checking_accounts_blue_account_") for r in blue
                        for d in r["doc_ids"])
