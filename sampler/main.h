/*
 * main.h - the library's life: the constructor sets everything up before
 * the first timer is armed; the profile is finished once per process, by
 * the destructor at a normal exit, by exitsig.c just before the process
 * ends itself with a signal, or by exitcall.c in _exit and _Exit. Not
 * signal-safe.
 */
#ifndef SP_SAMPLER_MAIN_H
#define SP_SAMPLER_MAIN_H

/*
 * Stops the timers and writes the final stats: what the destructor does at
 * exit, what exitcall.c does in _exit, and what exitsig.c does before the
 * process kills itself with sig (0: a normal exit or _exit). Once per process; later calls return at once.
 */
void sp_finish(int sig);

#endif
