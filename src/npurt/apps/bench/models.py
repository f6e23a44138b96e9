"""Model execution: acl.mdl against ONNX Runtime called directly, in the same run.

model_exec_ratio: a small CNN (two convolutions, pooling, a classifier head; input
1x3x64x64) converted by `npurt atc` and run with acl.mdl.execute on device buffers, timed
alternately with ONNX Runtime's session.run on the same input (the same graph, the same
session options and thread count): the median of reference time / npurt time (target
>= 0.9; above 1 npurt is faster, which happens because its I/O is bound once and reused).
model_exec_async_enqueue_us: what acl.mdl.execute_async costs the host per call (a small
MLP), enqueue only: the stream waits on an event while the calls are timed, so the
executions (which on the simulated NPU use the host's cores) run after the loop (target <= 10).
"""
from __future__ import annotations

import os
import tempfile

import numpy as np

from .harness import Profile, Stat, clock, paired, per_call_us
from ...ge import engine
from ...ge.converter import convert
from .metrics import H2D, Session, check, value
from ...runtime import RUNTIME


def _cnn(path: str, side: int) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)

    def weight(name, shape):
        return numpy_helper.from_array((rng.standard_normal(shape) * 0.1).astype(np.float32), name)

    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c2"], ["r2"]),
             helper.make_node("GlobalAveragePool", ["r2"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("Gemm", ["f", "w3", "b3"], ["y"], transB=1)]
    graph = helper.make_graph(nodes, "bench_cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                                [1, 3, side, side])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
                              [weight("w1", (16, 3, 3, 3)), weight("b1", (16,)), weight("w2", (32, 16, 3, 3)),
                               weight("b2", (32,)), weight("w3", (10, 32)), weight("b3", (10,))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


def _mlp(path: str) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = numpy_helper.from_array(np.full((8, 16), 0.01, np.float32), "w")
    graph = helper.make_graph([helper.make_node("Gemm", ["x", "w"], ["y"], transB=1)], "bench_mlp",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)


class _Loaded:
    """A converted model loaded through acl.mdl with device buffers and datasets."""

    def __init__(self, s: Session, onnx_path: str, x: np.ndarray):
        acl = s.acl
        om = onnx_path[:-5]
        convert(onnx_path, om, acl.get_soc_name())  # what `npurt atc --model=... --framework=5` does
        self.acl = acl
        self.model_id = value(acl.mdl.load_from_file(om + ".om"), "acl.mdl.load_from_file")
        self.desc = acl.mdl.create_desc()
        check(acl.mdl.get_desc(self.desc, self.model_id), "acl.mdl.get_desc")
        in_size = acl.mdl.get_input_size_by_index(self.desc, 0)
        out_size = acl.mdl.get_output_size_by_index(self.desc, 0)
        self.dev_in, self.dev_out = s.malloc(in_size), s.malloc(out_size)
        check(acl.rt.memcpy(self.dev_in, in_size, x.ctypes.data, x.nbytes, H2D), "memcpy")
        self.inputs, self.outputs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
        check(acl.mdl.add_dataset_buffer(self.inputs, acl.create_data_buffer(self.dev_in, in_size))[1], "add buffer")
        check(acl.mdl.add_dataset_buffer(self.outputs, acl.create_data_buffer(self.dev_out, out_size))[1],
              "add buffer")
        self.out_size = out_size

    def output(self) -> np.ndarray:
        y = np.zeros(self.out_size // 4, np.float32)
        check(self.acl.rt.memcpy(y.ctypes.data, y.nbytes, self.dev_out, self.out_size, 2), "memcpy")
        return y

    def close(self) -> None:
        acl = self.acl
        for ds in (self.inputs, self.outputs):
            for i in range(acl.mdl.get_dataset_num_buffers(ds)):
                acl.destroy_data_buffer(acl.mdl.get_dataset_buffer(ds, i))
            acl.mdl.destroy_dataset(ds)
        acl.mdl.unload(self.model_id)
        acl.mdl.destroy_desc(self.desc)


def measure(s: Session, p: Profile) -> dict[str, Stat]:
    side = 16 if p.name == "tiny" else 64
    repeats = max(3, p.big_repeats * 2 + 1)
    with tempfile.TemporaryDirectory(prefix="npurt_bench_") as tmp:
        cnn_path, mlp_path = os.path.join(tmp, "cnn.onnx"), os.path.join(tmp, "mlp.onnx")
        _cnn(cnn_path, side)
        _mlp(mlp_path)
        x = np.random.default_rng(1).standard_normal((1, 3, side, side)).astype(np.float32)
        cnn = _Loaded(s, cnn_path, x)
        mlp = _Loaded(s, mlp_path, np.ones((1, 16), np.float32))
        try:
            threads = engine.ai_core_threads(RUNTIME.driver.spec.aicore_num)
            with open(cnn_path, "rb") as f:
                reference = engine.session(f.read(), threads)
            execute, acl = s.acl.mdl.execute, s.acl
            model_id, ins, outs = cnn.model_id, cnn.inputs, cnn.outputs
            check(execute(model_id, ins, outs), "acl.mdl.execute")
            expected = reference.run(None, {"x": x})[0].ravel()
            if not np.allclose(cnn.output(), expected, rtol=1e-5, atol=1e-6):
                raise RuntimeError("acl.mdl.execute and ONNX Runtime disagree on the benchmark model")
            inner = 20 if p.name != "tiny" else 5  # executions per timed sample (one is too short)

            def ort_run():
                for _ in range(inner):
                    reference.run(None, {"x": x})

            def npurt_run():
                for _ in range(inner):
                    execute(model_id, ins, outs)

            pair = paired(ort_run, npurt_run, repeats, p.warmup)
            execute_async, sync = acl.mdl.execute_async, acl.rt.synchronize_stream
            stream = s.stream
            m_id, m_in, m_out = mlp.model_id, mlp.inputs, mlp.outputs

            def enqueue(n):
                # the stream waits on an event while the calls are timed: only the host's cost
                # of queueing is measured; the executions run after the loop
                # (an ACL_EVENT_SYNC event: a wait before any record blocks until one completes)
                gate = value(acl.rt.create_event_with_flag(1), "acl.rt.create_event_with_flag")
                check(acl.rt.stream_wait_event(stream, gate), "stream_wait_event")
                t0 = clock()
                for _ in range(n):
                    execute_async(m_id, m_in, m_out, stream)
                t = clock() - t0
                check(acl.rt.record_event(gate, 0), "record_event")
                check(sync(stream), "synchronize_stream")
                check(acl.rt.destroy_event(gate), "destroy_event")
                return t

            check(execute_async(m_id, m_in, m_out, stream), "acl.mdl.execute_async")
            check(sync(stream), "synchronize_stream")
            calls = max(20, p.latency_calls // 10)
            enqueue_us = per_call_us(enqueue, calls, p.latency_repeats, p.warmup)
        finally:
            cnn.close()
            mlp.close()
    return {"model_exec_ratio": pair.ratio, "model_exec_ms": pair.subject_s.scaled(1e3 / inner),
            "model_ort_ms": pair.reference_s.scaled(1e3 / inner), "model_exec_async_enqueue_us": enqueue_us}
