"""Candidate answer spans of a passage, chosen by rule before any model is asked (issue 38).

The span-first generator (`testset.generate_testset(..., mode="span")`) picks one of these
per drawn chunk and asks the model only for a question whose answer is that span, so every
kept answer is a verbatim piece of the passage of at most `MAX_WORDS` words.

    spans = candidate_spans(passage_text, chunk_type="prose", heading="json > Encoders")
    spans[0].text, spans[0].kind, spans[0].start      # offsets into passage_text

Kinds, in the order they are preferred (`KINDS`):
- `code`: an identifier or option written as code: inside backticks (Markdown `x`, reST
  ``x``), or in a code chunk a dotted name, a called name or a keyword argument;
- `number`: a number with its unit ("30 seconds", "12 dollars", "64 KiB", "3.11"), a year;
- `term`: a defined term ("**term**", "called X", "known as X");
- `cell`: a table cell (not the header row);
- `item`: a list item short enough to be an answer;
- `name`: a run of 2-4 capitalised words inside a sentence (a person, a place, a product).

Pure functions of the text: tested without a model.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from agentic_rag.evaluation.answers import normalize_answer

MAX_WORDS = 8
MAX_CHARS = 80
KINDS = ("code", "number", "term", "cell", "item", "name")

_BACKTICK = re.compile(r"``([^`\n]{1,80})``|(?<!`)`([^`\n]{1,80})`(?!`)")
_DOTTED = re.compile(r"\b[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+\b")
_CALLED = re.compile(r"\b([A-Za-z_]\w{2,})\(")
_KWARG = re.compile(r"(?<![=<>!])\b([a-z_]\w{2,})=(?!=)")
_UNITS = (r"%|percent|seconds?|secs?|s|ms|milliseconds?|minutes?|mins?|hours?|days?|weeks?|"
          r"months?|years?|bytes?|bits?|[KMGT]i?B|kb|mb|gb|characters?|chars?|tokens?|lines?|"
          r"items?|entries|elements?|digits?|times|dollars?|euros?|USD|EUR|GBP|px|pixels?|"
          r"degrees?|kg|km|m|cm|mm|miles?|points?|threads?|processes|arguments?|levels?|"
          r"attempts?|retries|requests?|calls?|rows?|columns?|files?|places?")
_NUMBER = re.compile(rf"(?<![\w.])(?:[$€£]\s?)?\d[\d,]*(?:\.\d+)?(?:\s?(?:{_UNITS})\b)?")
_VERSION = re.compile(r"\b(?:version|Python|v)\s?\d+(?:\.\d+)+\b")
_BOLD = re.compile(r"\*\*([^*\n]{2,60})\*\*|(?<![*\w])\*([^*\n]{2,60})\*(?![*\w])")
_DEFINED = re.compile(r"\b(?:called|named|known as|termed|referred to as)\s+"
                      r"((?:[A-Z][\w-]*|\"[^\"]{2,40}\")(?:\s+[A-Z][\w-]*){0,3})")
_NAME = re.compile(r"(?<=[a-z,;:(] )(?:[A-Z][a-z][\w'-]*)(?:\s+(?:of |de |von |van |der |the )?[A-Z][\w'-]*){1,3}")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d+[.)])[ \t]+(.+)$", re.M)
_TABLE_ROW = re.compile(r"^[ \t]*\|(.+)\|[ \t]*$", re.M)
_SEPARATOR = re.compile(r"^[\s|:-]+$")
_STOP = {"the", "a", "an", "of", "to", "and", "or", "in", "on", "for", "with", "by", "is", "it",
         "this", "that", "true", "false", "none", "yes", "no", "not", "self", "see", "note"}


@dataclass(frozen=True)
class Span:
    """A candidate answer: `text` is `passage[start:end]`, verbatim."""

    start: int
    end: int
    text: str
    kind: str


def candidate_spans(passage: str, chunk_type: str = "prose", heading: str = "") -> list[Span]:
    """Every candidate answer span of `passage` (each distinct text once, first occurrence),
    in the order of `KINDS`, then of position. A span is left out when it is too long
    (> `MAX_WORDS` words or `MAX_CHARS` characters), generic (a stop word, one character),
    a bare small number with no unit, one character once normalised for scoring ("%S"), a
    piece of a longer token (an e-mail address, a URL, a dotted name), part of the `heading`
    (the chunk's title: a question would have to name it), or repeated more than twice in
    the passage (ambiguous)."""
    found: list[Span] = []
    found += _code_spans(passage, chunk_type)
    found += _number_spans(passage)
    found += _term_spans(passage)
    if chunk_type in ("table", "table_row"):
        found += _cell_spans(passage)
    if chunk_type == "list" or _LIST_ITEM.search(passage):
        found += [Span(m.start(1), m.end(1), m.group(1), "item")
                  for m in _LIST_ITEM.finditer(passage)]
    if chunk_type == "prose":
        found += [Span(m.start(), m.end(), m.group(0), "name") for m in _NAME.finditer(passage)]
    out, seen = [], set()
    head = heading.lower()
    for s in sorted(found, key=lambda s: (KINDS.index(s.kind), s.start)):
        s = _trim(s)
        key = s.text.lower()
        if s.text and key not in seen and _usable(s, passage, head):
            seen.add(key)
            out.append(s)
    return out


def pick_span(spans: list[Span], key: str) -> Span | None:
    """One span, chosen with a seed from `key` (the chunk's id) among those of the most
    preferred kind present: the same chunk always gets the same answer."""
    if not spans:
        return None
    best = [s for s in spans if s.kind == spans[0].kind]
    return random.Random(key).choice(best)


def _code_spans(text: str, chunk_type: str) -> list[Span]:
    out = []
    for m in _BACKTICK.finditer(text):
        g = 1 if m.group(1) is not None else 2
        out.append(Span(m.start(g), m.end(g), m.group(g), "code"))
    if chunk_type == "code":
        for rx, g in ((_DOTTED, 0), (_CALLED, 1), (_KWARG, 1)):
            out += [Span(m.start(g), m.end(g), m.group(g), "code") for m in rx.finditer(text)]
    return out


def _number_spans(text: str) -> list[Span]:
    out = [Span(m.start(), m.end(), m.group(0), "number") for m in _VERSION.finditer(text)]
    for m in _NUMBER.finditer(text):
        t = m.group(0)
        has_unit = not t[-1].isdigit() or t[0] in "$€£"
        year = re.fullmatch(r"1[5-9]\d\d|20\d\d", t) is not None
        big = len(re.sub(r"\D", "", t)) >= 2
        if has_unit or year or big:
            out.append(Span(m.start(), m.end(), t, "number"))
    return out


def _term_spans(text: str) -> list[Span]:
    out = []
    for m in _BOLD.finditer(text):
        g = 1 if m.group(1) is not None else 2
        out.append(Span(m.start(g), m.end(g), m.group(g), "term"))
    for m in _DEFINED.finditer(text):
        out.append(Span(m.start(1), m.end(1), m.group(1), "term"))
    return out


def _cell_spans(text: str) -> list[Span]:
    out = []
    rows = list(_TABLE_ROW.finditer(text))
    for i, m in enumerate(rows):
        if i == 0 or _SEPARATOR.match(m.group(1)):
            continue  # the header row, the |---| line
        pos = m.start(1)
        for cell in m.group(1).split("|"):
            stripped = cell.strip()
            if stripped:
                start = pos + cell.index(stripped)
                out.append(Span(start, start + len(stripped), stripped, "cell"))
            pos += len(cell) + 1
    return out


def _trim(s: Span) -> Span:
    """Trailing punctuation and markup off the span (offsets kept in step)."""
    text = s.text
    left = len(text) - len(text.lstrip(" \t*_\"'"))
    text = text[left:].rstrip(" \t.,;:*_\"'")
    if s.kind != "code":
        text = text.rstrip("`")
    return Span(s.start + left, s.start + left + len(text), text, s.kind)


def _usable(s: Span, passage: str, heading: str) -> bool:
    words = s.text.split()
    if not words or len(words) > MAX_WORDS or len(s.text) > MAX_CHARS or len(s.text) < 2:
        return False
    if s.text.lower() in _STOP or "\n" in s.text or len(normalize_answer(s.text)) < 2:
        return False  # "%S" scores as "s": found in any passage
    before, after = passage[s.start - 1:s.start], passage[s.end:s.end + 1]
    if before in ("@", ".", "/") or after == "@" or (after == "." and passage[s.end + 1:s.end + 2]
                                                      .isalnum()):
        return False  # a piece of a longer token: an e-mail address, a URL, a dotted name
    if heading and s.text.lower() in heading:
        return False
    if s.kind == "item" and (s.text.endswith(":") or s.text[-1:] in "([{,"):
        return False
    return passage.count(s.text) <= 2
