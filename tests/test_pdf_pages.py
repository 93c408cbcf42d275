"""A PDF read as Markdown: headings from its outline, running footers dropped, bullets as list
items, hyphenation joined; a clear error for one that cannot be read. The PDFs are made here
with matplotlib (TrueType text) and pypdf (the outline, the encryption)."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from agentic_rag import AgenticChunker, DocumentError, read_document
from agentic_rag.config import ChunkingConfig
from agentic_rag.ingest.readers import iter_document_paths

PAGES = [
    ["Retry Guide", "1 Overview", "The retry module calls a function again after transient",
     "errors. It is small and well tested.", "• tries: how often to call",
     "• delay: seconds between calls", "Retry Guide 1"],
    ["2 Limits", "The default number of tries is 3 and the longest delay is 60 seconds.",
     "# a comment in an example", "Retry Guide 2"],
    ["2.1 Backoff", "Each delay doubles the previous one, up to the maxi-", "mum delay.",
     "Retry Guide 3"],
]


def make_pdf(pages: list[list[str]], outline: bool = True, password: str | None = None) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages
    from pypdf import PdfReader, PdfWriter

    buf = io.BytesIO()
    with matplotlib.rc_context({"pdf.fonttype": 42}), PdfPages(buf) as pdf:
        for lines in pages:
            fig = plt.figure(figsize=(8.5, 11))
            for i, line in enumerate(lines):
                fig.text(0.1, 0.95 - i * 0.04, line, fontsize=11)
            pdf.savefig(fig)
            plt.close(fig)
    writer = PdfWriter()
    writer.append(PdfReader(io.BytesIO(buf.getvalue())))
    if outline:
        writer.add_outline_item(title="Overview", page_number=0)
        limits = writer.add_outline_item(title="Limits", page_number=1)
        writer.add_outline_item(title="Backoff", page_number=2, parent=limits)
        writer.add_outline_item(title="Not printed anywhere", page_number=2, parent=limits)
    if password:
        writer.encrypt(password)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_a_pdf_reads_as_markdown_with_its_outline_as_headings(tmp_path):
    path = tmp_path / "guide.pdf"
    path.write_bytes(make_pdf(PAGES))
    doc = read_document(path, "docs/guide.pdf")
    assert doc.metadata == {"converted_from": "pdf"} and doc.title == "Retry Guide"
    heads = re.findall(r"^#+ .*$", doc.text, re.M)
    # as printed (numbers kept), one level per outline depth; an entry its page does not print
    # heads that page
    assert heads == ["# 1 Overview", "# 2 Limits", "## Not printed anywhere", "## 2.1 Backoff"]
    assert "Retry Guide 1" not in doc.text and "Retry Guide 3" not in doc.text  # running footer
    assert "- tries: how often to call\n- delay: seconds between calls" in doc.text
    assert "up to the maximum delay." in doc.text  # "maxi-" + "mum"
    assert "\\# a comment in an example" in doc.text  # text, not a heading
    chunks = AgenticChunker(ChunkingConfig(max_tokens=512, overlap_tokens=0)).chunk(doc)
    backoff = next(c for c in chunks if "doubles" in c.text)
    assert backoff.heading_path.endswith("2 Limits > 2.1 Backoff")
    assert any("- tries: how often to call\n- delay: seconds" in c.text for c in chunks)


def test_without_an_outline_every_page_is_a_heading(tmp_path):
    path = tmp_path / "notes.pdf"
    path.write_bytes(make_pdf(PAGES, outline=False))
    doc = read_document(path)
    assert re.findall(r"^## Page \d+$", doc.text, re.M) == ["## Page 1", "## Page 2", "## Page 3"]
    assert doc.title == "Retry Guide"  # not "Page 1"


def test_an_unreadable_pdf_is_named_and_a_folder_takes_pdfs(tmp_path):
    (tmp_path / "locked.pdf").write_bytes(make_pdf(PAGES[:1], outline=False, password="s3cret"))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not a PDF body\n")
    with pytest.raises(DocumentError, match=r"locked\.pdf: encrypted PDF"):
        read_document(tmp_path / "locked.pdf")
    with pytest.raises(DocumentError, match=r"broken\.pdf: not a readable PDF"):
        read_document(tmp_path / "broken.pdf")
    assert sorted(d for _, d in iter_document_paths([tmp_path])) == [
        f"{tmp_path.name}/broken.pdf", f"{tmp_path.name}/locked.pdf"]


SPEC = Path("/usr/share/doc/shared-mime-info")


@pytest.mark.skipif(not (SPEC / "shared-mime-info-spec.pdf").exists(),
                    reason="Debian's shared-mime-info docs absent")
def test_a_real_specification_gives_the_sections_of_its_html():
    """The same specification as PDF and as HTML: the PDF's headings are the HTML's sections."""
    def norm(h: str) -> str:
        return " ".join(h.lstrip("#").split()).casefold()

    pdf = read_document(SPEC / "shared-mime-info-spec.pdf").text
    html = "\n".join(read_document(f).text for f, _ in iter_document_paths(
        [SPEC / "shared-mime-info-spec.html"]))  # a folder of pages
    html = re.sub(r"^```.*?^```$", "", html, flags=re.M | re.S)  # "# comments" in examples
    pdf_heads = [norm(h) for h in re.findall(r"^#+ .*$", pdf, re.M)]
    html_heads = {norm(h) for h in re.findall(r"^#+ .*$", html, re.M)}
    assert len(pdf_heads) >= 20  # 24 outline entries: 1. Introduction ... 3. Contributors
    # "2.13. Non-regular files" too, which the outline spells "Nonregular"
    assert all(h in html_heads for h in pdf_heads), [h for h in pdf_heads if h not in html_heads]


def test_a_page_number_footer_goes_and_the_same_digits_inside_a_page_stay(tmp_path):
    pages = [["Ports", "The service listens on", "443", "and redirects from", "80", "1"],
             ["More text on page two.", "2"], ["Still more text.", "3"],
             ["A line of text", "-----", "```not a fence", "4"]]
    path = tmp_path / "ports.pdf"
    path.write_bytes(make_pdf(pages, outline=False))
    text = read_document(path).text
    assert "\n443\n" in text and "\n80\n" in text  # content, not page numbers
    assert not re.search(r"^[1-4]$", text, re.M)  # the footers
    assert "\\-----" in text and "\\```not a fence" in text  # no setext heading, no fence
