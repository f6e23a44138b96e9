/* libacl_rt.so's start-up, shared by every generated shim (npurt.capi.shims).
 *
 * The first call of any function starts npurt's Python side once (pthread_once): unless the
 * library was loaded into a running Python, it starts the interpreter named by the config file
 * beside the library (npurt_python.cfg: the Python executable whose environment has npurt),
 * ignoring the program's PYTHON* variables and leaving signals to the program; then cffi's
 * embedding start runs npurt.capi.entry, which binds every C function to its Python entry
 * point. A shim returns an error unless that succeeded (npurt_state == 1): a cffi function
 * whose Python side failed returns 0, which is ACL_SUCCESS, so the state is checked here.
 * Once started, the library flushes Python's stdio at exit (the embedded interpreter is never
 * finalised) and explains a host dereference of device memory before the SIGSEGV goes on. */
#include <pthread.h>
#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <ucontext.h>
#include <libgen.h>

#define NPURT_EXPORT __attribute__((visibility("default")))
#define NPURT_VA_BASE ((uintptr_t)1 << 48)   /* device addresses start here (npurt.driver) */

static volatile int npurt_state;            /* 0: not started, 1: ready, -1: failed */
static char npurt_start_error_buf[8192] = "npurt: the C interface's Python side has not started";
static const char *npurt_start_error = npurt_start_error_buf;
static char npurt_config_file[4096];
static char npurt_executable[4096];
static int npurt_owns_python_flag;
static pthread_once_t npurt_once = PTHREAD_ONCE_INIT;
static struct sigaction npurt_old_segv, npurt_old_bus;

void npurt_set_start_error(const char *message)
{
    snprintf(npurt_start_error_buf, sizeof npurt_start_error_buf, "%s", message);
}

const char *npurt_config_path(void) { return npurt_config_file; }

int npurt_owns_python(void) { return npurt_owns_python_flag; }

static void npurt_locate_config(void)
{
    Dl_info info;
    if (dladdr((void *)&npurt_locate_config, &info) && info.dli_fname) {
        char path[4096];
        snprintf(path, sizeof path, "%s", info.dli_fname);
        char real[4096];
        const char *lib = realpath(path, real) ? real : path;
        char copy[4096];
        snprintf(copy, sizeof copy, "%s", lib);
        snprintf(npurt_config_file, sizeof npurt_config_file, "%s/npurt_python.cfg", dirname(copy));
    }
}

static int npurt_read_config(void)
{
    FILE *f = fopen(npurt_config_file, "r");
    if (!f) {
        snprintf(npurt_start_error_buf, sizeof npurt_start_error_buf,
                 "npurt: cannot read %s, which names the Python that runs npurt; rebuild the prefix with "
                 "`npurt cann-home`", npurt_config_file);
        return -1;
    }
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (strncmp(line, "executable=", 11) == 0)
            snprintf(npurt_executable, sizeof npurt_executable, "%s", line + 11);
    }
    fclose(f);
    if (!npurt_executable[0]) {
        snprintf(npurt_start_error_buf, sizeof npurt_start_error_buf,
                 "npurt: %s names no Python executable; rebuild the prefix with `npurt cann-home`",
                 npurt_config_file);
        return -1;
    }
    return 0;
}

static int npurt_init_python(void)
{
    if (Py_IsInitialized())
        return 0;                           /* loaded into a Python process: npurt runs there */
    if (npurt_read_config() != 0)
        return -1;
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.use_environment = 0;             /* the program's PYTHONPATH & co. are not npurt's */
    config.user_site_directory = 0;
    config.install_signal_handlers = 0;     /* SIGINT & co. stay the program's */
    config.parse_argv = 0;
    PyStatus status = PyConfig_SetBytesString(&config, &config.program_name, npurt_executable);
    if (!PyStatus_Exception(status))
        status = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(status)) {
        snprintf(npurt_start_error_buf, sizeof npurt_start_error_buf,
                 "npurt: could not start Python (%s) for the C interface: %s", npurt_executable,
                 status.err_msg ? status.err_msg : "unknown error");
        return -1;
    }
    npurt_owns_python_flag = 1;
    PyEval_SaveThread();                    /* cffi takes the GIL per call */
    return 0;
}

