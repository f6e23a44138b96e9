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
    PyObject *pair;          /* (addr, 0): acl.rt.malloc's answer, made once (see block_pair) */
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
    Py_CLEAR(self->pair);
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
    *str_memory, *str_active, *str_device_by_physical, *str_device, *str_dtype;
static PyObject *one_obj;   /* the int 1 */

/* Takes a cached block for `size` bytes (HUGE_FIRST, not align32) and records it live:
 * the block (borrowed: `live` holds it), or NULL with no error set when the fast path does
 * not apply (nothing changed). */
static BlockObject *
pool_take_size(PoolObject *self, long long size);

static BlockObject *
pool_take(PoolObject *self, PyObject *size_obj)
{
    if (!PyLong_CheckExact(size_obj)) return NULL;
    int overflow;
    long long size = PyLong_AsLongLongAndOverflow(size_obj, &overflow);
    if (overflow) { PyErr_Clear(); return NULL; }
    return pool_take_size(self, size);
}

/* The bin a fast malloc of `size` bytes takes from (its tail), or NULL: not the fast path. */
static inline BinObject *
pool_bin_for(PoolObject *self, long long size)
{
    if (size <= 0 || size > FAST_MAX || self->live == NULL) return NULL;
    BinObject *bin = self->small[((size + FAST_ROUND) & CLASS_MASK) / SIZE_CLASS];
    return bin != NULL && bin->tail != NULL ? bin : NULL;
}

/* pool_take for a C size. */
static BlockObject *
pool_take_size(PoolObject *self, long long size)
{
    BinObject *bin = pool_bin_for(self, size);
    if (bin == NULL) return NULL;
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
    Py_DECREF(b);  /* `live` holds it */
    return b;
}

/* The address of a cached block (a new reference), or NULL as pool_take. */
static PyObject *
pool_try_malloc(PoolObject *self, PyObject *size_obj)
{
    BlockObject *b = pool_take(self, size_obj);
    if (b == NULL) return NULL;
    Py_INCREF(b->addr);
    return b->addr;
}

/* acl.rt.malloc's answer for a block: (addr, 0), kept on the block (a tuple is immutable,
 * so every malloc of the block can return the same one). A new reference, or NULL (memory). */
static PyObject *
block_pair(BlockObject *b)
{
    PyObject *pair = b->pair;
    if (pair == NULL || PyTuple_GET_ITEM(pair, 0) != b->addr) {
        pair = PyTuple_Pack(2, b->addr, zero_ret);
        if (pair == NULL) return NULL;
        Py_XSETREF(b->pair, pair);
    }
    Py_INCREF(pair);
    return pair;
}

/* 1: freed; 0: not the fast path (nothing changed); -1: an error. A block with recorded uses
 * takes the fast path once every use has retired; the uses are forgotten (None). */
static int
pool_free_block(PoolObject *self, PyObject *addr, BlockObject *b);

static int
pool_try_free(PoolObject *self, PyObject *addr)
{
    if (self->live == NULL || self->poison) return 0;
    PyObject *o = PyDict_GetItemWithError(self->live, addr);
    if (o == NULL) { if (PyErr_Occurred()) PyErr_Clear(); return 0; }
    if (!PyObject_TypeCheck(o, &BlockType)) return 0;
    return pool_free_block(self, addr, (BlockObject *)o);
}

/* pool_try_free for the block `live` holds at `addr` (the caller looked it up). */
static int
pool_free_block(PoolObject *self, PyObject *addr, BlockObject *b)
{
    if (self->live == NULL || self->poison) return 0;
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

/* ------------------------------------------------------------------ the tools' switch */
static int suspended;  /* fast paths held off (fault injection): see suspend() */

/* Whether a tool listens (HOOKS.active), read from the observers' instance dict: one
 * lookup with a cached hash instead of a full attribute look-up. Anything unexpected (no
 * dict, no key) counts as listening: the Python path decides. */
static int
hooks_listening(PyObject *hooks)
{
    if (suspended || hooks == NULL) return 1;
    PyObject **dictptr = _PyObject_GetDictPtr(hooks);
    if (dictptr == NULL || *dictptr == NULL) return 1;
    PyObject *active = PyDict_GetItemWithError(*dictptr, str_active);  /* borrowed */
    if (active == NULL) { PyErr_Clear(); return 1; }
    return active != Py_False;
}

/* ------------------------------------------------------------------ Allocation */
/* One device allocation behind a DeviceArray and its views (npurt.array.allocation): the
 * record `allocate` and `empty` make, freed when the last array using it is collected.
 * Its free is the Python record's __del__ in C: only if the pool's live table still holds
 * this very block at the address (after a reset or a finalize and a new init the address
 * may be someone else's); through the pool's fast path when no tool listens and the block
 * can go straight back to its bin, else through the Python `release(ptr, device, block)`
 * (a listening tool's managed free, a parked block, ...). Either way the exception being
 * raised, if any, is kept, and a failure is swallowed as __del__ did. */
typedef struct {
    PyObject_HEAD
    PyObject *ptr, *nbytes, *device, *block;
    PoolObject *pool;        /* the pool the fast path took it from, or NULL */
    char released;
} AllocObject;

static PyTypeObject AllocType;
static PyObject *alloc_release_fn;   /* release(ptr, device, block): the Python free */
static PyObject *alloc_hooks;        /* the observers, for their `active` switch */

static void
alloc_release(AllocObject *a)
{
    if (a->released) return;
    a->released = 1;
    if (a->ptr == NULL || a->device == NULL) return;  /* never completed */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    int done = 0;
    if (a->pool != NULL && a->pool->live != NULL && !hooks_listening(alloc_hooks)) {
        PyObject *cur = PyDict_GetItemWithError(a->pool->live, a->ptr);  /* borrowed */
        if (cur != a->block || cur == NULL) done = 1;  /* not ours (any more): nothing to free */
        else if (PyObject_TypeCheck(cur, &BlockType)) {
            PoolObject *pool = a->pool;
            Py_INCREF(pool);
            done = pool_free_block(pool, a->ptr, (BlockObject *)cur) > 0;
            Py_DECREF(pool);
        }
        PyErr_Clear();
    }
    if (!done && alloc_release_fn != NULL) {
        PyObject *args[3] = {a->ptr, a->device, a->block ? a->block : Py_None};
        PyObject *r = PyObject_Vectorcall(alloc_release_fn, args, 3, NULL);
        if (r == NULL) PyErr_Clear();  /* interpreter shutdown, a runtime torn down: as __del__ */
        Py_XDECREF(r);
    }
    PyErr_Restore(et, ev, tb);
}

static void
alloc_finalize(AllocObject *a)
{
    alloc_release(a);
}

static int
alloc_traverse(AllocObject *a, visitproc visit, void *arg)
{
    Py_VISIT(a->device); Py_VISIT(a->block); Py_VISIT(a->pool);
    return 0;
}

static int
alloc_clear(AllocObject *a)
{
    /* the collector ran tp_finalize (the free) first */
    Py_CLEAR(a->device); Py_CLEAR(a->block); Py_CLEAR(a->pool);
    return 0;
}

static void
alloc_dealloc(AllocObject *a)
{
    PyObject_GC_UnTrack(a);
    alloc_release(a);
    Py_CLEAR(a->ptr); Py_CLEAR(a->nbytes);
    alloc_clear(a);
    PyObject_GC_Del(a);
}

/* A new record for a block `take`n from `pool` for `nbytes`; NULL (the block freed back)
 * on a memory error. */
static PyObject *
alloc_make(PoolObject *pool, BlockObject *b, PyObject *nbytes, PyObject *device)
{
    AllocObject *a = PyObject_GC_New(AllocObject, &AllocType);
    if (a == NULL) {
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        if (pool_try_free(pool, b->addr) <= 0) PyErr_Clear();
        PyErr_Restore(et, ev, tb);
        return NULL;
    }
    Py_INCREF(b->addr); a->ptr = b->addr;
    Py_INCREF(nbytes); a->nbytes = nbytes;
    Py_INCREF(device); a->device = device;
    Py_INCREF(b); a->block = (PyObject *)b;
    Py_INCREF(pool); a->pool = pool;
    a->released = 0;
    PyObject_GC_Track(a);
    return (PyObject *)a;
}

static PyObject *
alloc_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    if (PyTuple_GET_SIZE(args) || (kw && PyDict_GET_SIZE(kw))) {
        PyErr_SetString(PyExc_TypeError, "Allocation records are made by npurt.array.allocation.allocate");
        return NULL;
    }
    return tp->tp_alloc(tp, 0);  /* empty: the Python slow path fills it */
}

static PyMemberDef alloc_members[] = {
    {"ptr", T_OBJECT_EX, offsetof(AllocObject, ptr), 0, "device address (int)"},
    {"nbytes", T_OBJECT_EX, offsetof(AllocObject, nbytes), 0, "bytes asked for"},
    {"device", T_OBJECT_EX, offsetof(AllocObject, device), 0, "the runtime Device"},
    {"block", T_OBJECT_EX, offsetof(AllocObject, block), 0, "the pool's block at ptr when allocated"},
    {NULL}
};

static PyTypeObject AllocType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npurt._speedups.Allocation",
    .tp_basicsize = sizeof(AllocObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "One device allocation; freed (stream-ordered, by the runtime) when collected.",
    .tp_new = alloc_new,
    .tp_traverse = (traverseproc)alloc_traverse,
    .tp_clear = (inquiry)alloc_clear,
    .tp_dealloc = (destructor)alloc_dealloc,
    .tp_finalize = (destructor)alloc_finalize,
    .tp_members = alloc_members,
};

static PyObject *
mod_configure_allocations(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyCallable_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "configure_allocations(release, hooks)");
        return NULL;
    }
    Py_INCREF(args[0]); Py_XSETREF(alloc_release_fn, args[0]);
    Py_INCREF(args[1]); Py_XSETREF(alloc_hooks, args[1]);
    Py_RETURN_NONE;
}


/* ------------------------------------------------------------------ Entry */
enum { K_MALLOC, K_FREE, K_ACL_MALLOC, K_ACL_FREE, K_ALLOCATE, K_EMPTY, K_BINARY };

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
    /* K_EMPTY: the array type, whose instances it fills (slot offsets below), the layout
     * cache ((shape, dtype) -> (shape, dtype, nbytes, strides)), numpy's dtype type and
     * the default dtype ("float32"); K_BINARY: the array type and the layout cache */
    PyObject *extra;
    PyTypeObject *array_type;
    PyObject *layouts, *dtype_type, *default_dtype;
    PyObject *last_shape, *last_dtype, *last_layout;  /* the layout found last, by identity (strong refs) */
    Py_ssize_t off_mem, off_ptr, off_shape, off_dtype, off_strides;
} EntryObject;

#define tools_listening(e) hooks_listening((e)->hooks)

/* The caches of the fast path, valid while `generation` has not moved. The runtime calls
 * invalidate() (accel.invalidate) whenever what they remember can change: a thread's
 * current context is bound (set_device, set_context, finalize), a context dies (reset,
 * destroy, fork), the address table of devices is emptied (finalize, fork). An entry that
 * misses reads the Python state as before and fills the cache.
 *
 *   thread_slots  thread id -> the pool of its live current context (direct-mapped by id;
 *                 ids are never reused, so a slot never answers for another thread)
 *   phys_pools    physical device index -> its pool (the address's device, for free) */
#define THREAD_SLOTS 16
#define PHYS_SLOTS 64
typedef struct {
    uint64_t tid;
    unsigned long long gen;
    PoolObject *pool;        /* strong reference */
    PyObject *device;        /* strong reference: the context's Device */
    PyObject *context;       /* strong reference: the context (its default stream) */
} ThreadSlot;
static ThreadSlot thread_slots[THREAD_SLOTS];
static PoolObject *phys_pools[PHYS_SLOTS];
static unsigned long long phys_gen[PHYS_SLOTS];
static unsigned long long generation = 1;

static void
invalidate_caches(void)
{
    generation++;
    /* moved out first: dropping a pool may run Python code, which may call back here */
    PoolObject *pools[THREAD_SLOTS + PHYS_SLOTS];
    PyObject *devices[THREAD_SLOTS], *contexts[THREAD_SLOTS];
    for (int i = 0; i < THREAD_SLOTS; i++) {
        pools[i] = thread_slots[i].pool; devices[i] = thread_slots[i].device; contexts[i] = thread_slots[i].context;
        thread_slots[i].pool = NULL; thread_slots[i].device = NULL; thread_slots[i].context = NULL;
        thread_slots[i].tid = 0;
    }
    for (int i = 0; i < PHYS_SLOTS; i++) { pools[THREAD_SLOTS + i] = phys_pools[i]; phys_pools[i] = NULL; }
    for (int i = 0; i < THREAD_SLOTS; i++) { Py_XDECREF(pools[i]); Py_XDECREF(devices[i]); Py_XDECREF(contexts[i]); }
    for (int i = 0; i < PHYS_SLOTS; i++) Py_XDECREF(pools[THREAD_SLOTS + i]);
}

/* The calling thread's slot holding its live context's pool and device (borrowed, valid
 * until the next invalidate), or NULL (no error): no live context, or not a C pool. */
static ThreadSlot *
current_slot(PyObject *per_thread)
{
    uint64_t tid = PyThreadState_GetID(PyThreadState_Get());
    ThreadSlot *slot = &thread_slots[tid % THREAD_SLOTS];
    if (slot->tid == tid && slot->gen == generation) return slot;
    PyObject *ctx = PyObject_GetAttr(per_thread, str_context);
    if (ctx == NULL) { PyErr_Clear(); return NULL; }
    PoolObject *pool = NULL;
    PyObject *device = NULL;
    if (ctx != Py_None) {
        PyObject *alive = PyObject_GetAttr(ctx, str_alive);
        if (alive == Py_True) {
            PyObject *mem = PyObject_GetAttr(ctx, str_memory);
            if (mem != NULL && PyObject_TypeCheck(mem, &PoolType)) {
                device = PyObject_GetAttr(ctx, str_device);
                if (device != NULL) pool = (PoolObject *)mem;
                else Py_DECREF(mem);
            }
            else Py_XDECREF(mem);
        }
        Py_XDECREF(alive);
        if (PyErr_Occurred()) PyErr_Clear();
    }
    if (pool == NULL) { Py_DECREF(ctx); return NULL; }  /* may run Python code: the slot is filled after it */
    unsigned long long gen = generation;
    PoolObject *old_pool = slot->pool;
    PyObject *old_device = slot->device, *old_context = slot->context;
    slot->tid = tid; slot->gen = gen; slot->pool = pool; slot->device = device; slot->context = ctx;
    Py_XDECREF(old_pool);
    Py_XDECREF(old_device);
    Py_XDECREF(old_context);
    return slot->tid == tid && slot->gen == generation ? slot : NULL;
}

/* The pool of the device an address belongs to (borrowed, valid until the next
 * invalidate), or NULL (no error). */
static PoolObject *
pool_of_device_address(EntryObject *e, unsigned long long p);

static PoolObject *
pool_of_address(EntryObject *e, PyObject *ptr)
{
    if (!PyLong_CheckExact(ptr)) return NULL;
    unsigned long long p = PyLong_AsUnsignedLongLong(ptr);
    if (p == (unsigned long long)-1 && PyErr_Occurred()) { PyErr_Clear(); return NULL; }
    return pool_of_device_address(e, p);
}

