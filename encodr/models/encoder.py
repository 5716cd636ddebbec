"""The encoder: tokenizer → transformer → pooling → unit vector, through sentence-transformers,
so every saved model loads with ``SentenceTransformer(path)`` with the pooling it was trained
with. Specs are resolved by :mod:`.resolution` (aliases: :mod:`.aliases`), devices chosen by
:mod:`.device`, and models loaded by :mod:`.loading`. The forward pass is pluggable: torch
(:class:`TorchForward`, here) or ONNX Runtime (:class:`~.onnx.OnnxForward`), which the
:class:`Encoder` is given and never imports."""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from ..errors import EncodrError, S, one_of
from .aliases import DEFAULT_MODEL  # noqa: F401  (re-exported)
from .device import pick_device  # noqa: F401  (re-exported: models.cross and models.loading import it from here)
from .resolution import ModelRef, resolve  # noqa: F401  (re-exported)
from .varlen import KWARG as VARLEN
from .varlen import Unpadding, undo_varlen, use_varlen

BACKENDS = ("torch", "torch-bf16", "onnx", "onnx-int8", "openvino")
BACKEND_HELP = (
    "The forward pass: torch-bf16 multiplies in bfloat16 (faster on a CPU with AVX512-BF16 or AMX, slower elsewhere); "
    "onnx runs onnxruntime on the CPU; onnx-int8 adds dynamic int8 quantisation (faster; the docs' benchmarks give "
    "speed and quality); openvino runs the ONNX export in OpenVINO, in bfloat16 where the CPU has it."
)
AUTO_BACKEND = "auto"  # encodr index's default: openvino (else torch-bf16) on an AMX CPU, else onnx, … (choose_backend)
POOLINGS = ("auto", "cls", "mean")  # --pooling: auto keeps the model's own pooling (a raw MLM: RAW_POOLINGS' choice)
RAW_POOLINGS = ("cls", "mean")  # the recipe field raw_pooling: for a checkpoint that ships no pooling
# Texts per forward pass by (backend, device type), chosen with bench/encode_speed.py --batch-sizes
# and, for cuda, bench/gpu.py (docs/benchmarks/encode_speed.md and docs/benchmarks/gpu.md give the measurements);
# other devices take 32, as sentence-transformers does; torch-bf16 takes torch's (not measured apart).
BATCH_SIZES = {
    ("torch", "cpu"): 32,
    ("torch", "cuda"): 256,
    ("torch-bf16", "cpu"): 32,
    ("torch-bf16", "cuda"): 256,
    ("onnx", "cpu"): 16,
    ("onnx-int8", "cpu"): 16,
    ("openvino", "cpu"): 32,  # scratch, 2,000 sentences on AMX: 16, 32, 64 within 8 % of each other
}


def is_onnx(backend: str) -> bool:
    """Whether ``backend`` (one of :data:`BACKENDS`) runs the model's ONNX export on the CPU
    (onnxruntime's ``onnx`` and ``onnx-int8``, OpenVINO's ``openvino``: :mod:`encodr.models.onnx`)."""
    return backend.startswith("onnx") or backend == "openvino"


_TOKENIZING = threading.Lock()
CHARS_PER_TOKEN = 4  # a rough mean for English word-piece tokens: for estimates (a batch's budget) only


def estimated_tokens(chars: int) -> int:
    """The word-piece tokens of a text of ``chars`` characters, estimated without calling a
    tokenizer: characters / :data:`CHARS_PER_TOKEN`, plus the two special tokens ([CLS], [SEP])."""
    return chars // CHARS_PER_TOKEN + 2


def tokenize(st, texts: list[str]) -> dict[str, list[list[int]]]:
    """Token ids (and the tokenizer's other inputs: B lists each) of each of B texts for the
    SentenceTransformer ``st``, truncated at its ``max_seq_length``, not padded. One thread at a
    time: a fast tokenizer whose truncation is being set while another thread encodes with it
    raises "Already borrowed" (the server's batcher encodes on several threads)."""
    limit = window(st)
    with _TOKENIZING:
        encoded = st.tokenizer(texts, add_special_tokens=True, truncation=True, max_length=limit)
    return {name: encoded[name] for name in encoded.keys()}


def window(st, name: str = "this model") -> int:
    """The tokens a text of transformer SentenceTransformer ``st`` is cut to: its
    ``max_seq_length``; where that is unset or infinite, its transformer's position embeddings,
    at most 512. (A static model's window is :data:`STATIC_WINDOW`: :attr:`Encoder.max_length`.)

    Raises:
        EncodrError: the model has neither a finite maximum length nor a transformer with
            positions (nor is it a static model), so no window can be chosen for it.
    """
    import math

    limit = st.max_seq_length
    if limit is not None and math.isfinite(limit):
        return int(limit)
    config = getattr(getattr(st[0], "auto_model", None), "config", None)
    positions = getattr(config, "max_position_embeddings", None)
    if not positions:
        raise EncodrError(
            f"model '{name}' ({type(st[0]).__name__}) has no maximum length and no transformer positions; "
            "set max_seq_length in its sentence_bert_config.json, or use minilm, mpnet or me5"
        )
    return min(512, int(positions))


