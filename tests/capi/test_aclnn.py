"""aclnn, the two-phase operator API (npurt.capi.aclnn), from Python: tensors made as
aclCreateTensor makes them, aclnn<Op>GetWorkspaceSize plans, aclnn<Op> enqueues on a
stream; results against numpy. The same functions behind the C shims are tested from C in
tests/test_capi_kernels.py."""
from __future__ import annotations

import numpy as np
import pytest

from npurt.capi.aclnn import objects as O
from npurt.capi.aclnn import optable as T
from npurt.capi.aclnn import plans as P
from npurt.runtime import constants as C


class Ops:
    """Device tensors and the two phases, as a C program does them."""

    def __init__(self, rt):
        self.rt = rt
        self.stream = rt.create_stream()
        self.held = []

    def tensor(self, a: np.ndarray, strides=None, offset=0, base: np.ndarray | None = None):
        """An aclTensor viewing a copy of `base` (default: `a` itself) on the device."""
        base = a if base is None else base
        p = self.rt.malloc(max(base.nbytes, 1))
        if base.nbytes:
            self.rt.memcpy(p, base.nbytes, base.ctypes.data, base.nbytes, C.ACL_MEMCPY_HOST_TO_DEVICE)
        h = O.create_tensor(list(a.shape), a.ndim, O.acl_dtype(a.dtype), strides, offset, O.ACL_FORMAT_ND,
                            list(base.shape), base.ndim, p)
        self.held.append(h)
        return h

    def empty(self, shape, dtype):
        return self.tensor(np.zeros(shape, dtype))

    def read(self, h) -> np.ndarray:
        t = O.tensor(h)
        out = np.zeros(t.shape, t.dtype)
        self.rt.memcpy(out.ctypes.data, out.nbytes, t.data, out.nbytes, C.ACL_MEMCPY_DEVICE_TO_HOST)
        return out

    def scalar(self, value, dtype=np.float32):
        v = np.array([value], dtype)
        return O.create_scalar(v.ctypes.data, O.acl_dtype(v.dtype))

    def ints(self, values):
        return O.create_array("int array", list(values), len(values))

    def run(me, op: str, /, **args) -> int:  # noqa: N805 - `self` is an aclnn parameter name
        size, ex = T.get_workspace_size(op, args)
        ws = me.rt.malloc(size) if size else 0
        P.run_executor(ex, ws, size, me.stream, op)
        me.rt.synchronize_stream(me.stream)
        if ws:
            me.rt.free(ws)
        return size


@pytest.fixture
def ops(rt):
    return Ops(rt)


def rand(shape, dtype=np.float32, lo=-2, hi=2, seed=0):
    return np.random.default_rng(seed).uniform(lo, hi, shape).astype(dtype)


def test_add_with_alpha_equals_numpy_and_needs_no_workspace_when_alpha_is_one(ops):
    a, b = rand((4, 8)), rand((4, 8), seed=1)
    out = ops.empty((4, 8), np.float32)
    assert ops.run("Add", self=ops.tensor(a), other=ops.tensor(b), alpha=ops.scalar(1.0), out=out) == 0
    np.testing.assert_array_equal(ops.read(out), a + b)
    assert ops.run("Add", self=ops.tensor(a), other=ops.tensor(b), alpha=ops.scalar(2.5), out=out) == 0
    np.testing.assert_allclose(ops.read(out), a + np.float32(2.5) * b, rtol=1e-6)


@pytest.mark.parametrize("op,ref", [("Sub", lambda a, b: a - 2 * b), ("Mul", np.multiply), ("Div", np.divide),
                                    ("Maximum", np.maximum)])
