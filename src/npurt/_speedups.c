/* npurt._speedups: the optional C accelerator of the caching pool's hot path.
 *
 * What lives here (npurt.runtime.accel documents the contract and holds the pure-Python
 * twins that pass the same tests):
 *
 *   BlockBase  a pool block's record as a C struct (addr, size, requested, align32, state,
 *              uses, segment, prev, next, pool) with an intrusive link into its bin, so a bin
 *              takes, gives back and claims a given block in O(1) with no allocation;
 *   Bin        the free blocks of one size: the interface of the dict the Python pool uses
 *              as an ordered set (bin[block] = None, popitem(), pop(block, default), len,
 *              iteration, `untracked`);
 *   PoolBase   the base of DeviceMemory: its counters as C fields, the small size classes
 *              as a C array of bins, and malloc/free whose cached-block case runs here;
 *              everything else calls the Python pool (`_malloc`, `_free`);
 *   Entry      the runtime's and the facades' malloc/free (npurt.runtime.malloc/free,
 *              acl.rt.malloc/free, the C interface's aclrtMalloc/aclrtFree) as C callables:
 *              the fast case here, anything else (a listening tool, no current context, an
 *              argument to convert, a cache miss, an error) by calling the Python function
 *              they replace, before anything was changed.
 *
 * Thread safety is the GIL's, as in the Python pool: between its first change and its
 * last, a fast path calls no Python code and releases nothing, so no other thread sees a
 * half-done operation. References that could run Python code when dropped (a block's `uses`
 * dict) are dropped after the last change.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define SIZE_CLASS 512
#define SMALL_REQUEST (1 << 20)
#define FAST_MAX (SMALL_REQUEST - 32)
#define FAST_ROUND (32 + SIZE_CLASS - 1)
#define CLASS_MASK (~(long long)(SIZE_CLASS - 1))
#define NCLASSES (SMALL_REQUEST / SIZE_CLASS + 1)

enum { FREE = 0, LIVE = 1, PENDING = 2 };

typedef struct BinObject BinObject;

typedef struct BlockObject {
    PyObject_HEAD
    PyObject *addr;          /* int, kept so that malloc returns it without allocating */
    Py_ssize_t size;
    Py_ssize_t requested;
    char align32;
    int state;
    PyObject *segment, *prev, *next, *uses, *pool;
    BinObject *bin;          /* the bin holding it (which holds a reference), or NULL */
    struct BlockObject *bprev, *bnext;
} BlockObject;

struct BinObject {
    PyObject_HEAD
    BlockObject *head, *tail;
    Py_ssize_t len;
    char untracked;
};

static PyTypeObject BlockType, BinType, PoolType, EntryType;

/* ------------------------------------------------------------------ Block */
static int
block_init(BlockObject *self, PyObject *args, PyObject *kw)
{
    PyObject *addr, *segment, *pool;
    Py_ssize_t size;
    static char *names[] = {"addr", "size", "segment", "pool", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OnOO", names, &addr, &size, &segment, &pool))
        return -1;
    Py_INCREF(addr); Py_XSETREF(self->addr, addr);
    Py_INCREF(segment); Py_XSETREF(self->segment, segment);
    Py_INCREF(pool); Py_XSETREF(self->pool, pool);
    self->size = size;
    self->requested = 0;
    self->align32 = 0;
    self->state = FREE;
    Py_CLEAR(self->prev); Py_CLEAR(self->next); Py_CLEAR(self->uses);
    return 0;
}

static int
block_traverse(BlockObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->addr); Py_VISIT(self->segment); Py_VISIT(self->prev);
    Py_VISIT(self->next); Py_VISIT(self->uses); Py_VISIT(self->pool);
    return 0;
}

static int
block_clear(BlockObject *self)
{
    Py_CLEAR(self->segment); Py_CLEAR(self->prev); Py_CLEAR(self->next);
    Py_CLEAR(self->uses); Py_CLEAR(self->pool);
    return 0;
}

static void
block_dealloc(BlockObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    block_clear(self);
    Py_CLEAR(self->addr);
    tp->tp_free((PyObject *)self);  /* a subclass's type reference is dropped by its own dealloc */
}

