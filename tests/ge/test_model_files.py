"""Hostile and unusual .om files (issue 29): a model file that names external weight data
(item 4), corrupt payloads (item 9), and weight memory for models with many small
initializers (item 10). Each .om here is a real conversion by `npurt atc`, then rewritten
with a valid header and checksum, as an attacker (or a bad disk) would."""
from __future__ import annotations

import json
import random

import numpy as np
import pytest

import onnx_models as M
import npurt.acl as acl
from npurt.acl import constants as C
from npurt.ge import om

onnx = M.onnx
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

OK = 0
BAD_MODEL = C.ACL_ERROR_GE_PARAM_INVALID  # 145000: GE's ModelHelper::LoadModel for unparsable content
BAD_PARTITION = C.ACL_ERROR_GE_EXEC_LOAD_MODEL_PARTITION_FAILED  # 545002: GenerateGeModel, a model partition


@pytest.fixture
def dev(fresh_runtime):
    assert acl.init() == OK
    assert acl.rt.set_device(0) == OK
    yield


def _add_model(weight: np.ndarray):
    """y = x + w, w an initializer of `weight`'s shape (float32)."""
    return M._model([helper.make_node("Add", ["x", "w"], ["y"])],
                    [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(weight.shape))],
                    [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(weight.shape))],
                    [numpy_helper.from_array(weight, "w")])


def _convert(model, tmp_path, name="m") -> bytes:
    path = M.atc(M.save(model, tmp_path / f"{name}.onnx"), tmp_path / name)
    return open(path, "rb").read()


def _repack(data: bytes, meta: dict | None = None, graph: bytes | None = None) -> bytes:
    """The .om with its description and/or graph replaced; header and checksum made valid."""
    old_meta, old_graph, h = om.unpack(data)
    meta = old_meta if meta is None else meta
    if type(meta.get("ops", 0)) is not int:  # the header's op count: pack needs an int
        meta = {**meta, "ops": 0}
    return om.pack(meta, old_graph if graph is None else graph,
                   h["name"], h["platform_version"], bool(h["is_unknow_model"]))


def _load(data: bytes) -> tuple[int, int]:
    return acl.mdl.load_from_mem(acl.util.bytes_to_ptr(data), len(data))


def _run(model_id: int, x: np.ndarray) -> np.ndarray:
    ptrs = []

    def buf(nbytes):
        ptr, ret = acl.rt.malloc(nbytes, 0)
        assert ret == OK
        ptrs.append(ptr)
        return ptr

    xin, yout = buf(x.nbytes), buf(x.nbytes)
    assert acl.rt.memcpy(xin, x.nbytes, x.ctypes.data, x.nbytes, C.ACL_MEMCPY_HOST_TO_DEVICE) == OK
    ins, outs = acl.mdl.create_dataset(), acl.mdl.create_dataset()
    acl.mdl.add_dataset_buffer(ins, acl.create_data_buffer(xin, x.nbytes))
    acl.mdl.add_dataset_buffer(outs, acl.create_data_buffer(yout, x.nbytes))
    assert acl.mdl.execute(model_id, ins, outs) == OK
    y = np.empty_like(x)
    assert acl.rt.memcpy(y.ctypes.data, y.nbytes, yout, y.nbytes, C.ACL_MEMCPY_DEVICE_TO_HOST) == OK
    for p in ptrs:
        acl.rt.free(p)
    return y


