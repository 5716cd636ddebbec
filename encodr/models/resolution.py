"""Resolving a model spec — an alias, a local directory, or a Hugging Face Hub id — to a local
directory, without hanging when offline: a path-like spec that does not exist is "no such
directory", never a Hub download."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..errors import EncodrError, first_line
from .aliases import ALIASES, DEFAULT_MODEL


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
    def encoder_type(self) -> str:
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

    @property
    def matryoshka_dims(self) -> list[int] | None:
        """The dimensions the model was trained to be truncated to (Matryoshka loss): a model
        tuned by encodr with ``matryoshka_dims`` (its ``encodr.json`` recipe) gives them; a model
        whose card names sentence-transformers' ``MatryoshkaLoss`` gives ``[]`` (trained for
        it, dimensions not recorded); ``None`` otherwise (none of the bundled aliases was)."""
        import json

        try:
            run = json.loads((self.path / "encodr.json").read_text())
            dims = str((run.get("recipe") or {}).get("matryoshka_dims") or "")
            if dims:
                return [int(d) for d in dims.replace(" ", "").split(",") if d]
        except (OSError, ValueError, AttributeError):
            pass
        try:
            return [] if "MatryoshkaLoss" in (self.path / "README.md").read_text(errors="ignore") else None
        except OSError:
            return None

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
            raise EncodrError(
                f"'{spec}' is not a model directory (no config.json or modules.json); pass the folder a model was saved to"
            )
        return ModelRef(spec, path.resolve())
    if spec.startswith((".", "/", "~")) or spec.count("/") > 1 or "\\" in spec:
        raise EncodrError(f"model directory '{spec}' does not exist; check the path, or use an alias ({', '.join(ALIASES)})")
    from huggingface_hub import snapshot_download

    try:
        return ModelRef(spec, Path(snapshot_download(spec, local_files_only=True)))
    except Exception:
        pass
    offline = os.environ.get("HF_HUB_OFFLINE", "0").lower() in ("1", "true", "yes")
    if offline:
        raise EncodrError(
            f"model '{spec}' is no directory here, and not in the local Hugging Face cache (HF_HUB_OFFLINE is set); "
            f"check the path, or use an alias ({', '.join(ALIASES)})"
        )
    try:
        return ModelRef(spec, Path(snapshot_download(spec)))
    except Exception as exc:
        reason = first_line(exc, 160)
        raise EncodrError(
            f"model '{spec}' is no directory here, and could not be had from the Hugging Face Hub ({reason}); "
            f"check the path, or use an alias ({', '.join(ALIASES)})"
        ) from None
