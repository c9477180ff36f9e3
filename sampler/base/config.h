/*
 * config.h - the sampler's settings, read once from STACKPROF_* variables in
 * the constructor and never again (the target may change its environment).
 *
 * Every value is bounded; a bad value is reported once on stderr and the
 * default is kept, so a typo can never stop the target from running.
 */
#ifndef SP_SAMPLER_CONFIG_H
#define SP_SAMPLER_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "format/schedule.h"

/* The deepest stack STACKPROF_MAX_DEPTH may ask for. */
#define SP_MAX_DEPTH_WORDS 4096

/*
 * The most thread slots STACKPROF_MAX_THREADS may ask for, and its default.
 * The table is reserved, not committed (MAP_NORESERVE): a slot costs memory
 * only once a thread has used it, so the size is about the address space
 * (65536 * sizeof(struct sp_thread), 45 MB) and the high-water mark of
 * threads, not the program's usual count. What a sampled thread costs is
 * in docs/SAMPLER.md ("Many threads").
 */
#define SP_MAX_THREADS 65536

/* STACKPROF_UNWIND: which unwinder the handler uses (unwind.h). */
enum sp_unwind_mode {
	SP_UNWIND_FAST,	     /* cached CFI rules, libunwind for the frames they can't step */
	SP_UNWIND_LIBUNWIND, /* libunwind for every frame */
	SP_UNWIND_CHECK,     /* both on every sample, counting the samples where they differ */
};

struct sp_config {
	char out[4096];	      /* STACKPROF_OUT; "" means stackprof.<pid>.prof */
	bool out_refused;     /* STACKPROF_OUT holds a control character: no profile */
	uint32_t freq_hz;     /* STACKPROF_FREQ, 1..20000, default 100 */
	uint32_t max_depth;   /* STACKPROF_MAX_DEPTH, 8..SP_MAX_DEPTH_WORDS, default 512 */
	uint32_t ring_kb;     /* STACKPROF_RING_KB per thread, 64..65536, default 1024 */
	uint32_t flush_ms;    /* STACKPROF_FLUSH_MS, 10..60000, default 200 */
	uint32_t max_threads; /* STACKPROF_MAX_THREADS, 1..SP_MAX_THREADS (default) */
	char timer[32];	      /* STACKPROF_TIMER: auto, or a CPU timer's word */
	/* STACKPROF_TIMER_IRQ_NS: what one perf timer interrupt costs on this
	 * host, as `stackprof run` measured it (tools/timercost.c); 0 unknown */
	uint32_t timer_irq_ns;
	enum sp_unwind_mode unwind;  /* STACKPROF_UNWIND: fast (default), libunwind, check */
	bool quiet;		     /* STACKPROF_QUIET=1: no messages at all */
	bool verbose;		     /* STACKPROF_VERBOSE=1 */
	bool paused;		     /* STACKPROF_START=0: wait for stackprof_start() */
	bool overwrite;		     /* STACKPROF_OVERWRITE=1: replace an existing STACKPROF_OUT */
	bool python;		     /* STACKPROF_PYTHON=0: no Python frames (default on) */
	struct sp_schedule schedule; /* STACKPROF_SCHEDULE=wait,warmup,active[,repeat] */
};

/* Fills cfg from the environment. Never fails: bad values keep defaults. */
void sp_config_load(struct sp_config *cfg);

#endif
