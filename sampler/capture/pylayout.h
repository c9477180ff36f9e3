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

/* _PyInterpreterFrame.owner (3.11+): a generator's frame lives inside the
 * generator object; 3.12 and 3.13 mark each eval call's shim frame, which
 * lives on the C stack of that call, as owned by the C stack */
#define SP_PY_OWNED_BY_THREAD	 0
#define SP_PY_OWNED_BY_GENERATOR 1
#define SP_PY_OWNED_BY_CSTACK	 3

/* The str state word (at str_state), the same bits in 3.10 to 3.13: the
 * kind is the byte width of a character (1, 2 or 4); a compact string's
 * characters follow its header, at str_ascii_data when it is also ASCII,
 * at str_compact_data otherwise. 3.10 and 3.11 also have a "ready" bit 7,
 * set for every string a code object names. */
#define SP_PYSTR_KIND_SHIFT 2
#define SP_PYSTR_KIND_MASK  7u
#define SP_PYSTR_COMPACT    (1u << 5)
#define SP_PYSTR_ASCII	    (1u << 6)

/*
 * Byte offsets. A field a version does not have is 0 (no field listed here
 * sits at offset 0 in a version that has it, except where the comment
 * says so), and the frame kind says which fields a version uses.
 */
struct sp_pylayout {
	unsigned minor; /* 10..13 */
	enum sp_pyframe_kind kind;

	/* _PyRuntimeState (the _PyRuntime symbol) */
	uint32_t rt_size;    /* sizeof(_PyRuntimeState): st_size of the _PyRuntime symbol */
	uint32_t rt_tss_key; /* Py_tss_t autoTSSkey: {int _is_initialized; pthread_key_t _key;} */
	uint32_t rt_interp_head; /* interpreters.head, a PyInterpreterState * */

	/* PyInterpreterState */
	uint32_t is_tstate_head; /* threads.head (3.10: tstate_head) */

	/* PyThreadState */
	uint32_t ts_next;
	uint32_t ts_interp;
	uint32_t ts_frame;	 /* 3.10: frame; 3.11/3.12: cframe; 3.13: current_frame */
	uint32_t ts_thread_id;	 /* unsigned long: the thread's pthread_t */
	uint32_t ts_native_tid;	 /* unsigned long native_thread_id (the kernel tid); 3.11+ */
	uint32_t ts_root_cframe; /* 3.11/3.12: the _PyCFrame embedded in the thread state,
				  * the one cframe that is not on an eval call's C stack */

	/* _PyCFrame (3.11, 3.12); current_frame is at offset 0 on 3.12 */
	uint32_t cf_current_frame;
	uint32_t cf_previous;

	/* the frame: PyFrameObject on 3.10, _PyInterpreterFrame after;
	 * on 3.12 and 3.13 fr_code is at offset 0 */
	uint32_t fr_code;	/* f_code; 3.13 f_executable */
	uint32_t fr_previous;	/* f_back; previous */
	uint32_t fr_instr;	/* 3.10 f_lasti (int); 3.11/3.12 prev_instr; 3.13 instr_ptr */
	uint32_t fr_owner;	/* 3.11+: char owner */
	uint32_t fr_is_entry;	/* 3.11: bool is_entry */
	uint32_t fr_localsplus; /* the fast locals, the first argument first (3.10 f_localsplus);
				 * read only in normal context, with the GIL (python.c) */

	/* PyCodeObject */
	uint32_t co_firstlineno;    /* int */
	uint32_t co_filename;	    /* str */
	uint32_t co_name;	    /* str */
	uint32_t co_qualname;	    /* str; 3.11+ (3.10 has none) */
	uint32_t co_linetable;	    /* bytes: 3.10 line table, 3.11+ location table */
	uint32_t co_code;	    /* 3.10: the co_code bytes object */
	uint32_t co_code_adaptive;  /* 3.11+: where the code units start, inside the object */
	uint32_t co_nunits;	    /* 3.11+: Py_ssize_t ob_size, the number of code units */
	uint32_t co_firsttraceable; /* 3.11+: int; a frame whose instruction is below this
				     * code unit has not started (CPython hides it) */

	/* PyObject, str (PyASCIIObject / PyCompactUnicodeObject), bytes */
	uint32_t ob_type;	   /* 8 */
	uint32_t str_length;	   /* Py_ssize_t length, in characters */
	uint32_t str_state;	   /* the state bit-field word (SP_PYSTR_*) */
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
 * 3.13: fills *out from the _Py_DebugOffsets at the start of the runtime
 * (rt, the _PyRuntime symbol's address), starting from the built-in table
 * for the fields it does not carry. Those are taken only where what it
 * does carry vouches for them: the TSS key when the runtime's size is the
 * table's, _co_firsttraceable when co_code_adaptive is where the table
 * has it; the compact str header size is derived from sizeof(PyUnicodeObject).
 * Only 3.13's layout of the struct is known (it changes with each minor
 * version), and only the default build (not free-threaded).
 *
 * 0, or -ENOENT when the cookie is not there, -EOPNOTSUPP when the build
 * is free-threaded, -EPROTO when its version is not 3.minor, minor is not
 * 13, an offset is
 * out of its struct or out of any plausible range, or the table's extra
 * fields cannot be vouched for. *out is written only on success. Reads
 * 584 bytes at rt and nothing else; no allocation, no system call.
 */
int sp_pylayout_from_debug_offsets(const void *rt, unsigned minor, struct sp_pylayout *out);

#endif
