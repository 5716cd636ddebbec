"""The results of every command: one vocabulary, typed (pydantic, so the server returns them
as they are), each able to lay itself out as tables of text for people (:meth:`Result.tables`).

Front ends draw :class:`Table` s (the CLI with rich, the TUI with a DataTable) or emit the
result's JSON (``--json``, the HTTP API): the same fields, whichever front end. Values are
rendered for people by :func:`human` (no Python reprs: lists joined, yes/no, units).
"""

from __future__ import annotations

import functools
import json
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from ..data.files import FENCE, reads_as_markdown  # reads_as_markdown: the TUI's document view asks it here too
from ..index.search import Hit
from ..paths import short_path  # noqa: F401 - a result's paths as a person reads them

# How some fields read in a table (their JSON keeps the plain number).
UNITS = {
    "bytes_per_vector": "{:,.0f} B",
    "seconds": "{:.1f} s",
    "train_seconds": "{:.1f} s",
    "eval_seconds": "{:.1f} s",
    "duration_s": "{:.0f} s",
    "examples_per_s": "{:.2f}",
    "ms": "{:.1f} ms",
}


def human(value: Any, key: str = "") -> str:
    """``value`` as a table cell: ``""`` for None, yes/no, lists joined with commas, floats
    with 4 significant digits (or the field's unit from :data:`UNITS`), dicts as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if key in UNITS and isinstance(value, (int, float)):
        return UNITS[key].format(value)
    if isinstance(value, float):
        return f"{value:.4g}"  # 4 significant digits: 2e-05, 0.1234, 471.1
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(human(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value, separators=(", ", ": "), default=str)
    return str(value)


def sync_command(index) -> str:
    """The command that reads an index's files again (``encodr index SOURCES --out IDX --sync``),
    its paths as :func:`short_path` shows them; ``index``: an opened index (its ``meta.sources``
    and ``path``)."""
    sources = " ".join(short_path(s) for s in (index.meta.sources or [])) or "FOLDER"
    return f"encodr index {sources} --out {short_path(str(index.path))} --sync"


@dataclass
class Table:
    """A table of text cells, for a front end to draw.

    Attributes:
        title, caption: above and below it.
        columns: column names; ``right`` names those aligned right (numbers).
        rows: one list of cells (strings) per row, as many as ``columns``.
    """

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    caption: str = ""
    right: tuple[str, ...] = ()
    marks: dict[tuple[int, int], list[tuple[int, int]]] = field(
        default_factory=dict
    )  # (row, column) → character spans to highlight
    main: str = ""  # with ``under``, rows print as cards: this column's text under a heading line (a hit's snippet)
    under: tuple[str, ...] = ()  # the columns a card's heading line shows, in this order (a hit's source, title, language)


STOP_WEIGHT = 1.5  # a query word this common (:func:`encodr.index.snippets.word_weight`; Zipf ≥ 6.5) is not highlighted


def term_spans(text: str, query: str, query_lang: str | None = None, text_lang: str | None = None) -> list[tuple[int, int]]:
    """Where the words of ``query`` occur in ``text`` as whole words, as the keyword index
    matches them: case- and accent-insensitively, and, for a language with a Snowball stemmer,
    by stem (``pumps`` marks ``pump``; :func:`encodr.index.keywords.stem_words`).

    Args:
        text: the hit's text.
        query: the query as typed.
        query_lang: the query's language (ISO 639-3; None or ``und``: words compared unstemmed).
        text_lang: the hit's language (its stemmer; None or ``und``: unstemmed).

    Returns:
        Sorted (start, end) character offsets into ``text``, end exclusive.
    """
    from ..index.keywords import stem_words, words

    wanted = _wanted(query, query_lang)
    found = words(text)
    tokens = [text[a:b] for a, b in found]
    stems = stem_words([t.lower() for t in tokens], text_lang)
    return [span for span, token, stem in zip(found, tokens, stems) if _fold(token) in wanted or _fold(stem) in wanted]


def _fold(s: str) -> str:
    """``s`` case- and accent-folded, as the keyword index compares words."""
    import unicodedata

    if s.isascii():  # no accent to strip: casefold is lower
        return s.lower()
    return "".join(c for c in unicodedata.normalize("NFKD", s.casefold()) if not unicodedata.combining(c))


@functools.lru_cache(maxsize=64)
def _wanted(query: str, query_lang: str | None) -> frozenset[str]:
    """The folded words and stems of ``query`` that :func:`term_spans` marks: its telling words
    (a word as common as "the" marks nothing, unless the query has no other), kept for the
    query's next hits (each looks its words' frequencies up)."""
    from ..index.keywords import stem_words, words
    from ..index.snippets import word_weight

    query_words = [query[a:b] for a, b in words(query)]
    telling = [w for w in query_words if word_weight(w.lower(), query_lang) >= STOP_WEIGHT]  # "the", "of", "is" mark nothing
    query_words = telling or query_words
    return frozenset(_fold(w) for w in [*query_words, *stem_words([w.lower() for w in query_words], query_lang)])


def record_table(title: str, record: dict, keys: tuple[str, ...] | list[str], caption: str = "") -> Table:
    """A field/value table of ``record``'s ``keys``."""
    return Table(title, ["field", "value"], [[k, human(record.get(k), k)] for k in keys], caption)


