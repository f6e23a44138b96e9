"""The C side of libacl_rt.so, generated from the spec: one shim per C function.

Every function the spec declares is defined and exported (so every program links). A shim
checks that npurt's Python side has started (pitfall 1 of shared/design/c-interface.md: a cffi
function whose Python side failed would return 0, ACL_SUCCESS) and calls its Python entry
point `npurt_py_<name>` with the *wire* form of each argument (`Spec.wire`): addresses and
handles as `uintptr_t`, outputs of handles as `uintptr_t *`, integers as themselves, a struct
passed by value as its address, a variadic format already formatted. Which Python function
answers (an implementation or the generic "not supported" stub) is decided when Python
starts (`npurt.capi.entry`), so the library does not change when an implementation is added.

`python_api(spec)` is the cffi `embedding_api` (the entry points' prototypes);
`c_source(spec)` is the shim file, with the start-up code in `runtime_c.py`'s text.
"""
from __future__ import annotations

import hashlib

from .spec import Spec

NOT_READY = 500000  # ACL_ERROR_INTERNAL_ERROR: npurt's Python side could not start


def _wire_params(spec: Spec, fn: dict) -> list[tuple[str, str, str]]:
    """(wire type, name, C expression passing the argument) per parameter."""
    out = []
    params = fn["params"]
    for i, p in enumerate(params):
        if p["decl"] == "...":
            continue
        name = p["name"] or f"arg{i}"
        ctype = spec.param_type(p)
        wire = spec.wire(ctype)
        kind = spec.kind(ctype)
        if kind == "struct":
            expr = f"(uintptr_t)&{name}"
        elif i + 1 < len(params) and params[i + 1]["decl"] == "..." and name == "fmt":
            expr = "(uintptr_t)npurt_formatted"
        elif wire == "uintptr_t":
            expr = f"(uintptr_t){name}"
        elif wire.endswith("*"):
            expr = f"({wire}){name}"
        else:
            expr = f"({wire}){name}"
        out.append((wire, name, expr))
    return out


# The fast path (npurt.capi.fast): C function -> (its output parameter or None, the parameters
# passed to Python). Only aclError functions whose inputs are integers, addresses or handles.
FAST = {
    "aclrtMalloc": ("devPtr", ("size", "policy")),
    "aclrtFree": (None, ("devPtr",)),
    "aclrtMemcpy": (None, ("dst", "destMax", "src", "count", "kind")),
    "aclrtMemcpyAsync": (None, ("dst", "destMax", "src", "count", "kind", "stream")),
    "aclrtSynchronizeStream": (None, ("stream",)),
    "aclrtGetDevice": ("deviceId", ()),
}

# The direct calls: for these, the callable in npurt.capi.fast is the C accelerator's entry
# (npurt._speedups.Entry, npurt.runtime.entries), whose `c_api` capsule holds its fast case as
# C functions taking C arguments; the shim calls that first, under the GIL, and the callable
# only when it declines (a listening tool, no current context, a cache miss, bad input: the
# Python path decides, as for the facade). Without the accelerator there is no capsule.
DIRECT = {
    "aclrtMalloc": "npurt_pool_capi->malloc(npurt_fast_fn[{k}], (unsigned long long)size, (long long)policy, &d_)",
    "aclrtFree": "npurt_pool_capi->free(npurt_fast_fn[{k}], (uintptr_t)devPtr)",
}

