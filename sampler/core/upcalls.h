/*
 * upcalls.h - the few things the writer asks of the library's life cycle
 * (life/), which sits above it: whether the program has lost its last
 * thread, a fresh look for the Python interpreter after modules changed,
 * and the CPU time of the threads that got no slot.
 *
 * Why a table: the layers point down only (docs/ARCHITECTURE.md), but
 * these three are the writer's periodic duties over state that life/ owns
 * (the program's threads, the interpreter). Rather than an include
 * pointing up, life/main.c fills this table in the constructor, before the
 * writer starts; until then (and in a build without life/) each call is
 * a no-op with the answer "nothing to do".
 *
 * None of this is signal-safe.
 */
#ifndef SP_SAMPLER_UPCALLS_H
#define SP_SAMPLER_UPCALLS_H

#include <stdbool.h>
#include <stdint.h>

struct sp_upcalls {
	/* life/main.h's sp_orphan_check */
	bool (*orphan_check)(void);
	/* life/python.h's sp_python_refresh */
	void (*python_refresh)(void);
	/* life/thread.h's sp_thread_missed_ns */
	uint64_t (*missed_ns)(void);
};

/* Installs the table (copied); once, by the constructor. */
void sp_upcalls_set(const struct sp_upcalls *up);

/* The writer's watchdog, once a pass: true when the program had no thread
 * left and a thread of life/'s now finishes the profile. False if unset. */
bool sp_upcall_orphan_check(void);

/* Looks for the Python interpreter again (modules changed). */
void sp_upcall_python_refresh(void);

/* The CPU time in ns of the threads that got no slot; 0 if unset. Never
 * waits. */
uint64_t sp_upcall_missed_ns(void);

#endif
