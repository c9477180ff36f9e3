/*
 * profile.h - the raw stackprof profile: record layout, the profile writer
 * (sp_prof_writer_*) and the reader (sp_profile_*).
 *
 * The sampler writes a profile while the target runs; the CLI reads it after
 * the run. The byte layout is documented in docs/FORMAT.md. In short:
 *
 *   "STKPROF\n"                      8-byte magic, uncompressed
 *   zlib stream of records           each: u8 type, uleb128 length, payload
 *
 * The stream is flushed with Z_SYNC_FLUSH at every sp_prof_writer_flush(),
 * and each flush is preceded by a CHECKPOINT record carrying the CRC-32 of
 * all record bytes since the previous checkpoint. A file cut off anywhere
 * is therefore readable up to its last flush, and corruption inside a
 * flushed block is caught by the CRC even where zlib's own check (only at
 * stream end) is not reached.
 *
 * Nothing here is async-signal-safe: the sampler calls the profile writer
 * from its writer thread only (sampler/writer/writer.h, sp_writer_*: the thread
 * that drains the rings, a different thing from the sp_prof_writer that
 * encodes its records).
 */
#ifndef SP_FORMAT_PROFILE_H
#define SP_FORMAT_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_PROFILE_MAGIC     "STKPROF\n"
#define SP_PROFILE_MAGIC_LEN 8
/* 2 added STACK_DIFF and SAMPLES, 3 EVENT and EVENT_SAMPLES (docs/FORMAT.md);
 * version 1 and 2 files are still read: all their samples are cpu samples */
#define SP_PROFILE_VERSION     3
#define SP_PROFILE_VERSION_MIN 1

enum sp_rec_type {
	SP_REC_HEADER = 1,
	SP_REC_MODULE = 2,
	SP_REC_THREAD = 3,
	SP_REC_STACK = 4,
	SP_REC_SAMPLE = 5,
	SP_REC_RANGE = 6,
	SP_REC_JIT = 7,
	SP_REC_STATS = 8,
	SP_REC_CHECKPOINT = 9,
	SP_REC_UNLOAD = 10,
	SP_REC_MARK = 11,
	SP_REC_PYCODE = 12,
	SP_REC_PYINFO = 13,
	SP_REC_STACK_DIFF = 14,
	SP_REC_SAMPLES = 15,
	SP_REC_EVENT = 16,
	SP_REC_EVENT_SAMPLES = 17,
};

/* Module flags. */
#define SP_MOD_VDSO   0x1u /* image bytes are the vDSO copied at run time */
#define SP_MOD_MAIN   0x2u /* the main executable */
#define SP_MOD_DLOPEN 0x4u /* loaded by dlopen() after start */

/* Stack flags. */
#define SP_STACK_TRUNCATED   0x1u /* deeper than max_depth: outer frames cut */
#define SP_STACK_UNWIND_ERR  0x2u /* unwinder stopped early on an error */
#define SP_STACK_JIT_SCAN    0x4u /* a frame was found by stack scanning */
#define SP_STACK_PY_UNPLACED 0x8u /* some Python frames follow the native ones, unplaced */

/* Range flags (the same values as STACKPROF_RANGE_* in stackprof.h). */
#define SP_RANGE_MODULE 0x1u /* pushed for an nn.Module call (stackprof.torch.label_modules) */

/* Mark kinds. */
#define SP_MARK_WINDOW_BEGIN 1u /* stackprof_window_begin(): a profile() block opens */
#define SP_MARK_WINDOW_END   2u /* stackprof_window_end(): it closes */

/*
 * A word of a STACK record that is not a code address but a Python frame
 * (its tag is in the top byte, which no user-space address has): the
 * instruction offset in code units (24 bits, SP_PYFRAME_NO_INSTR if not
 * known) and the PYCODE record's id (0: a frame that could not be read).
 * The sampler puts each Python frame where the interpreter ran it: just
 * outside the native frames it called, just inside the eval loop's frame.
 */