@pytest.mark.parametrize("dtype,rtol", [(np.float32, 1e-6), (np.float16, 1e-3)])
def test_binary_ops_broadcast_and_equal_numpy(ops, op, ref, dtype, rtol):
    a, b = rand((3, 1, 5), dtype), rand((4, 1), dtype, 0.5, 2, seed=2)
    out = ops.empty((3, 4, 5), dtype)
    args = dict(self=ops.tensor(a), other=ops.tensor(b), out=out)
    if op == "Sub":
        args["alpha"] = ops.scalar(2.0)
    size = ops.run(op, **args)
    assert size > 0  # the broadcast operands are gathered into the workspace
    expected = ref(a.astype(np.float32), b.astype(np.float32))
    np.testing.assert_allclose(ops.read(out).astype(np.float32), expected.astype(dtype).astype(np.float32),
                               rtol=rtol, atol=rtol)


def test_dtype_promotion_and_a_differently_typed_out(ops):
    a, b = rand((6,), np.float16), rand((6,), np.float32, seed=3)
    out = ops.empty((6,), np.float32)
    ops.run("Mul", self=ops.tensor(a), other=ops.tensor(b), out=out)
    np.testing.assert_allclose(ops.read(out), a.astype(np.float32) * b, rtol=1e-6)
    i, j = np.arange(1, 7, dtype=np.int32), np.full(6, 4, np.int32)
    outf = ops.empty((6,), np.float32)
    ops.run("Div", self=ops.tensor(i), other=ops.tensor(j), out=outf)  # true division
    np.testing.assert_allclose(ops.read(outf), i / 4, rtol=1e-6)
    outi = ops.empty((6,), np.int64)
    ops.run("Add", self=ops.tensor(i), other=ops.tensor(j), alpha=ops.scalar(3, np.int32), out=outi)
    np.testing.assert_array_equal(ops.read(outi), i + 3 * j)


def test_scalar_and_inplace_variants(ops):
    a = rand((10,))
    t = ops.tensor(a)
    out = ops.empty((10,), np.float32)
    ops.run("Muls", self=t, other=ops.scalar(-3.0), out=out)
    np.testing.assert_allclose(ops.read(out), a * -3, rtol=1e-6)
    ops.run("Adds", self=t, other=ops.scalar(1.0), alpha=ops.scalar(2.0), out=out)
    np.testing.assert_allclose(ops.read(out), a + 2, rtol=1e-6)
    ops.run("InplaceAdd", selfRef=t, other=ops.tensor(np.ones(10, np.float32)), alpha=ops.scalar(1.0))
    np.testing.assert_allclose(ops.read(t), a + 1, rtol=1e-6)
    ops.run("InplaceRelu", selfRef=t)
    np.testing.assert_allclose(ops.read(t), np.maximum(a + 1, 0), rtol=1e-6)


def test_a_strided_view_input_and_output(ops):
    base = rand((4, 6))
    view = ops.tensor(np.zeros((6, 4), np.float32), strides=[1, 6], base=base)  # base.T
    out_base = np.zeros((4, 6), np.float32)
    out = ops.tensor(np.zeros((6, 4), np.float32), strides=[1, 6], base=out_base)
    ops.run("Relu", self=view, out=out)
    np.testing.assert_array_equal(_read_base(ops, out, out_base), np.maximum(base, 0))


def _read_base(ops, h, base):
    t = O.tensor(h)
    r = np.zeros_like(base)
    ops.rt.memcpy(r.ctypes.data, r.nbytes, t.data, r.nbytes, C.ACL_MEMCPY_DEVICE_TO_HOST)
    return r


@pytest.mark.parametrize("op", ["Relu", "Gelu"])
def test_activations(ops, op):
    x = rand((5, 7), lo=-3, hi=3)
    out = ops.empty((5, 7), np.float32)
    ops.run(op, self=ops.tensor(x), out=out)
    if op == "Relu":
        expected = np.maximum(x, 0)
    else:
        x64 = x.astype(np.float64)
        expected = 0.5 * x64 * (1 + np.tanh(np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64 ** 3)))
    np.testing.assert_allclose(ops.read(out), expected, rtol=1e-5, atol=1e-6)


