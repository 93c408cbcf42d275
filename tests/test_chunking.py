from __future__ import annotations

from pathlib import Path

import pytest

from agentic_rag import AgenticChunker, Document, DocumentError, read_document
from agentic_rag.config import ChunkingConfig
from agentic_rag.ingest.markup import marker_style, parse_blocks


def _fences(text: str) -> list[tuple[int, int]]:
    """Independent scan for ``` fenced blocks: (start of opening line, end of closing line)."""
    out, pos, open_at, marker = [], 0, None, ""
    for line in text.splitlines(keepends=True):
        body = line.rstrip("\r\n")
        s = body.lstrip(" ")
        if open_at is None and s.startswith(("```", "~~~")) and len(body) - len(s) <= 3:
            open_at, marker = pos, s[:3]
        elif open_at is not None and s.startswith(marker) and set(s.strip()) == {marker[0]}:
            out.append((open_at, pos + len(body)))
            open_at = None
        pos += len(line)
    return out


def _check_offsets(doc: Document, chunks) -> None:
    for c in chunks:
        span = doc.text[c.start_char:c.end_char]
        if c.chunk_type == "table_row":
            assert c.text.endswith(span), c.id
        elif c.metadata.get("part", 1) > 1 and c.chunk_type == "table":
            assert c.text.endswith(span), c.id  # header repeated before the rows
        else:
            assert c.text == span, c.id


def test_readme_code_fences_never_split(readme_docs):
    chunker = AgenticChunker(ChunkingConfig(max_tokens=512, overlap_tokens=32))
    n_fences = 0
    for doc in readme_docs:
        chunks = chunker.chunk(doc)
        spans = {(c.start_char, c.end_char) for c in chunks if c.chunk_type == "code"}
        for fence in _fences(doc.text):
            n_fences += 1
            if chunker.counter.count(doc.text[fence[0]:fence[1]]) <= 512:
                assert fence in spans, f"{doc.id}: fence at {fence} not one whole code chunk"
        # no prose chunk contains a fence line
        for c in chunks:
            if c.chunk_type != "code":
                assert "```" not in c.text, c.id
        _check_offsets(doc, chunks)
    assert n_fences >= 20


def test_code_language_tag_kept(readme_docs):
    chunks = AgenticChunker().chunk(next(d for d in readme_docs if d.id == "readme/bm25s"))
    langs = {c.metadata.get("language") for c in chunks if c.chunk_type == "code"}
    assert "python" in langs


def test_every_markdown_table_row_retrievable(banking):
    chunker = AgenticChunker()
    n_rows = 0
    for doc in banking[:300]:
        chunks = chunker.chunk(doc)
        row_spans = {doc.text[c.start_char:c.end_char]: c for c in chunks
                     if c.chunk_type == "table_row"}
        lines = doc.text.splitlines()
        for i, line in enumerate(lines):
            is_row = line.lstrip().startswith("|") and i >= 2 and lines[i - 1].lstrip().startswith("|")
            is_delim = set(line.strip()) <= set("|:- ")
            if is_row and not is_delim:
                n_rows += 1
                assert line in row_spans, f"{doc.id}: row not retrievable: {line!r}"
                c = row_spans[line]
                header = c.text.splitlines()[0]
                assert header.lstrip().startswith("|") and header != line
                assert c.metadata["row"] >= 1
        _check_offsets(doc, chunks)
    assert n_rows > 100


def test_table_whole_and_rows_labelled():
    text = "# Fees\n\n| Item | Fee |\n|---|---|\n| Wire | $25 |\n| ATM | $2 |\n"
    chunks = AgenticChunker().chunk(Document(id="fees.md", text=text))
    types = [c.chunk_type for c in chunks]
    assert types == ["table", "table_row", "table_row"]
    assert chunks[1].text == "| Item | Fee |\n|---|---|\n| Wire | $25 |"
    assert chunks[2].metadata["row"] == 2 and chunks[2].heading_path == "Fees"


