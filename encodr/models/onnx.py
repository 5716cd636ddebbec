"""Backends that run a bi-encoder's ONNX export on a CPU: onnxruntime's ``onnx`` (float32) and
``onnx-int8`` (dynamic int8 quantisation of the matrix multiplications), and ``openvino`` (the
float32 graph compiled by OpenVINO, which runs it in bfloat16 on a CPU with AMX or AVX512-BF16).

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

Exports are cached in the workspace, ``$ENCODR_HOME/onnx/v<EXPORT_VERSION>/<weights fingerprint>/model.onnx`` and
``model_qint8.onnx``, keyed by the weights (a re-tuned model in the same folder gets a new
export), and written atomically (a temporary file renamed into place); OpenVINO keeps its
compiled models beside them (:data:`OPENVINO_CACHE`).

Opening without torch. Beside the graphs, the first export saves the model's tokenizer
(``tokenizer.json``, the Rust tokenizer the Hugging Face one wraps) and a record of what
encoding needs (fingerprint, dimension, pooling, prompts, padding), and
``$ENCODR_HOME/onnx/sources/<key>.json`` points from the model folder — its files' names,
sizes and modification times, and the pooling asked for (:func:`source_key`) — to that
export. A later load of the same folder is an :class:`ExportedEncoder`: onnxruntime and
``tokenizers`` only, without importing torch, transformers or sentence-transformers, which
is most of a small ``encodr index``'s fixed cost (``bench/index_process.py``). Anything
beyond encoding (saving, training, sentence-transformers' multi-process pool) loads the
full model on first use. A model folder rewritten in place (encodr writes models with a
new folder swapped in) changes its key, so it is exported again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import warnings
import weakref
from pathlib import Path

import numpy as np

from ..cpus import usable_cpus
from ..errors import EncodrError, S, first_line
from ..outputs import atomic_file
from .encoder import Encoder, tokenize
from .standin import StandIn

FILES = {"onnx": "model.onnx", "onnx-int8": "model_qint8.onnx", "openvino": "model.onnx"}  # openvino: the float32 graph
OPENVINO_RECORD = "openvino.json"  # beside the graphs: OpenVINO's agreement with torch, per inference precision
OPENVINO_CACHE = "openvino_cache"  # beside the graphs: OpenVINO's compiled models (its CACHE_DIR), read on later loads
OPSET = 17
# onnxruntime's graph fusions a session leaves out: its fused SkipLayerNormalization CPU kernel runs about five times
# slower than the Add and LayerNormalization it replaces (bench/notes/index_process.md). The float32 graph has none to
# fuse; in the int8 graph the sum's float32 rounding can move an activation by one int8 step (its quantisation noise)
DISABLED_FUSIONS = ("SkipLayerNormFusion",)
EXPORT_VERSION = 2  # in the cache's path: a change to how graphs are exported makes new ones (2: eager attention)
RECORD = "encoder.json"  # beside the graphs: what an ExportedEncoder needs
TOKENIZER = "tokenizer.json"


def export_dir(encoder: Encoder) -> Path:
    """``$ENCODR_HOME/onnx/<fingerprint>``: where this encoder's exports are cached."""
    return _folder(encoder.fingerprint)


def _folder(fingerprint: str) -> Path:
    from ..paths import home

    return home() / "onnx" / f"v{EXPORT_VERSION}" / fingerprint


def _input_names(encoder: Encoder) -> list[str]:
    """The tokenizer outputs the model takes (``token_type_ids`` for BERT, not for XLM-R)."""
    keys = encoder.tokenizer(["a"], return_tensors="pt").keys()
    return [k for k in ("input_ids", "attention_mask", "token_type_ids") if k in keys]


