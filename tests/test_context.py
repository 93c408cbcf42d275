"""Layer 4 packing with an exact word counter, plus the real tiktoken counter."""

from __future__ import annotations

from agentic_rag.config import ContextConfig
from agentic_rag.documents import Chunk, Hit
from agentic_rag.retrieve.context import AgenticContextFormatter, citation_id, pack_context


def words(text: str) -> int:
    return len(text.split())


def first_words(text: str, n: int) -> str:
    return " ".join(text.split()[:n])


def hit(cid: str, text: str, score: float, ctype: str = "prose", **meta) -> Hit:
    c = Chunk(id=cid, doc_id=cid, text=text, chunk_type=ctype, heading_path="H", source=f"{cid}.md",
              start_char=0, end_char=len(text), token_count=words(text), metadata=meta)
    return Hit(chunk=c, score=score, rank=1)


def test_budget_packing_skips_what_does_not_fit_and_keeps_order():
    hits = [hit("b", "two words", 0.5), hit("a", "one two three four five six", 0.9),
            hit("c", "x " * 30, 0.4), hit("d", "tiny", 0.1)]
    cfg = ContextConfig(max_tokens=12, boundaries=False, attribution=False)
    out = pack_context(hits, cfg, words, first_words)
    # a (6) + b (2) = 8; c (30) does not fit → dropped; d (1) fits → 9
    assert out.included == ["a", "b", "d"] and out.dropped == ["c"] and out.truncated == []
    assert out.text == "one two three four five six\n\ntwo words\n\ntiny"
    assert out.tokens == 9 <= out.budget


def test_top_result_truncated_not_dropped_with_boundaries():
    big = " ".join(f"w{i}" for i in range(100))
    out = pack_context([hit("a", big, 0.9), hit("b", "small one", 0.5)],
                       ContextConfig(max_tokens=40, header_style="dashes"), words, first_words)
    assert out.included[0] == "a" and out.truncated == ["a"]
    cid = citation_id("a")
    assert out.text.startswith(f"--- Document 1 [{cid}] ---\nSource: a.md — H | type: prose | "
                               "score: 0.90\nw0 w1")
    assert "… [truncated]" in out.text and out.tokens <= 40


def test_boundaries_styles_and_code_refenced():
    code = hit("c", "    for x in y:\n        print(x)", 0.8, "code", language="python")
    xml = pack_context([code], ContextConfig(header_style="xml"), words, first_words).text
    assert xml.startswith(f'<document index="1" id="{citation_id("c")}" source="c.md — H" '
                          'type="code" score="0.80">\n```python')
    assert "for x in y:\n    print(x)\n```\n</document>" in xml
    plain = pack_context([code], ContextConfig(boundaries=False, attribution=False), words,
                         first_words).text
    assert plain == "```python\nfor x in y:\n    print(x)\n```"


def test_boundaries_and_attribution_are_separate_switches():
    # "boundaries off" used to drop the source line too: two factors moved together
    h = [hit("a", "alpha text", 0.9), hit("b", "beta text", 0.5)]
    no_frame = pack_context(h, ContextConfig(boundaries=False), words, first_words).text
    assert no_frame == "Source: a.md — H\nalpha text\n\nSource: b.md — H\nbeta text"
    no_source = pack_context(h, ContextConfig(attribution=False), words, first_words).text
    assert no_source.startswith(f"--- Document 1 [{citation_id('a')}] ---\ntype: prose")
    assert "a.md" not in no_source and "--- Document 2" in no_source


def test_recent_first_priority():
    hits = [hit("old", "old", 0.9, last_updated="2024-01-01"),
            hit("new", "new", 0.2, last_updated="2026-05-01"), hit("undated", "u", 0.95)]
    out = pack_context(hits, ContextConfig(priority="recent_first"), words, first_words)
    assert out.included == ["new", "old", "undated"]
    assert pack_context(hits, ContextConfig(), words, first_words).included == ["undated", "old", "new"]


def test_formatter_with_real_tokenizer_stays_in_budget():
    text = "Retrieval augmented generation packs context. " * 200
    fmt = AgenticContextFormatter(ContextConfig(max_tokens=100))
    out = fmt.format_for_agent([hit("a", text, 0.9), hit("b", "short", 0.3)], "q")
    assert out.truncated == ["a"] and out.tokens <= 100
    assert out.tokens == fmt.counter.count(out.text)
