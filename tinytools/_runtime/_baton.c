/* The hand-off between a caller and a tool thread of tinytools._runtime.threads, compiled.
 *
 * A Baton is the single slot between one caller and one worker thread: the caller hands
 * it a job and waits for the end (with a timeout), the worker reports the end and waits
 * for the next job. It is tinytools._runtime.baton._Baton (the pure-Python twin, used without
 * a C compiler) with one difference that is the reason this file exists: each side
 * releases the GIL *before* it wakes the other thread. With Python's own locks the woken
 * thread finds the GIL still held by the thread that woke it and has to sleep and be woken
 * again; a round trip then costs about three times the CPU (measured: 13 us against 4.5 us
 * per call on a loaded two-core machine). And each side polls the other's lock for a few
 * microseconds before it sleeps on it, while polling pays (see poll_lock): a thread that
 * sleeps must be woken, and on an idle machine that wake-up costs far more than a quick
 * tool (about 45 us of CPU per call, against about 9 us).
 *
 * The state (IDLE, RUNNING, FINISHED, DETACHED, FREE) is only read and written with the GIL
 * held, so the caller's "give up" and the worker's "done" are decided once, race-free: the
 * one that moves the state first wins. Both locks are taken (locked) whenever no job is in
 * flight, whatever happened to the previous one. No job is in flight in two states, which
 * tell a caller interrupted by a signal handler's exception (KeyboardInterrupt) what
 * happened, whether hand() raised it or the caller's next bytecode did: IDLE, the job's
 * end was taken by its caller (the worker waits in back() for the next job); FREE, the
 * job ended with nobody waiting for it (abandoned, or given: back() returned False).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#ifdef _WIN32
#include <windows.h>
#else
#include <time.h>
#include <unistd.h>
#endif

enum { IDLE = 0, RUNNING = 1, FINISHED = 2, DETACHED = 3, FREE = 4 };

typedef struct {
    PyObject_HEAD
    PyThread_type_lock go;   /* released by the caller: a job is there */
    PyThread_type_lock done; /* released by the worker: the job the caller waits for ended */
    int state;
    /* When polling pays (see poll_lock), judged from the last job: the caller polls for the
     * end of a job when the last one ran within the polling window (measured by the worker,
     * from taking the job to its end), and the worker polls for the next job when the last
     * one came within the window (measured by the caller, from taking an end to handing the
     * next job). Each is the other side's own time, never a wake-up's, so a side that slept
     * polls again as soon as the work is quick again; slow tools and sporadic calls pay no
     * polling after the first. Each field is written before the lock hand-off that lets the
     * other side read it. */
    double job_started; /* worker: when it took the job */
    double last_job;    /* how long the last job ran (worker), read by the caller */
    double ended_at;    /* caller: when it took the last job's end (0: never) */
    int quick_gap;      /* the caller's last gap was short: the worker polls, read by it */
} Baton;

static double
monotonic(void)
{
#ifdef _WIN32
    return (double)GetTickCount64() / 1e3;
#else
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
#endif
}

/* How long a side polls the other's lock before it sleeps on it (seconds). Waking a thread
 * that sleeps costs both sides a futex call and, when the sleeper's core went idle, that
 * core's wake-up: tens of microseconds of CPU on an idle virtual machine, against about
 * one for a call that is answered while the caller polls. A tool that takes longer costs at
 * most this much polling, once; on a one-core machine nobody polls (the other thread could
 * not run meanwhile). */
#define SPIN_SECONDS 20e-6

static double spin_seconds = SPIN_SECONDS;

/* The main thread, which runs Python's signal handlers (set by set_main_thread). A signal
 * that another thread receives, or _thread.interrupt_main(), only flags the handler: a
 * main thread asleep on a lock would run it when the tool ends. So the main thread sleeps
 * in slices of SLICE_US and runs the flagged handlers between them. */
static unsigned long main_ident = 0;
#define SLICE_US 50000

static PY_TIMEOUT_T
sliced(PY_TIMEOUT_T us, int slicing)
{
    if (slicing && (us < 0 || us > SLICE_US)) {
        return SLICE_US;
    }
    return us;
}

static inline void
relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Take `lock` if it becomes free within spin_seconds, polling it (called without the GIL). */
static int
poll_lock(PyThread_type_lock lock)
{
    if (spin_seconds <= 0) {
        return 0;
    }
    double until = monotonic() + spin_seconds;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (PyThread_acquire_lock(lock, NOWAIT_LOCK)) {
                return 1;
            }
            relax();
        }
        if (monotonic() >= until) {
            return 0;
        }
    }
}

