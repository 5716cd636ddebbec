"""A build's language detection in a worker process: the same answers as here, and here
where the worker cannot run."""

import importlib
import subprocess

import pytest

from encodr.data import language
from encodr.data.language_worker import CALLS, LanguageWorker
from encodr.errors import EncodrError
from encodr.index import BuildOptions, Searcher, build
from tests.data.test_language import MIXED

TEXTS = [text for i in range(6) for code in MIXED for text in [MIXED[code][i]]] + ["12345"]


@pytest.fixture(scope="module")
def worker():
    with LanguageWorker(preload=None) as running:
        yield running


def test_a_worker_answers_as_this_process_does(worker, monkeypatch):
    expected = language.labelled(TEXTS, None, False, True)
    among = language.detect_languages(TEXTS, ["eng", "spa"])
    misread = language.misread_languages("eng", {"lat": ["The children are playing in the garden after school."]})

    def here(*args):
        raise AssertionError("ran in this process")

    for name in CALLS:  # the worker has its own: these run only where it fails
        monkeypatch.setitem(CALLS, name, here)
    assert worker.process is not None and worker.process.poll() is None
    candidates, found = worker.call("labelled", TEXTS, None, False, True)
    assert candidates == expected[0] == ["deu", "eng", "spa"]
    assert [code for code, _ in found] == [code for code, _ in expected[1]]
    assert [sure for _, sure in found] == pytest.approx(
        [sure for _, sure in expected[1]], abs=1e-9
    )  # lingua's sums differ in their last bits from call to call
    assert worker.call("detect_languages", TEXTS, ["eng", "spa"]) == among
    assert worker.call("misread_languages", "eng", {"lat": ["The children are playing in the garden after school."]}) == misread


def test_an_error_in_the_worker_is_raised_here_as_the_function_raises_it(worker):
    with pytest.raises(EncodrError, match="unknown language code"):
        worker.call("detect_languages", TEXTS, ["eng", "xyz"])
    assert worker.call("detect_languages", ["Die Kinder spielen im Garten."], ["eng", "deu"]) == ["deu"]  # still serving


def test_ctrl_c_is_left_to_the_build_which_stops_the_worker(worker):
    import os
    import signal

    assert worker.call("detect_languages", ["Die Kinder spielen im Garten."], ["eng", "deu"]) == ["deu"]  # its loop is on
    os.kill(worker.process.pid, signal.SIGINT)  # what the terminal sends the build's process group
    assert worker.call("detect_languages", ["The children play in the garden."], ["eng", "deu"]) == ["eng"]
    assert worker.process is not None and worker.process.poll() is None  # answered by the worker, still running


def test_calls_run_here_once_the_worker_died():
    detector = LanguageWorker(preload=["eng", "deu"])
    detector.process.kill()
    detector.process.wait()
    assert detector.call("detect_languages", ["Die Kinder spielen im Garten."], ["eng", "deu"]) == ["deu"]
    assert detector.process is None and detector.requests is None
    detector.close()


def test_calls_run_here_where_no_worker_can_start(monkeypatch):
    def refused(*args, **kwargs):
        raise OSError("no processes left")

    monkeypatch.setattr(subprocess, "Popen", refused)
    with LanguageWorker(preload=None) as detector:
        assert detector.process is None
        assert detector.call("detect_languages", ["Die Kinder spielen im Garten."], ["eng", "deu"]) == ["deu"]


def test_a_build_of_a_large_enough_input_detects_in_a_worker_it_stops(tmp_path, tiny_model, monkeypatch):
    building = importlib.import_module("encodr.index.build")
    corpus = tmp_path / "mixed.txt"
    corpus.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    started, closed = [], []
    close = LanguageWorker.close

    def closing(self):
        started.append(self.process is not None)
        process = self.process
        close(self)
        closed.append(process is None or process.poll() is not None)

    monkeypatch.setattr(LanguageWorker, "close", closing)
    monkeypatch.setattr(building, "WORKER_BYTES", corpus.stat().st_size)  # this input is as large as it must be
    build([str(corpus)], tmp_path / "idx", BuildOptions(model=str(tiny_model)))
    assert started == [True] and closed == [True]
    rows = Searcher(tmp_path / "idx").index.rows(range(len(TEXTS)))
    assert all(row["text"] in MIXED[row["lang"]] for row in rows.values() if row["text"] != "12345")

    started.clear()
    monkeypatch.setattr(building, "WORKER_BYTES", corpus.stat().st_size + 1)  # one byte short: detected here
    build([str(corpus)], tmp_path / "small", BuildOptions(model=str(tiny_model)))
    assert started == [False]
