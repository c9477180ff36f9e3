/*
 * main.h - the library's life: the constructor sets everything up before
 * the first timer is armed; the profile is finished once per process, by
 * the destructor at a normal exit or by exitsig.c just before the process
 * ends itself with a signal. Not signal-safe.
 */
#ifndef SP_SAMPLER_MAIN_H
#define SP_SAMPLER_MAIN_H

/*
 * Stops the timers and writes the final stats: what the destructor does at
 * exit, and what exitsig.c does before the process kills itself with sig
 * (0: a normal exit). Once per process; later calls return at once.
 */
void sp_finish(int sig);

#endif