static PyMemberDef block_members[] = {
    {"addr", T_OBJECT_EX, offsetof(BlockObject, addr), 0, "start address (int)"},
    {"size", T_PYSSIZET, offsetof(BlockObject, size), 0, "bytes of the block"},
    {"requested", T_PYSSIZET, offsetof(BlockObject, requested), 0, "the size malloc was asked for"},
    {"align32", T_BOOL, offsetof(BlockObject, align32), 0, "malloc_align32: no 32 bytes of padding"},
    {"state", T_INT, offsetof(BlockObject, state), 0, "FREE, LIVE or PENDING"},
    {"segment", T_OBJECT, offsetof(BlockObject, segment), 0, NULL},
    {"prev", T_OBJECT, offsetof(BlockObject, prev), 0, NULL},
    {"next", T_OBJECT, offsetof(BlockObject, next), 0, NULL},
    {"uses", T_OBJECT, offsetof(BlockObject, uses), 0, "stream -> last sequence number using it"},
    {"pool", T_OBJECT, offsetof(BlockObject, pool), 0, NULL},
    {NULL}
};

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npurt._speedups.BlockBase",
    .tp_basicsize = sizeof(BlockObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A caching-pool block record (C struct); npurt.runtime.memory.Block adds the methods.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)block_init,
    .tp_traverse = (traverseproc)block_traverse,
    .tp_clear = (inquiry)block_clear,
    .tp_dealloc = (destructor)block_dealloc,
    .tp_members = block_members,
};

/* ------------------------------------------------------------------ Bin */
/* The bin takes over the caller's reference to `b`. */
static inline void
bin_push(BinObject *bin, BlockObject *b)
{
    b->bin = bin;
    b->bnext = NULL;
    b->bprev = bin->tail;
    if (bin->tail) bin->tail->bnext = b; else bin->head = b;
    bin->tail = b;
    bin->len++;
}

/* Unlinks `b`; the caller gets the bin's reference. */
static inline void
bin_unlink(BinObject *bin, BlockObject *b)
{
    if (b->bprev) b->bprev->bnext = b->bnext; else bin->head = b->bnext;
    if (b->bnext) b->bnext->bprev = b->bprev; else bin->tail = b->bprev;
    b->bprev = b->bnext = NULL;
    b->bin = NULL;
    bin->len--;
}

static int
check_block(PyObject *o)
{
    if (!PyObject_TypeCheck(o, &BlockType)) {
        PyErr_Format(PyExc_TypeError, "a Bin holds pool blocks, not %.100s", Py_TYPE(o)->tp_name);
        return -1;
    }
    return 0;
}

static int
bin_ass_subscript(BinObject *self, PyObject *key, PyObject *value)
{
    if (check_block(key) < 0) return -1;
    BlockObject *b = (BlockObject *)key;
    if (value == NULL) {  /* del bin[block] */
        if (b->bin != self) { PyErr_SetObject(PyExc_KeyError, key); return -1; }
        bin_unlink(self, b);
        Py_DECREF(b);
        return 0;
    }
    if (value != Py_None) {
        PyErr_SetString(PyExc_ValueError, "a Bin is a set of blocks: bin[block] = None");
        return -1;
    }
    if (b->bin == self) return 0;  /* as a dict: setting a present key keeps its place */
    if (b->bin != NULL) {  /* a block is in one bin at most */
        BinObject *old = b->bin;
        bin_unlink(old, b);
        bin_push(self, b);  /* the old bin's reference moves */
        return 0;
    }
    Py_INCREF(b);
    bin_push(self, b);
    return 0;
}

static PyObject *
bin_subscript(BinObject *self, PyObject *key)
{
    if (PyObject_TypeCheck(key, &BlockType) && ((BlockObject *)key)->bin == self) Py_RETURN_NONE;
    PyErr_SetObject(PyExc_KeyError, key);
    return NULL;
}

static Py_ssize_t
bin_length(BinObject *self)
{
    return self->len;
}

static int
bin_contains(BinObject *self, PyObject *key)
{
    return PyObject_TypeCheck(key, &BlockType) && ((BlockObject *)key)->bin == self;
}

