/*
 * steps.c - a toy event source, and the example of one: a sample of kind
 * user at every stackprof_step(), weight 1, the step's number as payload.
 * It is this one file: it registers itself, and captures through the one
 * capture path with its own kind (docs/ARCHITECTURE.md, "To add an event
 * source"). tests/CMakeLists.txt builds it into libstackprof-steps.so,
 * the preload library with this source beside the CPU timer; t0064 runs it.
 */
#include "format/profile.h"
#include "sampler/capture/handler.h"
#include "sampler/core/source.h"

static void sp_steps_step(long step)
{
	/* -EAGAIN while sampling is off (the API, the schedule): no sample */
	sp_capture_here(SP_EVENT_USER, 1, (uint64_t)step);
}

static const struct sp_source sp_steps = {
    .name = "steps",
    .kind = SP_EVENT_USER,
    .step = sp_steps_step,
};

__attribute__((constructor(SP_SOURCE_PRIORITY))) static void sp_steps_register(void)
{
	sp_source_register(&sp_steps);
}
