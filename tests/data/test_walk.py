"""A folder read as a person keeps it (encodr.data.walk, encodr.data.files.expand)."""

import pytest

from encodr.data.files import BINARY, EMPTY, NOT_READ, TOO_LARGE, expand
from encodr.data.walk import walk
from encodr.errors import EncodrError


@pytest.fixture
def repo(tmp_path):
    root = tmp_path / "repo"
    for name, text in {
        "src/app.py": "def main():\n    return 1\n",
        "src/__init__.py": "",
        "src/fast.pyx": "cdef int add(int a, int b):\n    return a + b\n",
        "src/secret.py": "KEY = 1\n",
        "src/keep.log.py": "x = 1\n",
        "node_modules/pkg/index.js": "module.exports = 1\n",
        "build/lib/app.py": "def main():\n    return 1\n",
        "venv2/pyvenv.cfg": "home = /usr\n",
        "venv2/lib/site.py": "x = 1\n",
        "env/setup.md": "# Setup\n\nSet the variables.\n",  # a folder named env, not a virtual environment
        "docs/guide.md": "# Guide\n\nHow to use it.\n",
        "docs/notes.md": "notes\n",
        "logo.png": "png",
        "bundle.min.js": "var a=1;",
    }.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / ".gitignore").write_text("secret.py\n*.log.py\n!keep.log.py\n")
    (root / "docs" / ".encodrignore").write_text("notes.md\n")
    return root


def test_a_gitignored_file_and_default_folders_are_not_read(repo):
    files, skipped = expand([str(repo)])
    read = {p.removeprefix(str(repo) + "/") for p in files}
    assert read == {"src/app.py", "src/fast.pyx", "src/keep.log.py", "docs/guide.md", "env/setup.md"}  # .pyx is code
    assert {s.reason for s in skipped if s.path.endswith("__init__.py")} == {EMPTY}  # empty, not failed
    assert {s.reason for s in skipped if s.path.endswith("logo.png")} == {NOT_READ}


def test_no_ignore_reads_everything_but_hidden_files(repo):
    files, _ = expand([str(repo)], no_ignore=True)
    read = {p.removeprefix(str(repo) + "/") for p in files}
    assert {"src/secret.py", "node_modules/pkg/index.js", "build/lib/app.py", "venv2/lib/site.py", "docs/notes.md"} <= read
    assert not any(part.startswith(".") for p in read for part in p.split("/"))


def test_binary_and_oversized_files_are_skipped_with_their_reason(repo):
    (repo / "src" / "blob.py").write_bytes(b"abc\0def")
    (repo / "src" / "huge.py").write_text("x = 1\n" * 100)
    files, skipped = expand([str(repo)], max_bytes=300)
    reasons = {s.path.rsplit("/", 1)[-1]: s.reason for s in skipped}
    assert reasons["blob.py"] == BINARY and reasons["huge.py"].startswith(TOO_LARGE)
    assert not any(f.endswith(("blob.py", "huge.py")) for f in files)


def test_a_folder_whose_files_are_all_ignored_says_so(tmp_path):
    (tmp_path / "only").mkdir()
    (tmp_path / "only" / "a.py").write_text("x = 1\n")
    (tmp_path / "only" / ".gitignore").write_text("*.py\n")
    with pytest.raises(EncodrError, match="left out by ignore rules"):
        expand([str(tmp_path / "only")])


def test_an_ignore_file_applies_below_its_folder_and_a_deeper_rule_wins(tmp_path):
    for name in ("a/x.md", "a/b/x.md", "c/x.md"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("text\n")
    (tmp_path / "a" / ".ignore").write_text("x.md\n")
    (tmp_path / "a" / "b" / ".ignore").write_text("!x.md\n")
    found = {p.removeprefix(str(tmp_path) + "/") for p in walk(tmp_path).files}
    assert found == {"a/b/x.md", "c/x.md"}