static PyObject *
bin_popitem(BinObject *self, PyObject *Py_UNUSED(ignored))
{
    BlockObject *b = self->tail;
    if (b == NULL) {
        PyErr_SetString(PyExc_KeyError, "popitem(): bin is empty");
        return NULL;
    }
    bin_unlink(self, b);
    PyObject *pair = PyTuple_New(2);
    if (pair == NULL) { Py_INCREF(b); bin_push(self, b); Py_DECREF(b); return NULL; }
    PyTuple_SET_ITEM(pair, 0, (PyObject *)b);  /* the bin's reference */
    Py_INCREF(Py_None);
    PyTuple_SET_ITEM(pair, 1, Py_None);
    return pair;
}

static PyObject *
bin_pop(BinObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "pop(block[, default])");
        return NULL;
    }
    PyObject *key = args[0];
    if (PyObject_TypeCheck(key, &BlockType) && ((BlockObject *)key)->bin == self) {
        BlockObject *b = (BlockObject *)key;
        bin_unlink(self, b);
        Py_DECREF(b);
        Py_RETURN_NONE;
    }
    if (nargs == 2) { Py_INCREF(args[1]); return args[1]; }
    PyErr_SetObject(PyExc_KeyError, key);
    return NULL;
}

static PyObject *
bin_snapshot(BinObject *self)
{
    PyObject *list = PyList_New(self->len);
    if (list == NULL) return NULL;
    Py_ssize_t i = 0;
    for (BlockObject *b = self->head; b != NULL; b = b->bnext, i++) {
        Py_INCREF(b);
        PyList_SET_ITEM(list, i, (PyObject *)b);
    }
    return list;
}

static PyObject *
bin_iter(BinObject *self)
{
    PyObject *list = bin_snapshot(self);  /* a snapshot: the bin may change while iterated */
    if (list == NULL) return NULL;
    PyObject *it = PyObject_GetIter(list);
    Py_DECREF(list);
    return it;
}

static PyObject *
bin_keys(BinObject *self, PyObject *Py_UNUSED(ignored))
{
    return bin_snapshot(self);
}

static int
bin_traverse(BinObject *self, visitproc visit, void *arg)
{
    for (BlockObject *b = self->head; b != NULL; b = b->bnext) Py_VISIT(b);
    return 0;
}

static int
bin_clear(BinObject *self)
{
    while (self->head != NULL) {
        BlockObject *b = self->head;
        bin_unlink(self, b);
        Py_DECREF(b);
    }
    return 0;
}

