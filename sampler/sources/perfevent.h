/*
 * perfevent.h - opening a perf_event task clock safely, for the two CPU
 * timers built on it (perf.c: perf-task-clock; sigtrap.c: perf-sigtrap).
 *
 * Before any perf_event_open, a seccomp filter is looked for in
 * /proc/self/status: under one, the call is first tried in a short-lived
 * child process, since a sandbox may kill the process for it.
 */
#ifndef SP_SAMPLER_PERFEVENT_H
#define SP_SAMPLER_PERFEVENT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct sp_fd;

/* Whether this process is traced (TracerPid is not 0). */
bool sp_perfev_traced(void);

/* Whether the event (with attr.sigtrap: trap) may be opened now, under
 * the seccomp state of now. 0 or -errno. */
int sp_perfev_probe(bool trap);

/* The task clock on thread tid (0: the caller) at sp_g.period_ns; user
 * time only where perf_event_paranoid >= 2 allows no more. trap: sigtrap
 * with our cookie, inherited by the threads the caller creates. fd, or
 * -errno. */
int sp_perfev_open(pid_t tid, bool trap);

/* A page of the event's mapping, which keeps the event alive if its
 * descriptor is closed under us (NULL if it can't be mapped); and its
 * release. */
void *sp_perfev_pin(int fd);
void sp_perfev_unpin(void **pin);

/* The event's id, which tells its descriptor from anything reusing the number. */
uint64_t sp_perfev_id(int fd);

/* ioctl on f's event if f still names the event with id; false if not. */
bool sp_perfev_ioctl(struct sp_fd *f, uint64_t id, unsigned long req);

/* Closes f's event, or lets go of the number if it names something else now. */
void sp_perfev_close(struct sp_fd *f, uint64_t id);

/* In a fork child: the probe's lock may be held by a thread left behind. */
void sp_perfev_atfork_child(void);

#endif