/* pool_of_address for a C address. */
static PoolObject *
pool_of_device_address(EntryObject *e, unsigned long long p)
{
    if (p < e->va_base) return NULL;
    unsigned long long phys = (p - e->va_base) >> 40;
    if (phys < PHYS_SLOTS && phys_gen[phys] == generation && phys_pools[phys] != NULL) return phys_pools[phys];
    PyObject *key = PyLong_FromUnsignedLongLong(phys);
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
    if (phys >= PHYS_SLOTS) { Py_DECREF(mem); return NULL; }  /* not cached: the Python path */
    PoolObject *old = phys_pools[phys];
    phys_pools[phys] = (PoolObject *)mem;
    phys_gen[phys] = generation;
    Py_XDECREF(old);
    return phys_gen[phys] == generation ? phys_pools[phys] : NULL;
}

/* The pool of a runtime Device (borrowed: the thread's slot or the device keeps it), or
 * NULL (no error): not a C pool. */
static PoolObject *
pool_of_device(EntryObject *e, PyObject *device)
{
    ThreadSlot *slot = current_slot(e->per_thread);
    if (slot != NULL && slot->device == device) return slot->pool;
    PyObject *mem = PyObject_GetAttr(device, str_memory);
    if (mem == NULL) { PyErr_Clear(); return NULL; }
    Py_DECREF(mem);  /* the device holds it */
    return PyObject_TypeCheck(mem, &PoolType) ? (PoolObject *)mem : NULL;
}

/* allocate(nbytes, device) for a cached block: the new Allocation, or NULL with no error
 * (nothing changed). At least one byte is taken, as the Python allocate does. */
static PyObject *
fast_allocate(PoolObject *pool, PyObject *nbytes, PyObject *device)
{
    if (!PyLong_CheckExact(nbytes)) return NULL;
    PyObject *size = nbytes;
    if (is_zero(nbytes)) size = one_obj;
    BlockObject *b = pool_take(pool, size);  /* runs no Python code */
    if (b == NULL) { if (PyErr_Occurred()) PyErr_Clear(); return NULL; }
    PyObject *a = alloc_make(pool, b, nbytes, device);
    if (a == NULL) PyErr_Clear();
    return a;
}

static inline void
set_slot(PyObject *obj, Py_ssize_t offset, PyObject *value)
{
    PyObject **p = (PyObject **)((char *)obj + offset);
    Py_INCREF(value);
    Py_XSETREF(*p, value);
}

/* The cached layout (shape, dtype, nbytes, strides) of an array of `shape` (an int or a tuple
 * of ints) and `dtype` (a new reference), or NULL with no error: not cached yet. */
static PyObject *
cached_layout(EntryObject *e, PyObject *shape, PyObject *dtype)
{
    PyObject *layout;
    if (shape == e->last_shape && dtype == e->last_dtype) {
        /* the same objects as last time (a loop's constants): an int or a tuple of ints and
         * a dtype, none of which can change, so the same layout */
        layout = e->last_layout;
        Py_INCREF(layout);
        return layout;
    }
    PyObject *key = PyTuple_Pack(2, shape, dtype);
    if (key == NULL) { PyErr_Clear(); return NULL; }
    layout = PyDict_GetItemWithError(e->layouts, key);  /* borrowed */
    Py_DECREF(key);
    if (layout == NULL || !PyTuple_CheckExact(layout) || PyTuple_GET_SIZE(layout) != 4) {
        PyErr_Clear();  /* new, or an unhashable dtype: the Python path */
        return NULL;
    }
    Py_INCREF(layout);  /* the cache may be cleared by Python code the caller runs */
    PyObject *old_shape = e->last_shape, *old_dtype = e->last_dtype, *old_layout = e->last_layout;
    Py_INCREF(shape); Py_INCREF(dtype); Py_INCREF(layout);
    e->last_shape = shape; e->last_dtype = dtype; e->last_layout = layout;
    Py_XDECREF(old_shape); Py_XDECREF(old_dtype); Py_XDECREF(old_layout);
    return layout;
}

/* npurt.empty's common forms, decided as the Python function decides them: empty(n),
 * empty(shape), empty(n or shape, dtype) and empty(n or shape, dtype=dtype), on the
 * current device, whose layout is cached and whose block is cached. NULL with no error
 * for anything else (nothing changed). */
static PyObject *
fast_empty(EntryObject *e, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *dtype = NULL;
    if (kwnames != NULL) {
        Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
        for (Py_ssize_t i = 0; i < nkw; i++) {
            PyObject *name = PyTuple_GET_ITEM(kwnames, i), *value = args[nargs + i];
            if (name == str_dtype) dtype = value == Py_None ? NULL : value;
            else if (name == str_device) { if (value != Py_None) return NULL; }
            else return NULL;  /* not interned the same, or another name: the Python path */
        }
    }
    PyObject *shape;
    if (nargs == 1) {
        shape = args[0];
        if (dtype == NULL) dtype = e->default_dtype;
    }
    else if (nargs == 2 && dtype == NULL) {
        shape = args[0];
        dtype = args[1];
        if (!(Py_IS_TYPE(dtype, &PyType_Type) || PyUnicode_CheckExact(dtype)
              || PyObject_TypeCheck(dtype, (PyTypeObject *)e->dtype_type)))  /* never a count */
            return NULL;
    }
    else return NULL;
    if (!PyLong_CheckExact(shape)) {
        if (!PyTuple_CheckExact(shape)) return NULL;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++)
            if (!PyLong_CheckExact(PyTuple_GET_ITEM(shape, i))) return NULL;
    }
    if (hooks_listening(e->hooks)) return NULL;
    ThreadSlot *slot = current_slot(e->per_thread);
    if (slot == NULL) return NULL;
    PyObject *layout = cached_layout(e, shape, dtype);
    if (layout == NULL) return NULL;
    PyObject *out = NULL;
    PyObject *mem = fast_allocate(slot->pool, PyTuple_GET_ITEM(layout, 2), slot->device);
    if (mem != NULL) {
        out = e->array_type->tp_alloc(e->array_type, 0);
        if (out == NULL) PyErr_Clear();
        else {
            set_slot(out, e->off_mem, mem);
            set_slot(out, e->off_ptr, ((AllocObject *)mem)->ptr);
            set_slot(out, e->off_shape, PyTuple_GET_ITEM(layout, 0));
            set_slot(out, e->off_dtype, PyTuple_GET_ITEM(layout, 1));
            set_slot(out, e->off_strides, PyTuple_GET_ITEM(layout, 3));
        }
        Py_DECREF(mem);  /* `out` holds it; without `out`, this frees the block again */
    }
    Py_DECREF(layout);
    return out;
}

static PyObject *fast_binary(EntryObject *e, PyObject *const *args, Py_ssize_t nargs, int *raised);

static PyObject *
entry_vectorcall(EntryObject *e, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (e->kind == K_EMPTY) {
        PyObject *out = fast_empty(e, args, nargs, kwnames);
        if (out != NULL) return out;
    }
    else if (e->kind == K_BINARY) {
        int raised = 0;
        PyObject *out = kwnames == NULL ? fast_binary(e, args, nargs, &raised) : NULL;
        if (out != NULL || raised) return out;
    }
    else if (kwnames == NULL && !tools_listening(e)) {
        switch (e->kind) {
        case K_MALLOC:      /* malloc(size, policy=0, align32=False) -> address */
        case K_ACL_MALLOC:  /* acl.rt.malloc(size, policy) -> (address, ret) */
            if ((e->kind == K_MALLOC ? (nargs >= 1 && nargs <= 3) : nargs == 2)
                && (nargs < 2 || is_zero(args[1]))
                && (nargs < 3 || args[2] == Py_False)) {
                ThreadSlot *slot = current_slot(e->per_thread);
                if (slot != NULL) {
                    BlockObject *b = pool_take(slot->pool, args[0]);  /* runs no Python code */
                    if (b != NULL) {
                        if (e->kind == K_MALLOC) { Py_INCREF(b->addr); return b->addr; }
                        return block_pair(b);
                    }
                    if (PyErr_Occurred()) PyErr_Clear();  /* nothing changed: the Python path decides */
                }
            }
            break;
        case K_ALLOCATE:    /* allocate(nbytes, device) -> Allocation */
            if (nargs == 2) {
                PoolObject *pool = pool_of_device(e, args[1]);
                if (pool != NULL) {
                    PyObject *a = fast_allocate(pool, args[0], args[1]);
                    if (a != NULL) return a;
                }
            }
            break;
        case K_FREE:        /* free(ptr, managed=False) -> None */
        case K_ACL_FREE:    /* acl.rt.free(dev_ptr) -> ret */
            if (e->kind == K_FREE ? (nargs == 1 || nargs == 2) : nargs == 1) {
                PoolObject *pool = pool_of_address(e, args[0]);
                if (pool != NULL) {
                    Py_INCREF(pool);  /* its last step may run Python code (dropping a uses dict) */
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

/* ---- the C interface's direct calls (libacl_rt.so's aclrtMalloc / aclrtFree) ----
 * The fast case of a malloc / free entry taking C arguments, so the shim makes no int objects
 * and no call: the same tests as entry_vectorcall, in the same order. Called with the GIL
 * held. 1: done (for malloc, *out is the address); 0: not the fast case, nothing changed and
 * no error set (the caller calls the entry, whose Python path decides and reports). The shim
 * finds the table through a capsule, an entry's `c_api` (npurt.capi.shims). */
static unsigned long long capi_served;  /* calls the direct path answered (direct_calls()) */

static int
capi_malloc(PyObject *entry, unsigned long long size, long long policy, uintptr_t *out)
{
    EntryObject *e = (EntryObject *)entry;
    if (!Py_IS_TYPE(entry, &EntryType) || e->kind != K_MALLOC || policy != 0 || size > (unsigned long long)FAST_MAX
        || tools_listening(e))
        return 0;
    ThreadSlot *slot = current_slot(e->per_thread);
    if (slot == NULL) return 0;
    BinObject *bin = pool_bin_for(slot->pool, (long long)size);
    if (bin == NULL) return 0;
    /* the address first (the block pool_take_size takes is this one), so that nothing has
     * changed when it is not a plain int */
    PyObject *addr = bin->tail->addr;
    if (addr == NULL || !PyLong_CheckExact(addr)) return 0;
    unsigned long a = PyLong_AsUnsignedLong(addr);
    if (a == (unsigned long)-1 && PyErr_Occurred()) { PyErr_Clear(); return 0; }
    BlockObject *b = pool_take_size(slot->pool, (long long)size);  /* runs no Python code */
    if (b == NULL) { if (PyErr_Occurred()) PyErr_Clear(); return 0; }
    *out = (uintptr_t)a;
    capi_served++;
    return 1;
}

static int
capi_free(PyObject *entry, uintptr_t ptr)
{
    EntryObject *e = (EntryObject *)entry;
    if (!Py_IS_TYPE(entry, &EntryType) || e->kind != K_FREE || tools_listening(e)) return 0;
    PoolObject *pool = pool_of_device_address(e, (unsigned long long)ptr);
    if (pool == NULL) return 0;
    if (pool->live == NULL || pool->poison) return 0;
    PyObject *key = PyLong_FromUnsignedLong((unsigned long)ptr);
    if (key == NULL) { PyErr_Clear(); return 0; }
    PyObject *o = PyDict_GetItemWithError(pool->live, key);  /* borrowed */
    Py_DECREF(key);
    if (o == NULL || !PyObject_TypeCheck(o, &BlockType)) { PyErr_Clear(); return 0; }
    /* the block's own address object is the key `live` holds (pool_take, the Python pool):
     * removing it by identity skips comparing two equal ints */
    PyObject *addr = ((BlockObject *)o)->addr;
    if (addr == NULL || !PyLong_CheckExact(addr) || PyLong_AsUnsignedLong(addr) != (unsigned long)ptr) {
        PyErr_Clear();
        return 0;
    }
    Py_INCREF(pool);  /* its last step may run Python code (dropping a uses dict) */
    Py_INCREF(addr);
    int r = pool_free_block(pool, addr, (BlockObject *)o);
    Py_DECREF(addr);
    Py_DECREF(pool);
    if (r < 0) PyErr_Clear();  /* nothing changed: the Python path decides */
    capi_served += r > 0;
    return r > 0;
}

/* The table's layout: npurt.capi.shims declares the same (checked by `size`). */
typedef struct {
    size_t size;
    int (*malloc)(PyObject *entry, unsigned long long size, long long policy, uintptr_t *out);
    int (*free)(PyObject *entry, uintptr_t ptr);
} NpurtPoolCapi;

static const NpurtPoolCapi pool_capi = {sizeof(NpurtPoolCapi), capi_malloc, capi_free};
#define POOL_CAPI_NAME "npurt._speedups.pool_capi"

static PyObject *
entry_c_api(EntryObject *e, void *Py_UNUSED(closure))
{
    if (e->kind != K_MALLOC && e->kind != K_FREE) Py_RETURN_NONE;
    return PyCapsule_New((void *)&pool_capi, POOL_CAPI_NAME, NULL);
}

/* The offset of a __slots__ member of `type` (its member descriptor), or -1 with an error. */
static Py_ssize_t
slot_offset(PyTypeObject *type, const char *name)
{
    PyObject *d = PyDict_GetItemString(type->tp_dict, name);  /* borrowed */
    if (d == NULL || !Py_IS_TYPE(d, &PyMemberDescr_Type)
        || ((PyMemberDescrObject *)d)->d_member->type != T_OBJECT_EX) {
        PyErr_Format(PyExc_TypeError, "%.100s has no __slots__ member %s", type->tp_name, name);
        return -1;
    }
    return ((PyMemberDescrObject *)d)->d_member->offset;
}

static PyObject *
entry_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    const char *kind;
    PyObject *slow, *per_thread, *hooks, *runtime, *extra = NULL;
    unsigned long long va_base;
    static char *names[] = {"kind", "slow", "per_thread", "hooks", "runtime", "va_base", "extra", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "sOOOOK|O", names, &kind, &slow, &per_thread, &hooks,
                                     &runtime, &va_base, &extra))
        return NULL;
    int k;
    if (!strcmp(kind, "malloc")) k = K_MALLOC;
    else if (!strcmp(kind, "free")) k = K_FREE;
    else if (!strcmp(kind, "acl_malloc")) k = K_ACL_MALLOC;
    else if (!strcmp(kind, "acl_free")) k = K_ACL_FREE;
    else if (!strcmp(kind, "allocate")) k = K_ALLOCATE;
    else if (!strcmp(kind, "empty")) k = K_EMPTY;
    else if (!strcmp(kind, "binary")) k = K_BINARY;
    else {
        PyErr_Format(PyExc_ValueError, "unknown entry kind %s (malloc, free, acl_malloc, acl_free, allocate, empty, "
                     "binary)", kind);
        return NULL;
    }
    if (k == K_BINARY && (extra == NULL || !PyTuple_CheckExact(extra) || PyTuple_GET_SIZE(extra) != 2
                          || !PyType_Check(PyTuple_GET_ITEM(extra, 0)) || !PyDict_CheckExact(PyTuple_GET_ITEM(extra, 1)))) {
        PyErr_SetString(PyExc_TypeError, "a binary entry's extra: (array type, layouts dict)");
        return NULL;
    }
    if (k == K_EMPTY && (extra == NULL || !PyTuple_CheckExact(extra) || PyTuple_GET_SIZE(extra) != 4
                         || !PyType_Check(PyTuple_GET_ITEM(extra, 0)) || !PyDict_CheckExact(PyTuple_GET_ITEM(extra, 1))
                         || !PyType_Check(PyTuple_GET_ITEM(extra, 2)))) {
        PyErr_SetString(PyExc_TypeError, "an empty entry's extra: (array type, layouts dict, numpy.dtype, default dtype)");
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
    if (k == K_EMPTY || k == K_BINARY) {
        Py_INCREF(extra); e->extra = extra;
        e->array_type = (PyTypeObject *)PyTuple_GET_ITEM(extra, 0);
        e->layouts = PyTuple_GET_ITEM(extra, 1);
        e->dtype_type = k == K_EMPTY ? PyTuple_GET_ITEM(extra, 2) : NULL;
        e->default_dtype = k == K_EMPTY ? PyTuple_GET_ITEM(extra, 3) : NULL;
        if ((e->off_mem = slot_offset(e->array_type, "_mem")) < 0 || (e->off_ptr = slot_offset(e->array_type, "_ptr")) < 0
            || (e->off_shape = slot_offset(e->array_type, "shape")) < 0
            || (e->off_dtype = slot_offset(e->array_type, "dtype")) < 0
            || (e->off_strides = slot_offset(e->array_type, "strides")) < 0) {
            Py_DECREF(e);
            return NULL;
        }
    }
    return (PyObject *)e;
}

static int
entry_traverse(EntryObject *e, visitproc visit, void *arg)
{
    Py_VISIT(e->slow); Py_VISIT(e->per_thread); Py_VISIT(e->hooks); Py_VISIT(e->runtime); Py_VISIT(e->dict);
    Py_VISIT(e->extra); Py_VISIT(e->last_shape); Py_VISIT(e->last_dtype); Py_VISIT(e->last_layout);
    return 0;
}

static int
entry_clear(EntryObject *e)
{
    Py_CLEAR(e->slow); Py_CLEAR(e->per_thread); Py_CLEAR(e->hooks); Py_CLEAR(e->runtime); Py_CLEAR(e->dict);
    Py_CLEAR(e->last_shape); Py_CLEAR(e->last_dtype); Py_CLEAR(e->last_layout);
    Py_CLEAR(e->extra);  /* the borrowed views of it are read only with `kind` K_EMPTY or K_BINARY, while it lives */
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
    {"c_api", (getter)entry_c_api, NULL,
     "malloc's and free's fast case for C callers (a capsule " POOL_CAPI_NAME "), or None", NULL},
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



/* ------------------------------------------------------------------ uses */
/* npurt.runtime.memory.note_use / note_uses / prune_uses in C (the same rules: see there).
 * Stream.enqueue records each task's holders through them, so each costs a Python frame
 * less per holder. */
static PyObject *str_uses;

/* Forget the entries of `uses` whose work has retired; as the Python prune_uses, the test
 * (after reading completed_seq, which may run code for an object that is not a Stream) and
 * the delete have no call in between, so a concurrent newer note is never lost. */
static int
prune_uses_dict(PyObject *uses)
{
    PyObject *items = PyDict_Items(uses);
    if (items == NULL) return -1;
    Py_ssize_t n = PyList_GET_SIZE(items);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        PyObject *stream = PyTuple_GET_ITEM(item, 0), *seq = PyTuple_GET_ITEM(item, 1);
        PyObject *done = PyObject_GetAttr(stream, str_completed_seq);
        if (done == NULL) { Py_DECREF(items); return -1; }
        int retired = PyObject_RichCompareBool(done, seq, Py_GE);
        Py_DECREF(done);
        if (retired < 0) { Py_DECREF(items); return -1; }
        if (!retired) continue;
        PyObject *cur = PyDict_GetItemWithError(uses, stream);  /* borrowed */
        if (cur == NULL) {
            if (PyErr_Occurred()) { Py_DECREF(items); return -1; }
            continue;
        }
        int same = cur == seq ? 1 : PyObject_RichCompareBool(cur, seq, Py_EQ);
        if (same < 0) { Py_DECREF(items); return -1; }
        if (same && PyDict_DelItem(uses, stream) < 0) { Py_DECREF(items); return -1; }
    }
    Py_DECREF(items);
    return 0;
}

static int
note_one(PyObject *holder, PyObject *stream, PyObject *seq)
{
    if (holder == Py_None) return 0;
    PyObject *uses;
    if (PyObject_TypeCheck(holder, &BlockType)) {
        BlockObject *b = (BlockObject *)holder;
        uses = b->uses;
        if (uses == NULL || uses == Py_None) {
            PyObject *d = PyDict_New();
            if (d == NULL) return -1;
            if (PyDict_SetItem(d, stream, seq) < 0) { Py_DECREF(d); return -1; }
            Py_XSETREF(b->uses, d);
            return 0;
        }
        Py_INCREF(uses);
    }
    else {
        uses = PyObject_GetAttr(holder, str_uses);
        if (uses == NULL) return -1;
        if (uses == Py_None) {
            Py_DECREF(uses);
            PyObject *d = PyDict_New();
            if (d == NULL) return -1;
            int r = PyDict_SetItem(d, stream, seq) < 0 ? -1 : PyObject_SetAttr(holder, str_uses, d);
            Py_DECREF(d);
            return r;
        }
    }
    int r = PyObject_SetItem(uses, stream, seq);
    if (r == 0 && PyDict_Check(uses)) {
        Py_ssize_t n = PyDict_GET_SIZE(uses);
        if (n >= 8 && !(n & (n - 1))) r = prune_uses_dict(uses);  /* at 8, 16, 32, ...: amortized O(1) */
    }
    Py_DECREF(uses);
    return r;
}

static PyObject *
mod_note_use(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "note_use(holder, stream, seq)");
        return NULL;
    }
    if (note_one(args[0], args[1], args[2]) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *
mod_note_uses(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "note_uses(holders, stream, seq)");
        return NULL;
    }
    PyObject *it = PyObject_GetIter(args[0]);
    if (it == NULL) return NULL;
    PyObject *holder;
    while ((holder = PyIter_Next(it)) != NULL) {
        int r = note_one(holder, args[1], args[2]);
        Py_DECREF(holder);
        if (r < 0) { Py_DECREF(it); return NULL; }
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) return NULL;
    Py_RETURN_NONE;
}

static PyObject *
mod_prune_uses(PyObject *m, PyObject *uses)
{
    if (!PyDict_Check(uses)) {
        PyErr_SetString(PyExc_TypeError, "prune_uses(uses): a dict stream -> sequence number");
        return NULL;
    }
    if (prune_uses_dict(uses) < 0) return NULL;
    Py_RETURN_NONE;
}


/* ------------------------------------------------------------------ Lock */
/* A mutex as threading.Lock (acquire(blocking=True, timeout=-1), release, locked, a context
 * manager), but not tracked by the garbage collector: it holds no Python object, so it can
 * be in no cycle. A stream makes one (its enqueue lock); ten thousand streams are then ten
 * thousand objects fewer for every collection to walk. A blocked acquire releases the GIL
 * and runs signal handlers when interrupted, as threading.Lock's does. */
#include <time.h>

typedef struct {
    PyObject_HEAD
    PyThread_type_lock lock;
    char locked;
} LockObject;

static PyObject *
lock_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    if (PyTuple_GET_SIZE(args) || (kw && PyDict_GET_SIZE(kw))) {
        PyErr_SetString(PyExc_TypeError, "Lock() takes no arguments");
        return NULL;
    }
    LockObject *self = (LockObject *)tp->tp_alloc(tp, 0);
    if (self == NULL) return NULL;
    self->lock = PyThread_allocate_lock();
    if (self->lock == NULL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_MemoryError, "cannot allocate a lock");
        return NULL;
    }
    return (PyObject *)self;
}

