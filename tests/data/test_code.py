"""Source code read as documents: a section per function, method or class, named by its
qualified name, with its lines."""

from encodr.data.code import code_language, code_sections
from encodr.data.files import expand, iter_records, read_document_file
from encodr.index.keywords import keyword_terms

PYTHON = '''"""Module doc."""
import os


# Says hello.
@decorator
def hello(name):
    """Greet ``name`` — ünïcode."""
    def inner():
        return 1
    return inner()


class Console:
    """A console."""

    width = 80

    def print(self, *objects):
        """Print objects."""
        return len(objects)


if __name__ == "__main__":
    hello("x")
'''


def named(text: str, language: str) -> dict[str, str]:
    return {name: text[a:b].strip() for a, b, name in code_sections(text, language) if name}


def test_python_sections_follow_definitions_and_cover_the_file():
    sections = code_sections(PYTHON, "python")
    assert sections[0][0] == 0 and sections[-1][1] == len(PYTHON)
    assert all(a[1] == b[0] for a, b in zip(sections, sections[1:]))  # no gap, no overlap
    parts = named(PYTHON, "python")
    assert parts["hello"].startswith("# Says hello.\n@decorator\ndef hello")  # its comment and decorator belong to it
    assert "def inner" in parts["hello"]  # a nested function stays in the one that holds it
    assert parts["Console.print"].startswith("def print(self, *objects):") and parts["Console.print"].endswith(
        "return len(objects)"
    )
    assert parts["Console"].startswith('class Console:\n    """A console."""') and "def print" not in parts["Console"]


def test_other_languages_name_their_definitions():
    js = 'import x from "y";\n/** Adds. */\nexport function add(a, b) { return a + b; }\nclass Box {\n  get() { return 1; }\n}\n'
    assert {"add", "Box", "Box.get"} <= set(named(js, "javascript"))
    assert named(js, "javascript")["add"].startswith("/** Adds. */")
    go = "package main\n// Print prints.\nfunc (c *Console) Print(s string) {}\nfunc main() {}\n"
    assert {"Console.Print", "main"} <= set(named(go, "go"))
    rust = "struct P { x: i32 }\nimpl P {\n    /// New.\n    fn new() -> P { P { x: 0 } }\n}\n"
    assert named(rust, "rust")["P.new"].startswith("/// New.")


def test_a_closing_brace_is_no_section_of_its_own():
    js = "class Box {\n  get() { return 1; }\n}\n"
    assert all(text.strip() not in ("}", "") for text in (js[a:b] for a, b, _ in code_sections(js, "javascript")))


def test_a_source_file_reads_as_passages_per_definition_with_their_lines(tmp_path):
    path = tmp_path / "console.py"
    path.write_text(PYTHON, encoding="utf-8")
    passages = {p.section: p for p in iter_records(str(path), None, None, in_folder=True)}
    lines = PYTHON.split("\n")
    method = passages["Console.print"]
    assert lines[method.line - 1].strip().startswith("def print") and lines[method.end_line - 1].strip() == "return len(objects)"
    assert lines[passages["hello"].line - 1] == "# Says hello."
    assert read_document_file(path).title == "console.py"


def test_source_files_in_a_folder_are_read_and_a_file_given_alone_too(tmp_path):
    (tmp_path / "a.py").write_text("def f():\n    pass\n")
    (tmp_path / "b.ts").write_text("function g(): number { return 1; }\n")
    (tmp_path / "c.bin").write_bytes(b"\0\1")
    files, skipped = expand([str(tmp_path)])
    assert [f.rsplit("/", 1)[1] for f in files] == ["a.py", "b.ts"] and [s.path.rsplit("/", 1)[1] for s in skipped] == ["c.bin"]
    assert [p.section for p in iter_records(str(tmp_path / "a.py"))] == ["f"]  # not one record a line
    assert code_language("x/Y.TSX") == "tsx" and code_language("notes.json") is None


def test_identifiers_are_split_for_the_keyword_index():
    terms = keyword_terms("def get_console(): ConsoleWriter", "eng")
    assert {"get", "consol", "getconsole", "consolewriter", "writer"} <= set(" ".join(terms).replace("_", " ").split())