static void npurt_at_exit(void)
{
    if (npurt_state == 1)
        npurt_py_flush();
}

static int npurt_is_device_address(uintptr_t a)
{
    return a >= NPURT_VA_BASE && a < NPURT_VA_BASE + ((uintptr_t)64 << 40);
}

/* Where each live device allocation was made from C: the return address of the aclrtMalloc
 * call (one store per malloc, one per free), for the fault explanation. A fixed table keyed
 * by the allocation's address; a collision overwrites (the site is then not known), which
 * bounds it without a lock: a slot is written field by field, its address last. */
#define NPURT_SITES 8192
static struct npurt_site {
    volatile uintptr_t ptr;
    size_t size;
    void *caller;
    const char *function;
} npurt_sites[NPURT_SITES];

static size_t npurt_site_slot(uintptr_t ptr) { return (size_t)((ptr >> 9) * 0x9E3779B97F4A7C15ull >> 51); }

static void npurt_note_alloc(uintptr_t ptr, size_t size, void *caller, const char *function)
{
    struct npurt_site *s = &npurt_sites[npurt_site_slot(ptr) % NPURT_SITES];
    __atomic_store_n(&s->ptr, 0, __ATOMIC_RELAXED);
    s->size = size;
    s->caller = caller;
    s->function = function;
    __atomic_store_n(&s->ptr, ptr, __ATOMIC_RELEASE);
}