static void
lock_dealloc(LockObject *self)
{
    if (self->lock != NULL) {
        if (self->locked) PyThread_release_lock(self->lock);
        PyThread_free_lock(self->lock);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static long long
monotonic_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* 1 acquired, 0 not (timeout, or not blocking), -1 an exception (a signal handler's). */
static int
lock_take(LockObject *self, int blocking, double timeout)
{
    if (PyThread_acquire_lock_timed(self->lock, 0, 0) == PY_LOCK_ACQUIRED) { self->locked = 1; return 1; }
    if (!blocking) return 0;
    long long deadline = timeout < 0 ? -1 : monotonic_us() + (long long)(timeout * 1e6);
    for (;;) {
        long long wait = deadline < 0 ? -1 : deadline - monotonic_us();
        if (deadline >= 0 && wait < 0) wait = 0;
        PyLockStatus r;
        Py_BEGIN_ALLOW_THREADS
        r = PyThread_acquire_lock_timed(self->lock, wait, 1);
        Py_END_ALLOW_THREADS
        if (r == PY_LOCK_ACQUIRED) { self->locked = 1; return 1; }
        if (r == PY_LOCK_FAILURE) return 0;
        if (Py_MakePendingCalls() < 0) return -1;  /* PY_LOCK_INTR: a signal; its handler may raise */
    }
}

static PyObject *
lock_acquire(LockObject *self, PyObject *args, PyObject *kw)
{
    int blocking = 1;
    double timeout = -1;
    static char *names[] = {"blocking", "timeout", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pd:acquire", names, &blocking, &timeout)) return NULL;
    if (!blocking && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "can't specify a timeout for a non-blocking call");
        return NULL;
    }
    if (timeout < 0 && timeout != -1) {
        PyErr_SetString(PyExc_ValueError, "timeout value must be a non-negative number");
        return NULL;
    }
    int r = lock_take(self, blocking, timeout);
    if (r < 0) return NULL;
    return PyBool_FromLong(r);
}

static PyObject *
lock_enter(LockObject *self, PyObject *Py_UNUSED(ignored))
{
    int r = lock_take(self, 1, -1);
    if (r < 0) return NULL;
    Py_RETURN_TRUE;
}

static PyObject *
lock_release(LockObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->locked) {
        PyErr_SetString(PyExc_RuntimeError, "release unlocked lock");
        return NULL;
    }
    self->locked = 0;
    PyThread_release_lock(self->lock);
    Py_RETURN_NONE;
}

static PyObject *
lock_exit(LockObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return lock_release(self, NULL);
}

static PyObject *
lock_locked(LockObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(self->locked);
}

static PyObject *
lock_repr(LockObject *self)
{
    return PyUnicode_FromFormat("<npurt._speedups.Lock %s>", self->locked ? "locked" : "unlocked");
}

static PyMethodDef lock_methods[] = {
    {"acquire", (PyCFunction)(void (*)(void))lock_acquire, METH_VARARGS | METH_KEYWORDS,
     "acquire(blocking=True, timeout=-1) -> bool"},
    {"release", (PyCFunction)lock_release, METH_NOARGS, "release()"},
    {"locked", (PyCFunction)lock_locked, METH_NOARGS, "whether the lock is held"},
    {"__enter__", (PyCFunction)lock_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)(void (*)(void))lock_exit, METH_FASTCALL, NULL},
    {NULL}
};

static PyTypeObject LockType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npurt._speedups.Lock",
    .tp_basicsize = sizeof(LockObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A mutex as threading.Lock, not tracked by the garbage collector.",
    .tp_new = lock_new,
    .tp_dealloc = (destructor)lock_dealloc,
    .tp_repr = (reprfunc)lock_repr,
    .tp_methods = lock_methods,
};

/* ------------------------------------------------------------------ Doorbell */
/* A deferred worker wake-up (scheduler.py, "Deferred wake-ups"). Waking a sleeping worker
 * costs the waker a futex wake, which on a VM is an inter-processor interrupt of tens of
 * microseconds; when the host thread that launched the work synchronizes at once, it runs the
 * work itself and the woken worker only contests the GIL with it. So a launch onto an idle
 * stream may ring the bell instead (`defer`): a store, no system call. One idle worker per
 * scheduler, the *poller*, sleeps in `wait` with short timeouts for DOORBELL_WINDOW_US after
 * the scheduler's last defer() call (a launch that tried to defer), without the GIL, and answers a deferral that nobody took back
 * (`take`) within DOORBELL_GRACE_US: the work then starts at most about
 * DOORBELL_GRACE_US + DOORBELL_POLL_US late. With no poller, `defer` refuses and the caller
 * wakes a worker as before. Fields are read and written with atomics: the poller has no GIL.
 *
 *   defer()              -> its stamp (a poller will answer it), or 0: wake a worker yourself
 *   take(stamp=0)        -> True if that deferral (0: any) was pending; it is no longer
 *   wait(lock, timeout)  a worker's sleep on its wake lock (a _speedups.Lock it holds):
 *                        1 when released by a waker, 0 on timeout, 2 when it answered a
 *                        deferral (it then looks for work, as after a timeout)
 *   pollers()            -> 0 or 1, for tests */
#define DOORBELL_POLL_US 500
#define DOORBELL_GRACE_US 100
#define DOORBELL_WINDOW_US 20000   /* the poller polls this long after the last defer() call */

/* deferrals pending in any doorbell: a C enqueue flushes its scheduler's while there are any */
static int doorbell_pending;

typedef struct {
    PyObject_HEAD
    long long deferred_at;   /* monotonic µs of the pending deferral; 0: none */
    long long last_defer;    /* of the latest defer() call, answered or not */
    long long grace_us, poll_us, window_us;  /* DOORBELL_*_US; settable (tests) */
    int pollers;
} DoorbellObject;

static PyMemberDef doorbell_members[] = {
    {"grace_us", T_LONGLONG, offsetof(DoorbellObject, grace_us), 0, "how old a deferral the poller answers"},
    {"poll_us", T_LONGLONG, offsetof(DoorbellObject, poll_us), 0, "the poller's sleep between looks"},
    {"window_us", T_LONGLONG, offsetof(DoorbellObject, window_us), 0, "how long after the last deferral it polls"},
    {NULL}
};

static PyObject *
doorbell_new(PyTypeObject *tp, PyObject *args, PyObject *kw)
{
    if (PyTuple_GET_SIZE(args) || (kw && PyDict_GET_SIZE(kw))) {
        PyErr_SetString(PyExc_TypeError, "Doorbell() takes no arguments");
        return NULL;
    }
    DoorbellObject *self = (DoorbellObject *)tp->tp_alloc(tp, 0);
    if (self == NULL) return NULL;
    self->grace_us = DOORBELL_GRACE_US;
    self->poll_us = DOORBELL_POLL_US;
    self->window_us = DOORBELL_WINDOW_US;
    return (PyObject *)self;
}

static PyObject *
doorbell_defer(DoorbellObject *self, PyObject *Py_UNUSED(ignored))
{
    long long now = monotonic_us(), none = 0;
    __atomic_store_n(&self->last_defer, now, __ATOMIC_SEQ_CST);
    if (!__atomic_compare_exchange_n(&self->deferred_at, &none, now, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
        return PyLong_FromLong(0);  /* one is pending already: this one wakes a worker itself */
    __atomic_add_fetch(&doorbell_pending, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&self->pollers, __ATOMIC_SEQ_CST) == 0) {
        long long mine = now;
        /* nobody polls: take it back; if that fails a leaving poller took it and looks */
        if (__atomic_compare_exchange_n(&self->deferred_at, &mine, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
            __atomic_sub_fetch(&doorbell_pending, 1, __ATOMIC_SEQ_CST);
            return PyLong_FromLong(0);
        }
    }
    return PyLong_FromLongLong(now);
}

/* take(stamp=0): the deferral `stamp` (0: whichever) back; True if it was still pending */
static PyObject *
doorbell_take(DoorbellObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    long long stamp = 0;
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "take(stamp=0)");
        return NULL;
    }
    if (nargs == 1) {
        stamp = PyLong_AsLongLong(args[0]);
        if (stamp == -1 && PyErr_Occurred()) return NULL;
    }
    int got;
    if (stamp == 0) got = __atomic_exchange_n(&self->deferred_at, 0, __ATOMIC_SEQ_CST) != 0;
    else got = __atomic_compare_exchange_n(&self->deferred_at, &stamp, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    if (got) __atomic_sub_fetch(&doorbell_pending, 1, __ATOMIC_SEQ_CST);
    return PyBool_FromLong(got);
}

/* Claim a deferral at least `grace` µs old; 1 if this thread got it. */
static int
doorbell_claim(DoorbellObject *self, long long now, long long grace)
{
    long long d = __atomic_load_n(&self->deferred_at, __ATOMIC_SEQ_CST);
    if (d == 0 || now - d < grace) return 0;
    if (!__atomic_compare_exchange_n(&self->deferred_at, &d, 0, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return 0;
    __atomic_sub_fetch(&doorbell_pending, 1, __ATOMIC_SEQ_CST);
    return 1;
}

static PyObject *
doorbell_wait(DoorbellObject *self, PyObject *args)
{
    LockObject *lk;
    double timeout;
    if (!PyArg_ParseTuple(args, "O!d:wait", &LockType, &lk, &timeout)) return NULL;
    if (!lk->locked) {
        PyErr_SetString(PyExc_RuntimeError, "Doorbell.wait: the caller must hold the lock");
        return NULL;
    }
    long long now = monotonic_us(), end = now + (long long)(timeout * 1e6);
    int none = 0;
    int polling = __atomic_compare_exchange_n(&self->pollers, &none, 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
    int acquired = 0, answered = 0;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        now = monotonic_us();
        if (polling) {
            /* the settings read at each look: a test may change them while we poll */
            long long window = self->window_us, poll = self->poll_us > 0 ? self->poll_us : 1;
            long long last = __atomic_load_n(&self->last_defer, __ATOMIC_SEQ_CST);
            long long window_end = last + window;  /* no launch tried to defer lately: no polling */
            if (now >= window_end || now >= end) {
                __atomic_store_n(&self->pollers, 0, __ATOMIC_SEQ_CST);
                polling = 0;
                if (doorbell_claim(self, now, 0)) { answered = 1; break; }  /* one came in as we left */
                continue;
            }
            long long wait = end - now < poll ? end - now : poll;
            if (PyThread_acquire_lock_timed(lk->lock, wait, 0) == PY_LOCK_ACQUIRED) { acquired = 1; break; }
            if (doorbell_claim(self, monotonic_us(), self->grace_us)) {
                /* we stop polling; one deferred meanwhile (it saw us polling) is ours too: we
                 * look for work now and find its ticket */
                __atomic_store_n(&self->pollers, 0, __ATOMIC_SEQ_CST);
                polling = 0;
                doorbell_claim(self, monotonic_us(), 0);
                answered = 1;
                break;
            }
        }
        else {
            if (now >= end) break;
            if (PyThread_acquire_lock_timed(lk->lock, end - now, 0) == PY_LOCK_ACQUIRED) { acquired = 1; break; }
        }
    }
    if (polling) __atomic_store_n(&self->pollers, 0, __ATOMIC_SEQ_CST);
    Py_END_ALLOW_THREADS
    if (acquired) lk->locked = 1;
    return PyLong_FromLong(acquired ? 1 : answered ? 2 : 0);
}

static void
doorbell_dealloc(DoorbellObject *self)
{
    if (__atomic_exchange_n(&self->deferred_at, 0, __ATOMIC_SEQ_CST) != 0)
        __atomic_sub_fetch(&doorbell_pending, 1, __ATOMIC_SEQ_CST);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
doorbell_pollers(DoorbellObject *self, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLong(__atomic_load_n(&self->pollers, __ATOMIC_SEQ_CST));
}

static PyMethodDef doorbell_methods[] = {
    {"defer", (PyCFunction)doorbell_defer, METH_NOARGS, "defer() -> stamp (0: not deferred)"},
    {"take", (PyCFunction)(void (*)(void))doorbell_take, METH_FASTCALL, "take(stamp=0) -> bool"},
    {"wait", (PyCFunction)doorbell_wait, METH_VARARGS, "wait(lock, timeout) -> 1 woken, 0 timed out, 2 answered"},
    {"pollers", (PyCFunction)doorbell_pollers, METH_NOARGS, "pollers() -> int"},
    {NULL}
};

static PyTypeObject DoorbellType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "npurt._speedups.Doorbell",
    .tp_basicsize = sizeof(DoorbellObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A deferred worker wake-up, answered by a polling idle worker.",
    .tp_new = doorbell_new,
    .tp_dealloc = (destructor)doorbell_dealloc,
    .tp_methods = doorbell_methods,
    .tp_members = doorbell_members,
};

/* ------------------------------------------------------------------ DLPack capsules */
/* capsule(ptr, shape, strides, code, bits, device_type, device_id, owner): the legacy
 * "dltensor" capsule of npurt.array.dlpack.capsule_at, made here in one allocation instead of
 * by rewriting numpy's. When the consumer frees the tensor, the deleter calls owner[0](owner)
 * (if owner is not None) with the GIL held and any exception the thread is unwinding with
 * saved and restored, so it is never replaced (the reason capsule_at goes through numpy's C
 * deleter); an exception the call raises is dropped, as the Python finalizer drops it. A
 * capsule never consumed deletes itself the same way. */
typedef struct { int32_t device_type; int32_t device_id; } DLDevice_;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType_;
typedef struct {
    void *data; DLDevice_ device; int32_t ndim; DLDataType_ dtype;
    int64_t *shape; int64_t *strides; uint64_t byte_offset;
} DLTensor_;
typedef struct DLManaged_ {
    DLTensor_ dl_tensor; void *manager_ctx; void (*deleter)(struct DLManaged_ *self);
} DLManaged_;

static void
dl_deleter(DLManaged_ *self)
{
    PyObject *owner = (PyObject *)self->manager_ctx;
    if (owner != NULL) {
#if PY_VERSION_HEX >= 0x030D0000
        int finalizing = Py_IsFinalizing();
#else
        int finalizing = _Py_IsFinalizing();
#endif
        if (!finalizing) {  /* at shutdown the owner is left to the interpreter */
            PyGILState_STATE gil = PyGILState_Ensure();
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyObject *fn = PyTuple_Check(owner) && PyTuple_GET_SIZE(owner) > 0 ? PyTuple_GET_ITEM(owner, 0) : NULL;
            if (fn != NULL) {
                PyObject *r = PyObject_CallOneArg(fn, owner);
                if (r == NULL) PyErr_Clear(); else Py_DECREF(r);
            }
            Py_DECREF(owner);
            PyErr_Restore(type, value, tb);
            PyGILState_Release(gil);
        }
    }
    PyMem_RawFree(self);
}

static void
dl_capsule_destructor(PyObject *capsule)
{
    if (PyCapsule_IsValid(capsule, "dltensor")) {  /* never consumed (renamed "used_dltensor" if it was) */
        DLManaged_ *m = (DLManaged_ *)PyCapsule_GetPointer(capsule, "dltensor");
        if (m != NULL) m->deleter(m);
    }
}

static int
dl_dims(PyObject *seq, int64_t *out, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(seq, i));
        if (v == -1 && PyErr_Occurred()) return -1;
        out[i] = v;
    }
    return 0;
}

static PyObject *
dl_capsule(PyObject *const *args, PyObject *shape, PyObject *strides, PyObject *owner)
{
    Py_ssize_t ndim = PyTuple_GET_SIZE(shape);
    if (PyTuple_GET_SIZE(strides) != ndim) {
        PyErr_SetString(PyExc_ValueError, "capsule: shape and strides differ in length");
        return NULL;
    }
    unsigned long long ptr = PyLong_AsUnsignedLongLong(args[0]);
    long code = PyLong_AsLong(args[3]), bits = PyLong_AsLong(args[4]);
    long dev_type = PyLong_AsLong(args[5]), dev_id = PyLong_AsLong(args[6]);
    if (PyErr_Occurred()) return NULL;
    DLManaged_ *t = (DLManaged_ *)PyMem_RawMalloc(sizeof(DLManaged_) + 2 * (ndim ? ndim : 1) * sizeof(int64_t));
    if (t == NULL) return PyErr_NoMemory();
    int64_t *dims = (int64_t *)(t + 1);
    if (dl_dims(shape, dims, ndim) < 0 || dl_dims(strides, dims + ndim, ndim) < 0) {
        PyMem_RawFree(t);
        return NULL;
    }
    t->dl_tensor.data = (void *)(uintptr_t)ptr;
    t->dl_tensor.device.device_type = (int32_t)dev_type;
    t->dl_tensor.device.device_id = (int32_t)dev_id;
    t->dl_tensor.ndim = (int32_t)ndim;
    t->dl_tensor.dtype.code = (uint8_t)code;
    t->dl_tensor.dtype.bits = (uint8_t)bits;
    t->dl_tensor.dtype.lanes = 1;
    t->dl_tensor.shape = dims;
    t->dl_tensor.strides = dims + ndim;
    t->dl_tensor.byte_offset = 0;
    t->manager_ctx = owner == Py_None ? NULL : Py_NewRef(owner);
    t->deleter = dl_deleter;
    PyObject *capsule = PyCapsule_New(t, "dltensor", dl_capsule_destructor);
    if (capsule == NULL) {
        Py_XDECREF((PyObject *)t->manager_ctx);
        PyMem_RawFree(t);
    }
    return capsule;
}

static PyObject *
mod_capsule(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8) {
        PyErr_SetString(PyExc_TypeError, "capsule(ptr, shape, strides, code, bits, device_type, device_id, owner)");
        return NULL;
    }
    PyObject *owner = args[7];
    PyObject *shape = PySequence_Tuple(args[1]);  /* a tuple itself; a torch.Size, a list: copied */
    if (shape == NULL) return NULL;
    PyObject *strides = PySequence_Tuple(args[2]);
    if (strides == NULL) {
        Py_DECREF(shape);
        return NULL;
    }
    PyObject *capsule = dl_capsule(args, shape, strides, owner);
    Py_DECREF(shape);
    Py_DECREF(strides);
    return capsule;
}

/* ------------------------------------------------------------------ streams */
/* Stream.enqueue's common case and run_stream's loop over plain tasks, in C (issue 28: the
 * per-task Python work of a tiny copy). npurt.runtime.stream and scheduler hold the rules and
 * the Python paths, which stay the slow path and the tools' view; what runs here is the same
 * sequence of steps with the Python calls taken out:
 *
 *   enqueue_copy  memops' fast path: makes the CopyTask (its slots set directly, as its
 *                 __init__ does) and enqueues it: sequence number, the holders' use records,
 *                 the append, and the hand-in of an IDLE stream (READY with a ticket, or the
 *                 inline run of inline.py's rules); anything else (a capture, task stacks,
 *                 launch blocking, a listening tool, a stopped or destroyed stream, the enqueue
 *                 lock held by another thread) calls the Python Stream.enqueue before anything
 *                 has changed;
 *   run_tasks     Scheduler.run_stream's loop while the head task is plain (not blocked-on,
 *                 not dropped, no tool listening, no task faults armed): it runs the task (a
 *                 small copy within one device's memory as a memmove, anything else through
 *                 its run()) and retires it; it returns to the Python loop at anything else.
 *
 * Ownership rules (scheduler.py's module doc) hold a fortiori: a test and the stores that
 * act on it have no Python code between them here, and the GIL is held throughout. The
 * fields are the Python classes' slots, read and written at their offsets (the descriptors'
 * offsets, taken once by configure_streams). */

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

static inline void
slot_set(PyObject *o, Py_ssize_t off, PyObject *v)
{
    PyObject *old = SLOT(o, off);
    Py_INCREF(v);
    SLOT(o, off) = v;
    Py_XDECREF(old);
}

enum {
    S_CAPTURE, S_TASK_STACKS, S_LAUNCH_BLOCKING, S_ENQ_LOCK, S_STOPPED, S_DESTROYED, S_ENQUEUED_SEQ,
    S_QUEUE, S_DEVICE, S_STATE, S_SCHEDULER, S_INLINE, S_STREAK, S_RUNNER, S_TICKET, S_PRIORITY,
    S_COMPLETED_SEQ, S_DROPPED_UPTO, S_WAITERS, S_WATCHERS, S_CURRENT, S_TOUCHED, S_NFIELDS
};
static const char *stream_fields[S_NFIELDS] = {
    "capture", "_task_stacks", "_launch_blocking", "enq_lock", "stopped", "destroyed", "enqueued_seq",
    "queue", "device", "state", "scheduler", "_inline", "streak", "runner", "ticket", "priority",
    "completed_seq", "dropped_upto", "waiters", "watchers", "current", "touched",
};
static Py_ssize_t soff[S_NFIELDS];
enum { T_SEQ, T_STREAM, C_DST, C_SRC, C_N, C_DIRECTION, C_KEEP, C_CHEAP, T_NFIELDS };
static Py_ssize_t toff[T_NFIELDS];

static PyTypeObject *stream_type, *task_type, *copy_type;
static PyObject *st_hooks, *st_faults, *st_tls, *st_backends, *st_enqueue_slow, *st_copy_run,
    *st_thread_token, *st_finish;
static PyObject *st_idle, *st_ready, *st_running, *st_d2d;
static PyObject *str_tasks, *str_token, *str_worker, *str_owed, *str_controlled, *str_ready, *str_wake_for,
    *str_work_epoch, *str_touched, *str_starts, *str_containing, *str_cheap, *str_run, *str_may_block, *str_trivial, *str_popleft, *str_append,
    *str_notify_retired, *str_run_stream, *str_release, *str_copy_window, *str_flush_deferred;
static long long st_inline_bytes, st_va_base;
static long st_streak;
static int streams_on;

#define COPY_C_MAX (16 << 10)  /* bytes a copy may move here, the GIL held (numpy releases it for more) */
#define WINDOWS 64
typedef struct {
    PyObject *backend;   /* the DeviceBackend this describes (a strong reference) */
    PyObject *mem;       /* its memory as a numpy array, which keeps the mapping alive */
    unsigned long long va_base, half, length;
    char *host;
} CopyWindow;
static CopyWindow windows[WINDOWS];

/* An attribute of a plain object (HOOKS, FAULTS) from its instance dict: 1 true, 0 false;
 * missing or not a bool counts as true (the caller takes the Python path). */
static int
flag_set(PyObject *obj, PyObject *name)
{
    PyObject **dictptr = _PyObject_GetDictPtr(obj);
    if (dictptr == NULL || *dictptr == NULL) return 1;
    PyObject *v = PyDict_GetItemWithError(*dictptr, name);  /* borrowed */
    if (v == NULL) { PyErr_Clear(); return 1; }
    return v != Py_False;
}

static PyObject *
mod_configure_streams(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    /* (Stream, Task, CopyTask, HOOKS, FAULTS, TLS, backends, enqueue_slow, states, inline_bytes,
     *  streak, va_base, thread_token, finish) */
    if (nargs != 14 || !PyType_Check(args[0]) || !PyType_Check(args[1]) || !PyType_Check(args[2])
        || !PyTuple_Check(args[8]) || PyTuple_GET_SIZE(args[8]) != 3) {
        PyErr_SetString(PyExc_TypeError, "configure_streams(Stream, Task, CopyTask, hooks, faults, tls, "
                        "backends, enqueue_slow, (IDLE, READY, RUNNING), inline_bytes, streak, va_base, thread_token, finish)");
        return NULL;
    }
    streams_on = 0;
    PyTypeObject *st = (PyTypeObject *)args[0], *tt = (PyTypeObject *)args[1], *ct = (PyTypeObject *)args[2];
    for (int i = 0; i < S_NFIELDS; i++)
        if ((soff[i] = slot_offset(st, stream_fields[i])) < 0) return NULL;
    static const char *task_fields[T_NFIELDS] = {"seq", "stream", "dst", "src", "n", "direction", "keep", "cheap"};
    for (int i = 0; i < T_NFIELDS; i++)
        if ((toff[i] = slot_offset(i < 2 ? tt : ct, task_fields[i])) < 0) return NULL;
    PyObject *run = PyDict_GetItemWithError(ct->tp_dict, str_run);
    if (run == NULL) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "CopyTask.run missing"); return NULL; }
    st_inline_bytes = PyLong_AsLongLong(args[9]);
    st_streak = PyLong_AsLong(args[10]);
    st_va_base = PyLong_AsLongLong(args[11]);
    if (PyErr_Occurred()) return NULL;
    Py_INCREF(st); Py_XSETREF(stream_type, st);
    Py_INCREF(tt); Py_XSETREF(task_type, tt);
    Py_INCREF(ct); Py_XSETREF(copy_type, ct);
    Py_INCREF(run); Py_XSETREF(st_copy_run, run);
    Py_INCREF(args[3]); Py_XSETREF(st_hooks, args[3]);
    Py_INCREF(args[4]); Py_XSETREF(st_faults, args[4]);
    Py_INCREF(args[5]); Py_XSETREF(st_tls, args[5]);
    Py_INCREF(args[6]); Py_XSETREF(st_backends, args[6]);
    Py_INCREF(args[7]); Py_XSETREF(st_enqueue_slow, args[7]);
    Py_INCREF(args[12]); Py_XSETREF(st_thread_token, args[12]);
    Py_INCREF(args[13]); Py_XSETREF(st_finish, args[13]);
    PyObject *states = args[8];
    Py_INCREF(PyTuple_GET_ITEM(states, 0)); Py_XSETREF(st_idle, PyTuple_GET_ITEM(states, 0));
    Py_INCREF(PyTuple_GET_ITEM(states, 1)); Py_XSETREF(st_ready, PyTuple_GET_ITEM(states, 1));
    Py_INCREF(PyTuple_GET_ITEM(states, 2)); Py_XSETREF(st_running, PyTuple_GET_ITEM(states, 2));
    streams_on = 1;
    Py_RETURN_NONE;
}