_FAST_C = """
/* ---- the fast path of the hot functions (npurt.capi.fast) ---- */
static PyObject *npurt_fast_fn[NPURT_NFAST];
static PyObject *npurt_fast_fail_fn;
static int npurt_fast_ready;

/* npurt._speedups' table of direct calls (its NpurtPoolCapi; `size` checks the layout) */
typedef struct {
    size_t size;
    int (*malloc)(PyObject *entry, unsigned long long size, long long policy, uintptr_t *out);
    int (*free)(PyObject *entry, uintptr_t ptr);
} npurt_pool_capi_t;
static const npurt_pool_capi_t *npurt_pool_capi;

static void npurt_load_pool_capi(PyObject *entry)
{
    PyObject *c = PyObject_GetAttrString(entry, "c_api");
    const npurt_pool_capi_t *t = NULL;
    if (c != NULL && PyCapsule_IsValid(c, "npurt._speedups.pool_capi"))
        t = (const npurt_pool_capi_t *)PyCapsule_GetPointer(c, "npurt._speedups.pool_capi");
    Py_XDECREF(c);
    PyErr_Clear();
    if (t != NULL && t->size == sizeof(npurt_pool_capi_t) && (npurt_pool_capi == NULL || npurt_pool_capi == t))
        npurt_pool_capi = t;
}

static void npurt_load_fast(void)
{
    PyGILState_STATE g = PyGILState_Ensure();
    PyObject *m = PyImport_ImportModule("npurt.capi.fast");
    int ok = m != NULL;
    for (int i = 0; ok && i < NPURT_NFAST; i++) {
        npurt_fast_fn[i] = PyObject_GetAttrString(m, npurt_fast_names[i]);
        ok = npurt_fast_fn[i] != NULL;
    }
    if (ok) {
        npurt_fast_fail_fn = PyObject_GetAttrString(m, "fail");
        ok = npurt_fast_fail_fn != NULL;
    }
    for (int i = 0; ok && i < NPURT_NFAST; i++) {
        if (npurt_fast_direct[i])
            npurt_load_pool_capi(npurt_fast_fn[i]);
    }
    Py_XDECREF(m);
    if (!ok)
        PyErr_Clear();      /* the cffi path serves every call */
    npurt_fast_ready = ok;
    PyGILState_Release(g);
}

/* A C thread's first call goes through cffi, which gives the thread one Python thread state
 * for its life (npurt's current context lives there); only then may it take the GIL itself,
 * with that thread state, remembered here (NULL: not bound yet; one thread-local variable,
 * so a call looks up one). */
static __thread PyThreadState *npurt_thread_ts;

static int npurt_bind_thread(void)
{
    if (npurt_thread_ts == NULL) {
        if (npurt_py_ready() != 1)
            return 0;
        npurt_thread_ts = PyGILState_GetThisThreadState();
        return npurt_thread_ts != NULL;
    }
    return 1;
}

#if PY_VERSION_HEX >= 0x030D0000
#define npurt_current_ts() PyThreadState_GetUnchecked()
#else
#define npurt_current_ts() _PyThreadState_UncheckedGet()
#endif

/* What PyGILState_Ensure / _Release do for a bound thread, without their thread-local
 * look-ups: 1 if the GIL was taken here (npurt_gil_drop gives it back), 0 if this thread
 * already held it (a call from Python code, or from a callback npurt runs). */
static inline int npurt_gil_take(void)
{
    if (npurt_current_ts() == npurt_thread_ts)
        return 0;
    PyEval_RestoreThread(npurt_thread_ts);
    return 1;
}

static inline void npurt_gil_drop(int taken)
{
    if (taken)
        PyEval_SaveThread();
}

static aclError npurt_fast_error(int k)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value != NULL && tb != NULL)
        PyException_SetTraceback(value, tb);
    PyObject *name = PyUnicode_FromString(npurt_fast_names[k]);
    PyObject *args[2] = {value ? value : Py_None, name};
    PyObject *r = name ? PyObject_Vectorcall(npurt_fast_fail_fn, args, 2, NULL) : NULL;
    long code = r ? PyLong_AsLong(r) : 500000L;
    Py_XDECREF(r);
    Py_XDECREF(name);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
    return (aclError)code;
}
"""