# a static model's special tokens, as its tokenizer may spell them (BERT's, RoBERTa's): Encoder.tokenizer names them,
# PaddedStatic drops pad, cls and sep
STATIC_SPECIALS = (
    ("pad_token", ("[PAD]", "<pad>")),
    ("unk_token", ("[UNK]", "<unk>")),
    ("cls_token", ("[CLS]", "<s>")),
    ("sep_token", ("[SEP]", "</s>")),
)
STATIC_WINDOW = (
    256  # tokens a static model's input is cut to: it has no positions, so passages are as long as the bundled MiniLM's
)


def is_static(st) -> bool:
    """Whether SentenceTransformer ``st`` is a static embedding model: its first module a
    sentence-transformers ``StaticEmbedding`` (a table of token vectors averaged by an
    ``EmbeddingBag``; model2vec's potion models load as one), with no transformer."""
    from sentence_transformers.sentence_transformer.modules import StaticEmbedding

    return len(st) > 0 and isinstance(st[0], StaticEmbedding)


STREAM_BATCHES = 32  # an encode of at least this many batches runs them on the forward pass's streams (Encoder._streams)
PACK_GAIN = 0.97  # pack a batch when that costs at most this fraction of padding it (:meth:`TorchForward._packable`)
HALF_AGREEMENT = (
    0.999  # on a GPU, float16 products are kept where every vector of the first batch is within this cosine of float32's
)


