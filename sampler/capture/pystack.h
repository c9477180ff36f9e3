/*
 * pystack.h - the interrupted thread's Python frames, read in the signal
 * handler and merged into its native stack.
 *
 * Per sample: this thread's PyThreadState, from the interpreter's
 * autoTSSkey through glibc's per-thread key block (valid with or without
 * the GIL, which a thread inside torch has released), checked by its
 * thread_id being this thread's pthread_t; then its frames, each read with
 * sp_safe_copy (saferead.h). Each frame becomes a tagged word
 * (format/profile.h: its code object's id and its instruction) placed in
 * the stack where the interpreter ran it: each eval call's frames go just
 * outside the native frames they called and just inside that eval call's
 * own native frame, found by stack address (3.11: the call's _PyCFrame,
 * 3.12/3.13: its shim frame, both locals of that native frame) or, on
 * 3.10, one frame per native frame of _PyEval_EvalFrameDefault.
 *
 * The walk collects each frame's code object address and instruction,
 * prefetching the code object's header and its code-table slot, and the
 * frames are named after it: in a sample whose data the program evicted,
 * those cache misses overlap instead of coming one after another.
 *
 * A code object is named once: the first sample that meets it copies its
 * qualname, filename, first line and line table into a PYCODE entry of the
 * thread's ring, and a lock-free table maps its address to that id until
 * it dies (python.c wraps its dealloc). A frame that can't be read
 * becomes a frame of code id 0, and is counted.
 */
#ifndef SP_SAMPLER_PYSTACK_H
#define SP_SAMPLER_PYSTACK_H

#include <stddef.h>
#include <stdint.h>

#include "sampler/base/sigsafe.h"

struct sp_thread;

/* Ring entries that are a PYCODE, not a sample, carry this flag. */
#define SP_RING_PYCODE 0x80000000u

/* Maps the code table (once). 0 or -errno. Not signal-safe. */
int sp_pystack_init(void);

/* The code object at addr is being freed: forget it. Normal context, with
 * the GIL (python.c's tp_dealloc wrapper). */
void sp_pystack_forget(uintptr_t addr);

/* Takes SIGSEGV and SIGBUS (sigshare.h) while Python frames are read: a
 * guarded read's fault resumes at its error return (saferead.h), every
 * other fault is the program's. Its handler is here, in capture/, since
 * the handler's reads reach it. 0 or -errno. Not signal-safe. */
int sp_pystack_guard(void);

/* In a forked child, before its timer is armed: forgets every code object
 * named, as they were named in the parent's profile. */
void sp_pystack_atfork_child(void);

/* Bytes of per-thread scratch the handler needs (python.c maps it). */
size_t sp_pystack_scratch_size(void);

/* Where the handler unwinds to when t reads Python frames: native PCs and
 * their stack pointers, max_depth words each. NULL when t doesn't. */
SP_SIGSAFE uint64_t *sp_pystack_pcs(struct sp_thread *t);
SP_SIGSAFE uint64_t *sp_pystack_sps(struct sp_thread *t);

/* The Python frames of a sample, in the thread's scratch. */
struct sp_pyframes {
	size_t n;    /* frames */
	size_t nseg; /* eval calls they belong to */
};

/*
 * Reads the calling thread's Python frames into its scratch (t is its
 * slot, with scratch). A code object met for the first time is named in a
 * PYCODE entry of t's ring: so call this before reserving the sample's own
 * entry. Signal-safe.
 */
SP_SIGSAFE struct sp_pyframes sp_pystack_read(struct sp_thread *t);

/*
 * Merges the frames read into the native stack pcs[0..n) (innermost first;
 * sps their stack pointers), writing at most max words to out. Returns the
 * merged depth; ORs SP_STACK_TRUNCATED into *flags when words were cut,
 * SP_STACK_PY_UNPLACED when some Python frames could not be placed (they
 * then follow the native frames). Signal-safe.
 */
SP_SIGSAFE size_t sp_pystack_place(struct sp_thread *t, struct sp_pyframes pf, const uint64_t *pcs,
				   const uint64_t *sps, size_t n, uint64_t *out, size_t max,
				   uint32_t *flags);

/*
 * The writer's side: reads a PYCODE ring entry (words, flags has
 * SP_RING_PYCODE) into *c, whose strings it allocates (free with
 * sp_pystack_code_release). 0 or -EINVAL. Not signal-safe.
 */
struct sp_prof_pycode;
int sp_pystack_code_decode(const uint64_t *words, size_t n, struct sp_prof_pycode *c);
void sp_pystack_code_release(struct sp_prof_pycode *c);

#endif
