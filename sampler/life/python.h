/*
 * python.h - the CPython interpreter in the process, found in normal
 * context, and everything the signal handler needs to read its frames
 * (pystack.h does the reading).
 *
 * The interpreter is found by its exported symbols (_PyRuntime, Py_Version,
 * PyCode_Type, _PyEval_EvalFrameDefault), whether it is linked into the
 * executable (Debian's /usr/bin/python3.11) or lives in libpython3.X.so
 * (pyenv's builds), at start and again whenever modules are loaded (a
 * program that embeds Python may load it late). Its layout comes from
 * pylayout.h: the built-in table of its minor version, checked against the
 * size of the _PyRuntime symbol, or on 3.13 the _Py_DebugOffsets the
 * runtime carries. Anything else (another version, a layout that does not
 * check out, a free-threaded build) leaves native stacks exactly as they
 * are, and the status line says why.
 *
 * Two things of the interpreter's are changed, both invisible to it:
 * PyCode_Type's tp_dealloc is wrapped, so that a code object's entry in
 * the handler's table is dropped when it dies (a later code object at the
 * same address is never given its name), and SIGSEGV/SIGBUS are shared
 * with the program (saferead.h) so that a read of memory being torn down
 * can't crash it.
 *
 * Not signal-safe, but for the state sp_py, which the handler reads.
 */
#ifndef SP_SAMPLER_PYTHON_H
#define SP_SAMPLER_PYTHON_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sampler/capture/pystate.h" /* struct sp_py, sp_py */

struct sp_thread;

/* Looks for the interpreter (constructor, and after modules change). */
void sp_python_init(void);
void sp_python_refresh(void);

/* Fork hooks for the lock of the two above: 0 before fork (lock), 1 in the
 * parent (unlock), 2 in the child (re-init). */
void sp_python_atfork(int phase);

/* Gives the calling thread (slot t) what the handler needs to read its
 * Python frames, once Python frames are read. 0 or -errno. */
int sp_python_attach(struct sp_thread *t);

/* For the writer: every live slot that lacks it gets the handler's
 * scratch (Python found after those threads started). */
void sp_python_attach_all(void);

/*
 * Called by pthread_create in the creating thread: when that thread is
 * Python's threading.Thread.start with the GIL held, copies the Thread's
 * name (its _name, as UTF-8, cut to cap - 1 bytes) to out and returns
 * true. Reads the innermost frame through the layout and calls the C API
 * only to read the two strings and that one attribute; an error raised
 * meanwhile is cleared and any pending one restored.
 */
bool sp_python_thread_name(char *out, size_t cap);

#endif
