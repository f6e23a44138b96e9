"""Pillow, imported on first use: the codecs need it, `import npurt` does not."""
from __future__ import annotations

from ..runtime import FeatureNotSupportedError

_image = None


def image_module():
    """PIL.Image; a clear error naming the extra to install when Pillow is missing."""
    global _image
    if _image is None:
        try:
            from PIL import Image
        except ImportError as exc:
            raise FeatureNotSupportedError(
                "JPEG/PNG decoding and JPEG encoding on the simulated DVPP need Pillow, which is not installed: "
                "pip install 'npurt[media]'") from exc
        _image = Image
    return _image
