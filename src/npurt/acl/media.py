"""acl.media: DVPP media processing on the simulated NPU's media engine (npurt.media).

The names, argument parsing, return shapes and codes of pyACL's acl.media:

* memory: dvpp_malloc, dvpp_malloc_with_cfg, dvpp_free;
* channels: dvpp_create/destroy_channel_desc, dvpp_create/destroy_channel, channel id,
  mode and CSC parameter;
* descriptions and configs: picture (every getter and setter), batch and stream
  descriptions; ROI, resize, border and JPEGE configs;
* VPC: resize, crop, crop-resize, crop-and-paste, crop-resize-paste, convert colour, pyramid
  down, make border, and the batch forms;
* JPEGD / PNGD / JPEGE: image info, size prediction, decode and encode;
* VDEC / VENC: present in their real shapes, returning ACL_ERROR_RT_FEATURE_NOT_SUPPORT.

Operations are asynchronous tasks of the given stream (0: the current context's default
stream); read their outputs after acl.rt.synchronize_stream. Bad geometry is refused at
the call with ACL_ERROR_INVALID_PARAM (100000), a format an operation does not take with
ACL_ERROR_FORMAT_NOT_MATCH (100027). The acl_dvpp.h constants (PIXEL_FORMAT_*, ...) are
attributes too. See docs/compatibility.md for the decisions where the sources are silent.
"""
from __future__ import annotations

from ..media.constants import *  # noqa: F401,F403 - PIXEL_FORMAT_*, DVPP_CHNMODE_*, ...
from ._media_descs import *  # noqa: F401,F403
from ._media_ops import *  # noqa: F401,F403
from ._media_video import *  # noqa: F401,F403

from . import _media_descs, _media_ops, _media_video  # isort: skip

FUNCTIONS = sorted({*_media_descs.__all__, *_media_ops.__all__, *_media_video.__all__})
"""The names of every acl.media function."""
NOT_SUPPORTED = list(_media_video.FUNCTIONS)
