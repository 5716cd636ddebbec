"""Optional imports: one helper, so a missing package is one line naming what to install.

Every module encodr imports only for one feature (Ray, the document readers, the plots, the
language detector, the Thai segmenter, the ONNX runtimes) goes through :func:`need`; a test
(``tests/test_extras.py``) hides each of them in turn and expects that line.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import EncodrError

# module → (what needs it, what to install): the features that import them on demand
OPTIONAL = {
    "ray.data": ("--engine ray", "'encodr[ray]'"),
    "ray.serve": ("encodr serve --engine ray", "'encodr[cluster]'"),
    "pypdf": ("reading PDF files", "pypdf"),
    "kreuzberg": ("reading Office, OpenDocument and e-book files", "kreuzberg"),
    "matplotlib": ("--plot", "matplotlib"),
    "lingua": ("language detection without --lang", "lingua-language-detector"),
    "pythainlp.tokenize": ("Thai keyword analysis", "pythainlp"),
    "fastapi": ("encodr serve", "'encodr[serve]'"),
    "uvicorn": ("encodr serve", "'encodr[serve]'"),
    "mcp": ("encodr mcp", "'encodr[mcp]'"),
}


def need(module: str, field: str | None = None) -> ModuleType:
    """``module`` imported, or one line naming the feature that needs it and the install.

    Args:
        module: a key of :data:`OPTIONAL` (a dotted module name).
        field: the request field the error names (HTTP's ``param``), if any.

    Returns:
        The imported module.

    Raises:
        EncodrError: ``module``, or a package it imports (``grpc`` for ``ray.serve``), is not
            installed: ``encodr serve --engine ray needs grpc, which is not installed here:
            pip install 'encodr[cluster]'``.
    """
    purpose, install = OPTIONAL[module]
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = (exc.name or module).split(".")[0]
        raise EncodrError(f"{purpose} needs {missing}, which is not installed here: pip install {install}", field=field) from None
