/*
 * schedule.h - the step schedule's text form, "wait,warmup,active[,repeat]"
 * (torch.profiler.schedule), parsed alike by the sampler (STACKPROF_SCHEDULE)
 * and the CLI (`run --schedule`), so that the CLI refuses exactly what the
 * library would ignore.
 */
#ifndef SP_FORMAT_SCHEDULE_H
#define SP_FORMAT_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

/* The largest number any of the four fields may hold. */
#define SP_SCHEDULE_MAX 1000000000u

/* A torch.profiler.schedule: skip `wait` steps, sample `warmup` + `active`, repeat. */
struct sp_schedule {
	bool set;
	uint32_t wait, warmup, active, repeat; /* repeat 0: forever */
};

/*
 * Parses "wait,warmup,active[,repeat]": three or four decimal numbers (digits
 * only: no sign, no space), each at most SP_SCHEDULE_MAX, active > 0. 0 and
 * *out filled (set true), or -EINVAL and *out untouched. Not signal-safe.
 */
int sp_schedule_parse(const char *s, struct sp_schedule *out);

#endif
