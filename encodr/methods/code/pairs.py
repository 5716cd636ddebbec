"""The code recipe's data: (documentation, code) pairs from a source folder, the dev fold, the
negatives mined from the same repository, and the InfoNCE training stream."""

from __future__ import annotations

import hashlib
import random
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ...data.code import CODE_SUFFIXES, code_language, definitions, summary
from ...data.files import expand
from ...errors import EncodrError
from ...training import Stream
from .config import CodeRecipe


@dataclass(frozen=True)
class Unit:
    """One definition of the repository: its file (relative to the folder), qualified name, its
    code as written (``text``), its query (empty when undocumented or too short) and its code
    with the documentation cut out (``bare``)."""

    path: str
    name: str
    text: str
    query: str
    bare: str
    nth: int = 1  # the how-manyth definition of this name in its file (a property's getter and setter, overloads)

    @property
    def key(self) -> str:
        """``path:name`` (``#2`` and on for a name defined again in the file): what the dev fold
        hashes and the dev set names it by."""
        return f"{self.path}:{self.name}" + (f"#{self.nth}" if self.nth > 1 else "")

    @property
    def short(self) -> str:
        """The name without its class (``print`` of ``Console.print``): same-name definitions are not negatives of each other."""
        return self.name.rsplit(".", 1)[-1]


def source_files(source: str | None) -> list[str]:
    """The source files under ``source`` (a folder or one file), as ``encodr index`` finds them.

    Raises:
        EncodrError: no source given, a path that does not exist, or no source file under it.
    """
    if not source:
        raise EncodrError(
            "the code recipe learns from your source code; pass a folder: encodr tune SRC --recipe code --out MODEL"
        )
    files, _ = expand([source])
    found = [f for f in files if Path(f).suffix.lower() in CODE_SUFFIXES]
    if not found:
        raise EncodrError(
            f"{source}: no source file in it; the code recipe reads {' '.join(CODE_SUFFIXES[:8])} … (a folder of your code)"
        )
    return found


def preflight(recipe: CodeRecipe, job) -> None:
    """The recipe's input, checked before any model loads: a folder that holds source code."""
    source_files(job.data)


def read_units(source: str, recipe: CodeRecipe) -> list[Unit]:
    """Every function, method and class of the source files under ``source`` (read as ``encodr
    index`` reads code: :func:`encodr.data.code.definitions`), in file order.

    Raises:
        EncodrError: ``source`` is missing, or holds no source file.
    """
    files = source_files(source)
    root = Path(source) if Path(source).is_dir() else Path(source).parent
    units = []
    for f in files:
        language = code_language(f)
        try:
            text = Path(f).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        rel = str(Path(f).relative_to(root))
        seen: dict[str, int] = {}
        for d in definitions(text, language):
            query = summary(d.doc) if recipe.query == "summary" else " ".join(d.doc.split())
            query = query if len(query.split()) >= recipe.min_words else ""
            seen[d.name] = seen.get(d.name, 0) + 1
            units.append(Unit(rel, d.name, text[d.start : d.end], query, d.code, seen[d.name]))
    if not units:
        raise EncodrError(
            f"{source}: no function, method or class found in a source file; the code recipe reads "
            f"{' '.join(CODE_SUFFIXES[:8])} …"
        )
    return units


def in_dev(unit: Unit, share: float) -> bool:
    """Whether a documented unit is in the dev fold: a hash of its ``path:name`` below ``share``."""
    return int.from_bytes(hashlib.sha1(unit.key.encode()).digest()[:4], "big") / 2**32 < share


def dev_folder(units: list[Unit], dev: list[Unit], folder: Path) -> Path:
    """A BEIR folder for the dev fold: the corpus is every unit's code as the repository holds it,
    but a dev unit's code without its documentation (as an undocumented function is found);
    each dev unit's query has that code as its one relevant document (``qrels/dev.tsv``)."""
    import json

    held = {u.key for u in dev}
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as out:
        for u in units:
            out.write(json.dumps({"_id": u.key, "text": u.bare if u.key in held else u.text}) + "\n")
    with open(folder / "queries.jsonl", "w", encoding="utf-8") as out:
        for i, u in enumerate(dev):
            out.write(json.dumps({"_id": f"q{i}", "text": u.query}) + "\n")
    (folder / "qrels" / "dev.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\t{u.key}\t1\n" for i, u in enumerate(dev))
    )
    return folder


def mine_negatives(encoder, train: list[Unit], units: list[Unit], dev: set[str]) -> list[str]:
    """One hard negative per training pair: the unit whose code the starting ``encoder`` ranks
    highest for its query, leaving out the unit itself, the units of the same short name
    (overloads, overrides), and the dev fold's (its code stays unseen)."""
    pool = [u for u in units if u.key not in dev]
    queries = encoder.encode([u.query for u in train], prompt=encoder.prompt("query"))
    codes = encoder.encode([u.bare if u.query else u.text for u in pool], prompt=encoder.prompt("document"))
    scores = queries @ codes.T
    out = []
    for row, u in zip(scores, train):
        for j in np.argsort(-row):
            other = pool[int(j)]
            if other.key != u.key and other.short != u.short:
                out.append(other.bare if other.query else other.text)
                break
        else:
            out.append("")
    return out


