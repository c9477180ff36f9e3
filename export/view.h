/*
 * view.h - a built model seen the way PyTorch users look at a run: by aten
 * operator (key_averages()) or by nn.Module path (torch.profiler's
 * with_modules, the FX profiling interpreter's per-module table).
 *
 * A view is a model of its own, made from a built model after the fact, so
 * every writer that reads a model reads a view unchanged: the table,
 * top's and diff's rollup, collapse. Its frames are operators or module
 * paths, and each of its stacks is the chain of them on one sample, root
 * first. So, as everywhere else, self time goes to a stack's leaf and total
 * time to every distinct frame on it:
 *
 *   by operator: a sample's operators are the at::_ops::NAME::call frames
 *   on its stack (see ops.h), named aten::NAME. A redispatch of the operator
 *   just entered (the autograd key passing the call on to the backend) is
 *   the same call, not a nested one. Self time goes to the innermost
 *   operator, whatever code runs under it: a kernel with a name, oneDNN's JIT
 *   code, or a stripped libtorch's unnamed "libtorch_cpu.so.1.13+0x1f72280"
 *   all count as that operator's. Samples with no operator on their stack
 *   have the one frame "[no operator]".
 *
 *   pool threads, in both operator views and by module path: a thread none
 *   of whose samples has an operator (a module) or a Python frame works for
 *   another (torch's OpenMP workers). Each of its "[no operator]" ("[no
 *   module]") samples takes the chain of the nearest sample in time of the
 *   other threads, if that one is within two sampling periods and not
 *   "none" itself, under its own thread root. Its weight moves with it.
 *
 *   by operator with Python callers (SP_VIEW_OP_PYTHON): the same
 *   operators, and between them the Python frames of the stack, as they
 *   are on it: the Python lines that called each operator, which is what
 *   torch.profiler's with_stack shows as an event's stack. Python frames
 *   inside the innermost operator (a Python kernel) are left out, so the
 *   leaf is still the innermost operator, or "[no operator]" after the
 *   sample's Python frames. For the table's Source Location
 *   (table.h: python_callers).
 *
 *   by module path: a sample's module path is the chain of its module
 *   ranges (SP_RANGE_MODULE, pushed by stackprof.torch.label_modules), each
 *   range one segment, joined by '/': "ResNet/layer1/0/conv1". Its stack is
 *   every enclosing path, "ResNet", "ResNet/layer1", ... down to that one,
 *   so self time goes to the innermost module and total time to each module
 *   around it. Other ranges (record_function) are not modules and are
 *   skipped. Samples in no module have the one frame "[no module]". A module
 *   called twice counts twice: its time is its samples.
 *
 * A model built with per-thread roots keeps them: the thread frame stays
 * each stack's root. Range frames, inlined frames and native frames are not
 * in a view. Samples keep their order, thread, time and weight.
 *
 * The view borrows from the model (threads, thread frames, the profile):
 * free the view first. Not async-signal-safe.
 */
#ifndef SP_EXPORT_VIEW_H
#define SP_EXPORT_VIEW_H

#include "export/model.h"

/* Frame kinds of views, beyond model.h's. */
#define SP_MFRAME_OP	  110 /* func is "aten::NAME", or "[no operator]" */
#define SP_MFRAME_MODPATH 111 /* func is "ResNet/layer1/0/conv1", or "[no module]" */

enum sp_view_by {
	SP_VIEW_OP = 0,
	SP_VIEW_MODULE_PATH,
	SP_VIEW_OP_PYTHON,
};

struct sp_view;

/* The view of m by by, or NULL with errno set (ENOMEM). */
struct sp_view *sp_view_new(const struct sp_model *m, enum sp_view_by by);

/* The view as a model, for any writer; borrowed, valid until sp_view_free(). */
const struct sp_model *sp_view_model(const struct sp_view *v);

/* Frees v (NULL is fine). */
void sp_view_free(struct sp_view *v);

#endif
