"""Product-specific questions on the τ²-banking documents (issue 40), span first, no LLM.

The documents state one product's figures in lines such as `- Domestic outgoing wire: $10.00
per transfer.` and fee tables (`| Monthly maintenance fee | $20.00 | ... |`). Each such line
gives a fact (product, item, figure): the figure is the answer, its exact position in the
document the gold span, the document the gold document. The question names the product as a
customer would ("my Lime Green business checking account") and asks for the item.

Rules, so that every answer is checkable:
- a fact's figure is verified verbatim in its document (`doc.text[start:end] == answer`);
- an item whose figure differs between the product's documents is dropped (ambiguous);
- `doc_ids` are every document of the product that states the same item with that figure
  (right document = any of them);
- `overlap` marks a product whose name shares a word with another product's (Blue, Light
  Blue, Navy Blue...): the questions the issue is about.

The questions are written by templates (`TEMPLATES`), not by an LLM nor by hand: say so when
reporting on them. `build(docs, n_per_product, seed)` returns the rows; the split is seeded
by product, so no product has questions in both dev and test.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict

from agentic_rag.documents import Document

# doc id: doc_<category>_<product>_<NNN>
CATEGORIES = ("business_checking_accounts", "business_savings_accounts",
              "business_credit_cards", "checking_accounts", "savings_accounts", "credit_cards",
              "buy_now_pay_later")
NOUN = {"business_checking_accounts": "business checking account",
        "business_savings_accounts": "business savings account",
        "business_credit_cards": "business credit card", "checking_accounts": "checking account",
        "savings_accounts": "savings account", "credit_cards": "credit card",
        "buy_now_pay_later": "buy now pay later plan"}
SKIP_PRODUCTS = re.compile(r"general|logistics|management|dashboard|replacements|holders|"
                           r"sweep_program|crypto")
FIGURE = r"\$\d[\d,]*(?:\.\d+)?|\d+(?:\.\d+)?%"
_BULLET = re.compile(rf"^\s*[-*]\s+(?P<item>[A-Za-z][^:\n|]{{3,60}}):\s+(?P<fig>{FIGURE})", re.M)
_ROW = re.compile(rf"^\|\s*(?P<item>[A-Za-z][^|\n]{{3,60}}?)\s*\|\s*(?P<fig>{FIGURE})\s*\|", re.M)
TEMPLATES = ("What is the {item} on the {product}?",
             "How much is the {item} for a {product}?",
             "I have a {product}. What's the {item}?",
             "Can you tell me the {item} of the {product}?")
NOT_AN_ITEM = ("your", "the", "their", "there", "it", "no")  # first words of sentences, not items
# an item a customer asks a figure for: a fee, a rate, a limit, a balance...
ITEM_WORDS = re.compile(r"\b(fee|fees|apr|apy|limit|deposit|balance|rate|charge|minimum|maximum|"
                        r"bonus|withdrawal|wire|interest|rebate|cash back|cashback|penalty|"
                        r"cap|allowance|threshold|credit line|annual)\b", re.I)


def product_of(doc_id: str) -> tuple[str, str] | None:
    """(category, product) of a banking document id, or None for general documents."""
    m = re.fullmatch(r"doc_(.+)_(\d{3})", doc_id)
    if not m:
        return None
    rest = m.group(1)
    for cat in CATEGORIES:
        if rest.startswith(cat + "_"):
            prod = rest[len(cat) + 1:]
            return None if SKIP_PRODUCTS.search(prod) else (cat, prod)
    return None


def product_name(category: str, product: str) -> str:
    """"blue_account" → "Blue Account checking account"-style names a customer would write:
    the product's words, title-cased, with the category's noun when the name lacks one."""
    words = product.replace("_(checking)", "").replace("_(savings)", "").split("_")
    name = " ".join(w.upper() if w == "bnpl" else w.capitalize() for w in words)
    low = name.lower()
    if not any(x in low for x in ("account", "card", "saver", "vault")):
        return f"{name} {NOUN[category]}"
    return name


def facts(doc: Document) -> list[dict]:
    """(item, figure, span) of every bullet `- Item: $X` and table row `| Item | $X |`."""
    out = []
    for rx in (_BULLET, _ROW):
        for m in rx.finditer(doc.text):
            item = " ".join(m.group("item").split()).strip(" .")
            if (item.lower() in ("item", "fee", "amount", "type") or len(item.split()) > 8
                    or not ITEM_WORDS.search(item) or item.split()[0].lower() in NOT_AN_ITEM
                    or any(w[0].isupper() for w in item.split()[1:])):  # a product's name
                continue
            out.append({"item": item, "answer": m.group("fig"), "start": m.start("fig"),
                        "end": m.end("fig")})
    return out


def build(docs: list[Document], n_per_product: int = 3, seed: int = 0) -> list[dict]:
    """The question rows (module doc), `n_per_product` per product at most."""
    by_product: dict[tuple[str, str], list[tuple[Document, dict]]] = defaultdict(list)
    for d in docs:
        p = product_of(d.id)
        if p:
            by_product[p].extend((d, f) for f in facts(d))
    generic = {"account", "card", "saver", "rewards"}
    words = {p: set(p[1].split("_")) - generic for p in by_product}
    rows = []
    for (cat, prod), found in sorted(by_product.items()):
        items: dict[str, list[tuple[Document, dict]]] = defaultdict(list)
        for d, f in found:
            items[f["item"].lower()].append((d, f))
        good = []
        for _, occ in sorted(items.items()):
            if len({_canon(f["answer"]) for _, f in occ}) != 1:
                continue  # the product states different figures for this item: ambiguous
            good.append(occ)
        good.sort(key=lambda occ: _hash(f"{seed}:{prod}:{occ[0][1]['item']}"))
        other = [w for p, ws in words.items() if p != (cat, prod) for w in ws]
        overlap = bool(words[(cat, prod)] & set(other))
        for occ in good[:n_per_product]:
            d, f = occ[0]
            assert d.text[f["start"]:f["end"]] == f["answer"], (d.id, f)
            name = product_name(cat, prod)
            template = TEMPLATES[_hash(f"{seed}:{d.id}:{f['item']}") % len(TEMPLATES)]
            item = f["item"]
            item = item if item[1:2].isupper() else item[0].lower() + item[1:]  # APY stays
            qid = f"bp-{prod}-{_hash(item) % 10**6:06d}"
            rows.append({
                "id": qid, "question": template.format(item=item, product=name),
                "answer": f["answer"], "doc_ids": sorted({x.id for x, _ in occ}),
                "spans": [{"doc_id": x.id, "start": g["start"], "end": g["end"]} for x, g in occ],
                "product": name, "item": f["item"], "overlap": overlap,
                "split": "dev" if _hash(f"{seed}:split:{prod}") % 2 == 0 else "test",
                "written_by": "template (datasets/products.py), no LLM"})
    return rows


def _canon(fig: str) -> str:
    from agentic_rag.evaluation.support import canonical_number

    num = re.sub(r"[^\d.,]", "", fig)
    return canonical_number(num) + ("%" if fig.endswith("%") else "")


def _hash(text: str) -> int:
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16)
