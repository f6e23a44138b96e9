"""Runtime lifecycle: init, finalize, finalize_reference."""
from __future__ import annotations

from ..runtime import RUNTIME

rt = RUNTIME


# ================================================================ init / finalize
def init(config_path: str | None = None) -> None:
    """Initialize the runtime (acl.init). A second call raises REPEAT_INITIALIZE (100002)
    after counting a reference."""
    rt.init(config_path)


def finalize() -> None:
    """Tear everything down (acl.finalize): waits for queued work, frees all memory."""
    rt.finalize()


def finalize_reference() -> int:
    """Drop one init reference; finalizes when none is left. Returns the references left."""
    return rt.finalize_reference()


def ensure_initialized() -> None:
    rt.ensure_initialized()
