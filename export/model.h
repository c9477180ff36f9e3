/*
 * model.h - a profile after symbolization: interned frames, merged stacks,
 * samples and threads. Every output format is written from this.
 *
 * Building a model resolves each distinct PC of the raw profile once, expands
 * inlined frames into frames of their own, puts named ranges (the
 * record_function analogue) above the native stack and, on request, the
 * thread as the root. Stacks are stored root first and merged: two samples
 * whose frames are identical share one stack.
 *
 * Strings in frames are borrowed from the symbolizer and the model; they live
 * until sp_model_free(). Not async-signal-safe.
 */
#ifndef SP_EXPORT_MODEL_H
#define SP_EXPORT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/profile.h"
#include "symbolize/symbolize.h"

/* Frame kinds beyond the symbolizer's enum sp_frame_kind. */
#define SP_MFRAME_RANGE	 100 /* a named range: func is the range name */
#define SP_MFRAME_THREAD 101 /* a per-thread root: func is "name-tid" */
#define SP_MFRAME_TRUNC	 102 /* marks a stack cut at max depth: func is "[truncated]" */
#define SP_MFRAME_UNWERR 103 /* marks a stack the unwinder stopped early: "[unwind error]" */
#define SP_MFRAME_PYTHON 104 /* a Python frame: func is its qualname, file and line its source */
/* a per-process root of a merged model (merge.h): func is "<program> (pid N)" */
#define SP_MFRAME_PROCESS 105

/* Whether f is code (native or Python): it has a function, and maybe a
 * file, a line and a module. Ranges, thread roots and markers are not. */
#define sp_mframe_is_code(f) ((f)->kind < SP_MFRAME_RANGE || (f)->kind == SP_MFRAME_PYTHON)

struct sp_mframe {
	const char *func;
	const char *file; /* NULL if unknown */
	unsigned line;
	const char *module; /* basename, NULL if none; a Python frame's module name */
	unsigned def_line;  /* a Python frame's function's first line (co_firstlineno), else 0 */
	/* a Python frame's file as torch.profiler names it, by its import path
	 * ("torch/nn/modules/conv.py"); NULL where whole paths were asked for */
	const char *import_path;
	uint64_t offset;
	int kind; /* enum sp_frame_kind or SP_MFRAME_* */
};

struct sp_mstack {
	uint32_t n;
	uint32_t *frames; /* indexes into model->frames, root first */
	uint32_t *locs;	  /* parallel to frames: model->locs index + 1, 0 for synthetic frames */
	uint64_t weight_ns;
	uint64_t samples;
};

/*
 * One distinct raw address and the frames it resolved to (several when code
 * was inlined there). pprof wants these as its Locations. When two raw
 * stacks merge into one model stack, the stack keeps the locations of the
 * first one seen.
 */
struct sp_mloc {
	uint64_t addr;	  /* as recorded: return addresses are not adjusted */
	int32_t module;	  /* index into prof->modules, -1 when in none */
	uint32_t n;	  /* frames at this address */
	uint32_t *frames; /* model->frames indexes, outermost (the real function) first */
};

struct sp_msample {
	uint32_t thread; /* index into model->threads */
	uint32_t stack;	 /* index into model->stacks */
	uint32_t range;	 /* raw range id, 0 for none */
	uint64_t time_ns;
	uint64_t weight_ns;
};

struct sp_mthread {
	int32_t tid;
	const char *name; /* "" if the thread was never named */
	uint64_t weight_ns;
	uint64_t samples;
};

struct sp_model_opts {
	unsigned sym_flags;  /* SP_SYM_* */
	bool per_thread;     /* root every stack at a thread frame */
	bool no_ranges;	     /* leave named ranges out */
	const int32_t *tids; /* keep only these threads (n_tids > 0) */
	size_t n_tids;
	const char *range;	/* keep only samples inside a range of this name */
	const char *search_dir; /* extra directory to look for modules by basename */
	const char *cache_dir;	/* build-id cache for rebuilt or missing modules, or NULL */
	bool all_samples;	/* keep samples outside the profile's windows too */
	/* File names in frames: these prefixes are removed from their start (the
	 * first that matches), and with short_paths build trees too (see
	 * sp_model_short_path). */
	const char *const *strip_prefixes;
	size_t n_strip_prefixes;
	bool short_paths;
	bool whole_paths; /* --strip-path none: even PyTorch-style frames keep them */
	/* keep the Python interpreter's own frames between Python frames
	 * (the eval loop, calls): for people debugging CPython itself */
	bool python_plumbing;
	/* module paths without their module's class ("features/0/1", not
	 * "features/0/1 (BatchNorm2d)") */
	bool module_bare;
	/* the event kind to keep, by name (struct sp_prof_event); NULL: cpu.
	 * A model holds one kind: weights of two kinds are in different units */
	const char *event;
};