#define SP_PYFRAME_TAG	    0xfe00000000000000ull
#define SP_PYFRAME_MASK	    0xff00000000000000ull
#define SP_PYFRAME_NO_INSTR 0xffffffu

static inline bool sp_pc_is_pyframe(uint64_t w)
{
	return (w & SP_PYFRAME_MASK) == SP_PYFRAME_TAG;
}

static inline uint64_t sp_pyframe_word(uint32_t code, uint32_t instr)
{
	return SP_PYFRAME_TAG | ((uint64_t)(instr & SP_PYFRAME_NO_INSTR) << 32) | code;
}

static inline uint32_t sp_pyframe_code(uint64_t w)
{
	return (uint32_t)w;
}

static inline uint32_t sp_pyframe_instr(uint64_t w)
{
	return (uint32_t)(w >> 32) & SP_PYFRAME_NO_INSTR;
}

/* Stats flags. */
#define SP_STATS_FINAL	0x1u /* written by a clean shutdown */
#define SP_STATS_EXEC	0x2u /* written just before exec() */
#define SP_STATS_SIGNAL 0x4u /* with FINAL: the process then ended itself by a signal */
/* with SIGNAL: the signal came from outside (another process, a terminal) at
 * its default action; the library took it, finished, then let it end the process */
#define SP_STATS_SIGNAL_OUTSIDE 0x8u

struct sp_prof_header {
	uint32_t version;
	int32_t pid;
	int32_t ppid;
	uint64_t start_realtime_ns; /* CLOCK_REALTIME at start */
	uint64_t start_mono_ns;	    /* CLOCK_MONOTONIC at start; times are relative */
	uint32_t freq_hz;	    /* requested rate per thread */
	uint32_t max_depth;
	char *timer;   /* "posix-cputimer", "perf-task-clock", "itimer-prof" */
	char *cmdline; /* arguments joined by spaces */
	char *exe;     /* /proc/self/exe at start */
	char *hostname;
};

struct sp_prof_module {
	uint32_t id;
	uint32_t flags;
	uint64_t start; /* lowest mapped address of the module (load bias + min vaddr) */
	uint64_t end;
	uint64_t bias; /* load bias: runtime address - ELF virtual address */
	uint64_t time_ns;
	char *path;
	uint8_t build_id[64];
	uint32_t build_id_len;
	uint8_t *image; /* copied ELF image (vDSO); NULL otherwise */
	size_t image_len;
	uint64_t unload_ns; /* 0 while still loaded */
};

struct sp_prof_thread {
	int32_t tid;
	uint64_t time_ns;
	char *name;
};

struct sp_prof_stack {
	uint32_t id;
	uint32_t flags;
	uint32_t depth;
	uint64_t *pcs; /* pcs[0] is the interrupted PC, then return addresses */
};

/*
 * An event kind: what a sample is, and the unit of its weight. Samples of
 * different kinds are never added together (their units differ). Kind 0 is
 * cpu and needs no EVENT record: every sample of a SAMPLE or SAMPLES record,
 * and every sample of a version 1 or 2 file, is a cpu sample. Any other kind
 * is declared by an EVENT record before its first EVENT_SAMPLES record, so
 * a reader lists a kind it has never heard of by the name the file gives.
 */
struct sp_prof_event {
	uint32_t id;	/* what samples' event field says; 0 is cpu */
	uint32_t flags; /* SP_EVENT_* */
	char *name;	/* "cpu", "wall", "alloc", "free", "user", or a later source's */
	char *unit;	/* of the weight: "ns", "bytes", "count", ... */
};

#define SP_EVENT_PAYLOAD 0x1u /* each sample carries a payload word */
/* the weight is time the thread spent up to the sample's time (cpu, wall):
 * the file stores the time less the weight, which is short */
#define SP_EVENT_TIMED 0x2u

/* The kinds stackprof names, with their ids in the files it writes (a file
 * may give other ids: readers go by the EVENT record's name). */
