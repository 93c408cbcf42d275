"""One home for JSONL (`agentic_rag/jsonl.py`) and one corpus fingerprint
(`datasets.base.documents_fingerprint`), issue 60.

The package is read with `ast`: no module but `jsonl.py` loops over the lines of a file
calling `json.loads`, and no function but `documents_fingerprint` hashes document ids with
their text. Each checker is shown to find the loops and fingerprints it replaced (their code
as it was, planted in a string). Then the readers' behaviour: line-numbered errors for
person-written files, torn-line repair for appended ones (plain and gzip), the cold archive
and the reply pack after a kill -9 mid-append, the fingerprint's values unchanged, the row
cache keyed by `config_hash`."""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
from pathlib import Path

import pytest

import agentic_rag
from agentic_rag.config import RAGConfig, TiersConfig
from agentic_rag.datasets.base import Dataset, Query, documents_fingerprint
from agentic_rag.documents import Document
from agentic_rag.jsonl import (
    JsonlError,
    append_rows,
    iter_records,
    read_appended,
    read_lines,
    read_records,
    read_rows,
)

PACKAGE = Path(agentic_rag.__file__).resolve().parent
HOME = PACKAGE / "jsonl.py"
JSON_MODULES = {"json", "orjson", "ujson"}


# ---- the checkers ------------------------------------------------------------------------
def _calls_json_loads(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "loads" and isinstance(n.func.value, ast.Name)
               and n.func.value.id in JSON_MODULES for n in ast.walk(node))


def _opens(node: ast.AST) -> bool:
    """`open(...)`, `gzip.open(...)`, `path.open(...)`, `opener(...)`."""
    return isinstance(node, ast.Call) and (
        (isinstance(node.func, ast.Name) and "open" in node.func.id)
        or (isinstance(node.func, ast.Attribute) and node.func.attr == "open"))


def _lines(node: ast.AST, names: set[str]) -> bool:
    """Whether `node` is (or wraps) the lines of a file or a text: an open file, `.splitlines()`,
    `.readlines()`, `.split("\\n")`, a name bound to one of these, a call of a function that
    yields such lines (`names` holds both kinds of name)."""
    if isinstance(node, ast.Name):
        return node.id in names
    if isinstance(node, ast.Subscript):
        return _lines(node.value, names)
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    if _opens(node) or (isinstance(f, ast.Name) and f.id in names):
        return True
    if isinstance(f, ast.Attribute) and f.attr in ("splitlines", "readlines"):
        return True
    if isinstance(f, ast.Attribute) and f.attr == "split" and node.args and \
            isinstance(node.args[0], ast.Constant) and node.args[0].value in ("\n", b"\n"):
        return True
    if isinstance(f, ast.Name) and f.id in ("enumerate", "reversed", "list", "iter", "filter",
                                            "zip"):
        return any(_lines(a, names) for a in node.args)
    return False


def _line_names(tree: ast.AST) -> set[str]:
    """Names bound to lines: `with open(...) as f`, `lines = text.splitlines()`, and functions
    that loop over lines and yield (to a fixed point, so `rows = lines` counts too)."""
    names: set[str] = set()
    while True:
        before = len(names)
        for n in ast.walk(tree):
            if isinstance(n, (ast.With, ast.AsyncWith)):
                names |= {i.optional_vars.id for i in n.items
                          if isinstance(i.optional_vars, ast.Name) and _opens(i.context_expr)}
            elif isinstance(n, ast.Assign) and _lines(n.value, names):
                names |= {t.id for t in n.targets if isinstance(t, ast.Name)}
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                    isinstance(loop, (ast.For, ast.AsyncFor)) and _lines(loop.iter, names)
                    and any(isinstance(y, (ast.Yield, ast.YieldFrom)) for y in ast.walk(loop))
                    for loop in ast.walk(n)):
                names.add(n.name)
        if len(names) == before:
            return names