def test_cast_to_every_table_dtype(ops):
    x = rand((8,), lo=-100, hi=100)
    for dt, acl in [(np.float16, C.ACL_FLOAT16), (np.int32, C.ACL_INT32), (np.int8, C.ACL_INT8),
                    (np.float64, C.ACL_DOUBLE)]:
        src = x if dt != np.int8 else x / 2
        out = ops.empty((8,), dt)
        ops.run("Cast", self=ops.tensor(src.astype(np.float32)), dtype=acl, out=out)
        np.testing.assert_array_equal(ops.read(out), src.astype(np.float32).astype(dt))


@pytest.mark.parametrize("op", ["Matmul", "Mm"])
def test_matmul_equals_numpy(ops, op):
    a, b = rand((5, 7)), rand((7, 3), seed=4)
    out = ops.empty((5, 3), np.float32)
    ops.run(op, self=ops.tensor(a), mat2=ops.tensor(b), out=out, cubeMathType=0)
    np.testing.assert_allclose(ops.read(out), a @ b, rtol=1e-5, atol=1e-5)


def test_batched_and_broadcast_matmul_and_a_transposed_operand(ops):
    a, b = rand((2, 3, 4)), rand((4, 5), seed=5)
    out = ops.empty((2, 3, 5), np.float32)
    ops.run("Matmul", self=ops.tensor(a), mat2=ops.tensor(b), out=out, cubeMathType=1)
    np.testing.assert_allclose(ops.read(out), a @ b, rtol=1e-5, atol=1e-5)
    bt = rand((5, 4), seed=6)
    mat2 = ops.tensor(np.zeros((4, 5), np.float32), strides=[1, 4], base=bt)
    out2 = ops.empty((2, 3, 5), np.float32)
    ops.run("BatchMatMul", self=ops.tensor(a), mat2=ops.tensor(np.broadcast_to(bt.T, (2, 4, 5)).copy()),
            out=out2, cubeMathType=0)
    np.testing.assert_allclose(ops.read(out2), a @ bt.T, rtol=1e-5, atol=1e-5)
    out3 = ops.empty((2, 3, 5), np.float32)
    ops.run("Matmul", self=ops.tensor(a), mat2=mat2, out=out3, cubeMathType=0)
    np.testing.assert_allclose(ops.read(out3), a @ bt.T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_softmax_over_any_dim(ops, dim):
    x = rand((3, 4, 5), lo=-5, hi=5)
    out = ops.empty((3, 4, 5), np.float32)
    ops.run("Softmax", self=ops.tensor(x), dim=dim, out=out)
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    np.testing.assert_allclose(ops.read(out), e / e.sum(axis=dim, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("dims,keep", [([1], False), ([0, 2], True), ([], False), ([-1, -2], False)])
def test_reductions(ops, dims, keep):
    x = rand((3, 4, 5))
    axis = tuple(dims) if dims else None
    for op, ref in (("ReduceSum", np.sum), ("Mean", np.mean), ("Amax", np.max)):
        expected = ref(x.astype(np.float64), axis=axis, keepdims=keep)
        out = ops.empty(np.shape(expected), np.float32)
        args = dict(self=ops.tensor(x), dim=ops.ints(dims), keepDim=keep, out=out)
        if op != "Amax":
            args["dtype"] = C.ACL_FLOAT
        ops.run(op, **args)
        np.testing.assert_allclose(ops.read(out), expected, rtol=1e-5, atol=1e-5, err_msg=op)


def test_reduce_sum_into_another_dtype(ops):
    x = rand((4, 6), np.float16)
    out = ops.empty((4,), np.float32)
    ops.run("ReduceSum", self=ops.tensor(x), dim=ops.ints([1]), keepDim=False, dtype=C.ACL_FLOAT, out=out)
    np.testing.assert_allclose(ops.read(out), x.astype(np.float32).sum(axis=1), rtol=1e-5)


def test_layer_norm_with_weight_bias_and_the_statistics(ops):
    x, g, b = rand((3, 8)), rand((8,), seed=7), rand((8,), seed=8)
    out, mean, rstd = ops.empty((3, 8), np.float32), ops.empty((3, 1), np.float32), ops.empty((3, 1), np.float32)
    ops.run("LayerNorm", input=ops.tensor(x), normalizedShape=ops.ints([8]), weightOptional=ops.tensor(g),
            biasOptional=ops.tensor(b), eps=1e-5, out=out, meanOutOptional=mean, rstdOutOptional=rstd)
    x64 = x.astype(np.float64)
    mu, var = x64.mean(-1, keepdims=True), x64.var(-1, keepdims=True)
    np.testing.assert_allclose(ops.read(out), (x64 - mu) / np.sqrt(var + 1e-5) * g + b, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(ops.read(mean), mu, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ops.read(rstd), 1 / np.sqrt(var + 1e-5), rtol=1e-5)


def test_permute(ops):
    x = rand((2, 3, 4))
    out = ops.empty((4, 2, 3), np.float32)
    ops.run("Permute", self=ops.tensor(x), dims=ops.ints([2, 0, 1]), out=out)
    np.testing.assert_array_equal(ops.read(out), x.transpose(2, 0, 1))


def test_fill_zero_arange_and_copy(ops):
    base = np.zeros((3, 4), np.float32)
    t = ops.tensor(base)
    ops.run("InplaceFillScalar", selfRef=t, value=ops.scalar(2.5))
    np.testing.assert_array_equal(ops.read(t), np.full((3, 4), 2.5, np.float32))
    ops.run("InplaceZero", selfRef=t)
    np.testing.assert_array_equal(ops.read(t), base)
    r = ops.empty((7,), np.int32)
    ops.run("Arange", start=ops.scalar(3, np.int32), end=ops.scalar(17, np.int32), step=ops.scalar(2, np.int32), out=r)
    np.testing.assert_array_equal(ops.read(r), np.arange(3, 17, 2, dtype=np.int32))
    f = ops.empty((4,), np.float32)
    ops.run("Arange", start=ops.scalar(1.0), end=ops.scalar(0.0), step=ops.scalar(-0.25), out=f)
    np.testing.assert_allclose(ops.read(f), np.arange(1.0, 0.0, -0.25), rtol=1e-6)
    with pytest.raises(O.AclnnError):
        T.get_workspace_size("Arange", dict(start=ops.scalar(0.0), end=ops.scalar(1.0), step=ops.scalar(0.0), out=f))
    row = rand((4,), np.float16)
    ops.run("InplaceCopy", selfRef=t, src=ops.tensor(row))  # broadcast and cast
    np.testing.assert_array_equal(ops.read(t), np.broadcast_to(row.astype(np.float32), (3, 4)))


# ---------------------------------------------------------------- workspace and bad input
def test_a_workspace_smaller_than_asked_is_refused_and_the_stream_stays_usable(ops):
    a, b = rand((2, 3)), rand((3,), seed=9)
    out = ops.empty((2, 3), np.float32)
    size, ex = T.get_workspace_size("Add", dict(self=ops.tensor(a), other=ops.tensor(b), alpha=ops.scalar(1.0),
                                                out=out))
    assert size > 0
    ws = ops.rt.malloc(size)
    with pytest.raises(O.AclnnError) as info:
        P.run_executor(ex, ws, size - 1, ops.stream, "Add")
    assert info.value.code == O.ACLNN_ERR_PARAM_INVALID
    assert "workspaceSize" in str(info.value)
    size, ex = T.get_workspace_size("Add", dict(self=ops.tensor(a), other=ops.tensor(b), alpha=ops.scalar(1.0),
                                                out=out))
    with pytest.raises(O.AclnnError) as info:
        P.run_executor(ex, 0, size, ops.stream, "Add")
    assert info.value.code == O.ACLNN_ERR_PARAM_NULLPTR
    ops.run("Add", self=ops.tensor(a), other=ops.tensor(b), alpha=ops.scalar(1.0), out=out)
    np.testing.assert_array_equal(ops.read(out), a + b)


def test_a_workspace_that_is_not_device_memory_of_that_size_is_refused(ops):
    a, b = rand((2, 3)), rand((3,), seed=9)
    out = ops.empty((2, 3), np.float32)

    def plan():
        return T.get_workspace_size("Add", dict(self=ops.tensor(a), other=ops.tensor(b), alpha=ops.scalar(1.0),
                                                out=out))
    size, ex = plan()
    host = np.zeros(size, np.uint8)
    with pytest.raises(O.AclnnError) as info:
        P.run_executor(ex, host.ctypes.data, size, ops.stream, "Add")
    assert info.value.code == O.ACLNN_ERR_PARAM_INVALID and "host memory" in str(info.value)
    size, ex = plan()
    small = ops.rt.malloc(64)
    with pytest.raises(O.AclnnError) as info:
        P.run_executor(ex, small, size, ops.stream, "Add")  # claims `size` bytes, holds 64
    assert info.value.code == O.ACLNN_ERR_PARAM_INVALID and "past the end" in str(info.value)


def test_the_workspace_is_used_only_within_its_size(ops):
    """The planned temporaries are placed in the workspace: a workspace of exactly the size
    asked works, and every kernel argument lies in it or in the op's tensors."""
    a, b = rand((3, 1, 5)), rand((4, 1), seed=10)
    out = ops.empty((3, 4, 5), np.float32)
    size, ex = T.get_workspace_size("Sub", dict(self=ops.tensor(a), other=ops.tensor(b), alpha=ops.scalar(0.5),
                                                out=out))
    plan = P.executor(ex)
    assert all(t.offset + t.nbytes <= size for _, args, _ in plan.steps for t in args if type(t) is P.Temp)
    ws = ops.rt.malloc(size)
    P.run_executor(ex, ws, size, ops.stream, "Sub")
    ops.rt.synchronize_stream(ops.stream)
    np.testing.assert_allclose(ops.read(out), a - 0.5 * b, rtol=1e-6)


def test_an_executor_runs_once_unless_repeatable(ops):
    a = rand((4,))
    out = ops.empty((4,), np.float32)
    size, ex = T.get_workspace_size("Relu", dict(self=ops.tensor(a), out=out))
    P.run_executor(ex, 0, size, ops.stream, "Relu")
    with pytest.raises(O.AclnnError) as info:
        P.run_executor(ex, 0, size, ops.stream, "Relu")
    assert info.value.code == O.ACLNN_ERR_PARAM_INVALID
    size, ex = T.get_workspace_size("Relu", dict(self=ops.tensor(a), out=out))
    P.executor(ex).repeatable = True
    P.run_executor(ex, 0, size, ops.stream, "Relu")
    P.run_executor(ex, 0, size, ops.stream, "Relu")
    P.destroy_executor(ex)
    with pytest.raises(O.AclnnError):
        P.run_executor(ex, 0, size, ops.stream, "Relu")


@pytest.mark.parametrize("case,code", [
    ("shapes", O.ACLNN_ERR_PARAM_INVALID), ("out_shape", O.ACLNN_ERR_PARAM_INVALID),
    ("null", O.ACLNN_ERR_PARAM_NULLPTR), ("stale", O.ACLNN_ERR_PARAM_INVALID),
    ("dtype", O.ACLNN_ERR_PARAM_INVALID), ("matmul_k", O.ACLNN_ERR_PARAM_INVALID),
    ("cube", O.ACLNN_ERR_PARAM_INVALID), ("dim", O.ACLNN_ERR_PARAM_INVALID),
])
def test_bad_arguments_are_refused_in_the_first_phase(ops, case, code):
    a = ops.tensor(rand((2, 3)))
    out = ops.empty((2, 3), np.float32)
    one = ops.scalar(1.0)
    calls = {
        "shapes": ("Add", dict(self=a, other=ops.tensor(rand((4,))), alpha=one, out=out)),
        "out_shape": ("Add", dict(self=a, other=a, alpha=one, out=ops.empty((3, 2), np.float32))),
        "null": ("Add", dict(self=a, other=0, alpha=one, out=out)),
        "stale": ("Relu", dict(self=_destroyed(ops), out=out)),
        "dtype": ("Softmax", dict(self=ops.tensor(np.zeros((2, 3), np.int32)), dim=0,
                                  out=ops.empty((2, 3), np.int32))),
        "matmul_k": ("Matmul", dict(self=a, mat2=a, out=out, cubeMathType=0)),
        "cube": ("Mm", dict(self=a, mat2=ops.tensor(rand((3, 3))), out=out, cubeMathType=9)),
        "dim": ("Softmax", dict(self=a, dim=5, out=out)),
    }
    op, args = calls[case]
    with pytest.raises(O.AclnnError) as info:
        T.get_workspace_size(op, args)
    assert info.value.code == code


def test_a_tensor_without_device_memory_is_refused(ops):
    h = O.create_tensor([4], 1, C.ACL_FLOAT, None, 0, O.ACL_FORMAT_ND, [4], 1, 0)
    with pytest.raises(O.AclnnError) as info:
        T.get_workspace_size("Relu", dict(self=h, out=ops.empty((4,), np.float32)))
    assert info.value.code == O.ACLNN_ERR_PARAM_NULLPTR and "tensorData" in str(info.value)


def _destroyed(ops):
    h = ops.tensor(rand((2, 3)))
    O.destroy(O.TENSORS, h, "tensor")
    return h


def test_create_checks_its_arguments_and_destroy_forgets_the_object(ops):
    with pytest.raises(O.AclnnError) as info:
        O.create_tensor(None, 2, C.ACL_FLOAT, None, 0, 2, None, 0, 0)
    assert info.value.code == O.ACLNN_ERR_PARAM_NULLPTR
    with pytest.raises(O.AclnnError) as info:
        O.create_tensor([2, -1], 2, C.ACL_FLOAT, None, 0, 2, None, 0, 0)
    assert info.value.code == O.ACLNN_ERR_PARAM_INVALID
    with pytest.raises(O.AclnnError):
        O.create_scalar(0, C.ACL_FLOAT)
    h = O.create_array("int array", [1, 2, 3], 3)
    assert O.array(h, "int array", "dim").values == (1, 2, 3)
    with pytest.raises(O.AclnnError):
        O.destroy(O.ARRAYS, h, "array", "float array")  # the wrong kind of array
    O.destroy(O.ARRAYS, h, "array", "int array")
    with pytest.raises(O.AclnnError):
        O.destroy(O.ARRAYS, h, "array", "int array")


def test_ops_run_as_ordinary_stream_tasks_in_stream_order(ops):
    """Two dependent ops on one stream, no synchronize between them: stream order holds."""
    a = rand((1000,))
    t, mid, out = ops.tensor(a), ops.empty((1000,), np.float32), ops.empty((1000,), np.float32)
    for op, args in (("Muls", dict(self=t, other=ops.scalar(2.0), out=mid)),
                     ("Adds", dict(self=mid, other=ops.scalar(1.0), alpha=ops.scalar(1.0), out=out))):
        size, ex = T.get_workspace_size(op, args)
        ws = ops.rt.malloc(size) if size else 0
        P.run_executor(ex, ws, size, ops.stream, op)
        if ws:
            ops.rt.free(ws)  # stream-ordered: the queued op still has it
    ops.rt.synchronize_stream(ops.stream)
    np.testing.assert_allclose(ops.read(out), a * 2 + 1, rtol=1e-6)
