/*
 * handler.h - the SIGPROF handler, in a file of its own (gperftools'
 * profile-handler.cc, async-profiler): everything it calls is in this file or
 * marked signal-safe in its header.
 *
 * Rules it keeps: errno saved and restored; no malloc, stdio or locks; state
 * reached through initial-exec TLS; a full ring drops the sample and counts
 * it; it never waits.
 */
#ifndef SP_SAMPLER_HANDLER_H
#define SP_SAMPLER_HANDLER_H

#include "sampler/base/sigsafe.h"
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

struct sp_thread;

/*
 * A sample's ring entry, in 64-bit words: time, weight, range, the stack's
 * hash, the event's payload, then its PCs. A stack the slot has sent whole
 * before (its hash is in the slot's known table) goes as its hash and
 * depth alone, flagged SP_RING_KNOWN: the writer, which reads each ring in
 * order, has it already. A thread in a loop then writes one cache line a
 * sample rather than one per eight frames, and the writer reads and hashes
 * nothing more. The entry's flags hold the stack's (SP_STACK_*, low 16
 * bits) and the event's kind (SP_EVENT_*, bits 16-23: 0 is cpu).
 */
#define SP_ENTRY_TIME	    0
#define SP_ENTRY_WEIGHT	    1
#define SP_ENTRY_RANGE	    2
#define SP_ENTRY_HASH	    3
#define SP_ENTRY_PAYLOAD    4
#define SP_ENTRY_PCS	    5
#define SP_ENTRY_DEPTH	    5 /* in a SP_RING_KNOWN entry, where the PCs would start */
#define SP_RING_KNOWN	    0x40000000u
#define SP_RING_STACK_MASK  0xffffu
#define SP_RING_KIND_SHIFT  16
#define SP_RING_KIND(flags) (((flags) >> SP_RING_KIND_SHIFT) & 0xffu)

/* What a capture records beside the stack. */
struct sp_event {
	uint32_t kind;	  /* SP_EVENT_* (format/profile.h) */
	uint64_t weight;  /* in the kind's unit */
	uint64_t payload; /* the kind's word, or 0 */
	uint64_t time_ns; /* sp_now_ns() at the event */
	/* SP_EVENT_TRIM_OWN: the stack's innermost frames in stackprof's
	 * library are left out (a synchronous capture's); 0 keeps them */
	uint32_t own_frames;
};
#define SP_EVENT_TRIM_OWN 1u

/*
 * The one capture path: unwinds the calling thread t from uc (a signal's
 * context, or one from getcontext), reads its Python frames, and writes
 * one ring entry for ev. The signal handler and every synchronous source
 * (an allocation hook, a step) capture through this. The caller holds the
 * thread's capture flag (sp_capture_begin). false when the sample was not
 * taken (counted: a full ring, a dlclose under way). Signal-safe.
 */
SP_SIGSAFE bool sp_capture(struct sp_thread *t, void *uc, const struct sp_event *ev);

/*
 * Its first step alone: thread t's native frames from uc into pcs (their
 * stack pointers into sps, if not NULL), at most max, with SP_STACK_*
 * flags. The depth, or -1 while a dlclose is under way (nothing walked).
 * sample: a sample's walk (the unwinder STACKPROF_UNWIND chose, the
 * previous walk's rules prefetched, the thread's counters); otherwise
 * the fast unwinder, counting nothing: the anchor of a range push
 * (life/api.c) is found from such a walk. Signal-safe.
 */
/*
 * How many of pcs' innermost frames (a walk's, depth of them) are in
 * stackprof's own library: what a capture started from inside it (a
 * synchronous source, a range push's anchor) leaves out. -1 when it can't
 * tell (a dlclose under way). Signal-safe.
 */
SP_SIGSAFE long sp_capture_own_frames(const uint64_t *pcs, size_t depth);

SP_SIGSAFE long sp_capture_walk(struct sp_thread *t, void *uc, uint64_t *pcs, uint64_t *sps,
				size_t max, uint32_t *flags, bool sample);

/*
 * A synchronous source's capture of the calling thread, here and now:
 * takes the thread's capture flag, captures from a context of its own, and
 * gives the flag back. A CPU signal that lands meanwhile is dropped and
 * counted (drops), as is a capture started inside another (a hook reached
 * from the handler's own code): -EBUSY; -ENOENT for a thread stackprof
 * does not sample, -EAGAIN when sampling is off. 0 when the entry was
 * written. Not for the handler.
 */
int sp_capture_here(uint32_t kind, uint64_t weight, uint64_t payload);

/* Entries in a slot's known table (direct-mapped by hash; 8 KiB). */
#define SP_KNOWN_SLOTS 1024

/* Words of the mapping behind a slot's stk and known. */
#define SP_STK_WORDS(max_depth) ((size_t)(max_depth) + SP_KNOWN_SLOTS)

/* The handler's entry, installed with SA_SIGINFO | SA_RESTART | SA_ONSTACK:
 * it moves onto the thread's own stack (sigstack.h), then runs
 * sp_handler_body. In assembly, in sigstack.c. */
SP_SIGSAFE void sp_handler(int sig, siginfo_t *si, void *uc);

/* The handler itself. A capture inside a capture on one thread (see
 * sp_handler_fault) returns at once, counted as a drop; a SIGTRAP of the
 * program's that comes inside a capture goes to the program as the
 * capture ends, with nothing of ours set. */
SP_SIGSAFE void sp_handler_body(int sig, siginfo_t *si, void *uc);

/* The handler on a thread that runs on another thread's TLS (a raw clone()
 * without CLONE_SETTLS), or on one without a slot: its signal is counted
 * as stray (a program's SIGTRAP goes to the program), touching nothing of
 * the TLS. The entry (sigstack.c) picks it. */
SP_SIGSAFE void sp_handler_foreign(int sig, siginfo_t *si, void *uc);

/*
 * Whose a SIGSEGV or SIGBUS raised by an instruction (not a guarded read,
 * saferead.h) is, from its context uc:
 * - SP_FAULT_AGAIN: the kernel delivered another signal to our handler
 *   first, and this fault before that handler's first instruction; the
 *   instruction that faulted runs (and faults) again after it: nothing to do.
 * - SP_FAULT_OURS: stackprof's own code faulted, in a capture on this
 *   thread: never the program's to handle.
 * - SP_FAULT_PROGRAM: the program's.
 */
enum sp_fault_whose { SP_FAULT_PROGRAM, SP_FAULT_AGAIN, SP_FAULT_OURS };
SP_SIGSAFE enum sp_fault_whose sp_handler_fault(const void *uc);

/* The signals held off while a handler of stackprof's runs: all but the
 * faults. */
sigset_t sp_handler_mask(void);

#endif
