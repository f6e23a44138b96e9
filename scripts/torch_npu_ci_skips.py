"""Which skips hold on torch_npu's own CI machines too, so its CI does not run those tests either.

A skipped test is not a pass. It leaves the count (as "skipped on its CI too") only when the
reason it skipped holds on torch_npu's CI as well, whatever device, CANN or driver is under it;
the rules, each tied to where the skip comes from:

* `slow`: the message "test is slow; run with PYTORCH_TEST_WITH_SLOW to enable test" (torch's
  `slowTest`, and torch_npu.testing's own slow-test check): torch_npu's CI job
  (.github/workflows/_build-and-test.yml -> ci/access_control_test.py) sets no
  PYTORCH_TEST_WITH_SLOW, so these skip there too.
* `unconditional`: the test function (or its class) carries `@unittest.skip(reason)` /
  `@skip(reason)` in the file, and the message is that reason.
* `rocm-only`: `@unittest.skipIf(not TEST_WITH_ROCM, reason)`; torch_npu's CI is not ROCm.
* `cuda-only`: `@unittest.skipIf(not TEST_CUDA, reason)` or `@onlyCUDA`; no CUDA on its CI.
* `privateuse1`: `@unittest.skipIf(FLAG, reason)` (or `FLAG or ...`) where FLAG is torch's
  `TEST_PRIVATEUSE1` or a module-level name the file sets to it and nothing else
  (test/test_npu.py: `TEST_NPUMALLOCASYNC = TEST_PRIVATEUSE1`). TEST_PRIVATEUSE1 is true
  wherever the privateuse1 backend, npu, is available: on every machine torch_npu's CI runs its
  tests on (test_npu.py replaces its TestCase with NoTest where it is false), so these skip
  there too. Flags that also read the machine (`TEST_MULTINPU = TEST_PRIVATEUSE1 and
  device_count() >= 2`: torch_npu's periodic job has one NPU, `--device /dev/davinci6`;
  `TEST_LARGE_TENSOR`, reassigned from the device's memory) are not such aliases.

Everything else stays among the tests the CI runs and counts as not passing: a device count, the
SoC npurt simulates (`SupportedDevices`), a CANN or torch version this machine reports
(`SkipIfNotGteCANNVersion`, "not available in this PyTorch version"), memory, a missing
feature, a `skipTest` in the test's body. The decorator rules look at the file's source (ast),
so a skip counts apart only when the test really carries that decorator and skipped with its
reason. Pure (no torch), so the counting script and its tests can use it.
"""
from __future__ import annotations

import ast

SLOW_MESSAGE = "test is slow; run with PYTORCH_TEST_WITH_SLOW to enable test"
REASONS = {
    "slow": "slow test: torch_npu's CI sets no PYTORCH_TEST_WITH_SLOW",
    "unconditional": "@unittest.skip in the test file: skipped everywhere",
    "rocm-only": "ROCm-only test (skipIf(not TEST_WITH_ROCM)): torch_npu's CI is not ROCm",
    "cuda-only": "CUDA-only test (skipIf(not TEST_CUDA) / onlyCUDA): torch_npu's CI has no CUDA",
    "privateuse1": "skipIf(TEST_PRIVATEUSE1 or an alias of it): true on every NPU machine, its CI's included",
}
PRIVATEUSE1 = "TEST_PRIVATEUSE1"


def _name(node) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


def privateuse1_aliases(tree) -> set[str]:
    """TEST_PRIVATEUSE1 and the module-level names whose every assignment is `NAME = TEST_PRIVATEUSE1`."""
    values: dict = {}

    def visit(body):
        for node in body:
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                plain = isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) \
                    and node.value.id == PRIVATEUSE1
                for t in targets:
                    if isinstance(t, ast.Name):
                        values.setdefault(t.id, []).append(plain)
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                for field in ("body", "orelse", "finalbody", "handlers"):
                    visit(getattr(node, field, []))
            elif isinstance(node, ast.ExceptHandler):
                visit(node.body)

    visit(tree.body)
    return {PRIVATEUSE1} | {name for name, plain in values.items() if all(plain)}


def _always_true(cond, aliases: set[str]) -> bool:
    """Whether a skip condition is true wherever TEST_PRIVATEUSE1 (and its aliases) are."""
    if isinstance(cond, ast.Name):
        return cond.id in aliases
    if isinstance(cond, ast.BoolOp) and isinstance(cond.op, ast.Or):
        return any(_always_true(v, aliases) for v in cond.values)
    return False


def _rule(decorator, aliases: set[str] = frozenset()) -> tuple[str, str | None] | None:
    """(rule, the reason it skips with; None: any message of that rule) for a decorator that
    skips on every machine torch_npu's CI has, else None."""
    name = _name(decorator)
    if name == "onlyCUDA":
        return "cuda-only", None
    if not isinstance(decorator, ast.Call) or not decorator.args:
        return None
    if name == "skip":
        reason = _literal(decorator.args[0])
        return ("unconditional", reason) if isinstance(reason, str) else None
    if name == "skipIf" and len(decorator.args) >= 2:
        cond, reason = decorator.args[0], _literal(decorator.args[1])
        if isinstance(reason, str) and isinstance(cond, ast.UnaryOp) and isinstance(cond.op, ast.Not):
            flag = _name(cond.operand)
            if flag == "TEST_WITH_ROCM":
                return "rocm-only", reason
            if flag == "TEST_CUDA":
                return "cuda-only", reason
        if isinstance(reason, str) and _always_true(cond, aliases):
            return "privateuse1", reason
    return None


def decorated(source: str) -> dict[str, tuple[str, str | None]]:
    """'Class.method' / 'function' -> (rule, reason) for the tests of a file whose decorators (or
    whose class's) skip them on torch_npu's CI too."""
    out: dict = {}
    tree = ast.parse(source)
    aliases = privateuse1_aliases(tree)

    def rules_of(decorators):
        return [r for r in (_rule(d, aliases) for d in decorators) if r]

    def visit(body, prefix, inherited):
        for node in body:
            if isinstance(node, ast.ClassDef):
                rules = rules_of(node.decorator_list)
                visit(node.body, f"{node.name}.", rules or inherited)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                rules = rules_of(node.decorator_list) or inherited
                if rules:
                    out[prefix + node.name] = rules[0]

    visit(tree.body, "", [])
    return out


def classify(table: dict, tests: set[str], node: str, message: str) -> str | None:
    """The rule (a key of REASONS) by which this skipped test skips on torch_npu's CI too, or
    None (it counts as not passing). `table`: decorated() of its file; `tests`: the test
    functions the file defines ('Class.method'); `node`: pytest's id ('...::Class::method');
    `message`: the skip's message."""
    message = (message or "").strip()
    if message.startswith(SLOW_MESSAGE):
        return "slow"
    parts = node.split("::")
    key = ".".join(parts[-2:]) if len(parts) >= 3 else parts[-1]
    if key not in tests:
        # a parametrized test (torch's instantiate_parametrized_tests appends the parameters)
        owner, _, method = key.rpartition(".")
        key = next((t for t in sorted(tests, key=len, reverse=True)
                    if t.rpartition(".")[0] == owner and method.startswith(t.rpartition(".")[2] + "_")), key)
    rule = table.get(key)
    if rule is None:
        return None
    kind, reason = rule
    return kind if reason is None or message == reason or message.endswith(": " + reason) else None


def test_names(source: str) -> set[str]:
    """'Class.method' / 'function' of every test function the file defines."""
    names: set[str] = set()

    def visit(body, prefix):
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{node.name}.")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                names.add(prefix + node.name)

    visit(ast.parse(source).body, "")
    return names
