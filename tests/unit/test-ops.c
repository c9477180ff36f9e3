/*
 * test-ops.c - unit tests of the operator and module views: which frames
 * are aten operators and what torch calls them (export/ops.c), and the
 * views a model is seen through (export/view.c), on hand-built models.
 *
 *   test-ops                 the built-in cases
 *   test-ops --names FILE    also every line "FUNC<TAB>NAME<TAB>OVERLOAD" of
 *                            FILE: FUNC must parse as the operator NAME with
 *                            that overload (t0050 writes one from libtorch's
 *                            own symbols and torch's operator registry)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/model.h"
#include "export/ops.h"
#include "export/rollup.h"
#include "export/view.h"
#include "tests/unit/check.h"

static void want_op(const char *func, const char *name, const char *overload, bool redispatch)
{
	struct sp_op op;
	bool ok = sp_ops_parse(func, &op);
	CHECK(ok);
	if (!ok) {
		fprintf(stderr, "  not an operator: %s\n", func);
		return;
	}
	if (strcmp(op.name, name) || strcmp(op.overload, overload) || op.redispatch != redispatch) {
		fprintf(stderr, "  %s: got %s.%s%s, want %s.%s%s\n", func, op.name, op.overload,
			op.redispatch ? " (redispatch)" : "", name, overload,
			redispatch ? " (redispatch)" : "");
		failures++;
	}
}

static void want_none(const char *func)
{
	if (sp_ops_parse(func, NULL)) {
		fprintf(stderr, "  taken for an operator: %s\n", func);
		failures++;
	}
}

static void test_parse(void)
{
	/* libtorch_cpu's exported symbols, as the demangler gives them */
	want_op("at::_ops::add_Tensor::call(at::Tensor const&, at::Tensor const&, c10::Scalar "
		"const&)",
		"aten::add", "Tensor", false);
	want_op("at::_ops::convolution::redispatch(c10::DispatchKeySet, at::Tensor const&, "
		"at::Tensor const&, c10::optional<at::Tensor> const&, c10::ArrayRef<long>, "
		"c10::ArrayRef<long>, c10::ArrayRef<long>, bool, c10::ArrayRef<long>, long)",
		"aten::convolution", "", true);
	/* underscores on both sides of the split: only the operator list knows it */
	want_op("at::_ops::max_pool2d_with_indices::call(at::Tensor const&)",
		"aten::max_pool2d_with_indices", "", false);
	want_op("at::_ops::mean_dim::call(at::Tensor const&)", "aten::mean", "dim", false);
	want_op("at::_ops::add__Tensor::call(at::Tensor&)", "aten::add_", "Tensor", false);
	want_op("at::_ops::relu_::call(at::Tensor&)", "aten::relu_", "", false);
	want_op("at::_ops::flatten_using_ints::call(at::Tensor const&, long, long)",
		"aten::flatten", "using_ints", false);
	want_op("at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>)", "aten::empty",
		"memory_format", false);
	want_op("at::_ops::index_reduce::call(at::Tensor const&)", "aten::index_reduce", "", false);
	want_op("at::_ops::scatter_reduce_two_out::call(at::Tensor const&)", "aten::scatter_reduce",
		"two_out", false);
	want_op("at::_ops::native_batch_norm::call(at::Tensor const&)", "aten::native_batch_norm",
		"", false);
	want_op("at::_ops::max_pool2d_with_indices_out::call(at::Tensor const&)",
		"aten::max_pool2d_with_indices", "out", false);
	/* other spellings: a DWARF name, a return type, a clone, an ABI tag, a lambda inside */
	want_op("at::_ops::linear::call", "aten::linear", "", false);
	want_op("at::Tensor at::_ops::sum_dim_IntList::call(at::Tensor const&)", "aten::sum",
		"dim_IntList", false);
	want_op("at::_ops::addmm::call(at::Tensor const&) [clone .cold]", "aten::addmm", "", false);
	want_op("at::_ops::to_dtype::call[abi:cxx11](at::Tensor const&)", "aten::to", "dtype",
		false);
	want_op("at::_ops::conv2d::call(at::Tensor const&)::{lambda()#1}::operator()() const",
		"aten::conv2d", "", false);

	/* only the function's own name counts */
	want_none("c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::"
		  "WrapFunctionIntoFunctor_<c10::CompileTimeFunctionPointer<at::Tensor& "
		  "(at::Tensor&), &at::_ops::relu::call>, at::Tensor&, "
		  "c10::guts::typelist::typelist<at::Tensor&> >, at::Tensor& "
		  "(at::Tensor&)>::call(c10::OperatorKernel*, c10::DispatchKeySet, at::Tensor&)");
	want_none(
	    "void std::__introsort_loop<long*, long, __gnu_cxx::__ops::_Iter_less_iter>(long*, "
	    "long*, long, __gnu_cxx::__ops::_Iter_less_iter)");
	want_none("at::_ops::add_Tensor::schema_str");
	want_none("at::_ops::add_Tensor::callx(int)");
	want_none("at::_ops::add_Tensor::call::helper()");
	want_none("at::_ops::add_Tensor::redispatchx");
	want_none("xat::_ops::add_Tensor::call(int)");
	want_none("torch::at::_ops::add_Tensor::call(int)");
	want_none("(anonymous namespace)::at::_ops::add_Tensor::call(int)");
	want_none("at::_ops::::call()");
	want_none("at::_ops::");
	want_none("at::native::add(at::Tensor const&)");
	want_none("libtorch_cpu.so.1.13+0x1f72280");
	want_none("[unknown]");
	want_none("");
	want_none(NULL);
	/* a name longer than any operator's is no operator (and no overflow) */
	char big[600];
	memset(big, 'a', sizeof(big));
	memcpy(big, "at::_ops::", 10);
	strcpy(big + sizeof(big) - 8, "::call");
	want_none(big);
}

