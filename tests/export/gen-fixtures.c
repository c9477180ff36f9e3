/*
 * gen-fixtures.c - writes the deterministic raw profiles the export golden
 * tests read, with the same writer API the sampler uses.
 *
 * Every function is a JIT symbol (a perf-<pid>.map entry), so symbolization
 * gives the same names on any machine and without any binary; one module
 * points at a file that does not exist, to cover the "module+0xoffset"
 * fallback. The names are chosen to break naive output: spaces, ';', a tab
 * and a newline, C++ templates with spaces and commas.
 *
 *   gen-fixtures DIR            base.prof new.prof truncated.prof junk.prof,
 *                               ops-base.prof ops-new.prof (a torch model's frames
 *                               and module ranges), and py-base.prof py-new.prof
 *                               (Python frames merged into native stacks), and
 *                               events.prof (cpu and user samples: format version 3)
 *                               and events-new.prof (other user weights) in DIR
 *   gen-fixtures --big FILE SAMPLES STACKS
 *                               a large random-but-seeded profile for speed tests
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/profile.h"

#define JIT_BASE  0x10000ull
#define JIT_SIZE  0x100ull
#define MOD_START 0x400000ull
#define MOD_END	  0x500000ull
#define MS	  1000000ull

enum fn {
	F_START,
	F_MAIN,
	F_RUN,
	F_CONV,
	F_GEMM,
	F_PUSH,
	F_BN,
	F_RELU,
	F_POOL,
	F_WORKER,
	F_RECURSE,
	F_MEMCPY,
	F_SOFTMAX,
	F_COUNT,
};

static const char *const fn_names[F_COUNT] = {
    [F_START] = "_start",
    [F_MAIN] = "main",
    [F_RUN] = "run_model(int)",
    [F_CONV] = "conv2d_forward",
    [F_GEMM] = "gemm_kernel<float, 8>(float const*, float*)",
    [F_PUSH] = "std::vector<int, std::allocator<int> >::push_back(int const&)",
    [F_BN] = "batch norm; fused",
    [F_RELU] = "relu\tinplace\nv2",
    [F_POOL] = "max_pool2d",
    [F_WORKER] = "worker_loop",
    [F_RECURSE] = "recurse",
    [F_MEMCPY] = "memcpy",
    [F_SOFTMAX] = "softmax",
};

/* The leaf is looked up at its PC, callers at their return address - 1. */
static uint64_t leaf_pc(enum fn f)
{
	return JIT_BASE + f * JIT_SIZE + 0x10;
}

static uint64_t ret_pc(enum fn f)
{
	return JIT_BASE + f * JIT_SIZE + 0x21;
}

static int check(int rc, const char *what)
{
	if (rc) {
		fprintf(stderr, "gen-fixtures: %s: %s\n", what, strerror(-rc));
		exit(1);
	}
	return rc;
}

struct gen {
	struct sp_prof_writer *w;
	uint32_t next_stack;
	uint64_t clock[4]; /* per thread slot: time of the next sample */
};

/* Writes a stack given root first (as people read them); returns its id. */
static uint32_t stack_of(struct gen *g, uint32_t flags, int n, const enum fn *root_first)
{
	uint64_t pcs[64];
	for (int i = 0; i < n; i++) {
		enum fn f = root_first[n - 1 - i];
		pcs[i] = i == 0 ? leaf_pc(f) : ret_pc(f);
	}
	struct sp_prof_stack s = {
	    .id = ++g->next_stack, .flags = flags, .depth = (uint32_t)n, .pcs = pcs};
	check(sp_prof_writer_stack(g->w, &s), "stack");
	return s.id;
}

static void samples(struct gen *g, int slot, int32_t tid, uint32_t stack, uint32_t range, int count,
		    uint64_t weight)
{
	for (int i = 0; i < count; i++) {
		g->clock[slot] += weight;
		struct sp_prof_sample s = {.tid = tid,
					   .stack = stack,
					   .range = range,
					   .time_ns = g->clock[slot],
					   .weight_ns = weight};
		check(sp_prof_writer_sample(g->w, &s), "sample");
	}
}

