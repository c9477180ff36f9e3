/*
 * merge.h - a model of several models: the profiles of one run's
 * processes (a Pool's parent and its workers, PATH and its PATH.<pid>
 * children) read as one.
 *
 * Each profile is symbolized into its own model first: processes load
 * different modules at different addresses, so only symbolized frames can
 * be compared. The merge then interns every source model's frames by
 * content and their stacks by frame sequence, so that the same function
 * in two processes is one frame, and the same stack one stack whose
 * weight and samples are the sum of the sources'. Samples and threads are
 * concatenated in source order; totals are sums.
 *
 * With per_process, every stack gets a root frame of kind
 * SP_MFRAME_PROCESS naming its process, "python3 (pid 4242)", above the
 * thread root if the sources have one, so that the views still tell the
 * processes apart.
 *
 * The sources may be views (view.h) of their models: an operator or
 * module-path view needs its own profile, so a caller that wants one views
 * each model, then merges the views.
 *
 * What a merged model does not have: addresses (n_locs is 0, each stack's
 * locs are zeros: pprof needs one profile's locations) and range ids
 * (samples' range is 0: ids are per profile). Its prof and sym are the
 * first source's, for writers that show a header (the command line of the
 * flame graph's subtitle).
 *
 * The merge borrows from its sources (strings, threads' names, prof):
 * free it first. Not async-signal-safe.
 */
#ifndef SP_EXPORT_MERGE_H
#define SP_EXPORT_MERGE_H

#include <stdbool.h>
#include <stddef.h>

#include "export/model.h"

struct sp_merge;

/*
 * The merge of src[0..n) (n >= 1), or NULL with errno set (ENOMEM,
 * EINVAL for n == 0).
 */
struct sp_merge *sp_merge_new(const struct sp_model *const *src, size_t n, bool per_process);

/* The merge as a model, for any writer; borrowed, valid until sp_merge_free(). */
const struct sp_model *sp_merge_model(const struct sp_merge *g);

/* Frees g (NULL is fine). */
void sp_merge_free(struct sp_merge *g);

#endif
