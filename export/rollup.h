/*
 * rollup.h - self and total time per function, file, module or thread.
 *
 * The aggregation behind `top` and `diff`: self counts samples whose leaf
 * frame has the key, total counts samples where any frame has it, once per
 * sample however often it recurs. Range, thread and "[truncated]" frames
 * count as functions (named ranges are what record_function users look
 * for) but have no file or module. By operator and by module path, the
 * keys are the frames of the model's view (view.h): self time is the
 * innermost operator's or module's, total time every enclosing one's.
 * Not async-signal-safe.
 */
#ifndef SP_EXPORT_ROLLUP_H
#define SP_EXPORT_ROLLUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/model.h"

enum sp_rollup_by {
	SP_ROLLUP_FUNCTION = 0,
	SP_ROLLUP_FILE,	       /* source file; "[module]" or "[unknown]" when there is none */
	SP_ROLLUP_MODULE,      /* module basename; "[jit]" for JIT code, "[unknown]" else */
	SP_ROLLUP_THREAD,      /* "name-tid": self and total are the thread's samples */
	SP_ROLLUP_OP,	       /* aten operator: the view of view.h, "[no operator]" outside any */
	SP_ROLLUP_MODULE_PATH, /* nn.Module path (view.h): "ResNet/layer1/0/conv1", "[no module]" */
	SP_ROLLUP_LINE,	       /* a line of code: "func (file:line)" */
	/* Python code only, as py-spy counts it: self time goes to the
	 * innermost Python frame of each sample (with the native code it
	 * called), total to every Python frame; "[no Python frame]" else */
	SP_ROLLUP_PYTHON,      /* a Python function: "qualname (file)" */
	SP_ROLLUP_PYTHON_LINE, /* a Python line: "qualname (file:line)" */
};

struct sp_rollup_row {
	const char *name;   /* owned by the rollup */
	const char *thread; /* per thread: the thread's "name-tid" (owned), else NULL */
	uint64_t self_ns, total_ns;
	uint64_t self_samples, total_samples;
};

struct sp_rollup {
	struct sp_rollup_row *rows; /* in first-seen order */
	size_t n_rows;
	uint64_t total_ns, total_samples;
	struct sp_labels *names_;   /* private: interned row keys */
	struct sp_labels *threads_; /* private: interned thread labels */
};

/* The key's noun, plural ("functions", "operators") or singular ("function"). */
const char *sp_rollup_by_noun(enum sp_rollup_by by, bool plural);

/* Parses "function", "file", "module", "thread", "op", "module-path",
 * "line", "python" or "python-line". 0 or -EINVAL. */
int sp_rollup_by_parse(const char *s, enum sp_rollup_by *out);

/* Every key sp_rollup_by_parse takes, for messages. */
#define SP_ROLLUP_KEYS                                                                             \
	"function, file, line, module, thread, op, module-path, python or python-line"

/*
 * Fills r from m. With per_thread, and m built with per_thread (its stacks
 * rooted at thread frames), a key is a row per thread that has it, and the
 * thread frames are no keys themselves; by thread, rows are threads
 * either way. A merged model's process roots (merge.h) group the same
 * way: "python3 (pid 7)", or "python3 (pid 7)/name-tid" above a thread. 0 or -ENOMEM; release r
 * either way.
 */
int sp_rollup_build(struct sp_rollup *r, const struct sp_model *m, enum sp_rollup_by by,
		    bool per_thread);

void sp_rollup_release(struct sp_rollup *r);

/* Index of the row named name, or -1; of a rollup built without per_thread. */
int64_t sp_rollup_find(const struct sp_rollup *r, const char *name);

#endif
