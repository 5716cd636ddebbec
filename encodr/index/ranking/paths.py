"""What a file's path says of it: its words, and whether it is a test, documentation, an example,
generated, or a vendored or legacy copy (semble's penalties; GitHub Linguist's vendored and
documentation patterns in short)."""

from __future__ import annotations

import functools
import re
from pathlib import PurePosixPath

from .query import identifier_parts

TEST_FOLDERS = frozenset({"test", "tests", "__tests__", "spec", "specs", "testdata", "fixtures", "testing_utils"})
TEST_FILES = re.compile(
    r"(^test_.*\.py$|_test\.\w+$|_tests\.\w+$|\.(test|spec)\.[cm]?[jt]sx?$|_spec\.rb$|^conftest\.py$|Tests?\.\w+$)"
)
DOC_FOLDERS = frozenset({"docs", "documentation", "docs_src", "site", "website"})
PROSE_SUFFIXES = frozenset({".md", ".markdown", ".rst", ".txt", ".html", ".htm", ".adoc"})
EXAMPLE_FOLDERS = frozenset({"examples", "example", "samples", "sample", "demo", "demos", "benchmarks", "bench"})
COPY_FOLDERS = frozenset({"_vendor", "vendor", "vendored", "third_party", "thirdparty", "v1", "compat", "legacy", "deprecated"})
GENERATED = re.compile(r"(_pb2(_grpc)?\.pyi?$|\.pb\.go$|\.g\.dart$|_generated\.\w+$|\.gen\.\w+$|\.generated\.\w+$)")


@functools.lru_cache(maxsize=65536)
def path_kind(path: str) -> str | None:
    """``tests``, ``docs``, ``examples``, ``generated``, ``copy`` (vendored or legacy), or None
    for a file of the project's own source."""
    p = PurePosixPath(path.replace("\\", "/"))
    folders = {part.lower() for part in p.parts[:-1]}
    if folders & TEST_FOLDERS or TEST_FILES.search(p.name):
        return "tests"
    if GENERATED.search(p.name) or "generated" in folders:
        return "generated"
    if folders & COPY_FOLDERS:
        return "copy"
    if folders & EXAMPLE_FOLDERS:
        return "examples"
    if p.suffix.lower() in PROSE_SUFFIXES or folders & DOC_FOLDERS:
        return "docs"
    return None


@functools.lru_cache(maxsize=65536)
def path_words(path: str) -> tuple[frozenset[str], frozenset[str]]:
    """The words of a file's stem (``bash_completionsV2.go`` → bash, completions, v2) and of its
    folders, lower-cased."""
    p = PurePosixPath(path.replace("\\", "/"))
    stem = p.name.split(".")[0] if not p.name.startswith(".") else p.name
    stem_words = frozenset(identifier_parts(stem)) | frozenset(identifier_parts(p.stem))
    folder_words = frozenset(w for part in p.parts[:-1] for w in identifier_parts(part))
    return stem_words, folder_words


def word_matches(word: str, names: frozenset[str]) -> bool:
    """Whether a query word names one of a path's words: the same, or one a prefix of the other
    when both have 4 letters or more (``completion`` ~ ``completions``, ``render`` ~ ``renderer``)."""
    if word in names:
        return True
    return len(word) >= 4 and any(len(n) >= 4 and (n.startswith(word) or word.startswith(n)) for n in names)