def jsonl_loops(source: str) -> list[int]:
    """Line numbers of every loop over lines whose body (or comprehension) calls
    `json.loads`, and of every `read_json(..., lines=True)`."""
    tree = ast.parse(source)
    names = _line_names(tree)
    found = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.For, ast.AsyncFor)) and _lines(n.iter, names) and \
                any(_calls_json_loads(b) for b in n.body):
            found.append(n.lineno)
        elif isinstance(n, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)) and \
                any(_lines(g.iter, names) for g in n.generators) and _calls_json_loads(n):
            found.append(n.lineno)
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                n.func.attr == "read_json" and any(
                    k.arg == "lines" and isinstance(k.value, ast.Constant) and k.value.value
                    for k in n.keywords):
            found.append(n.lineno)
    return sorted(found)


def _hashes(fn: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and (
        n.func.attr == "update" or (isinstance(n.func.value, ast.Name)
                                    and n.func.value.id == "hashlib"))
        for n in ast.walk(fn))


def _id_with_content(s: ast.JoinedStr) -> bool:
    attrs = {v.value.attr for v in s.values if isinstance(v, ast.FormattedValue)
             and isinstance(v.value, ast.Attribute)}
    return "id" in attrs and bool(attrs & {"text", "content_hash"})


def corpus_fingerprints(source: str) -> list[str]:
    """The functions that hash ids with texts or content hashes (`f"{d.id}\\0{d.text}"` under
    `hashlib` or `.update`): corpus fingerprints."""
    tree = ast.parse(source)
    return sorted(fn.name for fn in ast.walk(tree)
                  if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and _hashes(fn)
                  and any(isinstance(s, ast.JoinedStr) and _id_with_content(s)
                          for s in ast.walk(fn)))


def _modules() -> list[tuple[str, str]]:
    return [(p.relative_to(PACKAGE.parent).as_posix(), p.read_text(encoding="utf-8"))
            for p in sorted(PACKAGE.rglob("*.py"))]


def test_no_jsonl_line_loop_outside_its_home():
    found = {name: lines for name, src in _modules() if name != "agentic_rag/jsonl.py"
             for lines in [jsonl_loops(src)] if lines}
    assert found == {}, ("read JSONL with agentic_rag.jsonl (read_rows / read_appended for "
                         f"appended files, read_records for person-written ones): {found}")
    assert jsonl_loops(HOME.read_text(encoding="utf-8")), "the home holds the loop"


def _calls_json_dumps(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "dumps" and isinstance(n.func.value, ast.Name)
               and n.func.value.id in JSON_MODULES for n in ast.walk(node))


def jsonl_writes(source: str) -> list[int]:
    """Lines where a file gets one JSON document followed by a newline written by hand
    (`f.write(json.dumps(row) + "\\n")`): the appended line `append_rows` writes, flushed and
    fsync'd, whole or not at all."""
    return [n.lineno for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr == "write" and n.args and _calls_json_dumps(n.args[0])
            and any(isinstance(c, ast.Constant) and c.value in ("\n", b"\n")
                    for c in ast.walk(n.args[0]))]


def test_no_jsonl_line_written_by_hand_outside_its_home():
    found = {name: lines for name, src in _modules() if name != "agentic_rag/jsonl.py"
             for lines in [jsonl_writes(src)] if lines}
    assert found == {}, f"append JSONL rows with agentic_rag.jsonl.append_rows: {found}"


def test_the_write_checker_finds_the_appenders_it_replaced():
    old = '''
def record(path, row):
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps(row) + "\\n")
        f.flush()
        os.fsync(f.fileno())
'''
    assert jsonl_writes(old) == [4]
    assert jsonl_writes("path.write_text(json.dumps(report, indent=1) + '\\n')") == []


def test_the_corpus_fingerprint_is_computed_in_one_place():
    found = {name: fns for name, src in _modules() for fns in [corpus_fingerprints(src)] if fns}
    assert found == {"agentic_rag/datasets/base.py": ["documents_fingerprint"]}


