"""Asynchronous inference: a batch pipeline on one stream with no host wait per batch.

A report thread (acl.util.start_thread + acl.rt.process_report) is subscribed to the stream.
For each batch the host queues: the input copy from page-locked memory (memcpy_async), the
model (acl.mdl.execute_async), the output copy back (memcpy_async) and a callback
(launch_callback) that post-processes the result on the report thread. One
synchronize_stream at the end. The model (an MLP over 64 features, dynamic batch 1/4/8) is
built here and converted with `atc`; results are checked against ONNX Runtime.
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
ACL_ERROR_RT_REPORT_TIMEOUT = 507012
ACL_CALLBACK_BLOCK = 1
ACL_MEM_MALLOC_HUGE_FIRST = 0
ACL_MEMCPY_HOST_TO_DEVICE = 1
ACL_MEMCPY_DEVICE_TO_HOST = 2
NPY_FLOAT32 = 11
FEATURES, CLASSES, BATCH = 64, 5, 4

state = {"exit": False}
results = {}


def check(what, ret):
    if ret != ACL_SUCCESS:
        raise RuntimeError(f"{what} failed: ret={ret} {acl.get_recent_err_msg()}")


def build_model(path, seed=1):
    rng = np.random.default_rng(seed)

    def weight(name, shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.2).astype(np.float32), name)

    nodes = [helper.make_node("Gemm", ["features", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("Gemm", ["r", "w2", "b2"], ["logits"], transB=1),
             helper.make_node("Softmax", ["logits"], ["scores"], axis=1)]
    graph = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("features", TensorProto.FLOAT,
                                                                           ["N", FEATURES])],
                              [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N", CLASSES])],
                              [weight("w1", (32, FEATURES)), weight("b1", (32,)), weight("w2", (CLASSES, 32)),
                               weight("b2", (CLASSES,))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def atc(*args):
    tool = shutil.which("atc")
    cmd = [tool] if tool else [sys.executable, "-m", "npurt.cli", "atc"]
    result = subprocess.run(cmd + list(args), capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"atc failed: {result.stdout}{result.stderr}")


def report_loop(args_list):
    """The report thread: runs the callbacks posted to it until asked to stop."""
    context, timeout_ms = args_list
    check("set_context (report thread)", acl.rt.set_context(context))
    while not state["exit"]:
        ret = acl.rt.process_report(timeout_ms)
        if ret not in (ACL_SUCCESS, ACL_ERROR_RT_REPORT_TIMEOUT):
            acl.get_recent_err_msg()


def on_batch_done(user_data):
    """Post-processing on the report thread: the output copy has landed in pinned memory."""
    batch_id, host_ptr, shape = user_data
    scores = acl.util.ptr_to_numpy(host_ptr, shape, NPY_FLOAT32).copy()
    results[batch_id] = scores


def main():
    check("acl.init", acl.init())
    check("set_device", acl.rt.set_device(0))
    context, ret = acl.rt.create_context(0)
    check("create_context", ret)
    stream, ret = acl.rt.create_stream()
    check("create_stream", ret)
    work = tempfile.mkdtemp(prefix="async_")
    onnx_path = os.path.join(work, "mlp.onnx")
    build_model(onnx_path)
    atc(f"--model={onnx_path}", "--framework=5", f"--output={os.path.join(work, 'mlp')}",
        f"--soc_version={acl.get_soc_name()}", f"--input_shape=features:-1,{FEATURES}", "--dynamic_batch_size=1,4,8")

    model_id, ret = acl.mdl.load_from_file(os.path.join(work, "mlp.om"))
    check("load_from_file", ret)
    desc = acl.mdl.create_desc()
    check("get_desc", acl.mdl.get_desc(desc, model_id))
    shape_index, ret = acl.mdl.get_input_index_by_name(desc, "ascend_mbatch_shape_data")
    check("get_input_index_by_name", ret)

    thread_id, ret = acl.util.start_thread(report_loop, [context, 100])
    check("start_thread", ret)
    check("subscribe_report", acl.rt.subscribe_report(thread_id, stream))

    batches = 6
    in_size = BATCH * FEATURES * 4
    out_size = BATCH * CLASSES * 4
    rng = np.random.default_rng(7)
    inputs = [rng.standard_normal((BATCH, FEATURES)).astype(np.float32) for _ in range(batches)]
    pinned_in, pinned_out, device, datasets = [], [], [], []
    for i in range(batches):
        host_in, ret = acl.rt.malloc_host(in_size)
        check("malloc_host", ret)
        acl.util.ptr_to_numpy(host_in, (BATCH, FEATURES), NPY_FLOAT32)[:] = inputs[i]
        host_out, ret = acl.rt.malloc_host(out_size)
        check("malloc_host", ret)
        dev_in, ret = acl.rt.malloc(acl.mdl.get_input_size_by_index(desc, 0), ACL_MEM_MALLOC_HUGE_FIRST)
        check("malloc", ret)
        dev_shape, ret = acl.rt.malloc(acl.mdl.get_input_size_by_index(desc, shape_index), ACL_MEM_MALLOC_HUGE_FIRST)
        check("malloc", ret)
        dev_out, ret = acl.rt.malloc(acl.mdl.get_output_size_by_index(desc, 0), ACL_MEM_MALLOC_HUGE_FIRST)
        check("malloc", ret)
        in_ds, out_ds = acl.mdl.create_dataset(), acl.mdl.create_dataset()
        for ptr, size in ((dev_in, in_size), (dev_shape, acl.mdl.get_input_size_by_index(desc, shape_index))):
            check("add_dataset_buffer", acl.mdl.add_dataset_buffer(in_ds, acl.create_data_buffer(ptr, size))[1])
        check("add_dataset_buffer", acl.mdl.add_dataset_buffer(out_ds, acl.create_data_buffer(dev_out, out_size))[1])
        check("set_dynamic_batch_size", acl.mdl.set_dynamic_batch_size(model_id, in_ds, shape_index, BATCH))
        pinned_in.append(host_in)
        pinned_out.append(host_out)
        device += [dev_in, dev_shape, dev_out]
        datasets.append((in_ds, out_ds))

    for i in range(batches):  # everything queued; the host never waits inside the loop
        in_ds, out_ds = datasets[i]
        dev_in = acl.get_data_buffer_addr(acl.mdl.get_dataset_buffer(in_ds, 0))
        dev_out = acl.get_data_buffer_addr(acl.mdl.get_dataset_buffer(out_ds, 0))
        check("memcpy_async H2D", acl.rt.memcpy_async(dev_in, in_size, pinned_in[i], in_size,
                                                      ACL_MEMCPY_HOST_TO_DEVICE, stream))
        check("execute_async", acl.mdl.execute_async(model_id, in_ds, out_ds, stream))
        check("memcpy_async D2H", acl.rt.memcpy_async(pinned_out[i], out_size, dev_out, out_size,
                                                      ACL_MEMCPY_DEVICE_TO_HOST, stream))
        check("launch_callback", acl.rt.launch_callback(on_batch_done, [i, pinned_out[i], (BATCH, CLASSES)],
                                                        ACL_CALLBACK_BLOCK, stream))
    check("synchronize_stream", acl.rt.synchronize_stream(stream))

    reference = onnxruntime.InferenceSession(onnx_path, providers=["CPUExecutionProvider"])
    same = all(np.allclose(results[i], reference.run(None, {"features": inputs[i]})[0], rtol=1e-5, atol=1e-6)
               for i in range(batches))
    print(f"batches post-processed by the callback: {len(results)}")
    print(f"top-1 classes of batch 0: {results[0].argmax(axis=1).tolist()}")
    print(f"npu results match onnxruntime: {same}")

    state["exit"] = True
    check("stop_thread", acl.util.stop_thread(thread_id))
    check("unsubscribe_report", acl.rt.unsubscribe_report(thread_id, stream))
    for in_ds, out_ds in datasets:
        for ds in (in_ds, out_ds):
            for j in range(acl.mdl.get_dataset_num_buffers(ds)):
                check("destroy_data_buffer", acl.destroy_data_buffer(acl.mdl.get_dataset_buffer(ds, j)))
            check("destroy_dataset", acl.mdl.destroy_dataset(ds))
    check("unload", acl.mdl.unload(model_id))
    check("destroy_desc", acl.mdl.destroy_desc(desc))
    for ptr in device:
        check("free", acl.rt.free(ptr))
    for ptr in pinned_in + pinned_out:
        check("free_host", acl.rt.free_host(ptr))
    shutil.rmtree(work, ignore_errors=True)
    check("destroy_stream", acl.rt.destroy_stream(stream))
    check("destroy_context", acl.rt.destroy_context(context))
    check("reset_device", acl.rt.reset_device(0))
    check("acl.finalize", acl.finalize())
    print("async inference: teardown complete")


if __name__ == "__main__":
    main()