class TorchForward:
    """The forward pass in torch: the SentenceTransformer's own modules (transformer, pooling,
    normalisation) on the model's device.

    The contract every forward pass keeps (:class:`~.onnx.OnnxForward` too): ``backend`` and
    ``device`` name it; calling it with one batch of unpadded token lists (``input_ids`` and the
    tokenizer's other outputs, B lists each) gives float32 (B, d) unit vectors; ``prompted``
    encodes B raw texts with the model's default prompt put before each.

    Packing. A batch whose texts differ in length (a server's batch of whatever texts arrived,
    or a length-sorted one with some spread) runs padding-free when the estimated cost says so
    (:meth:`_packable`): its texts are laid end to end in one row, each with its own positions
    from 0, so the transformer's linear layers see no padding, and attention runs per text
    (:func:`.varlen.varlen_attention`: the row scattered into a padded batch for attention
    alone). Only for BERT models on sdpa attention with plain mean or CLS pooling
    (``model_type`` ``bert``; Transformer → Pooling → Normalize), on a CPU, and checked: the
    first packed batch is run padded too, and packing stays off for this model (its attention
    back on sdpa) unless the two agree within 1e-4 (a model whose positions do not start at 0
    would fail here). As the padding-free inference of text-embeddings-inference, whose varlen
    flash-attention kernels a CPU does not have.

    On a GPU (:meth:`on_device`, which :func:`.pipeline.encode_pipelined` drives), backend
    ``torch`` runs the matrix products in float16 under ``torch.autocast`` where that keeps
    the vectors: the first batch is encoded both ways, and float16 is kept only if every
    vector is within cosine :data:`HALF_AGREEMENT` of its float32 one (:attr:`half_cosine`
    records the worst); ``torch-bf16`` runs in bfloat16 there as on a CPU.
    """

    def __init__(self, st, bf16: bool = False):
        self.st = st
        self.bf16 = bf16  # the modules run under torch.autocast(bfloat16): backend torch-bf16
        self._packing: bool | None = None  # None: not checked yet; False: this model does not pack
        self._mode: str | None = None  # the pooling packing reproduces (mean or cls), once checked
        self.half: bool | None = None  # on a GPU: float16 autocast (None: not checked yet; see on_device)
        self.half_cosine: float | None = None  # the worst cosine between float16 and float32 vectors of the checked batch

    @property
    def backend(self) -> str:
        """``torch``, or ``torch-bf16``: the weights stay float32 and the matrix products run in
        bfloat16 under ``torch.autocast`` (layer norms, softmax and the pooling's sum in float32),
        vectors back in float32."""
        return "torch-bf16" if self.bf16 else "torch"

    @property
    def device(self) -> str:
        """The device the pass runs on (``cpu``, ``cuda:0``…)."""
        return str(self.st.device)

    def _ready(self):
        """The model's device, the model put in eval mode first where it is in training mode
        (``eval()`` walks every submodule: not on every pass)."""
        if self.st.training:
            self.st.eval()
        return self.st.device

    def _autocast(self, exact: bool = False):
        """bfloat16 autocast for ``torch-bf16`` (a no-op for ``torch``, or with ``exact``)."""
        import torch

        return torch.autocast(self.st.device.type, dtype=torch.bfloat16, enabled=self.bf16 and not exact)

    def __call__(self, features: dict[str, list[list[int]]]) -> np.ndarray:
        """float32 (B, d) unit vectors of one batch: padded to its longest text (or packed, see
        the class docstring), then the modules."""
        lengths = [len(ids) for ids in features["input_ids"]]
        if self._packing is not False and self._packable(lengths):
            if (
                self._packing is None
            ):  # the first time: the two ways must agree, in float32 (the layout is checked, not bf16's rounding)
                self._packing = bool(
                    np.abs(self._packed(features["input_ids"], exact=True) - self._padded(features, exact=True)).max() <= 1e-4
                )
                if not self._packing:
                    undo_varlen(self.st[0].auto_model)
            if self._packing:
                return self._packed(features["input_ids"])
        return self._padded(features)

    def _packable(self, lengths: list[int]) -> bool:
        """Whether packing these B texts pays: its estimated FLOPs per layer — linear layers
        24·h² per token, attention 4·h per pair of tokens that attend to each other, B·L² pairs
        both ways (L the longest text) — are at most :data:`PACK_GAIN` of the padded batch's, on
        a CPU (where padding costs and packing was measured). The first time, it also finds the
        model's pooling and switches its attention to :func:`.varlen.varlen_attention`; a model
        where either fails never packs."""
        real, longest, n = sum(lengths), max(lengths), len(lengths)
        if n < 2 or self.st.device.type != "cpu":
            return False
        h = 6 * self.st.get_embedding_dimension()  # 24·h² / (4·h) = 6·h: the linear cost of a token in units of one attended pair
        attention = n * longest * longest
        if h * real + attention > PACK_GAIN * (h * n * longest + attention):
            return False
        if self._packing is None and self._mode is None:
            self._mode = self._pooling()
            if self._mode is None or not use_varlen(self.st[0].auto_model):
                self._packing = False
        return self._packing is not False

    def _pooling(self) -> str | None:
        """``mean`` or ``cls`` when the model is a BERT under exactly Transformer → Pooling(mean|cls)
        (→ Normalize); None otherwise."""
        from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

        modules = list(self.st)
        if len(modules) not in (2, 3) or not isinstance(modules[0], Transformer) or not isinstance(modules[1], Pooling):
            return None
        if len(modules) == 3 and not isinstance(modules[2], Normalize):
            return None
        if (
            getattr(modules[0].auto_model.config, "model_type", None) != "bert"
            or getattr(modules[1], "include_prompt", True) is False
        ):
            return None
        mode = modules[1].pooling_mode
        return mode if mode in ("mean", "cls") else None

    def _padded(self, features: dict[str, list[list[int]]], exact: bool = False) -> np.ndarray:
        """float32 (B, d) unit vectors of one batch padded to its longest text (``exact``: in
        float32 whatever the backend)."""
        import torch

        padded = self.st.tokenizer.pad(features, return_tensors="pt")
        device = self._ready()
        with torch.inference_mode():
            vectors = self._vectors(
                {name: tensor.to(device) for name, tensor in padded.items()}, torch.bfloat16 if self.bf16 and not exact else None
            )
        return vectors.cpu().numpy().reshape(len(features["input_ids"]), -1)

    def _packed(self, ids: list[list[int]], exact: bool = False) -> np.ndarray:
        """float32 (B, d) unit vectors of B token lists laid end to end in one row, attention per
        text (``exact``: in float32 whatever the backend)."""
        import torch

        device = self._ready()
        lengths = torch.tensor([len(x) for x in ids])
        flat = torch.tensor([[t for x in ids for t in x]], device=device)
        segment = torch.repeat_interleave(torch.arange(len(ids)), lengths).to(device)
        positions = torch.cat([torch.arange(n) for n in lengths.tolist()])[None].to(device)
        model = self.st[0].auto_model
        with torch.inference_mode(), self._autocast(exact):
            hidden = (
                model(
                    input_ids=flat,
                    position_ids=positions,
                    token_type_ids=torch.zeros_like(flat),
                    **{VARLEN: Unpadding.of(lengths, device)},
                )
                .last_hidden_state[0]
                .float()
            )
            if self._mode == "cls":
                starts = torch.cumsum(lengths, 0) - lengths
                vectors = hidden[starts.to(device)]
            else:
                sums = torch.zeros(len(ids), hidden.shape[1], device=device, dtype=hidden.dtype).index_add_(0, segment, hidden)
                vectors = sums / lengths.to(device=device, dtype=hidden.dtype)[:, None]
            vectors = torch.nn.functional.normalize(vectors.float(), dim=-1)
        return vectors.cpu().numpy()

    def on_device_mode(self):
        """The context :meth:`on_device` runs in: eval mode, ``torch.inference_mode``."""
        import torch

        self._ready()
        return torch.inference_mode()

    def on_device(self, features: dict) -> "torch.Tensor":  # noqa: F821
        """float32 (B, d) unit vectors, left on the device, of one padded batch already there
        (``input_ids``, ``attention_mask``…: int64 (B, L) tensors); nothing waits for the GPU.
        The first call on a GPU decides :attr:`half` (see the class docstring), which waits once."""
        import torch

        if self.half is None:
            self.half = False
            if self.st.device.type == "cuda" and not self.bf16:
                exact = self._vectors(features, None)
                rounded = self._vectors(features, torch.float16)
                self.half_cosine = float((exact * rounded).sum(-1).min())
                self.half = self.half_cosine >= HALF_AGREEMENT
                return rounded if self.half else exact
        dtype = torch.bfloat16 if self.bf16 else torch.float16 if self.half else None
        return self._vectors(features, dtype)

    def _vectors(self, features: dict, dtype) -> "torch.Tensor":  # noqa: F821
        """The modules' unit vectors (float32, on the device) under autocast to ``dtype`` (None: none)."""
        import torch

        with torch.autocast(self.st.device.type, dtype=dtype or torch.float32, enabled=dtype is not None):
            vectors = self.st(dict(features))["sentence_embedding"]
        return torch.nn.functional.normalize(vectors.float(), dim=-1)

    def use_threads(self, n: int) -> None:
        """Run the calling thread's passes on ``n`` CPU threads (``torch.set_num_threads``:
        OpenMP's thread count is per calling thread; MKL's, where torch uses it, is the process's)."""
        import torch

        if torch.get_num_threads() != int(n):
            torch.set_num_threads(int(n))

    def prompted(self, batch: list[str]) -> np.ndarray:
        """float32 (len(batch), d) unit vectors through ``SentenceTransformer.encode``, which adds
        the default prompt (and leaves it out of the pooling where the model says so)."""
        with self._autocast():
            vectors = self.st.encode(
                batch, batch_size=len(batch), convert_to_tensor=True, normalize_embeddings=True, show_progress_bar=False
            )
        return vectors.float().cpu().numpy().reshape(len(batch), -1)


