"""The docs cannot drift (datasette's ``tests/test_docs.py`` is the model): generated pages equal
what ``tools/docs.py`` writes from the code and ``bench/results``; every option of every command
is in the CLI reference; every module is in the module map; every link inside the docs resolves.
Each check is also shown to fail on a planted drift."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools import docs

ROOT = Path(__file__).resolve().parent.parent
MODULE_MAP = ROOT / "docs" / "architecture.md"


@pytest.fixture(scope="module")
def generated() -> dict[str, str]:
    return docs.pages()


def stale(generated: dict[str, str], read=lambda rel: (ROOT / rel).read_text()) -> list[str]:
    """The generated files whose text on disk differs from what the generator writes."""
    return [rel for rel, text in generated.items() if read(rel) != text]


def test_every_generated_page_and_the_readmes_table_equal_the_code_and_the_results(generated):
    assert stale(generated) == [], "run python tools/docs.py"


def test_a_table_edited_by_hand_is_found(generated):
    edited = {rel: text.replace("| minilm | scifact | 73.11", "| minilm | scifact | 75.00") for rel, text in generated.items()}
    assert edited["README.md"] != generated["README.md"]  # the planted edit took
    assert stale(generated, lambda rel: edited[rel]) == ["README.md"]


def test_the_readme_holds_no_table_but_its_generated_one_and_stays_short():
    text = (ROOT / "README.md").read_text()
    outside = text.split(docs.HEADLINE[0])[0] + text.split(docs.HEADLINE[1])[1]
    assert not [line for line in outside.splitlines() if line.startswith("|")]
    assert len(text.splitlines()) <= 250


def undocumented(reference: str) -> list[str]:
    """``encodr PATH --flag`` for every option of every command that ``reference`` (the CLI reference's text) does not show."""
    missing = []
    sections = dict(re.findall(r"^## `([^`]+)`\n(.*?)(?=^## `|\Z)", reference, flags=re.M | re.S))
    for path, command in docs.cli_commands():
        cells = re.findall(r"^\| `([^`]*)`", sections.get(path, ""), flags=re.M)  # the option column of the command's table
        shown = {token for cell in cells for token in re.split(r"[ ,/]+", cell)}
        for param in command.params:
            for flag in [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]:
                name = flag if flag.startswith("-") else flag.upper()
                if param.name != "help" and name not in shown:
                    missing.append(f"{path} {name}")
    return missing


def test_every_option_of_every_command_is_in_the_cli_reference():
    assert undocumented((ROOT / "docs" / "reference" / "cli.md").read_text()) == []


def test_an_option_left_out_of_the_cli_reference_is_found():
    reference = (ROOT / "docs" / "reference" / "cli.md").read_text()
    assert undocumented(reference.replace("`--rerank-depth RERANK_DEPTH`", "`(gone)`")) == ["encodr search --rerank-depth"]


def mapped_modules(text: str) -> set[str]:
    """The module paths (relative to encodr/) that the module map's tree names."""
    block = text.split("```\nencodr/\n", 1)[1].split("```", 1)[0]
    found, folders = set(), []
    for line in block.splitlines():
        match = re.match(r"^( *)(\S+)", line)
        if not match or not match.group(2).endswith(("/", ".py")):
            continue
        depth = len(match.group(1)) // 2 - 1
        folders = folders[: max(depth, 0)]
        name = match.group(2)
        if name.endswith("/"):
            folders.append(name.rstrip("/"))
            found.add("/".join(folders) + "/__init__.py")  # a package line stands for its __init__.py
        else:
            found.add("/".join([*folders, name]))
    return found


def package_modules() -> set[str]:
    return {str(p.relative_to(ROOT / "encodr")) for p in (ROOT / "encodr").rglob("*.py")}


def test_every_module_is_in_the_module_map():
    assert sorted(package_modules() - mapped_modules(MODULE_MAP.read_text())) == []


def test_a_module_missing_from_the_map_is_found():
    text = MODULE_MAP.read_text()
    line = next(line for line in text.splitlines() if line.strip().startswith("options.py"))
    assert sorted(package_modules() - mapped_modules(text.replace(line + "\n", ""))) == ["index/options.py"]


def broken_links(pages: dict[Path, str]) -> list[str]:
    """``page: target`` for every relative link whose file does not exist (web links and anchors are not checked)."""
    broken = []
    for page, text in pages.items():
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith(("http://", "https://", "mailto:", "#")):
                continue
            path = (page.parent / target.split("#")[0]).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    return broken


def doc_pages() -> dict[Path, str]:
    return {p: p.read_text() for p in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]}


def test_every_link_inside_the_docs_resolves():
    assert broken_links(doc_pages()) == []


def test_a_broken_link_is_found():
    page = ROOT / "docs" / "index.md"
    assert broken_links({page: "see [the guide](guides/nowhere.md)"}) == ["docs/index.md: guides/nowhere.md"]