/* Forget the copy windows (the devices were forgotten: finalize). */
static void
forget_windows(void)
{
    for (int i = 0; i < WINDOWS; i++) {
        Py_CLEAR(windows[i].backend);
        Py_CLEAR(windows[i].mem);
    }
}

/* The host address of [va, va + n) of device memory for a memmove, or NULL (no error set):
 * not a plain address of a device's memory below its VMM window, or the device's backend
 * does not describe its memory (copy_window). */
static char *
window_host(unsigned long long va, unsigned long long n)
{
    if (va < (unsigned long long)st_va_base) return NULL;
    unsigned long long physical = (va - (unsigned long long)st_va_base) >> 40;
    if (physical >= WINDOWS || !PyDict_Check(st_backends)) return NULL;
    PyObject *key = PyLong_FromUnsignedLongLong(physical);
    if (key == NULL) { PyErr_Clear(); return NULL; }
    PyObject *backend = PyDict_GetItemWithError(st_backends, key);  /* borrowed */
    Py_DECREF(key);
    if (backend == NULL) { PyErr_Clear(); return NULL; }
    CopyWindow *w = &windows[physical];
    if (w->backend != backend) {  /* a device not seen yet: ask its backend (once) */
        Py_CLEAR(w->backend);
        Py_CLEAR(w->mem);
        w->host = NULL;
        w->backend = Py_NewRef(backend);
        PyObject *desc = PyObject_CallMethodNoArgs(backend, str_copy_window);
        Py_buffer view;
        if (desc != NULL && PyTuple_Check(desc) && PyTuple_GET_SIZE(desc) == 3) {
            unsigned long long base = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(desc, 0));
            unsigned long long half = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(desc, 1));
            if (!PyErr_Occurred() && PyObject_GetBuffer(PyTuple_GET_ITEM(desc, 2), &view, PyBUF_WRITABLE) == 0) {
                w->host = view.buf;
                w->length = (unsigned long long)view.len;
                PyBuffer_Release(&view);  /* the array, held below, keeps the memory mapped */
                w->va_base = base;
                w->half = half;
                w->mem = Py_NewRef(PyTuple_GET_ITEM(desc, 2));
            }
        }
        PyErr_Clear();  /* no description (None, another backend): its copies take run() */
        Py_XDECREF(desc);
    }
    if (w->host == NULL) return NULL;
    if (va < w->va_base) return NULL;
    unsigned long long off = va - w->va_base;
    if (off >= w->half || off + n > w->length || off + n < off) return NULL;
    return w->host + off;
}