def rows_table(
    title: str, rows: list[dict], columns: tuple[str, ...], missing: str = "", caption: str = "", right: tuple[str, ...] = ()
) -> Table:
    """A table of ``rows``' ``columns`` (``missing`` for an absent value); a column no row has a
    value in is left out (the JSON keeps every key)."""
    columns = tuple(c for c in columns if any(r.get(c) not in (None, "", []) for r in rows)) if rows else columns
    return Table(
        title, list(columns), [[missing if r.get(c) is None else human(r[c], c) for c in columns] for r in rows], caption, right
    )


class Result(BaseModel):
    """A command's result."""

    def tables(self) -> list[Table]:
        """How people see it: one table or several."""
        raise NotImplementedError

    def payload(self) -> Any:
        """What ``--json`` prints and the HTTP API returns."""
        return self.model_dump(mode="json")

    def payload_json(self) -> bytes:
        """:meth:`payload` as UTF-8 JSON: pydantic's own serializer (compiled) where the payload
        is the model's dump, as for embeddings, whose floats dominate a response."""
        if type(self).payload is Result.payload:
            return self.model_dump_json().encode()
        return json.dumps(self.payload(), ensure_ascii=False).encode()


class QueryHits(BaseModel):
    """One query's language (ISO 639-3, ``und``: none) and its hits."""

    query: str
    lang: str
    hits: list[Hit]  # encodr.index.Hit, a dataclass pydantic reads and writes as it is