/* Samples of a filtered-out thread or range, and samples of another event
 * kind, are dropped before anything is counted: totals, threads and stacks
 * describe what was kept. Every weight_ns of a model is in its event's
 * unit: CPU ns for cpu (the name weight_ns is cpu's, the first kind).
 *
 * A profile whose program opened windows (stackprof_window_begin(), Python's
 * stackprof.profile()) asked to be seen through them: unless all_samples is
 * set, samples outside every window are dropped the same way, and counted in
 * outside_windows. */

struct sp_model {
	const struct sp_profile *prof; /* borrowed */
	struct sp_symbolizer *sym;     /* owned */
	struct sp_mframe *frames;
	size_t n_frames;
	struct sp_mstack *stacks;
	size_t n_stacks;
	struct sp_msample *samples; /* in profile order */
	size_t n_samples;
	struct sp_mthread *threads;
	size_t n_threads;
	struct sp_mloc *locs;
	size_t n_locs;
	uint64_t total_weight_ns;
	uint64_t total_samples;
	uint64_t outside_windows; /* samples dropped for being outside every window */
	bool windowed;		  /* only the profile's windows were kept */
	/* the kind of every sample kept: borrowed from prof; NULL when prof
	 * declares no kind of the name asked for (then the model is empty) */
	const struct sp_prof_event *event;
	bool module_classes; /* module paths end with their module's class */

	/* private to model.c */
	uint32_t *pool_;
	char **strs_;
	size_t n_strs_;
};

/*
 * Symbolizes and aggregates prof. prof must outlive the model. Returns NULL
 * with errno set on failure (allocation). Problems finding binaries are not
 * failures: see sp_symbolizer_warnings(model->sym).
 */
struct sp_model *sp_model_build(const struct sp_profile *prof, const struct sp_model_opts *opts);

void sp_model_free(struct sp_model *m);

/*
 * Sample indexes sorted by thread, then time; profile order breaks ties
 * (the timelines of chrome.c and speedscope.c). malloc'd, NULL if out of
 * memory; the caller frees.
 */
uint32_t *sp_model_samples_by_thread(const struct sp_model *m);

/*
 * A Python file's path as Python imports it, the way torch.profiler prints
 * it (it strips every sys.path entry): the part under site-packages or
 * dist-packages ("torch/nn/modules/conv.py"), under the standard library
 * ("threading.py", "json/decoder.py"); elsewhere (PYTHONPATH, a source
 * tree) from the outermost directory above it that holds an __init__.py,
 * if the file is still there to look ("stackprof/torch.py", not
 * "torch.py"), else its file name ("infer.py"); a pseudo-file ("<string>")
 * whole. Borrowed: a pointer into file.
 */
const char *sp_model_python_path(const char *file);

/*
 * The file name o shows for path: path itself, or a pointer into it past a
 * prefix that o strips. With o->short_paths, also past a build tree's root,
 * so that the path reads from the source tree's top:
 *   /build/reproducible-path/python3.11-3.11.2/Python/ceval.c  Python/ceval.c
 *   /build/glibc-6Vb2a7/glibc-2.36/nptl/pthread_create.c     nptl/pthread_create.c
 *   /usr/src/debug/pkg-1.0/src/a.c                            src/a.c
 *   ./nptl/./nptl/pthread_create.c                            nptl/pthread_create.c
 *   $PWD/src/a.c                                              src/a.c
 * Returns NULL for NULL.
 */
const char *sp_model_short_path(const struct sp_model_opts *o, const char *path);

/* Thread label "name-tid", or "tid" when unnamed, into out; returns out. */
char *sp_model_thread_label(const struct sp_mthread *t, char *out, size_t len);

/*
 * m's event kind, which every output names and measures by. The unit of
 * m's weights ("ns", "bytes", "count", ...) and the kind's name ("cpu",
 * "user"): "ns" and "cpu" for a model of no kind. Borrowed from m's profile.
 */
const char *sp_model_unit(const struct sp_model *m);
const char *sp_model_event_name(const struct sp_model *m);

/* Whether m is of kind cpu, the default, which outputs call "CPU" as they
 * did before there were other kinds. */
bool sp_model_is_cpu(const struct sp_model *m);

/* Whether m's weights are nanoseconds (cpu, wall): times, printed as times
 * and drawn on a timeline; other kinds' weights are amounts. */
bool sp_model_is_timed(const struct sp_model *m);

#endif