static void want_split(const char *u, size_t base)
{
	size_t got = sp_ops_split(u);
	if (got != base) {
		fprintf(stderr, "  sp_ops_split(%s): %zu, want %zu\n", u, got, base);
		failures++;
	}
}

/* Names another torch version may have: the overload is split off only when sure. */
static void test_split_unknown(void)
{
	want_split("add_NewOverload", 3);   /* a capital after a known overloaded operator */
	want_split("add_Tensor_out2", 3);   /* still starts with a capital */
	want_split("mean_names_out", 4);    /* ends in _out */
	want_split("newop_Tensor", 12);	    /* newop has no overloads we know of */
	want_split("add_something", 13);    /* lowercase: maybe part of a new name */
	want_split("cholesky_inverse", 16); /* torch 1.13's own: cholesky has overloads */
	want_split("set_data", 8);	    /* set has overloads, set_data is an operator */
	want_split("", 0);
}

/* ---------------------------------------------------------------- views */

struct fake {
	struct sp_model m;
	struct sp_profile p;
	struct sp_mframe frames[16];
	struct sp_mstack stacks[8];
	uint32_t ids[8][16];
	uint32_t locs[8][16];
	struct sp_msample samples[16];
	struct sp_prof_range ranges[8];
};

/* Stack i, root first, with the given samples of 1 ms each. */
static void fake_stack(struct fake *fk, int i, int n_samples, int n, const int *frames)
{
	for (int k = 0; k < n; k++)
		fk->ids[i][k] = (uint32_t)frames[k];
	fk->stacks[i] = (struct sp_mstack){.n = (uint32_t)n,
					   .frames = fk->ids[i],
					   .locs = fk->locs[i],
					   .weight_ns = 1000000ull * (uint64_t)n_samples,
					   .samples = (uint64_t)n_samples};
	if ((size_t)i >= fk->m.n_stacks)
		fk->m.n_stacks = (size_t)i + 1;
	fk->m.total_weight_ns += 1000000ull * (uint64_t)n_samples;
	fk->m.total_samples += (uint64_t)n_samples;
}

static void fake_sample(struct fake *fk, uint32_t stack, uint32_t range)
{
	fk->samples[fk->m.n_samples++] = (struct sp_msample){
	    .stack = stack, .range = range, .time_ns = fk->m.n_samples, .weight_ns = 1000000};
}

/* The view's stacks as "a;b;c N" lines, in its order. */
static const char *stacks_text(const struct sp_model *v)
{
	static char buf[4096];
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < v->n_stacks; i++) {
		const struct sp_mstack *s = &v->stacks[i];
		for (uint32_t k = 0; k < s->n; k++)
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%s", k ? ";" : "",
					      v->frames[s->frames[k]].func);
		o += (size_t)snprintf(buf + o, sizeof(buf) - o, " %llu\n",
				      (unsigned long long)s->samples);
	}
	return buf;
}