def _fast_arg(spec: Spec, p: dict) -> str:
    ctype = spec.param_type(p)
    kind = spec.kind(ctype)
    name = p["name"]
    if kind == "ptr":
        return f"PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t){name})"
    r = spec.resolve(ctype)
    if kind == "int" and (r.startswith("uint") or r in ("size_t", "unsigned int", "unsigned")):
        return f"PyLong_FromUnsignedLongLong((unsigned long long){name})"
    return f"PyLong_FromLongLong((long long){name})"


def _fast_body(spec: Spec, fn: dict, k: int) -> list[str]:
    out_name, names = FAST[fn["name"]]
    params = {p["name"]: p for p in fn["params"]}
    n = len(names)
    cond = "npurt_fast_ready" + (f" && {out_name}" if out_name else "") + " && npurt_bind_thread()"
    lines = [f"    if ({cond}) {{", "        int g_ = npurt_gil_take();"]
    if fn["name"] in DIRECT:
        done = f"*{out_name} = (void *)d_; " if out_name else ""
        lines += ["        uintptr_t d_ = 0;"] * bool(out_name) + [
                  f"        if (npurt_pool_capi && {DIRECT[fn['name']].format(k=k)}) {{",
                  f"            {done}npurt_gil_drop(g_);", "            return ACL_SUCCESS;", "        }"]
    if n:
        lines.append(f"        PyObject *a_[{n}];")
        lines.append("        int ok_ = 1;")
        for i, pname in enumerate(names):
            lines.append(f"        a_[{i}] = {_fast_arg(spec, params[pname])}; ok_ = ok_ && a_[{i}];")
        lines.append(f"        PyObject *r_ = ok_ ? PyObject_Vectorcall(npurt_fast_fn[{k}], a_, {n}, NULL) : NULL;")
        lines.extend(f"        Py_XDECREF(a_[{i}]);" for i in range(n))
    else:
        lines.append(f"        PyObject *r_ = PyObject_Vectorcall(npurt_fast_fn[{k}], NULL, 0, NULL);")
    lines.append("        aclError ret_ = ACL_SUCCESS;")
    lines.append(f"        if (r_ == NULL) ret_ = npurt_fast_error({k});")
    if out_name:
        out_type = spec.resolve(spec.param_type(params[out_name]))
        if out_type.endswith("**"):
            store = f"*{out_name} = (void *)(uintptr_t)PyLong_AsUnsignedLongLong(r_);"
        else:
            store = f"*{out_name} = ({out_type[:-1]})PyLong_AsLongLong(r_);"
        lines.append(f"        else {{ {store} Py_DECREF(r_); if (PyErr_Occurred()) ret_ = npurt_fast_error({k}); }}")
    else:
        lines.append("        else Py_DECREF(r_);")
    lines += ["        npurt_gil_drop(g_);", "        return ret_;", "    }"]
    return lines


# Device allocations whose C call site is recorded for the fault explanation (c/start.c):
# the exported function wraps the shim and notes *devPtr with its caller's return address;
# aclrtFree forgets it.
ALLOC_SITES = ("aclrtMalloc", "aclrtMallocAlign32", "aclrtMallocCached", "aclrtMallocWithCfg")


def _site_wrapper(fn: dict, params: str) -> str:
    name, ret = fn["name"], fn["ret"]
    args = ", ".join(p["name"] for p in fn["params"])
    if name == "aclrtFree":
        after = "    if (r_ == ACL_SUCCESS) npurt_forget_alloc((uintptr_t)devPtr);"
    else:
        after = (f"    if (r_ == ACL_SUCCESS && devPtr) npurt_note_alloc((uintptr_t)*devPtr, size, "
                 f'__builtin_return_address(0), "{name}");')
    return (f"NPURT_EXPORT {ret} {name}({params})\n{{\n    {ret} r_ = npurt_shim_{name}({args});\n"
            f"{after}\n    return r_;\n}}\n")


def _ret_wire(spec: Spec, fn: dict) -> str:
    return spec.wire(fn["ret"])