enum sp_event_kind {
	SP_EVENT_CPU = 0,  /* weight: CPU ns (the default) */
	SP_EVENT_WALL = 1, /* weight: wall ns; payload: the thread's state */
	SP_EVENT_ALLOC =
	    2, /* weight: the bytes the sample stands for; payload: the block's address */
	SP_EVENT_FREE = 3, /* weight: as its alloc sample's; payload: the block's address */
	SP_EVENT_USER = 4, /* the API's own source (stackprof_step()); weight: its unit */
	SP_EVENT_BUILTIN_COUNT,
};

/* The built-in kind with this id (0 <= id < SP_EVENT_BUILTIN_COUNT), or with
 * this name (NULL: by id), else NULL. Borrowed, static. */
const struct sp_prof_event *sp_prof_event_builtin(uint32_t id);
const struct sp_prof_event *sp_prof_event_builtin_named(const char *name);

struct sp_prof_sample {
	int32_t tid;
	uint32_t stack;	    /* stack id */
	uint32_t range;	    /* range node id, 0 for none */
	uint32_t event;	    /* event id (struct sp_prof_event); 0: cpu */
	uint64_t time_ns;   /* since start_mono_ns */
	uint64_t weight_ns; /* what this sample stands for, in its event's unit: CPU ns for cpu */
	uint64_t payload;   /* the event's word (SP_EVENT_PAYLOAD), else 0 */
};

/* A named range node. Ranges nest: parent is 0 at the outermost. */
struct sp_prof_range {
	uint32_t id;
	uint32_t parent;
	char *name;
	/* a module range's class (BatchNorm2d), or NULL: the writer sends
	 * "name\x1fclass" and the reader splits it; borrowed from name's memory */
	const char *cls;
	uint32_t flags;	 /* SP_RANGE_*; 0 in files written before flags existed */
	uint32_t anchor; /* where it was pushed: SP_ANCHOR_* below; 0 for the root */
};

/*
 * A range's anchor is the frame that pushed it, counted from the root of
 * the thread's stack, as the raw stacks of its samples count: the range
 * belongs just inside that frame. SP_ANCHOR_PYTHON counts only the Python
 * frames (tagged PCs), else only the native ones. 0: the root (files
 * written before anchors existed, or a push whose place was unknown).
 */
#define SP_ANCHOR_PYTHON	       0x1u
#define SP_ANCHOR_MAKE(frames, python) (((frames) << 1) | ((python) ? SP_ANCHOR_PYTHON : 0u))
#define SP_ANCHOR_FRAMES(a)	       ((a) >> 1)

/* A process-wide event at a point in time. */
struct sp_prof_mark {
	uint32_t kind; /* SP_MARK_*; unknown kinds are kept and ignored */
	uint64_t time_ns;
};

/*
 * A window [begin_ns, end_ns] of the run that the program asked to see,
 * made from a WINDOW_BEGIN mark and the next WINDOW_END. end_ns is
 * UINT64_MAX for a window still open when the profile ends.
 */
struct sp_prof_window {
	uint64_t begin_ns;
	uint64_t end_ns;
};

/* A JIT symbol from a perf-<pid>.map file. */
struct sp_prof_jit {
	uint64_t start;
	uint64_t size;
	char *name;
};

/* A Python code object as it was when a sample first saw it: enough to
 * name its frames and find their lines after it is gone. */
struct sp_prof_pycode {
	uint32_t id;
	uint32_t minor; /* CPython 3.minor: the line table's format */
	int32_t firstlineno;
	uint32_t flags;	    /* SP_PYCODE_* */
	char *name;	    /* co_name, UTF-8 */
	char *qualname;	    /* co_qualname (3.11+), NULL on 3.10 */
	char *filename;	    /* co_filename */
	uint8_t *linetable; /* co_linetable's bytes */
	size_t linetable_len;
};

#define SP_PYCODE_CUT_TABLE 0x1u /* the line table was too long and was cut */
#define SP_PYCODE_CUT_NAME  0x2u /* a name was too long and was cut */