def snippet(
    text: str, spans: list[tuple[int, int]], width: int, around: bool = True, lines: int = 0
) -> tuple[str, list[tuple[int, int]]]:
    """At most ``width`` characters of ``text`` around its first matched span (a third of the
    width before it; from the start without ``around``: a hit's chosen snippet), a line break
    and the indentation around it shown as one space, ``…`` where text was cut, and the spans
    moved to match; the whole text (line breaks as spaces) when it fits or ``width`` is 0.

    With ``lines``, ``width`` is a line's width in terminal cells and the snippet is what fills at
    most ``lines`` such lines once wrapped at its spaces (:func:`wrapped_end`: greedy, as rich
    and Textual wrap), its ``…`` included: a character budget of ``lines × width`` leaves a
    wrapped text spilling onto one line more, or a short last line.

    Returns:
        (the snippet, the (start, end) spans inside it).
    """
    flat, at = _folded(text)
    spans = [(at[s], at[e]) for s, e in spans]
    budget = width * lines if lines else width
    if budget <= 0 or len(flat) <= budget and (not lines or (len(flat) <= width and flat.isascii())):  # one ASCII line: whole
        return flat, list(spans)
    centre = spans[0][0] if spans and around else 0
    start = max(0, min(centre - budget // 3, len(flat) - budget))
    if start:
        start = flat.rfind(" ", 0, start + 1) + 1 or start  # from a word's start
    if lines:
        end = wrapped_end(flat, start, lines, width)
    else:
        end = min(len(flat), start + budget - (start > 0) - 1)
        cut = flat.rfind(" ", start, end)
        end = cut if end < len(flat) and cut > start + budget // 2 else end
    head, tail = ("…" if start else ""), ("…" if end < len(flat) else "")
    shift = len(head) - start
    inside = [(s + shift, e + shift) for s, e in spans if s >= start and e <= end]
    return head + flat[start:end] + tail, inside


def wrapped_end(flat: str, start: int, lines: int, width: int) -> int:
    """Where a snippet of one-line text ``flat`` that starts at offset ``start`` ends so that it
    fills at most ``lines`` lines of ``width`` terminal cells (a CJK character two) once wrapped
    at its spaces, greedily (rich's and Textual's wrap: a word goes to the next line when it
    does not fit, a word wider than a line is folded), with ``…`` before it when ``start`` > 0
    and after it when it ends before ``flat`` does. ``len(flat)`` when the rest fits whole; inside
    the first word when not even it fits (a CJK sentence has no spaces to wrap at). rich's
    ``Text.wrap`` gives the lines of a text, not where a text that must end in ``…`` should stop,
    so this follows its rule (``tests/core/test_snippets.py`` checks the two agree).

    Raises:
        ValueError: ``lines`` or ``width`` under 1.
    """
    from rich.cells import cell_len

    if lines < 1 or width < 1:
        raise ValueError(f"a snippet needs at least one line of one cell, not {lines} of {width}")
    row, used, last, fitted = 1, 0, start, []  # fitted: (end of a word, the cells its line then holds)
    for m in re.finditer(r"\S+", flat[start:]):
        word = m.group()
        cells = (len(word) if word.isascii() else cell_len(word)) + (1 if start and not fitted else 0)  # "…" before the first
        gap = m.start() - last
        if used and used + gap + cells <= width:
            used += gap + cells
        else:
            row, used = (row + 1 if used else row), cells
            row, used = row + (used - 1) // width, (used - 1) % width + 1  # a word wider than a line folds
        if row > lines:
            break
        last = m.end()
        fitted.append((start + m.end(), used, row))
    else:
        return len(flat)
    for end, used, row in reversed(fitted):  # the closing "…" needs a cell on the last line
        if used < width or row < lines:
            return end
    room, end = lines * width - (2 if start else 1), start  # not a whole word fits (CJK has no spaces): cut inside it
    while end < len(flat) and room - cell_len(flat[end]) >= 0:
        room -= cell_len(flat[end])
        end += 1
    return end


def code_snippet(
    text: str, spans: list[tuple[int, int]], lines: int, width: int, first_indented: bool = True
) -> tuple[str, list[tuple[int, int]]]:
    """Source code shown as code: the first ``lines`` non-blank lines of ``text``, their common
    indentation removed (a tab counts 4 columns), each cut to ``width`` characters with ``…``;
    :func:`snippet` would fold them into one run of words. ripgrep prints matched lines so.

    Args:
        text: a hit's code from the start of a line.
        spans: (start, end) character offsets into ``text`` to highlight.
        lines, width: the most lines shown and characters a line (``width`` ≥ 2).
        first_indented: whether ``text``'s first line holds its own indentation; a passage's
            stored text starts at its first word, so without it the first line is taken to sit
            one level (4 columns) left of the lines after it when it opens a block (ends with
            ``:``, ``{``, ``(`` or ``[``: a ``def``, a ``func``), else level with them.

    Returns:
        (the lines joined by ``\n``, the spans inside them, moved to match). Inside a line a
        tab shows as one space.
    """
    rows, at = [], 0
    for line in text.split("\n"):
        if line.strip():
            rows.append((at + len(line) - len(line.lstrip()), at + len(line.rstrip())))  # its words' start and end
        at += len(line) + 1
    rows = rows[:lines]
    if not rows:
        return "", []
    levels = [_indentation(text[text.rfind("\n", 0, s) + 1 : s + 1]) for s, _ in rows]
    if not first_indented:
        below = min(levels[1:], default=0)
        levels[0] = max(0, below - 4) if text[rows[0][0] : rows[0][1]].endswith((":", "{", "(", "[")) else below
    indent = min(levels)
    shown, inside, at = [], [], 0
    for (s, e), level in zip(rows, levels):
        pad = level - indent
        line = " " * pad + text[s:e].replace("\t", " ")
        kept = len(line) if len(line) <= width else len(line[: width - 1].rstrip())  # the characters before a "…"
        shown.append(line if len(line) <= width else line[:kept] + "…")
        inside += [(at + pad + a - s, at + pad + b - s) for a, b in spans if s <= a and b <= e and pad + b - s <= kept]
        at += len(shown[-1]) + 1
    return "\n".join(shown), inside


def code_lines(
    hit: Hit, query: str, lines: int, width: int, query_lang: str | None = None
) -> tuple[str, list[tuple[int, int]]] | None:
    """A hit from source code as its lines (:func:`code_snippet`), the query's words marked
    (:func:`term_spans`): from its snippet's line, ``lines`` of at most ``width`` characters;
    with ``lines`` 0 its whole passage, lines uncut. None for a hit from any other file (see
    :func:`snippet`), so a front end can ask first."""
    from ..data.code import code_language

    if not code_language(hit.source or ""):
        return None
    start = hit.text.find(hit.snippet) if hit.snippet and lines else -1
    line = hit.text.rfind("\n", 0, start) + 1 if start >= 0 else 0  # the snippet's line, or the passage's first
    text = hit.text[line:]
    spans = term_spans(text, query, query_lang, hit.lang)
    return code_snippet(text, spans, lines or len(text), max(width, 2) if lines else len(text) + 1, first_indented=line > 0)


def hit_snippet(hit: Hit, query: str, lines: int, width: int, query_lang: str | None = None) -> tuple[str, list[tuple[int, int]]]:
    """What a front end that draws lines shows of a hit, and the spans of the query's words in it
    (:func:`term_spans`): from its snippet's start (its text around the query's first matched word
    when it has none) as much of its passage as fills ``lines`` lines of ``width`` terminal cells
    once wrapped (:func:`snippet`), so the lines hold the chosen sentences and what follows them;
    all of its text with ``lines`` 0, its line breaks kept in a Markdown passage (a code block, a
    list, a table read as written) and shown as spaces in any other (a PDF's or a wrapped note's
    lines join into paragraphs). A hit from source code shows as its lines (:func:`code_lines`)."""
    code = code_lines(hit, query, lines, width, query_lang)
    if code is not None:
        return code
    if not lines and reads_as_markdown(hit.source or ""):  # whole: a Markdown passage's lines (code blocks, lists, tables)
        text = hit.text.strip()
        return text, term_spans(text, query, query_lang, hit.lang)
    text, markdown = hit.text, reads_as_markdown(hit.source or "")
    start = text.find(hit.snippet) if lines and hit.snippet else -1
    at = start if start >= 0 else _first_word(text, query, query_lang, hit.lang) if markdown and lines else -1
    block = fenced_block(text, at) if at >= 0 and markdown else None
    if block is not None:  # a Markdown code block: its lines, as a code hit's
        return code_snippet(block, term_spans(block, query, query_lang, hit.lang), lines, max(width, 2))
    if at >= 0 and markdown:  # the prose around it, up to the code blocks: their lines would be folded into prose
        text, start = _prose_around(text, at, start)
    if start >= 0:  # the chosen sentences first, then what follows them
        text, room = text[start:], lines * width
        cut = text.rfind(" ", 0, room + width)  # what cannot show is left unread (finding the query's words costs most)
        if len(text) > room + width and cut > 0 and len(" ".join(text[:cut].split())) > room:
            text = text[:cut]  # whole words, more than the lines hold: the snippet is still cut, its "…" kept
    return snippet(text, term_spans(text, query, query_lang, hit.lang), width if lines else 0, start < 0, lines)


def _first_word(text: str, query: str, query_lang: str | None, lang: str | None) -> int:
    """Where the query's first matched word sits in a Markdown ``text`` with a code block; −1
    without one (the snippet then starts as it would)."""
    if not FENCE.search(text):
        return -1
    spans = term_spans(text, query, query_lang, lang)
    return spans[0][0] if spans else 0


def _prose_around(text: str, at: int, start: int) -> tuple[str, int]:
    """The prose of Markdown ``text`` that offset ``at`` (not in a code block) sits in, from the
    line after the code block before it to the fence after it, and ``start`` (≥ 0) moved into it."""
    before = [m.end() for m in FENCE.finditer(text, 0, at)]
    begin = text.find("\n", before[-1]) + 1 if before else 0
    after = FENCE.search(text, max(at, begin))
    end = after.start() if after else len(text)
    return text[begin:end].rstrip(), (start - begin if start >= 0 else -1)


def fenced_block(text: str, start: int) -> str | None:
    """The lines of the Markdown code block (```` ``` ```` or ``~~~`` fences) that offset ``start``
    of ``text`` starts in or opens, from ``start``'s line (its opening fence left out) to its
    closing fence or the text's end; None when ``start`` is in prose (an even number of fences
    before its line, its line no fence) or on a closing fence, or when the block holds nothing. A
    command block's lines folded into one run of words read as prose they are not."""
    line = text.rfind("\n", 0, start) + 1
    inside = len(FENCE.findall(text, 0, line)) % 2 == 1  # an odd number of fences before its line
    opens = FENCE.match(text, line) is not None
    if inside == opens:  # prose, or a block's closing fence
        return None
    first = text.find("\n", line) + 1 if opens else line  # the opening fence's line left out
    body = text[first:] if first > 0 else ""
    closing = FENCE.search(body)
    body = body[: closing.start()] if closing else body
    return body if body.strip() else None


def _indentation(line: str) -> int:
    """The columns of ``line``'s leading spaces and tabs (a tab to the next multiple of 4)."""
    column = 0
    for ch in line:
        if ch == " ":
            column += 1
        elif ch == "\t":
            column += 4 - column % 4
        else:
            break
    return column


def _folded(text: str) -> tuple[str, list[int]]:
    """``text`` with each run of whitespace that holds a line break folded to one space (a code
    line's indentation, a blank line), and where each of its offsets (0 to ``len(text)``) lands."""
    parts, at, pos, out_len = [], [], 0, 0
    for m in re.finditer(r"[ \t\r\f\v]*\n\s*", text):
        keep = text[pos : m.start()]
        parts.append(keep)
        at.extend(range(out_len, out_len + len(keep)))
        out_len += len(keep)
        parts.append(" ")
        at.extend([out_len] * (m.end() - m.start()))
        out_len += 1
        pos = m.end()
    parts.append(text[pos:])
    at.extend(range(out_len, out_len + len(text) - pos + 1))
    return "".join(parts), at


TITLE_WIDTH = 24  # characters of a title a snippet table shows


def clipped(text: str, width: int) -> str:
    """``text`` cut to ``width`` characters with an ellipsis (0: whole)."""
    return text if not width or len(text) <= width else text[: width - 1] + "…"


JUDGED = {0: "not relevant", 1: "relevant", 2: "highly relevant"}


def judged_mark(hit: Hit) -> str:
    """`` · judged relevant`` where a judgment moved the hit (:meth:`encodr.index.Searcher.judged`), else nothing."""
    return f" · judged {JUDGED[hit.judged]}" if hit.judged is not None else ""


def own_title(hit: Hit) -> str:
    """A hit's title where it says more than its path: a source file or a note titled by its
    file name shows none (its path says it)."""
    name = Path(hit.path or hit.source or "")
    return "" if not hit.title or hit.title in (name.name, name.stem) else hit.title


def where(hit: Hit, whole: bool = False) -> str:
    """Where a hit's answer is, as a person opens it: its path from the folder indexed (after
    that folder's name in an index of several) and the line its snippet starts on
    (``guide/install.md:42``, what an editor's ``file:line`` opens; with ``whole``, shown with
    its whole passage, the passage's first line), the PDF page (``p. 3``) or the presentation's
    slide (``slide 3``) and the section it sits under (``› Install › GPU``)."""
    at = f"{hit.path or hit.source}:{hit.line if whole else hit.snippet_line or hit.line}"
    slides = Path(hit.source or "").suffix.lower() in (".pptx", ".odp")
    page = f" {'slide' if slides else 'p.'} {hit.page}" if hit.page else ""
    return f"{at}{page}" + (f" › {hit.section}" if hit.section else "")


class SearchResult(Result):
    """Hits of each query; one shape for one query or many. In the payload each hit also has
    ``highlights``: the (start, end) character offsets of the query's words in its ``text``
    (:func:`term_spans`), what a table or the TUI draws in bold."""

    index: str
    model: str
    results: list[QueryHits]
    caption: str = ""  # how the hits are ranked, when it needs saying (documents by their best passage)
    stage: str = "full"  # which stage of the index answered: fast (a static model's vectors, encodr.index.stages) or full
    snippet: int = Field(0, exclude=True)  # a table shows at most this many lines of a hit's text, wrapped (0: all of it)
    first_snippet: int = Field(0, exclude=True)  # lines for each query's first hit, the one read first (0: as snippet)
    line_width: int = Field(40, exclude=True)  # a table's line for a hit's text, in terminal cells: snippets wrap at it
    hints: list[str] = []  # one line each, for what the user may not know (a query in a language the model was not trained on)
    timings: dict[str, float] | None = None  # with --timings: milliseconds of each phase (encodr.timing.PHASES) and the total
    partial: bool = False  # a sharded index's shard did not answer in time: these hits leave its documents out
    missing_shards: list[int] = []  # which shards did not answer (Elasticsearch's _shards.failed)
    max_tokens: int | None = Field(None, exclude=True)  # an agent's budget: the payload is the budgeted one

    def payload(self) -> Any:
        if self.max_tokens is not None:
            return self.budgeted(self.max_tokens)
        started = time.perf_counter()
        out = self.model_dump(mode="json", exclude={"timings"})
        for q, shown in zip(self.results, out["results"]):
            for h, hit in zip(q.hits, shown["hits"]):
                hit["highlights"] = [list(span) for span in term_spans(h.text, q.query, q.lang, h.lang)]
        if self.timings is not None:  # the highlights are found here, as the payload is made: their time joins the total
            spent = (time.perf_counter() - started) * 1000
            out["timings"] = {
                **self.timings,
                "highlights": round(spent, 3),
                "total": round(self.timings.get("total", 0.0) + spent, 3),
            }
        return out

    def lines(self, form: str) -> list[str]:
        """The hits as plain lines: ``grep``, ``path:line:column: snippet`` a hit (ripgrep's
        ``--vimgrep``, which editors open), the snippet on one line, and where a hit has
        ``context`` (``-C``) its lines before and after as ``path-line-text``, groups separated by
        ``--`` (grep's context form); ``files``, each hit's path once."""
        if form == "files":
            return list(dict.fromkeys(h.path or h.source for q in self.results for h in q.hits))
        out: list[str] = []
        for h in (h for q in self.results for h in q.hits):
            path, first = h.path or h.source, h.snippet_line or h.line
            hit = f"{path}:{first}:{h.snippet_column or 1}: {' '.join((h.snippet or h.text).split())}"
            if not h.context:
                out.append(hit)
                continue
            if out:
                out.append("--")  # grep's separator between groups of context
            last = first + (h.snippet or h.text).count("\n")
            out += [f"{path}-{n}-{text}" for n, text in h.context if n < first]
            out.append(hit)
            out += [f"{path}-{n}-{text}" for n, text in h.context if n > last]
        return out

    def budgeted(self, max_tokens: int) -> dict:
        """The payload for an agent with a budget of ``max_tokens`` tokens (about
        :data:`CHARS_PER_TOKEN` characters each): each hit's ``ref`` (:func:`hit_ref`), ``id``,
        ``score`` and its snippet (its text where it has none) trimmed so that the texts of every
        query's hits share the budget, the first hits first (:func:`trimmed`)."""
        budget = max_tokens * CHARS_PER_TOKEN
        total = sum(len(q.hits) for q in self.results)
        left = max(budget - sum(len(hit_ref(h)) + 24 for q in self.results for h in q.hits), 0)  # 24: id, score, quotes
        out, done = [], 0
        for q in self.results:
            shown = []
            for h in q.hits:
                text = trimmed(h.snippet or h.text, left // (total - done))
                left, done = left - len(text), done + 1
                shown.append({"ref": hit_ref(h), "id": h.id, "score": round(h.score, 4), "text": text})
            out.append({"query": q.query, "lang": q.lang, "hits": shown})
        return {
            "index": self.index,
            "model": self.model,
            "stage": self.stage,
            "max_tokens": max_tokens,
            "results": out,
            "hints": self.hints,
        }

    def tables(self) -> list[Table]:
        out = []
        for q in self.results:
            titles = [clipped(own_title(h), TITLE_WIDTH if self.snippet else 0) for h in q.hits]
            titled = any(titles)
            columns = ["rank", "score", "lang", *(["title"] if titled else []), "text", "source"]
            shown = [self._shown(h, q, first=i == 0) for i, h in enumerate(q.hits)]
            rows = [
                [
                    str(h.rank),
                    f"{h.score:.4f}",
                    shown_lang(h),
                    *([title] if titled else []),
                    text,
                    where(h, not self.snippet) + judged_mark(h),
                ]
                for h, title, (text, _) in zip(q.hits, titles, shown)
            ]
            at = columns.index("text")
            marks = {(r, at): spans for r, (_, spans) in enumerate(shown)}
            out.append(
                Table(
                    f"{q.query}  [{q.lang}]",
                    columns,
                    rows,
                    caption=self.caption,
                    right=("rank", "score"),
                    marks=marks,
                    main="text",
                    under=("source", "title", "lang"),
                )
            )
        if self.timings is not None:
            out.append(
                Table("timings (ms)", ["phase", "ms"], [[name, f"{ms:.2f}"] for name, ms in self.timings.items()], right=("ms",))
            )
        return out

    def _shown(self, h: Hit, q: QueryHits, first: bool = False) -> tuple[str, list[tuple[int, int]]]:
        """A hit's text as a table shows it, and the spans of the query's words in it
        (:func:`hit_snippet`): :attr:`snippet` lines of :attr:`line_width` cells, or
        :attr:`first_snippet` lines when it is its query's ``first`` hit; all of its text when
        :attr:`snippet` is 0."""
        lines = (self.first_snippet or self.snippet) if first and self.snippet else self.snippet
        return hit_snippet(h, q.query, lines, self.line_width, q.lang)


def shown_lang(hit: Hit) -> str:
    """The language a hit's card shows: its text's, and none for source code, whose words are
    analysed as English (:data:`encodr.data.code.CODE_LANG`) without being prose in it."""
    from ..data.code import code_language

    return "" if code_language(hit.source or "") else hit.lang or ""


CHARS_PER_TOKEN = 4  # a budget in tokens is counted in characters, as OpenAI's rule of thumb for English and code


def hit_ref(h: Hit) -> str:
    """``path:first-last › symbol``: where a hit is, as an agent opens it (its section when it has one)."""
    lines = f"{h.line}-{h.end_line}" if h.end_line and h.end_line != h.line else f"{h.line}"
    return f"{h.path or h.source}:{lines}" + (f" › {h.section}" if h.section else "")


def trimmed(text: str, chars: int) -> str:
    """``text`` cut to at most ``chars`` characters at a line end where one falls in its last
    third, else at ``chars``, with ``…`` where it was cut."""
    if len(text) <= chars:
        return text
    cut = text.rfind("\n", 0, chars)
    return text[: cut if cut > chars * 2 // 3 else max(chars - 1, 0)].rstrip() + "…"


class ScoreResult(Result):
    """The similarity of two texts: ``encoder`` is ``bi-encoder`` (cosine) or ``cross-encoder`` (σ of its score)."""

    model: str
    encoder: str
    metric: str
    score: float
    text_a: str
    text_b: str

    def tables(self) -> list[Table]:
        return [record_table("encodr score", self.model_dump(), ("model", "encoder", "metric", "score"))]


class Embedding(BaseModel):
    """One vector, OpenAI's shape: a list of floats, or base64 of little-endian float32."""

    object: str = "embedding"
    index: int
    embedding: list[float] | str


class Usage(BaseModel):
    """Tokens read (OpenAI's shape; encodr counts the tokenizer's tokens, special ones included)."""

    prompt_tokens: int
    total_tokens: int


class EmbedResult(Result):
    """``POST /v1/embeddings``'s answer, as OpenAI's."""

    object: str = "list"
    data: list[Embedding]
    model: str
    usage: Usage

    def tables(self) -> list[Table]:
        return [Table("embeddings", ["index", "dimension"], [[str(e.index), str(len(e.embedding))] for e in self.data])]


class Ranked(BaseModel):
    """One re-ranked text: its position in the request, its score, and the text if asked for."""

    index: int
    relevance_score: float
    document: str | None = None


class RerankResult(Result):
    """``POST /v1/rerank``'s answer: Cohere's shape (``results`` best first)."""

    model: str
    results: list[Ranked]

    def payload(self) -> Any:
        return self.model_dump(mode="json", exclude_none=True)  # no "document" unless asked for, as Cohere answers

    def tables(self) -> list[Table]:
        return [Table("rerank", ["index", "relevance_score"], [[str(r.index), f"{r.relevance_score:.4f}"] for r in self.results])]


class ListResult(Result):
    """Rows of a listing (indexes, models, recipes, runs), with where they came from."""

    title: str
    columns: list[str]
    rows: list[dict]
    where: str = ""
    missing: str = ""

    def tables(self) -> list[Table]:
        return [rows_table(self.title, self.rows, tuple(self.columns), self.missing, caption=self.where)]

    def payload(self) -> Any:
        return self.rows


def _run_result(r: dict) -> str:
    """A run's outcome in one cell: its loss and kept dev score, cancelled, or unreadable."""
    m = r.get("metrics") or {}
    if r.get("unreadable"):
        return f"unreadable row: {r['unreadable']}"
    if r.get("status") == "cancelled":
        return "cancelled"
    if "final_loss" in m:
        text = f"loss {m['final_loss']:.4f} (mean of last 10 steps)"
        if m.get("dev_metric"):  # selected on --dev: the kept checkpoint's score
            best = m["best"]
            text += (
                f" · dev {m['dev_metric']} {best['dev']:.2f} "
                f"({'start kept' if best['step'] == 0 else 'step ' + str(best['step'])})"
            )
        return text
    if m.get("kept"):  # the judged recipe: which components beat what they replace on dev
        return f"kept: {m['kept']}"
    dev = (m.get("best") or {}).get("dev")
    return "–" if dev is None else f"dev ρ {dev:.2f}"


class RunsResult(ListResult):
    """Recorded runs, newest first."""

    def tables(self):
        table = Table(
            "runs",
            ["id", "created", "run", "model", "recipe", "data", "seconds", "ex/s", "result", "out"],
            right=("id", "seconds", "ex/s"),
        )
        for r in self.rows:
            m = r.get("metrics") or {}
            table.rows.append(
                [
                    human(r.get("id")),
                    str(r.get("created", ""))[:16],
                    human(r.get("kind")),
                    short_path(str(r.get("model", ""))),
                    human(r.get("recipe_name")),
                    short_path(str(r.get("data", ""))),
                    human(r.get("duration_s")),
                    human(m.get("examples_per_s")),
                    _run_result(r),
                    short_path(str(r.get("out", ""))),
                ]
            )
        return [table]


NEAREST_CHARS = 150  # characters of a nearest passage `encodr compare` prints where no line width is set
NEAREST_LINES = 2  # lines of a nearest passage `encodr compare` prints as a card, filled to its width


class CompareResult(Result):
    """Two texts compared in an index (``encodr compare``, the TUI's Compare tab): their cosine
    and each one's nearest passages (``results``: a's, then b's)."""

    index: str
    model: str
    cosine: float
    results: list[QueryHits]
    line_width: int = Field(0, exclude=True)  # a card's line in terminal cells: a passage fills NEAREST_LINES of them

    def _nearest(self, h: Hit) -> str:
        """A nearest passage's text as its card shows it: :data:`NEAREST_LINES` lines of
        :attr:`line_width` cells (:func:`snippet`), or :data:`NEAREST_CHARS` characters."""
        if self.line_width:
            return snippet(h.text, [], self.line_width, around=False, lines=NEAREST_LINES)[0]
        return clipped(" ".join(h.text.split()), NEAREST_CHARS)

    def tables(self) -> list[Table]:
        out = [
            Table(
                "cosine",
                ["a", "b", "cosine"],
                [[clipped(q.query, 30) for q in self.results] + [f"{self.cosine:.4f}"]],
                right=("cosine",),
            )
        ]
        for label, q in zip("ab", self.results):
            rows = [[str(h.rank), f"{h.score:.4f}", self._nearest(h), where(h)] for h in q.hits]
            out.append(
                Table(
                    f"nearest to {label}: {clipped(q.query, 60)}  [{q.lang}]",
                    ["rank", "score", "text", "source"],
                    rows,
                    right=("rank", "score"),
                    main="text",
                    under=("source",),
                )
            )
        return out


class RecordResult(Result):
    """One record (an index's summary, a run) shown as a field/value table; ``extra``: further tables."""

    title: str
    record: dict
    keys: list[str]
    caption: str = ""
    extra: list[dict] = []

    def tables(self) -> list[Table]:
        out = [record_table(self.title, self.record, self.keys, self.caption)] if self.keys else []
        out += [record_table(e["title"], e["record"], list(e["record"])) for e in self.extra]
        return out

    def payload(self) -> Any:
        return self.record


class DocumentLines(Result):
    """A document's lines as the index holds them (``encodr show``): its id, path, title and
    ``lines``, each ``{"line": n, "text": …}``; ``changed``: ``edited`` or ``deleted`` where its
    file is no longer as the index read it (the lines are then the file's as it was)."""

    id: str
    path: str
    title: str | None = None
    lines: list[dict]
    changed: str | None = None
    hints: list[str] = []  # one line each: a file changed since the index read it

    def tables(self) -> list[Table]:
        named = self.title and self.title not in (
            Path(self.path).name,
            Path(self.path).stem,
        )  # a title other than the file's name
        return [
            Table(
                self.path + (f"  ({self.title})" if named else ""),
                ["line", "text"],
                [[str(r["line"]), r["text"]] for r in self.lines],
                right=("line",),
            )
        ]


class EvalResult(Result):
    """Scores of one model, or two side by side (``compare``) with their difference."""

    suite: str
    primary: str
    reports: list[dict]  # {"model", "backend", "suite", "scores": [{"dataset", "metric", "value", "n"}], "mean"}

    def tables(self) -> list[Table]:
        compare = len(self.reports) > 1
        heads = [f"{r['model']} ({r['backend']})" if r["backend"] != "torch" else r["model"] for r in self.reports]
        columns = ["dataset", "metric", "n", *heads] + (["Δ"] if compare else [])  # short: the table fits 80 columns
        table = Table(f"encodr eval {self.suite}", columns, right=("n", *heads, "Δ"))
        table.caption = f"Δ: {heads[0]} − {heads[1]}" if compare else ""
        for i, s in enumerate(self.reports[0]["scores"]):
            values = [r["scores"][i]["value"] for r in self.reports]
            table.rows.append(
                [
                    s["dataset"],
                    s["metric"],
                    str(s["n"]),
                    *[f"{v:.2f}" for v in values],
                    *([f"{values[0] - values[1]:+.2f}"] if compare else []),
                ]
            )
        if self.reports[0]["mean"] is not None:
            means = [r["mean"] for r in self.reports]
            table.rows.append(
                ["mean", self.primary, "", *[f"{m:.2f}" for m in means], *([f"{means[0] - means[1]:+.2f}"] if compare else [])]
            )
        return [table]

    def payload(self) -> Any:
        return self.reports[0] if len(self.reports) == 1 else {"models": self.reports}


# How the fields a method shows read in the tune table.
TUNE_LABELS = {"final_loss": "final_loss (mean of the last 10 steps)", "train_seconds": "train_seconds", "best": "kept"}


def _tune_cell(key: str, value: Any, summary: dict) -> str:
    if key == "dev_curve":
        return " → ".join(f"{p['dev']:.2f}" for p in value)
    if key == "best":
        return "starting weights" if value["step"] == 0 else f"step {value['step']}"
    return human(value, key)


def _chains_table(summary: dict) -> Table:
    """Trans-Encoder: per chain, dev ρ of the start model and of each cycle's cross- and bi-encoder, and what was saved."""
    fmt = lambda v: "–" if v is None else f"{v:.2f}"  # noqa: E731
    table = Table(
        "encodr tune (Trans-Encoder)",
        ["chain", "cycle", "phase", "dev ρ", "steps", "seconds"],
        right=("dev ρ", "steps", "seconds"),
        caption=f"{summary['pairs']} pairs{' (mined)' if summary['mined'] else ''}; {summary['selection']}",
    )
    for c, chain in enumerate(summary["chains"], 1):
        table.rows.append([str(c), "0", f"start ({chain['start']})", fmt(chain["start_dev"]), "", ""])
        table.rows += [
            [str(c), str(h["cycle"]), h["phase"], fmt(h["dev"]), str(h["steps"]), str(h["seconds"])] for h in chain["history"]
        ]
        for kind in ("bi", "cross"):
            best = chain["best"].get(kind, {})
            table.rows.append([str(c), "saved", kind, fmt(best.get("dev")), f"cycle {best.get('cycle')}", chain[kind]])
    return table


class TuneResult(Result):
    """A finished run: the method's summary (``encodr.json``), where it was saved, its registry
    ids, and which summary fields sum it up (``shown``, chosen by the method)."""

    summary: dict
    out: str
    run_ids: list[int]
    shown: list[str] = []

    def tables(self) -> list[Table]:
        s, ids = self.summary, self.run_ids
        where = f"run{'s' * (len(ids) > 1)} {', '.join(map(str, ids))} in encodr runs"
        if "chains" in s:
            table = _chains_table(s)
            table.caption = f"{table.caption}; {where}"
        else:
            table = Table(f"encodr tune ({s.get('method', '')})", ["field", "value"], caption=where)
            for key in self.shown:
                label = f"dev {s.get('dev_metric', '')} ({s.get('dev')})" if key == "dev_curve" else TUNE_LABELS.get(key, key)
                table.rows.append([label, _tune_cell(key, s.get(key), s)])
        table.title = f"{table.title} → {self.out}"
        return [table]

    def payload(self) -> Any:
        return self.summary