static void
bin_dealloc(BinObject *self)
{
    PyObject_GC_UnTrack(self);
    bin_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
bin_repr(BinObject *self)
{
    return PyUnicode_FromFormat("<Bin of %zd blocks%s>", self->len, self->untracked ? ", untracked" : "");
}

static PyMappingMethods bin_mapping = {
    .mp_length = (lenfunc)bin_length,
    .mp_subscript = (binaryfunc)bin_subscript,
    .mp_ass_subscript = (objobjargproc)bin_ass_subscript,
};

static PySequenceMethods bin_sequence = {
    .sq_contains = (objobjproc)bin_contains,
};

static PyMethodDef bin_methods[] = {
    {"popitem", (PyCFunction)bin_popitem, METH_NOARGS, "(block, None): take the block cached last"},
    {"pop", (PyCFunction)(void (*)(void))bin_pop, METH_FASTCALL, "pop(block[, default]): take this block"},
    {"keys", (PyCFunction)bin_keys, METH_NOARGS, "a list of the blocks, oldest first"},
    {NULL}
};

static PyMemberDef bin_members[] = {
    {"untracked", T_BOOL, offsetof(BinObject, untracked), 0,
     "dropped from the sizes best_fit searches (a push re-adds it, under the pool's lock)"},
    {NULL}
};

static PyTypeObject BinType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npurt._speedups.Bin",
    .tp_basicsize = sizeof(BinObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The free blocks of one size: an insertion-ordered set with O(1) take and claim.",
    .tp_new = PyType_GenericNew,
    .tp_traverse = (traverseproc)bin_traverse,
    .tp_clear = (inquiry)bin_clear,
    .tp_dealloc = (destructor)bin_dealloc,
    .tp_repr = (reprfunc)bin_repr,
    .tp_as_mapping = &bin_mapping,
    .tp_as_sequence = &bin_sequence,
    .tp_iter = (getiterfunc)bin_iter,
    .tp_methods = bin_methods,
    .tp_members = bin_members,
};

/* ------------------------------------------------------------------ PoolBase */
typedef struct {
    PyObject_HEAD
    long long allocated, peak, num_frees;
    char poison;
    PyObject *live;          /* dict: start address -> LIVE block */
    PyObject *small_pool;    /* the PagePool whose small bins `small` mirrors */
    PyObject *small_dirty;   /* its `dirty` set */
    BinObject *small[NCLASSES];
} PoolObject;

static PyObject *zero_ret;   /* the int 0 */

/* policy 0: CPython keeps one 0 object, so the identity test nearly always decides */
static inline int
is_zero(PyObject *o)
{
    if (o == zero_ret) return 1;
    if (!PyLong_CheckExact(o)) return 0;
    int overflow;
    long v = PyLong_AsLongAndOverflow(o, &overflow);
    return !overflow && v == 0;
}

static PyObject *str_malloc_any, *str_malloc_slow, *str_free_slow, *str_completed_seq, *str_context, *str_alive,
    *str_memory, *str_active, *str_device_by_physical;

/* A cached block for `size` bytes (HUGE_FIRST, not align32), or NULL with no error set when
 * the fast path does not apply. */
static PyObject *
pool_try_malloc(PoolObject *self, PyObject *size_obj)
{
    if (!PyLong_CheckExact(size_obj)) return NULL;
    int overflow;
    long long size = PyLong_AsLongLongAndOverflow(size_obj, &overflow);
    if (overflow || size <= 0 || size > FAST_MAX) { PyErr_Clear(); return NULL; }
    BinObject *bin = self->small[((size + FAST_ROUND) & CLASS_MASK) / SIZE_CLASS];
    if (bin == NULL || bin->tail == NULL || self->live == NULL) return NULL;
    BlockObject *b = bin->tail;
    bin_unlink(bin, b);  /* ours now (the bin's reference) */
    b->state = LIVE;
    b->requested = (Py_ssize_t)size;
    b->align32 = 0;
    if (PyDict_SetItem(self->live, b->addr, (PyObject *)b) < 0) {
        b->state = FREE;
        bin_push(bin, b);
        return NULL;  /* with the error set */
    }
    long long allocated = self->allocated += b->size;
    if (allocated > self->peak) self->peak = allocated;
    PyObject *addr = b->addr;
    Py_INCREF(addr);
    Py_DECREF(b);  /* `live` holds it */
    return addr;
}

/* 1: freed; 0: not the fast path (nothing changed); -1: an error. A block with recorded uses
 * takes the fast path once every use has retired; the uses are forgotten (None). */
static int
pool_try_free(PoolObject *self, PyObject *addr)
{
    if (self->live == NULL || self->poison) return 0;
    PyObject *o = PyDict_GetItemWithError(self->live, addr);
    if (o == NULL) { if (PyErr_Occurred()) PyErr_Clear(); return 0; }
    if (!PyObject_TypeCheck(o, &BlockType)) return 0;
    BlockObject *b = (BlockObject *)o;
    if (b->pool != self->small_pool || b->state != LIVE || b->size > SMALL_REQUEST
        || b->size % SIZE_CLASS || self->small_dirty == NULL)
        return 0;
    BinObject *bin = self->small[b->size / SIZE_CLASS];
    if (bin == NULL || bin->untracked) return 0;
    PyObject *uses = b->uses;
    if (uses != NULL && uses != Py_None) {
        if (!PyDict_CheckExact(uses)) return 0;
        Py_ssize_t pos = 0;
        PyObject *stream, *seq;
        while (PyDict_Next(uses, &pos, &stream, &seq)) {
            /* completed_seq is a plain slot of Stream: reading it runs no Python code */
            PyObject *done = PyObject_GetAttr(stream, str_completed_seq);
            if (done == NULL) { PyErr_Clear(); return 0; }
            int retired = PyLong_CheckExact(done) && PyLong_CheckExact(seq)
                && PyObject_RichCompareBool(done, seq, Py_GE) == 1;
            Py_DECREF(done);
            if (!retired) { PyErr_Clear(); return 0; }  /* queued work uses it: the Python path parks it */
        }
    }
    if (PySet_Add(self->small_dirty, b->segment) < 0) return -1;
    Py_INCREF(b);
    if (PyDict_DelItem(self->live, addr) < 0) { Py_DECREF(b); return -1; }
    self->num_frees++;
    self->allocated -= b->size;
    b->uses = NULL;  /* its reference is dropped below, after the last change */
    b->state = FREE;
    bin_push(bin, b);  /* takes our reference */
    if (uses != NULL) Py_DECREF(uses);
    return 1;
}

static PyObject *
pool_malloc(PoolObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (kwnames == NULL && nargs >= 1 && nargs <= 3
        && (nargs < 2 || is_zero(args[1]))
        && (nargs < 3 || args[2] == Py_False)) {
        PyObject *addr = pool_try_malloc(self, args[0]);
        if (addr != NULL || PyErr_Occurred()) return addr;
    }
    /* the Python pool: checks, other policies and sizes, a cache miss */
    PyObject *call[4] = {(PyObject *)self, nargs > 0 ? args[0] : NULL, NULL, NULL};
    if (kwnames != NULL || nargs < 1) {
        PyObject *meth = PyObject_GetAttr((PyObject *)self, str_malloc_any);
        if (meth == NULL) return NULL;
        PyObject *res = PyObject_Vectorcall(meth, args, nargs | 0, kwnames);
        Py_DECREF(meth);
        return res;
    }
    call[2] = nargs > 1 ? args[1] : zero_ret;
    call[3] = nargs > 2 ? args[2] : Py_False;
    return PyObject_VectorcallMethod(str_malloc_slow, call, 4 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

static PyObject *
pool_free(PoolObject *self, PyObject *addr)
{
    int r = pool_try_free(self, addr);
    if (r > 0) Py_RETURN_NONE;
    if (r < 0) return NULL;
    PyObject *call[2] = {(PyObject *)self, addr};
    return PyObject_VectorcallMethod(str_free_slow, call, 2 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
}

static PyObject *
pool_note_bin(PoolObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyLong_Check(args[0]) || !PyObject_TypeCheck(args[1], &BinType)) {
        PyErr_SetString(PyExc_TypeError, "_note_bin(size, bin)");
        return NULL;
    }
    Py_ssize_t size = PyLong_AsSsize_t(args[0]);
    if (size == -1 && PyErr_Occurred()) return NULL;
    if (size <= 0 || size > SMALL_REQUEST || size % SIZE_CLASS) Py_RETURN_NONE;  /* not a small class */
    Py_INCREF(args[1]);
    Py_XSETREF(self->small[size / SIZE_CLASS], (BinObject *)args[1]);
    Py_RETURN_NONE;
}

static PyObject *
pool_set_small_pool(PoolObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyAnySet_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "_set_small_pool(pool, dirty_set)");
        return NULL;
    }
    for (int i = 0; i < NCLASSES; i++) Py_CLEAR(self->small[i]);
    Py_INCREF(args[0]); Py_XSETREF(self->small_pool, args[0]);
    Py_INCREF(args[1]); Py_XSETREF(self->small_dirty, args[1]);
    Py_RETURN_NONE;
}

static int
pool_traverse(PoolObject *self, visitproc visit, void *arg)
{
    /* a subclass's type and __dict__ are visited by its own traverse */
    Py_VISIT(self->live); Py_VISIT(self->small_pool); Py_VISIT(self->small_dirty);
    for (int i = 0; i < NCLASSES; i++) Py_VISIT(self->small[i]);
    return 0;
}

static int
pool_clear(PoolObject *self)
{
    Py_CLEAR(self->live); Py_CLEAR(self->small_pool); Py_CLEAR(self->small_dirty);
    for (int i = 0; i < NCLASSES; i++) Py_CLEAR(self->small[i]);
    return 0;
}

static void
pool_dealloc(PoolObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    pool_clear(self);
    tp->tp_free((PyObject *)self);
}

static PyMemberDef pool_members[] = {
    {"allocated", T_LONGLONG, offsetof(PoolObject, allocated), 0, "bytes in live blocks"},
    {"peak", T_LONGLONG, offsetof(PoolObject, peak), 0, "peak of allocated"},
    {"num_frees", T_LONGLONG, offsetof(PoolObject, num_frees), 0, "frees so far"},
    {"poison", T_BOOL, offsetof(PoolObject, poison), 0, "fill freed blocks (the Python path does)"},
    {"live", T_OBJECT, offsetof(PoolObject, live), 0, "start address -> LIVE block"},
    {NULL}
};

static PyMethodDef pool_methods[] = {
    {"malloc", (PyCFunction)(void (*)(void))pool_malloc, METH_FASTCALL | METH_KEYWORDS,
     "malloc(size, policy=0, align32=False) -> device address"},
    {"free", (PyCFunction)pool_free, METH_O, "free(addr)"},
    {"_note_bin", (PyCFunction)(void (*)(void))pool_note_bin, METH_FASTCALL,
     "_note_bin(size, bin): the small pool made the bin of this size"},
    {"_set_small_pool", (PyCFunction)(void (*)(void))pool_set_small_pool, METH_FASTCALL,
     "_set_small_pool(pool, dirty): the pool whose bins the fast path serves (forgets the bins)"},
    {NULL}
};

static PyTypeObject PoolType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npurt._speedups.PoolBase",
    .tp_basicsize = sizeof(PoolObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "The caching pool's counters and small bins in C, with malloc/free's cached-block case.",
    .tp_new = PyType_GenericNew,
    .tp_traverse = (traverseproc)pool_traverse,
    .tp_clear = (inquiry)pool_clear,
    .tp_dealloc = (destructor)pool_dealloc,
    .tp_members = pool_members,
    .tp_methods = pool_methods,
};

/* ------------------------------------------------------------------ Entry */
enum { K_MALLOC, K_FREE, K_ACL_MALLOC, K_ACL_FREE };

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    int kind;
    PyObject *slow;          /* the Python function this one stands for */
    PyObject *per_thread;    /* the runtime's thread state (`context`) */
    PyObject *hooks;         /* the observers (`active`) */
    PyObject *runtime;       /* the runtime (`device_by_physical`: physical index -> Device) */
    unsigned long long va_base;
    PyObject *dict;
} EntryObject;