static void npurt_forget_alloc(uintptr_t ptr)
{
    struct npurt_site *s = &npurt_sites[npurt_site_slot(ptr) % NPURT_SITES];
    uintptr_t expected = ptr;
    __atomic_compare_exchange_n(&s->ptr, &expected, 0, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/* "  It was allocated by aclrtMalloc called from main+0x2c (./prog), ..." for the live
 * allocation holding addr, if the table knows it (0 otherwise). */
static int npurt_describe_site(uintptr_t addr, char *out, size_t size)
{
    for (size_t i = 0; i < NPURT_SITES; i++) {
        struct npurt_site *s = &npurt_sites[i];
        uintptr_t p = __atomic_load_n(&s->ptr, __ATOMIC_ACQUIRE);
        if (!p || addr < p || addr - p >= (s->size ? s->size : 1))
            continue;
        Dl_info info;
        memset(&info, 0, sizeof info);
        if (!dladdr(s->caller, &info) || !info.dli_fname)
            return snprintf(out, size, "  It was allocated by %s called from %p.\n", s->function, s->caller);
        uintptr_t offset = (uintptr_t)s->caller - (uintptr_t)info.dli_fbase;
        if (info.dli_sname)
            return snprintf(out, size, "  It was allocated by %s called from %s+0x%lx (%s; addr2line -f -e %s 0x%lx).\n",
                            s->function, info.dli_sname, (unsigned long)((uintptr_t)s->caller - (uintptr_t)info.dli_saddr),
                            info.dli_fname, info.dli_fname, (unsigned long)offset);
        return snprintf(out, size, "  It was allocated by %s called from %s+0x%lx (addr2line -f -e %s 0x%lx).\n",
                        s->function, info.dli_fname, (unsigned long)offset, info.dli_fname, (unsigned long)offset);
    }
    return 0;
}

static void npurt_on_fault(int sig, siginfo_t *info, void *context)
{
    uintptr_t addr = (uintptr_t)info->si_addr;
    int exact = npurt_is_device_address(addr);
    /* x86-64 reports a non-canonical address (all of npurt's device addresses) as a general
     * protection fault without an address: look for it in the registers the access used. */
    if (!npurt_is_device_address(addr)) {
        addr = 0;
#if defined(__x86_64__)
        ucontext_t *uc = (ucontext_t *)context;
        static const int regs[] = {REG_RAX, REG_RBX, REG_RCX, REG_RDX, REG_RSI, REG_RDI, REG_RBP,
                                   REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};
        for (size_t i = 0; i < sizeof regs / sizeof regs[0] && !addr; i++) {
            uintptr_t v = (uintptr_t)uc->uc_mcontext.gregs[regs[i]];
            if (npurt_is_device_address(v))
                addr = v;
        }
#elif defined(__aarch64__)
        ucontext_t *uc = (ucontext_t *)context;
        for (int i = 0; i < 31 && !addr; i++) {
            uintptr_t v = (uintptr_t)uc->uc_mcontext.regs[i];
            if (npurt_is_device_address(v))
                addr = v;
        }
#else
        (void)context;
#endif
    }
    if (addr && npurt_state == 1) {
        static char message[4096];
        alarm(5);                           /* never hang a dying program on the GIL */
        if (npurt_py_describe_fault(addr, exact, message, sizeof message) > 0) {
            ssize_t ignored = write(2, message, strlen(message));
            static char site[1024];
            if (npurt_describe_site(addr, site, sizeof site) > 0)
                ignored = write(2, site, strlen(site));
            (void)ignored;
        }
    }
    /* chain: restore what was there before and let the access fault again */
    sigaction(sig, sig == SIGBUS ? &npurt_old_bus : &npurt_old_segv, NULL);
}

static void npurt_install_fault_handler(void)
{
    const char *off = getenv("NPURT_NO_FAULT_HANDLER");
    if (off && *off && strcmp(off, "0") != 0)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = npurt_on_fault;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &npurt_old_segv);
    sigaction(SIGBUS, &sa, &npurt_old_bus);
}

static void npurt_load_fast(void);   /* the fast path (npurt.capi.shims), after this file */

static void npurt_start_once(void)
{
    npurt_locate_config();
    if (npurt_init_python() != 0) {
        npurt_state = -1;
        fprintf(stderr, "%s\n", npurt_start_error);
        return;
    }
    /* cffi's start code serialises interpreter start-up with a spin lock kept in a field of
     * libpython that it expects to be zero: on Python 3.8-3.11, PyCapsule_Type.tp_version_tag.
     * In a process where Python already runs (the library loaded by ctypes, or into a Python
     * extension), that tag is non-zero as soon as any attribute of a capsule has been looked up
     * (numpy, torch's DLPack, datetime.datetime_CAPI do it), and the first call would spin for
     * ever. Holding the GIL, so no Python code of the host process can look at the tag, lend
     * cffi a zero tag for the start and give the real one back after. */
    int hosted = Py_IsInitialized() && !npurt_owns_python_flag;   /* a Python this library did not start */
#if PY_VERSION_HEX >= 0x03080000 && PY_VERSION_HEX < 0x030C0000
    PyGILState_STATE gil = PyGILState_UNLOCKED;
    unsigned int capsule_tag = 0;
    if (hosted) {
        gil = PyGILState_Ensure();
        capsule_tag = PyCapsule_Type.tp_version_tag;
        PyCapsule_Type.tp_version_tag = 0;
    }
#endif
    int ok = npurt_py_ready();
#if PY_VERSION_HEX >= 0x03080000 && PY_VERSION_HEX < 0x030C0000
    if (hosted) {
        PyCapsule_Type.tp_version_tag = capsule_tag;
        PyGILState_Release(gil);
    }
#endif
    npurt_state = ok == 1 ? 1 : -1;
    if (npurt_state == 1) {
        /* In a C program the interpreter never finalises, so a C atexit hook flushes; in a Python
         * process the host's own exit does (entry.start registers it), and a C hook would call
         * into an interpreter already gone. The fault explanation is for C programs: a Python
         * host keeps its own SIGSEGV handling (faulthandler). */
        if (!hosted) {
            atexit(npurt_at_exit);
            npurt_install_fault_handler();
        }
        npurt_load_fast();
    } else {
        fprintf(stderr, "%s\n", npurt_start_error);
    }
}

static int npurt_ensure_started(void)
{
    pthread_once(&npurt_once, npurt_start_once);
    return npurt_state == 1;
}