/* The Python interpreter the sampler found, and what it made of it: a new
 * record each time that changes. */
struct sp_prof_pyinfo {
	uint32_t version; /* major << 16 | minor << 8 | micro, 0 if not known */
	uint32_t flags;	  /* SP_PYINFO_* */
	char *module;	  /* the file that holds the interpreter */
	char *status;	  /* one line for people: what runs, or why not */
	uint64_t time_ns;
};

#define SP_PYINFO_ACTIVE 0x1u /* Python frames are read */

struct sp_prof_stats {
	uint32_t flags;
	uint64_t time_ns;
	uint64_t samples;
	uint64_t drops;		/* ring full: sample lost, never blocked */
	uint64_t unwind_errors; /* stacks cut short by an unwinder error */
	uint64_t truncated;	/* stacks deeper than max_depth */
	uint64_t skipped;	/* signals that arrived while unwinding was unsafe */
	uint64_t weight_ns;	/* CPU time covered by the samples */
	uint64_t signals;	/* timer signals handled (incl. overruns as 1) */
	uint64_t overruns;
	char *timer;		/* the timer that really ran */
	uint64_t handler_ns;	/* CPU time spent in the SIGPROF handler, all samples */
	uint64_t throttled;	/* samples skipped because the handler overran its budget */
	uint64_t unwind_fast;	/* frames stepped by stackprof's cached CFI rules */
	uint64_t unwind_slow;	/* frames stepped by libunwind */
	uint64_t unwind_differ; /* STACKPROF_UNWIND=check: samples where the unwinders differ */
	bool unwind_checked;	/* the run was in check mode */
	int32_t signal;		/* SP_STATS_SIGNAL: the signal the process killed itself with */
	uint64_t handler_stack; /* bytes of its own stack the handler used at most (whole pages) */
	uint32_t timer_fallbacks; /* threads given posix-cputimer when perf descriptors ran out */
	uint32_t aside;		  /* times stackprof stood aside while the program had SIGPROF */
	bool randomized;	  /* the timer drew each period at random */
	/* Python frames (issue 16): frames that could not be read (each becomes
	 * an unknown frame), reads of interpreter memory that faulted and were
	 * caught, thread states whose thread_id was not the sampled thread's */
	uint64_t py_unreadable;
	uint64_t py_faults;
	uint64_t py_bad_tstates;
	/* stackprof's own CPU time outside the handler: the writer's work on
	 * its threads (draining, compressing, writing, the final flush), and
	 * set-up on the program's threads (start-up, each thread's attach) */
	uint64_t writer_ns;
	uint64_t setup_ns;
	/* the program's system calls that our signal cut short: they returned
	 * EINTR to it (a timer that signals a thread from outside can reach it
	 * as it waits in poll, nanosleep, epoll_wait or io_uring_enter) */
	uint64_t syscalls_cut;
	/* threads the sampler had no slot for (its thread table was full, or a
	 * thread's buffers could not be mapped): never sampled. missed_ns is
	 * their CPU time, none of which is in the samples */
	uint64_t threads_missed;
	uint64_t missed_ns;
	/* signals of ours that reached a thread stackprof does not sample: one
	 * with no slot, or a raw clone() that runs on another thread's TLS */
	uint64_t stray_signals;
	/* why that timer ran: "auto's first pick", "asked for
	 * (STACKPROF_TIMER=posix)", or what auto passed over and why; and
	 * what one of its interrupts costs the thread it lands on, on this
	 * host (ns, measured by `stackprof run` with an empty handler,
	 * tools/timercost.c; 0 if not measured) */
	char *timer_why;
	uint64_t timer_irq_ns;
};

/* -------------------------------------------------------- profile writer */

struct sp_prof_writer;

/*
 * Starts a profile on fd (already open for writing). Writes the magic.
 * Takes no ownership of fd. Returns NULL on allocation failure.
 */
struct sp_prof_writer *sp_prof_writer_new(int fd);