/* 1: a CopyTask's bytes moved here; 0: not here (its run() moves them). */
static int
copy_here(PyObject *task)
{
    if (Py_TYPE(task) != copy_type) return 0;
    PyObject *run = PyDict_GetItemWithError(copy_type->tp_dict, str_run);
    if (run != st_copy_run) { PyErr_Clear(); return 0; }  /* replaced (a test's wrapper): call it */
    PyObject *dst = SLOT(task, toff[C_DST]), *src = SLOT(task, toff[C_SRC]), *n = SLOT(task, toff[C_N]);
    if (dst == NULL || src == NULL || n == NULL || !PyLong_CheckExact(dst) || !PyLong_CheckExact(src)
        || !PyLong_CheckExact(n))
        return 0;
    unsigned long long d = PyLong_AsUnsignedLongLong(dst), s = PyLong_AsUnsignedLongLong(src);
    long long count = PyLong_AsLongLong(n);
    if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
    if (count <= 0 || count > COPY_C_MAX) return 0;
    unsigned long long base = (unsigned long long)st_va_base;
    PyObject *keep = SLOT(task, toff[C_KEEP]);
    int kept = keep != NULL && keep != Py_None;
    if (d >= base && s >= base) {  /* within one device */
        if (((d - base) >> 40) != ((s - base) >> 40)) return 0;
    }
    else if (!kept || (d < base && s < base)) return 0;
    /* else between a device and host memory the task keeps alive (the Pythonic API's copies:
     * `keep` is the numpy array holding that end, so its raw address stays valid) */
    char *hd = d < base ? (char *)(uintptr_t)d : window_host(d, (unsigned long long)count);
    if (hd == NULL) return 0;
    char *hs = s < base ? (char *)(uintptr_t)s : window_host(s, (unsigned long long)count);
    if (hs == NULL) return 0;
    memmove(hd, hs, (size_t)count);
    return 1;
}

/* The head task can run and retire here: plain (no blocker to ask), not retired or dropped
 * already. */
static int
plain_task(PyObject *s, PyObject *task, PyObject **seq_out)
{
    if (!PyObject_TypeCheck(task, task_type)) return 0;
    PyObject *seq = SLOT(task, toff[T_SEQ]);
    if (seq == NULL) return 0;
    PyObject *mb = PyObject_GetAttr(task, str_may_block);
    if (mb == NULL) { PyErr_Clear(); return 0; }
    int blocks = mb != Py_False;
    Py_DECREF(mb);
    if (blocks) return 0;
    PyObject *done = SLOT(s, soff[S_COMPLETED_SEQ]), *dropped = SLOT(s, soff[S_DROPPED_UPTO]);
    if (done == NULL || dropped == NULL) return 0;
    int later = PyObject_RichCompareBool(seq, done, Py_GT);
    if (later > 0) later = PyObject_RichCompareBool(seq, dropped, Py_GT);
    if (later < 0) { PyErr_Clear(); return 0; }
    *seq_out = seq;
    return later;
}

/* me.owed: None, or a list (a worker's own run). NULL: not readable (the Python loop decides). */
static PyObject *
owed_of(PyObject *me)
{
    PyObject *owed = PyObject_GetAttr(me, str_owed);
    if (owed == NULL) PyErr_Clear();
    return owed;
}

/* me.worker: a scheduler worker's token (else a host thread's) */
static int
is_worker(PyObject *me)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);  /* the task's exception, kept across the attribute read */
    PyObject *w = PyObject_GetAttrString(me, "worker");
    int r = w != NULL && PyObject_IsTrue(w) > 0;
    Py_XDECREF(w);
    PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return r;
}

static int elementwise_here(PyObject *task);

#define RUN_LET_GO (-1)    /* the thread no longer owns the stream */
#define RUN_FINISH (-2)    /* the task in s.current ran; its retirement is the Python loop's */
#define RUN_RAISED (-3)    /* an exception: see run_tasks */
#define BIG_BUDGET (1LL << 62)

static int
truthy_slot(PyObject *o, Py_ssize_t off)
{
    PyObject *v = SLOT(o, off);
    if (v == NULL) return 0;
    int r = PyObject_IsTrue(v);
    if (r < 0) { PyErr_Clear(); return 1; }
    return r;
}

/* Scheduler.run_stream's loop over plain tasks; `me` owns `s`. Returns the budget left (>= 0:
 * the Python loop goes on from the head task, nothing of which has begun), RUN_LET_GO (the
 * stream went IDLE, or an abort handed it on while a task ran), RUN_FINISH (s.current ran and
 * a tool started listening meanwhile: the Python loop retires it), or RUN_RAISED with an
 * exception set: raised by the run() of s.current when that is set (the task began and is not
 * retired), else raised after the last task retired (notify_retired). `until`: NULL or the
 * sequence number a host thread waits for. */
static long long
run_tasks(PyObject *s, PyObject *me, long long budget, PyObject *until, int defer)
{
    PyObject *queue = SLOT(s, soff[S_QUEUE]);
    if (queue == NULL || !streams_on || Py_TYPE(s) != stream_type) return budget;
    for (;;) {
        Py_ssize_t len = PyObject_Length(queue);
        if (len < 0) { PyErr_Clear(); return budget; }
        if (len == 0) {  /* IDLE: the emptiness test and these stores are one atomic step */
            slot_set(s, soff[S_RUNNER], Py_None);
            slot_set(s, soff[S_STATE], st_idle);
            return RUN_LET_GO;
        }
        if (budget <= 0 || hooks_listening(st_hooks) || flag_set(st_faults, str_tasks)) return budget;
        if (until != NULL) {
            PyObject *done = SLOT(s, soff[S_COMPLETED_SEQ]);
            int got = done == NULL ? 1 : PyObject_RichCompareBool(done, until, Py_GE);
            if (got != 0) { PyErr_Clear(); return budget; }
        }
        PyObject *task = PySequence_GetItem(queue, 0);
        if (task == NULL) { PyErr_Clear(); return budget; }
        PyObject *seq = NULL;
        if (!plain_task(s, task, &seq)) { Py_DECREF(task); return budget; }
        Py_INCREF(seq);
        if (defer) {
            PyObject *trivial = PyObject_GetAttr(task, str_trivial);
            if (trivial == NULL) { PyErr_Clear(); Py_DECREF(seq); Py_DECREF(task); return budget; }
            int plain_work = trivial == Py_False;
            Py_DECREF(trivial);
            if (plain_work) {  /* real work next: the Python loop announces what we unparked */
                PyObject *owed = owed_of(me);
                int pay = owed == NULL || (owed != Py_None && (!PyList_Check(owed) || PyList_GET_SIZE(owed)));
                Py_XDECREF(owed);
                if (pay || PyObject_SetAttr(me, str_owed, Py_None) < 0) {
                    PyErr_Clear(); Py_DECREF(seq); Py_DECREF(task); return budget;
                }
            }
        }
        budget -= 1;
        slot_set(s, soff[S_CURRENT], task);
        if (!copy_here(task) && !elementwise_here(task)) {
            PyObject *res = PyObject_CallMethodNoArgs(task, str_run);
            if (res == NULL) {
                Py_DECREF(seq);
                Py_DECREF(task);
                /* aborted while it ran (KernelTask.expire: the watchdog or a reset failed and
                 * retired it and handed s on): its own exception is dropped, as the Python loop
                 * drops it, unless it is an interrupt of a host thread */
                if (SLOT(s, soff[S_RUNNER]) != me && (PyErr_ExceptionMatches(PyExc_Exception) || is_worker(me))) {
                    PyErr_Clear();
                    return RUN_LET_GO;
                }
                return RUN_RAISED;
            }
            Py_DECREF(res);
        }
        if (defer) {  /* me.owed = me.owed or [] */
            PyObject *owed = owed_of(me);
            if (owed == Py_None) {
                PyObject *fresh = PyList_New(0);
                if (fresh == NULL || PyObject_SetAttr(me, str_owed, fresh) < 0) PyErr_Clear();
                Py_XDECREF(fresh);
            }
            Py_XDECREF(owed);
        }
        if (hooks_listening(st_hooks)) { Py_DECREF(seq); Py_DECREF(task); return RUN_FINISH; }
        slot_set(s, soff[S_CURRENT], Py_None);
        if (SLOT(s, soff[S_RUNNER]) != me) { Py_DECREF(seq); Py_DECREF(task); return RUN_LET_GO; }
        slot_set(s, soff[S_COMPLETED_SEQ], seq);  /* the commit: the task is retired */
        Py_DECREF(seq);
        PyObject *head = PyObject_CallMethodNoArgs(queue, str_popleft);
        Py_DECREF(task);
        if (head == NULL) return RUN_RAISED;
        Py_DECREF(head);
        if (truthy_slot(s, soff[S_WAITERS]) || truthy_slot(s, soff[S_WATCHERS])) {
            PyObject *r = PyObject_CallMethodNoArgs(s, str_notify_retired);
            if (r == NULL) return RUN_RAISED;
            Py_DECREF(r);
        }
    }
}

static PyObject *
mod_run_tasks(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "run_tasks(stream, me, budget, until, defer)");
        return NULL;
    }
    long long budget = PyLong_AsLongLong(args[2]);
    if (budget == -1 && PyErr_Occurred()) return NULL;
    int defer = PyObject_IsTrue(args[4]);
    if (defer < 0) return NULL;
    int has_until = PyObject_IsTrue(args[3]);
    if (has_until < 0) return NULL;
    long long r = run_tasks(args[0], args[1], budget, has_until ? args[3] : NULL, defer);
    if (r == RUN_RAISED) return NULL;
    return PyLong_FromLongLong(r);
}

