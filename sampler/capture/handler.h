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

/*
 * A sample's ring entry, in 64-bit words: time, weight, range, the stack's
 * hash, then its PCs. A stack the slot has sent whole before (its hash is
 * in the slot's known table) goes as its hash and depth alone, flagged
 * SP_RING_KNOWN: the writer, which reads each ring in order, has it already.
 * A thread in a loop then writes one cache line a sample rather than one
 * per eight frames, and the writer reads and hashes nothing more.
 */
#define SP_ENTRY_TIME	0
#define SP_ENTRY_WEIGHT 1
#define SP_ENTRY_RANGE	2
#define SP_ENTRY_HASH	3
#define SP_ENTRY_PCS	4
#define SP_ENTRY_DEPTH	4 /* in a SP_RING_KNOWN entry, where the PCs would start */
#define SP_RING_KNOWN	0x40000000u

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
