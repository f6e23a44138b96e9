"""DVPP channels: a channel description, the channel it opens, its modes and parameters.

`create_channel` opens the channel on the current context's device; every operation
needs an open channel of the stream's device whose mode includes the block it uses (a
new description has every block: VPC, JPEGD, JPEGE and PNGD). The channel id is a
per-process counter given to each description when it is created, as in ACL.
"""
from __future__ import annotations

import itertools

from ..runtime import InvalidValueError, current_context
from . import constants as F

ALL_MODES = F.DVPP_CHNMODE_VPC | F.DVPP_CHNMODE_JPEGD | F.DVPP_CHNMODE_JPEGE | F.DVPP_CHNMODE_PNGD
BLOCK_NAMES = {F.DVPP_CHNMODE_VPC: "VPC", F.DVPP_CHNMODE_JPEGD: "JPEGD", F.DVPP_CHNMODE_JPEGE: "JPEGE",
               F.DVPP_CHNMODE_PNGD: "PNGD"}
_ids = itertools.count(1)


class ChannelDesc:
    """acldvppChannelDesc. `device` is set while the channel is open."""

    __slots__ = ("channel_id", "mode", "csc_matrix", "device", "context", "__weakref__")

    def __init__(self):
        self.channel_id = next(_ids)
        self.mode = ALL_MODES
        self.csc_matrix = F.ACL_DVPP_CSC_MATRIX_BT601_WIDE
        self.device = None
        self.context = None  # the context it was opened in: reset_device / destroy_context close it

    def __repr__(self) -> str:
        state = f"open on device {self.device.id}" if self.device is not None else "not open"
        return f"<ChannelDesc {self.channel_id} mode {self.mode} {state}>"

    # ------------------------------------------------------------ lifecycle
    def create(self) -> None:
        """Open the channel on the current context's device (opening it again re-opens it
        there, as recreating a channel on the same description does)."""
        self.context = current_context()
        self.device = self.context.device

    def destroy(self) -> None:
        if self.device is None:
            raise InvalidValueError(f"DVPP channel {self.channel_id} is not open (dvpp_create_channel it first)")
        self.device = None

    # ------------------------------------------------------------ settings
    def set_mode(self, mode: int) -> None:
        """Restrict the channel to some blocks (bit-OR of acldvppChannelMode)."""
        if not 1 <= mode <= ALL_MODES:
            raise InvalidValueError(
                f"channel mode {mode} is not a combination of DVPP_CHNMODE_VPC (1), _JPEGD (2), _JPEGE (4) "
                "and _PNGD (8)")
        self.mode = mode

    def set_param(self, param_type: int, length: int, value: int) -> None:
        """acldvppSetChannelDescParam: only the CSC matrix (a uint32) is a channel parameter
        here; pyACL passes every other type with length 0."""
        if param_type != F.ACL_DVPP_CSC_MATRIX_UINT32 or length != 4:
            raise InvalidValueError(
                f"channel parameter type {param_type} with a {length}-byte value is not supported: pyACL passes "
                "only ACL_DVPP_CSC_MATRIX_UINT32 (0) with its 4-byte value")
        value &= 0xFFFFFFFF
        if value > F.ACL_DVPP_CSC_MATRIX_BT2020_NARROW:
            raise InvalidValueError(f"CSC matrix {value} is not an acldvppCscMatrix value (0..5)")
        self.csc_matrix = value

    def get_param(self, param_type: int, length: int) -> tuple[int, int]:
        """(bytes written, value) of a channel parameter."""
        if param_type != F.ACL_DVPP_CSC_MATRIX_UINT32 or length != 4:
            raise InvalidValueError(
                f"channel parameter type {param_type} with a {length}-byte buffer is not supported: pyACL asks "
                "only for ACL_DVPP_CSC_MATRIX_UINT32 (0)")
        return 4, self.csc_matrix

    # ------------------------------------------------------------ use
    def require(self, block: int, stream) -> None:
        """Check the channel may run `block` on `stream`'s device."""
        if self.device is None:
            raise InvalidValueError(f"DVPP channel {self.channel_id} is not open: call dvpp_create_channel "
                                    "before using it")
        if not self.context.alive:
            raise InvalidValueError(f"DVPP channel {self.channel_id} was closed when the context it was opened in "
                                    "went away (reset_device or destroy_context); create the channel again")
        if stream.device is not self.device:
            raise InvalidValueError(f"DVPP channel {self.channel_id} is open on device {self.device.id} but the "
                                    f"stream belongs to device {stream.device.id}")
        if not self.mode & block:
            raise InvalidValueError(f"DVPP channel {self.channel_id} was restricted to mode {self.mode}, which "
                                    f"does not include {BLOCK_NAMES[block]} ({block})")
