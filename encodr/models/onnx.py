"""ONNX Runtime backends for a bi-encoder: ``onnx`` (float32) and ``onnx-int8`` (dynamic int8
quantisation of the matrix multiplications), for fast encoding on a CPU.

Route, and why. sentence-transformers has its own ONNX backend
(``SentenceTransformer(path, backend="onnx")``) and ``export_dynamic_quantized_onnx_model``, but
both go through ``optimum-onnx``, whose only release (0.1.0) requires ``transformers<4.58``;
encodr runs on transformers 5, so pip would have to downgrade it. encodr therefore exports the
whole sentence-transformers pipeline (Transformer → Pooling → Normalize, so the pooling is the
one the model was trained with) with torch's own exporter (``torch.onnx.export``, TorchScript
route), quantises it with onnxruntime's ``quantize_dynamic`` and runs it with onnxruntime.

Quantisation settings (what optimum's ``avx512_vnni`` dynamic config does, minus its op list):
signed int8 weights, one scale per output channel, MatMul only (embeddings, LayerNorm and
softmax stay float32). Measured on 2,000 Wikipedia sentences with MiniLM, the mean cosine between
int8 and float32 vectors is 0.993 per channel and 0.963 with one scale per tensor.

Exports are cached in the workspace, ``$ENCODR_HOME/onnx/<weights fingerprint>/model.onnx`` and
``model_qint8.onnx``, keyed by the weights (a re-tuned model in the same folder gets a new
export), and written atomically (a temporary file renamed into place).
"""

from __future__ import annotations

import logging
import os
import threading
import warnings
from pathlib import Path

import numpy as np

from ..errors import EncodrError, first_line
from ..outputs import atomic_file
from .encoder import Encoder, tokenize

FILES = {"onnx": "model.onnx", "onnx-int8": "model_qint8.onnx"}
OPSET = 17


def export_dir(encoder: Encoder) -> Path:
    """``$ENCODR_HOME/onnx/<fingerprint>``: where this encoder's exports are cached."""
    from ..paths import home

    return home() / "onnx" / encoder.fingerprint


def _input_names(encoder: Encoder) -> list[str]:
    """The tokenizer outputs the model takes (``token_type_ids`` for BERT, not for XLM-R)."""
    keys = encoder.tokenizer(["a"], return_tensors="pt").keys()
    return [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in keys]


def export(encoder: Encoder, backend: str) -> Path:
    """The ONNX file of ``encoder`` for ``backend``, exported (and quantised) on first use.

    Args:
        encoder: a torch :class:`~encodr.models.Encoder`.
        backend: ``onnx`` or ``onnx-int8``.

    Returns:
        Path of the cached ``.onnx`` file.

    Raises:
        EncodrError: the exporter or the quantiser fails (named, with the first line of the reason).
    """
    import torch

    folder = export_dir(encoder)
    target = folder / FILES[backend]
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    if backend == "onnx-int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        source = export(encoder, "onnx")
        root = logging.getLogger()
        level = root.level
        root.setLevel(logging.ERROR)  # onnxruntime's "Please consider to run pre-processing" goes to the root logger, on every first use
        with atomic_file(target, suffix=".onnx") as tmp:
            try:
                quantize_dynamic(str(source), str(tmp), op_types_to_quantize=["MatMul"], per_channel=True, weight_type=QuantType.QInt8)
            except Exception as exc:
                raise EncodrError(f"could not quantise {source} to int8 ({first_line(exc)}); use --backend onnx or torch") from None
            finally:
                root.setLevel(level)
        return target

    names = _input_names(encoder)
    st = encoder.st.to("cpu").eval()

    class Pipeline(torch.nn.Module):
        """The sentence-transformers modules as one graph: token ids → unit sentence vector."""

        def __init__(self):
            super().__init__()
            self.st = st

        def forward(self, *inputs):
            return self.st(dict(zip(names, inputs)))["sentence_embedding"]

    sample = encoder.tokenizer(["an example", "a slightly longer example sentence"], padding=True, return_tensors="pt")
    axes = {name: {0: "batch", 1: "tokens"} for name in names}
    with atomic_file(target, suffix=".onnx") as tmp, torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tracer's notes on Python branches: they take the same side for any batch
        try:
            torch.onnx.export(Pipeline(), tuple(sample[n] for n in names), str(tmp), input_names=names, output_names=["sentence_embedding"],
                              dynamic_axes={**axes, "sentence_embedding": {0: "batch"}}, opset_version=OPSET, dynamo=False)  # fmt: skip
        except Exception as exc:
            raise EncodrError(f"could not export {encoder.name} to ONNX ({first_line(exc)}); use --backend torch") from None
    return target


class OnnxForward:
    """The forward pass in onnxruntime on the CPU: the exported graph of the whole pipeline
    (:func:`export`), with :class:`~encodr.models.encoder.TorchForward`'s contract."""

    device = "cpu"

    def __init__(self, st, backend: str, path: Path):
        self.st, self.backend, self.path = st, backend, path
        self.session = self._session(None)
        self.inputs = [i.name for i in self.session.get_inputs()]
        self._local = threading.local()  # a thread's own session, where use_threads made one

    def _session(self, threads: int | None):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            options.intra_op_num_threads = threads
        if os.environ.get("OMP_WAIT_POLICY", "").upper() == "PASSIVE":  # query-at-a-time commands and the server: idle threads sleep, as torch's do
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(str(self.path), options, providers=["CPUExecutionProvider"])

    def use_threads(self, n: int) -> None:
        """Run the calling thread's passes on ``n`` CPU threads: a session of its own for each
        ``n`` it asks for (the graph loaded again, once), since onnxruntime's thread count is a
        session's."""
        sessions = self._local.__dict__.setdefault("sessions", {})
        if int(n) not in sessions:
            sessions[int(n)] = self._session(int(n))
        self._local.session = sessions[int(n)]

    def __call__(self, features: dict[str, list[list[int]]]) -> np.ndarray:
        """float32 (B, d) unit vectors of one batch of unpadded token lists."""
        padded = self.st.tokenizer.pad(features, return_tensors="np")
        session = getattr(self._local, "session", self.session)
        (vectors,) = session.run(None, {name: padded[name].astype(np.int64) for name in self.inputs})
        return np.asarray(vectors, dtype=np.float32)

    def prompted(self, batch: list[str]) -> np.ndarray:
        """The prompt that ``SentenceTransformer.encode`` would add, then the graph."""
        prompt = self.st.prompts.get(self.st.default_prompt_name, "")
        return self(tokenize(self.st, [prompt + text for text in batch]))


def onnx_encoder(encoder: Encoder, backend: str) -> Encoder:
    """``encoder`` with its forward pass in onnxruntime (``backend``: ``onnx`` or ``onnx-int8``),
    exported on first use (:func:`export`).

    Raises:
        EncodrError: onnxruntime is not installed, or the export fails.
    """
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        raise EncodrError(f"--backend {backend} needs onnxruntime: pip install onnxruntime onnx (or use --backend torch)") from None
    return Encoder(encoder.st, encoder.name, OnnxForward(encoder.st, backend, export(encoder, backend)))