def interface_digest(spec: Spec) -> str:
    """A digest of every entry point's wire signature: the library and the Python side that
    binds it must agree on it (an old library with a newer npurt would otherwise leave
    functions unbound, which cffi answers with 0, ACL_SUCCESS)."""
    return hashlib.sha256(python_api(spec).encode()).hexdigest()[:24]


def python_api(spec: Spec) -> str:
    lines = ["int npurt_py_ready(void);", "void npurt_py_flush(void);",
             "int npurt_py_describe_fault(uintptr_t addr, int exact, char *out, size_t size);"]
    for name, fn in sorted(spec.functions.items()):
        params = ", ".join(f"{w} {n}" for w, n, _ in _wire_params(spec, fn)) or "void"
        lines.append(f"{_ret_wire(spec, fn)} npurt_py_{name}({params});")
    return "\n".join(lines) + "\n"


def _failure_value(spec: Spec, fn: dict) -> str:
    ret = fn["ret"]
    if ret == "aclError":
        return f"(aclError){NOT_READY}"
    if spec.kind(ret) == "ptr":
        return "NULL"
    return f"({ret})0"


def c_source(spec: Spec, includes: list[str], runtime_c: str) -> str:
    out = ["#include <stdarg.h>", "#include <stdio.h>", "#include <stdint.h>"]
    out += [f'#include "{h}"' for h in includes]
    out.append(python_api(spec))  # prototypes: cffi defines these after this source
    fast = [n for n in FAST if n in spec.functions]
    out.append(f"#define NPURT_NFAST {max(len(fast), 1)}")
    out.append("static const char *npurt_fast_names[NPURT_NFAST] = {" + ", ".join(f'"{n}"' for n in fast) + "};")
    out.append("static const int npurt_fast_direct[NPURT_NFAST] = {" + ", ".join(str(int(n in DIRECT)) for n in fast) + "};")
    out.append(runtime_c)
    out.append(_FAST_C)
    out.append(f'const char *npurt_interface_digest(void) {{ return "{interface_digest(spec)}"; }}\n')
    for name, fn in sorted(spec.functions.items()):
        params = ", ".join(p["decl"] for p in fn["params"]) or "void"
        ret = fn["ret"]
        wires = _wire_params(spec, fn)
        call = f"npurt_py_{name}({', '.join(e for _, _, e in wires)})"
        body = [f"    if (__builtin_expect(npurt_state != 1, 0) && !npurt_ensure_started()) {{",
                f"        return{'' if ret == 'void' else ' ' + _failure_value(spec, fn)};", "    }"]
        if name == "aclGetRecentErrMsg":
            body = ["    if (npurt_state != 1 && !npurt_ensure_started()) {", "        return npurt_start_error;",
                    "    }"]
        if name in FAST and name in fast:
            body += _fast_body(spec, fn, fast.index(name))
        if fn["params"] and fn["params"][-1]["decl"] == "...":
            fmt = wires[-1][1]
            body += ["    char npurt_formatted[4096];", "    va_list npurt_ap;", f"    va_start(npurt_ap, {fmt});",
                     f"    vsnprintf(npurt_formatted, sizeof npurt_formatted, {fmt}, npurt_ap);",
                     "    va_end(npurt_ap);"]
        if ret == "void":
            body.append(f"    {call};")
        elif spec.kind(ret) == "ptr":
            body.append(f"    return ({ret})(uintptr_t){call};")
        else:
            body.append(f"    return ({ret}){call};")
        sep = "" if ret.endswith("*") else " "
        if name in ALLOC_SITES or name == "aclrtFree":
            out.append(f"static inline {ret}{sep}npurt_shim_{name}({params})\n{{\n" + "\n".join(body) + "\n}\n")
            out.append(_site_wrapper(fn, params))
            continue
        out.append(f"NPURT_EXPORT {ret}{sep}{name}({params})\n{{\n" + "\n".join(body) + "\n}\n")
    return "\n".join(out)
