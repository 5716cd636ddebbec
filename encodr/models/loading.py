"""Loading a bi-encoder: resolve the spec (:func:`~.encoder.resolve`), build the
sentence-transformers model with the pooling asked for, and pick its forward pass — torch, or
ONNX Runtime (:mod:`.onnx`). Kept apart from :mod:`.encoder` so that the ONNX forward pass and
the loader that chooses it import in one direction: loading → onnx → encoder."""

from __future__ import annotations

from ..errors import EncodrError, S, first_line
from .encoder import Encoder, TorchForward, check_backend, is_onnx, is_static, pick_device, resolve, saved_settings
from .logs import quiet


def load_encoder(
    spec: str | None = None,
    pooling: str = "auto",
    raw_pooling: str = "cls",
    max_length: int | None = None,
    device: str | None = None,
    backend: str | None = None,
) -> Encoder:
    """Load a bi-encoder.

    Args:
        spec: model spec (see :func:`resolve`).
        pooling: ``auto`` keeps the model's own pooling (``raw_pooling`` for a raw MLM);
            ``cls`` or ``mean`` replaces it.
        raw_pooling: pooling for a raw checkpoint with none of its own.
        max_length: truncate inputs to this many tokens while this encoder runs (``None``: the
            model's setting): a recipe's training length. :meth:`Encoder.save` writes the model's
            own window back, so a model tuned at 50 tokens still indexes passages of its base's.
        device: ``cpu``, ``cuda``…; default: CUDA when available.
        backend: ``torch``; ``torch-bf16`` (the same modules, matrix products in bfloat16
            under ``torch.autocast``: faster on a CPU with AVX512-BF16 or AMX,
            slower elsewhere); or ``onnx`` / ``onnx-int8`` (onnxruntime on the CPU) or
            ``openvino`` (OpenVINO, bfloat16 where the CPU has it; :mod:`encodr.models.onnx`;
            the model is exported on first use and cached). Default:
            the one :meth:`Encoder.save` recorded with the model, else ``torch``.

    A model saved with a Matryoshka ``truncate_dim`` (:meth:`Encoder.save`, or
    sentence-transformers' config) comes back truncated to it.

    Returns:
        An :class:`Encoder`; for the ONNX backends its forward pass is an
        :class:`~encodr.models.onnx.OnnxForward`, and from the second load of a folder on, it is
        an :class:`~encodr.models.onnx.ExportedEncoder` opened without torch.

    Raises:
        EncodrError: see :func:`resolve`; an unknown backend; or the checkpoint cannot be loaded
            or exported.
    """
    ref = resolve(spec)
    saved = saved_settings(ref.path) if ref.path is not None else {}
    backend = backend or saved.get("backend") or "torch"
    check_backend(backend)
    if is_onnx(backend) and ref.encoder_type != "cross":
        from .onnx import exported_encoder, onnx_encoder, source_key

        key = source_key(ref.path, pooling, raw_pooling)
        encoder = exported_encoder(key, ref.spec, backend, lambda: load_encoder(spec, pooling, raw_pooling, None, "cpu").st)
        if encoder is None:  # first use of this folder: load it in torch and export it
            encoder = onnx_encoder(load_encoder(spec, pooling, raw_pooling, None, "cpu"), backend, key)
        if max_length is not None:
            encoder.max_length = max_length
        encoder.truncate(saved.get("truncate_dim"))
        return encoder
    if ref.encoder_type == "cross":
        raise EncodrError(
            f"'{ref.spec}' is a cross-encoder: it scores pairs but does not embed texts; use a bi-encoder here "
            f"(a Trans-Encoder run saves one in bi/), or pass {S.cross} to encodr score / eval sts / eval pairs"
        )
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling

    st = _sentence_transformer(ref, pooling, raw_pooling, pick_device(device))
    if is_static(st):
        if pooling != "auto":
            raise EncodrError(
                f"'{ref.spec}' is a static embedding model: it averages its token vectors, so {S.pooling} {pooling} "
                f"does not apply; drop {S.pooling}"
            )
        st.float()  # model2vec saves float16 vectors; averaged and trained in float32
        encoder = Encoder(st, ref.spec)  # StaticForward, float32: a table lookup has no matrix products for bfloat16 to speed up
    else:
        encoder = Encoder(st, ref.spec, TorchForward(st, bf16=backend == "torch-bf16"))
    if pooling != "auto" and encoder.pooling != pooling:
        names = list(st._modules)
        for name in names:
            if isinstance(st._modules[name], Pooling):
                st._modules[name] = Pooling(encoder.dimension, pooling_mode=pooling)
        if not any(isinstance(m, Normalize) for m in st):
            st.append(Normalize())
    if max_length is not None:
        encoder.saved_window = (
            encoder.max_length
        )  # save() writes the model's own window back: max_length is the length it runs (trains) at
        encoder.max_length = max_length
    dim = getattr(st, "truncate_dim", None) or saved.get("truncate_dim")
    st.truncate_dim = None  # encodr truncates and renormalises itself (Encoder.truncate)
    encoder.truncate(dim)
    return encoder


def open_encoder(spec: str | None = None, backend: str | None = None) -> Encoder:
    """The encoder an index is built or searched with: :func:`load_encoder`'s, except that a
    static model run by torch is opened from its table (:func:`table_encoder`).

    Raises:
        EncodrError: as :func:`load_encoder`.
    """
    if backend in (None, "torch", "torch-bf16"):
        encoder = table_encoder(spec)
        if encoder is not None:
            return encoder
    return load_encoder(spec, backend=backend)


def table_encoder(spec: str | None):
    """``spec``'s static model opened from its table (:class:`~.table.TableEncoder`: the same
    vectors and fingerprint as :func:`load_encoder`'s, without importing torch until something
    beyond encoding needs it); None where ``spec`` is not a static model saved to run in torch.

    Raises:
        EncodrError: ``spec`` cannot be resolved (:func:`resolve`).
    """
    ref = resolve(spec)
    saved = saved_settings(ref.path) if ref.path is not None else {}
    if ref.path is None or ref.encoder_type == "cross" or (saved.get("backend") or "torch") != "torch":
        return None
    from .table import open_table

    encoder = open_table(ref.path, ref.spec, lambda: load_encoder(spec, backend="torch", device="cpu").st)
    if encoder is not None:
        encoder.truncate(saved.get("truncate_dim"))
    return encoder


def _sentence_transformer(ref, pooling: str, raw_pooling: str, device: str):
    """``ref``'s model as a ``SentenceTransformer`` on ``device``: a sentence-transformers folder
    as saved, a raw checkpoint with ``raw_pooling`` (``pooling`` unless ``auto``) and a
    ``Normalize`` module.

    Raises:
        EncodrError: the checkpoint cannot be loaded (one line).
    """
    quiet()
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    try:
        if ref.is_sentence_transformer:
            return SentenceTransformer(str(ref.path), device=device, local_files_only=True)
        transformer = Transformer(str(ref.path))
        mode = raw_pooling if pooling == "auto" else pooling
        return SentenceTransformer(
            modules=[transformer, Pooling(transformer.get_embedding_dimension(), pooling_mode=mode), Normalize()], device=device
        )
    except EncodrError:
        raise
    except Exception as exc:
        raise EncodrError(f"could not load model '{ref.spec}' from {ref.path}: {first_line(exc)}") from None
