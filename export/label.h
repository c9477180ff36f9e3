/*
 * label.h - the text of a frame in every output, and label interning.
 *
 * Three styles, as the issue asks for export_stacks users:
 *   SP_LABEL_FUNC_LINE  "conv2d (conv.c:42)"   the default: shows the code
 *   SP_LABEL_FUNC       "conv2d"               one node per function
 *   SP_LABEL_PYTORCH    "conv.c(42): conv2d"   torch.profiler's stack entries
 * In the PyTorch style a Python frame's file is its import path, as
 * torch.profiler prints it ("torch/nn/modules/conv.py(454): Conv2d._conv_forward").
 * Frames without a file print their function only; range, thread and
 * "[truncated]" frames print their name.
 *
 * A label table interns label strings so that frames printing the same text
 * become one node (flamegraph.pl merges by text too), and ranks them
 * alphabetically for stable, sorted output. Not async-signal-safe.
 */
#ifndef SP_EXPORT_LABEL_H
#define SP_EXPORT_LABEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/buf.h"
#include "export/model.h"

enum sp_label_style {
	SP_LABEL_FUNC_LINE = 0,
	SP_LABEL_FUNC,
	SP_LABEL_PYTORCH,
};

struct sp_label_opts {
	enum sp_label_style style;
	bool inline_mark; /* append "_[i]" to inlined frames (perf/flamegraph.pl's mark) */
	bool folded;	  /* escape for collapsed stacks (sp_label_append_folded) */
};

/*
 * Parses "func", "func (file:line)" (also "func-line", "default") or
 * "pytorch" (also "file(line): func"). 0 or -EINVAL.
 */
int sp_label_style_parse(const char *s, enum sp_label_style *out);

/* Appends f's text in style st to b (not NUL-terminated). */
void sp_label_append(struct sp_buf *b, const struct sp_mframe *f, enum sp_label_style st);

/*
 * Appends n bytes of s with every space, ';', tab, newline and other control
 * character replaced by '_': the export_stacks rule, which also keeps
 * flamegraph.pl's "stack SPACE count" split unambiguous.
 */
void sp_label_append_folded(struct sp_buf *b, const char *s, size_t n);

struct sp_labels;

/* A new, empty label table, or NULL. */
struct sp_labels *sp_labels_new(const struct sp_label_opts *o);
void sp_labels_free(struct sp_labels *l);

/*
 * Labels every frame of m. Returns a malloc'd array of m->n_frames label
 * ids (the caller frees it), or NULL on allocation failure. Several models
 * may be mapped into one table; their equal labels get equal ids.
 */
uint32_t *sp_labels_map(struct sp_labels *l, const struct sp_model *m);

/* Interns n bytes of s as a label as-is; returns its id or -ENOMEM. */
int64_t sp_labels_intern(struct sp_labels *l, const char *s, size_t n);

/* The id of the label equal to n bytes of s, or -1 when there is none. */
int64_t sp_labels_find(const struct sp_labels *l, const char *s, size_t n);

size_t sp_labels_count(const struct sp_labels *l);

/* Borrowed, NUL-terminated; valid until the table is freed or grows. */
const char *sp_labels_text(const struct sp_labels *l, uint32_t id);

/*
 * Alphabetical (byte order) rank of each label, computed on the first call
 * after labels were added. Returns a borrowed array indexed by label id, or
 * NULL on allocation failure.
 */
const uint32_t *sp_labels_ranks(struct sp_labels *l);

#endif
