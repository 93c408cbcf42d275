from __future__ import annotations

import json

import pytest
import yaml

from agentic_rag.config import RAGConfig
from agentic_rag.config_base import ConfigError


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_round_trip_exact(tmp_path, suffix):
    cfg = RAGConfig().with_overrides({"chunking.max_tokens": 512, "store.kind": "qdrant",
                                      "lexical.k1": 1.2, "embedding.batch_size": 16})
    path = cfg.save(tmp_path / f"cfg{suffix}")
    again = RAGConfig.load(path)
    assert again == cfg
    assert again.config_hash() == cfg.config_hash()
    again.save(tmp_path / f"cfg2{suffix}")
    assert (tmp_path / f"cfg2{suffix}").read_text() == path.read_text()


def test_hash_ignores_key_order_but_not_values(tmp_path):
    data = RAGConfig().to_dict()
    reordered = dict(reversed(list(data.items())))
    (tmp_path / "a.json").write_text(json.dumps(reordered))
    assert RAGConfig.load(tmp_path / "a.json").config_hash() == RAGConfig().config_hash()
    assert RAGConfig().with_overrides({"chunking.max_tokens": 300}).config_hash() \
        != RAGConfig().config_hash()


def test_unknown_key_named_with_file_and_value(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"chunking": {"max_tokenz": 100}}))
    with pytest.raises(ConfigError) as exc:
        RAGConfig.load(path)
    msg = str(exc.value)
    assert "bad.yaml" in msg and "chunking.max_tokenz" in msg and "100" in msg


def test_out_of_range_value_named(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("lexical:\n  b: 3.5\n")
    with pytest.raises(ConfigError, match=r"lexical\.b.*3\.5"):
        RAGConfig.load(path)


def test_overlap_must_be_below_max():
    with pytest.raises(ConfigError, match="overlap_tokens"):
        RAGConfig.from_dict({"chunking": {"max_tokens": 64, "overlap_tokens": 64}})


def test_secrets_are_rejected_with_hint():
    with pytest.raises(ConfigError, match="embedding.api_key.*api_key_env"):
        RAGConfig.from_dict({"embedding": {"api_key": "sk-123"}})
    assert "sk-" not in json.dumps(RAGConfig().to_dict())


def test_unknown_override_path():
    with pytest.raises(ConfigError, match="gate.*min_confidense"):
        RAGConfig().with_overrides({"gate.min_confidense": 0.5})
    assert RAGConfig().with_overrides({"gate.min_confidence": 0.7}).gate.min_confidence == 0.7


def test_cross_field_rules_named():
    with pytest.raises(ConfigError, match="max_k"):
        RAGConfig.from_dict({"gate": {"initial_k": 10, "max_k": 5}})
    with pytest.raises(ConfigError, match="weights"):
        RAGConfig.from_dict({"fusion": {"weights": [1.0]}})


def test_index_hash_keys_what_an_index_holds_and_keeps_the_old_index_keys():
    """`index_hash` is the one identity of an index: the corpus and the chunking, embedding
    and lexical sections plus the store kind; retrieval, gate, LLM settings and `home` leave
    it alone (configs of a sweep share an index). Its value is the former
    `experiments.plan.index_key`'s (written out here), so existing `index-<key>` folders and
    the reply caches inside them keep their names."""
    import hashlib

    def former_index_key(cfg: RAGConfig, corpus_fp: str) -> str:
        parts = [corpus_fp, cfg.chunking.model_dump_json(), cfg.embedding.model_dump_json(),
                 cfg.lexical.model_dump_json(), cfg.store.kind]
        return hashlib.sha256("|".join(parts).encode()).hexdigest()[:12]

    base = RAGConfig()
    same = base.with_overrides({"gate.mode": "static", "home": "/elsewhere",
                                "llm.max_concurrency": 4, "fusion.retrievers": ["bm25"]})
    assert same.index_hash("fp") == base.index_hash("fp")
    assert same.config_hash() != base.config_hash()
    for over in ({"chunking.max_tokens": 64}, {"lexical.k1": 1.2}, {"store.kind": "qdrant"}):
        cfg = base.with_overrides(over)
        assert cfg.index_hash("fp") != base.index_hash("fp"), over
        assert cfg.index_hash("fp") == former_index_key(cfg, "fp")
    assert base.index_hash("other") != base.index_hash("fp")
    assert base.index_hash("fp") == former_index_key(base, "fp")


def test_documents_fingerprint_is_the_corpus_fingerprint_in_any_order():
    from agentic_rag.datasets.base import Dataset, documents_fingerprint
    from agentic_rag.documents import Document

    docs = [Document(id=f"d{i}", text=f"text {i}") for i in range(3)]
    ds = Dataset(name="t", corpus=docs, queries=[], qrels={})
    assert documents_fingerprint(reversed(docs)) == ds.corpus_fingerprint()
    edited = [docs[0], docs[1], Document(id="d2", text="text 2, edited")]
    assert documents_fingerprint(edited) != ds.corpus_fingerprint()