#define CHECK_STR(got, want)                                                                       \
	do {                                                                                       \
		const char *g_ = (got), *w_ = (want);                                              \
		if (strcmp(g_, w_)) {                                                              \
			fprintf(stderr, "%s:%d: got\n[%s]\nwant\n[%s]\n", __FILE__, __LINE__, g_,  \
				w_);                                                               \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static void test_op_view(void)
{
	static struct fake fk;
	enum { MAIN, ADD, ADD_RD, CONV, CONV_RD, UNNAMED, LEAF, RANGE, THREAD, ADDS };
	fk.frames[MAIN] = (struct sp_mframe){.func = "main"};
	fk.frames[ADD] = (struct sp_mframe){.func = "at::_ops::add_Tensor::call(at::Tensor&)"};
	fk.frames[ADD_RD] = (struct sp_mframe){
	    .func = "at::_ops::add_Tensor::redispatch(c10::DispatchKeySet, at::Tensor&)"};
	fk.frames[CONV] = (struct sp_mframe){.func = "at::_ops::conv2d::call(at::Tensor&)"};
	fk.frames[CONV_RD] = (struct sp_mframe){
	    .func = "at::_ops::convolution::redispatch(c10::DispatchKeySet, at::Tensor&)"};
	fk.frames[UNNAMED] = (struct sp_mframe){.func = "libtorch_cpu.so.1.13+0x1f72280",
						.module = "libtorch_cpu.so.1.13"};
	fk.frames[LEAF] = (struct sp_mframe){.func = "[unknown]", .kind = SP_FRAME_UNKNOWN};
	/* a range named like an operator is a range */
	fk.frames[RANGE] =
	    (struct sp_mframe){.func = "at::_ops::relu::call", .kind = SP_MFRAME_RANGE};
	fk.frames[THREAD] = (struct sp_mframe){.func = "python3-7", .kind = SP_MFRAME_THREAD};
	fk.frames[ADDS] = (struct sp_mframe){.func = "at::_ops::add_Scalar::call(at::Tensor&)"};
	fk.m.frames = fk.frames;
	fk.m.n_frames = 10;
	/* call, then the backend's redispatch of the same call: one operator */
	fake_stack(&fk, 0, 3, 5, (int[]){MAIN, ADD, UNNAMED, ADD_RD, LEAF});
	/* the same operator called again inside itself: two */
	fake_stack(&fk, 1, 2, 4, (int[]){MAIN, ADD, ADD, UNNAMED});
	/* a redispatch of another operator starts one; the range is not one */
	fake_stack(&fk, 2, 1, 5, (int[]){RANGE, MAIN, CONV, CONV_RD, UNNAMED});
	fake_stack(&fk, 3, 4, 2, (int[]){RANGE, MAIN});
	/* two overloads of add are one operator, as key_averages() has them */
	fake_stack(&fk, 4, 1, 3, (int[]){MAIN, ADDS, UNNAMED});
	for (int i = 0; i < 5; i++)
		for (uint64_t k = 0; k < fk.stacks[i].samples; k++)
			fake_sample(&fk, (uint32_t)i, 0);
	fk.m.stacks = fk.stacks;
	fk.m.samples = fk.samples;

	struct sp_view *v = sp_view_new(&fk.m, SP_VIEW_OP);
	CHECK(v != NULL);
	if (!v)
		return;
	const struct sp_model *vm = sp_view_model(v);
	CHECK_STR(stacks_text(vm), "aten::add 4\n"
				   "aten::add;aten::add 2\n"
				   "aten::conv2d;aten::convolution 1\n"
				   "[no operator] 4\n");
	CHECK(vm->total_samples == 11 && vm->total_weight_ns == 11000000ull);
	CHECK(vm->n_samples == 11 && vm->samples[3].stack == 1 && vm->samples[10].stack == 0);
	sp_view_free(v);

	/* self to the innermost, total once per sample however often it recurs */
	struct sp_rollup r;
	CHECK(sp_rollup_build(&r, &fk.m, SP_ROLLUP_OP, false) == 0);
	int64_t add = sp_rollup_find(&r, "aten::add"), none = sp_rollup_find(&r, "[no operator]");
	CHECK(add >= 0 && r.rows[add].self_samples == 6 && r.rows[add].total_samples == 6);
	CHECK(none >= 0 && r.rows[none].self_samples == 4);
	CHECK(sp_rollup_find(&r, "libtorch_cpu.so.1.13+0x1f72280") < 0);
	CHECK(sp_rollup_find(&r, "aten::relu") < 0);
	sp_rollup_release(&r);

	/* per-thread roots stay roots */
	fake_stack(&fk, 0, 3, 6, (int[]){THREAD, MAIN, ADD, UNNAMED, ADD_RD, LEAF});
	fk.m.total_samples -= 3;
	fk.m.total_weight_ns -= 3000000;
	v = sp_view_new(&fk.m, SP_VIEW_OP);
	CHECK(v && !strncmp(stacks_text(sp_view_model(v)), "python3-7;aten::add 3\n", 22));
	sp_view_free(v);
}

static void test_module_view(void)
{
	static struct fake fk;
	fk.frames[0] = (struct sp_mframe){.func = "main"};
	fk.frames[1] = (struct sp_mframe){.func = "at::_ops::linear::call"};
	fk.m.frames = fk.frames;
	fk.m.n_frames = 2;
	fake_stack(&fk, 0, 0, 1, (int[]){0});
	fake_stack(&fk, 1, 0, 2, (int[]){0, 1});
	const uint32_t mod = SP_RANGE_MODULE;
	/* ids 1..8; 6 and 7 point at each other (a corrupt file must not loop);
	 * fc and the act inside it carry their classes, the model's is its name */
	fk.ranges[0] = (struct sp_prof_range){1, 0, (char *)"inference", NULL, 0, 0};
	fk.ranges[1] = (struct sp_prof_range){2, 1, (char *)"Net", "Net", mod, 0};
	fk.ranges[2] = (struct sp_prof_range){3, 2, (char *)"fc", "Linear", mod, 0};
	fk.ranges[3] = (struct sp_prof_range){4, 3, (char *)"LINEAR PASS", NULL, 0, 0};
	fk.ranges[4] = (struct sp_prof_range){5, 2, (char *)"0", NULL, mod, 0};
	fk.ranges[5] = (struct sp_prof_range){6, 7, (char *)"a", NULL, mod, 0};
	fk.ranges[6] = (struct sp_prof_range){7, 6, (char *)"b", NULL, mod, 0};
	fk.ranges[7] = (struct sp_prof_range){8, 3, (char *)"act", "ReLU", mod, 0};
	fk.p.ranges = fk.ranges;
	fk.p.n_ranges = 8;
	fk.m.prof = &fk.p;
	fk.m.module_classes = true;
	const uint32_t ranges[] = {0, 1, 2, 3, 4, 4, 3, 5, 99, 6, 8};
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
		fake_sample(&fk, i % 2, ranges[i]);
	fk.m.total_samples = fk.m.n_samples;
	fk.m.total_weight_ns = 1000000ull * fk.m.n_samples;
	fk.m.stacks = fk.stacks;
	fk.m.samples = fk.samples;

	struct sp_view *v = sp_view_new(&fk.m, SP_VIEW_MODULE_PATH);
	CHECK(v != NULL);
	if (!v)
		return;
	/* record_function ranges are not modules; an unknown range id is none;
	 * a path ends with its module's class, and the path below it goes on
	 * without it (Net/fc/act, not Net/fc (Linear)/act) */
	const char *text = stacks_text(sp_view_model(v));
	const char *want = "[no module] 3\n"
			   "Net 1\n"
			   "Net;Net/fc (Linear) 4\n"
			   "Net;Net/0 1\n";
	CHECK(!strncmp(text, want, strlen(want)));
	CHECK(strstr(text, "Net;Net/fc (Linear);Net/fc/act (ReLU) 1\n") != NULL);
	/* the loop ends, whatever path it gives */
	CHECK(sp_view_model(v)->total_samples == 11);
	sp_view_free(v);

	struct sp_rollup r;
	CHECK(sp_rollup_build(&r, &fk.m, SP_ROLLUP_MODULE_PATH, false) == 0);
	int64_t net = sp_rollup_find(&r, "Net"), fc = sp_rollup_find(&r, "Net/fc (Linear)");
	CHECK(net >= 0 && r.rows[net].self_samples == 1 && r.rows[net].total_samples == 7);
	CHECK(fc >= 0 && r.rows[fc].self_samples == 4 && r.rows[fc].total_samples == 5);
	CHECK(sp_rollup_find(&r, "Net/fc/LINEAR PASS") < 0);
	sp_rollup_release(&r);

	/* --no-module-class: the bare paths */
	fk.m.module_classes = false;
	v = sp_view_new(&fk.m, SP_VIEW_MODULE_PATH);
	CHECK(v != NULL);
	if (v) {
		text = stacks_text(sp_view_model(v));
		CHECK(strstr(text, "Net;Net/fc;Net/fc/act 1\n") != NULL);
		CHECK(strstr(text, "(Linear)") == NULL);
		sp_view_free(v);
	}
	fk.m.module_classes = true;
}

/* Every line "FUNC\tNAME\tOVERLOAD" of path. */
static void test_names_file(const char *path)
{
	FILE *f = fopen(path, "r");
	CHECK(f != NULL);
	if (!f)
		return;
	char *line = NULL;
	size_t cap = 0, n = 0;
	int before = failures;
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		char *name = strchr(line, '\t');
		char *ovl = name ? strchr(name + 1, '\t') : NULL;
		if (!ovl)
			continue;
		*name++ = '\0';
		*ovl++ = '\0';
		want_op(line, name, ovl, strstr(line, "::redispatch(") != NULL);
		n++;
	}
	free(line);
	fclose(f);
	printf("test-ops: %zu names from %s, %d wrong\n", n, path, failures - before);
	CHECK(n > 0);
}

int main(int argc, char **argv)
{
	test_parse();
	test_split_unknown();
	test_op_view();
	test_module_view();
	if (argc == 3 && !strcmp(argv[1], "--names"))
		test_names_file(argv[2]);
	return check_exit("test-ops");
}
