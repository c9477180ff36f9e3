/*
 * ops.h - aten operators in native frames: which frame is an operator's
 * entry, and the name torch.profiler gives it.
 *
 * Every ATen operator call goes through its generated struct in the
 * at::_ops namespace: at::_ops::NAME::call when the dispatcher is entered,
 * at::_ops::NAME::redispatch when a dispatch key (autograd, then the
 * backend) passes the call on. Those are exported functions of libtorch_cpu,
 * so they have names even in a stripped build. NAME is torchgen's
 * "unambiguous name": the operator and its overload joined by '_'
 * (add_Tensor is aten::add, overload Tensor; add__Tensor is aten::add_;
 * max_pool2d_with_indices has no overload). torch.profiler's key_averages()
 * names an operator without its overload (aten::add), and so does this.
 *
 * Only the function's own qualified name counts: at::_ops inside template
 * arguments (a kernel wrapper instantiated for &at::_ops::relu::call) or
 * libstdc++'s __gnu_cxx::__ops namespace is not an operator frame.
 * Nothing here allocates. Not async-signal-safe (nothing in export/ is).
 */
#ifndef SP_EXPORT_OPS_H
#define SP_EXPORT_OPS_H

#include <stdbool.h>
#include <stddef.h>

#define SP_OPS_NAME_MAX 160 /* "aten::" + the longest ATen name, with room to spare */

struct sp_op {
	char name[SP_OPS_NAME_MAX];	   /* "aten::add" */
	char overload[SP_OPS_NAME_MAX];	   /* "Tensor", or "" */
	char unambiguous[SP_OPS_NAME_MAX]; /* the struct's name: "add_Tensor" */
	bool redispatch;		   /* at::_ops::NAME::redispatch rather than ::call */
};

/*
 * Whether func, a demangled function name as the symbolizer gives it (with
 * or without its parameter list, a return type, "[clone .cold]" or an ABI
 * tag), is at::_ops::NAME::call or at::_ops::NAME::redispatch. If so and op
 * is not NULL, fills *op. A NAME too long for struct sp_op is no operator.
 */
bool sp_ops_parse(const char *func, struct sp_op *op);

/*
 * Splits an at::_ops struct name into the operator's name and its overload:
 * "mean_dim" gives "mean" and "dim". Exact for every operator of torch 1.13
 * (the table in aten-overloads.inc, from its native_functions.yaml); for a
 * name the table lacks (another torch version), an overload is split off
 * only when it looks like one (it starts with a capital, as Tensor or
 * Scalar, or is out or ends in _out) and what is left is an operator the
 * table knows to have overloads; otherwise the whole name is the operator's.
 * Returns the length of the operator's name within unambiguous; the
 * overload, if any, starts one byte after it.
 */
size_t sp_ops_split(const char *unambiguous);

#endif