# the loops and fingerprints these tests replaced, as they were written
OLD_LOOPS = {
    "qa.halueval": '''
def halueval_qa():
    with path.open(encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
''',
    "qa.library": '''
def python_library_qa(path):
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            raise
''',
    "qa.with_questions": '''
def with_questions(qpath):
    qtext = qpath.read_bytes().decode("utf-8-sig")
    rows = []
    for n, line in enumerate(qtext.splitlines(), 1):
        if line.strip():
            rows.append(json.loads(line))
''',
    "testset.exclude": '''
def excluded_chunks(paths):
    for path in paths:
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            cid = json.loads(line).get("chunk_id")
''',
    "tune_run.split": '''
def _split_files(self, qpath):
    rows = [json.loads(x) for x in qpath.read_text(encoding="utf-8").splitlines() if x]
''',
    "tiers.cold": '''
def _load_cold(self):
    with gzip.open(self.cold_path, "rt", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
''',
    "cache.pack": '''
def _pack(self):
    text = self.pack.read_text(encoding="utf-8")
    for n, line in enumerate(text.splitlines(), 1):
        try:
            entry = json.loads(line)
        except KeyError:
            pass
''',
    "claims.rows": '''
def read_rows(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return pd.DataFrame([json.loads(x) for x in f if x.strip()])
''',
    "protocols.agent": '''
def read(p):
    return pd.DataFrame([json.loads(x) for x in p.read_text().splitlines()])
''',
    "split-newline": '''
def f(text):
    lines = text.split("\\n")
    return {json.loads(x)["id"] for x in lines[1:]}
''',
    "a helper yielding lines": '''
def _lines(path):
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            yield n, line
def _records(path):
    for n, line in _lines(path):
        row = json.loads(line)
''',
    "pandas": '''
def f(p):
    return pd.read_json(p, lines=True)
''',
}


@pytest.mark.parametrize("case", list(OLD_LOOPS))
def test_the_loop_checker_finds_each_loop_it_replaced(case):
    assert jsonl_loops(OLD_LOOPS[case]), case


def test_the_loop_checker_leaves_other_json_alone():
    source = '''
def last(out):
    return json.loads(out.stdout.strip().splitlines()[-1])  # one line of a subprocess
def add_many(self, rows):
    lines = [json.dumps(row) for row in rows]
    for line in lines:
        self._keep(json.loads(line), line)  # its own lines read back, no file
'''
    assert jsonl_loops(source) == []


def test_the_fingerprint_checker_finds_the_copies_it_replaced():
    old = '''
def _settings(self, docs):
    fp = hashlib.sha256("".join(f"{d.id}\\0{d.text}" for d in docs).encode()).hexdigest()
class Dataset:
    def fingerprint(self):
        h = hashlib.sha256()
        for d in sorted(self.corpus, key=lambda d: d.id):
            h.update(f"{d.id}\\0{d.content_hash}\\n".encode())
        return h.hexdigest()[:16]
'''
    assert corpus_fingerprints(old) == ["_settings", "fingerprint"]


# ---- the fingerprint's values ------------------------------------------------------------
def _old_documents_fingerprint(docs):  # datasets/base.py before issue 60, verbatim
    h = hashlib.sha256()
    for d in sorted(docs, key=lambda d: d.id):
        h.update(f"{d.id}\0{d.content_hash}\n".encode())
    return h.hexdigest()[:16]


def _old_dataset_fingerprint(self):  # Dataset.fingerprint before issue 60, verbatim
    h = hashlib.sha256()
    for d in sorted(self.corpus, key=lambda d: d.id):
        h.update(f"{d.id}\0{d.content_hash}\n".encode())
    for q in sorted(self.queries, key=lambda q: q.id):
        h.update(f"{q.id}\0{q.text}\0{json.dumps(self.qrels.get(q.id, {}), sort_keys=True)}\n"
                 .encode())
    return h.hexdigest()[:16]


def _small_dataset() -> Dataset:
    docs = [Document(id="b.md", text="Beta: the café's second document.\n"),
            Document(id="a.md", text="# Alpha\n\nThe first one.\n"),
            Document(id="c/d.rst", text="Gamma\n=====\n\nthird")]
    queries = [Query(id="q2", text="what is gamma?"), Query(id="q1", text="what is alpha?")]
    return Dataset(name="small", corpus=docs, queries=queries,
                   qrels={"q1": {"a.md": 1}, "q2": {"c/d.rst": 1, "b.md": 0}})