class StaticForward(TorchForward):
    """The forward pass of a static embedding model (:func:`is_static`): each text's vector is
    the mean of its tokens' vectors, then unit length. :class:`TorchForward`'s contract, in
    float32 torch: a batch's token ids are laid end to end with each text's offset, as
    ``StaticEmbedding.preprocess`` lays them, so there is no padding and no attention; the
    vectors equal ``SentenceTransformer.encode``'s for the same window."""

    def __init__(self, st):
        super().__init__(st, bf16=False)

    def __call__(self, features: dict[str, list[list[int]]]) -> np.ndarray:
        """float32 (B, d) unit vectors of B token lists (``input_ids``; a text of no tokens gives a zero row)."""
        import torch

        ids = features["input_ids"]
        lengths = [len(x) for x in ids]
        device = self._ready()
        flat = torch.tensor([t for x in ids for t in x], dtype=torch.long, device=device)
        offsets = torch.tensor(np.cumsum([0] + lengths[:-1]), dtype=torch.long, device=device)
        with torch.inference_mode():
            vectors = self.st({"input_ids": flat, "offsets": offsets})["sentence_embedding"]
            vectors = torch.nn.functional.normalize(vectors.float(), dim=-1)
        return vectors.cpu().numpy().reshape(len(ids), -1)


def truncated(vectors: np.ndarray, dim: int) -> np.ndarray:
    """The first ``dim`` columns of float32 (N, d) ``vectors``, each row renormalised to unit
    length (a zero row stays zero): float32 (N, dim). Matryoshka truncation (:meth:`Encoder.truncate`)."""
    head = np.ascontiguousarray(vectors[:, :dim], dtype=np.float32)
    norms = np.linalg.norm(head, axis=1, keepdims=True)
    return head / np.maximum(norms, 1e-12)


@dataclass(frozen=True)
class EncodingSpec:
    """Everything that decides an encoder's vectors, in one record: two encoders with equal specs
    give the same vectors (up to the backend's precision), so an index, a kept shard or a cached
    evaluation index built with one is valid for the other.

    Attributes:
        fingerprint: :attr:`Encoder.fingerprint` (weights and pooling).
        backend: one of :data:`BACKENDS`.
        dim: Matryoshka truncation (:attr:`Encoder.truncate_dim`; ``None``: every dimension).
        query_prompt, document_prompt: the texts put before queries and documents (:meth:`Encoder.prompt`).
        max_length: tokens an input is cut to.
    """

    fingerprint: str
    backend: str
    dim: int | None
    query_prompt: str
    document_prompt: str
    max_length: int

    def key(self) -> dict:
        """The spec as a JSON-ready dict (for a cache key)."""
        return dataclasses.asdict(self)


