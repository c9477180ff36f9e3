/*
 * timercost.h - the host's price of one perf-sigtrap interrupt (the
 * default timer), measured on the calling thread with an empty handler.
 */
#ifndef SP_TOOLS_TIMERCOST_H
#define SP_TOOLS_TIMERCOST_H

#include <stdbool.h>
#include <stdint.h>

struct sp_timercost {
	double ns_per_signal; /* CPU time one signal added to a fixed block of work */
	uint64_t signals;     /* the signals it is measured over */
	uint64_t cpu_ns;      /* the measurement's own CPU time */
};

/* Spins about 0.3 s of CPU on the calling thread, in alternating blocks
 * with the timer off and on at 2 kHz. 0, or -errno when perf_event_open
 * with sigtrap is refused here (then perf-sigtrap is not the default). */
int sp_timercost_measure(struct sp_timercost *out);

/* This host's figure in *ns: the one kept in DIR/host-timer for this CPU
 * model, architecture, kernel and guest-or-not, or measured now
 * (*measured set) and, with keep, kept there (DIR made if missing). 0, or
 * -errno when it can't be measured here (kept too, and returned again):
 * -EPERM when this process is traced or under seccomp. `stackprof cache
 * clear` removes the file: the next run measures again. */
int sp_timercost_host(const char *dir, bool keep, uint64_t *ns, bool *measured);

#endif
