"""npurt.media: the simulated NPU's media engine (DVPP), a client of the runtime.

DVPP's blocks as operations that queue ordinary tasks on streams: VPC (resize, crop,
paste, colour conversion, borders, pyramid down-sampling, batch forms), JPEGD, PNGD and
JPEGE. The pyACL facade `acl.media` is a thin layer over these modules; called directly
they raise `npurt.NpuError`s (with the aclError code in `.code`) instead of returning
codes.

| module | holds |
| --- | --- |
| constants | the acl_dvpp.h enums (pixel formats, channel modes, border types, ...) |
| memory | dvpp_malloc / dvpp_free and the "is this DVPP memory" check |
| descs | picture / batch / stream descriptions, ROI, resize, border and JPEGE configs, handles |
| channel | channel descriptions and channels: open/close, modes, CSC parameter |
| layout | how each pixel format lays a picture out in memory; reading and writing planes |
| colour | colour-space conversion matrices and chroma subsampling |
| resample | plane scaling with DVPP's interpolations |
| geometry | the alignment, size and ROI rules checked at each call |
| task | DvppTask (a stream task) and Picture (a checked description with its memory) |
| vpc | the VPC operations |
| jpegd, pngd, jpege | the codecs (Pillow, from the `media` extra, loaded on first use) |
"""
