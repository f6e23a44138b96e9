"""DVPP pre-processing feeding a model, the way acllite's AclLiteImageProc and AclLiteModel
do it: read a JPEG, decode it with JPEGD into a YUV420SP (NV12) DVPP buffer, resize it with
VPC, and give the DVPP buffer straight to a model whose static AIPP turns YUV420SP into RGB.

    npurt run examples/pyacl/dvpp_classify.py [picture.jpg [model.om]]

Without a picture it draws one (Pillow). Without a model it builds the tiny one it needs
once, as you would with ATC: an ONNX graph giving the per-channel mean of a 3 x 64 x 64
picture, converted with an AIPP config (YUV420SP_U8 -> RGB, full-range BT.601, the
matrix that matches JPEG's YUV). That needs onnx; without it the YUV output is checked only.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import acl
import numpy as np
from PIL import Image

ACL_SUCCESS = 0
ACL_MEM_MALLOC_NORMAL_ONLY = 2
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
PIXEL_FORMAT_YUV_SEMIPLANAR_420 = 1
MODEL_W, MODEL_H = 64, 64
AIPP_CONFIG = f"""aipp_op {{
  aipp_mode : static
  input_format : YUV420SP_U8
  src_image_size_w : {MODEL_W}
  src_image_size_h : {MODEL_H}
  csc_switch : true
  rbuv_swap_switch : false
  matrix_r0c0 : 256
  matrix_r0c1 : 0
  matrix_r0c2 : 359
  matrix_r1c0 : 256
  matrix_r1c1 : -88
  matrix_r1c2 : -183
  matrix_r2c0 : 256
  matrix_r2c1 : 454
  matrix_r2c2 : 0
  input_bias_0 : 0
  input_bias_1 : 128
  input_bias_2 : 128
}}
"""


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


def align_up(n, a):
    return (n + a - 1) // a * a


def yuv420sp_size(w, h):
    return w * h * 3 // 2


class DvppImage:
    """A picture in DVPP memory (acllite's AclLiteImage with memory type DVPP)."""

    def __init__(self, data, width, height, align_width, align_height, size):
        self.data, self.width, self.height = data, width, height
        self.align_width, self.align_height, self.size = align_width, align_height, size

    def to_host(self):
        out = np.zeros(self.size, np.uint8)
        check("memcpy D2H", acl.rt.memcpy(acl.util.numpy_to_ptr(out), self.size, self.data, self.size,
                                          ACL_MEMCPY_DEVICE_TO_HOST))
        return out

    def destroy(self):
        check("dvpp_free", acl.media.dvpp_free(self.data))


class ImageProc:
    """JPEGD and VPC resize, as acllite_imageproc.AclLiteImageProc does them."""

    def __init__(self, stream):
        self.stream = stream
        self.channel = acl.media.dvpp_create_channel_desc()
        check("dvpp_create_channel", acl.media.dvpp_create_channel(self.channel))
        self.resize_config = acl.media.dvpp_create_resize_config()

    def _pic_desc(self, data, width, height, align_width, align_height, size):
        desc = acl.media.dvpp_create_pic_desc()
        acl.media.dvpp_set_pic_desc_data(desc, data)
        acl.media.dvpp_set_pic_desc_format(desc, PIXEL_FORMAT_YUV_SEMIPLANAR_420)
        acl.media.dvpp_set_pic_desc_width(desc, width)
        acl.media.dvpp_set_pic_desc_height(desc, height)
        acl.media.dvpp_set_pic_desc_width_stride(desc, align_width)
        acl.media.dvpp_set_pic_desc_height_stride(desc, align_height)
        acl.media.dvpp_set_pic_desc_size(desc, size)
        return desc

    def jpegd(self, jpeg: np.ndarray) -> DvppImage:
        host = acl.util.numpy_to_ptr(jpeg)
        width, height, _, ret = acl.media.dvpp_jpeg_get_image_info(host, jpeg.size)
        check("dvpp_jpeg_get_image_info", ret)
        out_size, ret = acl.media.dvpp_jpeg_predict_dec_size(host, jpeg.size, PIXEL_FORMAT_YUV_SEMIPLANAR_420)
        check("dvpp_jpeg_predict_dec_size", ret)
        src, ret = acl.media.dvpp_malloc(jpeg.size)          # the JPEG must be in DVPP memory
        check("dvpp_malloc", ret)
        check("memcpy H2D", acl.rt.memcpy(src, jpeg.size, host, jpeg.size, ACL_MEMCPY_HOST_TO_DEVICE))
        out, ret = acl.media.dvpp_malloc(out_size)
        check("dvpp_malloc", ret)
        desc = self._pic_desc(out, width, height, align_up(width, 128), align_up(height, 16), out_size)
        check("dvpp_jpeg_decode_async",
              acl.media.dvpp_jpeg_decode_async(self.channel, src, jpeg.size, desc, self.stream))
        check("synchronize_stream", acl.rt.synchronize_stream(self.stream))
        check("decode ret code", acl.media.dvpp_get_pic_desc_ret_code(desc))
        # JPEGD writes the geometry it used back: odd sizes aligned down to even, and strides
        # the SoC's decoder picks (ALIGN_UP(width, 64) on Ascend310P3 / 910B, 128 on older parts)
        width, height = acl.media.dvpp_get_pic_desc_width(desc), acl.media.dvpp_get_pic_desc_height(desc)
        stride_w = acl.media.dvpp_get_pic_desc_width_stride(desc)
        stride_h = acl.media.dvpp_get_pic_desc_height_stride(desc)
        acl.media.dvpp_destroy_pic_desc(desc)
        acl.media.dvpp_free(src)
        return DvppImage(out, width, height, stride_w, stride_h, yuv420sp_size(stride_w, stride_h))

    def resize(self, image: DvppImage, width: int, height: int) -> DvppImage:
        in_desc = self._pic_desc(image.data, image.width, image.height, image.align_width, image.align_height,
                                 image.size)
        stride_w, stride_h = align_up(width, 16), align_up(height, 2)
        out_size = yuv420sp_size(stride_w, stride_h)
        out, ret = acl.media.dvpp_malloc(out_size)
        check("dvpp_malloc", ret)
        out_desc = self._pic_desc(out, width, height, stride_w, stride_h, out_size)
        check("dvpp_vpc_resize_async", acl.media.dvpp_vpc_resize_async(self.channel, in_desc, out_desc,
                                                                        self.resize_config, self.stream))
        check("synchronize_stream", acl.rt.synchronize_stream(self.stream))
        acl.media.dvpp_destroy_pic_desc(in_desc)
        acl.media.dvpp_destroy_pic_desc(out_desc)
        return DvppImage(out, width, height, stride_w, stride_h, out_size)

    def destroy(self):
        acl.media.dvpp_destroy_resize_config(self.resize_config)
        check("dvpp_destroy_channel", acl.media.dvpp_destroy_channel(self.channel))
        acl.media.dvpp_destroy_channel_desc(self.channel)


class Model:
    """Load an .om and run it on a DVPP buffer (acllite_model.AclLiteModel, reduced)."""

    def __init__(self, path):
        self.model_id, ret = acl.mdl.load_from_file(path)
        check("load_from_file", ret)
        self.desc = acl.mdl.create_desc()
        check("get_desc", acl.mdl.get_desc(self.desc, self.model_id))
        self.out_size = acl.mdl.get_output_size_by_index(self.desc, 0)
        self.out_ptr, ret = acl.rt.malloc(self.out_size, ACL_MEM_MALLOC_NORMAL_ONLY)
        check("malloc", ret)

    def execute(self, image: DvppImage) -> np.ndarray:
        inputs, outputs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
        _, ret = acl.mdl.add_dataset_buffer(inputs, acl.create_data_buffer(image.data, image.size))
        check("add_dataset_buffer", ret)
        _, ret = acl.mdl.add_dataset_buffer(outputs, acl.create_data_buffer(self.out_ptr, self.out_size))
        check("add_dataset_buffer", ret)
        check("execute", acl.mdl.execute(self.model_id, inputs, outputs))
        for ds in (inputs, outputs):
            for i in range(acl.mdl.get_dataset_num_buffers(ds)):
                acl.destroy_data_buffer(acl.mdl.get_dataset_buffer(ds, i))
            acl.mdl.destroy_dataset(ds)
        result = np.zeros(self.out_size // 4, np.float32)
        check("memcpy D2H", acl.rt.memcpy(acl.util.numpy_to_ptr(result), self.out_size, self.out_ptr,
                                          self.out_size, ACL_MEMCPY_DEVICE_TO_HOST))
        return result

    def destroy(self):
        acl.mdl.unload(self.model_id)
        acl.mdl.destroy_desc(self.desc)
        acl.rt.free(self.out_ptr)


def draw_picture(path):
    h, w = 240, 320
    y, x = np.mgrid[0:h, 0:w]
    rgb = np.stack([60 + 140 * x // w, 50 + 150 * y // h, 180 - 100 * (x + y) // (w + h)], -1).astype(np.uint8)
    rgb[60:140, 80:200] = (200, 90, 60)  # a warm block
    Image.fromarray(rgb).save(path, quality=92)


def build_model(workdir):
    """The .om for this example (what `atc --insert_op_conf` makes offline); None without onnx."""
    try:
        import onnx
        from onnx import TensorProto, helper
    except ImportError:
        return None
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["pooled"]), helper.make_node("Flatten", ["pooled"], ["means"])]
    graph = helper.make_graph(
        nodes, "channel_means", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, MODEL_H, MODEL_W])],
        [helper.make_tensor_value_info("means", TensorProto.FLOAT, [1, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, os.path.join(workdir, "means.onnx"))
    with open(os.path.join(workdir, "aipp.cfg"), "w") as f:
        f.write(AIPP_CONFIG)
    atc = [shutil.which("atc")] if shutil.which("atc") else [sys.executable, "-m", "npurt.cli", "atc"]
    subprocess.run(atc + ["--model=means.onnx", "--framework=5", "--output=means", "--soc_version=Ascend910B3",
                          "--insert_op_conf=aipp.cfg"], cwd=workdir, check=True, capture_output=True)
    return os.path.join(workdir, "means.om")


def main(argv):
    workdir = tempfile.mkdtemp(prefix="dvpp_classify_")
    jpeg_path = argv[1] if len(argv) > 1 else os.path.join(workdir, "sample.jpg")
    if len(argv) <= 1:
        draw_picture(jpeg_path)
    model_path = argv[2] if len(argv) > 2 else build_model(workdir)

    check("acl.init", acl.init())
    check("set_device", acl.rt.set_device(0))
    context, ret = acl.rt.create_context(0)
    check("create_context", ret)
    stream, ret = acl.rt.create_stream()
    check("create_stream", ret)
    proc = ImageProc(stream)

    jpeg = np.fromfile(jpeg_path, dtype=np.uint8)
    decoded = proc.jpegd(jpeg)
    print(f"decoded {os.path.basename(jpeg_path)}: {decoded.width} x {decoded.height}, "
          f"NV12 stride {decoded.align_width} x {decoded.align_height}")
    reference = np.asarray(Image.open(jpeg_path).convert("YCbCr"))
    nv12 = decoded.to_host()
    luma = nv12[:decoded.align_width * decoded.align_height].reshape(decoded.align_height, decoded.align_width)
    luma = luma[:decoded.height, :decoded.width].astype(int)
    print(f"JPEGD luma matches Pillow's decode: {bool(np.abs(luma - reference[..., 0]).mean() < 1.5)}")

    small = proc.resize(decoded, MODEL_W, MODEL_H)
    small_luma = small.to_host()[:small.align_width * small.align_height].reshape(small.align_height, -1)
    print(f"VPC resized to {small.width} x {small.height}: "
          f"{bool(abs(small_luma[:MODEL_H, :MODEL_W].mean() - reference[..., 0].mean()) < 2)}")

    if model_path is None:
        print("no model: install onnx (npurt[models]) to run the AIPP model")
    else:
        model = Model(model_path)
        means = model.execute(small)  # the DVPP buffer is the model's input, as on the device
        expected = np.asarray(Image.open(jpeg_path).convert("RGB")).reshape(-1, 3).mean(axis=0)
        print(f"model output (R, G, B means): {[round(float(v), 1) for v in means]}")
        print(f"AIPP model (YUV420SP -> RGB) gives the picture's colour means: "
              f"{bool(np.abs(means - expected).max() < 3)}")
        model.destroy()

    small.destroy()
    decoded.destroy()
    proc.destroy()
    check("destroy_stream", acl.rt.destroy_stream(stream))
    check("destroy_context", acl.rt.destroy_context(context))
    check("reset_device", acl.rt.reset_device(0))
    check("acl.finalize", acl.finalize())
    shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv)