# ---------------------------------------------------------------- item 4: no file read by a model
def test_a_model_naming_external_weight_data_is_refused_and_reads_no_file(dev, tmp_path, monkeypatch):
    w = np.zeros(256, np.float32)  # big enough to be handed to ONNX Runtime from weight memory
    data = _convert(_add_model(w), tmp_path)
    secret = np.arange(256, dtype=np.float32) + 1000
    (tmp_path / "secret.bin").write_bytes(secret.tobytes())  # a file in the working directory
    monkeypatch.chdir(tmp_path)
    meta, graph, _ = om.unpack(data)
    proto = onnx.ModelProto()
    proto.ParseFromString(graph)
    init = proto.graph.initializer[0]
    init.ClearField("raw_data")
    init.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "secret.bin"), ("offset", "0"), ("length", str(secret.nbytes))):
        entry = init.external_data.add()
        entry.key, entry.value = key, value
    hostile = _repack(data, graph=proto.SerializeToString())

    model_id, ret = _load(hostile)
    if ret == OK:  # what the loader did before issue 29: the model returned the file's bytes
        leaked = _run(model_id, np.zeros(256, np.float32))
        acl.mdl.unload(model_id)
        pytest.fail(f"the model loaded and read secret.bin (equal: {np.array_equal(leaked, secret)})")
    assert (model_id, ret) == (0, BAD_MODEL)
    message = acl.get_recent_err_msg()
    assert "external weight data" in message and "secret.bin" in message
    # the untouched model still loads and runs
    model_id, ret = _load(data)
    assert ret == OK
    x = np.ones(256, np.float32)
    np.testing.assert_array_equal(_run(model_id, x), x + w)
    assert acl.mdl.unload(model_id) == OK


def test_a_constant_node_naming_external_data_is_refused_too(dev, tmp_path, monkeypatch):
    data = _convert(_add_model(np.zeros(256, np.float32)), tmp_path)
    (tmp_path / "secret.bin").write_bytes(bytes(1024))
    monkeypatch.chdir(tmp_path)
    meta, graph, _ = om.unpack(data)
    proto = onnx.ModelProto()
    proto.ParseFromString(graph)
    value = numpy_helper.from_array(np.zeros(256, np.float32), "c")
    value.ClearField("raw_data")
    value.data_location = TensorProto.EXTERNAL
    entry = value.external_data.add()
    entry.key, entry.value = "location", "secret.bin"
    proto.graph.node.insert(0, helper.make_node("Constant", [], ["c"], value=value))
    model_id, ret = _load(_repack(data, graph=proto.SerializeToString()))
    assert (model_id, ret) == (0, BAD_MODEL)
    assert "external weight data" in acl.get_recent_err_msg()


# ---------------------------------------------------------------- item 9: corrupt payloads
def _mutate_meta(meta: dict, rnd: random.Random) -> dict:
    """A copy of `meta` with one field somewhere replaced by a value of another type, or gone."""
    meta = json.loads(json.dumps(meta))
    garbage = [None, "x", 3.5, -7, 1 << 70, [], {}, [1, "a"], True, {"k": 1}]
    node, path = meta, []
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            break
        key = rnd.choice(keys)
        path.append(key)
        if isinstance(node[key], (dict, list)) and node[key] and rnd.random() < 0.6:
            node = node[key]
            continue
        if isinstance(node, dict) and rnd.random() < 0.25:
            del node[key]
        else:
            node[key] = rnd.choice(garbage)
        break
    return meta


def _mutate_bytes(graph: bytes, rnd: random.Random) -> bytes:
    b = bytearray(graph)
    how = rnd.random()
    if how < 0.3:
        return bytes(b[:rnd.randrange(len(b))])
    for _ in range(rnd.randrange(1, 8)):
        b[rnd.randrange(len(b))] = rnd.randrange(256)
    return bytes(b)


def test_corrupt_payloads_are_ge_errors_with_a_message_never_internal_errors(dev, tmp_path):
    data = _convert(M.mlp(), tmp_path)
    meta, graph, _ = om.unpack(data)
    rnd = random.Random(29)
    # 145000 for the description, 545002 for a graph that does not load, 545001: ONNX Runtime
    # refused a graph that parsed
    allowed = {OK, BAD_MODEL, BAD_PARTITION, C.ACL_ERROR_GE_LOAD_MODEL}
    seen = {}
    for trial in range(300):
        if trial % 2:
            hostile = _repack(data, meta=_mutate_meta(meta, rnd))
        else:
            hostile = _repack(data, graph=_mutate_bytes(graph, rnd))
        model_id, ret = _load(hostile)
        seen[ret] = seen.get(ret, 0) + 1
        assert ret in allowed, f"trial {trial}: load returned {ret}: {acl.get_recent_err_msg()}"
        if ret != OK:
            assert acl.get_recent_err_msg(), f"trial {trial}: error {ret} without a message"
            continue
        desc = acl.mdl.create_desc()
        assert acl.mdl.get_desc(desc, model_id) == OK
        for i in range(acl.mdl.get_num_inputs(desc)):
            size = acl.mdl.get_input_size_by_index(desc, i)
            assert type(size) is int and size >= 0, f"trial {trial}: input size {size!r}"
        for i in range(acl.mdl.get_num_outputs(desc)):
            size = acl.mdl.get_output_size_by_index(desc, i)
            assert type(size) is int and size >= 0, f"trial {trial}: output size {size!r}"
        acl.mdl.destroy_desc(desc)
        assert acl.mdl.unload(model_id) == OK
    assert seen.get(BAD_MODEL, 0) > 50 and seen.get(BAD_PARTITION, 0) > 20, seen  # most are refused
    model_id, ret = _load(data)  # the runtime is still usable
    assert ret == OK and acl.mdl.unload(model_id) == OK


