/*
 * pystate.h - what the handler knows of the interpreter it reads frames
 * of: found and filled by life/python.c, read by pystack.c and the
 * handler, recorded by the writer.
 */
#ifndef SP_SAMPLER_PYSTATE_H
#define SP_SAMPLER_PYSTATE_H

#include <stdatomic.h>
#include <stdint.h>

#include "sampler/capture/pylayout.h"

/* What the handler reads, set before active is raised. */
struct sp_py {
	_Atomic int active;   /* frames are read */
	struct sp_pylayout L; /* the interpreter's layout */
	uintptr_t runtime;    /* &_PyRuntime */
	uintptr_t code_type;  /* &PyCode_Type */
	uintptr_t eval_lo;    /* _PyEval_EvalFrameDefault's code, for 3.10's placement */
	uintptr_t eval_hi;
	uint32_t specific;	      /* offset of glibc's pthread key block in struct pthread */
	uint32_t version;	      /* major << 16 | minor << 8 | micro */
	_Atomic uint64_t status_gen;  /* moves when status changes: the writer records it */
	_Atomic uint64_t bad_tstates; /* thread states whose thread_id was not the thread's */
	char module[4096];	      /* the file that holds the interpreter */
	char status[256];	      /* one line for people */
};

extern struct sp_py sp_py;

#endif