static int suspended;  /* fast paths held off (fault injection): see suspend() */

static int
tools_listening(EntryObject *e)
{
    if (suspended) return 1;
    PyObject *active = PyObject_GetAttr(e->hooks, str_active);
    if (active == NULL) { PyErr_Clear(); return 1; }
    int on = active != Py_False;
    Py_DECREF(active);
    return on;
}

/* The calling thread's live context's pool (a new reference), or NULL (no error). */
static PoolObject *
current_pool(EntryObject *e)
{
    PyObject *ctx = PyObject_GetAttr(e->per_thread, str_context);
    if (ctx == NULL) { PyErr_Clear(); return NULL; }
    PoolObject *pool = NULL;
    if (ctx != Py_None) {
        PyObject *alive = PyObject_GetAttr(ctx, str_alive);
        if (alive == Py_True) {
            PyObject *mem = PyObject_GetAttr(ctx, str_memory);
            if (mem != NULL && PyObject_TypeCheck(mem, &PoolType)) pool = (PoolObject *)mem;
            else Py_XDECREF(mem);
        }
        Py_XDECREF(alive);
        if (PyErr_Occurred()) PyErr_Clear();
    }
    Py_DECREF(ctx);
    return pool;
}

/* The pool of the device an address belongs to (a new reference), or NULL (no error). */
static PoolObject *
pool_of_address(EntryObject *e, PyObject *ptr)
{
    if (!PyLong_CheckExact(ptr)) return NULL;
    unsigned long long p = PyLong_AsUnsignedLongLong(ptr);
    if (p == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return NULL; }
    if (p < e->va_base) return NULL;
    PyObject *key = PyLong_FromUnsignedLongLong((p - e->va_base) >> 40);
    if (key == NULL) { PyErr_Clear(); return NULL; }
    PyObject *devices = PyObject_GetAttr(e->runtime, str_device_by_physical);
    if (devices == NULL || !PyDict_CheckExact(devices)) {
        Py_DECREF(key); Py_XDECREF(devices); PyErr_Clear(); return NULL;
    }
    PyObject *device = PyDict_GetItemWithError(devices, key);  /* borrowed: `devices` keeps it */
    Py_DECREF(key);
    if (device == NULL) { Py_DECREF(devices); PyErr_Clear(); return NULL; }
    Py_INCREF(device);
    Py_DECREF(devices);
    PyObject *mem = PyObject_GetAttr(device, str_memory);
    Py_DECREF(device);
    if (mem == NULL) { PyErr_Clear(); return NULL; }
    if (!PyObject_TypeCheck(mem, &PoolType)) { Py_DECREF(mem); return NULL; }
    return (PoolObject *)mem;
}