class Encoder:
    """A bi-encoder: tokenizer → transformer → pooling → L2-normalised vector.

    Wraps a :class:`sentence_transformers.SentenceTransformer` made of three modules
    (``Transformer``, ``Pooling``, ``Normalize``), so what encodr trains is what
    ``SentenceTransformer(path)`` loads. The vectors come from ``forward``: the model's own
    modules in torch by default, or an exported graph (:class:`~.onnx.OnnxForward`); the model
    stays loaded either way for its tokenizer, pooling, dimension and fingerprint, so an index
    built with one backend opens with another.

    Attributes:
        st: the underlying SentenceTransformer (a ``torch.nn.Module``).
        name: the spec it was loaded from.
        forward: the forward pass (:class:`TorchForward`'s contract).
        truncate_dim: keep the first this many dimensions of each vector, renormalised
            (Matryoshka; :meth:`truncate`); ``None``: all of them.
    """

    def __init__(self, st, name: str, forward=None):
        self.st = st
        self.name = name
        self._fingerprint: tuple | None = None  # (the weights' identity and versions, the fingerprint): see fingerprint
        self.static = (
            is_static(st) if forward is None or isinstance(forward, TorchForward) else False
        )  # an exported (ONNX) model never is one: no torch to ask
        self.forward = forward if forward is not None else (StaticForward(st) if self.static else TorchForward(st))
        self.truncate_dim: int | None = None
        self._window = STATIC_WINDOW  # a static model's max_length (a transformer's is the SentenceTransformer's)
        self.saved_window: int | None = (
            None  # the max_length save() writes, where it runs at another (a recipe's training length)
        )
        self._static_tokenizer = None
        self._pool = None  # (window, TokenizerPool) for encoding on a GPU (_gpu_pool)

    def truncate(self, dim: int | None) -> None:
        """Make :meth:`encode` keep the first ``dim`` dimensions of each vector, renormalised to
        unit length (Matryoshka representation learning, Kusupati et al. 2022, §3: a model
        trained with the loss summed over nested prefixes keeps most of its quality in each
        prefix; one trained without it loses more — ``bench/quantize.py`` measures both).
        sentence-transformers' ``truncate_dim`` does the same, then normalises.

        Args:
            dim: 1 ≤ dim ≤ the model's full dimension; ``None`` or the full dimension: no truncation.

        Raises:
            EncodrError: ``dim`` outside [1, full dimension].
        """
        full = int(self.st.get_embedding_dimension())
        if dim is not None and not 1 <= dim <= full:
            raise EncodrError(
                f"{S.dim} {dim} is outside what {self.name} gives (1 to {full}); pass a {S.dim} from 1 to {full}, or drop it"
            )
        self.truncate_dim = None if dim is None or dim == full else int(dim)

    @property
    def pooling(self) -> str:
        """Pooling mode of the model: ``cls``, ``mean``, …; ``static`` for a static model (the mean of its token vectors)."""
        from sentence_transformers.sentence_transformer.modules import Pooling

        if self.static:
            return "static"

        for module in self.st:
            if isinstance(module, Pooling):
                mode = module.pooling_mode
                return mode if isinstance(mode, str) else "+".join(mode)
        return "unknown"

    @property
    def dimension(self) -> int:
        """Embedding dimension d of :meth:`encode`'s vectors (:attr:`truncate_dim` when set)."""
        return self.truncate_dim or int(self.st.get_embedding_dimension())

    @property
    def tokenizer(self):
        """The Hugging Face (fast) tokenizer; a static model's Rust ``tokenizers.Tokenizer`` comes
        wrapped in a ``PreTrainedTokenizerFast`` with its special tokens named, so passage
        splitting and the recipes use one interface. Its mask token is its pad token: Mirror-BERT's
        span masking (§2) then deletes the span from the text's bag of tokens
        (:class:`~encodr.models.static.PaddedStatic` drops padding), which is what masking
        means for a model that averages token vectors without attention."""
        if not self.static:
            return self.st.tokenizer
        if self._static_tokenizer is None:
            from transformers import PreTrainedTokenizerFast

            vocab = self.st[0].tokenizer.get_vocab()
            named = {}
            for key, spellings in STATIC_SPECIALS:
                found = next((t for t in spellings if t in vocab), None)
                if found is not None:
                    named[key] = found
            if (
                "pad_token" in named
            ):  # masking a span with the pad token, which PaddedStatic drops, deletes it from the bag of tokens
                named["mask_token"] = named["pad_token"]
            self._static_tokenizer = PreTrainedTokenizerFast(tokenizer_object=self.st[0].tokenizer, **named)
        return self._static_tokenizer

    @property
    def transformer(self):
        """The Hugging Face transformer (``PreTrainedModel``) inside the encoder.

        Raises:
            EncodrError: a static model, which has none.
        """
        if self.static:
            raise EncodrError(
                f"model '{self.name}' is a static embedding model: it has no transformer (no dropout, attention or "
                "positions) for this to change"
            )
        return self.st[0].auto_model

    @property
    def module(self):
        """The ``torch.nn.Module`` a recipe trains: the SentenceTransformer, which takes padded
        token batches (``input_ids``, ``attention_mask``: (B, T)) and gives ``sentence_embedding``;
        for a static model the same behind :class:`~encodr.models.static.PaddedStatic`, which
        turns such a batch into the token ids and offsets ``StaticEmbedding`` reads."""
        if not self.static:
            return self.st
        from .static import PaddedStatic

        tokenizer = self.tokenizer
        return PaddedStatic(
            self.st, [i for i in (tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id) if i is not None]
        )

    @property
    def max_length(self) -> int:
        """Maximum sequence length in tokens; longer inputs are truncated (:func:`window`; a
        static model: :data:`STATIC_WINDOW` unless set).

        Raises:
            EncodrError: see :func:`window`.
        """
        return self._window if self.static else window(self.st, self.name)

    @max_length.setter
    def max_length(self, value: int) -> None:
        if self.static:
            self._window = int(value)
        else:
            self.st.max_seq_length = int(value)

    @property
    def backend(self) -> str:
        """The forward pass's backend: one of :data:`BACKENDS`."""
        return self.forward.backend

    @property
    def device(self) -> str:
        """The device the forward pass runs on (``cpu``, ``cuda:0``…)."""
        return self.forward.device

    @property
    def batch_size(self) -> int:
        """Texts per forward pass when none is given: :data:`BATCH_SIZES` for this backend and
        device type (measured with ``bench/encode_speed.py --batch-sizes``)."""
        kind = "cpu" if is_onnx(self.backend) else self.device.split(":")[0]
        return BATCH_SIZES.get((self.backend, kind), 32)

    @property
    def spec(self) -> EncodingSpec:
        """What decides this encoder's vectors (:class:`EncodingSpec`; reads every weight, as :attr:`fingerprint` does)."""
        return EncodingSpec(
            self.fingerprint, self.backend, self.truncate_dim, self.prompt("query"), self.prompt("document"), int(self.max_length)
        )

    @property
    def fingerprint(self) -> str:
        """SHA-256 (first 16 hex digits) of the weights and pooling: two encoders with the same
        fingerprint give the same vectors (up to the backend's precision). Kept until a weight
        changes: each tensor's storage and version counter (which every in-place update, an
        optimiser step included, advances) are compared first, and the weights are read and
        hashed again only when one differs."""
        state = self.st.state_dict()
        key = (self.pooling, tuple((name, t.data_ptr(), t._version) for name, t in state.items()))
        if self._fingerprint is not None and self._fingerprint[0] == key:
            return self._fingerprint[1]
        h = hashlib.sha256(self.pooling.encode())
        for name, tensor in sorted(state.items()):
            h.update(name.encode())
            h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        self._fingerprint = (key, h.hexdigest()[:16])
        return self._fingerprint[1]

    def use_threads(self, n: int) -> None:
        """Make the calling thread's forward passes use ``n`` CPU threads (≥ 1), leaving other
        threads' as they were: the server's batcher runs one pass per worker thread at once,
        each on its share of the cores (:class:`encodr.serve.batcher.DynamicBatcher`)."""
        self.forward.use_threads(max(1, int(n)))

    def prompt(self, role: str) -> str:
        """The text this model puts before an input of ``role`` (``query`` or ``document``) in
        asymmetric search: its sentence-transformers ``prompts`` entry ``query``; for a
        document the first non-empty of ``document``, ``passage`` and ``corpus``. E5 (Wang et
        al. 2022, §4.1) is trained with ``query: `` and ``passage: ``; sentence-transformers'
        own ``encode_document`` takes the first entry present, even an empty one, which for
        an E5 model saved by sentence-transformers 6 (``document: ""`` beside ``passage``)
        drops the document prefix. ``""`` for a model without prompts."""
        prompts = getattr(self.st, "prompts", None) or {}
        keys = ("query",) if role == "query" else ("document", "passage", "corpus")
        return next((prompts[k] for k in keys if prompts.get(k)), "")

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int | None = None,
        progress: bool = False,
        on_batch: Callable[[int], None] | None = None,
        prompt: str | None = None,
    ) -> np.ndarray:
        """Encode texts for inference (eval mode, no gradients), longest first in batches of
        similar length, so little of each batch is padding.

        Each text is tokenized exactly once, all of them up front (truncated at
        :attr:`max_length`, not padded): the token lengths order the batches, and each batch is
        padded to its longest text and run through the model's own modules. Unlike
        ``SentenceTransformer.encode``, which sorts by characters and tokenizes batch by batch,
        it sorts by tokens, reports each batch through ``on_batch`` (the index's progress bar),
        and runs any backend's forward pass (:attr:`forward`); an ONNX or OpenVINO pass given
        :data:`STREAM_BATCHES` batches or more runs several at once, on its streams
        (:func:`streamed`), each batch's vectors the same as one at a time. On a GPU the texts go through
        :func:`.pipeline.encode_pipelined` instead: tokenizer processes ahead of the forward pass,
        batches of a token budget (``batch_size`` does not apply), float16 where it keeps the
        vectors (:class:`TorchForward`). A model with a ``default_prompt_name`` goes through
        ``SentenceTransformer.encode``, which adds the prompt.

        Args:
            texts: N strings.
            batch_size: strings per forward pass (default: :attr:`batch_size`).
            progress: show a tqdm progress bar.
            on_batch: called with the number of texts of each finished batch.
            prompt: text put before each input (:meth:`prompt`: search encodes queries and
                documents with their roles' prompts); given, it replaces any default prompt.

        Returns:
            float32 array (N, d) of unit-norm vectors (d = :attr:`dimension`: the first
            :attr:`truncate_dim` dimensions, renormalised, when set); cosine similarity is a
            dot product.
        """
        texts = [prompt + t for t in texts] if prompt else list(texts)
        batch_size = batch_size or self.batch_size
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        prompted = prompt is None and getattr(self.st, "default_prompt_name", None) is not None
        if not prompted and self._gpu_pool() is not None:
            return self._encode_pipelined(texts, out, on_batch)
        bulk = not prompted and -(-len(texts) // batch_size) >= STREAM_BATCHES  # batches enough to run on streams
        if bulk and hasattr(self.forward, "prepare_streams"):
            self.forward.prepare_streams()  # its sessions made while the texts are tokenized
        features = self._tokenize(texts)
        lengths = np.fromiter((len(x) for x in features["input_ids"]), dtype=np.int64, count=len(texts))
        order = np.argsort(-lengths, kind="stable")
        batches = [order[start : start + batch_size] for start in range(0, len(texts), batch_size)]
        if progress:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc="Batches")

        def run(rows: np.ndarray) -> np.ndarray:
            if prompted:
                return self.forward.prompted([texts[i] for i in rows])
            return self.forward({name: [values[i] for i in rows] for name, values in features.items()})

        streams = self._streams() if bulk else 1
        passes = ((rows, run(rows)) for rows in batches) if streams == 1 else streamed(run, batches, streams, self.forward)
        for rows, vectors in passes:
            out[rows] = vectors if self.truncate_dim is None else truncated(vectors, self.truncate_dim)
            if on_batch is not None:
                on_batch(len(rows))
        return out

    def _streams(self) -> int:
        """How many batches the forward pass runs at once in a bulk encode (its ``streams()``;
        1 for one without, torch's)."""
        streams = getattr(self.forward, "streams", None)
        return 1 if streams is None else int(streams())

    def _gpu_pool(self):
        """The :class:`~.pipeline.TokenizerPool` that feeds this encoder's GPU, made on first
        use and again when :attr:`max_length` changes; None where the forward pass is not a
        transformer's torch pass on a CUDA device (a CPU, ONNX, a static model)."""
        if self.static or type(self.forward) is not TorchForward or not self.device.startswith("cuda"):
            return None
        from .pipeline import TokenizerPool

        if self._pool is None or self._pool[0] != self.max_length:
            if self._pool is not None:
                self._pool[1].close()
            self._pool = (self.max_length, TokenizerPool(self.st.tokenizer, self.max_length, pin=True))
        return self._pool[1]

    def _encode_pipelined(self, texts: list[str], out: np.ndarray, on_batch: Callable[[int], None] | None) -> np.ndarray:
        """:meth:`encode` on a GPU, through :func:`.pipeline.encode_pipelined` (its batches are a
        token budget, not ``batch_size``); ``out``: float32 (N, :attr:`dimension`)."""
        from .pipeline import encode_pipelined

        full = (
            out if self.truncate_dim is None else np.empty((len(texts), int(self.st.get_embedding_dimension())), dtype=np.float32)
        )
        encode_pipelined(self.forward, self._gpu_pool(), texts, full, on_batch)
        if self.truncate_dim is not None:
            out[:] = truncated(full, self.truncate_dim)
        return out

    def _tokenize(self, texts: list[str]) -> dict[str, list[list[int]]]:
        """Token ids (and the tokenizer's other inputs) of each text, truncated, not padded (a
        static model: ``input_ids`` only, without special tokens, as ``StaticEmbedding.preprocess``)."""
        if self.static:
            encodings = self.st[0].tokenizer.encode_batch(list(texts), add_special_tokens=False)
            return {"input_ids": [e.ids[: self._window] for e in encodings]}
        return tokenize(self.st, texts)

    def token_lengths(self, texts: Sequence[str]) -> np.ndarray:
        """int array (N,): each text's length in tokens, capped at :attr:`max_length`."""
        ids = self._tokenize(list(texts))["input_ids"]
        return np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(ids))

    def pair_scores(
        self, texts1: Sequence[str], texts2: Sequence[str], batch_size: int = 128, progress: bool = False
    ) -> np.ndarray:
        """Cosine similarity of each pair (each distinct text encoded once).

        Args:
            texts1, texts2: N strings each; pair i is (texts1[i], texts2[i]).
            batch_size: strings per forward pass.
            progress: show a progress bar.

        Returns:
            float32 array (N,), values in [−1, 1].
        """
        texts = list(dict.fromkeys([*texts1, *texts2]))
        row = {t: i for i, t in enumerate(texts)}
        vectors = self.encode(texts, batch_size=batch_size, progress=progress)
        a = vectors[[row[t] for t in texts1]]
        b = vectors[[row[t] for t in texts2]]
        return np.sum(a * b, axis=1).astype(np.float32)

    def save(self, path: Path) -> None:
        """Save in the sentence-transformers format, with everything this encoder needs back:
        ``SentenceTransformer(path)`` loads it with its prompts and its Matryoshka
        :attr:`truncate_dim`, and :func:`~encodr.models.load_encoder` reads :data:`SAVED`
        beside it (the backend) and gives an equal encoder: a matched pair. The window saved is
        :attr:`saved_window` where set (the model's own, when a recipe ran it at its training
        length), else :attr:`max_length`."""
        import json

        before, running = getattr(self.st, "truncate_dim", None), self.max_length
        self.st.truncate_dim = self.truncate_dim
        if self.saved_window is not None:
            self.max_length = self.saved_window
        try:
            self.st.save(str(path))
        finally:
            self.st.truncate_dim = before
            self.max_length = running
        (Path(path) / SAVED).write_text(json.dumps({"backend": self.backend, "truncate_dim": self.truncate_dim}) + "\n")


