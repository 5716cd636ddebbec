"""A stand-in for lingua on a lent GPU machine, copied there as ``lingua`` by
``python bench/gpu.py device DIR`` (lingua's models, 96 MB, do not travel in 64 MiB): every text is
English, with confidence 1. For English corpora (SciFact) only; never on a user's machine."""

from types import SimpleNamespace


class _Lang(SimpleNamespace):
    pass


ENGLISH = _Lang(iso_code_639_3=SimpleNamespace(name="ENG"), name="ENGLISH")


class Language:
    ENGLISH = ENGLISH

    @staticmethod
    def all():
        return [ENGLISH]


class _Detector:
    def compute_language_confidence_values_in_parallel(self, texts):
        return [[SimpleNamespace(language=ENGLISH, value=1.0)] for _ in texts]

    def compute_language_confidence_values(self, text):
        return [SimpleNamespace(language=ENGLISH, value=1.0)]

    def detect_language_of(self, text):
        return ENGLISH


class LanguageDetectorBuilder:
    @staticmethod
    def from_all_languages():
        return LanguageDetectorBuilder()

    @staticmethod
    def from_languages(*languages):
        return LanguageDetectorBuilder()

    def with_low_accuracy_mode(self):
        return self

    def with_preloaded_language_models(self):
        return self

    def build(self):
        return _Detector()