/* Where a writer's bytes go: writes all n bytes, returns 0 or -errno. */
typedef int (*sp_prof_writer_sink_fn)(void *ctx, const uint8_t *p, size_t n);

/* Starts a profile whose bytes go to sink(ctx, ...) (the sampler keeps its
 * descriptor where the program can't reach it). Writes the magic. */
struct sp_prof_writer *sp_prof_writer_new_sink(sp_prof_writer_sink_fn sink, void *ctx);

/* Each writes one record to the compression buffer. 0 or -errno. */
int sp_prof_writer_header(struct sp_prof_writer *w, const struct sp_prof_header *h);
int sp_prof_writer_module(struct sp_prof_writer *w, const struct sp_prof_module *m);
int sp_prof_writer_unload(struct sp_prof_writer *w, uint32_t module_id, uint64_t time_ns);
int sp_prof_writer_thread(struct sp_prof_writer *w, const struct sp_prof_thread *t);
int sp_prof_writer_stack(struct sp_prof_writer *w, const struct sp_prof_stack *s);
int sp_prof_writer_sample(struct sp_prof_writer *w, const struct sp_prof_sample *s);
/*
 * A STACK_DIFF record: stack s (whole: s->depth frames, innermost first)
 * whose outermost keep frames are those of stack base, written earlier:
 * only its first s->depth - keep frames go to the file. keep <= s->depth
 * and base's depth; the caller has checked that the frames agree.
 */
int sp_prof_writer_stack_diff(struct sp_prof_writer *w, const struct sp_prof_stack *s,
			      uint32_t base, uint32_t keep);
/*
 * n samples of thread tid in time order, their tid fields ignored; period
 * is what a sample usually weighs (the timer's period, or 0), which makes
 * their weights short. cpu samples (event 0) go in a SAMPLES record, each
 * ~7 bytes before compression where a SAMPLE record costs ~14; a run of
 * samples of another kind in an EVENT_SAMPLES record (payload and all),
 * after that kind's EVENT record: written here first for a built-in kind
 * not declared yet. Samples of mixed kinds make a record per run. n >= 1.
 * -EINVAL for an event id neither declared nor built in.
 */
int sp_prof_writer_samples(struct sp_prof_writer *w, int32_t tid, uint64_t period,
			   const struct sp_prof_sample *s, size_t n);
/*
 * An EVENT record: declares e (id 1 to SP_PROF_WRITER_MAX_EVENTS - 1;
 * 0 is cpu, always known) before samples of its kind. Again for the same
 * id: -EEXIST. 0 or -errno.
 */
int sp_prof_writer_event(struct sp_prof_writer *w, const struct sp_prof_event *e);
#define SP_PROF_WRITER_MAX_EVENTS 64
int sp_prof_writer_range(struct sp_prof_writer *w, const struct sp_prof_range *r);
int sp_prof_writer_jit(struct sp_prof_writer *w, const struct sp_prof_jit *j);
int sp_prof_writer_stats(struct sp_prof_writer *w, const struct sp_prof_stats *s);
int sp_prof_writer_mark(struct sp_prof_writer *w, const struct sp_prof_mark *m);
int sp_prof_writer_pycode(struct sp_prof_writer *w, const struct sp_prof_pycode *c);
int sp_prof_writer_pyinfo(struct sp_prof_writer *w, const struct sp_prof_pyinfo *i);

/*
 * Writes a checkpoint and pushes everything so far to the file with
 * Z_SYNC_FLUSH, so that a reader sees all records written before the call
 * even if the process dies right after. 0 or -errno.
 */
int sp_prof_writer_flush(struct sp_prof_writer *w);
/* Records written since the last checkpoint (the last flush). */
uint64_t sp_prof_writer_records(const struct sp_prof_writer *w);

/* Flushes, ends the zlib stream and frees w (NULL is fine). 0 or -errno. */
int sp_prof_writer_close(struct sp_prof_writer *w);

/* Flushes and ends the zlib stream, but frees nothing: for a process about
 * to die, where free() could wait on an allocator lock that the interrupted
 * thread holds. Every later call fails. 0 or -errno. */
