"""What part of an included file a page shows (`ingest.includes`): docutils' `include`
options (`include_lines`) and Sphinx's `literalinclude` filters (`literal_lines_of`), each
None where the build shows nothing (a marker or object not found, an option refused). Pure:
text in, lines out."""

from __future__ import annotations

import ast
import textwrap


def include_lines(text: str, opts: dict[str, str]) -> list[str] | None:
    """docutils' include: `:start-line:` / `:end-line:`, then the text between
    `:start-after:` and `:end-before:`; None where a marker is not found."""
    first, last = (int(opts[k]) if opts.get(k) else None for k in ("start-line", "end-line"))
    text = "\n".join(text.split("\n")[first:last])
    for option, keep_after in (("start-after", True), ("end-before", False)):
        if marker := opts.get(option):
            k = text.find(marker)
            if k < 0:
                return None  # docutils stops the build: nothing is shown
            text = text[k + len(marker):] if keep_after else text[:k]
    return text.strip("\n").split("\n") if "literal" in opts or "code" in opts else text.split("\n")


def literal_lines_of(text: str, opts: dict[str, str]) -> list[str] | None:
    """Sphinx's literalinclude filters, in its order: pyobject, start, end, lines, dedent,
    prepend, append; None where a pattern or object is not found (Sphinx shows nothing)."""
    if ("start-at" in opts and "start-after" in opts) or ("end-at" in opts and "end-before" in opts):
        return None  # Sphinx refuses the pair
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    if obj := opts.get("pyobject"):
        span = _python_object(text, obj)
        if span is None:
            return None
        lines = lines[span[0] - 1:span[1]]
    for option, at in (("start-at", 0), ("start-after", 1)):
        if marker := opts.get(option):
            k = next((n for n, ln in enumerate(lines) if marker in ln), None)
            if k is None:
                return None
            lines = lines[k + at:]
            break
    for option, at in (("end-at", 1), ("end-before", 0)):
        if marker := opts.get(option):
            # Sphinx's end-before ignores the first line
            k = next((n for n, ln in enumerate(lines) if marker in ln and (at or n)), None)
            if k is None:
                return None
            lines = lines[:k + at]
            break
    if spec := opts.get("lines"):
        lines = [lines[n] for n in _line_numbers(spec, len(lines)) if n < len(lines)]
        if not lines:
            return None
    if "dedent" in opts:
        if width := opts["dedent"]:
            if int(width) < 0:
                return None  # Sphinx refuses it
            lines = [ln[int(width):] for ln in lines]  # as Sphinx: what is cut, is cut
        else:
            lines = textwrap.dedent("\n".join(lines)).split("\n")
    return [*filter(None, [opts.get("prepend")]), *lines, *filter(None, [opts.get("append")])]


def _line_numbers(spec: str, total: int) -> list[int]:
    """Sphinx's `:lines:` ("1,3,5-10,20-", "-4"): 0-based line indices, in order."""
    out: list[int] = []
    for part in (p.strip() for p in spec.split(",")):
        if not part:
            continue
        first, dash, last = part.partition("-")
        begin = int(first) - 1 if first.strip() else 0
        end = (int(last) if last.strip() else total) if dash else begin + 1
        if begin < 0 or end < begin + 1:
            raise ValueError(f"invalid line number spec: {spec!r}")
        out.extend(range(begin, min(end, total)))  # past the file's end: what there is
    return out


def _python_object(source: str, name: str) -> tuple[int, int] | None:
    """The first and last line (1-based) of the class or function `name` ("Class.method")
    in Python `source`, decorators included, as Sphinx's `:pyobject:` finds it: definitions
    inside `if` / `try` / `with` blocks too, not inside functions; the last one of a name
    (an `@overload` stub's implementation, a fallback's redefinition) wins."""
    found: dict[str, tuple[int, int]] = {}

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                found[prefix + node.name] = (first, node.end_lineno or node.lineno)
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{prefix}{node.name}.")
                continue
            for block in ("body", "handlers", "orelse", "finalbody", "cases"):  # in source order
                inner = getattr(node, block, None)
                for x in inner if isinstance(inner, list) else []:
                    if isinstance(x, ast.stmt):
                        visit([x], prefix)
                    elif isinstance(getattr(x, "body", None), list):  # an except, a case
                        visit(x.body, prefix)

    visit(ast.parse(source).body, "")
    return found.get(name)