/* Creates path, a writer on it (its fd in *fd) and the header h. */
static struct sp_prof_writer *open_fixture(const char *path, int *fd,
					   const struct sp_prof_header *h)
{
	*fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (*fd < 0) {
		fprintf(stderr, "gen-fixtures: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	struct sp_prof_writer *w = sp_prof_writer_new(*fd);
	if (!w)
		exit(1);
	check(sp_prof_writer_header(w, h), "header");
	return w;
}

static struct sp_prof_writer *start(const char *path, int *fd, int pid)
{
	struct sp_prof_header h = {
	    .version = SP_PROFILE_VERSION,
	    .pid = pid,
	    .ppid = 1,
	    .start_realtime_ns = 1700000000000000000ull,
	    .start_mono_ns = 1000 * MS,
	    .freq_hz = 1000,
	    .max_depth = 6,
	    .timer = (char *)"posix-cputimer",
	    .cmdline = (char *)"./fixture --iters 5",
	    .exe = (char *)"/nonexistent/fixture",
	    .hostname = (char *)"fixture-host",
	};
	struct sp_prof_writer *w = open_fixture(path, fd, &h);
	struct sp_prof_module m = {
	    .id = 1,
	    .flags = SP_MOD_DLOPEN,
	    .start = MOD_START,
	    .end = MOD_END,
	    .bias = MOD_START,
	    .path = (char *)"/nonexistent/libfixture.so",
	    .build_id = {0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04},
	    .build_id_len = 8,
	};
	check(sp_prof_writer_module(w, &m), "module");
	for (int f = 0; f < F_COUNT; f++) {
		struct sp_prof_jit j = {.start = JIT_BASE + f * JIT_SIZE,
					.size = JIT_SIZE,
					.name = (char *)fn_names[f]};
		check(sp_prof_writer_jit(w, &j), "jit");
	}
	struct sp_prof_thread th[] = {
	    {.tid = 1000, .name = (char *)"fixture"},
	    {.tid = 1001, .name = (char *)"worker pool"}, /* a space: thread roots escape too */
	    {.tid = 1002, .name = NULL},
	    {.tid = 1000, .name = (char *)"resnet18"}, /* renamed later: the last name wins */
	};
	for (size_t i = 0; i < sizeof(th) / sizeof(th[0]); i++)
		check(sp_prof_writer_thread(w, &th[i]), "thread");
	struct sp_prof_range r[] = {
	    {.id = 1, .parent = 0, .name = (char *)"model_inference"},
	    {.id = 2, .parent = 1, .name = (char *)"LINEAR PASS"},
	};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		check(sp_prof_writer_range(w, &r[i]), "range");
	return w;
}

/*
 * base (v = 0) and new (v = 1): new grows the convolution, shrinks batch
 * norm, drops relu and adds softmax, so a diff shows every category.
 */
static void write_profile(const char *path, int v, uint64_t *flush_bytes)
{
	int fd;
	struct gen g = {.clock = {0}};
	g.w = start(path, &fd, v ? 4242 : 4241);

	const enum fn s_gemm[] = {F_START, F_MAIN, F_RUN, F_CONV, F_GEMM};
	const enum fn s_conv[] = {F_START, F_MAIN, F_RUN, F_CONV};
	const enum fn s_bn[] = {F_START, F_MAIN, F_RUN, F_BN};
	const enum fn s_relu[] = {F_START, F_MAIN, F_RUN, F_RELU};
	const enum fn s_pool[] = {F_START, F_MAIN, F_RUN, F_POOL, F_MEMCPY};
	const enum fn s_push[] = {F_START, F_MAIN, F_PUSH};
	const enum fn s_soft[] = {F_START, F_MAIN, F_RUN, F_SOFTMAX};
	const enum fn s_rec[] = {F_WORKER, F_RECURSE, F_RECURSE, F_RECURSE, F_GEMM};
	const enum fn s_wcpy[] = {F_WORKER, F_MEMCPY};
	const enum fn s_deep[] = {F_RECURSE, F_RECURSE, F_RECURSE, F_RECURSE, F_RECURSE, F_RECURSE};

	uint32_t gemm = stack_of(&g, 0, 5, s_gemm);
	uint32_t conv = stack_of(&g, 0, 4, s_conv);
	uint32_t bn = stack_of(&g, 0, 4, s_bn);
	uint32_t relu = stack_of(&g, 0, 4, s_relu);
	uint32_t pool = stack_of(&g, 0, 5, s_pool);
	uint32_t push = stack_of(&g, 0, 3, s_push);
	uint32_t soft = stack_of(&g, 0, 4, s_soft);
	uint32_t rec = stack_of(&g, 0, 5, s_rec);
	uint32_t wcpy = stack_of(&g, 0, 2, s_wcpy);
	uint32_t deep = stack_of(&g, SP_STACK_TRUNCATED, 6, s_deep);
	uint64_t modpcs[] = {MOD_START + 0x1234, ret_pc(F_MAIN), ret_pc(F_START)};
	struct sp_prof_stack ms = {.id = ++g.next_stack, .depth = 3, .pcs = modpcs};
	check(sp_prof_writer_stack(g.w, &ms), "stack");
	struct sp_prof_stack empty = {.id = ++g.next_stack, .flags = SP_STACK_UNWIND_ERR};
	check(sp_prof_writer_stack(g.w, &empty), "stack");

	/* main thread: the "model" inside model_inference / LINEAR PASS */
	samples(&g, 0, 1000, push, 0, 3, MS);
	samples(&g, 0, 1000, conv, 1, 4, MS);
	samples(&g, 0, 1000, gemm, 2, v ? 60 : 40, MS);
	samples(&g, 0, 1000, conv, 1, 11, MS);
	samples(&g, 0, 1000, gemm, 1, 10, MS + 500); /* half-microseconds: sum, then round */
	samples(&g, 0, 1000, bn, 1, v ? 10 : 20, 2 * MS);
	check(sp_prof_writer_flush(g.w), "flush");
	if (flush_bytes)
		*flush_bytes = sp_prof_writer_bytes(g.w);
	if (!v)
		samples(&g, 0, 1000, relu, 1, 5, MS);
	else
		samples(&g, 0, 1000, soft, 1, 7, MS);
	samples(&g, 0, 1000, pool, 1, 8, MS);
	samples(&g, 0, 1000, ms.id, 0, 2, MS);
	samples(&g, 0, 1000, empty.id, 0, 1, MS);
	/* a worker and an unnamed thread, outside any range */
	samples(&g, 1, 1001, rec, 0, 12, MS);
	samples(&g, 1, 1001, wcpy, 0, 4, MS);
	samples(&g, 2, 1002, deep, 0, 6, MS);

	struct sp_prof_stats st = {
	    .flags = SP_STATS_FINAL, .samples = 0, .timer = (char *)"posix-cputimer"};
	check(sp_prof_writer_stats(g.w, &st), "stats");
	check(sp_prof_writer_close(g.w), "close");
	close(fd);
}

/*
 * The torch fixtures: a ResNet-like inference under Debian's torch, as
 * stackprof sees it. Operator frames are named as libtorch_cpu's symbols
 * demangle (at::_ops::NAME::call with its parameter list, ::redispatch with
 * the dispatch key set first), plus the forms a DWARF name, a cold clone
 * and an ABI tag give; two frames only look like operators (at::_ops::relu
 * inside a kernel wrapper's template arguments, libstdc++'s __ops
 * namespace). Code between and under the operators is partly unnamed, as in
 * the stripped libtorch: addresses in a libtorch_cpu.so.1.13 that does not
 * exist here. The samples carry module ranges (label_modules) with a
 * record_function range around and inside them.
 */
#define TJIT_BASE 0x20000ull
#define TORCH_LO  0x7f0000000000ull /* the missing libtorch_cpu.so.1.13 */
#define TORCH_HI  0x7f0004000000ull

enum tfn {
	T_START,
	T_MAIN,
	T_EVAL,
	T_GIL,
	T_CONV2D,
	T_CONV,
	T_CONV_RD,
	T_UCONV,
	T_MKLDNN,
	T_JITCONV,
	T_BN,
	T_BNIMPL,
	T_NBN,
	T_EMPTY,
	T_ALLOC,
	T_RELU,
	T_WRAP,
	T_CLAMP,
	T_ADD,
	T_POOL,
	T_POOLI,
	T_POOLI_RD,
	T_SORT,
	T_MEAN,
	T_SUM,
	T_LINEAR,
	T_ADDMM,
	T_GEMM,
	T_SOFTMAX,
	T_CLONE3,
	T_THREAD,
	T_WORKER,
	T_COUNT,
	/* unnamed code in the missing libtorch_cpu.so.1.13: its offset is the value */
	U_DISPATCH = 0x1000,
	U_VARTYPE = 0x2106530,
	U_CONVIMPL = 0x1f72280,
	U_BNKERN = 0x16bde20,
};

static const char *const tfn_names[T_COUNT] = {
    [T_START] = "_start",
    [T_MAIN] = "main",
    [T_EVAL] = "_PyEval_EvalFrameDefault",
    [T_GIL] = "take_gil",
    [T_CONV2D] = "at::_ops::conv2d::call(at::Tensor const&, at::Tensor const&, "
		 "c10::optional<at::Tensor> const&, c10::ArrayRef<long>, c10::ArrayRef<long>, "
		 "c10::ArrayRef<long>, long)",
    [T_CONV] = "at::_ops::convolution::call(at::Tensor const&, at::Tensor const&, "
	       "c10::optional<at::Tensor> const&, c10::ArrayRef<long>, c10::ArrayRef<long>, "
	       "c10::ArrayRef<long>, bool, c10::ArrayRef<long>, long)",
    [T_CONV_RD] = "at::_ops::convolution::redispatch(c10::DispatchKeySet, at::Tensor const&, "
		  "at::Tensor const&, c10::optional<at::Tensor> const&, c10::ArrayRef<long>, "
		  "c10::ArrayRef<long>, c10::ArrayRef<long>, bool, c10::ArrayRef<long>, long)",
    [T_UCONV] = "at::_ops::_convolution::call(at::Tensor const&, at::Tensor const&, "
		"c10::optional<at::Tensor> const&, c10::ArrayRef<long>, c10::ArrayRef<long>, "
		"c10::ArrayRef<long>, bool, c10::ArrayRef<long>, long, bool, bool, bool, bool)",
    [T_MKLDNN] = "at::_ops::mkldnn_convolution::call(at::Tensor const&, at::Tensor const&, "
		 "c10::optional<at::Tensor> const&, c10::ArrayRef<long>, c10::ArrayRef<long>, "
		 "c10::ArrayRef<long>, long)",
    [T_JITCONV] = "_jit_avx512_common_conv_fwd_kernel",
    [T_BN] = "at::_ops::batch_norm::call(at::Tensor const&, c10::optional<at::Tensor> const&, "
	     "c10::optional<at::Tensor> const&, c10::optional<at::Tensor> const&, "
	     "c10::optional<at::Tensor> const&, bool, double, double, bool)",
    [T_BNIMPL] = "at::_ops::_batch_norm_impl_index::call(at::Tensor const&, "
		 "c10::optional<at::Tensor> const&, c10::optional<at::Tensor> const&, "
		 "c10::optional<at::Tensor> const&, c10::optional<at::Tensor> const&, bool, "
		 "double, double, bool)",
    [T_NBN] = "at::_ops::native_batch_norm::call(at::Tensor const&, "
	      "c10::optional<at::Tensor> const&, c10::optional<at::Tensor> const&, "
	      "c10::optional<at::Tensor> const&, c10::optional<at::Tensor> const&, bool, double, "
	      "double)",
    [T_EMPTY] =
	"at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>, "
	"c10::optional<c10::ScalarType>, c10::optional<c10::Layout>, "
	"c10::optional<c10::Device>, c10::optional<bool>, c10::optional<c10::MemoryFormat>)",
    [T_ALLOC] = "c10::alloc_cpu(unsigned long)",
    [T_RELU] = "at::_ops::relu_::call(at::Tensor&)",
    [T_WRAP] =
	"c10::impl::wrap_kernel_functor_unboxed_<c10::impl::detail::"
	"WrapFunctionIntoFunctor_<c10::CompileTimeFunctionPointer<at::Tensor& (at::Tensor&), "
	"&at::_ops::relu::call>, at::Tensor&, c10::guts::typelist::typelist<at::Tensor&> >, "
	"at::Tensor& (at::Tensor&)>::call(c10::OperatorKernel*, c10::DispatchKeySet, "
	"at::Tensor&)",
    [T_CLAMP] = "at::_ops::clamp_min_::call(at::Tensor&, c10::Scalar const&)",
    [T_ADD] = "at::_ops::add__Tensor::call(at::Tensor&, at::Tensor const&, c10::Scalar const&)",
    [T_POOL] = "at::_ops::max_pool2d::call(at::Tensor const&, c10::ArrayRef<long>, "
	       "c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, bool)",
    [T_POOLI] = "at::_ops::max_pool2d_with_indices::call(at::Tensor const&, c10::ArrayRef<long>, "
		"c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ArrayRef<long>, bool)",
    [T_POOLI_RD] = "at::_ops::max_pool2d_with_indices::redispatch(c10::DispatchKeySet, "
		   "at::Tensor const&, c10::ArrayRef<long>, c10::ArrayRef<long>, "
		   "c10::ArrayRef<long>, c10::ArrayRef<long>, bool)",
    [T_SORT] = "void std::__introsort_loop<long*, long, __gnu_cxx::__ops::_Iter_less_iter>(long*, "
	       "long*, long, __gnu_cxx::__ops::_Iter_less_iter)",
    [T_MEAN] = "at::_ops::mean_dim::call(at::Tensor const&, c10::OptionalArrayRef<long>, bool, "
	       "c10::optional<c10::ScalarType>)",
    [T_SUM] = "at::Tensor at::_ops::sum_dim_IntList::call[abi:cxx11](at::Tensor const&, "
	      "c10::OptionalArrayRef<long>, bool, c10::optional<c10::ScalarType>)",
    [T_LINEAR] = "at::_ops::linear::call",
    [T_ADDMM] = "at::_ops::addmm::call(at::Tensor const&, at::Tensor const&, at::Tensor const&, "
		"c10::Scalar const&, c10::Scalar const&) [clone .cold]",
    [T_GEMM] = "sgemm_",
    [T_SOFTMAX] = "at::_ops::_softmax::call(at::Tensor const&, long, bool)",
    [T_CLONE3] = "__clone3",
    [T_THREAD] = "start_thread",
    [T_WORKER] = "c10::ThreadPool::main_loop(unsigned long)",
};

/* A torch stack, root first; entries below T_COUNT are JIT functions, the others offsets. */
static uint32_t torch_stack(struct gen *g, int n, const unsigned *root_first)
{
	uint64_t pcs[64];
	for (int i = 0; i < n; i++) {
		unsigned f = root_first[n - 1 - i];
		if (f >= T_COUNT)
			pcs[i] = TORCH_LO + f + (i ? 0x21 : 0x10);
		else
			pcs[i] = TJIT_BASE + f * JIT_SIZE + (i ? 0x21 : 0x10);
	}
	struct sp_prof_stack s = {.id = ++g->next_stack, .depth = (uint32_t)n, .pcs = pcs};
	check(sp_prof_writer_stack(g->w, &s), "stack");
	return s.id;
}

#define TSTACK(g, ...)                                                                             \
	torch_stack(g, (int)(sizeof((unsigned[]){__VA_ARGS__}) / sizeof(unsigned)),                \
		    (const unsigned[]){__VA_ARGS__})

enum trange {
	R_INFER = 1,
	R_RESNET,
	R_CONV1,
	R_BN1,
	R_RELU,
	R_MAXPOOL,
	R_LAYER1,
	R_L1_0,
	R_L1_0_CONV1,
	R_L1_0_BN1,
	R_L1_0_CONV2,
	R_FC,
	R_L1_1,
	R_L1_1_CONV1,
	R_LINEAR_PASS,
	R_SOFTMAX,
};

/*
 * ops-base (v = 0) and ops-new (v = 1): new spends more in convolution and
 * less in batch norm, has no max pool and adds a softmax module with its
 * operator, so a diff by operator or by module shows every category.
 */
static void write_torch(const char *path, int v)
{
	int fd;
	struct gen g = {.clock = {0}};
	struct sp_prof_header h = {
	    .version = SP_PROFILE_VERSION,
	    .pid = v ? 5252 : 5251,
	    .ppid = 1,
	    .start_realtime_ns = 1700000000000000000ull,
	    .start_mono_ns = 1000 * MS,
	    .freq_hz = 1000,
	    .max_depth = 64,
	    .timer = (char *)"perf-sigtrap",
	    .cmdline = (char *)"/usr/bin/python3 infer.py",
	    .exe = (char *)"/nonexistent/python3",
	    .hostname = (char *)"fixture-host",
	};
	g.w = open_fixture(path, &fd, &h);
	struct sp_prof_module m = {
	    .id = 1,
	    .start = TORCH_LO,
	    .end = TORCH_HI,
	    .bias = TORCH_LO,
	    .path = (char *)"/nonexistent/libtorch_cpu.so.1.13",
	    .build_id = {0x13, 0x13, 0x13, 0x13},
	    .build_id_len = 4,
	};
	check(sp_prof_writer_module(g.w, &m), "module");
	for (int f = 0; f < T_COUNT; f++) {
		struct sp_prof_jit j = {.start = TJIT_BASE + f * JIT_SIZE,
					.size = JIT_SIZE,
					.name = (char *)tfn_names[f]};
		check(sp_prof_writer_jit(g.w, &j), "jit");
	}
	struct sp_prof_thread th[] = {
	    {.tid = 2000, .name = (char *)"python3"},
	    {.tid = 2001, .name = (char *)"intra-op"},
	};
	for (size_t i = 0; i < sizeof(th) / sizeof(th[0]); i++)
		check(sp_prof_writer_thread(g.w, &th[i]), "thread");
	const uint32_t mod = SP_RANGE_MODULE;
	struct sp_prof_range r[] = {
	    {R_INFER, 0, (char *)"model_inference", NULL, 0, 0},
	    {R_RESNET, R_INFER, (char *)"ResNet", NULL, mod, 0},
	    {R_CONV1, R_RESNET, (char *)"conv1", NULL, mod, 0},
	    {R_BN1, R_RESNET, (char *)"bn1", NULL, mod, 0},
	    {R_RELU, R_RESNET, (char *)"relu", NULL, mod, 0},
	    {R_MAXPOOL, R_RESNET, (char *)"maxpool", NULL, mod, 0},
	    {R_LAYER1, R_RESNET, (char *)"layer1", NULL, mod, 0},
	    {R_L1_0, R_LAYER1, (char *)"0", NULL, mod, 0},
	    {R_L1_0_CONV1, R_L1_0, (char *)"conv1", NULL, mod, 0},
	    {R_L1_0_BN1, R_L1_0, (char *)"bn1", NULL, mod, 0},
	    {R_L1_0_CONV2, R_L1_0, (char *)"conv2", NULL, mod, 0},
	    {R_FC, R_RESNET, (char *)"fc", NULL, mod, 0},
	    {R_L1_1, R_LAYER1, (char *)"1", NULL, mod, 0},
	    {R_L1_1_CONV1, R_L1_1, (char *)"conv1", NULL, mod, 0},
	    {R_LINEAR_PASS, R_FC, (char *)"LINEAR PASS", NULL, 0,
	     0}, /* record_function in a module */
	    {R_SOFTMAX, R_RESNET, (char *)"softmax", NULL, mod, 0},
	};
	for (size_t i = 0; i < sizeof(r) / sizeof(r[0]); i++)
		check(sp_prof_writer_range(g.w, &r[i]), "range");

#define PY T_START, T_MAIN, T_EVAL
		/* conv2d as Debian's libtorch runs it: autograd's unnamed kernel, then redispatch
		 */
#define CONV PY, T_CONV2D, U_VARTYPE, T_CONV, U_DISPATCH, T_CONV_RD, U_CONVIMPL, T_UCONV, T_MKLDNN
	uint32_t gil = TSTACK(&g, PY, T_GIL);
	uint32_t conv = TSTACK(&g, CONV, T_JITCONV);
	uint32_t conv_unnamed = TSTACK(&g, CONV, U_CONVIMPL, U_BNKERN); /* unnamed leaf */
	uint32_t bn = TSTACK(&g, PY, T_BN, T_BNIMPL, U_DISPATCH, T_NBN, U_BNKERN);
	uint32_t bn_alloc = TSTACK(&g, PY, T_BN, T_BNIMPL, T_NBN, T_EMPTY, T_ALLOC);
	uint32_t relu = TSTACK(&g, PY, T_RELU, T_WRAP, T_CLAMP);
	uint32_t relu_wrap = TSTACK(&g, PY, T_RELU, T_WRAP);
	uint32_t pool = TSTACK(&g, PY, T_POOL, T_POOLI, U_DISPATCH, T_POOLI_RD, T_SORT);
	uint32_t add = TSTACK(&g, PY, T_ADD);
	uint32_t fc = TSTACK(&g, PY, T_LINEAR, T_ADDMM, T_GEMM);
	uint32_t mean = TSTACK(&g, PY, T_MEAN, T_SUM);
	uint32_t soft = TSTACK(&g, PY, T_SOFTMAX, U_DISPATCH);
	uint32_t eval = TSTACK(&g, PY);
	uint32_t worker = TSTACK(&g, T_CLONE3, T_THREAD, T_WORKER, T_GEMM);
#undef CONV
#undef PY

	samples(&g, 0, 2000, gil, 0, 5, MS); /* the imports: no operator, no module */
	samples(&g, 0, 2000, conv, R_CONV1, v ? 30 : 20, MS);
	samples(&g, 0, 2000, bn, R_BN1, v ? 3 : 6, MS);
	samples(&g, 0, 2000, bn_alloc, R_BN1, 2, MS);
	samples(&g, 0, 2000, relu, R_RELU, 3, MS);
	samples(&g, 0, 2000, relu_wrap, R_RELU, 1, MS);
	if (!v)
		samples(&g, 0, 2000, pool, R_MAXPOOL, 7, MS);
	samples(&g, 0, 2000, conv, R_L1_0_CONV1, 12, MS);
	samples(&g, 0, 2000, bn, R_L1_0_BN1, 2, MS);
	samples(&g, 0, 2000, conv_unnamed, R_L1_0_CONV2, 10, MS);
	samples(&g, 0, 2000, add, R_L1_0, 2, MS);
	samples(&g, 0, 2000, conv, R_L1_1_CONV1, 8, MS);
	/* the same module called again: its time adds up */
	samples(&g, 0, 2000, conv, R_L1_0_CONV1, 4, MS);
	samples(&g, 0, 2000, mean, R_RESNET, 2, MS);
	samples(&g, 0, 2000, fc, R_FC, 4, MS);
	samples(&g, 0, 2000, fc, R_LINEAR_PASS, 3, MS);
	if (v)
		samples(&g, 0, 2000, soft, R_SOFTMAX, 5, MS);
	samples(&g, 0, 2000, eval, R_INFER, 2, MS);
	samples(&g, 1, 2001, worker, 0, 4, MS);

	struct sp_prof_stats st = {.flags = SP_STATS_FINAL, .timer = (char *)"perf-sigtrap"};
	check(sp_prof_writer_stats(g.w, &st), "stats");
	check(sp_prof_writer_close(g.w), "close");
	close(fd);
}

/*
 * The Python fixtures: a CPython 3.11 program as the sampler records it.
 * Python frames are tagged words (format/profile.h) placed inside the
 * native frame of the eval call that ran them, innermost first; each code
 * object has a PYCODE record with a 3.11 location table. The interpreter
 * (the PYINFO record names it) is a stripped python3.11 that is missing
 * here, so its functions are python3.11+0xoffset; between Python frames
 * they are plumbing that every output folds away. A C extension lives in
 * a missing _hashlib.so, and its frames stay. Files cover each kind of
 * import path: a script whose directory has a space, the standard library,
 * dist-packages, a pseudo-file. One frame could not be read (code id 0),
 * one names a code with no record, one has no instruction (no line).
 */
#define PJIT_BASE 0x30000ull
#define EXT_LO	  0x7e0000000000ull /* the missing _hashlib.so */
#define EXT_HI	  0x7e0000100000ull
#define PYI_LO	  0x5000000ull /* the missing python3.11 */
#define PYI_HI	  0x5800000ull

enum pfn {
	N_START,
	N_MAIN,
	N_RUNMAIN,
	N_CLONE3,
	N_THREAD,
	N_PYTHREAD,
	N_COUNT,
	/* the interpreter's own code, in python3.11 */
	N_EVAL = 0x2000,
	N_VCALL = 0x3000,
	N_MUL = 0x4000,
};

static const char *const pfn_names[N_COUNT] = {
    [N_START] = "_start",    [N_MAIN] = "main",		  [N_RUNMAIN] = "Py_RunMain",
    [N_CLONE3] = "__clone3", [N_THREAD] = "start_thread", [N_PYTHREAD] = "pythread_wrapper",
};

struct pcode {
	const char *name, *qualname, *file;
	int first, l1, l2; /* first line; the lines of code units 0-3 and 4-7 */
};

#define SCRIPT "/srv/my app/split.py"
static const struct pcode pcodes[] = {
    [1] = {"<module>", "<module>", SCRIPT, 1, 30, 31},
    [2] = {"main", "main", SCRIPT, 18, 20, 21},
    [3] = {"via_one", "via_one", SCRIPT, 11, 12, 12},
    [4] = {"via_two", "via_two", SCRIPT, 14, 15, 15},
    [5] = {"shared", "shared", SCRIPT, 7, 8, 8},
    [6] = {"spin", "spin", SCRIPT, 2, 3, 4},
    [7] = {"hash_work", "hash_work", SCRIPT, 23, 25, 26},
    [8] = {"run", "Thread.run", "/usr/lib/python3.11/threading.py", 970, 975, 976},
    [9] = {"_conv_forward", "Conv2d._conv_forward",
	   "/usr/lib/python3/dist-packages/torch/nn/modules/conv.py", 453, 454, 459},
    [10] = {"<lambda>", "<lambda>", "<string>", 1, 1, 1},
    [11] = {"step", "Worker.step", SCRIPT, 40, 41, 42},
};
#define N_PCODES ((uint32_t)(sizeof(pcodes) / sizeof(pcodes[0])))

/* A 3.11 location entry without columns: units code units, line + delta. */
static size_t loc_entry(uint8_t *t, unsigned units, int delta)
{
	uint32_t v = delta < 0 ? ((uint32_t)-delta << 1) | 1 : (uint32_t)delta << 1;
	size_t n = 0;
	t[n++] = (uint8_t)(0x80 | (13 << 3) | (units - 1));
	do {
		uint8_t b = v & 0x3f;
		v >>= 6;
		t[n++] = v ? (uint8_t)(b | 0x40) : b;
	} while (v);
	return n;
}

static void write_pycodes(struct sp_prof_writer *w)
{
	for (uint32_t id = 1; id < N_PCODES; id++) {
		const struct pcode *c = &pcodes[id];
		uint8_t table[16];
		size_t n = loc_entry(table, 4, c->l1 - c->first);
		n += loc_entry(table + n, 4, c->l2 - c->l1);
		struct sp_prof_pycode r = {.id = id,
					   .minor = 11,
					   .firstlineno = c->first,
					   .name = (char *)c->name,
					   .qualname = (char *)c->qualname,
					   .filename = (char *)c->file,
					   .linetable = table,
					   .linetable_len = n};
		check(sp_prof_writer_pycode(w, &r), "pycode");
	}
}

/* Stack entries, root first: a native JIT function, a Python frame, or C extension code. */
#define PY(code, instr) (0x10000u + (code)*0x100u + (instr))
#define NOLINE		0xffu /* an instruction not known */
#define EXT(off)	(0x1000000u + (off))

static uint64_t py_word(unsigned e)
{
	if (e >= 0x1000000u)
		return EXT_LO + (e - 0x1000000u);
	if (e >= 0x10000u) {
		uint32_t instr = e & 0xff;
		return sp_pyframe_word((e - 0x10000u) >> 8,
				       instr == NOLINE ? SP_PYFRAME_NO_INSTR : instr);
	}
	return e >= N_COUNT ? PYI_LO + e : PJIT_BASE + e * JIT_SIZE;
}

static uint32_t py_stack(struct gen *g, int n, const unsigned *root_first)
{
	uint64_t pcs[64];
	for (int i = 0; i < n; i++) {
		unsigned e = root_first[n - 1 - i];
		pcs[i] = py_word(e);
		/* native code: the leaf at its PC, callers at a return address */
		if (e < 0x10000u || e >= 0x1000000u)
			pcs[i] += i ? 0x21 : 0x10;
	}
	struct sp_prof_stack s = {.id = ++g->next_stack, .depth = (uint32_t)n, .pcs = pcs};
	check(sp_prof_writer_stack(g->w, &s), "stack");
	return s.id;
}

#define PSTACK(g, ...)                                                                             \
	py_stack(g, (int)(sizeof((unsigned[]){__VA_ARGS__}) / sizeof(unsigned)),                   \
		 (const unsigned[]){__VA_ARGS__})

/*
 * py-base (v = 0) and py-new (v = 1): new spends more on spin's second
 * line, no longer hashes and adds the lambda, so a diff has every category.
 */
static void write_python(const char *path, int v)
{
	int fd;
	struct gen g = {.clock = {0}};
	struct sp_prof_header h = {
	    .version = SP_PROFILE_VERSION,
	    .pid = v ? 6262 : 6261,
	    .ppid = 1,
	    .start_realtime_ns = 1700000000000000000ull,
	    .start_mono_ns = 1000 * MS,
	    .freq_hz = 1000,
	    .max_depth = 64,
	    .timer = (char *)"posix-cputimer",
	    .cmdline = (char *)"/usr/bin/python3 split.py",
	    .exe = (char *)"/nonexistent/python3.11",
	    .hostname = (char *)"fixture-host",
	};
	g.w = open_fixture(path, &fd, &h);
	struct sp_prof_module m = {
	    .id = 1,
	    .flags = SP_MOD_DLOPEN,
	    .start = EXT_LO,
	    .end = EXT_HI,
	    .bias = EXT_LO,
	    .path = (char *)"/nonexistent/_hashlib.so",
	    .build_id = {0x31, 0x10},
	    .build_id_len = 2,
	};
	check(sp_prof_writer_module(g.w, &m), "module");
	struct sp_prof_module interp = {
	    .id = 2,
	    .flags = SP_MOD_MAIN,
	    .start = PYI_LO,
	    .end = PYI_HI,
	    .bias = PYI_LO,
	    .path = (char *)"/nonexistent/python3.11",
	    .build_id = {0x31, 0x11},
	    .build_id_len = 2,
	};
	check(sp_prof_writer_module(g.w, &interp), "module");
	for (int f = 0; f < N_COUNT; f++) {
		struct sp_prof_jit j = {.start = PJIT_BASE + f * JIT_SIZE,
					.size = JIT_SIZE,
					.name = (char *)pfn_names[f]};
		check(sp_prof_writer_jit(g.w, &j), "jit");
	}
	struct sp_prof_pyinfo pi = {.version = 3 << 16 | 11 << 8 | 2,
				    .flags = SP_PYINFO_ACTIVE,
				    .module = (char *)"/nonexistent/python3.11",
				    .status = (char *)"Python 3.11.2: frames are read"};
	check(sp_prof_writer_pyinfo(g.w, &pi), "pyinfo");
	struct sp_prof_thread th[] = {
	    {.tid = 3000, .name = (char *)"python3"},
	    {.tid = 3001, .name = (char *)"py-worker"},
	};
	for (size_t i = 0; i < sizeof(th) / sizeof(th[0]); i++)
		check(sp_prof_writer_thread(g.w, &th[i]), "thread");
	write_pycodes(g.w);

#define TOP N_START, N_MAIN, N_RUNMAIN, N_EVAL, PY(1, 0), PY(2, 1)
	/* spin's two lines, by two paths; the leaf is the interpreter's arithmetic */
	uint32_t spin1 = PSTACK(&g, TOP, PY(3, 0), PY(5, 0), PY(6, 1), N_MUL);
	uint32_t spin2 = PSTACK(&g, TOP, PY(4, 0), PY(5, 0), PY(6, 5), N_MUL);
	/* a C extension, and a Python callback from it through a second eval loop */
	uint32_t hash = PSTACK(&g, TOP, PY(7, 2), EXT(0x1200), EXT(0x4400));
	uint32_t callback = PSTACK(&g, TOP, PY(7, 6), EXT(0x1200), N_VCALL, N_EVAL, PY(11, 4));
	/* the second line of main, a Python leaf seen in the eval loop itself */
	uint32_t main2 = PSTACK(&g, N_START, N_MAIN, N_RUNMAIN, N_EVAL, PY(1, 4), PY(2, 5), N_EVAL);
	/* frames that could not be read, not recorded, no instruction */
	uint32_t odd = PSTACK(&g, TOP, PY(0, 0), PY(99, 0), PY(5, NOLINE), N_MUL);
	uint32_t lambda = PSTACK(&g, TOP, PY(10, 0), N_MUL);
	uint32_t worker =
	    PSTACK(&g, N_CLONE3, N_THREAD, N_PYTHREAD, N_EVAL, PY(8, 1), PY(9, 0), PY(9, 4), N_MUL);
#undef TOP

	samples(&g, 0, 3000, spin1, 0, 20, MS);
	samples(&g, 0, 3000, spin2, 0, v ? 30 : 10, MS);
	if (!v)
		samples(&g, 0, 3000, hash, 0, 8, MS);
	samples(&g, 0, 3000, callback, 0, 3, MS);
	samples(&g, 0, 3000, main2, 0, 2, MS);
	samples(&g, 0, 3000, odd, 0, 2, MS);
	if (v)
		samples(&g, 0, 3000, lambda, 0, 6, MS);
	samples(&g, 1, 3001, worker, 0, 12, MS);

	struct sp_prof_stats st = {.flags = SP_STATS_FINAL, .timer = (char *)"posix-cputimer"};
	check(sp_prof_writer_stats(g.w, &st), "stats");
	check(sp_prof_writer_close(g.w), "close");
	close(fd);
}

static void copy_prefix(const char *from, const char *to, uint64_t n)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	if (!in || !out)
		exit(1);
	for (uint64_t i = 0; i < n; i++) {
		int c = getc(in);
		if (c == EOF)
			break;
		putc(c, out);
	}
	fclose(in);
	if (fclose(out))
		exit(1);
}

/*
 * events.prof: cpu samples and samples of the user kind (an event source
 * of the program's own, such as one sample per stackprof_step(): weight in
 * steps, the step number as payload), on two threads, written as the
 * sampler writes them (SAMPLES, EVENT_SAMPLES). The views show the cpu
 * samples unless --event user asks for the others; info lists both.
 * events-new.prof (variant 1) is the same run with other step weights, for
 * diff: more steps at each push (3), fewer in memcpy (1).
 */
static void write_events(const char *path, int variant)
{
	int fd;
	struct gen g = {.clock = {0}};
	g.w = start(path, &fd, 4300);
	const enum fn s_gemm[] = {F_START, F_MAIN, F_RUN, F_CONV, F_GEMM};
	const enum fn s_bn[] = {F_START, F_MAIN, F_RUN, F_BN};
	const enum fn s_push[] = {F_START, F_MAIN, F_PUSH};
	const enum fn s_wcpy[] = {F_WORKER, F_MEMCPY};
	uint32_t gemm = stack_of(&g, 0, 5, s_gemm);
	uint32_t bn = stack_of(&g, 0, 4, s_bn);
	uint32_t push = stack_of(&g, 0, 3, s_push);
	uint32_t wcpy = stack_of(&g, 0, 2, s_wcpy);
	struct sp_prof_sample x[64];
	size_t n = 0;
	/* thread 1000: cpu in gemm and batch norm, a step at each push */
	for (int i = 0; i < 12; i++) {
		int step = i % 4 == 3;
		g.clock[0] += MS;
		x[n++] = (struct sp_prof_sample){.event = step ? SP_EVENT_USER : SP_EVENT_CPU,
						 .stack = step	  ? push
							  : i % 2 ? bn
								  : gemm,
						 .range = step ? 1 : 2,
						 .time_ns = g.clock[0],
						 .weight_ns = step ? (variant ? 3 : 1) : MS,
						 .payload = step ? (uint64_t)i / 4 + 1 : 0};
	}
	check(sp_prof_writer_samples(g.w, 1000, MS, x, n), "samples");
	/* thread 1001: cpu in memcpy, and steps of weight 2 there */
	n = 0;
	for (int i = 0; i < 6; i++) {
		g.clock[1] += MS;
		x[n++] = (struct sp_prof_sample){.event = i >= 4 ? SP_EVENT_USER : SP_EVENT_CPU,
						 .stack = wcpy,
						 .time_ns = g.clock[1],
						 .weight_ns = i >= 4 ? (variant ? 1 : 2) : MS,
						 .payload = i >= 4 ? 10 + (uint64_t)i : 0};
	}
	check(sp_prof_writer_samples(g.w, 1001, MS, x, n), "samples");
	struct sp_prof_stats st = {
	    .flags = SP_STATS_FINAL, .samples = 18, .timer = (char *)"posix-cputimer"};
	check(sp_prof_writer_stats(g.w, &st), "stats");
	check(sp_prof_writer_close(g.w), "close");
	close(fd);
}

/* A xorshift generator: the big profile is the same on every run. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void write_big(const char *path, unsigned long n_samples, unsigned long n_stacks)
{
	int fd;
	struct gen g = {.clock = {0}};
	g.w = start(path, &fd, 5000);
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	uint64_t pcs[40];
	for (unsigned long i = 0; i < n_stacks; i++) {
		/* a root-shared prefix, then branches: shaped like a real call tree */
		uint32_t depth = 8 + (uint32_t)(rnd(&seed) % 30);
		for (uint32_t k = 0; k < depth; k++) {
			uint64_t f = k < 3 ? (uint64_t)k : rnd(&seed) % F_COUNT;
			pcs[depth - 1 - k] =
			    JIT_BASE + f * JIT_SIZE + 0x10 + (rnd(&seed) % 8) * 0x10;
		}
		struct sp_prof_stack s = {.id = (uint32_t)i + 1, .depth = depth, .pcs = pcs};
		check(sp_prof_writer_stack(g.w, &s), "stack");
	}
	for (unsigned long i = 0; i < n_samples; i++) {
		uint32_t stack = (uint32_t)(i < n_stacks ? i + 1 : 1 + rnd(&seed) % n_stacks);
		int slot = (int)(rnd(&seed) % 3);
		samples(&g, slot, 1000 + slot, stack, (uint32_t)(rnd(&seed) % 3), 1, MS);
	}
	check(sp_prof_writer_close(g.w), "close");
	close(fd);
}