static PyObject *
entry_vectorcall(EntryObject *e, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames == NULL && !tools_listening(e)) {
        switch (e->kind) {
        case K_MALLOC:      /* malloc(size, policy=0, align32=False) -> address */
        case K_ACL_MALLOC:  /* acl.rt.malloc(size, policy) -> (address, ret) */
            if ((e->kind == K_MALLOC ? (nargs >= 1 && nargs <= 3) : nargs == 2)
                && (nargs < 2 || is_zero(args[1]))
                && (nargs < 3 || args[2] == Py_False)) {
                PoolObject *pool = current_pool(e);
                if (pool != NULL) {
                    PyObject *addr = pool_try_malloc(pool, args[0]);
                    Py_DECREF(pool);
                    if (addr != NULL) {
                        if (e->kind == K_MALLOC) return addr;
                        PyObject *pair = PyTuple_New(2);
                        if (pair == NULL) return NULL;  /* cannot happen in practice */
                        PyTuple_SET_ITEM(pair, 0, addr);
                        Py_INCREF(zero_ret);
                        PyTuple_SET_ITEM(pair, 1, zero_ret);
                        return pair;
                    }
                    if (PyErr_Occurred()) PyErr_Clear();  /* nothing changed: the Python path decides */
                }
            }
            break;
        case K_FREE:        /* free(ptr, managed=False) -> None */
        case K_ACL_FREE:    /* acl.rt.free(dev_ptr) -> ret */
            if (e->kind == K_FREE ? (nargs == 1 || nargs == 2) : nargs == 1) {
                PoolObject *pool = pool_of_address(e, args[0]);
                if (pool != NULL) {
                    int r = pool_try_free(pool, args[0]);
                    Py_DECREF(pool);
                    if (r > 0) {
                        if (e->kind == K_FREE) Py_RETURN_NONE;
                        Py_INCREF(zero_ret);
                        return zero_ret;
                    }
                    if (r < 0) PyErr_Clear();  /* nothing changed: the Python path decides */
                }
            }
            break;
        }
    }
    return PyObject_Vectorcall(e->slow, args, nargsf, kwnames);
}

