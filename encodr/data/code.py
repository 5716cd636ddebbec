"""Source code read as documents: each file cut into sections along its syntax tree — a
function, method or class each, named by its qualified name (``Console.print``) — so that a
passage never runs across two definitions and a hit says which one it is in.

The grammars are tree-sitter's, from ``tree-sitter-language-pack`` (0.x, which bundles 170
compiled grammars in its wheel; its 1.x line downloads each grammar on first use, which fails
offline). Chosen over semantic-text-splitter's ``CodeSplitter``: that one cuts code into
chunks of a size along the same trees, but says neither which definition a chunk belongs to
nor where it starts, and a section here needs both. A section longer than the model's window
is then cut by the same splitter as any long text (:func:`.files.passage_splitter`), which
breaks at blank lines and line ends first.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# file suffix → the grammar's name in tree-sitter-language-pack; programming languages only
# (JSON, YAML, CSS and other data or style files stay unread)
CODE_LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".go": "go",
    ".rs": "rust",
    ".java": "java",
    ".c": "c",
    ".h": "c",
    ".cpp": "cpp",
    ".cc": "cpp",
    ".cxx": "cpp",
    ".hpp": "cpp",
    ".hh": "cpp",
    ".hxx": "cpp",
    ".cs": "csharp",
    ".rb": "ruby",
    ".sh": "bash",
    ".bash": "bash",
    ".kt": "kotlin",
    ".kts": "kotlin",
    ".swift": "swift",
    ".php": "php",
    ".scala": "scala",
    ".lua": "lua",
    ".r": "r",
    ".jl": "julia",
    ".ex": "elixir",
    ".exs": "elixir",
    ".erl": "erlang",
    ".hs": "haskell",
    ".ml": "ocaml",
    ".dart": "dart",
    ".zig": "zig",
    ".nim": "nim",
    ".pl": "perl",
    ".pm": "perl",
    ".ps1": "powershell",
    ".clj": "clojure",
    ".el": "elisp",
    ".groovy": "groovy",
    ".vue": "vue",
    ".svelte": "svelte",
    # Cython is Python with C declarations: no grammar of its own; Python's recovers around them
    ".pyx": "python",
    ".pxd": "python",
    ".pxi": "python",
    ".ada": "ada",
    ".adb": "ada",
    ".ads": "ada",
    ".as": "actionscript",
    ".cls": "apex",
    ".ino": "arduino",
    ".asm": "asm",
    ".s": "asm",
    ".astro": "astro",
    ".cairo": "cairo",
    ".clar": "clarity",
    ".lisp": "commonlisp",
    ".cl": "commonlisp",
    ".cu": "cuda",
    ".cuh": "cuda",
    ".d": "d",
    ".elm": "elm",
    ".fnl": "fennel",
    ".f": "fortran",
    ".f90": "fortran",
    ".f95": "fortran",
    ".f03": "fortran",
    ".fs": "fsharp",
    ".fsx": "fsharp",
    ".fsi": "fsharp_signature",
    ".gd": "gdscript",
    ".gleam": "gleam",
    ".glsl": "glsl",
    ".vert": "glsl",
    ".frag": "glsl",
    ".hack": "hack",
    ".ha": "hare",
    ".hx": "haxe",
    ".hlsl": "hlsl",
    ".janet": "janet",
    ".luau": "luau",
    ".m": "objc",
    ".mm": "objc",
    ".mli": "ocaml_interface",
    ".odin": "odin",
    ".pas": "pascal",
    ".pony": "pony",
    ".purs": "purescript",
    ".rkt": "racket",
    ".scm": "scheme",
    ".ss": "scheme",
    ".sol": "solidity",
    ".nut": "squirrel",
    ".bzl": "starlark",
    ".star": "starlark",
    ".tcl": "tcl",
    ".sv": "verilog",
    ".svh": "verilog",
    ".vhd": "vhdl",
    ".vhdl": "vhdl",
    ".wgsl": "wgsl",
    ".sql": "sql",
    ".proto": "proto",
    ".thrift": "thrift",
    ".graphql": "graphql",
    ".nix": "nix",
    ".tf": "hcl",
    ".hcl": "hcl",
}
# Left unread, each for its reason: data and configuration (JSON, YAML, TOML, INI, CSV, XML: no
# definitions to cut along, and mostly values, not words), style sheets (CSS, SCSS), files named
# without a suffix (Makefile, Dockerfile), Verilog's and V's shared ``.v`` and MATLAB's ``.m``
# (Objective-C's here) where one suffix names two languages, and Markdown, HTML and
# reStructuredText, which are read as documents.
CODE_SUFFIXES = tuple(CODE_LANGUAGES)

# definitions that hold others: their methods are sections of their own
CONTAINERS = {
    "class_definition",
    "class_declaration",
    "abstract_class_declaration",
    "interface_declaration",
    "enum_declaration",
    "impl_item",
    "trait_item",
    "mod_item",
    "class",
    "module",
    "class_specifier",
    "struct_specifier",
    "namespace_definition",
    "namespace_declaration",
    "object_declaration",
    "record_declaration",
    "protocol_declaration",
    "trait_definition",
    "object_definition",
    "singleton_class",
}
# definitions cut as one section (their nested functions stay inside them)
LEAVES = {
    "function_definition",
    "function_declaration",
    "generator_function_declaration",
    "method_definition",
    "method_declaration",
    "constructor_declaration",
    "function_item",
    "struct_item",
    "enum_item",
    "method",
    "singleton_method",
    "type_declaration",
    "function_signature_item",
    "macro_definition",
    "function",
    "function_def",
}
# nodes that wrap a definition and belong to it: decorators, export, templates
WRAPPERS = {"decorated_definition", "export_statement", "template_declaration"}
# the nodes that hold a definition's members (a class body, a Rust impl's list, a Ruby body)
BODIES = ("block", "class_body", "declaration_list", "body_statement", "field_declaration_list", "statement_block")
SEPARATOR = "."
# the language a passage of source code is labelled with, never detected: its identifiers and
# comments are analysed (stemmed) as English, as code is mostly written; a front end shows no
# language for it (it is not prose in English)
CODE_LANG = "eng"
_WORD = re.compile(r"\w")


def code_language(path: str) -> str | None:
    """The tree-sitter grammar that reads ``path``, by its suffix (:data:`CODE_LANGUAGES`), or None."""
    from pathlib import Path

    return CODE_LANGUAGES.get(Path(path).suffix.lower())


@functools.lru_cache(maxsize=None)
def _parser(language: str):
    from tree_sitter_language_pack import get_parser

    return get_parser(language)


def code_sections(text: str, language: str) -> list[tuple[int, int, str]]:
    """The sections of a source file: (start, end, qualified name) character ranges of ``text``
    in order, one for each function or method (``Console.print``; a nested function stays in
    the one that holds it), one for each class's own lines (its header, docstring and
    attributes: ``Console``), and one for each run of top-level code between definitions
    (imports, constants: an empty name). The comments just above a definition (no blank line
    between) and its decorators belong to it. Text that does not parse still comes back whole,
    as tree-sitter recovers from errors.

    Args:
        text: the file's text.
        language: a tree-sitter grammar name (:data:`CODE_LANGUAGES`' values).

    Returns:
        Ranges that cover ``text`` without gaps, in order (empty names where no definition).
    """
    data = text.encode("utf-8")
    tree = _parser(language).parse(data)
    cuts: list[tuple[int, str]] = []  # (byte where a section starts, its name)
    _walk(tree.root_node, "", data, cuts)
    to_char = _char_offsets(text, data)
    bounds: list[tuple[int, int, str]] = []
    points = [(0, "")] + cuts
    for (start, name), nxt in zip(points, points[1:] + [(len(data), "")]):
        a, b = to_char(start), to_char(nxt[0])
        if b <= a:
            continue
        if bounds and not _WORD.search(text, a, b):  # a closing brace, blank lines: the section before keeps them
            bounds[-1] = (bounds[-1][0], b, bounds[-1][2])
        else:
            bounds.append((a, b, name))
    return bounds


def _walk(node, prefix: str, data: bytes, cuts: list[tuple[int, str]]) -> None:
    """Append to ``cuts`` where each definition under ``node`` starts (with its qualified
    name) and where the code after it starts again (with ``prefix``, the enclosing name)."""
    for child in node.named_children:
        inner = _unwrapped(child)
        name = _definition_name(inner, data)
        if name is None:
            if inner.type not in ("comment", "block_comment", "line_comment"):
                _walk_body(child, prefix, data, cuts)
            continue
        qualified = f"{prefix}{SEPARATOR}{name}" if prefix and name else (name or prefix)
        start = _leading_comments(child, data)
        cuts.append((start, qualified))
        if inner.type in CONTAINERS:
            _walk(inner, qualified, data, cuts)
        cuts.append((child.end_byte, prefix))


ASSIGNED_FUNCTIONS = ("function_expression", "function", "arrow_function", "generator_function")


def _definition_name(node, data: bytes) -> str | None:
    """``node``'s name where it is a definition (a container, a leaf, or a function assigned to a
    name: :func:`_assigned_name`; ``""`` for one without a name), None where it is not one."""
    assigned = _assigned_name(node, data)
    if assigned is not None:
        return assigned
    return _name(node, data) if node.type in CONTAINERS or node.type in LEAVES else None


def _assigned_name(node, data: bytes) -> str | None:
    """The name a function is assigned to, where ``node`` is such a statement and the tree
    says so: JavaScript's ``res.redirect = function redirect(url) {…}`` (``res.redirect``; a
    chain ``a = b = function…`` is named by its first target) and ``const parse = (s) => …``
    (``parse``); None for any other node."""
    target, value = None, None
    if node.type == "expression_statement" and node.named_children:
        expr = node.named_children[0]
        if expr.type == "assignment_expression":
            target = expr.child_by_field_name("left")
            value = expr.child_by_field_name("right")
            while value is not None and value.type == "assignment_expression":
                value = value.child_by_field_name("right")
    elif node.type in ("lexical_declaration", "variable_declaration") and len(node.named_children) == 1:
        declarator = node.named_children[0]
        if declarator.type == "variable_declarator":
            target, value = declarator.child_by_field_name("name"), declarator.child_by_field_name("value")
    if target is None or value is None or value.type not in ASSIGNED_FUNCTIONS or target.end_byte - target.start_byte > 120:
        return None
    return data[target.start_byte : target.end_byte].decode("utf-8", "replace")


def _walk_body(node, prefix: str, data: bytes, cuts: list[tuple[int, str]]) -> None:
    """Definitions held in a node that is not one (a class's body block, an ``if`` at top
    level): walked as children of the enclosing definition."""
    if node.type in BODIES:
        _walk(node, prefix, data, cuts)


def _unwrapped(node):
    """The definition a wrapper holds (``@decorator``, ``export``, ``template <…>``), which names it; else ``node``."""
    while node.type in WRAPPERS:
        found = next((c for c in node.named_children if c.type in CONTAINERS | LEAVES | WRAPPERS), None)
        if found is None:
            break
        node = found
    return node


def _leading_comments(node, data: bytes) -> int:
    """Where ``node``'s definition starts with the comments directly above it (no blank line;
    a ``/**`` doc comment may stand one blank line above, as JSDoc often does)."""
    start = node.start_byte
    prev = node.prev_named_sibling
    while (
        prev is not None
        and "comment" in prev.type
        and data[prev.end_byte : start].count(b"\n") <= (2 if data[prev.start_byte : prev.start_byte + 3] == b"/**" else 1)
    ):
        start = prev.start_byte
        prev = prev.prev_named_sibling
    return start


def _name(node, data: bytes) -> str:
    """A definition's own name: its ``name`` field, a Rust ``impl``'s type, a C function's
    declarator, a Go method's receiver type before it (``Console.Print``)."""
    for field in ("name", "type", "declarator"):
        part = node.child_by_field_name(field)
        while part is not None and part.type in (
            "function_declarator",
            "pointer_declarator",
            "reference_declarator",
            "generic_type",
        ):
            part = (
                part.child_by_field_name("declarator") or part.child_by_field_name("type") or (part.named_children or [None])[0]
            )
        if part is not None and part.end_byte - part.start_byte <= 200:
            name = data[part.start_byte : part.end_byte].decode("utf-8", "replace")
            receiver = node.child_by_field_name("receiver") if node.type == "method_declaration" else None
            if receiver is not None:
                kind = next((n for n in _descendants(receiver) if n.type == "type_identifier"), None)
                if kind is not None:
                    name = f"{data[kind.start_byte : kind.end_byte].decode('utf-8', 'replace')}{SEPARATOR}{name}"
            return " ".join(name.split())
    if node.type == "type_declaration":  # Go: type X struct {…}
        spec = next((c for c in node.named_children if c.type == "type_spec"), None)
        return _name(spec, data) if spec is not None else ""
    return ""


def _descendants(node):
    stack = [node]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(n.named_children))


def _char_offsets(text: str, data: bytes):
    """byte offset in ``data`` (``text`` as UTF-8) → character offset in ``text``."""
    if len(data) == len(text):
        return lambda b: b
    import numpy as np

    starts = np.flatnonzero((np.frombuffer(data, dtype=np.uint8) & 0xC0) != 0x80)  # UTF-8: a byte that is no continuation
    ends = np.append(starts[1:], len(data))  # byte where each character ends
    return lambda b: int(np.searchsorted(ends, b, side="right"))


@dataclass(frozen=True)
class Definition:
    """A function, method or class of a source file, as the code recipe pairs it: its qualified
    name, its character range in the file (its leading comments and decorators included), its
    documentation (a Python docstring, else the comment block just above it, markers stripped;
    empty without) and its code with that documentation cut out."""

    name: str
    start: int
    end: int
    doc: str
    code: str


def definitions(text: str, language: str) -> list[Definition]:
    """The definitions of a source file that :func:`code_sections` names, in order, each with
    its documentation and its code without it.

    Args:
        text: the file's text.
        language: a tree-sitter grammar name (:data:`CODE_LANGUAGES`' values).
    """
    data = text.encode("utf-8")
    tree = _parser(language).parse(data)
    to_char = _char_offsets(text, data)
    found: list[Definition] = []

    def visit(node, prefix: str) -> None:
        for child in node.named_children:
            inner = _unwrapped(child)
            name = _definition_name(inner, data)
            if name is None:
                if child.type in BODIES:
                    visit(child, prefix)
                continue
            qualified = f"{prefix}{SEPARATOR}{name}" if prefix and name else (name or prefix)
            start, end = to_char(_leading_comments(child, data)), to_char(child.end_byte)
            doc_start, doc_end, doc = _documentation(inner, child, data, to_char)
            if doc:
                doc_start, doc_end = _whole_lines(text, doc_start, doc_end)
            code = text[start:doc_start] + text[doc_end:end] if doc else text[start:end]
            found.append(Definition(qualified, start, end, doc, _dedent_blank_lines(code)))
            if inner.type in CONTAINERS:
                visit(inner, qualified)

    visit(tree.root_node, "")
    return found


def _documentation(inner, outer, data: bytes, to_char) -> tuple[int, int, str]:
    """(start, end, text) of a definition's documentation: the string that opens a Python body,
    else the comments directly above it; (0, 0, "") without one."""
    body = inner.child_by_field_name("body")
    first = body.named_children[0] if body is not None and body.named_children else None
    if (
        first is not None
        and first.type == "expression_statement"
        and first.named_children
        and first.named_children[0].type == "string"
    ):
        first = first.named_children[0]  # older grammars wrap the docstring in an expression statement
    if first is not None and first.type == "string":
        raw = data[first.start_byte : first.end_byte].decode("utf-8", "replace")
        return to_char(first.start_byte), to_char(first.end_byte), _unquoted(raw)
    lead = _leading_comments(outer, data)
    if lead < outer.start_byte:
        raw = data[lead : outer.start_byte].decode("utf-8", "replace")
        return to_char(lead), to_char(outer.start_byte), _uncommented(raw)
    return 0, 0, ""


def _unquoted(raw: str) -> str:
    """A string literal's text: prefixes (r, b, f) and quotes taken off, lines dedented."""
    import inspect

    body = raw.lstrip("rRbBuUfF")
    for quote in ('"""', "'''", '"', "'"):
        if body.startswith(quote) and body.endswith(quote) and len(body) >= 2 * len(quote):
            body = body[len(quote) : -len(quote)]
            break
    return inspect.cleandoc(body)


def _uncommented(raw: str) -> str:
    """A comment block's text: ``//``, ``///``, ``#``, ``--``, ``/* */`` and a leading ``*`` taken off each line."""
    lines = []
    for line in raw.strip().splitlines():
        line = re.sub(r"^\s*(/\*\*?|\*/|\*|///?|#+|--)\s?", "", line)
        line = re.sub(r"\s*\*/\s*$", "", line)
        lines.append(line.rstrip())
    return "\n".join(lines).strip()


def _whole_lines(text: str, start: int, end: int) -> tuple[int, int]:
    """``start``–``end`` widened to the whole lines they sit on, where nothing else is on them."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end + 1
    if not text[line_start:start].strip() and not text[end:line_end].strip():
        return line_start, line_end
    return start, end


def _dedent_blank_lines(code: str) -> str:
    """``code`` with the blank lines a cut docstring left behind folded into one."""
    return re.sub(r"\n[ \t]*\n(?:[ \t]*\n)+", "\n\n", code).strip("\n")


def summary(doc: str) -> str:
    """A documentation's summary: its first paragraph up to the end of its first sentence
    (``. `` or the paragraph's end), whitespace folded; PEP 257's summary line, JSDoc's and
    Javadoc's first sentence."""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    return re.split(r"(?<=[.!?])\s", paragraph, maxsplit=1)[0].strip()