/* The stream `s` (IDLE when last looked at) has `task`, number `seq`, queued: hand it in as
 * Stream.enqueue does (inline.py's rules, else READY with a ticket). 0, or -1 with an error. */
static int
hand_in(PyObject *s, PyObject *task, PyObject *seq, int cheap)
{
    PyObject *sched = SLOT(s, soff[S_SCHEDULER]), *token = NULL;
    if (sched == NULL) return 0;
    Py_INCREF(sched);
    PyObject *controlled = PyObject_GetAttr(sched, str_controlled);
    if (controlled == NULL) goto error;
    int free_run = controlled == Py_None;
    Py_DECREF(controlled);
    PyObject *streak = SLOT(s, soff[S_STREAK]);
    if (cheap && SLOT(s, soff[S_INLINE]) == Py_True && streak != NULL && PyLong_CheckExact(streak)
        && PyLong_AsLong(streak) < st_streak && !hooks_listening(st_hooks) && !flag_set(st_faults, str_tasks)
        && free_run) {  /* inline.py's rules */
        token = PyObject_GetAttr(st_tls, str_token);
        if (token == NULL) goto error;
        if (token == Py_None) {
            Py_DECREF(token);
            token = PyObject_CallNoArgs(st_thread_token);
            if (token == NULL) goto error;
        }
        else {
            PyObject *worker = PyObject_GetAttr(token, str_worker);
            if (worker == NULL) goto error;
            int is_worker = worker != Py_False;
            Py_DECREF(worker);
            if (is_worker) Py_CLEAR(token);  /* a worker's enqueue (a host function's) never runs inline */
        }
        if (token != NULL) {
            PyObject *more = PyNumber_Add(SLOT(s, soff[S_STREAK]), one_obj);
            if (more == NULL) goto error;
            slot_set(s, soff[S_STREAK], more);
            Py_DECREF(more);
        }
    }
    if (token != NULL) {
        PyObject *owed = owed_of(token);
        int defer = owed != NULL && owed != Py_None;
        Py_XDECREF(owed);
        if (SLOT(s, soff[S_STATE]) != st_idle) goto done;  /* (read again: the rules above made calls) */
        slot_set(s, soff[S_RUNNER], token);  /* before it sets IDLE, so this task is never stranded */
        slot_set(s, soff[S_STATE], st_running);
        long long r = run_tasks(s, token, BIG_BUDGET, seq, defer);
        if (r == RUN_LET_GO) goto done;
        PyObject *raised = NULL;
        if (r == RUN_RAISED) {
            PyObject *type, *tb;
            PyErr_Fetch(&type, &raised, &tb);
            PyErr_NormalizeException(&type, &raised, &tb);
            if (raised != NULL && tb != NULL) PyException_SetTraceback(raised, tb);
            Py_XDECREF(type);
            Py_XDECREF(tb);
            if (raised == NULL) raised = Py_NewRef(Py_None);
        }
        else if (r == RUN_FINISH) raised = Py_NewRef(st_finish);
        /* the Python loop goes on: scheduler.run_stream(s, token, budget, until, raised) */
        PyObject *budget = PyLong_FromLongLong(r >= 0 ? r : BIG_BUDGET);
        PyObject *res = NULL;
        if (budget != NULL) {
            PyObject *call[6] = {sched, s, token, budget, seq, raised != NULL ? raised : Py_None};
            res = PyObject_VectorcallMethod(str_run_stream, call, 6 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
            Py_DECREF(budget);
        }
        Py_XDECREF(raised);
        if (res == NULL) {  /* interrupted: if we still own the stream, the workers take it */
            PyObject *type, *value, *tb;
            PyErr_Fetch(&type, &value, &tb);
            PyObject *r2 = PyObject_CallMethodObjArgs(sched, str_release, s, token, NULL);
            Py_XDECREF(r2);
            if (r2 == NULL) { Py_XDECREF(type); Py_XDECREF(value); Py_XDECREF(tb); }
            else PyErr_Restore(type, value, tb);
            goto error;
        }
        Py_DECREF(res);
        goto done;
    }
    {
        PyObject *t = PyList_New(1);  /* made first: an allocation may run the GC, and so other threads */
        if (t == NULL) goto error;
        Py_INCREF(s);
        PyList_SET_ITEM(t, 0, s);
        PyObject *ready = PyObject_GetAttr(sched, str_ready);
        PyObject *q = ready != NULL && PyList_Check(ready) && PyLong_CheckExact(SLOT(s, soff[S_PRIORITY]))
            ? PyList_GetItem(ready, PyLong_AsSsize_t(SLOT(s, soff[S_PRIORITY]))) : NULL;
        if (q == NULL) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "npurt: a scheduler without ready queues");
            Py_XDECREF(ready); Py_DECREF(t); goto error;
        }
        Py_INCREF(q);
        Py_DECREF(ready);
        if (SLOT(s, soff[S_STATE]) == st_idle) {  /* test and set (see scheduler.py) */
            slot_set(s, soff[S_STATE], st_ready);
            slot_set(s, soff[S_TICKET], t);
            PyObject *r = PyObject_CallMethodOneArg(q, str_append, t);
            if (r == NULL) { Py_DECREF(q); Py_DECREF(t); goto error; }
            Py_DECREF(r);
            /* wake_for(s, defer) as Stream.enqueue calls it: a host thread's enqueue onto a
             * stream that may run inline may defer the wake-up (wakeups.py) */
            int defer = SLOT(s, soff[S_INLINE]) == Py_True;
            if (defer) {
                PyObject *tok = PyObject_GetAttr(st_tls, str_token);
                if (tok == NULL) { Py_DECREF(q); Py_DECREF(t); goto error; }
                if (tok != Py_None) {
                    PyObject *worker = PyObject_GetAttr(tok, str_worker);
                    defer = worker == NULL ? -1 : worker == Py_False;
                    Py_XDECREF(worker);
                }
                Py_DECREF(tok);
                if (defer < 0) { Py_DECREF(q); Py_DECREF(t); goto error; }
            }
            PyObject *call[3] = {sched, s, defer ? Py_True : Py_False};
            r = PyObject_VectorcallMethod(str_wake_for, call, 3 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
            if (r == NULL) { Py_DECREF(q); Py_DECREF(t); goto error; }
            Py_DECREF(r);
        }
        Py_DECREF(q);
        Py_DECREF(t);
    }
done:
    Py_XDECREF(token);
    Py_DECREF(sched);
    return 0;
error:
    Py_XDECREF(token);
    Py_DECREF(sched);
    return -1;
}

/* Stream.enqueue(CopyTask(dst, src, n, direction, keep), holders=(holder, holder)): args are
 * (stream, dst, src, n, direction, keep, holder, holder), checked by the caller. */
static PyObject *
enqueue_built(PyObject *s, PyObject *task, int cheap, PyObject *const *holders, int nholders);

static PyObject *
enqueue_copy(PyObject *const *args)
{
    PyObject *task = copy_type->tp_alloc(copy_type, 0);  /* as CopyTask(...) */
    if (task == NULL) return NULL;
    int cheap = 0;
    if (PyLong_CheckExact(args[3])) {
        int overflow;
        long long n = PyLong_AsLongLongAndOverflow(args[3], &overflow);
        cheap = !overflow && n <= st_inline_bytes;
    }
    slot_set(task, toff[C_DST], args[1]);
    slot_set(task, toff[C_SRC], args[2]);
    slot_set(task, toff[C_N], args[3]);
    slot_set(task, toff[C_DIRECTION], args[4]);
    slot_set(task, toff[C_KEEP], args[5]);
    slot_set(task, toff[C_CHEAP], cheap ? Py_True : Py_False);
    return enqueue_built(args[0], task, cheap, args + 6, 2);
}

/* Stream.enqueue(task, holders=holders) of a task the caller made (a new reference, which
 * this takes), in C where Stream.enqueue's common case allows, else by _enqueue_slow. */
static PyObject *
enqueue_built(PyObject *s, PyObject *task, int cheap, PyObject *const *holders, int nholders)
{
    LockObject *lock = NULL;
    if (__atomic_load_n(&doorbell_pending, __ATOMIC_RELAXED) && Py_TYPE(s) == stream_type) {
        /* a deferred wake-up lasts until the host's next enqueue (Scheduler.flush_deferred) */
        PyObject *sched = SLOT(s, soff[S_SCHEDULER]);
        PyObject *r = sched == NULL ? NULL : PyObject_CallMethodOneArg(sched, str_flush_deferred, s);
        if (r == NULL) { if (sched != NULL) { Py_DECREF(task); return NULL; } }
        else Py_DECREF(r);
    }
    if (Py_TYPE(s) == stream_type && SLOT(s, soff[S_CAPTURE]) == Py_None && SLOT(s, soff[S_TASK_STACKS]) == Py_False
        && SLOT(s, soff[S_LAUNCH_BLOCKING]) == Py_False && !hooks_listening(st_hooks)) {
        lock = (LockObject *)SLOT(s, soff[S_ENQ_LOCK]);
        if (lock == NULL || Py_TYPE(lock) != &LockType
            || PyThread_acquire_lock_timed(lock->lock, 0, 0) != PY_LOCK_ACQUIRED)
            lock = NULL;  /* held by another thread: the Python path waits for it */
        else if (SLOT(s, soff[S_DESTROYED]) != Py_False || SLOT(s, soff[S_STOPPED]) != Py_None
                 || !PyLong_CheckExact(SLOT(s, soff[S_ENQUEUED_SEQ]))) {
            PyThread_release_lock(lock->lock);
            lock = NULL;
        }
        else lock->locked = 1;
    }
    if (lock == NULL) {  /* Stream.enqueue(task, holders=(holder, holder)) */
        PyObject *call[6] = {s, task};
        for (int i = 0; i < nholders; i++) call[2 + i] = holders[i];
        PyObject *res = PyObject_Vectorcall(st_enqueue_slow, call, 2 + nholders, NULL);
        Py_DECREF(task);
        return res;
    }
    PyObject *before = SLOT(s, soff[S_ENQUEUED_SEQ]);
    PyObject *seq = PyNumber_Add(before, one_obj);
    if (seq == NULL) goto unlock_error;
    slot_set(task, toff[T_STREAM], s);
    slot_set(task, toff[T_SEQ], seq);
    /* the memory the task uses is not reused before it retires */
    for (int i = 0; i < nholders; i++)
        if (note_one(holders[i], s, seq) < 0) goto unlock_error;
    Py_INCREF(before);
    slot_set(s, soff[S_ENQUEUED_SEQ], seq);
    PyObject *r = PyObject_CallMethodOneArg(SLOT(s, soff[S_QUEUE]), str_append, task);
    if (r == NULL) {  /* both or neither */
        slot_set(s, soff[S_ENQUEUED_SEQ], before);
        Py_DECREF(before);
        goto unlock_error;
    }
    Py_DECREF(r);
    Py_DECREF(before);
    PyObject *device = SLOT(s, soff[S_DEVICE]);  /* the device is no longer drained (Device.drained) */
    PyObject *epoch = device == NULL ? NULL : PyObject_GetAttr(device, str_work_epoch);
    PyObject *next = epoch == NULL ? NULL : PyNumber_Add(epoch, one_obj);
    int ok = next != NULL && PyObject_SetAttr(device, str_work_epoch, next) == 0;
    Py_XDECREF(epoch);
    Py_XDECREF(next);
    if (ok && SLOT(s, soff[S_TOUCHED]) != Py_True) {  /* after the seq store: Device.drained's order */
        PyObject *touched = PyObject_GetAttr(device, str_touched);
        ok = touched != NULL && PyDict_SetItem(touched, s, Py_None) == 0;
        Py_XDECREF(touched);
        if (ok) slot_set(s, soff[S_TOUCHED], Py_True);
    }
    lock->locked = 0;
    PyThread_release_lock(lock->lock);
    if (!ok || (SLOT(s, soff[S_STATE]) == st_idle && hand_in(s, task, seq, cheap) < 0)) {
        Py_DECREF(task);
        Py_DECREF(seq);
        return NULL;
    }
    Py_DECREF(task);
    return seq;
unlock_error:
    lock->locked = 0;
    PyThread_release_lock(lock->lock);
    Py_XDECREF(seq);
    Py_DECREF(task);
    return NULL;
}

/* enqueue_task(stream, task, *holders) -> seq: Stream.enqueue(task, holders=holders) for a
 * task of the runtime's Task classes that the caller has just made (1 to 4 holders): the
 * Pythonic API's elementwise kernels, event records, kernel launches. */
static PyObject *
mod_enqueue_task(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 3 || nargs > 6 || !streams_on || !PyObject_TypeCheck(args[1], task_type)) {
        PyErr_SetString(PyExc_TypeError, "enqueue_task(stream, task, *holders) of a Task, 1 to 4 holders, "
                        "after configure_streams");
        return NULL;
    }
    PyObject *flag = PyObject_GetAttr(args[1], str_cheap);
    if (flag == NULL) return NULL;
    int cheap = PyObject_IsTrue(flag);
    Py_DECREF(flag);
    if (cheap < 0) return NULL;
    return enqueue_built(args[0], Py_NewRef(args[1]), cheap, args + 2, (int)nargs - 2);
}

/* data_address(obj) -> int: the address of the first element of an object that exports a
 * buffer (a numpy array: read-only, strided, empty or not), as arr.ctypes.data gives it without
 * numpy's Python code (npurt.runtime.address.host_address). */
static PyObject *
mod_data_address(PyObject *m, PyObject *obj)
{
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_STRIDES) < 0) return NULL;
    PyObject *addr = PyLong_FromVoidPtr(view.buf);
    PyBuffer_Release(&view);
    return addr;
}

/* ------------------------------------------------------------------ elementwise */
/* The Pythonic API's `a op b` (npurt.array.fused) in C: `fast_binary` (the Entry kind
 * "binary", DeviceArray's operators for two arrays) makes the result and the one
 * ElementwiseTask of the op and queues it as enqueue_task does; `elementwise_here` runs
 * such a task inside run_tasks, so an op on an idle stream (inline) or a worker's run of
 * small ones calls no Python code.
 *
 * Here only what gives numpy's bits by definition: add, subtract, multiply of two operands of
 * one shape in float32, float64 and the integer types (integers wrap, as numpy's do), and
 * divide in the float types. IEEE 754 rounds each of + - * / correctly, so one operation in
 * C (no -ffast-math, SSE arithmetic: FLT_EVAL_METHOD 0 on x86-64 and aarch64) is bit for bit
 * numpy's loop. maximum, minimum and power, scalars and broadcasting, a big op (numpy releases
 * the GIL for it), and anything unusual (an unaligned or partly overlapping operand, memory
 * the device's backend does not describe) keep ElementwiseTask.run, which runs its ufunc under
 * np.errstate(all="ignore"): neither route raises numpy's floating-point warnings (overflow,
 * divide by zero), as the device raises none (npurt.array.operations' rules). */
