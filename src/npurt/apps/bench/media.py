"""What JPEG decoding on the simulated DVPP costs against Pillow.

jpegd_ratio: a 1920 x 1080 4:2:0 JPEG (a drawn picture with noise, quality 90) already in
DVPP memory, decoded through acl.media (dvpp_jpeg_decode_async into an NV12 DVPP buffer +
synchronize_stream), against Pillow decoding the same bytes to an RGB numpy array
(`np.asarray(Image.open(...).convert("RGB"))`), alternately; the median of the ratios
Pillow time / npurt time (target >= 0.8). Printed beside it: both times.
"""
from __future__ import annotations

import io

import numpy as np

from .harness import Profile, Stat, paired
from .metrics import H2D, Session, check, value

WIDTH, HEIGHT = 1920, 1080


def picture_jpeg(width: int, height: int) -> bytes:
    from PIL import Image
    y, x = np.mgrid[0:height, 0:width]
    rgb = np.stack([40 + x * 170 // width, 40 + y * 170 // height, 200 - (x + y) * 150 // (width + height)], -1)
    rgb = rgb + np.random.default_rng(0).integers(-12, 13, rgb.shape)
    buf = io.BytesIO()
    Image.fromarray(np.clip(rgb, 0, 255).astype(np.uint8)).save(buf, "JPEG", quality=90)
    return buf.getvalue()


def measure(s: Session, p: Profile) -> dict[str, Stat]:
    from PIL import Image
    acl, media = s.acl, s.acl.media
    width, height = (WIDTH, HEIGHT) if p.name != "tiny" else (320, 240)
    data = picture_jpeg(width, height)
    host = np.frombuffer(data, np.uint8).copy()
    host_ptr = host.ctypes.data  # the address numpy_to_ptr gives, without its warning
    size = value(media.dvpp_jpeg_predict_dec_size(host_ptr, host.size, 1), "dvpp_jpeg_predict_dec_size")
    src = value(media.dvpp_malloc(host.size), "dvpp_malloc")
    out = value(media.dvpp_malloc(size), "dvpp_malloc")
    channel = media.dvpp_create_channel_desc()
    desc = media.dvpp_create_pic_desc()
    try:
        check(acl.rt.memcpy(src, host.size, host_ptr, host.size, H2D), "memcpy")
        check(media.dvpp_create_channel(channel), "dvpp_create_channel")
        for field, v in (("data", out), ("size", size), ("format", 1), ("width", width), ("height", height),
                         ("width_stride", (width + 127) // 128 * 128), ("height_stride", (height + 15) // 16 * 16)):
            check(getattr(media, f"dvpp_set_pic_desc_{field}")(desc, v), f"dvpp_set_pic_desc_{field}")

        def dvpp() -> None:
            check(media.dvpp_jpeg_decode_async(channel, src, host.size, desc, s.stream), "dvpp_jpeg_decode_async")
            s.sync()

        def pillow() -> None:
            np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))

        r = paired(pillow, dvpp, p.big_repeats, p.warmup)
    finally:
        media.dvpp_destroy_channel(channel)
        media.dvpp_destroy_channel_desc(channel)
        media.dvpp_destroy_pic_desc(desc)
        media.dvpp_free(src)
        media.dvpp_free(out)
    return {"jpegd_ratio": r.ratio, "jpegd_ms": r.subject_s.scaled(1e3), "pillow_decode_ms": r.reference_s.scaled(1e3)}