int sp_prof_writer_end(struct sp_prof_writer *w);

/* Frees w without writing anything more (after fork in the child). */
void sp_prof_writer_abandon(struct sp_prof_writer *w);

/* Bytes written to the file so far (compressed). */
uint64_t sp_prof_writer_bytes(const struct sp_prof_writer *w);

/* ---------------------------------------------------------------- reader */

enum sp_read_status {
	SP_READ_OK = 0,	       /* complete: ended with a clean zlib stream end */
	SP_READ_TRUNCATED = 1, /* cut off (no stream end): records up to the last checkpoint
				* are kept; error says where the file ends and how many
				* samples that is */
	SP_READ_CORRUPT = 2,   /* bad data: records up to the last good checkpoint are kept;
				* also a whole profile followed by more bytes (two files
				* concatenated), which keeps every record */
};

/* A whole profile in memory. Arrays are in file order; ids index nothing. */
struct sp_profile {
	struct sp_prof_header header;
	struct sp_prof_module *modules;
	size_t n_modules;
	struct sp_prof_thread *threads;
	size_t n_threads;
	struct sp_prof_stack *stacks; /* sorted by id, ids are dense from 1 */
	size_t n_stacks;
	struct sp_prof_sample *samples;
	size_t n_samples;
	/* the event kinds the file declares, in file order after events[0],
	 * which is always cpu (id 0): n_events >= 1 */
	struct sp_prof_event *events;
	size_t n_events;
	struct sp_prof_range *ranges; /* sorted by id, ids are dense from 1 */
	size_t n_ranges;
	struct sp_prof_jit *jits;
	size_t n_jits;
	struct sp_prof_mark *marks; /* in file order */
	size_t n_marks;
	/* made from the marks: sorted by begin_ns, disjoint. None when the
	 * program never opened a window: then the whole run is wanted. */
	struct sp_prof_window *windows;
	size_t n_windows;
	struct sp_prof_pycode *
	    pycodes; /* in file order; ids may repeat (the same code seen by two threads at once) */
	size_t n_pycodes;
	struct sp_prof_pyinfo *pyinfos; /* in file order: the last one says how the run ended */
	size_t n_pyinfos;
	struct sp_prof_stats stats; /* the last stats record */
	bool has_stats;
	enum sp_read_status status;
	char error[512]; /* why status is not SP_READ_OK */
	uint64_t file_bytes;
};

/*
 * Reads the profile at path. Returns NULL with errno set and a message in
 * err (if non-NULL, errlen bytes) when nothing usable could be read: the file
 * is missing, not a stackprof profile, an unknown version, or broken before
 * its header. Otherwise returns the profile, whose status says whether it was
 * complete; a truncated or corrupt profile keeps every record up to the last
 * good checkpoint. Free with sp_profile_free().
 */
struct sp_profile *sp_profile_read(const char *path, char *err, size_t errlen);

void sp_profile_free(struct sp_profile *p);

/* Borrowed lookups; NULL if absent. */
const struct sp_prof_stack *sp_profile_stack(const struct sp_profile *p, uint32_t id);
const struct sp_prof_range *sp_profile_range(const struct sp_profile *p, uint32_t id);
const struct sp_prof_thread *sp_profile_thread(const struct sp_profile *p, int32_t tid);
/* The event kind with this id, or with this name; NULL if p declares none. */
const struct sp_prof_event *sp_profile_event(const struct sp_profile *p, uint32_t id);
const struct sp_prof_event *sp_profile_event_named(const struct sp_profile *p, const char *name);

/* The window that holds time_ns (a sample's time), or NULL; a binary search. */
const struct sp_prof_window *sp_profile_window(const struct sp_profile *p, uint64_t time_ns);

/* The PYCODE record with this id, or NULL. Borrowed. */
const struct sp_prof_pycode *sp_profile_pycode(const struct sp_profile *p, uint32_t id);

#endif