def export(encoder: Encoder, backend: str, folder: Path | None = None) -> Path:
    """The ONNX file of ``encoder`` for ``backend``, exported (and quantised) on first use.

    Args:
        encoder: a torch :class:`~encodr.models.Encoder`.
        backend: ``onnx``, ``onnx-int8`` or ``openvino`` (which runs the ``onnx`` file).
        folder: where the file goes; default the workspace's cache (:func:`export_dir`). A run
            that exports models it will not keep (the judged recipe's folds) passes a temporary one.

    Returns:
        Path of the cached ``.onnx`` file.

    Raises:
        EncodrError: the exporter or the quantiser fails (named, with the first line of the reason).
    """
    import torch

    folder = export_dir(encoder) if folder is None else folder
    target = folder / FILES[backend]
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    if backend == "onnx-int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        source = export(encoder, "onnx", folder)
        root = logging.getLogger()
        level = root.level
        root.setLevel(
            logging.ERROR
        )  # onnxruntime's "Please consider to run pre-processing" goes to the root logger, on every first use
        with atomic_file(target, suffix=".onnx") as tmp:
            try:
                quantize_dynamic(
                    str(source), str(tmp), op_types_to_quantize=["MatMul"], per_channel=True, weight_type=QuantType.QInt8
                )
            except Exception as exc:
                raise EncodrError(
                    f"could not quantise {source} to int8 ({first_line(exc)}); use {S.backend} onnx or torch"
                ) from None
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
            with _eager_attention(st):  # traced eager; the agreement below is checked against the model as it runs
                torch.onnx.export(
                    Pipeline(),
                    tuple(sample[n] for n in names),
                    str(tmp),
                    input_names=names,
                    output_names=["sentence_embedding"],
                    dynamic_axes={**axes, "sentence_embedding": {0: "batch"}},
                    opset_version=OPSET,
                    dynamo=False,
                )
        except Exception as exc:
            raise EncodrError(f"could not export {encoder.name} to ONNX ({first_line(exc)}); use {S.backend} torch") from None
        agreement = _agreement(encoder, tmp)
        if agreement < AGREEMENT:  # the file is not kept: the next use tries again, and fails the same way
            raise EncodrError(
                f"the ONNX export of {encoder.name} gives other vectors than torch (cosine {agreement:.5f} < "
                f"{AGREEMENT}); use {S.backend} torch"
            )
    return target


@contextlib.contextmanager
def _eager_attention(st):
    """Trace ``st``'s transformers models with their plain ("eager") attention, then give back
    the one they had: traced, the scaled-dot-product attention becomes a graph that onnxruntime
    runs slower than the plain one (``bench/notes/index_process.md``); the vectors are the same
    (the export's agreement check, :data:`AGREEMENT`)."""
    models = [m for m in st.modules() if hasattr(m, "set_attn_implementation") and hasattr(m, "config")]
    before = [getattr(m.config, "_attn_implementation", None) for m in models]
    try:
        for m in models:
            try:
                m.set_attn_implementation("eager")
            except (ValueError, TypeError, AttributeError):  # a model without it keeps its own
                pass
        yield
    finally:
        for m, name in zip(models, before):
            if name is not None:
                try:
                    m.set_attn_implementation(name)
                except (ValueError, TypeError, AttributeError):
                    m.config._attn_implementation = name


AGREEMENT = 0.9999  # the least cosine between an fp32 export's vectors and torch's, on AGREEMENT_TEXTS
AGREEMENT_TEXTS = (
    "a",
    "The pump needs four bar of pressure.",
    "Der Kessel hängt an einer Wand, die sein Gewicht trägt.",
    "Error code XJ4471: the circulation pump lost pressure after the valve closed, twice in one week.",
)


def agreement(first: Encoder, second: Encoder) -> float:
    """The least cosine between two encoders' vectors of :data:`AGREEMENT_TEXTS`: how far another
    forward pass of the same model (an export, a lower precision) moves its vectors."""
    texts = list(AGREEMENT_TEXTS)
    return float(np.min(np.sum(first.encode(texts) * second.encode(texts), axis=1)))


def _agreement(encoder: Encoder, path: Path) -> float:
    """:func:`agreement` of ``encoder``'s torch forward pass and the ONNX file at ``path`` (a
    check of the export, made once)."""
    return agreement(encoder, Encoder(encoder.st, encoder.name, OnnxForward(encoder.st, "onnx", path)))


