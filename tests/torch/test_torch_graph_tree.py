"""torch_npu.npu._graph_tree (NPU graph trees: torch's cudagraph_trees ported at import, port.py)
and torch_npu.npu._npugraph_conditional_nodes: torch_npu's names and signatures
(torch_npu/npu/_graph_tree.py), and graph trees running a function warm-up, record, replay."""
from __future__ import annotations

import ast
import sys

import pytest
import torch

from npurt.apps.runner import install_torch_npu_alias
from npurt.torch import port


@pytest.fixture(scope="module", autouse=True)
def _torch_npu_alias():
    """The torch_npu names for this file's tests only: later files (tests/torch/test_torch_npu_shim.py)
    expect `torch_npu` unimported outside `npurt run --torch-npu`."""
    saved = {k: v for k, v in sys.modules.items() if k.startswith("torch_npu") or k == "torch.npu.utils"}
    finders = list(sys.meta_path)
    install_torch_npu_alias()
    yield
    for k in [k for k in sys.modules if k.startswith("torch_npu")]:
        del sys.modules[k]
    sys.modules.update(saved)
    sys.meta_path[:] = finders


@pytest.fixture(scope="module")
def gt():
    import torch_npu.npu._graph_tree as module
    yield module
    module.reset_npugraph_trees()


def test_the_port_spells_cuda_npu_but_keeps_inductors_config_keys():
    assert port.rename("CUDAGraphNode") == "NPUGraphNode"
    assert port.rename("cudagraphify_impl") == "npugraphify_impl"
    assert port.rename("_use_cuda_memory_pool_manager") == "_use_npu_memory_pool_manager"
    assert port.rename("torch._C._cuda_getCheckpointState") == "torch._C._npu_getCheckpointState"
    assert port.rename("set config.triton.cudagraph_trees_history_recording") == \
        "set config.triton.cudagraph_trees_history_recording"


def test_an_assert_becomes_torch_npus_runtime_error():
    tree = port.Port("assert x > 0\nassert y, 'why'\n").visit(ast.parse("assert x > 0\nassert y, 'why'\n"))
    code = compile(ast.fix_missing_locations(tree), "<t>", "exec")
    with pytest.raises(RuntimeError, match=r"^check x > 0 fail$"):
        exec(code, {"x": 0, "y": 1})
    with pytest.raises(RuntimeError, match="^why$"):
        exec(code, {"x": 1, "y": 0})


def test_torch_npus_names_and_signatures(gt, npu):
    for name in ("NPUGraphNode", "NPUWarmupNode", "NPUGraphTreeManager", "npugraphify", "npugraphify_impl",
                 "get_npugraph_segments", "check_memory_pool", "clear_cublas_manager", "StorageWeakRefWrapper",
                 "TreeManagerContainer", "reset_npugraph_trees", "ExecutionState", "CompilationMode"):
        assert hasattr(gt, name), name
    assert sys.modules["torch_npu.npu._graph_tree"] is gt
    with pytest.raises(RuntimeError, match="check isinstance"):
        gt.AliasesPriorGraphOutput("not a tuple")
    # torch_npu's TLS keys: apart from torch's own graph trees'
    gt.get_container(0)
    assert 0 in gt.local.npu_tree_manager_containers
    manager = gt.NPUGraphTreeManager(0)
    assert manager.new_graph_id() != manager.new_graph_id()
    assert manager.npu_graphs_thread_pool is not None
    with pytest.raises(RuntimeError, match="check not"):
        gt.npugraphify(lambda inputs: [], [], device_index=0, is_backward=True, is_inference=True)


def _record_and_replay(gt, npu, steps: int):
    w = torch.randn(4, 4, device=npu)

    def first(inputs):
        x, = inputs
        inputs.clear()
        return [torch.relu(x @ w), x * 2]

    def second(inputs):
        a, b = inputs
        inputs.clear()
        return [a + b]

    one = gt.npugraphify_impl(first, [torch.randn(2, 4, device=npu)], (), device_index=0, is_backward=False,
                              is_inference=True, stack_traces=[None, None])
    two = gt.npugraphify_impl(second, [torch.randn(2, 4, device=npu), torch.randn(2, 4, device=npu)], (),
                              device_index=0, is_backward=False, is_inference=True, stack_traces=[None])
    states = []
    for _ in range(steps):
        gt.mark_step_begin()
        x = torch.randn(2, 4, device=npu)
        a, b = one([x.clone()])
        (c,) = two([a, b])
        assert torch.allclose(c.cpu(), (torch.relu(x @ w) + x * 2).cpu())
        states.append(gt.get_manager(0).path_state)
    return states, (one, two)  # the tree manager lives while its functions do


def test_graph_trees_warm_up_record_then_replay_a_chain_of_two_functions(gt, npu):
    states, _functions = _record_and_replay(gt, npu, 5)
    assert states == [gt.ExecutionState.WARMUP, gt.ExecutionState.RECORDING] + [gt.ExecutionState.EXECUTION] * 3
    manager = gt.get_manager(0)
    (root,) = manager.get_roots()
    assert isinstance(root, gt.NPUGraphNode) and root.num_descendants() == 1
    # the recorded outputs live in the tree's private pool
    pool = manager.npu_graphs_thread_pool
    assert gt.get_npugraph_segments(pool)
    gt.reset_npugraph_trees()


def _cond_graph(npu, pred, x):
    install_torch_npu_alias()
    from torch_npu.npu._npugraph_conditional_nodes import NPUGraphCaptureControlFlowOpDispatchMode
    graph = torch.npu.NPUGraph()
    with torch.npu.graph(graph, stream=torch.npu.Stream()), NPUGraphCaptureControlFlowOpDispatchMode():
        out = torch.cond(pred, lambda v: v.sin(), lambda v: v.cos(), (x,))
    return graph, out


def test_a_torch_cond_in_a_capture_is_an_if_node_that_reads_its_predicate_at_replay(npu):
    x = torch.randn(4, device=npu)
    pred = torch.tensor(True, device=npu)
    graph, out = _cond_graph(npu, pred, x)
    for value in (True, False, True):
        pred.fill_(value)  # the predicate's value at replay picks the branch
        graph.replay()
        torch.npu.synchronize()
        assert torch.allclose(out.cpu(), (x.sin() if value else x.cos()).cpu())


def test_an_if_node_needs_a_one_element_bool_npu_predicate_and_a_capture(npu):
    x = torch.randn(4, device=npu)
    with pytest.raises(RuntimeError, match="Conditions must be bool tensors"):
        _cond_graph(npu, torch.tensor(1, device=npu, dtype=torch.int32), x)
    with pytest.raises(RuntimeError, match="capture_begin\\(\\) must be called before begin_capture_to_if_node"):
        torch.npu.NPUGraph().begin_capture_to_if_node(torch.tensor(True, device=npu))


def test_a_random_op_inside_a_branch_of_a_captured_cond_is_refused(npu):
    # torch_npu refuses it; a conditional body's replays would draw no offset of their own
    install_torch_npu_alias()
    from torch_npu.npu._npugraph_conditional_nodes import NPUGraphCaptureControlFlowOpDispatchMode
    x = torch.ones(4, device=npu)
    with pytest.raises(RuntimeError, match="RNG op during graph capture but generator is not registered"):
        with torch.npu.graph(torch.npu.NPUGraph(), stream=torch.npu.Stream()), \
                NPUGraphCaptureControlFlowOpDispatchMode():
            torch.cond(torch.tensor(True, device=npu), lambda v: v + torch.randn_like(v), lambda v: v * 2, (x,))
