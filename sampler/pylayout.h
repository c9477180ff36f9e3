/*
 * pylayout.h - where CPython keeps what the signal handler reads, per
 * minor version: byte offsets into _PyRuntimeState, PyThreadState, the
 * frames, code objects, str and bytes (x86-64, release builds).
 *
 * The handler reads a thread's Python frames without the GIL, so it can
 * only follow pointers at offsets it knows. Each supported version has a
 * table here, checked against the DWARF of real builds by
 * tests/python/layout-check.sh (pyenv's libpython3.X.so and Debian's
 * python3.11 through python3.11-dbg). 3.13 and later also describe most
 * of these offsets at run time in _PyRuntime.debug_offsets
 * (_Py_DebugOffsets): sp_pylayout_from_debug_offsets() reads them there
 * and keeps the table only for what they leave out (the TSS key).
 *
 * Data only; nothing here runs in the handler. Not async-signal-safe.
 */
#ifndef SP_SAMPLER_PYLAYOUT_H
#define SP_SAMPLER_PYLAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How a thread's frames are chained, which changed in each version. */
enum sp_pyframe_kind {
	/* 3.10: PyFrameObject on the heap from tstate->frame through f_back;
	 * f_lasti is an int, the index of the last instruction in code units;
	 * one _PyEval_EvalFrameDefault call per Python frame */
	SP_PYFRAMES_310 = 10,
	/* 3.11: tstate->cframe (a _PyCFrame on the C stack of the eval call)
	 * ->current_frame, then _PyInterpreterFrame.previous; the frame with
	 * is_entry set is the first one that eval call ran; prev_instr points
	 * at the last instruction started (a _Py_CODEUNIT *) */
	SP_PYFRAMES_311 = 11,
	/* 3.12: as 3.11, but each eval call begins with a shim frame on the C
	 * stack whose owner is FRAME_OWNED_BY_CSTACK (3) */
	SP_PYFRAMES_312 = 12,
	/* 3.13: tstate->current_frame; f_executable (a code object, or None
	 * for the shim); instr_ptr is the instruction about to run or running */
	SP_PYFRAMES_313 = 13,
};

#define SP_PY_OWNED_BY_CSTACK 3

struct sp_pylayout {
	unsigned minor; /* 10..13 */
	enum sp_pyframe_kind kind;

	/* _PyRuntimeState (the _PyRuntime symbol) */
	uint32_t rt_tss_key; /* Py_tss_t autoTSSkey: {int _is_initialized; pthread_key_t _key;} */
	uint32_t rt_interp_head; /* interpreters.head, a PyInterpreterState * */

	/* PyInterpreterState */
	uint32_t is_tstate_head; /* threads.head */

	/* PyThreadState */
	uint32_t ts_next;
	uint32_t ts_interp;
	uint32_t ts_frame;	/* 3.10: frame; 3.11/3.12: cframe; 3.13: current_frame */
	uint32_t ts_thread_id;	/* unsigned long: the thread's pthread_t */
	uint32_t ts_native_tid; /* unsigned long native_thread_id (the kernel tid) */

	/* _PyCFrame (3.11, 3.12) */
	uint32_t cf_current_frame;
	uint32_t cf_previous;

	/* the frame: PyFrameObject on 3.10, _PyInterpreterFrame after */
	uint32_t fr_code;     /* f_code; 3.13 f_executable */
	uint32_t fr_previous; /* f_back; previous */
	uint32_t fr_instr;    /* 3.10 f_lasti (int); 3.11/3.12 prev_instr; 3.13 instr_ptr */
	uint32_t fr_owner;    /* 3.12+: char owner; 0 before */
	uint32_t fr_is_entry; /* 3.11: bool is_entry; 0 otherwise */

	/* PyCodeObject */
	uint32_t co_firstlineno;   /* int */
	uint32_t co_filename;	   /* str */
	uint32_t co_name;	   /* str */
	uint32_t co_qualname;	   /* str; 0 on 3.10, which has none */
	uint32_t co_linetable;	   /* bytes: 3.10 line table, 3.11+ location table */
	uint32_t co_code;	   /* 3.10: the co_code bytes object; 3.11+: 0 */
	uint32_t co_code_adaptive; /* 3.11+: where the code units start, inside the object */

	/* PyObject, str (PyASCIIObject / PyCompactUnicodeObject), bytes */
	uint32_t ob_type;	   /* 8 */
	uint32_t str_length;	   /* Py_ssize_t length */
	uint32_t str_state;	   /* the state bit-field word */
	uint32_t str_ascii_data;   /* sizeof(PyASCIIObject): compact ASCII data */
	uint32_t str_compact_data; /* sizeof(PyCompactUnicodeObject): other compact data */
	uint32_t bytes_size;	   /* ob_size */
	uint32_t bytes_data;	   /* ob_sval */
};

/*
 * The built-in table for 3.minor, or NULL when that version is not
 * supported. Borrowed, static.
 */
const struct sp_pylayout *sp_pylayout_builtin(unsigned minor);

/*
 * 3.13+: fills *out from the _Py_DebugOffsets at the start of the runtime
 * (rt, the _PyRuntime symbol's address), starting from the built-in table
 * for the fields it does not carry. 0, or -ENOENT when the cookie is not
 * there, -EPROTO when its version is not 3.minor or an offset is out of
 * any plausible range.
 */
int sp_pylayout_from_debug_offsets(const void *rt, unsigned minor, struct sp_pylayout *out);

#endif