class OnnxForward:
    """The forward pass in onnxruntime on the CPU: the exported graph of the whole pipeline
    (:func:`export`), with :class:`~encodr.models.encoder.TorchForward`'s contract."""

    device = "cpu"

    def __init__(self, st, backend: str, path: Path):
        self.st, self.backend, self.path = st, backend, path
        self.inputs: list[str] = []  # the graph's input names, read from the first session made
        self._default = None  # the session on all the cores (session), made on first use
        self._local = threading.local()  # the session a thread's use_threads chose
        self._sessions: dict[int, object] = {}  # thread count → its session, shared by the threads that ask for it
        self._streams: list | None = None  # a bulk encode's sessions, one a stream (streams)
        self._making = threading.Lock()

    @property
    def session(self):
        """The session of a pass on all the cores (OpenVINO's: one pass at a time), made on first
        use: a bulk encode on streams (:meth:`streams`) never needs it, and a build that loads it
        only to run on streams would load the graph twice."""
        if self._default is None:
            with self._making:
                if self._default is None:
                    self._default = self._session(None)
        return self._default

    def _session(self, threads: int | None, hint: str = "LATENCY"):
        if self.backend == "openvino":
            return self._with_inputs(OpenVinoSession(self.path, threads, hint=hint))
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads is not None:
            options.intra_op_num_threads = threads
        # idle threads sleep rather than spin, for a whole index build too: a spinning thread holds a core that a second
        # program (or the tokenizer, or FAISS) wants, and bench/index_process.py --load 1 measured spinning's cost there
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return self._with_inputs(
            ort.InferenceSession(
                str(self.path), options, providers=["CPUExecutionProvider"], disabled_optimizers=list(DISABLED_FUSIONS)
            )
        )

    def _with_inputs(self, session):
        """``session``, whose input names fill :attr:`inputs` if no session made before did."""
        if not self.inputs:
            self.inputs = [i.name for i in session.get_inputs()]
        return session

    def use_threads(self, n: int) -> None:
        """Run the calling thread's passes on ``n`` CPU threads: on a session made for ``n``
        (the graph loaded again, once per ``n``), since onnxruntime's thread count is a session's.
        Threads that ask for the same ``n`` share its session (onnxruntime runs concurrent calls
        of one session): a server's batching threads that take turns at one query a time then
        run it on one session, whose weights are warm, rather than on one each."""
        with self._making:
            self._local.session = self._shared(int(n))

    def _shared(self, n: int):
        """The session for ``n`` threads that the threads asking for ``n`` share, made on first
        use (the caller holds ``_making``)."""
        if n not in self._sessions:
            self._sessions[n] = self._session(n)
        return self._sessions[n]

    def streams(self) -> int:
        """How many batches a bulk encode (:meth:`~encodr.models.Encoder.encode`) runs at once,
        each on one worker thread that first calls :meth:`enter_stream`: 1 on one CPU, or on a
        thread that chose its threads (:meth:`use_threads`: a server's batcher); else OpenVINO's
        choice for its throughput mode (``OPTIMAL_NUMBER_OF_INFER_REQUESTS``: one compiled model
        whose streams split the cores), and for onnxruntime 2, each on half the cores (one shared
        single-threaded session on 2 CPUs, else a session each). Two streams on 2 cores keep both
        busy through the single-threaded parts of a pass (softmax, layer norms, the Python
        between calls) and lose less to a second program than 2 threads that wait for each other
        in every operator (``bench/notes/index_process.md``). The sessions are made on the first
        call (compiled once more, for OpenVINO) and kept."""
        return 1 if self._one_stream() else len(self._made_streams())

    def _one_stream(self) -> bool:
        """Whether a bulk encode runs one pass at a time: one CPU, or a thread that chose its threads."""
        return usable_cpus() < 2 or getattr(self._local, "session", None) is not None

    def _made_streams(self) -> list:
        with self._making:
            if self._streams is None:
                self._streams = self._stream_sessions()
            return self._streams

    def prepare_streams(self) -> None:
        """Start making the sessions :meth:`streams` would make, on a thread of their own, and
        return: a bulk encode calls it before it tokenizes its texts, which it does meanwhile
        (onnxruntime and OpenVINO load a graph without holding the GIL). Nothing where
        :meth:`streams` would make none or they are made. An error is left to :meth:`streams`,
        which makes them again and raises it."""
        if self._one_stream() or self._streams is not None:
            return

        def make() -> None:
            with contextlib.suppress(Exception):
                self._made_streams()

        threading.Thread(target=make, name="encodr-sessions", daemon=True).start()

    def _stream_sessions(self) -> list:
        if self.backend == "openvino":
            session = self._session(None, hint="THROUGHPUT")
            return [session] * max(1, int(session.compiled.get_property("OPTIMAL_NUMBER_OF_INFER_REQUESTS")))
        threads = usable_cpus() // 2
        if threads == 1:  # one thread a call: concurrent runs of one session each run on their caller's thread
            return [self._shared(1)] * 2
        return [self._session(threads) for _ in range(2)]

    def enter_stream(self, stream: int) -> None:
        """Make the calling (worker) thread's passes those of stream ``stream`` (0 ≤ stream <
        :meth:`streams`, which must have been called)."""
        self._local.session = self._streams[stream]

    def __call__(self, features: dict[str, list[list[int]]]) -> np.ndarray:
        """float32 (B, d) unit vectors of one batch of unpadded token lists."""
        padded = self.st.tokenizer.pad(features, return_tensors="np")
        session = getattr(self._local, "session", None) or self.session
        (vectors,) = session.run(None, {name: padded[name].astype(np.int64) for name in self.inputs})
        return np.asarray(vectors, dtype=np.float32)

    def prompted(self, batch: list[str]) -> np.ndarray:
        """The prompt that ``SentenceTransformer.encode`` would add, then the graph."""
        prompt = self.st.prompts.get(self.st.default_prompt_name, "")
        return self(tokenize(self.st, [prompt + text for text in batch]))


