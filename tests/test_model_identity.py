"""The reply cache keys on the model's identity, never on the URL it was reached at."""

from types import SimpleNamespace as NS

from agentic_rag.config_llm import LLMConfig, ServerConfig
from agentic_rag.llm.cache import ChatCache, model_identity
from agentic_rag.llm.client import OpenAIChatModel
from agentic_rag.llm.models import MODELS


def _client(counter):
    def create(**kw):
        counter.append(kw)
        return NS(choices=[NS(message=NS(content=f"reply {len(counter)}", tool_calls=None),
                              finish_reason="stop", logprobs=None)],
                  usage=NS(prompt_tokens=3, completion_tokens=2))
    return NS(chat=NS(completions=NS(create=create)))


def test_embedded_server_identity_is_the_weights_and_output_settings():
    cfg = LLMConfig(server=ServerConfig(binary=None))  # llama-cpp-python's (portable) server
    ident = model_identity(cfg)
    assert MODELS[cfg.server.model].sha256 in ident and "n_ctx=8192" in ident
    assert "127.0.0.1" not in ident and "local" not in ident.split("@")[0]
    # the same model on another configured port: the same identity
    moved = cfg.model_copy(update={"server": cfg.server.model_copy(update={"port": 9100})})
    assert model_identity(moved) == ident
    # another model, or a setting that changes replies: another identity
    smol = cfg.model_copy(update={"server": cfg.server.model_copy(update={"model": "smollm2-135m"})})
    assert model_identity(smol) != ident
    ctx = cfg.model_copy(update={"server": cfg.server.model_copy(update={"n_ctx": 4096})})
    assert model_identity(ctx) != ident
    # the llama.cpp build and CPU variant that run the weights are part of it
    assert "|build=llama-cpp-python " in ident
    assert model_identity(cfg, build=lambda: "llama-cpp-python 0.3.36/ggml x/zen4") != ident
    # an address that is not the configured server: what it serves is unknown → its URL
    other = model_identity(cfg, "http://127.0.0.1:9999/v1")
    assert other == "local@http://127.0.0.1:9999/v1"


def test_hosted_identity_is_the_model_name_not_the_url():
    a = LLMConfig(base_url="http://gpu-a:8000/v1", model="qwen2.5-7b-instruct")
    b = LLMConfig(base_url="http://gpu-b:8000/v1", model="qwen2.5-7b-instruct")
    assert model_identity(a) == model_identity(b) == "remote:qwen2.5-7b-instruct"
    assert model_identity(LLMConfig(base_url="http://gpu-a:8000/v1", model="other")) != \
        model_identity(a)


def test_a_cached_reply_is_found_from_another_endpoint_of_the_same_model(tmp_path):
    cache = ChatCache(tmp_path / "llm.sqlite")
    calls_a, calls_b = [], []
    a = OpenAIChatModel(LLMConfig(base_url="http://gpu-a:8000/v1", model="m1"),
                        client=_client(calls_a), cache=cache)
    b = OpenAIChatModel(LLMConfig(base_url="http://gpu-b:8000/v1", model="m1"),
                        client=_client(calls_b), cache=cache)
    msgs = [{"role": "user", "content": "hi"}]
    first = a.chat(msgs)
    second = b.chat(msgs)
    assert len(calls_a) == 1 and calls_b == [] and second.cached
    assert second.content == first.content
    # a different model under the same alias and URL never shares the reply
    c = OpenAIChatModel(LLMConfig(base_url="http://gpu-a:8000/v1", model="m2"),
                        client=_client(calls_b), cache=cache)
    assert not c.chat(msgs).cached and len(calls_b) == 1


def test_map_calls_keeps_input_order_at_any_concurrency():
    import random
    import time

    from agentic_rag.llm.calls import map_calls

    def slow_square(x):
        time.sleep(random.random() / 200)
        return x * x

    items = list(range(25))
    for n in (1, 2, 8):
        assert list(map_calls(slow_square, items, n)) == [(i, i * i) for i in items]