static PyObject *
entry_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    const char *kind;
    PyObject *slow, *per_thread, *hooks, *runtime;
    unsigned long long va_base;
    static char *names[] = {"kind", "slow", "per_thread", "hooks", "runtime", "va_base", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sOOOOK", names, &kind, &slow, &per_thread, &hooks,
                                     &runtime, &va_base))
        return NULL;
    int k;
    if (!strcmp(kind, "malloc")) k = K_MALLOC;
    else if (!strcmp(kind, "free")) k = K_FREE;
    else if (!strcmp(kind, "acl_malloc")) k = K_ACL_MALLOC;
    else if (!strcmp(kind, "acl_free")) k = K_ACL_FREE;
    else {
        PyErr_Format(PyExc_ValueError, "unknown entry kind %s (malloc, free, acl_malloc, acl_free)", kind);
        return NULL;
    }
    EntryObject *e = (EntryObject *)tp->tp_alloc(tp, 0);
    if (e == NULL) return NULL;
    e->vectorcall = (vectorcallfunc)entry_vectorcall;
    e->kind = k;
    Py_INCREF(slow); e->slow = slow;
    Py_INCREF(per_thread); e->per_thread = per_thread;
    Py_INCREF(hooks); e->hooks = hooks;
    Py_INCREF(runtime); e->runtime = runtime;
    e->va_base = va_base;
    return (PyObject *)e;
}