enum { EW_ADD, EW_SUB, EW_MUL, EW_DIV, EW_NOPS };
enum { EW_F32, EW_F64, EW_I8, EW_I16, EW_I32, EW_I64, EW_U8, EW_NDT };
enum { E_NAME, E_UFUNC, E_OUT, E_SHAPE, E_DTYPE, E_NBYTES, E_OPERANDS, E_CHEAP, E_NFIELDS };
#define EW_C_MAX (16 << 10)  /* bytes an op may touch (read + written) here, the GIL held */
static PyTypeObject *ew_type;
static PyObject *ew_run, *ew_names[EW_NOPS], *ew_ufuncs[EW_NOPS], *ew_dtypes[EW_NDT];
static Py_ssize_t eoff[E_NFIELDS];
static int ew_on;
static unsigned long long ew_computed;  /* tasks elementwise_here computed (elementwise_computed()) */
static PyObject *str_streams, *str_id, *str_default_stream;

static PyObject *
mod_configure_elementwise(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    /* (ElementwiseTask, names, ufuncs, dtypes) in the orders of the enums above */
    if (nargs != 4 || !PyType_Check(args[0]) || !PyTuple_CheckExact(args[1]) || PyTuple_GET_SIZE(args[1]) != EW_NOPS
        || !PyTuple_CheckExact(args[2]) || PyTuple_GET_SIZE(args[2]) != EW_NOPS || !PyTuple_CheckExact(args[3])
        || PyTuple_GET_SIZE(args[3]) != EW_NDT) {
        PyErr_SetString(PyExc_TypeError, "configure_elementwise(ElementwiseTask, (add, sub, mul, div names), "
                        "(their ufuncs), (float32, float64, int8, int16, int32, int64, uint8 dtypes))");
        return NULL;
    }
    ew_on = 0;
    PyTypeObject *tt = (PyTypeObject *)args[0];
    static const char *fields[E_NFIELDS] = {"name", "ufunc", "out", "shape", "dtype", "nbytes", "operands", "cheap"};
    for (int i = 0; i < E_NFIELDS; i++)
        if ((eoff[i] = slot_offset(tt, fields[i])) < 0) return NULL;
    PyObject *run = PyDict_GetItemWithError(tt->tp_dict, str_run);
    if (run == NULL) { if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "ElementwiseTask.run missing"); return NULL; }
    for (int i = 0; i < EW_NOPS; i++) {
        PyObject *name = PyTuple_GET_ITEM(args[1], i);
        if (!PyUnicode_CheckExact(name)) { PyErr_SetString(PyExc_TypeError, "op names are str"); return NULL; }
        Py_INCREF(name);
        PyUnicode_InternInPlace(&name);  /* the operators pass literals, which are interned */
        Py_XSETREF(ew_names[i], name);
        Py_INCREF(PyTuple_GET_ITEM(args[2], i)); Py_XSETREF(ew_ufuncs[i], PyTuple_GET_ITEM(args[2], i));
    }
    for (int i = 0; i < EW_NDT; i++) { Py_INCREF(PyTuple_GET_ITEM(args[3], i)); Py_XSETREF(ew_dtypes[i], PyTuple_GET_ITEM(args[3], i)); }
    Py_INCREF(tt); Py_XSETREF(ew_type, tt);
    Py_INCREF(run); Py_XSETREF(ew_run, run);
    ew_on = 1;
    Py_RETURN_NONE;
}

static inline int
ew_dtype_code(PyObject *dtype)
{
    for (int i = 0; i < EW_NDT; i++) if (dtype == ew_dtypes[i]) return i;
    return -1;  /* not one of them (an equal dtype that is another object: the Python path) */
}

static inline int
ew_op_code(PyObject *const *table, PyObject *x)
{
    for (int i = 0; i < EW_NOPS; i++) if (x == table[i]) return i;
    return -1;
}

/* Integers wrap as numpy's do: the arithmetic in an unsigned type of at least int's width
 * (no promotion to a signed int that could overflow), converted back (modulo, as gcc does). */
#define EW_INT_LOOP(T, U)                                                                   \
    do {                                                                                    \
        T *o = (T *)po; const T *x = (const T *)p0, *y = (const T *)p1;                     \
        switch (k) {                                                                        \
        case EW_ADD: for (i = 0; i < count; i++) o[i] = (T)((U)x[i] + (U)y[i]); break;      \
        case EW_SUB: for (i = 0; i < count; i++) o[i] = (T)((U)x[i] - (U)y[i]); break;      \
        case EW_MUL: for (i = 0; i < count; i++) o[i] = (T)((U)x[i] * (U)y[i]); break;      \
        }                                                                                   \
    } while (0)
#define EW_FLOAT_LOOP(T)                                                                    \
    do {                                                                                    \
        T *o = (T *)po; const T *x = (const T *)p0, *y = (const T *)p1;                     \
        switch (k) {                                                                        \
        case EW_ADD: for (i = 0; i < count; i++) o[i] = x[i] + y[i]; break;                 \
        case EW_SUB: for (i = 0; i < count; i++) o[i] = x[i] - y[i]; break;                 \
        case EW_MUL: for (i = 0; i < count; i++) o[i] = x[i] * y[i]; break;                 \
        case EW_DIV: for (i = 0; i < count; i++) o[i] = x[i] / y[i]; break;                 \
        }                                                                                   \
    } while (0)

static const int ew_itemsize[EW_NDT] = {4, 8, 1, 2, 4, 8, 1};

/* An operand's bytes [p, p + n) may be the output's exactly (element i read before it is
 * written) or apart from them; a partial overlap is numpy's business (it copies first). */
static inline int
ew_apart(const char *p, const char *po, long long n)
{
    return p == po || p + n <= po || po + n <= p;
}

/* 1: the ElementwiseTask `task` ran here; 0: not here (its run() computes it). */
static int
elementwise_here(PyObject *task)
{
    if (!ew_on || Py_TYPE(task) != ew_type) return 0;
    PyObject *run = PyDict_GetItemWithError(ew_type->tp_dict, str_run);
    if (run != ew_run) { PyErr_Clear(); return 0; }  /* replaced (a test's wrapper): call it */
    PyObject *ufunc = SLOT(task, eoff[E_UFUNC]), *dtype = SLOT(task, eoff[E_DTYPE]), *out = SLOT(task, eoff[E_OUT]),
        *nb = SLOT(task, eoff[E_NBYTES]), *ops = SLOT(task, eoff[E_OPERANDS]);
    if (ufunc == NULL || dtype == NULL || out == NULL || nb == NULL || ops == NULL) return 0;
    int k = ew_op_code(ew_ufuncs, ufunc), d = ew_dtype_code(dtype);
    if (k < 0 || d < 0 || (k == EW_DIV && d > EW_F64)) return 0;
    if (!PyLong_CheckExact(out) || !PyLong_CheckExact(nb) || !PyList_CheckExact(ops) || PyList_GET_SIZE(ops) != 2)
        return 0;
    long long n = PyLong_AsLongLong(nb);
    if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
    if (n <= 0 || n > EW_C_MAX / 3 || n % ew_itemsize[d]) return 0;
    unsigned long long addr[3];
    addr[0] = PyLong_AsUnsignedLongLong(out);
    for (int j = 0; j < 2; j++) {
        PyObject *x = PyList_GET_ITEM(ops, j);
        if (!PyTuple_CheckExact(x) || PyTuple_GET_SIZE(x) != 3 || !PyLong_CheckExact(PyTuple_GET_ITEM(x, 0))
            || !PyLong_CheckExact(PyTuple_GET_ITEM(x, 2)))
            return 0;  /* a scalar operand */
        long long xn = PyLong_AsLongLong(PyTuple_GET_ITEM(x, 2));
        addr[1 + j] = PyLong_AsUnsignedLongLong(PyTuple_GET_ITEM(x, 0));
        if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
        if (xn != n) return 0;  /* broadcast: another shape */
    }
    if (PyErr_Occurred()) { PyErr_Clear(); return 0; }
    char *po = window_host(addr[0], (unsigned long long)n), *p0 = window_host(addr[1], (unsigned long long)n),
        *p1 = window_host(addr[2], (unsigned long long)n);
    if (po == NULL || p0 == NULL || p1 == NULL) return 0;
    int size = ew_itemsize[d];
    if (((uintptr_t)po | (uintptr_t)p0 | (uintptr_t)p1) % (uintptr_t)size) return 0;
    if (!ew_apart(p0, po, n) || !ew_apart(p1, po, n)) return 0;
    long long i, count = n / size;
    switch (d) {
    case EW_F32: EW_FLOAT_LOOP(float); break;
    case EW_F64: EW_FLOAT_LOOP(double); break;
    case EW_I8: EW_INT_LOOP(int8_t, unsigned int); break;
    case EW_I16: EW_INT_LOOP(int16_t, unsigned int); break;
    case EW_I32: EW_INT_LOOP(int32_t, uint32_t); break;
    case EW_I64: EW_INT_LOOP(int64_t, uint64_t); break;
    case EW_U8: EW_INT_LOOP(uint8_t, unsigned int); break;
    }
    ew_computed++;
    return 1;
}

/* The calling thread's current runtime stream on `device` (a new reference), as
 * npurt.streams._runtime_stream(device.id) answers it: the stream it made current there,
 * else the default stream of its context when that is the device's; NULL with no error
 * otherwise (a destroyed current stream, another device's context: the Python path). */
static PyObject *
current_stream_of(EntryObject *e, ThreadSlot *slot, PyObject *device)
{
    PyObject *streams = PyObject_GetAttr(e->per_thread, str_streams);
    if (streams == NULL) { PyErr_Clear(); return NULL; }
    PyObject *s = NULL;
    if (PyDict_CheckExact(streams)) {
        if (PyDict_GET_SIZE(streams) == 0) s = Py_None;  /* (no id to look up) */
        else {
            PyObject *id = PyObject_GetAttr(device, str_id);
            if (id != NULL) {
                s = PyDict_GetItemWithError(streams, id);  /* borrowed: `streams` holds it */
                if (s == NULL && !PyErr_Occurred()) s = Py_None;
                Py_DECREF(id);
            }
        }
    }
    if (s != NULL && s != Py_None) {
        if (Py_TYPE(s) != stream_type || SLOT(s, soff[S_DESTROYED]) != Py_False) s = NULL;
        else Py_INCREF(s);
    }
    Py_DECREF(streams);
    if (s == Py_None) {
        s = NULL;
        if (slot->device == device) {
            s = PyObject_GetAttr(slot->context, str_default_stream);
            if (s != NULL && Py_TYPE(s) != stream_type) Py_CLEAR(s);
        }
    }
    if (s == NULL) PyErr_Clear();
    return s;
}

static inline int
same_strides(PyObject *x, PyObject *canonical)
{
    if (x == canonical) return 1;
    if (x == NULL || !PyTuple_CheckExact(x)) return 0;
    int eq = PyObject_RichCompareBool(x, canonical, Py_EQ);  /* tuples of ints: no Python code */
    if (eq < 0) { PyErr_Clear(); return 0; }
    return eq;
}

/* binary(op, a, b) for two DeviceArrays: fused_same's case (one shape and dtype, C-contiguous,
 * one device, the thread's current stream there), decided as operations._binary decides it,
 * with a cached layout and block and an op and dtype of the table above. The result, or NULL:
 * with *raised set, an error of the enqueue (as enqueue_task's); else the Python path's case,
 * nothing changed. */
static PyObject *
fast_binary(EntryObject *e, PyObject *const *args, Py_ssize_t nargs, int *raised)
{
    if (nargs != 3 || !ew_on || !streams_on) return NULL;
    PyObject *op = args[0], *a = args[1], *b = args[2];
    PyTypeObject *at = e->array_type;
    if (Py_TYPE(a) != at || Py_TYPE(b) != at) return NULL;
    int k = ew_op_code(ew_names, op);
    PyObject *dtype = SLOT(a, e->off_dtype);
    if (k < 0 || dtype == NULL || dtype != SLOT(b, e->off_dtype)) return NULL;
    int d = ew_dtype_code(dtype);
    if (d < 0 || (k == EW_DIV && d > EW_F64)) return NULL;
    PyObject *shape = SLOT(a, e->off_shape), *bshape = SLOT(b, e->off_shape);
    if (shape == NULL || bshape == NULL || !PyTuple_CheckExact(shape) || !PyTuple_CheckExact(bshape)) return NULL;
    if (shape != bshape) {
        int eq = PyObject_RichCompareBool(shape, bshape, Py_EQ);
        if (eq != 1) { PyErr_Clear(); return NULL; }
    }
    PyObject *ma = SLOT(a, e->off_mem), *mb = SLOT(b, e->off_mem);
    if (ma == NULL || mb == NULL || Py_TYPE(ma) != &AllocType || Py_TYPE(mb) != &AllocType) return NULL;
    PyObject *device = ((AllocObject *)ma)->device;
    if (device == NULL || device != ((AllocObject *)mb)->device || tools_listening(e)) return NULL;
    ThreadSlot *slot = current_slot(e->per_thread);
    if (slot == NULL) return NULL;
    PoolObject *pool = pool_of_device(e, device);
    if (pool == NULL) return NULL;
    Py_INCREF(pool);  /* the slot may be refilled by Python code run below */
    PyObject *layout = cached_layout(e, shape, dtype);
    if (layout == NULL) { Py_DECREF(pool); return NULL; }
    PyObject *s = NULL, *out = NULL, *mr = NULL, *task = NULL;
    PyObject *strides = PyTuple_GET_ITEM(layout, 3), *nbytes = PyTuple_GET_ITEM(layout, 2);
    if (!same_strides(SLOT(a, e->off_strides), strides) || !same_strides(SLOT(b, e->off_strides), strides))
        goto python;
    s = current_stream_of(e, slot, device);
    if (s == NULL || SLOT(s, soff[S_DEVICE]) != device) goto python;
    mr = fast_allocate(pool, nbytes, device);  /* the first change */
    if (mr == NULL) goto python;
    out = at->tp_alloc(at, 0);
    if (out == NULL) goto error;
    set_slot(out, e->off_mem, mr);
    set_slot(out, e->off_ptr, ((AllocObject *)mr)->ptr);
    set_slot(out, e->off_shape, PyTuple_GET_ITEM(layout, 0));
    set_slot(out, e->off_dtype, PyTuple_GET_ITEM(layout, 1));
    set_slot(out, e->off_strides, strides);
    if (!is_zero(nbytes)) {  /* as ElementwiseTask(op, ufunc, out, shape, dtype, nbytes, operands, 3 * nbytes) */
        long long n = PyLong_AsLongLong(nbytes);
        if (n == -1 && PyErr_Occurred()) goto error;
        PyObject *canon = PyTuple_GET_ITEM(layout, 0);
        task = ew_type->tp_alloc(ew_type, 0);
        PyObject *ops = PyList_New(2);
        if (task == NULL || ops == NULL) { Py_XDECREF(ops); goto error; }
        slot_set(task, eoff[E_OPERANDS], ops);
        Py_DECREF(ops);
        PyObject *xa = PyTuple_Pack(3, SLOT(a, e->off_ptr), canon, nbytes);
        PyObject *xb = xa == NULL ? NULL : PyTuple_Pack(3, SLOT(b, e->off_ptr), canon, nbytes);
        if (xb == NULL) { Py_XDECREF(xa); goto error; }
        PyList_SET_ITEM(ops, 0, xa);
        PyList_SET_ITEM(ops, 1, xb);
        int cheap = n <= st_inline_bytes / 3;
        slot_set(task, eoff[E_NAME], ew_names[k]);
        slot_set(task, eoff[E_UFUNC], ew_ufuncs[k]);
        slot_set(task, eoff[E_OUT], ((AllocObject *)mr)->ptr);
        slot_set(task, eoff[E_SHAPE], canon);
        slot_set(task, eoff[E_DTYPE], PyTuple_GET_ITEM(layout, 1));
        slot_set(task, eoff[E_NBYTES], nbytes);
        slot_set(task, eoff[E_CHEAP], cheap ? Py_True : Py_False);
        PyObject *holders[3] = {((AllocObject *)ma)->block, ((AllocObject *)mb)->block, ((AllocObject *)mr)->block};
        for (int i = 0; i < 3; i++) if (holders[i] == NULL) holders[i] = Py_None;
        PyObject *seq = enqueue_built(s, task, cheap, holders, 3);  /* takes the task */
        task = NULL;
        if (seq == NULL) goto error;
        Py_DECREF(seq);
    }
    Py_DECREF(mr);
    Py_DECREF(s);
    Py_DECREF(layout);
    Py_DECREF(pool);
    return out;
error:
    *raised = 1;
    Py_XDECREF(task);
    Py_XDECREF(out);
    Py_XDECREF(mr);  /* (frees the block again) */
    Py_XDECREF(s);
    Py_DECREF(layout);
    Py_DECREF(pool);
    return NULL;
python:
    Py_XDECREF(s);
    Py_DECREF(layout);
    Py_DECREF(pool);
    return NULL;
}