def test_the_fingerprint_values_are_unchanged():
    ds = _small_dataset()
    assert ds.corpus_fingerprint() == documents_fingerprint(ds.corpus) == \
        _old_documents_fingerprint(ds.corpus) == "0753f0ac31ec2b1b"
    assert ds.fingerprint() == _old_dataset_fingerprint(ds) == "f2bc37fe3f32a953"
    assert documents_fingerprint(reversed(ds.corpus)) == documents_fingerprint(ds.corpus)
    changed = ds.model_copy(update={"corpus": [*ds.corpus[:2], Document(id="c/d.rst",
                                                                        text="Gamma!")]})
    assert changed.corpus_fingerprint() != ds.corpus_fingerprint()
    assert changed.fingerprint() != ds.fingerprint()


# ---- person-written files ----------------------------------------------------------------
def test_read_records_allows_blank_lines_and_a_byte_order_mark(tmp_path):
    p = tmp_path / "q.jsonl"
    p.write_bytes('\ufeff{"id": 1}\n\n   \n{"id": 2, "t": "a\u2028b"}\r\n'.encode())
    assert read_records(p) == [{"id": 1}, {"id": 2, "t": "a\u2028b"}]
    assert [n for n, _ in iter_records(p)] == [1, 4]
    assert p.read_bytes().startswith(b"\xef\xbb\xbf")  # never rewritten


@pytest.mark.parametrize("text,line,phrase", [
    ('{"id": 1}\n\n{"id": 2\n', 3, "not valid JSON"),
    ('{"id": 1}\n["a", "b"]\n', 2, "expected a JSON object, got list"),
    ('"just a string"\n', 1, "expected a JSON object, got str"),
    ('{"id": 1}\n{"id": 2}', None, None),  # no newline at the end: fine when a person wrote it
])
def test_read_records_names_the_file_and_the_line(tmp_path, text, line, phrase):
    p = tmp_path / "q.jsonl"
    p.write_text(text, encoding="utf-8")
    if line is None:
        assert read_records(p) == [{"id": 1}, {"id": 2}]
        return
    with pytest.raises(JsonlError, match=rf"q\.jsonl:{line}: {phrase}") as exc:
        read_records(p)
    assert isinstance(exc.value, ValueError) and str(p) in str(exc.value)
    assert (exc.value.path, exc.value.line) == (p, line)
    assert p.read_text(encoding="utf-8") == text  # a person's file is never cut


def test_read_records_names_bad_utf8_and_reads_gzip(tmp_path):
    p = tmp_path / "q.jsonl"
    p.write_bytes('{"q": "caf\xe9"}\n'.encode("latin-1"))
    with pytest.raises(JsonlError, match=r"q\.jsonl: not valid UTF-8 \(offset 10\)"):
        read_records(p)
    gz = tmp_path / "rows.jsonl.gz"
    gz.write_bytes(gzip.compress(b'{"a": 1}\n{"a": 2}\n', mtime=0))
    assert read_records(gz) == [{"a": 1}, {"a": 2}]
    gz.write_bytes(gz.read_bytes()[:-6])  # a committed file cut short is an error, not a repair
    with pytest.raises(JsonlError, match=r"rows\.jsonl\.gz: not a whole gzip file"):
        read_records(gz)
    assert len(gz.read_bytes()) > 0