def test_procedure_split_between_steps_with_numbers():
    steps = "\n".join(f"{i}. Step {i}: " + "do the careful thing " * 12 for i in range(1, 13))
    doc = Document(id="proc.md", text=f"# Procedure\n\n{steps}\n")
    chunks = AgenticChunker(ChunkingConfig(max_tokens=120, overlap_tokens=0)).chunk(doc)
    assert len(chunks) > 1 and all(c.chunk_type == "list" for c in chunks)
    expected = 1
    for c in chunks:
        assert c.metadata["step"] == expected
        assert c.text.startswith(f"{expected}. Step {expected}:")
        expected = c.metadata["step_end"] + 1
        assert c.token_count <= 120
    assert expected == 13


@pytest.mark.parametrize("fmt, ext, steps, notes", [
    ("markdown", "md", "1. Create it:\n\n   ```bash\n   python -m venv .venv\n   ```\n\n"
     "2. Install it.\n3. Run it.\n", "- It needs Python 3.9.\n- On Windows use py.\n"),
    ("rst", "rst", "#. Create it:\n\n   .. code-block:: bash\n\n      python -m venv .venv\n\n"
     "#. Install it.\n#. Run it.\n", "* It needs Python 3.9.\n* On Windows use py.\n"),
])
def test_a_bullet_list_after_a_procedure_is_not_its_steps(fmt, ext, steps, notes):
    """A marker of another style starts another list (CommonMark, docutils): the notes
    after a procedure are not steps 4 and 5, and the step with code stays whole."""
    title = "# Setup\n\n" if fmt == "markdown" else "Setup\n=====\n\n"
    doc = Document(id=f"setup.{ext}", text=f"{title}{steps}\n{notes}", format=fmt)
    blocks = [b for b in parse_blocks(doc.text, fmt) if b.kind == "list"]
    assert [(b.ordered, [it.number for it in b.items]) for b in blocks] == [
        (True, [1, 2, 3]), (False, [None, None])]
    chunks = AgenticChunker(ChunkingConfig(merge_small_lists=False)).chunk(doc)
    lists = [c for c in chunks if c.chunk_type == "list"]
    assert [(c.metadata.get("step"), c.metadata.get("step_end")) for c in lists][0] == (1, 3)
    assert "python -m venv .venv" in lists[0].text and "Python 3.9" not in lists[0].text
    marks = [("1. a", "1."), ("3) a", "1)"), ("(2) a", "(1)"), ("#. a", "1."), ("b. a", "a."),
             ("- a", "-"), ("* a", "*")]
    assert [marker_style(m) for m, _ in marks] == [s for _, s in marks]


def test_long_code_split_only_at_blank_lines_or_defs(pydocs):
    doc = next(d for d in pydocs if d.id.endswith("howto/descriptor.rst"))
    chunker = AgenticChunker(ChunkingConfig(max_tokens=128, overlap_tokens=16))
    chunks = chunker.chunk(doc)
    parts = [c for c in chunks if c.chunk_type == "code" and c.metadata.get("parts", 1) > 1]
    assert parts, "expected a code block longer than 128 tokens"
    for c in parts:
        before = doc.text[:c.start_char]
        assert before.endswith("\n"), "a code part starts mid-line"
        assert doc.text[c.end_char:c.end_char + 1] in ("\n", ""), "a code part ends mid-line"
        prev_line = before.rstrip("\n").rsplit("\n", 1)[-1] if c.metadata["part"] > 1 else ""
        first = c.text.splitlines()[0]
        assert (c.metadata["part"] == 1 or not prev_line.strip()
                or first.lstrip().startswith(("def ", "class ", "async def ", "@"))
                or c.token_count <= 128), c.id


def test_rst_blocks_on_real_docs(pydocs):
    doc = next(d for d in pydocs if d.id.endswith("tutorial/venv.rst"))
    chunks = AgenticChunker().chunk(doc)
    code = [c for c in chunks if c.chunk_type == "code"]
    assert any("python3 -m venv tutorial-env" in c.text for c in code)
    assert all(c.heading_path.startswith("Virtual Environments and Packages") for c in chunks)
    _check_offsets(doc, chunks)


def test_ids_unique_and_deterministic(banking, pydocs):
    chunker = AgenticChunker()
    docs = banking[:100] + pydocs[:20]
    first = [c.id for d in docs for c in chunker.chunk(d)]
    assert len(first) == len(set(first))
    assert first == [c.id for d in docs for c in AgenticChunker().chunk(d)]


