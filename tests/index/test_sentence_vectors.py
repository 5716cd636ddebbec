"""A searcher's snippets encode each passage's sentences once, as a batch of their own."""

from types import SimpleNamespace

import numpy as np

from encodr.index.snippets import SentenceVectors


class Passages:
    """An index whose ``encode_passages`` records each batch it is asked for and gives each text
    a vector that depends on its batch too (as an int8 encoder's do)."""

    def __init__(self, prompt: str = "", dimension: int = 3):
        self.meta = SimpleNamespace(document_prompt=prompt, dimension=dimension)
        self.asked: list[list[str]] = []

    def encode_passages(self, encoder, texts):
        self.asked.append(list(texts))
        return np.array([[len(t), ord(t[0]), len(texts)] for t in texts], dtype=np.float32)


def test_a_passage_is_encoded_alone_once_and_read_back_the_same():
    index, encoder, kept = Passages(), object(), SentenceVectors(kept=5)
    cat, dog, owl = ("a cat.", "it sat."), ("a dog.",), ("an owl.", "it flew.", "away.")
    first = kept.encode(index, encoder, [cat, dog, cat])
    assert index.asked == [list(cat), list(dog)]  # a batch a passage, each once
    assert first[0].shape == (2, 3) and (first[0] == first[2]).all()
    again = kept.encode(index, encoder, [dog, owl])
    assert index.asked[2:] == [list(owl)] and (again[0] == first[1]).all()  # read back, not encoded with the owl
    assert kept.size == 4  # over five sentences kept, the least recently used passage (the cat's two) went
    kept.encode(index, encoder, [cat])  # and the dog's when the cat's came back
    kept.encode(index, encoder, [dog])
    assert index.asked[3:] == [list(cat), list(dog)]


def test_another_encoder_or_prompt_lets_the_kept_vectors_go():
    index, kept = Passages(), SentenceVectors()
    one, two = object(), object()
    kept.encode(index, one, [("a cat.",)])
    kept.encode(index, two, [("a cat.",)])
    kept.encode(index, two, [("a cat.",)])
    other = Passages(prompt="passage: ")
    kept.encode(other, two, [("a cat.",)])
    assert len(index.asked) == 2 and len(other.asked) == 1 and kept.encode(index, two, []) == []