# ---- appended files ----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["rows.jsonl", "rows.jsonl.gz"])
def test_a_torn_last_row_is_skipped_then_cut_and_appending_goes_on(tmp_path, name):
    p = tmp_path / name
    rows = [{"i": i, "text": "x" * (i % 7)} for i in range(50)]
    append_rows(p, rows[:30])
    append_rows(p, rows[30:])
    whole = p.read_bytes()
    assert read_rows(p, repair=False) == rows
    if name.endswith(".gz"):  # kill -9 mid-append: half a gzip member after the last whole one
        member = gzip.compress(json.dumps({"i": 50}).encode() + b"\n")
        p.write_bytes(whole + member[:len(member) // 2])
    else:
        p.write_bytes(whole + b'{"i": 50, "te')
    torn = p.read_bytes()
    assert read_rows(p, repair=False) == rows and p.read_bytes() == torn  # a reader: left alone
    assert read_rows(p) == rows  # the writer that resumes cuts the torn row off
    append_rows(p, [{"i": 50}])
    assert read_rows(p) == [*rows, {"i": 50}]
    assert [line for _, line in read_lines(p)][-1] == '{"i": 50}'


def test_read_appended_skips_only_a_torn_last_line(tmp_path):
    p = tmp_path / "replies.jsonl"
    p.write_text('{"key": "a"}\n\n{"key": "b"}\n{"key": "c", "re', encoding="utf-8")
    assert read_appended(p, repair=False) == [(1, {"key": "a"}), (3, {"key": "b"})]
    assert p.read_text().endswith('"re')
    assert read_appended(p) == [(1, {"key": "a"}), (3, {"key": "b"})]
    assert p.read_text() == '{"key": "a"}\n\n{"key": "b"}\n'
    p.write_text('{"key": "a"}\nnot json\n{"key": "b"}\n', encoding="utf-8")
    with pytest.raises(JsonlError, match=r"replies\.jsonl:2: not valid JSON"):
        read_appended(p)


def test_the_reply_pack_survives_a_torn_last_line(tmp_path):
    from agentic_rag.llm.cache import ChatCache
    from agentic_rag.llm.types import ChatReply

    pack = tmp_path / "replies.jsonl"
    pack.write_text('{"key": "k1", "reply": {"content": "one"}}\n'
                    '{"key": "k2", "reply": {"cont', encoding="utf-8")  # kill -9 mid-append
    cache = ChatCache(tmp_path / "c.sqlite", pack=pack)
    assert cache.get("k1").content == "one" and cache.get("k2") is None
    cache.put("k2", ChatReply(content="two"))
    fresh = ChatCache(tmp_path / "d.sqlite", pack=pack)
    assert fresh.get("k1").content == "one" and fresh.get("k2").content == "two"
    assert [json.loads(x)["key"] for x in pack.read_text().splitlines()] == ["k1", "k2"]
    pack.write_text('{"key": "k1"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"replies\.jsonl: line 1 is not a reply-pack entry"):
        ChatCache(tmp_path / "e.sqlite", pack=pack).get("k9")


def test_the_cold_archive_survives_a_torn_last_row(tmp_path):
    """kill -9 while a row is appended to the cold archive leaves half a gzip member: the
    archive's earlier rows are still served, and the rows added next stay readable."""
    from agentic_rag.retrieve.tiers import TieredIndex
    from agentic_rag.store.index import AgenticIndex

    from .fakes import HashingEmbedder

    def tiers() -> TieredIndex:
        warm = AgenticIndex(RAGConfig(home=str(tmp_path)), embedder=HashingEmbedder())
        return TieredIndex(TiersConfig(cold_after_days=365, cold_below_confidence=1.0), warm)

    old = {"last_updated": "2001-01-01"}
    t = tiers()
    t.add([Document(id="old.md", text="legacy wire transfer fee", metadata=old)])
    archive = t.cold_path
    member = gzip.compress(b'{"chunk": {"id": "torn"')
    archive.write_bytes(archive.read_bytes() + member[:len(member) - 9])
    res = tiers().search("legacy wire transfer fee", k=3)
    assert "old.md" in {h.chunk.doc_id for h in res.hits if h.retriever == "cold:dense"}
    tiers().add([Document(id="older.md", text="ancient cheque clearing rules", metadata=old)])
    cold = {h.chunk.doc_id for h in tiers().search("ancient cheque clearing", k=5).hits
            if h.retriever == "cold:dense"}
    assert cold == {"old.md", "older.md"}


# ---- the row cache -----------------------------------------------------------------------
def test_the_row_cache_keys_configs_by_config_hash():
    from agentic_rag.experiments.row_cache import row_config_hash

    cfg = RAGConfig()
    assert row_config_hash(cfg) == cfg.config_hash(length=64)
    assert row_config_hash(cfg)[:12] == cfg.config_hash()
    moved = cfg.with_overrides({"home": "/elsewhere", "llm.max_concurrency": 8})
    assert moved.config_hash() != cfg.config_hash()  # the config differs ...
    assert row_config_hash(moved) == row_config_hash(cfg)  # ... its rows do not
    other = cfg.with_overrides({"llm.temperature": 0.7})
    assert row_config_hash(other) == other.config_hash(length=64) != row_config_hash(cfg)
