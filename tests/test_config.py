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
