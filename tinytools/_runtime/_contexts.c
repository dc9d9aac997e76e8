/* Stepping a coroutine in a contextvars context, compiled: tinytools._runtime.contexts.
 *
 * in_context(context, fn, *args) is an awaitable that runs each step of the coroutine
 * fn(*args) with the context entered, in the awaiting task (an async tool runs in its call's
 * own copy of the caller's context without a task of its own). The coroutine is made in
 * the first step, so that an exception raised between making this awaitable and awaiting
 * it (a Ctrl-C) leaves no coroutine that was never awaited. It is the pure-Python in_context of
 * contexts.py (used without a C compiler) with one difference that is the reason this file
 * exists: it implements am_send, so the awaiting frame receives the coroutine's steps and
 * its return value without a Python frame per step and without a StopIteration exception
 * at the end (about a microsecond per call in Python, a tenth of that here).
 *
 * What the event loop sends is passed to the coroutine unchanged; what it throws is thrown
 * in as one exception instance (never the deprecated (type, value, traceback) form); closing
 * closes the coroutine; each with the context entered.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef struct {
    PyObject_HEAD
    PyObject *context;
    PyObject *fn;        /* what makes the coroutine, with args: cleared once it is made */
    PyObject *args;
    PyObject *coroutine; /* NULL until the first step */
} Step;

typedef struct {
    PyObject *step_type;
} ModuleState;

static PySendResult
step_am_send(Step *self, PyObject *arg, PyObject **result)
{
    if (PyContext_Enter(self->context) < 0) {
        *result = NULL;
        return PYGEN_ERROR;
    }
    if (self->coroutine == NULL) {
        self->coroutine = PyObject_Call(self->fn, self->args, NULL);
        Py_CLEAR(self->fn);
        Py_CLEAR(self->args);
        if (self->coroutine == NULL) {
            *result = NULL;
            (void)PyContext_Exit(self->context);
            return PYGEN_ERROR;
        }
    }
    PySendResult sent = PyIter_Send(self->coroutine, arg, result);
    if (PyContext_Exit(self->context) < 0) {
        Py_CLEAR(*result);
        return PYGEN_ERROR;
    }
    return sent;
}

/* The coroutine's return value as the end of an iterator: StopIteration(value). */
static PyObject *
returned(PyObject *value)
{
    if (value == Py_None) {
        PyErr_SetNone(PyExc_StopIteration);
    }
    else {
        PyObject *stop = PyObject_CallOneArg(PyExc_StopIteration, value);
        if (stop != NULL) {
            PyErr_SetObject(PyExc_StopIteration, stop);
            Py_DECREF(stop);
        }
    }
    Py_DECREF(value);
    return NULL;
}

static PyObject *
step_send(Step *self, PyObject *arg)
{
    PyObject *result;
    PySendResult sent = step_am_send(self, arg, &result);
    return sent == PYGEN_RETURN ? returned(result) : result;
}

static PyObject *
step_next(Step *self)
{
    return step_send(self, Py_None);
}

/* What is thrown into the awaiting frame, as one exception instance (the interpreter
 * passes an iterator's throw() up to three arguments: type, value, traceback). */
static PyObject *
thrown(PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *kind = args[0];
    PyObject *value = nargs > 1 ? args[1] : NULL;
    PyObject *traceback = nargs > 2 ? args[2] : NULL;
    PyObject *error;
    if (PyExceptionInstance_Check(kind)) {
        error = Py_NewRef(kind);
    }
    else if (value != NULL && PyExceptionInstance_Check(value)) {
        error = Py_NewRef(value);
    }
    else if (PyExceptionClass_Check(kind)) {
        error = (value == NULL || value == Py_None) ? PyObject_CallNoArgs(kind)
                                                    : PyObject_CallOneArg(kind, value);
        if (error == NULL) {
            return NULL;
        }
    }
    else {
        PyErr_SetString(PyExc_TypeError, "exceptions must be classes or instances "
                                         "deriving from BaseException");
        return NULL;
    }
    if (traceback != NULL && traceback != Py_None &&
        PyException_SetTraceback(error, traceback) < 0) {
        Py_DECREF(error);
        return NULL;
    }
    return error;
}

static PyObject *
step_call(Step *self, const char *method, PyObject *arg)
{
    if (self->coroutine == NULL) { /* never stepped: nothing was made to throw into */
        Py_CLEAR(self->fn);
        Py_CLEAR(self->args);
        if (arg == NULL) {
            Py_RETURN_NONE; /* close() */
        }
        PyErr_SetObject((PyObject *)Py_TYPE(arg), arg);
        return NULL;
    }
    if (PyContext_Enter(self->context) < 0) {
        return NULL;
    }
    PyObject *result = arg == NULL ? PyObject_CallMethod(self->coroutine, method, NULL)
                                   : PyObject_CallMethod(self->coroutine, method, "O", arg);
    if (PyContext_Exit(self->context) < 0) {
        Py_CLEAR(result);
    }
    return result;
}