int main(int argc, char **argv)
{
	char path[4096], path2[4096];
	if (argc == 5 && !strcmp(argv[1], "--big")) {
		write_big(argv[2], strtoul(argv[3], NULL, 10), strtoul(argv[4], NULL, 10));
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: gen-fixtures DIR | --big FILE SAMPLES STACKS\n");
		return 2;
	}
	uint64_t cut = 0;
	snprintf(path, sizeof(path), "%s/base.prof", argv[1]);
	write_profile(path, 0, &cut);
	snprintf(path2, sizeof(path2), "%s/truncated.prof", argv[1]);
	/* cut a little after a flush: the reader keeps what came before it */
	copy_prefix(path, path2, cut + 7);
	snprintf(path, sizeof(path), "%s/new.prof", argv[1]);
	write_profile(path, 1, NULL);

	snprintf(path, sizeof(path), "%s/ops-base.prof", argv[1]);
	write_torch(path, 0);
	snprintf(path, sizeof(path), "%s/ops-new.prof", argv[1]);
	write_torch(path, 1);

	snprintf(path, sizeof(path), "%s/py-base.prof", argv[1]);
	write_python(path, 0);
	snprintf(path, sizeof(path), "%s/py-new.prof", argv[1]);
	write_python(path, 1);

	snprintf(path, sizeof(path), "%s/events.prof", argv[1]);
	write_events(path, 0);
	snprintf(path, sizeof(path), "%s/events-new.prof", argv[1]);
	write_events(path, 1);

	snprintf(path, sizeof(path), "%s/junk.prof", argv[1]);
	FILE *f = fopen(path, "wb");
	if (!f)
		return 1;
	fputs("this is not a stackprof profile\n", f);
	return fclose(f) ? 1 : 0;
}