def streamed(run: Callable[[np.ndarray], np.ndarray], batches: Sequence[np.ndarray], streams: int, forward) -> Iterator:
    """``(rows, run(rows))`` for each batch, in order, the passes running on ``streams`` worker
    threads at once (each first calls ``forward.enter_stream(i)``, i < streams), at most
    2·``streams`` batches ahead of the consumer; a pass's error is raised at its turn, and the
    passes not started are dropped. onnxruntime and OpenVINO release the GIL in a pass."""
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    ids = itertools.count()
    pool = ThreadPoolExecutor(streams, "encodr-stream", initializer=lambda: forward.enter_stream(next(ids)))
    pending: deque = deque()
    try:
        for rows in batches:
            pending.append((rows, pool.submit(run, rows)))
            if len(pending) >= 2 * streams:
                rows, future = pending.popleft()
                yield rows, future.result()
        while pending:
            rows, future = pending.popleft()
            yield rows, future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def check_backend(backend: str, auto: bool = False) -> None:
    """Raises EncodrError (naming the choices) unless ``backend`` is one of :data:`BACKENDS`
    (or :data:`AUTO_BACKEND`, where ``auto`` allows it)."""
    choices = BACKENDS + ((AUTO_BACKEND,) if auto else ())
    if backend not in choices:
        one_of("backend", backend, tuple(choices))