static int
entry_traverse(EntryObject *e, visitproc visit, void *arg)
{
    Py_VISIT(e->slow); Py_VISIT(e->per_thread); Py_VISIT(e->hooks); Py_VISIT(e->runtime); Py_VISIT(e->dict);
    return 0;
}

static int
entry_clear(EntryObject *e)
{
    Py_CLEAR(e->slow); Py_CLEAR(e->per_thread); Py_CLEAR(e->hooks); Py_CLEAR(e->runtime); Py_CLEAR(e->dict);
    return 0;
}

static void
entry_dealloc(EntryObject *e)
{
    PyObject_GC_UnTrack(e);
    entry_clear(e);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static PyObject *
entry_get(PyObject *self, PyObject *obj, PyObject *type)
{
    Py_INCREF(self);  /* not a method: stays unbound as a class attribute (a builtin's way) */
    return self;
}

static PyObject *
entry_repr(EntryObject *e)
{
    return PyUnicode_FromFormat("<npurt C entry for %R>", e->slow);
}

static PyMemberDef entry_members[] = {
    {"slow", T_OBJECT, offsetof(EntryObject, slow), READONLY, "the Python function this one stands for"},
    {NULL}
};

static PyGetSetDef entry_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL}
};

static PyTypeObject EntryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npurt._speedups.Entry",
    .tp_basicsize = sizeof(EntryObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "A malloc/free whose cached-block case runs in C; everything else calls `slow`.",
    .tp_new = entry_new,
    .tp_traverse = (traverseproc)entry_traverse,
    .tp_clear = (inquiry)entry_clear,
    .tp_dealloc = (destructor)entry_dealloc,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(EntryObject, vectorcall),
    .tp_dictoffset = offsetof(EntryObject, dict),
    .tp_descr_get = entry_get,
    .tp_repr = (reprfunc)entry_repr,
    .tp_members = entry_members,
    .tp_getset = entry_getset,
    .tp_getattro = PyObject_GenericGetAttr,
    .tp_setattro = PyObject_GenericSetAttr,
};

/* ------------------------------------------------------------------ module */
static PyObject *
mod_suspend(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    suspended++;
    Py_RETURN_NONE;
}

static PyObject *
mod_resume(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    if (suspended > 0) suspended--;
    Py_RETURN_NONE;
}

static PyObject *
mod_suspended(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLong(suspended);
}

static PyMethodDef module_methods[] = {
    {"suspend", mod_suspend, METH_NOARGS, "hold every Entry's fast path off (counted; resume() undoes one)"},
    {"resume", mod_resume, METH_NOARGS, "undo one suspend()"},
    {"suspended", mod_suspended, METH_NOARGS, "how many suspend() calls are in force"},
    {NULL}
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "npurt._speedups",
    "The optional C accelerator of npurt's caching pool (see npurt.runtime.accel).", -1, module_methods,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
#define INTERN(var, text) if ((var = PyUnicode_InternFromString(text)) == NULL) return NULL
    INTERN(str_malloc_any, "_malloc_any");
    INTERN(str_malloc_slow, "_malloc");
    INTERN(str_free_slow, "_free");
    INTERN(str_completed_seq, "completed_seq");
    INTERN(str_context, "context");
    INTERN(str_alive, "alive");
    INTERN(str_memory, "memory");
    INTERN(str_active, "active");
    INTERN(str_device_by_physical, "device_by_physical");
    zero_ret = PyLong_FromLong(0);
    if (PyType_Ready(&BlockType) < 0 || PyType_Ready(&BinType) < 0 || PyType_Ready(&PoolType) < 0
        || PyType_Ready(&EntryType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "BlockBase", (PyObject *)&BlockType) < 0
        || PyModule_AddObjectRef(m, "Bin", (PyObject *)&BinType) < 0
        || PyModule_AddObjectRef(m, "PoolBase", (PyObject *)&PoolType) < 0
        || PyModule_AddObjectRef(m, "Entry", (PyObject *)&EntryType) < 0
        || PyModule_AddIntConstant(m, "SIZE_CLASS", SIZE_CLASS) < 0
        || PyModule_AddIntConstant(m, "SMALL_REQUEST", SMALL_REQUEST) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