def test_sizes_of_the_wrong_type_in_the_description_are_refused_at_load(dev, tmp_path):
    data = _convert(M.mlp(), tmp_path)
    meta, _, _ = om.unpack(data)
    for field, value in (("size", 1536.5), ("size", "1536"), ("dims", [3, "16"]), ("dtype", None)):
        bad = json.loads(json.dumps(meta))
        bad["inputs"][0][field] = value
        model_id, ret = _load(_repack(data, meta=bad))
        assert (model_id, ret) == (0, BAD_MODEL), (field, value)
        assert "corrupt" in acl.get_recent_err_msg()
        hostile = _repack(data, meta=bad)
        work, weight, ret = acl.mdl.query_size_from_mem(acl.util.bytes_to_ptr(hostile), len(hostile))
        assert ret == BAD_MODEL, (field, value)


# ---------------------------------------------------------------- item 10: query_size is what load needs
def _many_small_initializers(count: int, elements: int):
    """y = x + w0 + w1 + ...: `count` initializers of `elements` float32 each."""
    rng = np.random.default_rng(count)
    inits = [numpy_helper.from_array(rng.standard_normal(elements).astype(np.float32), f"w{i}")
             for i in range(count)]
    nodes, prev = [], "x"
    for i in range(count):
        out = "y" if i == count - 1 else f"s{i}"
        nodes.append(helper.make_node("Add", [prev, f"w{i}"], [out]))
        prev = out
    model = M._model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [elements])],
                     [helper.make_tensor_value_info("y", TensorProto.FLOAT, [elements])], inits)
    return model, inits


@pytest.mark.parametrize("count,elements", [(9, 1), (16, 3), (5, 65), (40, 100)])
def test_query_size_reports_what_load_with_mem_needs(dev, tmp_path, count, elements):
    model, inits = _many_small_initializers(count, elements)
    data = _convert(model, tmp_path, f"small{count}x{elements}")
    work, weight, ret = acl.mdl.query_size_from_mem(acl.util.bytes_to_ptr(data), len(data))
    assert ret == OK
    weight_ptr, ret = acl.rt.malloc(max(weight, 1), 0)
    assert ret == OK
    work_ptr = 0
    if work:
        work_ptr, ret = acl.rt.malloc(work, 0)
        assert ret == OK
    try:
        model_id, ret = acl.mdl.load_from_mem_with_mem(acl.util.bytes_to_ptr(data), len(data), work_ptr, work,
                                                      weight_ptr, weight)
        assert ret == OK, acl.get_recent_err_msg()
        x = np.arange(elements, dtype=np.float32)
        expected = x + sum(numpy_helper.to_array(t) for t in inits)
        np.testing.assert_allclose(_run(model_id, x), expected, rtol=1e-5)
        assert acl.mdl.unload(model_id) == OK
    finally:
        acl.rt.free(weight_ptr)
        if work_ptr:
            acl.rt.free(work_ptr)


def test_a_graph_that_does_not_parse_is_a_model_partition_failure(dev, tmp_path):
    data = _convert(M.mlp(), tmp_path)
    _, graph, _ = om.unpack(data)
    model_id, ret = _load(_repack(data, graph=graph[: len(graph) // 2]))
    assert (model_id, ret) == (0, BAD_PARTITION)
    assert "cannot be parsed" in acl.get_recent_err_msg()