SAVED = "encodr_encoder.json"  # beside a saved encoder: what sentence-transformers' files do not keep (the backend)


def saved_settings(path: Path) -> dict:
    """What :meth:`Encoder.save` recorded beside the model at ``path`` (``backend``, ``truncate_dim``); ``{}`` for other
    folders."""
    import json

    try:
        return json.loads((Path(path) / SAVED).read_text())
    except (OSError, ValueError):
        return {}


BF16_FLAGS = ("avx512_bf16", "amx_bf16")  # Linux CPU flags of native bfloat16 matrix products (AVX512-BF16, AMX)
AMX_FLAGS = ("amx_bf16",)  # … and of the tile unit (AMX), where bfloat16 beats onnxruntime's float32


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> list[str]:
    """The ``flags`` of Linux's ``/proc/cpuinfo`` at ``cpuinfo`` ([] where it cannot be read: another OS)."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return []
    return next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), [])


def cpu_has_bf16(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Whether this CPU multiplies bfloat16 matrices natively: one of :data:`BF16_FLAGS` among
    the ``flags`` of ``cpuinfo`` (Linux's ``/proc/cpuinfo``). False where it cannot be read
    (another OS): without these instructions oneDNN emulates bfloat16 and ``torch-bf16`` is
    several times slower than float32 (docs/benchmarks/cpu_precision.md)."""
    return any(flag in cpu_flags(cpuinfo) for flag in BF16_FLAGS)