static PyObject *
baton_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    if (PyTuple_GET_SIZE(args) || (kwargs && PyDict_GET_SIZE(kwargs))) {
        PyErr_SetString(PyExc_TypeError, "Baton() takes no arguments");
        return NULL;
    }
    Baton *self = (Baton *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->go = PyThread_allocate_lock();
    self->done = PyThread_allocate_lock();
    if (self->go == NULL || self->done == NULL) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_MemoryError, "cannot allocate a lock");
        return NULL;
    }
    PyThread_acquire_lock(self->go, WAIT_LOCK);
    PyThread_acquire_lock(self->done, WAIT_LOCK);
    self->state = IDLE;
    self->job_started = self->last_job = self->ended_at = 0;
    self->quick_gap = 1;
    return (PyObject *)self;
}

static void
baton_dealloc(Baton *self)
{
    /* Only reached when no thread waits on the baton any more (a lock may be taken). */
    if (self->go != NULL) {
        PyThread_free_lock(self->go);
    }
    if (self->done != NULL) {
        PyThread_free_lock(self->done);
    }
    PyTypeObject *type = Py_TYPE(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

/* The caller's wait ended without the worker's signal: abandon the job (False) or, when the
 * worker finished meanwhile, take its signal (True). */
static int
settle(Baton *self)
{
    if (self->state == RUNNING) {
        self->state = DETACHED;
        return 0;
    }
    /* FINISHED: the worker is releasing `done` right now, without the GIL. */
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->done, WAIT_LOCK);
    Py_END_ALLOW_THREADS
    self->state = IDLE;
    return 1;
}

static PY_TIMEOUT_T
microseconds(double seconds)
{
    double limit = (double)PY_TIMEOUT_MAX;
    double us = seconds * 1e6;
    if (!(us > 0)) { /* negative, zero or NaN: do not wait */
        return 0;
    }
    if (us >= limit) {
        return PY_TIMEOUT_MAX;
    }
    return (PY_TIMEOUT_T)us;
}

PyDoc_STRVAR(hand_doc,
"hand(timeout, /)\n--\n\n"
"Caller: start the job put beside the baton and wait for its end, at most ``timeout``\n"
"seconds (None: no limit). True: it ended. False: the timeout passed first and the\n"
"job is abandoned (state DETACHED; FREE once it ends). A signal handler's exception\n"
"(KeyboardInterrupt) propagates: the job is abandoned likewise, or, if it had ended, its\n"
"end is taken (state IDLE: the worker waits for its next job, as after True).");

static PyObject *
baton_hand(Baton *self, PyObject *timeout)
{
    PY_TIMEOUT_T us = -1;
    double deadline = 0;
    if (timeout != Py_None) {
        double seconds = PyFloat_AsDouble(timeout);
        if (seconds == -1.0 && PyErr_Occurred()) {
            return NULL;
        }
        us = microseconds(seconds);
        deadline = monotonic() + (double)us / 1e6;
    }
    if (self->state != IDLE && self->state != FREE) {
        PyErr_SetString(PyExc_RuntimeError, "the baton already carries a job");
        return NULL;
    }
    PyLockStatus got;
    int slicing = main_ident != 0 && PyThread_get_thread_ident() == main_ident;
    self->state = RUNNING;
    int quick = us != 0 && self->last_job < spin_seconds;
    /* The worker polls for the next job only while this caller polls for its end too:
     * a caller that sleeps wakes too late for a poll to catch its next job. */
    self->quick_gap =
        quick && (self->ended_at <= 0 || monotonic() - self->ended_at < spin_seconds);
    Py_BEGIN_ALLOW_THREADS
    PyThread_release_lock(self->go);
    if (quick && poll_lock(self->done)) {
        got = PY_LOCK_ACQUIRED; /* a quick tool: answered while the caller polled */
    }
    else {
        got = PyThread_acquire_lock_timed(self->done, sliced(us, slicing), 1);
    }
    Py_END_ALLOW_THREADS
    while (got == PY_LOCK_INTR ||
           (got == PY_LOCK_FAILURE && slicing && (us < 0 || deadline > monotonic()))) {
        if (PyErr_CheckSignals() < 0) {
            /* A running job is abandoned (DETACHED, FREE once it ends); one that ended
             * meanwhile has its end taken (IDLE), as when hand() returns True. */
            settle(self);
            return NULL;
        }
        if (us > 0) {
            double left = deadline - monotonic();
            us = left > 0 ? microseconds(left) : 0;
        }
        Py_BEGIN_ALLOW_THREADS
        got = PyThread_acquire_lock_timed(self->done, sliced(us, slicing), 1);
        Py_END_ALLOW_THREADS
    }
    if (got == PY_LOCK_ACQUIRED) {
        self->state = IDLE;
        self->ended_at = monotonic();
        Py_RETURN_TRUE;
    }
    return PyBool_FromLong(settle(self));
}

PyDoc_STRVAR(give_doc,
"give()\n--\n\n"
"Caller: start the job put beside the baton without waiting for it (state DETACHED),\n"
"or wake an idle worker to stop.");

static PyObject *
baton_give(Baton *self, PyObject *Py_UNUSED(ignored))
{
    self->state = DETACHED;
    PyThread_release_lock(self->go);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(wait_doc,
"wait()\n--\n\n"
"Worker: wait for a job (with the GIL released).");

static PyObject *
baton_wait(Baton *self, PyObject *Py_UNUSED(ignored))
{
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->go, WAIT_LOCK);
    self->job_started = monotonic();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

PyDoc_STRVAR(back_doc,
"back()\n--\n\n"
"Worker: the job ended. True: its caller was waiting and has been woken, and a next job\n"
"has been handed over. False: nobody waits for it (abandoned or given); the baton is FREE\n"
"(idle) and the worker decides what to do next.");

static PyObject *
baton_back(Baton *self, PyObject *Py_UNUSED(ignored))
{
    if (self->state == DETACHED) {
        self->state = FREE;
        Py_RETURN_FALSE;
    }
    self->state = FINISHED;
    self->last_job = monotonic() - self->job_started;
    int quick = self->quick_gap;
    Py_BEGIN_ALLOW_THREADS
    PyThread_release_lock(self->done);
    /* The next job often follows at once (a batch, a loop): poll for it first. */
    if (!(quick && poll_lock(self->go))) {
        PyThread_acquire_lock(self->go, WAIT_LOCK);
    }
    self->job_started = monotonic();
    Py_END_ALLOW_THREADS
    Py_RETURN_TRUE;
}

static PyObject *
baton_state(Baton *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLong(self->state);
}

static PyMethodDef baton_methods[] = {
    {"hand", (PyCFunction)baton_hand, METH_O, hand_doc},
    {"give", (PyCFunction)baton_give, METH_NOARGS, give_doc},
    {"wait", (PyCFunction)baton_wait, METH_NOARGS, wait_doc},
    {"back", (PyCFunction)baton_back, METH_NOARGS, back_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef baton_getset[] = {
    {"state", (getter)baton_state, NULL, "IDLE 0, RUNNING 1, FINISHED 2, DETACHED 3, FREE 4", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot baton_slots[] = {
    {Py_tp_doc, "The single slot between a caller and a tool thread."},
    {Py_tp_new, baton_new},
    {Py_tp_dealloc, baton_dealloc},
    {Py_tp_methods, baton_methods},
    {Py_tp_getset, baton_getset},
    {0, NULL},
};

static PyType_Spec baton_spec = {
    .name = "tinytools._runtime._baton.Baton",
    .basicsize = sizeof(Baton),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = baton_slots,
};

static int
exec_module(PyObject *module)
{
#ifndef _WIN32
    if (sysconf(_SC_NPROCESSORS_ONLN) < 2) {
        spin_seconds = 0;
    }
#endif
    PyObject *type = PyType_FromModuleAndSpec(module, &baton_spec, NULL);
    if (type == NULL) {
        return -1;
    }
    int failed = PyModule_AddObject(module, "Baton", type);
    if (failed) {
        Py_DECREF(type);
    }
    return failed;
}

PyDoc_STRVAR(set_main_thread_doc,
"set_main_thread(ident, /)\n--\n\n"
"The main thread's ident: its hand() waits in slices, running flagged signal handlers.");

static PyObject *
set_main_thread(PyObject *Py_UNUSED(module), PyObject *ident)
{
    unsigned long value = PyLong_AsUnsignedLong(ident);
    if (value == (unsigned long)-1 && PyErr_Occurred()) {
        return NULL;
    }
    main_ident = value;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"set_main_thread", (PyCFunction)set_main_thread, METH_O, set_main_thread_doc},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, exec_module},
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tinytools._runtime._baton",
    .m_doc = "The caller/worker hand-off of tinytools._runtime.threads, compiled (it releases the GIL before waking the other thread).",
    .m_size = 0,
    .m_methods = module_methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__baton(void)
{
    return PyModuleDef_Init(&module_definition);
}
