"""Evaluation tasks as declarative records. The runner (:mod:`encodr.evaluation`) knows
nothing task-specific: a task names its file, its reader, and its evaluator."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ..data.beir import RetrievalSet
from ..data.readers import LinkingSet
from ..errors import EncodrError
from ..paths import bundled
from .base import Evaluator

# task type → (reader, evaluator class), as MTEB types its tasks (STS, Retrieval…); named as
# "module:attribute" and imported when a task runs, so listing tasks (the CLI's --help) loads
# neither scipy nor torch
TYPES = {
    "sts": ("encodr.data.readers:read_sts", "encodr.evaluation.similarity:PairSimilarityEvaluator"),
    "words": ("encodr.data.readers:read_word_pairs", "encodr.evaluation.similarity:PairSimilarityEvaluator"),
    "linking": ("encodr.data.readers:read_linking", "encodr.evaluation.linking:LinkingEvaluator"),
    "pairs": ("encodr.data.readers:read_binary_pairs", "encodr.evaluation.similarity:PairClassificationEvaluator"),
    "bitext": ("encodr.data.bitext:read_bitext_any", "encodr.evaluation.bitext:BitextEvaluator"),
    "retrieval": ("encodr.data.beir:read_retrieval", "encodr.evaluation.retrieval:RetrievalEvaluator"),
}


def _resolve(name: str):
    """``"package.module:attribute"`` → the attribute."""
    import importlib

    module, _, attribute = name.partition(":")
    return getattr(importlib.import_module(module), attribute)


def type_parts(type_: str):
    """The (reader, evaluator class) of task type ``type_`` (a key of :data:`TYPES`)."""
    reader, cls = TYPES[type_]
    return _resolve(reader), _resolve(cls)


# suites a cross-encoder can run (it scores pairs; it has no vectors for linking)
CROSS_SUITES = ("sts", "pairs")


@dataclass(frozen=True)
class Task:
    """One evaluation dataset.

    Attributes:
        name: short id used on the command line (``--data NAME``) and in tables.
        suite: the ``encodr eval`` sub-command it belongs to by default, or ``""``.
        type: reader + evaluator (a key of :data:`TYPES`).
        path: file (bundled relative path, or a user's path).
        split: ``dev`` or ``test``; tune settings on ``dev`` only.
        description: source, for tables and attribution.
        options: extra keyword arguments for the reader, as (key, value) pairs.
    """

    name: str
    suite: str
    type: str
    path: str
    split: str = "test"
    description: str = ""
    options: tuple[tuple[str, str], ...] = ()

    def file(self) -> Path:
        """The task's file on disk."""
        p = Path(self.path)
        return p if p.is_absolute() or p.exists() else bundled(self.path)

    def evaluator(self, limit: int | None = None, **options) -> Evaluator:
        """Read the data and build its evaluator (``options`` go to the evaluator).

        Args:
            limit: keep only the first N items (pairs, translations, or linking queries, which
                are still matched against every candidate): a quick estimate, not the protocol's score.
        """
        reader, cls = type_parts(self.type)
        data = reader(self.file(), **dict(self.options))
        if isinstance(data, RetrievalSet):
            return cls(self.name, data, limit=limit, **options)
        if limit is not None:
            if isinstance(data, LinkingSet):
                data = replace(data, queries=data.queries[:limit], query_ids=data.query_ids[:limit])
            else:
                data = data[:limit]
        return cls(self.name, data, **options)

    def texts(self, limit: int | None = None) -> int:
        """How many texts an evaluation encodes (at most; repeated texts are encoded once):
        linking queries plus candidates, a retrieval set's queries plus documents, else two
        per pair or translation (reads the file)."""
        reader, _ = type_parts(self.type)
        data = reader(self.file(), **dict(self.options))
        if isinstance(data, RetrievalSet):
            return len(list(data.queries)[:limit]) + len(data.doc_ids)
        if isinstance(data, LinkingSet):
            return len(data.queries[:limit]) + len(data.candidates)
        return 2 * len(data[:limit])


TASKS = {
    t.name: t
    for t in [
        Task("stsb-test", "sts", "sts", "stsb/sts-test.csv", "test", "STS Benchmark test, Cer et al. 2017"),
        Task("stsb-dev", "", "sts", "stsb/sts-dev.csv", "dev", "STS Benchmark dev, Cer et al. 2017"),
        Task("simlex999", "words", "words", "words/simlex999.txt", "test", "SimLex-999, Hill et al. 2015"),
        Task(
            "wordsim353",
            "words",
            "words",
            "words/wordsim353.tsv",
            "dev",
            "WordSim-353, Finkelstein et al. 2002 (encodr chooses word settings on it)",
        ),
        Task(
            "mesh-test",
            "linking",
            "linking",
            "mesh/mesh_disease_names.tsv",
            "test",
            "MeSH disease names (NLM): non-trivial variants → canonical name, 80% of concepts",
            (("split", "test"),),
        ),
        Task(
            "mesh-dev",
            "",
            "linking",
            "mesh/mesh_disease_names.tsv",
            "dev",
            "MeSH disease names (NLM): the other 20% of concepts, for choosing settings",
            (("split", "dev"),),
        ),
        *(
            Task(
                f"tatoeba-{lang}",
                "bitext",
                "bitext",
                f"tatoeba/tatoeba.{lang}-eng.{lang}",
                "dev",
                f"Tatoeba {lang}↔eng, 1,000 pairs (Artetxe & Schwenk 2019); the multilingual dev set",
            )
            for lang in ("spa", "fra", "deu")
        ),
    ]
}

PRIMARY = {
    "sts": "spearman",
    "words": "spearman",
    "linking": "acc@1",
    "pairs": "roc_auc",
    "bitext": "acc@1",
    "retrieval": "ndcg@10",
}


def tasks_for(suite: str, data: list[str] | None = None) -> list[Task]:
    """The tasks of a suite, or the given files / task names instead of its defaults.

    Args:
        suite: ``sts``, ``words``, ``linking``, ``pairs``, ``bitext`` or ``retrieval`` (no
            bundled data for ``pairs`` and ``retrieval``: pass files, or BEIR-layout folders).
        data: bundled task names (``stsb-dev``) or file paths, read as the suite's type.

    Raises:
        EncodrError: unknown suite, a path that does not exist, ``pairs`` without files, or
            a bundled dataset scored by another metric (``mesh-dev`` under ``sts``).
    """
    if suite not in PRIMARY:
        raise EncodrError(f"unknown evaluation '{suite}'; choose one of {', '.join(PRIMARY)}")
    if not data:
        chosen = [t for t in TASKS.values() if t.suite == suite]
        if not chosen:
            if suite == "retrieval":
                raise EncodrError(
                    "'encodr eval retrieval' needs a BEIR-layout FOLDER (corpus.jsonl, queries.jsonl, qrels/SPLIT.tsv)"
                )
            raise EncodrError(
                f"'encodr eval {suite}' needs a FILE: label<TAB>sentence1<TAB>sentence2, or a QQP, QNLI or MRPC file"
            )
        return chosen
    chosen = []
    for item in data:
        if item in TASKS:
            metric = PRIMARY[TASKS[item].type]
            if metric != PRIMARY[suite]:
                fitting = [name for name, t in TASKS.items() if PRIMARY[t.type] == PRIMARY[suite]]
                raise EncodrError(
                    f"bundled dataset '{item}' is scored by {metric}, but '{suite}' reports {PRIMARY[suite]}; "
                    f"pick one of: {', '.join(fitting) or 'none bundled, pass a file'}"
                )
            chosen.append(TASKS[item])
            continue
        p = Path(item)
        if not p.exists():
            raise EncodrError(f"{item}: no such file or bundled dataset; bundled: {', '.join(TASKS)}")
        if p.is_dir() != (suite == "retrieval"):
            raise EncodrError(
                f"{item} is a directory; pass an evaluation file"
                if p.is_dir()
                else f"{item} is a file; 'eval retrieval' takes a BEIR-layout folder (corpus.jsonl, queries.jsonl, "
                "qrels/SPLIT.tsv)"
            )
        chosen.append(Task(p.name, suite, suite, str(p.resolve()), "user", str(p)))
    return chosen