HASH_COMMENTS = {"python", "bash", "ruby", "perl", "r", "elixir", "julia", "nim", "powershell"}  # else // (or -- below)
DASH_COMMENTS = {"lua", "haskell", "elisp"}
NOT_PROSE = re.compile(  # a comment line that is a pragma, a note to self, or code commented out
    r"^(noqa|type:|pragma|pylint|fmt:|eslint|isort|mypy|nosec|-\*-|TODO\b|FIXME\b|XXX\b)|[=;{}]|\w\(.*\)\s*$|"
    r"^(def|class|return|import|from|if|for|while|function|const|let|var)\b",
    re.IGNORECASE,
)
BLOCK_LINES = 12  # a comment's block ends at a blank line, a comment, a dedent, or after this many lines


def comment_blocks(code: str, language: str | None, min_words: int) -> list[tuple[str, str]]:
    """The (comment, block) pairs of a definition's code: each run of whole-line comments at one
    indentation, and the code lines right after it (to the next blank line, comment or
    dedent; at most :data:`BLOCK_LINES`), dedented. A comment line that is a pragma
    (``# noqa``, ``# type:``), a ``TODO`` or code commented out (:data:`NOT_PROSE`) is left out of
    its run; a run left with fewer than ``min_words`` words of two letters or more, or with no
    code after it, gives no pair."""
    marker = "#" if language in HASH_COMMENTS else "--" if language in DASH_COMMENTS else "//"
    comment = re.compile(rf"^(\s*){re.escape(marker)}(?![!/])\s?(.*)$")
    lines, out, i = code.splitlines(), [], 0
    while i < len(lines):
        head = comment.match(lines[i])
        if not head:
            i += 1
            continue
        indent, words, j = head.group(1), [], i
        while j < len(lines) and (m := comment.match(lines[j])) and m.group(1) == indent:
            words.append("" if NOT_PROSE.search(m.group(2).strip()) else m.group(2).strip())
            j += 1
        k = j
        while (
            k < len(lines)
            and k - j < BLOCK_LINES
            and lines[k].strip()
            and not comment.match(lines[k])
            and lines[k].startswith(indent)
        ):
            k += 1
        text = " ".join(" ".join(words).split())
        if k > j and len(re.findall(r"\b[A-Za-z]{2,}\b", text)) >= min_words:
            out.append((text, textwrap.dedent("\n".join(lines[j:k]))))
        i = k if k > j else j
    return out


def comment_pairs(units: list[Unit], recipe: CodeRecipe) -> list[tuple[str, str]]:
    """Up to ``recipe.comments`` (comment, block) pairs from inside every definition's code
    (:func:`comment_blocks`; a seeded sample when there are more): what the repository's own
    comments say of the lines they stand above, a second kind of documentation to learn from.
    The dev fold's definitions give theirs too: their comments are in the code that is searched,
    as an undocumented function's are."""
    found = [pair for u in units for pair in comment_blocks(u.bare or u.text, code_language(u.path), recipe.min_words)]
    return random.Random(recipe.seed).sample(found, recipe.comments) if len(found) > recipe.comments else found


def comment_stream(encoder, pairs: list[tuple[str, str]], recipe: CodeRecipe, world: int = 1) -> Stream:
    """The comment → block pairs as a second InfoNCE stream beside the documented ones
    (:func:`code_stream`'s loss, in-batch negatives only), one batch of them each step.

    Returns:
        A :class:`~encodr.training.Stream` named ``comments``.
    """
    from ..judged.method import Example, mnrl_stream

    return mnrl_stream(encoder, [Example(c, block, []) for c, block in pairs], recipe, world, 0, name="comments")


def code_stream(encoder, train: list[Unit], negatives: list[str] | None, recipe: CodeRecipe, world: int = 1) -> Stream:
    """The training stream: each training unit is a (query, code without its documentation[,
    hard negative]) example, trained as the judged recipe trains its pairs
    (:func:`encodr.methods.judged.method.mnrl_stream`: InfoNCE over the global batch's code and
    the mined negatives, the model's prompts, GradCache with ``mini_batch``).

    Returns:
        A :class:`~encodr.training.Stream` named ``code``.
    """
    from ..judged.method import Example, mnrl_stream

    items = [Example(u.query, u.bare, [negatives[i]] if negatives and negatives[i] else []) for i, u in enumerate(train)]
    kept = 1 if negatives and all(item.negatives for item in items) else 0
    return mnrl_stream(encoder, items, recipe, world, kept, name="code")