/* enqueue_copy(stream, dst, src, n, direction, keep, holder, holder) -> seq: memops' fast path
 * (its arguments checked there). */
static PyObject *
mod_enqueue_copy(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8 || !streams_on) {
        PyErr_SetString(PyExc_TypeError, "enqueue_copy(stream, dst, src, n, direction, keep, holder, holder) "
                        "after configure_streams");
        return NULL;
    }
    return enqueue_copy(args);
}

/* enqueue_array_copy(stream, dev, arr, n, direction, block, host) -> seq, or NotImplemented
 * with nothing done: memops.copy_array_async (the Pythonic API's copies between device memory
 * at `dev` and the whole of a C-contiguous numpy array `arr`) as enqueue_copy's CopyTask that
 * holds the array. Its address comes through the buffer protocol, not numpy's .ctypes (which
 * costs microseconds); `host` is the runtime's pinned ranges, asked whether they hold it. */
static PyObject *
mod_enqueue_array_copy(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7 || !streams_on) {
        PyErr_SetString(PyExc_TypeError, "enqueue_array_copy(stream, dev, arr, n, direction, block, host) "
                        "after configure_streams");
        return NULL;
    }
    PyObject *dev = args[1], *arr = args[2], *direction = args[4], *ranges = args[6];
    int to_device = PyUnicode_Check(direction) && PyUnicode_CompareWithASCIIString(direction, "H2D") == 0;
    Py_buffer view;
    if (PyObject_GetBuffer(arr, &view, to_device ? PyBUF_C_CONTIGUOUS : (PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE)) < 0) {
        PyErr_Clear();  /* a dtype numpy exports no buffer for (datetime64, ...): the Python path */
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *host = PyLong_FromVoidPtr(view.buf);  /* stable: the task holds the array */
    PyBuffer_Release(&view);
    if (host == NULL) return NULL;
    PyObject *pinned = NULL, *starts = PyObject_GetAttr(ranges, str_starts);
    int any = starts == NULL ? -1 : PyObject_IsTrue(starts);
    Py_XDECREF(starts);
    if (any > 0) pinned = PyObject_CallMethodOneArg(ranges, str_containing, host);  /* its free waits too */
    else if (any == 0) pinned = Py_NewRef(Py_None);
    if (pinned == NULL) {
        Py_DECREF(host);
        return NULL;
    }
    PyObject *call[8] = {args[0], to_device ? dev : host, to_device ? host : dev, args[3], direction, arr,
                         args[5], pinned};
    PyObject *seq = enqueue_copy(call);
    Py_DECREF(host);
    Py_DECREF(pinned);
    return seq;
}

/* The LIVE block starting at `addr` of the device `dev` whose first `count` bytes were asked
 * for (borrowed), or NULL (no error set): as memops' fast path looks a device end up. */
static BlockObject *
live_block(PyObject *dev, PyObject *addr, long long count)
{
    PyObject *memory = PyObject_GetAttr(dev, str_memory);
    if (memory == NULL) { PyErr_Clear(); return NULL; }
    BlockObject *b = NULL;
    if (PyObject_TypeCheck(memory, &PoolType) && ((PoolObject *)memory)->live != NULL) {
        PyObject *found = PyDict_GetItemWithError(((PoolObject *)memory)->live, addr);  /* borrowed */
        if (found != NULL && PyObject_TypeCheck(found, &BlockType) && count <= ((BlockObject *)found)->requested)
            b = (BlockObject *)found;
        PyErr_Clear();
    }
    Py_DECREF(memory);  /* (the pool's `live` holds the block) */
    return b;
}

/* copy_d2d(rt, dst, dest_max, src, count, kind, stream, require_aligned, keep) -> seq, or
 * NotImplemented with nothing done: memops.memcpy_async's fast path for a copy between two
 * live blocks' starts on one device (D2D or DEFAULT, aligned), in C; memops does the rest. */
static PyObject *
mod_copy_d2d(PyObject *m, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 9 || !streams_on) {
        PyErr_SetString(PyExc_TypeError, "copy_d2d(rt, dst, dest_max, src, count, kind, stream, require_aligned, "
                        "keep) after configure_streams");
        return NULL;
    }
    PyObject *dst = args[1], *dest_max = args[2], *src = args[3], *count = args[4], *kind = args[5];
    if (!PyLong_CheckExact(dst) || !PyLong_CheckExact(dest_max) || !PyLong_CheckExact(src)
        || !PyLong_CheckExact(count) || !PyLong_CheckExact(kind))
        Py_RETURN_NOTIMPLEMENTED;
    int overflow;
    long long n = PyLong_AsLongLongAndOverflow(count, &overflow), cap = 0;
    if (!overflow) cap = PyLong_AsLongLongAndOverflow(dest_max, &overflow);
    long k = overflow ? -1 : PyLong_AsLongAndOverflow(kind, &overflow);
    unsigned long long d = PyLong_AsUnsignedLongLong(dst), sa = d == (unsigned long long)-1 ? 0 : PyLong_AsUnsignedLongLong(src);
    if (PyErr_Occurred()) { PyErr_Clear(); Py_RETURN_NOTIMPLEMENTED; }
    unsigned long long base = (unsigned long long)st_va_base;
    if (overflow || n <= 0 || n > cap || (k != 3 && k != 4) || d < base || sa < base
        || ((d - base) >> 40) != ((sa - base) >> 40))  /* D2D or DEFAULT within one device */
        Py_RETURN_NOTIMPLEMENTED;
    int aligned = PyObject_IsTrue(args[7]);
    if (aligned < 0) { PyErr_Clear(); Py_RETURN_NOTIMPLEMENTED; }
    if (aligned && ((d | sa) & 63)) Py_RETURN_NOTIMPLEMENTED;  /* memops says why */
    PyObject *table = PyObject_GetAttr(args[0], str_device_by_physical);
    if (table == NULL) { PyErr_Clear(); Py_RETURN_NOTIMPLEMENTED; }
    PyObject *key = PyLong_FromUnsignedLongLong((d - base) >> 40);
    PyObject *dev = key == NULL || !PyDict_Check(table) ? NULL : PyDict_GetItemWithError(table, key);  /* borrowed */
    Py_XDECREF(key);
    Py_XINCREF(dev);
    Py_DECREF(table);
    if (dev == NULL) { PyErr_Clear(); Py_RETURN_NOTIMPLEMENTED; }
    BlockObject *db = live_block(dev, dst, n), *sb = db == NULL ? NULL : live_block(dev, src, n);
    Py_DECREF(dev);
    if (sb == NULL) Py_RETURN_NOTIMPLEMENTED;
    Py_INCREF(db);
    Py_INCREF(sb);
    PyObject *call[8] = {args[6], dst, src, count, st_d2d, args[8], (PyObject *)db, (PyObject *)sb};
    PyObject *res = enqueue_copy(call);
    Py_DECREF(db);
    Py_DECREF(sb);
    return res;
}

static PyObject *
mod_forget_copy_windows(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    forget_windows();
    Py_RETURN_NONE;
}

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

static PyObject *
mod_elementwise_computed(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(ew_computed);
}

static PyObject *
mod_direct_calls(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromUnsignedLongLong(capi_served);
}

static PyObject *
mod_invalidate(PyObject *m, PyObject *Py_UNUSED(ignored))
{
    invalidate_caches();
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"note_use", (PyCFunction)(void (*)(void))mod_note_use, METH_FASTCALL,
     "note_use(holder, stream, seq): task seq of stream uses holder (npurt.runtime.memory.note_use)"},
    {"note_uses", (PyCFunction)(void (*)(void))mod_note_uses, METH_FASTCALL,
     "note_uses(holders, stream, seq): note_use for each holder"},
    {"prune_uses", (PyCFunction)mod_prune_uses, METH_O,
     "prune_uses(uses): forget the entries whose work has retired"},
    {"configure_allocations", (PyCFunction)(void (*)(void))mod_configure_allocations, METH_FASTCALL,
     "configure_allocations(release, hooks): the Python free of an Allocation and the observers"},
    {"capsule", (PyCFunction)(void (*)(void))mod_capsule, METH_FASTCALL,
     "capsule(ptr, shape, strides, code, bits, device_type, device_id, owner): a DLPack capsule "
     "(npurt.array.dlpack.capsule_at)"},
    {"invalidate", mod_invalidate, METH_NOARGS,
     "forget the cached thread -> pool and device -> pool answers (a context was bound or died)"},
    {"suspend", mod_suspend, METH_NOARGS, "hold every Entry's fast path off (counted; resume() undoes one)"},
    {"resume", mod_resume, METH_NOARGS, "undo one suspend()"},
    {"suspended", mod_suspended, METH_NOARGS, "how many suspend() calls are in force"},
    {"configure_streams", (PyCFunction)(void (*)(void))mod_configure_streams, METH_FASTCALL,
     "configure_streams(Stream, Task, CopyTask, ...): the classes and switches enqueue_copy and run_tasks use"},
    {"configure_elementwise", (PyCFunction)(void (*)(void))mod_configure_elementwise, METH_FASTCALL,
     "configure_elementwise(ElementwiseTask, names, ufuncs, dtypes): the ops the binary entry and run_tasks compute here"},
    {"enqueue_copy", (PyCFunction)(void (*)(void))mod_enqueue_copy, METH_FASTCALL,
     "enqueue_copy(stream, dst, src, n, direction, keep, holder, holder) -> seq: memops' fast path"},
    {"enqueue_task", (PyCFunction)(void (*)(void))mod_enqueue_task, METH_FASTCALL,
     "enqueue_task(stream, task, *holders) -> seq: Stream.enqueue of a task just made"},
    {"enqueue_array_copy", (PyCFunction)(void (*)(void))mod_enqueue_array_copy, METH_FASTCALL,
     "enqueue_array_copy(stream, dev, arr, n, direction, block, host) -> seq or NotImplemented"},
    {"copy_d2d", (PyCFunction)(void (*)(void))mod_copy_d2d, METH_FASTCALL,
     "copy_d2d(rt, dst, dest_max, src, count, kind, stream, require_aligned, keep) -> seq or NotImplemented"},
    {"data_address", (PyCFunction)mod_data_address, METH_O,
     "data_address(array) -> int: the address of its first element (the buffer protocol)"},
    {"run_tasks", (PyCFunction)(void (*)(void))mod_run_tasks, METH_FASTCALL,
     "run_tasks(stream, me, budget, until, defer) -> budget left, -1 (let go) or -2 (finish in Python)"},
    {"forget_copy_windows", mod_forget_copy_windows, METH_NOARGS,
     "forget what the devices' backends said of their memory (the devices were forgotten)"},
    {"elementwise_computed", mod_elementwise_computed, METH_NOARGS,
     "how many elementwise tasks the run loop computed in C (not by their run())"},
    {"direct_calls", mod_direct_calls, METH_NOARGS,
     "how many C calls (libacl_rt.so's aclrtMalloc / aclrtFree) an entry's c_api answered"},
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
    INTERN(str_device, "device");
    INTERN(str_dtype, "dtype");
    INTERN(str_uses, "uses");
    INTERN(str_tasks, "tasks");
    INTERN(str_token, "token");
    INTERN(str_worker, "worker");
    INTERN(str_owed, "owed");
    INTERN(str_controlled, "controlled");
    INTERN(str_ready, "ready");
    INTERN(str_wake_for, "wake_for");
    INTERN(str_work_epoch, "work_epoch");
    INTERN(str_touched, "touched");
    INTERN(str_starts, "starts");
    INTERN(str_containing, "containing");
    INTERN(str_cheap, "cheap");
    INTERN(str_run, "run");
    INTERN(str_may_block, "may_block");
    INTERN(str_trivial, "trivial");
    INTERN(str_popleft, "popleft");
    INTERN(str_append, "append");
    INTERN(str_notify_retired, "notify_retired");
    INTERN(str_run_stream, "run_stream");
    INTERN(str_release, "release");
    INTERN(str_copy_window, "copy_window");
    INTERN(str_flush_deferred, "flush_deferred");
    INTERN(st_d2d, "D2D");
    INTERN(str_streams, "streams");
    INTERN(str_id, "id");
    INTERN(str_default_stream, "default_stream");
    one_obj = PyLong_FromLong(1);
    zero_ret = PyLong_FromLong(0);
    if (PyType_Ready(&BlockType) < 0 || PyType_Ready(&BinType) < 0 || PyType_Ready(&PoolType) < 0
        || PyType_Ready(&EntryType) < 0 || PyType_Ready(&AllocType) < 0
        || PyType_Ready(&LockType) < 0 || PyType_Ready(&DoorbellType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "BlockBase", (PyObject *)&BlockType) < 0
        || PyModule_AddObjectRef(m, "Bin", (PyObject *)&BinType) < 0
        || PyModule_AddObjectRef(m, "PoolBase", (PyObject *)&PoolType) < 0
        || PyModule_AddObjectRef(m, "Entry", (PyObject *)&EntryType) < 0
        || PyModule_AddObjectRef(m, "Allocation", (PyObject *)&AllocType) < 0
        || PyModule_AddObjectRef(m, "Lock", (PyObject *)&LockType) < 0
        || PyModule_AddObjectRef(m, "Doorbell", (PyObject *)&DoorbellType) < 0
        || PyModule_AddIntConstant(m, "DOORBELL_GRACE_US", DOORBELL_GRACE_US) < 0
        || PyModule_AddIntConstant(m, "DOORBELL_POLL_US", DOORBELL_POLL_US) < 0
        || PyModule_AddIntConstant(m, "SIZE_CLASS", SIZE_CLASS) < 0
        || PyModule_AddIntConstant(m, "SMALL_REQUEST", SMALL_REQUEST) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
