/*
 * folded.h - stacks as sequences of labels, merged by text: the shape of
 * flamegraph.pl's input, shared by collapse, diff --collapsed and the SVG.
 *
 * Model stacks that print the same (two lines of one function under
 * --frame func, say) merge here into one folded stack. A folded set holds
 * one or two sides (base and new, for differential output), each with its
 * weight and sample count per stack. Not async-signal-safe.
 */
#ifndef SP_EXPORT_FOLDED_H
#define SP_EXPORT_FOLDED_H

#include <stddef.h>
#include <stdint.h>

#include "export/label.h"
#include "export/model.h"

struct sp_fstack {
	uint32_t n;
	uint32_t off;	       /* label ids at folded->ids + off, root first */
	uint64_t weight_ns[2]; /* [0] the first model, [1] the second */
	uint64_t samples[2];
};

struct sp_folded {
	struct sp_labels *labels; /* borrowed */
	struct sp_fstack *stacks;
	size_t n_stacks;
	uint32_t *ids;
	uint64_t total_ns[2];
	uint64_t total_samples[2];
};

/*
 * Folds m into side (0 or 1) of f, labelling with f->labels. Stacks equal by
 * label text merge, across sides too. 0 or -ENOMEM.
 */
int sp_folded_add(struct sp_folded *f, const struct sp_model *m, int side);

/*
 * Sorts the stacks by label text, frame by frame from the root, which is
 * the order flamegraph.pl's flow merge needs. 0 or -ENOMEM.
 */
int sp_folded_sort(struct sp_folded *f);

void sp_folded_init(struct sp_folded *f, struct sp_labels *labels);
void sp_folded_release(struct sp_folded *f);

#endif
