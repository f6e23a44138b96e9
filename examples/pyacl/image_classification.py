"""Image classification the way the official resnet50 sample (acl_net.py) does it: build a
small CNN as an ONNX model, convert it with ATC (input in float16, output float32, as the
sample's model), then init -> set_device -> create_context -> load_from_file -> get_desc ->
one device buffer per input and output -> for each image: copy in, dataset over the device
buffers, execute, destroy the datasets, copy out, post-process (top-5) -> teardown.

The model file is made here (onnx.helper) and converted with `atc` from the PATH, or npurt's
(`python -m npurt.cli atc`) when there is none. The result is checked against ONNX Runtime run
directly on the same input.
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

import acl

ACL_SUCCESS = 0
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
NPY_FLOAT32 = 11
MEAN_BGR = (104.0, 117.0, 123.0)


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


# ---------------------------------------------------------------- the model
def build_model(path, classes=10, seed=0):
    """data [1, 3, 32, 32] -> Conv-Relu-MaxPool-Conv-Relu-GlobalAveragePool-Gemm-Softmax -> prob."""
    rng = np.random.default_rng(seed)

    def weight(name, shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["data", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["logits"], transB=1),
             helper.make_node("Softmax", ["logits"], ["prob"], axis=1)]
    weights = [weight("w1", (16, 3, 3, 3)), weight("b1", (16,)), weight("w2", (32, 16, 3, 3)), weight("b2", (32,)),
               weight("w3", (classes, 32)), weight("b3", (classes,))]
    graph = helper.make_graph(nodes, "classifier", [helper.make_tensor_value_info("data", TensorProto.FLOAT,
                                                                                  [1, 3, 32, 32])],
                              [helper.make_tensor_value_info("prob", TensorProto.FLOAT, [1, classes])], weights)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def atc(*args):
    tool = shutil.which("atc")
    cmd = [tool] if tool else [sys.executable, "-m", "npurt.cli", "atc"]
    result = subprocess.run(cmd + list(args), capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"atc failed: {result.stdout}{result.stderr}")


# ---------------------------------------------------------------- the network (as acl_net.py)
class Net:
    def __init__(self, device_id, model_path):
        self.device_id = device_id
        check("set_device", acl.rt.set_device(device_id))
        self.context, ret = acl.rt.create_context(device_id)
        check("create_context", ret)
        self.model_id, ret = acl.mdl.load_from_file(model_path)
        check("load_from_file", ret)
        self.model_desc = acl.mdl.create_desc()
        check("get_desc", acl.mdl.get_desc(self.model_desc, self.model_id))
        self.input_buffers = self._malloc(acl.mdl.get_num_inputs(self.model_desc), acl.mdl.get_input_size_by_index)
        self.output_buffers = self._malloc(acl.mdl.get_num_outputs(self.model_desc),
                                           acl.mdl.get_output_size_by_index)

    def _malloc(self, count, size_of):
        buffers = []
        for i in range(count):
            size = size_of(self.model_desc, i)
            ptr, ret = acl.rt.malloc(size, ACL_MEM_MALLOC_HUGE_FIRST)
            check("malloc", ret)
            buffers.append({"buffer": ptr, "size": size})
        return buffers

    def _gen_dataset(self, buffers):
        dataset = acl.mdl.create_dataset()
        for item in buffers:
            data = acl.create_data_buffer(item["buffer"], item["size"])
            _, ret = acl.mdl.add_dataset_buffer(dataset, data)
            if ret != ACL_SUCCESS:
                acl.destroy_data_buffer(data)
            check("add_dataset_buffer", ret)
        return dataset

    @staticmethod
    def _destroy_dataset(dataset):
        for i in range(acl.mdl.get_dataset_num_buffers(dataset)):
            check("destroy_data_buffer", acl.destroy_data_buffer(acl.mdl.get_dataset_buffer(dataset, i)))
        check("destroy_dataset", acl.mdl.destroy_dataset(dataset))

    def run(self, image):
        """image: float16 NCHW, mean-subtracted BGR. Returns the class probabilities."""
        size = self.input_buffers[0]["size"]
        image_bytes = image.tobytes()
        check("memcpy H2D", acl.rt.memcpy(self.input_buffers[0]["buffer"], size, acl.util.bytes_to_ptr(image_bytes),
                                          len(image_bytes), ACL_MEMCPY_HOST_TO_DEVICE))
        input_dataset = self._gen_dataset(self.input_buffers)
        output_dataset = self._gen_dataset(self.output_buffers)
        check("execute", acl.mdl.execute(self.model_id, input_dataset, output_dataset))
        self._destroy_dataset(input_dataset)   # the device memory stays ours
        self._destroy_dataset(output_dataset)
        return self._output()

    def _output(self):
        out = self.output_buffers[0]
        host, ret = acl.rt.malloc_host(out["size"])
        check("malloc_host", ret)
        check("memcpy D2H", acl.rt.memcpy(host, out["size"], out["buffer"], out["size"], ACL_MEMCPY_DEVICE_TO_HOST))
        dims, ret = acl.mdl.get_cur_output_dims(self.model_desc, 0)
        check("get_cur_output_dims", ret)
        result = acl.util.ptr_to_numpy(host, tuple(dims["dims"]), NPY_FLOAT32).copy()
        check("free_host", acl.rt.free_host(host))
        return result

    def release(self):
        check("unload", acl.mdl.unload(self.model_id))
        check("destroy_desc", acl.mdl.destroy_desc(self.model_desc))
        for item in self.input_buffers + self.output_buffers:
            check("free", acl.rt.free(item["buffer"]))
        check("destroy_context", acl.rt.destroy_context(self.context))
        check("reset_device", acl.rt.reset_device(self.device_id))


def preprocess(rgb):
    """uint8 HWC RGB -> float16 NCHW BGR minus the channel means (the sample's preprocessing)."""
    bgr = rgb[:, :, ::-1].astype(np.float32) - np.array(MEAN_BGR, np.float32)
    return np.ascontiguousarray(bgr.transpose(2, 0, 1)[None]).astype(np.float16)


def main():
    check("acl.init", acl.init())
    work = tempfile.mkdtemp(prefix="classify_")
    try:
        onnx_path = os.path.join(work, "classifier.onnx")
        build_model(onnx_path)
        atc(f"--model={onnx_path}", "--framework=5", f"--output={os.path.join(work, 'classifier')}",
            f"--soc_version={acl.get_soc_name()}", "--input_format=NCHW", "--input_fp16_nodes=data",
            "--output_type=FP32")
        net = Net(0, os.path.join(work, "classifier.om"))
        reference = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(2024)
        matches = []
        for i in range(3):
            image = preprocess(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8))
            prob = net.run(image)[0]
            top5 = np.argsort(prob)[::-1][:5]
            print(f"image {i}: top-5 classes {top5.tolist()}, top-1 probability {prob[top5[0]]:.4f}")
            expected = reference.run(None, {"data": image.astype(np.float32)})[0][0]
            matches.append(np.allclose(prob, expected, rtol=1e-5, atol=1e-6))
        print(f"probabilities sum to 1: {bool(np.isclose(prob.sum(), 1.0, atol=1e-5))}")
        print(f"npu results match onnxruntime: {all(matches)}")
        net.release()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    check("acl.finalize", acl.finalize())
    print("classification: teardown complete")


if __name__ == "__main__":
    main()
