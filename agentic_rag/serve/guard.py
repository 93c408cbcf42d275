"""The serve memory guard: a call is refused — HTTP 503 with `Retry-After`, an MCP error
result — while the server's resident memory is over its limit, instead of the process growing
until the kernel's OOM killer (or a container's cap) ends it with every client's call.

    guard = MemoryGuard(limit_mb=1024)
    guard.check()        # raises Overloaded when resident memory > 1024 MiB

The resident size is read per call (Linux: `/proc/self/statm`, ~20 µs; elsewhere psutil when
installed), so the server serves again as soon as memory drops back under the limit: nothing
is latched. A search that fails to allocate (`MemoryError`, or torch's "can't allocate
memory" under an address-space rlimit) is refused the same way (`is_out_of_memory`).
`agentic-rag serve --memory-limit-mb N` sets it; off by default.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

_STATM = Path("/proc/self/statm")
RETRY_AFTER_S = 1  # what a refusal tells the client to wait


class Overloaded(RuntimeError):
    """The server refuses this call for now (memory over its limit); the client may retry."""


def resident_bytes() -> int:
    """This process's resident set size now, in bytes."""
    try:
        pages = int(_STATM.read_text().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import psutil
    except ImportError:
        raise RuntimeError("the memory guard reads the resident size from /proc/self/statm "
                           "(Linux) or psutil: install psutil on this system") from None
    return int(psutil.Process().memory_info().rss)


def is_out_of_memory(exc: BaseException) -> bool:
    """An allocation failure: Python's `MemoryError`, or torch's CPU allocator error."""
    text = str(exc)
    return isinstance(exc, MemoryError) or (
        isinstance(exc, RuntimeError) and ("can't allocate memory" in text
                                           or "Cannot allocate memory" in text))


class MemoryGuard:
    """Refuses calls while resident memory exceeds `limit_mb` MiB (None: never)."""

    def __init__(self, limit_mb: float | None = None) -> None:
        if limit_mb is not None and limit_mb <= 0:
            raise ValueError(f"memory limit must be positive MiB, got {limit_mb!r}")
        self.limit_mb = limit_mb
        self.refused = 0  # calls refused so far (read by tests and benchmarks)
        self._count = threading.Lock()

    def _refuse(self, message: str) -> Overloaded:
        with self._count:
            self.refused += 1
        return Overloaded(message)

    def check(self) -> None:
        if self.limit_mb is None:
            return
        mb = resident_bytes() / 2**20
        if mb > self.limit_mb:
            raise self._refuse(f"server overloaded: resident memory {mb:.0f} MiB is over its "
                               f"limit of {self.limit_mb:.0f} MiB; retry in {RETRY_AFTER_S} s")

    def refuse_oom(self, exc: BaseException) -> Overloaded:
        """The `Overloaded` that replaces a failed allocation."""
        return self._refuse(f"server overloaded: out of memory during the search "
                            f"({type(exc).__name__}); retry in {RETRY_AFTER_S} s")
