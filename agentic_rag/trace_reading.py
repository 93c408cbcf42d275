"""Agent traces read back: the OTLP-JSON file as spans, per question, as a timeline, checked against the conventions.

`read_spans(path)` reads a trace file `tracing.recording` wrote (`traces.jsonl`) into flat span
records; `questions(spans)` groups them per question (agent-eval's `invoke_agent` spans, a
conversation's turns) into the searches and passages rows.jsonl records; `trace_spans` and
`plot_timeline` draw one question's trace; `unknown_attributes` names every attribute that is
neither a semantic-conventions name (`convention_names`, from the package) nor one of
`tracing.OWN_ATTRIBUTES`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as G

from agentic_rag.jsonl import read_rows
from agentic_rag.tracing import OWN_ATTRIBUTES


def convention_names() -> frozenset[str]:
    """Every attribute name `opentelemetry-semantic-conventions` defines (stable and
    incubating: the `*_attributes` modules' constants)."""
    import importlib
    import pkgutil

    from opentelemetry.semconv import attributes as stable
    from opentelemetry.semconv._incubating import attributes as incubating

    names: set[str] = set()
    for pkg in (stable, incubating):
        for info in pkgutil.iter_modules(pkg.__path__):
            mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
            names.update(v for k, v in vars(mod).items() if k.isupper() and isinstance(v, str))
    return frozenset(names)


def unknown_attributes(spans: list[dict[str, Any]]) -> list[str]:
    """`span name: attribute` for each attribute of `spans` (`read_spans`) and of their events
    that is neither a conventions name nor one of `OWN_ATTRIBUTES`; [] for a valid trace."""
    known = convention_names() | OWN_ATTRIBUTES.keys()
    return [f"{s['name']}{'/' + e['name'] if e is not s else ''}: {k}"
            for s in spans for e in [s, *s["events"]] for k in e["attributes"] if k not in known]



def _value(v: dict[str, Any]) -> Any:  # noqa: ANN401 - an OTLP AnyValue
    if "arrayValue" in v:
        return [_value(x) for x in v["arrayValue"].get("values", [])]
    if "intValue" in v:
        return int(v["intValue"])
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    return None


def _attrs(items: list[dict[str, Any]] | None) -> dict[str, Any]:
    return {a["key"]: _value(a.get("value", {})) for a in items or []}


def read_spans(path: str | Path) -> list[dict[str, Any]]:
    """Every span of an OTLP-JSON lines file, flat and in start order: name, trace_id, span_id,
    parent_id, start and end (ns), attributes, events ({name, time, attributes}), status."""
    spans = []
    for request in read_rows(path, repair=False):
        for rs in request.get("resourceSpans", []):
            for ss in rs.get("scopeSpans", []):
                for s in ss.get("spans", []):
                    spans.append({
                        "name": s["name"], "trace_id": s["traceId"], "span_id": s["spanId"],
                        "parent_id": s.get("parentSpanId") or None,
                        "start": int(s["startTimeUnixNano"]), "end": int(s["endTimeUnixNano"]),
                        "attributes": _attrs(s.get("attributes")),
                        "events": [{"name": e["name"], "time": int(e["timeUnixNano"]),
                                    "attributes": _attrs(e.get("attributes"))}
                                   for e in s.get("events", [])],
                        "status": s.get("status", {})})
    return sorted(spans, key=lambda s: s["start"])


def questions(spans: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per question (`invoke_agent` span) in start order: its attributes, and
    `searches`, each search's arguments' query and the chunk ids it served, in order, and
    `served`, the chunk ids shown to the model in order without repeats (as `AgentResult`
    and agent-eval's rows.jsonl: `queries`, `served`). A conversation turn's first search
    (made by the turn before the agent) counts as its question's."""
    by_id = {s["span_id"]: s for s in spans}

    def owner(s: dict[str, Any]) -> str | None:  # the invoke_agent or turn span above `s`
        p = by_id.get(s["parent_id"])
        while p is not None and p["attributes"].get(G.GEN_AI_OPERATION_NAME) != "invoke_agent" \
                and p["name"] != "conversation_turn":
            p = by_id.get(p["parent_id"])
        return p["span_id"] if p is not None else None

    agents = [s for s in spans if s["attributes"].get(G.GEN_AI_OPERATION_NAME) == "invoke_agent"]
    turn_of = {a["span_id"]: owner(a) for a in agents}
    out = []
    for a in agents:
        mine = {a["span_id"], turn_of[a["span_id"]]} - {None}
        tools = [s for s in spans if s["attributes"].get(G.GEN_AI_OPERATION_NAME)
                 == "execute_tool" and owner(s) in mine]
        searches = [{"query": json.loads(t["attributes"].get(G.GEN_AI_TOOL_CALL_ARGUMENTS)
                                         or "{}").get("query"),
                     "served": list(t["attributes"].get("agentic_rag.tool.served", []))}
                    for t in tools if "agentic_rag.tool.served" in t["attributes"]]
        out.append({**a["attributes"], "span": a, "searches": searches,
                    "served": list(dict.fromkeys(c for s in searches for c in s["served"]))})
    return out


def trace_spans(spans: list[dict[str, Any]], span: dict[str, Any]) -> list[dict[str, Any]]:
    """The spans of `span`'s trace (a question of agent-eval, a conversation's turn), in tree
    order (each span followed by its children, in start order), each with its `depth`."""
    mine = [s for s in spans if s["trace_id"] == span["trace_id"]]
    children: dict[str | None, list[dict[str, Any]]] = {}
    ids = {s["span_id"] for s in mine}
    for s in sorted(mine, key=lambda s: s["start"]):
        children.setdefault(s["parent_id"] if s["parent_id"] in ids else None, []).append(s)
    out: list[dict[str, Any]] = []

    def walk(parent: str | None, depth: int) -> None:
        for s in children.get(parent, []):
            out.append({**s, "depth": depth})
            walk(s["span_id"], depth + 1)

    walk(None, 0)
    return out


def plot_timeline(spans: list[dict[str, Any]], title: str = "", ax=None):  # noqa: ANN001, ANN201
    """One trace (`trace_spans`) as a timeline: a bar per span from its start to its end,
    indented by depth and coloured by operation, its events as ticks; returns the figure."""
    import matplotlib.pyplot as plt

    colors = {"invoke_agent": "tab:blue", "chat": "tab:orange", "execute_tool": "tab:green",
              "retrieval": "tab:olive"}
    if ax is None:
        _, ax = plt.subplots(figsize=(10, 0.4 * len(spans) + 1.2))
    t0 = min(s["start"] for s in spans)
    for i, s in enumerate(spans):
        op = s["attributes"].get(G.GEN_AI_OPERATION_NAME, "")
        ax.barh(i, (s["end"] - s["start"]) / 1e9, left=(s["start"] - t0) / 1e9, height=0.6,
                color=colors.get(op, "tab:gray"))
        for e in s["events"]:
            ax.plot((e["time"] - t0) / 1e9, i, "k|", markersize=14)
    names = [s["name"] if len(s["name"]) <= 40 else s["name"][:39] + "…" for s in spans]
    ax.set_yticks(range(len(spans)), ["  " * s.get("depth", 0) + n for s, n in zip(spans, names)],
                  fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("seconds from the start (ticks: events)")
    ax.set_title(title, fontsize=10)
    ax.figure.tight_layout()
    return ax.figure