class OpenVinoSession:
    """What :class:`OnnxForward` uses of an onnxruntime session (``get_inputs``, ``run``), over
    OpenVINO's CPU plugin compiling the same ONNX file: its ``auto`` inference precision, which is
    bfloat16 on a CPU with AMX or AVX512-BF16 and float32 elsewhere, on ``threads`` threads (None:
    OpenVINO's choice), compiled for one pass at a time (``hint`` ``LATENCY``) or for several at
    once on streams that split the cores (``THROUGHPUT``: :meth:`OnnxForward.streams`). Ours
    differs from sentence-transformers' OpenVINO backend, which goes through optimum-intel (not
    installable beside transformers 5), in running encodr's own export. The compiled model is
    kept in :data:`OPENVINO_CACHE` beside the file (OpenVINO's ``CACHE_DIR``; not where the
    folder cannot be written), so a later load reads it rather than compiling again.
    Calls from several threads are safe: each thread has its own inference request."""

    def __init__(self, path: Path, threads: int | None, hint: str = "LATENCY"):
        import openvino as ov

        config = {"PERFORMANCE_HINT": hint}
        if threads is not None:
            config["INFERENCE_NUM_THREADS"] = int(threads)
        if os.access(path.parent, os.W_OK):
            config["CACHE_DIR"] = str(path.parent / OPENVINO_CACHE)
        self.compiled = ov.Core().compile_model(str(path), "CPU", config)
        self._local = threading.local()
        self._warm()

    def _warm(self) -> None:
        """One pass of a two-token text on the calling thread. OpenVINO's Python binding fills an
        input tensor through a function whose static initialisation deadlocks when two threads
        run it first at once (each blocks in ``__cxa_guard_acquire``: a bulk encode's streams
        hung); once it has run anywhere in the process, concurrent passes are safe."""
        feeds = {i.name: np.zeros((1, 2), dtype=np.int64) for i in self.get_inputs()}
        if "attention_mask" in feeds:
            feeds["attention_mask"][:] = 1
        self.run(None, feeds)

    @property
    def precision(self) -> str:
        """The precision OpenVINO runs the matrix products in on this CPU (``bf16``, ``f32``…)."""
        return self.compiled.get_property("INFERENCE_PRECISION_HINT").to_string()

    @staticmethod
    def cpu_precision() -> str:
        """:attr:`precision` as the CPU plugin's default, read without compiling a model (what a
        session made without a precision runs: a load checks its record before making one)."""
        import openvino as ov

        return ov.Core().get_property("CPU", "INFERENCE_PRECISION_HINT").to_string()

    def get_inputs(self) -> list:
        """The graph's inputs, each with a ``name`` (as onnxruntime's ``NodeArg``)."""
        from types import SimpleNamespace

        return [SimpleNamespace(name=i.any_name) for i in self.compiled.inputs]

    def run(self, _outputs, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
        """``[(B, d) float32 vectors]`` of one padded batch (``feeds``: int64 (B, T) arrays by input name)."""
        request = getattr(self._local, "request", None)
        if request is None:
            request = self._local.request = self.compiled.create_infer_request()
        return [request.infer(feeds)[0]]  # a copy: the request's own buffer is reused by its next call


RUNTIMES = {  # backend → (module it imports, the package to install, the backend to use instead)
    "openvino": ("openvino", "OpenVINO: pip install openvino", "onnx"),
    "onnx": ("onnxruntime", "onnxruntime: pip install onnxruntime onnx", "torch"),
    "onnx-int8": ("onnxruntime", "onnxruntime: pip install onnxruntime onnx", "torch"),
}


def _check_runtime(backend: str) -> None:
    """Raises EncodrError naming the package ``backend`` needs (:data:`RUNTIMES`) when it cannot be imported."""
    import importlib

    module, package, instead = RUNTIMES[backend]
    try:
        importlib.import_module(module)
    except ImportError:
        raise EncodrError(f"{S.backend} {backend} needs {package} (or use {S.backend} {instead})") from None


class NotExportable(EncodrError):
    """A model no ONNX backend runs (a static embedding model): ``auto`` takes torch for it without a word.

    Attributes:
        encoder: the model as loaded in torch on the CPU before the export was refused, for a
            caller that takes torch instead (so it is not loaded twice); None where none was.
    """

    def __init__(self, message: str, encoder: Encoder | None = None):
        super().__init__(message)
        self.encoder = encoder


def onnx_encoder(encoder: Encoder, backend: str, key: str | None = None, folder: Path | None = None) -> Encoder:
    """``encoder`` with its forward pass on its ONNX export (``backend``: ``onnx`` or ``onnx-int8``
    in onnxruntime, ``openvino`` in OpenVINO), exported on first use (:func:`export`, into
    ``folder`` when given). With ``key`` (:func:`source_key`), the export's tokenizer and record
    are saved too, so that :func:`exported_encoder` opens this model without torch next time.
    For ``openvino``, whose precision is the CPU's (bfloat16 where it has it), the vectors are
    checked against ``encoder``'s (torch) once per precision and the result kept beside the
    export (:data:`OPENVINO_RECORD`).

    Raises:
        EncodrError: the backend's runtime is not installed, the export fails, OpenVINO's vectors
            are not within cosine :data:`AGREEMENT` of torch's, or ``encoder`` is a static model
            (a table lookup, which ONNX would not speed up).
    """
    _check_runtime(backend)
    if encoder.static:
        raise NotExportable(
            f"'{encoder.name}' is a static embedding model, which runs in torch (a table lookup, nothing for ONNX to speed up); "
            f"use {S.backend} torch or auto",
            encoder,
        )
    path = export(encoder, backend, folder)
    result = Encoder(encoder.st, encoder.name, OnnxForward(encoder.st, backend, path))
    if backend == "openvino":
        _check_openvino(encoder, result, path.parent)
    if key is not None:
        _remember(encoder, key)
    return result


def _check_openvino(torch_encoder: Encoder, encoder: Encoder, folder: Path) -> None:
    """Measure :func:`agreement` of OpenVINO's vectors (``encoder``) with torch's at the
    precision it runs here, and keep it in ``folder``'s :data:`OPENVINO_RECORD` (written
    atomically; a folder that cannot be written only loses the record).

    Raises:
        EncodrError: the agreement is under :data:`AGREEMENT`, naming it and the fix.
    """
    import json

    precision = encoder.forward.session.precision
    measured = agreement(torch_encoder, encoder)
    try:
        kept = json.loads((folder / OPENVINO_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        kept = {}
    with contextlib.suppress(OSError):
        with atomic_file(folder / OPENVINO_RECORD) as tmp:
            tmp.write_text(json.dumps({**kept, precision: measured}), encoding="utf-8")
    if measured < AGREEMENT:
        raise EncodrError(
            f"OpenVINO's {precision} vectors of {torch_encoder.name} differ from torch's (cosine {measured:.5f} < "
            f"{AGREEMENT}); use {S.backend} onnx"
        )


def _openvino_agreed(forward: OnnxForward) -> bool:
    """Whether OpenVINO's vectors at the precision ``forward``'s sessions run (the CPU plugin's
    default: :meth:`OpenVinoSession.cpu_precision`, read without compiling one) were checked and kept
    (:func:`_check_openvino`): without that record the model is loaded in torch to check them."""
    import json

    try:
        kept = json.loads((forward.path.parent / OPENVINO_RECORD).read_text(encoding="utf-8"))
        return float(kept[OpenVinoSession.cpu_precision()]) >= AGREEMENT
    except (OSError, ValueError, KeyError, TypeError):
        return False


def quantised_twin(encoder) -> Encoder | None:
    """``encoder`` with its ONNX float32 graph quantised to int8 (:func:`export`, ``onnx-int8``,
    quantised once and cached beside the float32 file), for vectors that are only ranked against
    one another, never stored or compared with an index's: a snippet's sentences
    (:meth:`encodr.index.Searcher.warm`). Its vectors are not within the cosine of float32 that
    a query's must keep (:data:`AGREEMENT`); ``bench/sentence_twin.py`` measures how often the
    snippets it chooses are the float32 ones. A batched encoder (the server's) gives its own
    encoder's twin, which runs on the caller's thread, outside the batcher. One twin an encoder:
    a server's searchers of several indexes of one model share it.

    Returns:
        the twin (the same tokenizer, prompts and truncation), or None where ``encoder`` does not
        run ONNX float32 (torch, bf16, int8 already, a static model) or the quantiser refuses.
    """
    import copy

    base = getattr(encoder, "unbatched", encoder)
    forward = getattr(base, "forward", None)
    if not isinstance(forward, OnnxForward) or forward.backend != "onnx":
        return None
    with _TWINS_LOCK:
        if base not in _TWINS:
            try:
                path = export(base, "onnx-int8", forward.path.parent)
                twin = copy.copy(base)
                twin.forward = OnnxForward(base.st, "onnx-int8", path)
            except Exception:  # a refusal (EncodrError) or onnxruntime's own: the snippets keep the float32 encoder
                twin = None
            _TWINS[base] = twin
        return _TWINS[base]


_TWINS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # encoder → its quantised_twin (None: refused)
_TWINS_LOCK = threading.Lock()


def source_key(folder: Path, pooling: str, raw_pooling: str) -> str:
    """SHA-256 (first 16 hex digits) of a model folder's files — each one's path inside it, size
    and modification time in ns, recursively, symbolic links followed — and the pooling asked
    for: what :func:`exported_encoder` looks an export up by, without reading the weights."""
    import hashlib

    h = hashlib.sha256(f"{pooling}|{raw_pooling}".encode())
    for root, dirs, files in sorted(os.walk(folder, followlinks=True)):
        dirs.sort()
        for name in sorted(files):
            stat = os.stat(os.path.join(root, name))
            h.update(f"{os.path.relpath(os.path.join(root, name), folder)}|{stat.st_size}|{stat.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _source(key: str) -> Path:
    from ..paths import home

    return home() / "onnx" / "sources" / f"{key}.json"


def _remember(encoder: Encoder, key: str) -> None:
    """Save ``encoder``'s tokenizer and record beside its export, and point ``key`` at it (each
    file written atomically; a workspace that cannot be written only loses the shortcut)."""
    import json

    fingerprint = encoder.fingerprint  # reads every weight: once
    folder = _folder(fingerprint)
    tok = encoder.tokenizer
    record = {
        "fingerprint": fingerprint,
        "dimension": int(encoder.st.get_embedding_dimension()),
        "pooling": encoder.pooling,
        "max_seq_length": encoder.max_length,
        "prompts": dict(getattr(encoder.st, "prompts", None) or {}),
        "default_prompt_name": getattr(encoder.st, "default_prompt_name", None),
        "pad_token_id": tok.pad_token_id or 0,
        "pad_token_type_id": getattr(tok, "pad_token_type_id", 0) or 0,
        "padding_side": getattr(tok, "padding_side", "right"),
    }
    backend = getattr(tok, "backend_tokenizer", None)
    if backend is None:  # a slow (Python) tokenizer: no Rust tokenizer to save, so no shortcut
        return
    try:
        with atomic_file(folder / TOKENIZER) as tmp:
            tmp.write_text(backend.to_str(), encoding="utf-8")
        with atomic_file(folder / RECORD) as tmp:
            tmp.write_text(json.dumps(record, indent=1), encoding="utf-8")
        source = _source(key)
        source.parent.mkdir(parents=True, exist_ok=True)
        with atomic_file(source) as tmp:
            tmp.write_text(json.dumps({"export": record["fingerprint"]}), encoding="utf-8")
    except OSError:
        pass


class ExportedTokenizer:
    """The part of a Hugging Face fast tokenizer that encoding uses, on the Rust tokenizer it
    wraps (``tokenizers.Tokenizer``, saved by :func:`_remember`), without transformers: calling
    it tokenizes as ``PreTrainedTokenizerFast.__call__`` does with ``truncation=True,
    max_length=N`` (longest-first, from the right); :meth:`tokenize` and :meth:`pad` as theirs.
    It always returns ``input_ids``, ``token_type_ids`` and ``attention_mask``: the forward pass
    feeds the graph the ones it takes. Not thread-safe: truncation is the tokenizer's state
    (:func:`~encodr.models.encoder.tokenize` holds a lock)."""

    def __init__(self, path: Path, pad_token_id: int, pad_token_type_id: int = 0, padding_side: str = "right"):
        from tokenizers import Tokenizer

        self.backend_tokenizer = Tokenizer.from_file(str(path))
        self.backend_tokenizer.no_padding()
        self.backend_tokenizer.no_truncation()
        self._truncation: int | None = None
        self.pad_token_id, self.pad_token_type_id, self.padding_side = int(pad_token_id), int(pad_token_type_id), padding_side

    def _truncate(self, max_length: int | None) -> None:
        if max_length != self._truncation:
            if max_length is None:
                self.backend_tokenizer.no_truncation()
            else:
                self.backend_tokenizer.enable_truncation(int(max_length))
            self._truncation = max_length

    def __call__(
        self, texts: list[str], add_special_tokens: bool = True, truncation: bool = True, max_length: int | None = None
    ) -> dict[str, list[list[int]]]:
        """B texts → ``input_ids``, ``token_type_ids``, ``attention_mask``: B int lists each, not padded."""
        self._truncate(max_length if truncation else None)
        encodings = self.backend_tokenizer.encode_batch(list(texts), add_special_tokens=add_special_tokens)
        return {
            "input_ids": [e.ids for e in encodings],
            "token_type_ids": [e.type_ids for e in encodings],
            "attention_mask": [e.attention_mask for e in encodings],
        }

    def tokenize(self, text: str) -> list[str]:
        """The tokens of ``text``, without special tokens or truncation."""
        self._truncate(None)
        return self.backend_tokenizer.encode(text, add_special_tokens=False).tokens

    def pad(self, features: dict[str, list[list[int]]], return_tensors: str = "np") -> dict[str, np.ndarray]:
        """int64 (B, longest) arrays of B token lists each, padded with the pad token (ids), the
        pad type (token types) or 0 (mask) on :attr:`padding_side`. Only ``return_tensors="np"``."""
        if return_tensors != "np":
            raise ValueError("ExportedTokenizer.pad returns NumPy arrays only")
        longest = max(len(row) for row in features["input_ids"])
        fills = {"input_ids": self.pad_token_id, "token_type_ids": self.pad_token_type_id}
        out = {}
        for name, rows in features.items():
            array = np.full((len(rows), longest), fills.get(name, 0), dtype=np.int64)
            for i, row in enumerate(rows):
                if self.padding_side == "left":
                    array[i, longest - len(row) :] = row
                else:
                    array[i, : len(row)] = row
            out[name] = array
        return out


class ExportedModel(StandIn):
    """What an :class:`ExportedEncoder` holds in place of a SentenceTransformer: its tokenizer,
    ``max_seq_length``, ``prompts``, ``default_prompt_name`` and dimension, from the export's
    record. Any other attribute (``save``, ``encode``, ``start_multi_process_pool``, indexing
    its modules…) loads the full SentenceTransformer on the CPU once (``full``) and is its."""

    def __init__(self, record: dict, tokenizer: ExportedTokenizer, full):
        super().__init__(full)
        self.tokenizer, self._record = tokenizer, record
        self.max_seq_length = int(record["max_seq_length"])
        self.prompts = dict(record.get("prompts") or {})
        self.default_prompt_name = record.get("default_prompt_name")

    def get_embedding_dimension(self) -> int:
        return int(self._record["dimension"])

    @property
    def full(self):
        """The SentenceTransformer itself, loaded on first use (torch), at this ``max_seq_length``."""
        model = StandIn.full.fget(self)
        model.max_seq_length = self.max_seq_length
        return model


class ExportedEncoder(Encoder):
    """An :class:`~encodr.models.encoder.Encoder` opened from its ONNX export alone
    (:func:`exported_encoder`): the same vectors, fingerprint, pooling and tokens as the
    encoder it was exported from, without torch until something beyond encoding asks for
    the full model (:class:`ExportedModel`)."""

    def __init__(self, st: ExportedModel, name: str, forward: OnnxForward, record: dict):
        super().__init__(st, name, forward)
        self.record = record

    @property
    def pooling(self) -> str:
        return str(self.record["pooling"])

    @property
    def fingerprint(self) -> str:
        return str(self.record["fingerprint"])


def exported_encoder(key: str, name: str, backend: str, full) -> ExportedEncoder | None:
    """The encoder whose folder has ``key`` (:func:`source_key`), opened from its export for
    ``backend`` (``onnx``, ``onnx-int8``, ``openvino``) without torch; None when that export, its
    tokenizer or its record is missing, or OpenVINO's vectors at this CPU's precision were never
    checked (the caller loads the model and exports or checks it).

    Args:
        key: the model folder's :func:`source_key`.
        name: the spec the model was asked for by (:attr:`Encoder.name`).
        backend: ``onnx``, ``onnx-int8`` or ``openvino``.
        full: a callable that loads the full SentenceTransformer (torch, on the CPU), called
            only when something beyond encoding needs it.

    Raises:
        EncodrError: the backend's runtime (onnxruntime, OpenVINO) is not installed.
    """
    import json

    try:
        fingerprint = json.loads(_source(key).read_text(encoding="utf-8"))["export"]
        folder = _folder(fingerprint)
        record = json.loads((folder / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    graph, tokenizer_file = folder / FILES[backend], folder / TOKENIZER
    if not graph.is_file() or not tokenizer_file.is_file() or record.get("fingerprint") != fingerprint:
        return None
    _check_runtime(backend)
    try:
        tokenizer = ExportedTokenizer(
            tokenizer_file, record["pad_token_id"], record.get("pad_token_type_id", 0), record.get("padding_side", "right")
        )
    except Exception:
        return None
    st = ExportedModel(record, tokenizer, full)
    forward = OnnxForward(st, backend, graph)
    if backend == "openvino" and not _openvino_agreed(forward):
        return None
    return ExportedEncoder(st, name, forward, record)
