/*
 * fork.h - the fork hooks. Every lock of stackprof's is taken before fork,
 * so nothing it guards is half-written in the child; the child
 * re-initializes them, profiles itself into a file of its own (PATH.<pid>)
 * and re-arms a timer for the thread that forked. Not signal-safe.
 */
#ifndef SP_SAMPLER_FORK_H
#define SP_SAMPLER_FORK_H

/* Registers the hooks with pthread_atfork. 0 or -errno. */
int sp_fork_init(void);

#endif
