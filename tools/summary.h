/*
 * summary.h - the short report `stackprof run` prints and `stackprof info`
 * shares: counts, the timer and its achieved rate, how many stacks reached a
 * thread root, and the top functions by self time.
 */
#ifndef SP_TOOLS_SUMMARY_H
#define SP_TOOLS_SUMMARY_H

#include <stdbool.h>
#include <stdio.h>

#include "export/model.h"
#include "format/profile.h"

struct sp_summary {
	uint64_t samples, weight_ns, cpu_ns_by_threads; /* of the cpu samples only */
	uint64_t scanned; /* samples with a frame found by scanning the stack */
	size_t threads;
	double achieved_hz;	/* samples per CPU-second of a sampled thread */
	double rooted_fraction; /* samples whose outermost frame is a thread root */
	double unwind_err_fraction;
};

/* Computes the figures; m may be NULL (no symbols: rooted_fraction is then -1). */
void sp_summary_compute(const struct sp_profile *p, const struct sp_model *m, struct sp_summary *s);

/* Prints the counts block, prefixed by "prefix" on each line. */
void sp_summary_print_counts(FILE *f, const struct sp_profile *p, const struct sp_summary *s,
			     const char *prefix);

/* Whether the program ended itself by a signal after finishing its profile
 * (Python after KeyboardInterrupt); its name ("SIGINT") into out. */
bool sp_summary_end_signal(const struct sp_profile *p, char *out, size_t len);

/* Prints the top n functions by self time from m. */
void sp_summary_print_top(FILE *f, const struct sp_model *m, size_t n, const char *prefix);

/*
 * Prints one hint line per known runtime library (OpenMP's) that holds at
 * least a tenth of m's self time: time there is the runtime's own (the
 * program's parallel regions are outlined into the program), most often
 * idle workers spin-waiting, and the line names the knobs. The libraries
 * are recognised by their file name (libgomp.so*, libomp.so*,
 * libiomp5.so*), so a stripped build is recognised as well.
 */
void sp_summary_print_hints(FILE *f, const struct sp_model *m, const char *prefix);

/* Whether a function name is where a thread's stack starts (_start, clone3, start_thread...). */
int sp_summary_is_root(const char *func);

/*
 * stackprof's own CPU, "0.52% of the sampled CPU: handler 3.1ms, writer
 * 5.0ms, set-up 1.1ms", into out; false for a profile from before the
 * writer and set-up were counted.
 */
bool sp_summary_own_cpu(const struct sp_profile *p, const struct sp_summary *s, char *out,
			size_t len);

/* How the timer placed its samples: "random periods" or "fixed period". */
const char *sp_summary_periods(const struct sp_profile *p);

/* What sampling cost the program's threads per sample, when the run
 * measured the host's timer interrupt (stats.timer_irq_ns): the interrupt
 * plus the handler's body, and as a share of the sampled CPU. false if
 * not measured. */
bool sp_summary_sample_cost(const struct sp_profile *p, const struct sp_summary *s,
			    double *per_sample_ns, double *share);

#endif