static PyObject *
step_throw(Step *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "throw() takes 1 to 3 arguments");
        return NULL;
    }
    PyObject *error = thrown(args, nargs);
    if (error == NULL) {
        return NULL;
    }
    PyObject *result = step_call(self, "throw", error);
    Py_DECREF(error);
    return result;
}

static PyObject *
step_close(Step *self, PyObject *Py_UNUSED(ignored))
{
    return step_call(self, "close", NULL);
}

static int
step_traverse(Step *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->context);
    Py_VISIT(self->fn);
    Py_VISIT(self->args);
    Py_VISIT(self->coroutine);
    return 0;
}

static int
step_clear(Step *self)
{
    Py_CLEAR(self->context);
    Py_CLEAR(self->fn);
    Py_CLEAR(self->args);
    Py_CLEAR(self->coroutine);
    return 0;
}

static void
step_dealloc(Step *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    step_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMethodDef step_methods[] = {
    {"send", (PyCFunction)step_send, METH_O, "Send a value into the coroutine."},
    {"throw", (PyCFunction)(void (*)(void))step_throw, METH_FASTCALL,
     "Throw an exception into the coroutine."},
    {"close", (PyCFunction)step_close, METH_NOARGS, "Close the coroutine."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot step_slots[] = {
    {Py_tp_doc, "A coroutine awaited with each of its steps run in a context."},
    {Py_tp_dealloc, step_dealloc},
    {Py_tp_traverse, step_traverse},
    {Py_tp_clear, step_clear},
    {Py_tp_iter, PyObject_SelfIter},
    {Py_tp_iternext, step_next},
    {Py_tp_methods, step_methods},
    {Py_am_await, PyObject_SelfIter},
    {Py_am_send, step_am_send},
    {0, NULL},
};

static PyType_Spec step_spec = {
    .name = "tinytools._runtime._contexts.InContext",
    .basicsize = sizeof(Step),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = step_slots,
};

PyDoc_STRVAR(in_context_doc,
"in_context(context, fn, /, *args)\n--\n\n"
"Await the coroutine fn(*args), made in its first step, with each step run in context.");

static PyObject *
in_context(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError,
                        "in_context() takes a context and a function making a coroutine");
        return NULL;
    }
    if (!PyContext_CheckExact(args[0])) {
        PyErr_SetString(PyExc_TypeError, "in_context() needs a contextvars.Context");
        return NULL;
    }
    ModuleState *state = PyModule_GetState(module);
    Step *step = PyObject_GC_New(Step, (PyTypeObject *)state->step_type);
    if (step == NULL) {
        return NULL;
    }
    step->context = Py_NewRef(args[0]);
    step->fn = Py_NewRef(args[1]);
    step->args = PyTuple_New(nargs - 2);
    step->coroutine = NULL;
    if (step->args == NULL) {
        Py_DECREF(step);
        return NULL;
    }
    for (Py_ssize_t i = 2; i < nargs; i++) {
        PyTuple_SET_ITEM(step->args, i - 2, Py_NewRef(args[i]));
    }
    PyObject_GC_Track(step);
    return (PyObject *)step;
}

static int
exec_module(PyObject *module)
{
    ModuleState *state = PyModule_GetState(module);
    state->step_type = PyType_FromModuleAndSpec(module, &step_spec, NULL);
    return state->step_type == NULL ? -1 : 0;
}

static int
module_traverse(PyObject *module, visitproc visit, void *arg)
{
    ModuleState *state = PyModule_GetState(module);
    Py_VISIT(state->step_type);
    return 0;
}

static int
module_clear(PyObject *module)
{
    ModuleState *state = PyModule_GetState(module);
    Py_CLEAR(state->step_type);
    return 0;
}

static PyMethodDef module_methods[] = {
    {"in_context", (PyCFunction)(void (*)(void))in_context, METH_FASTCALL, in_context_doc},
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
    .m_name = "tinytools._runtime._contexts",
    .m_doc = "A coroutine stepped in a contextvars context, compiled (tinytools._runtime.contexts).",
    .m_size = sizeof(ModuleState),
    .m_methods = module_methods,
    .m_slots = slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
};

PyMODINIT_FUNC
PyInit__contexts(void)
{
    return PyModuleDef_Init(&module_definition);
}
