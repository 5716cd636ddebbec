"""The TUI holds presentation only (issue 15, "one core"): every encodr function, class or
table the TUI reaches for, the CLI reaches for too. The import-linter contract in
pyproject.toml keeps compute libraries (torch, numpy, faiss, SQL) out of ``encodr/tui``;
this test checks the other half — that the TUI calls no core entry point the CLI lacks."""

import ast
import importlib
import importlib.util
import inspect
from pathlib import Path

import encodr

PACKAGE = Path(encodr.__file__).parent

# What the TUI reads to draw its widgets, not a way to train, index or evaluate. Each is the
# core's own list or reader, so the TUI offers what the CLI accepts (the core validates both).
PRESENTATION_ONLY = {
    ("encodr.errors", "EncodrError"),  # the one-line error both interfaces show
    (
        "encodr.core.dispatch",
        "recipe_fields",
    ),  # the Train pane shows the recipe's fields to edit (they reach the core as --set items)
    ("encodr.core.dispatch", "recipe_notes"),  # and each field's meaning and rule, as its tooltip
    ("encodr.core.dispatch", "dev_sets"),  # the Train pane's dev-set choices (`encodr tune --dev` takes the same names)
    ("encodr.core.dispatch", "preview"),  # the data-file preview: the reader `encodr tune` reads with, for its count
    ("encodr.core.dispatch", "cancelled"),  # Cancel: raised from the step callback; the CLI's Ctrl-C ends the same way
    ("encodr.core.results", "human"),  # the Workspace's cells, rendered for people as the CLI's tables are (Result.tables)
    ("encodr.core.results", "term_spans"),
    ("encodr.core.results", "where"),  # a hit's source and offset, as the CLI's table shows it
    (
        "encodr.core.results",
        "hit_snippet",
    ),  # a hit as lines (a code hit as its lines), as SearchResult.tables shows them for the CLI
    ("encodr.core.results", "own_title"),
    (
        "encodr.core.results",
        "judged_mark",
        # a hit a judgment moved, as the CLI's table marks it  # a hit's title where it says more than its path, as the
        # CLI's table shows it
    ),
    ("encodr.core.results", "reads_as_markdown"),  # the document view renders a document read as Markdown
    # not a command: the process keeps its warm searcher for life, as `encodr serve` and `encodr mcp` do (Served.warm)
    ("encodr.core.session", "settle"),
}


def core_refs(path: Path, source: str | None = None) -> set[tuple[str, str]]:
    """(module, name) for every name a file of the encodr package imports from encodr, and for
    every attribute it reads on an encodr module it imports whole (``from .. import evaluation``
    then ``evaluation.run``). ``source`` stands in for the file's text."""
    tree = ast.parse(source if source is not None else path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    refs, modules = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            module = f"{base}.{node.module}" if node.module else base
            for alias in node.names:
                parent = importlib.import_module(module)
                submodule = hasattr(parent, "__path__") and importlib.util.find_spec(f"{module}.{alias.name}") is not None
                if inspect.ismodule(getattr(parent, alias.name, None)) or submodule:
                    modules[alias.asname or alias.name] = f"{module}.{alias.name}"  # a module imported whole
                else:
                    refs.add((module, alias.name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules:
            refs.add((modules[node.value.id], node.attr))
    return refs


def resolve(refs: set[tuple[str, str]]) -> dict[int, str]:
    """id(object) → "module.name": the same object reached from two modules counts once."""
    out = {}
    for module, name in refs:
        obj = getattr(importlib.import_module(module), name)
        out[id(obj)] = f"{module}.{name}"
    return out


def tui_core_refs() -> set[tuple[str, str]]:
    """What the TUI's files reach for outside ``encodr.tui`` itself."""
    refs = set().union(*(core_refs(p) for p in (PACKAGE / "tui").glob("*.py")))
    return {(m, n) for m, n in refs if not m.startswith("encodr.tui")}


def test_every_core_entry_point_of_the_tui_is_one_the_cli_uses():
    tui = tui_core_refs() - PRESENTATION_ONLY
    cli = resolve(core_refs(PACKAGE / "cli.py"))
    tui_only = sorted(name for key, name in resolve(tui).items() if key not in cli)
    assert len(tui) > 10  # the scan found the TUI's calls (tune, build, evaluation.run, Searcher, …)
    assert tui_only == [], f"the TUI calls these and the CLI does not: {tui_only}"


def test_the_scan_sees_the_tuis_calls_and_one_the_cli_lacks():
    """The check can fail: it sees what the panes call, and a core function the CLI never calls."""
    refs = tui_core_refs()
    for call in [
        ("encodr.core.dispatch", "prepare"),
        ("encodr.core.dispatch", "run"),
        ("encodr.core.dispatch", "call"),
        ("encodr.core.dispatch", "tune"),
    ]:
        assert call in refs
    probe = core_refs(
        PACKAGE / "tui" / "probe.py", "from ..training.trainer import Trainer\nfrom ..core import dispatch\ndispatch.call\n"
    )
    assert probe == {("encodr.training.trainer", "Trainer"), ("encodr.core.dispatch", "call")}
    cli = resolve(core_refs(PACKAGE / "cli.py"))
    assert [name for key, name in resolve(probe).items() if key not in cli] == ["encodr.training.trainer.Trainer"]
