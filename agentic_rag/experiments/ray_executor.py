"""The Ray executor: a sweep's units cut into query shards, run by actors on a Ray cluster.

`RayExecutor` (`ray.address` in the sweep spec) keeps each worker's embedding model and indexes
loaded, replaces a worker that dies (a shard is retried at most `MAX_ATTEMPTS` times), and goes
on with the nodes left when one is lost. Like every executor (`executors.py`), it yields
finished rows in unit order and never writes a row.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import uuid
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agentic_rag.datasets.base import Dataset
from agentic_rag.experiments.executors import LocalExecutor
from agentic_rag.experiments.plan import Finished, Unit
from agentic_rag.experiments.spec import RaySpec, SweepSpec
from agentic_rag.retrieve.pipeline import Pipeline

# ---- Ray ------------------------------------------------------------------------------------
RAY_EXTRA = "pip install 'agentic-rag[ray]' (or pip install ray==2.60.0)"


WORKER_NAME = "agentic-rag-worker"  # named actors: `ray.util.list_named_actors()` finds them


MAX_ATTEMPTS = 3  # a shard whose worker dies is retried on a new one, at most this often


NODE_POLL_S = 5.0  # while waiting for shards, the driver checks this often that their nodes live


class RayUnavailable(RuntimeError):
    """The Ray cluster cannot be reached, or Ray is not installed."""


def import_ray():  # noqa: ANN201 - the ray module
    """The `ray` module, or a `RayUnavailable` naming the extra to install."""
    try:
        import ray
    except ImportError:
        raise RayUnavailable(f"executor: ray needs the ray package: {RAY_EXTRA}") from None
    return ray


def probe_address(address: str, timeout_s: float) -> None:
    """Fail within `timeout_s`, naming `address`, when nothing listens there (Ray's own
    connect retries for minutes). `auto` / `local` are left to Ray."""
    if address in ("auto", "local"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise RayUnavailable(f"Ray address {address!r}: expected host:port, ray://host:port or "
                             "auto (--ray-address, RAY_ADDRESS or the spec's ray.address)")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise RayUnavailable(
            f"Ray cluster at {address} unreachable within {timeout_s:g} s "
            f"({exc.strerror or exc}): start it with `ray start --head`, or fix --ray-address "
            "/ RAY_ADDRESS / the spec's ray.address (ray.connect_timeout_s sets the wait)"
        ) from None


def connect_ray(settings: RaySpec, log=print) -> bool:  # noqa: ANN001
    """Connect to Ray as `settings` say: a cluster already joined by this process; else
    `settings.address` or RAY_ADDRESS (probed first); else a cluster running on this
    machine; else a local one is started (`settings.num_cpus`, no dashboard, logs under
    Ray's temp dir, /tmp/ray). Returns whether this call connected (the caller shuts down)."""
    ray = import_ray()
    if ray.is_initialized():
        return False
    address = settings.address or os.environ.get("RAY_ADDRESS")
    if address:
        probe_address(address, settings.connect_timeout_s)
        ray.init(address=address, log_to_driver=False)
        log(f"ray: connected to {address}")
        return True
    try:
        ray.init(address="auto", log_to_driver=False)
        log("ray: connected to the cluster running on this machine")
    except ConnectionError:
        for attempt in (1, 2):  # a raylet can miss its start-up deadline on a loaded machine
            try:
                ray.init(address="local", num_cpus=settings.num_cpus, include_dashboard=False,
                         log_to_driver=False)
                break
            except Exception as exc:
                if attempt == 2 or "timed out during startup" not in str(exc):
                    raise
                log(f"ray: the local cluster did not start ({exc}); trying once more")
                ray.shutdown()
        log(f"ray: started a local cluster ({settings.num_cpus or os.cpu_count()} CPUs)")
    return True


class _ShardExecutor(LocalExecutor):
    """The local executor inside a Ray worker: its pipelines (index, BM25, candidate memo)
    and its embedding model are kept across the shards it runs, not reopened per shard."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        self.embedders = {}
        self._pipes: dict[tuple[int, ...], dict[int, Pipeline]] = {}

    def _pipelines(self, members: list[int]) -> dict[int, Pipeline]:
        key = tuple(members)
        if key not in self._pipes:
            self._pipes[key] = super()._pipelines(members)
        return self._pipes[key]


def intra_op_threads() -> int | None:
    """torch's intra-op thread count in this process (None when torch is not installed)."""
    try:
        import torch
    except ImportError:
        return None
    return int(torch.get_num_threads())


def use_intra_op_threads(n: int | None) -> None:
    """Embed passages with `n` intra-op threads, as the driver (a local run) does: Ray starts
    a 1-CPU actor with OMP_NUM_THREADS=1, and MiniLM's vectors depend on the thread count in
    their last bit, so an index a worker builds would otherwise differ from the local one.
    (Queries are embedded with one thread everywhere, `embeddings.one_thread_vector`, so the
    workers do not run two threads each for every row: on 2 cores that made the Ray sweeps
    1.6-1.7x the local wall time.)"""
    if n:
        import torch

        torch.set_num_threads(n)


class _Worker:
    """A Ray actor: one `_ShardExecutor`; `rows(shard)` returns the shard's finished rows."""

    def __init__(self, spec: SweepSpec, ds: Dataset, configs: list, cache_dir: str,
                 llm_ids: frozenset[str], max_concurrency: int,
                 torch_threads: int | None = None) -> None:
        use_intra_op_threads(torch_threads)
        self.executor = _ShardExecutor(spec, ds, configs, cache_dir, llm_ids,
                                       max_concurrency=max_concurrency)
        self.executor.make_scorer()

    def rows(self, shard: Unit) -> list[Finished]:
        return [f for batch in self.executor.run(shard) for f in batch]

    def node(self) -> str:
        """The id of the Ray node this worker runs on."""
        import ray

        return ray.get_runtime_context().get_node_id()


def shard_unit(unit: Unit, n: int) -> list[Unit]:
    """`unit` cut into at most `n` shards of whole queries (every config and repeat of a
    query in one shard, so the configs replay one another's searches), in `todo` order."""
    blocks: list[list[tuple]] = []
    for item in unit.todo:
        if blocks and blocks[-1][0][1].id == item[1].id and blocks[-1][0][2] == item[2]:
            blocks[-1].append(item)
        else:
            blocks.append([item])
    n = max(1, min(n, len(blocks)))
    cuts = [round(j * len(blocks) / n) for j in range(n + 1)]
    shards = []
    for a, b in zip(cuts, cuts[1:]):
        todo = [t for block in blocks[a:b] for t in block]
        shards.append(Unit(unit.members, todo,
                           {t[3]: unit.found[t[3]] for t in todo if t[3] in unit.found}))
    return shards


class RayExecutor(LocalExecutor):
    """Runs units on a Ray cluster (`spec.ray`): each unit is cut into query shards
    (`shard_unit`), run by actors (`_Worker`, one CPU each, one per cluster CPU unless
    `spec.ray.workers`) that load the embedding model and open each index once. The first
    shard of a unit goes out alone (its worker builds the index if it is missing: one
    builder per index), the others once it is back. A shard whose worker dies, or whose
    worker's node is lost (its raylet gone: `ray.nodes()` checked every `NODE_POLL_S` while
    shards are out, so no wait depends on Ray reporting the worker's death), is run again on a new worker (at
    most `MAX_ATTEMPTS` times); a new worker that cannot be placed within
    `ray.start_timeout_s` is given up and the sweep finishes on the workers left. A failure
    inside a shard (an unreachable store, say) is raised as itself. Rows come back to the
    driver, which yields them in the local executor's order: `rows.jsonl` is the same, and
    only the driver writes it.

    The driver starts the local LLM server when one is needed (the workers on this machine
    call it; on a cluster, use `llm.endpoints`); each worker runs its rows' LLM calls itself,
    up to `max_concurrency` at once, through its own reply cache file (SQLite locks it
    between processes). A capped meter (`--max-llm-calls`) is refused: the workers' calls
    are not counted by the driver."""

    def __init__(self, spec: SweepSpec, ds: Dataset, configs: list, cache_dir: str | Path,
                 llm_ids: frozenset[str], **kwargs) -> None:  # noqa: ANN003
        super().__init__(spec, ds, configs, cache_dir, llm_ids, **kwargs)
        if self.meter.cap is not None:
            raise ValueError("--max-llm-calls is not supported with executor ray (the "
                             "workers' calls are not counted by the driver): run with "
                             "executor local")
        self.ray = import_ray()
        self._owns_ray = False
        self._actors: list[Any] = []
        self._nodes: list[str | None] = []  # the node each slot's worker runs on
        self._made = 0
        self._token = uuid.uuid4().hex[:8]
        self._torch_threads = intra_op_threads()  # the workers embed as a local run does

    def __enter__(self) -> RayExecutor:
        if not self.compute:  # every row is cached: no cluster needed
            return self
        self._owns_ray = connect_ray(self.spec.ray, self.log)
        try:
            self.start_llm_server()
            cpus = int(self.ray.cluster_resources().get("CPU", 1))
            n = self.spec.ray.workers or max(1, cpus)
            self._ds_ref = self.ray.put(self.ds)
            self._actors = [self._new_actor() for _ in range(n)]
            self._nodes = [None] * n
            late = self._not_started(list(range(n)))
            if late:
                raise RuntimeError(
                    f"ray: {len(late)} of {n} worker(s) did not start within "
                    f"{self.spec.ray.start_timeout_s:.0f} s ({self._cluster_state()}): "
                    "each needs 1 free CPU on a node with agentic-rag installed; see "
                    "`ray status`, set ray.workers, or raise ray.start_timeout_s")
        except BaseException:
            self.__exit__()
            raise
        self.log(f"ray: {n} worker(s) on {cpus} cluster CPU(s)")
        return self

    def _new_actor(self):  # noqa: ANN202 - a Ray actor handle
        self._made += 1
        actor = self.ray.remote(num_cpus=1, max_restarts=0)(_Worker)
        return actor.options(name=f"{WORKER_NAME}-{self._token}-{self._made}").remote(
            self.spec, self._ds_ref, self.configs, str(self.cache_dir.resolve()),
            self.llm_ids, self.max_concurrency, self._torch_threads)

    def _not_started(self, slots: list[int]) -> list[int]:
        """Those of `slots` whose worker is not running after `ray.start_timeout_s` (a worker
        whose set-up raised raises here); the others' nodes noted in `_nodes`. Ray would
        otherwise wait for ever for a CPU that never frees, e.g. on a node that died."""
        pings = {self._actors[s].node.remote(): s for s in slots}
        ready, late = self.ray.wait(list(pings), num_returns=len(pings),
                                    timeout=self.spec.ray.start_timeout_s)
        for ref, node in zip(ready, self.ray.get(ready)):
            self._nodes[pings[ref]] = node
        return [pings[p] for p in late]

    def _on_lost_nodes(self, inflight: dict[Any, tuple[int, int]]) -> list:
        """The in-flight calls whose worker's node is no longer alive (`ray.nodes()`)."""
        alive = {n["NodeID"] for n in self.ray.nodes() if n.get("Alive")}
        return [ref for ref, (_, slot) in inflight.items() if self._nodes[slot] not in alive]

    def _cluster_state(self) -> str:
        nodes = sum(1 for n in self.ray.nodes() if n.get("Alive"))
        cpus = self.ray.cluster_resources().get("CPU", 0)
        free = self.ray.available_resources().get("CPU", 0)
        return f"{nodes} node(s) alive, {cpus:g} CPU(s), {free:g} free"

    def _replace(self, slot: int) -> bool:
        """A new worker in `slot` after its worker died (the old one is killed, should it
        live on); False (and the slot left empty) when the new one cannot start within
        `ray.start_timeout_s` (no free CPU, its node lost): the sweep goes on with the
        others."""
        with contextlib.suppress(Exception):  # if it lives on (cut off, its result lost)
            self.ray.kill(self._actors[slot])  # its CPU is freed for the new one
        actor = self._actors[slot] = self._new_actor()
        self._nodes[slot] = None
        if not self._not_started([slot]):
            return True
        self.ray.kill(actor)
        self._actors[slot] = None
        self.log(f"ray: no new worker started within {self.spec.ray.start_timeout_s:.0f} s "
                 f"({self._cluster_state()}); going on with "
                 f"{sum(a is not None for a in self._actors)}")
        return False

    def __exit__(self, *exc: object) -> None:
        for actor in filter(None, self._actors):
            self.ray.kill(actor)
        self._actors = []
        super().__exit__(*exc)
        if self._owns_ray:
            self.ray.shutdown()
            self._owns_ray = False

    def run_all(self, units: list[Unit]) -> Iterator[list[Finished]]:
        """Every unit's rows, in unit order and, within a unit, in `todo` order."""
        ray = self.ray
        from ray.exceptions import ObjectLostError, RayActorError, RayTaskError

        shards, results, queue, later = self._plan(units)
        idle = [s for s, a in enumerate(self._actors) if a is not None]
        inflight: dict[Any, tuple[int, int]] = {}
        attempts: dict[int, int] = {}
        shown, next_check = 0, time.monotonic() + NODE_POLL_S
        while shown < len(shards):
            while shown in results:
                yield results.pop(shown)
                shown += 1
            if shown == len(shards):
                break
            while idle and queue:
                sid, slot = queue.popleft(), idle.pop()
                attempts[sid] = attempts.get(sid, 0) + 1
                inflight[self._actors[slot].rows.remote(shards[sid])] = (sid, slot)
            ready, _ = ray.wait(list(inflight), num_returns=1, timeout=NODE_POLL_S)
            if time.monotonic() >= next_check:  # a worker whose node is gone may never answer
                next_check = time.monotonic() + NODE_POLL_S
                lost = self._on_lost_nodes({r: v for r, v in inflight.items() if r not in ready})
                for ref in lost:
                    sid, slot = inflight.pop(ref)
                    self._worker_lost(sid, slot, "its node is gone", attempts[sid], queue,
                                      idle, inflight, "its node is no longer alive")
                if lost:
                    continue
            if not ready:
                continue
            sid, slot = inflight.pop(ready[0])
            try:
                results[sid] = ray.get(ready[0])
            except (RayActorError, ObjectLostError) as exc:  # lost: the worker, or its node
                self._worker_lost(sid, slot, type(exc).__name__, attempts[sid], queue, idle,
                                  inflight, str(exc)[:300])
                continue
            except RayTaskError as exc:
                cause = getattr(exc, "cause", None)
                if isinstance(cause, Exception):
                    raise cause from None
                raise
            idle.append(slot)
            self.log(f"ray: shard {sid + 1}/{len(shards)} done ({len(results[sid])} rows)")
            queue.extend(later.pop(sid, []))

    def _plan(self, units: list[Unit]) -> tuple[list[Unit], dict[int, list[Finished]],
                                                deque[int], dict[int, list[int]]]:
        """The shards (`shard_unit`, `ray.shards_per_worker` per worker in all), the rows of
        units read whole from the row cache (no worker needed), the shards to send first (each
        unit's first) and, for each of them, the unit's other shards, sent once it is back."""
        n_compute = sum(u.to_compute > 0 for u in units)
        per_unit = -(-self.spec.ray.shards_per_worker * max(1, len(self._actors))
                     // max(1, n_compute))
        shards: list[Unit] = []
        later: dict[int, list[int]] = {}  # a unit's first shard → its other shards
        results: dict[int, list[Finished]] = {}
        queue: deque[int] = deque()
        for unit in units:
            if unit.to_compute == 0:  # read from the row cache here: no worker needed
                results[len(shards)] = next(iter(LocalExecutor.run(self, unit)))
                shards.append(unit)
                continue
            parts = shard_unit(unit, per_unit)
            ids = list(range(len(shards), len(shards) + len(parts)))
            shards.extend(parts)
            queue.append(ids[0])
            later[ids[0]] = ids[1:]
        return shards, results, queue, later

    def _worker_lost(self, sid: int, slot: int, why: str, attempts: int, queue: deque[int],
                     idle: list[int], inflight: dict, detail: str) -> None:
        """Shard `sid`'s worker (in `slot`) is lost: the shard goes back to the front of the
        queue, and a new worker into the slot, or none (`_replace`). RuntimeError when the
        shard has lost `MAX_ATTEMPTS` workers, or when no worker is left."""
        if attempts >= MAX_ATTEMPTS:
            raise RuntimeError(f"ray: shard {sid + 1} lost its worker {attempts} times; "
                               f"last: {detail}")
        self.log(f"ray: a worker died ({why}); shard {sid + 1} runs again on a new worker")
        queue.appendleft(sid)
        if self._replace(slot):
            idle.append(slot)
        elif not idle and not inflight:
            raise RuntimeError(f"ray: every worker is gone and none could be started "
                               f"({self._cluster_state()}); the rows so far are kept: resume "
                               "when the cluster is back")
