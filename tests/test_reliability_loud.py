"""Reliability: no quiet fallbacks. A damaged `index-state.json`, a lock that fails for a
reason other than a timeout and an interrupted write that cannot be undone are reported,
each with the file concerned and what to do, never papered over."""

from __future__ import annotations

import shutil

import pytest

from agentic_rag.config import RAGConfig
from agentic_rag.store.index import AgenticIndex, IndexStateError

from .fakes import FailingEmbedder, HashingEmbedder
from .test_reliability_crash import assert_in_step, corpus

pytestmark = pytest.mark.reliability


def fake_index(home) -> AgenticIndex:
    return AgenticIndex(RAGConfig(home=str(home)), embedder=HashingEmbedder())


DAMAGED_STATES = {"empty": "", "torn": '{"version": 3', "no version": '{"versio": 3}',
                  "not a count": '{"version": "3"}', "binary": "\x00\x00\x00"}


@pytest.mark.parametrize("damage", list(DAMAGED_STATES))
def test_damaged_index_state_names_the_file_and_the_mend(tmp_path, damage):
    """Read as version 0, a damaged `index-state.json` let a BM25 index saved at version 0
    pass for the current one. It is an error naming the file and what to delete, and
    that mend works."""
    home = tmp_path / "home"
    first = fake_index(home)
    first.add_documents(corpus(1, n=3))
    assert first.search_lexical("guide", 3)  # BM25 saved under lexical/
    state = home / "index-state.json"
    state.write_text(DAMAGED_STATES[damage], encoding="utf-8")
    idx = fake_index(home)
    with pytest.raises(IndexStateError) as exc:
        idx.search_lexical("guide", 3)
    msg = str(exc.value)
    assert msg.startswith(f"{state}: unreadable index state") and str(home / "lexical") in msg
    with pytest.raises(IndexStateError):
        idx.add_documents(corpus(1, n=4))  # no write on top of an unknown version
    state.unlink()  # the mend the message names
    shutil.rmtree(home / "lexical")
    assert assert_in_step(home, corpus(1, n=3)) == 18


def test_a_lock_that_cannot_be_taken_is_an_error_not_a_busy_writer(tmp_path):
    """The BM25 rebuild takes the write lock without waiting, to save only when no write runs.
    A held lock (filelock's Timeout) means a writer is busy: BM25 is built in memory. Any
    other failure to take it (here the lock path is a folder) was taken for the same case
    and hidden; it is raised, naming the lock file."""
    from filelock import FileLock

    home = tmp_path / "home"
    fake_index(home).add_documents(corpus(1, n=2))  # nothing searched yet: no lexical/
    held = FileLock(str(home / ".write.lock"))
    held.acquire()
    try:  # a writer in another process (a second FileLock object: another flock)
        busy = fake_index(home)
        assert busy.search_lexical("guide", 3)  # built in memory, not saved
        assert not (home / "lexical").exists()
    finally:
        held.release()
    (home / ".write.lock").unlink()
    (home / ".write.lock").mkdir()
    with pytest.raises(IsADirectoryError, match=".write.lock"):
        fake_index(home).search_lexical("guide", 3)


def test_a_failed_undo_is_reported_on_the_error_and_in_the_log(tmp_path, caplog):
    """A write that fails midway is undone (`recover()`). When the undo fails as well, the
    written half stays in the index until the next write: that used to be silent. The
    write's own error is raised with a note saying so, and the log has it."""
    home = tmp_path / "home"
    fake_index(home).add_documents(corpus(1, n=1))
    idx = AgenticIndex(RAGConfig(home=str(home)), embedder=FailingEmbedder(2))

    def broken_delete(where):  # noqa: ANN001, ANN202
        raise OSError("disk full")

    idx.store.delete = broken_delete
    new = corpus(1, n=4)[1:]
    with caplog.at_level("ERROR", logger="agentic_rag.store.index"), \
            pytest.raises(RuntimeError, match="went away") as exc:
        idx.add_documents(new, batch_size=4)  # the first batch is written, the second fails
    notes = getattr(exc.value, "__notes__", [])
    assert len(notes) == 1, notes
    assert "undoing the failed write also failed (OSError('disk full'))" in notes[0]
    assert "3 document(s) may be half indexed" in notes[0]
    assert str(home / "index-journal.json") in notes[0]
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == notes
    assert sorted(idx.pending_journal()) == [d.id for d in new]
    assert idx.count() == 6 + 4  # the first document, and the half: the first batch of 4
    report = fake_index(home).add_documents(new)  # the next write removes the half first
    assert report.recovered_documents == 3
    assert assert_in_step(home, corpus(1, n=4)) == 24


def test_an_unreadable_saved_bm25_index_is_rebuilt_with_a_warning(tmp_path, caplog):
    """`lexical/` is derived from the store, so a damaged copy is rebuilt: the search
    still answers, and the log says which folder was unreadable."""
    home = tmp_path / "home"
    first = fake_index(home)
    first.add_documents(corpus(1, n=2))
    want = [h.chunk.id for h in first.search_lexical("guide topic1", 5)]
    (home / "lexical" / "chunks.jsonl").write_text("{not json\n", encoding="utf-8")
    with caplog.at_level("WARNING", logger="agentic_rag.store.index"):
        got = [h.chunk.id for h in fake_index(home).search_lexical("guide topic1", 5)]
    assert got == want
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 1 and warned[0].startswith(f"{home / 'lexical'}: saved BM25 index "
                                                     "unreadable")
    assert assert_in_step(home, corpus(1, n=2)) == 12  # and saved again, readable


def test_cli_search_reports_a_damaged_state_without_a_traceback(tmp_path):
    """`agentic-rag search` on a home whose index-state.json is damaged exits 2 with the
    message that names the file and the mend, not a traceback (BM25 mode: no model load)."""
    from typer.testing import CliRunner

    from agentic_rag.cli.main import app

    home = tmp_path / "home"
    fake_index(home).add_documents(corpus(1, n=3))
    (home / "index-state.json").write_text('{"version": 3', encoding="utf-8")
    res = CliRunner().invoke(app, ["search", "guide", "--mode", "bm25", "--home", str(home)])
    out = res.output + (res.stderr if res.stderr_bytes is not None else "")
    assert res.exit_code == 2, out
    assert "index-state.json: unreadable index state" in out and "Traceback" not in out