def cpu_has_amx(cpuinfo: str | Path = "/proc/cpuinfo") -> bool:
    """Whether this CPU has AMX's bfloat16 tiles (:data:`AMX_FLAGS` among ``cpuinfo``'s flags)."""
    return any(flag in cpu_flags(cpuinfo) for flag in AMX_FLAGS)


def choose_backend(
    backend: str,
    device: str,
    has_bf16: Callable[[], bool] | None = None,
    has_onnx: Callable[[], bool] | None = None,
    has_amx: Callable[[], bool] | None = None,
    has_openvino: Callable[[], bool] | None = None,
) -> str:
    """The backend ``auto`` stands for (any other ``backend`` is returned as it is): the fastest
    that keeps the vectors, on this machine, as ``bench/index_process.py`` measured them (whole
    ``encodr index`` processes; docs/benchmarks/index_process.md).

    - On a GPU: ``torch`` (float32, the vectors ``SentenceTransformer.encode`` gives).
    - On a CPU with AMX (``has_amx``, default :func:`cpu_has_amx`): ``openvino`` where it is
      installed (``has_openvino``, default :func:`openvino_available`): OpenVINO runs the ONNX
      export in bfloat16 on AMX's tiles, without importing torch, and its vectors are checked
      against torch's (cosine ≥ :data:`~encodr.models.onnx.AGREEMENT`) once per model and
      precision, and refused otherwise (:func:`~encodr.models.onnx.onnx_encoder`). Else
      ``torch-bf16``, which keeps quality within 0.5 of float32's on STS-B and SciFact nDCG@10
      (``bench/cpu_precision.py``; docs/benchmarks/cpu_precision.md).
    - Else, where onnxruntime is installed (``has_onnx``, default :func:`onnx_available`):
      ``onnx`` (float32). On a CPU with AVX512-BF16 but no AMX a whole ``encodr index`` of 5,000
      texts ends sooner with it than with ``torch-bf16`` (no torch to import and load), and a query
      encodes faster, though ``torch-bf16`` encodes a long corpus faster there
      (``bench/backend_choice.py``); on every CPU without AMX measured it is faster than ``torch``.
      Its export is checked against the torch vectors, cosine ≥
      :data:`~encodr.models.onnx.AGREEMENT`, and refused otherwise
      (:func:`~encodr.models.onnx.export`), when a build falls back to ``torch``.
    - Else ``torch-bf16`` on a CPU with native bfloat16 products (``has_bf16``, default
      :func:`cpu_has_bf16`), and ``torch`` where bfloat16 would be emulated (several times slower).

    Args:
        backend: one of :data:`BACKENDS` or :data:`AUTO_BACKEND`.
        device: the device the model runs on (``cpu``, ``cuda:0``…).
        has_bf16, has_onnx, has_amx, has_openvino: what this machine has (defaults: read from it).
    """
    if backend != AUTO_BACKEND:
        return backend
    if not str(device).startswith("cpu"):
        return "torch"
    if (has_amx or cpu_has_amx)():
        return "openvino" if (has_openvino or openvino_available)() else "torch-bf16"
    if (has_onnx or onnx_available)():
        return "onnx"
    return "torch-bf16" if (has_bf16 or cpu_has_bf16)() else "torch"


def _installed(module: str) -> bool:
    """Whether ``module`` can be imported (found, not imported: no start-up cost)."""
    import importlib.util

    return importlib.util.find_spec(module) is not None


def openvino_available() -> bool:
    """Whether OpenVINO can be imported (:func:`_installed`)."""
    return _installed("openvino")


def onnx_available() -> bool:
    """Whether onnxruntime can be imported (:func:`_installed`)."""
    return _installed("onnxruntime")