def test_repeated_text_gets_distinct_ids():
    # the seed's md5-of-text ids collide here and Chroma silently drops chunks
    text = "## A\n\nSame paragraph.\n\n## B\n\nSame paragraph.\n"
    chunks = AgenticChunker().chunk(Document(id="r.md", text=text))
    assert [c.text for c in chunks] == ["Same paragraph.", "Same paragraph."]
    assert len({c.id for c in chunks}) == 2


def test_prose_respects_budget_and_overlaps():
    para = " ".join(f"Sentence number {i} talks about retrieval." for i in range(200))
    doc = Document(id="p.md", text=para)
    cfg = ChunkingConfig(max_tokens=64, overlap_tokens=16)
    chunks = AgenticChunker(cfg).chunk(doc)
    assert len(chunks) > 5
    for a, b in zip(chunks, chunks[1:]):
        assert a.token_count <= 64
        assert b.start_char < a.end_char, "consecutive prose chunks should overlap"
        assert b.start_char > a.start_char
    assert chunks[-1].end_char == len(para)


def test_empty_and_whitespace_give_no_chunks():
    assert AgenticChunker().chunk(Document(id="e.md", text="")) == []
    assert AgenticChunker().chunk(Document(id="e.md", text="  \n\n ")) == []


def test_binary_and_non_utf8_files_named_in_error(tmp_path: Path):
    bad = tmp_path / "latin1.md"
    bad.write_bytes("caf\xe9 au lait".encode("latin-1"))
    with pytest.raises(DocumentError, match="latin1.md.*not valid UTF-8"):
        read_document(bad)
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"\x89PNG\x00\x00\x01")
    with pytest.raises(DocumentError, match="blob.txt.*binary"):
        read_document(binary)


def test_pathological_table_like_input_is_linear():
    # many pipes and no delimiter row: catastrophic for a backtracking table regex
    text = ("| a " * 2000 + "\n") * 250  # ~2 MB, completes in ~1 s with the line parser
    blocks = parse_blocks(text)
    assert len(blocks) == 1 and blocks[0].kind == "paragraph"


def test_an_item_far_over_the_budget_is_cut_and_a_long_step_is_not():
    """A step up to ITEM_CEILING x max_tokens stays whole; a table of contents nested in one
    item, or a generated index's one-row table, is cut into pieces within max_tokens."""
    from agentic_rag.ingest.chunking import ITEM_CEILING

    cfg = ChunkingConfig(max_tokens=64, overlap_tokens=0)
    chunker = AgenticChunker(cfg)
    step = "1. " + " ".join(f"word{i}" for i in range(60)) + "\n2. Then stop.\n"
    doc = Document(id="steps.md", text=step)
    chunks = chunker.chunk(doc)
    assert [c.metadata.get("step") for c in chunks] == [1, 2]  # the long step whole
    assert chunker.counter.count(chunks[0].text) > cfg.max_tokens
    toc = "- Tutorial\n" + "".join(f"  - Section {i} of the tutorial\n" for i in range(200))
    row = "| Index | Pages |\n| --- | --- |\n| " + " ".join(f"entry{i}," for i in range(400)) + " | 3 |\n"
    for text, kinds in ((toc, {"list"}), (row, {"table", "table_row"})):
        doc = Document(id="big.md", text=text)
        assert chunker.counter.count(text) > ITEM_CEILING * cfg.max_tokens
        chunks = chunker.chunk(doc)
        assert {c.chunk_type for c in chunks} == kinds and len(chunks) > 10
        header = 20 if "Index" in text else 0  # a row part repeats the table's header
        assert max(c.token_count for c in chunks) <= cfg.max_tokens + header
        _check_offsets(doc, chunks)
        covered = "".join(c.text for c in chunks if c.chunk_type != "table_row")
        assert "Section 199" in covered or "entry399" in covered
    # a step far over the budget: every piece says which step it is, none is empty
    steps = "1. Open.\n2. " + " ".join(f"w{i}." for i in range(400)) + "\n3. Close.\n"
    doc = Document(id="steps.md", text=steps)
    chunks = chunker.chunk(doc)
    assert [c.metadata.get("step") for c in chunks] == [1] + [2] * (len(chunks) - 2) + [3]
    assert len(chunks) > 5 and all(c.text.strip() == c.text and c.text for c in chunks)
    _check_offsets(doc, chunks)
