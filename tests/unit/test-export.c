/*
 * test-export.c - unit tests of the export layer's text rules: collapsed
 * stack escaping, frame label styles, PyTorch time units, JSON strings, the
 * key_averages table layout (checked against torch's own output in
 * shared/reference), the collapsed writer on a hand-built model, and the
 * model's profile() window filter on a hand-built profile.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "format/buf.h"
#include "export/collapse.h"
#include "export/json.h"
#include "export/label.h"
#include "export/model.h"
#include "export/table.h"
#include "export/textfmt.h"
#include "export/view.h"
#include "tests/unit/check.h"

#define CHECK_STR(got, want)                                                                       \
	do {                                                                                       \
		const char *g_ = (got), *w_ = (want);                                              \
		if (strcmp(g_, w_)) {                                                              \
			fprintf(stderr, "%s:%d: got\n[%s]\nwant\n[%s]\n", __FILE__, __LINE__, g_,  \
				w_);                                                               \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

static const char *folded(const char *s)
{
	static struct sp_buf b;
	sp_buf_reset(&b);
	sp_label_append_folded(&b, s, strlen(s));
	sp_buf_put_u8(&b, 0);
	return (const char *)b.data;
}

static void test_escape(void)
{
	CHECK_STR(folded("batch norm; fused"), "batch_norm__fused");
	CHECK_STR(folded("a\tb\nc\rd"), "a_b_c_d");
	CHECK_STR(folded("std::vector<int, std::allocator<int> >::push_back(int const&)"),
		  "std::vector<int,_std::allocator<int>_>::push_back(int_const&)");
	/* torch's export_stacks line from shared/reference/torch_stacks.txt */
	CHECK_STR(folded("torch/nn/modules/conv.py(454): _conv_forward"),
		  "torch/nn/modules/conv.py(454):__conv_forward");
	CHECK_STR(folded("<built-in method conv2d of type object at 0x7f476052d1e0>"),
		  "<built-in_method_conv2d_of_type_object_at_0x7f476052d1e0>");
}

static const char *label(const struct sp_mframe *f, enum sp_label_style st)
{
	static struct sp_buf b;
	sp_buf_reset(&b);
	sp_label_append(&b, f, st);
	sp_buf_put_u8(&b, 0);
	return (const char *)b.data;
}

static void test_labels(void)
{
	struct sp_mframe f = {.func = "_conv_forward",
			      .file = "torch/nn/modules/conv.py",
			      .line = 454,
			      .kind = SP_FRAME_FUNC};
	CHECK_STR(label(&f, SP_LABEL_FUNC), "_conv_forward");
	CHECK_STR(label(&f, SP_LABEL_FUNC_LINE), "_conv_forward (torch/nn/modules/conv.py:454)");
	CHECK_STR(label(&f, SP_LABEL_PYTORCH), "torch/nn/modules/conv.py(454): _conv_forward");
	struct sp_mframe r = {.func = "model_inference", .file = "x.c", .kind = SP_MFRAME_RANGE};
	CHECK_STR(label(&r, SP_LABEL_PYTORCH), "model_inference");
	struct sp_mframe nofile = {.func = "libfoo.so+0x1234", .kind = SP_FRAME_UNNAMED};
	CHECK_STR(label(&nofile, SP_LABEL_FUNC_LINE), "libfoo.so+0x1234");
	enum sp_label_style st;
	CHECK(sp_label_style_parse("pytorch", &st) == 0 && st == SP_LABEL_PYTORCH);
	CHECK(sp_label_style_parse("func (file:line)", &st) == 0 && st == SP_LABEL_FUNC_LINE);
	CHECK(sp_label_style_parse("nonsense", &st) != 0);
}

static void test_textfmt(void)
{
	char b[SP_TEXTFMT_LEN];
	/* values from shared/reference/torch_key_averages.txt */
	CHECK_STR(sp_textfmt_time(b, sizeof(b), 82000), "82.000us");
	CHECK_STR(sp_textfmt_time(b, sizeof(b), 3258000), "3.258ms");
	CHECK_STR(sp_textfmt_time(b, sizeof(b), 218803000), "218.803ms");
	CHECK_STR(sp_textfmt_time(b, sizeof(b), 999999), "999.999us");
	CHECK_STR(sp_textfmt_time(b, sizeof(b), 1000000), "1.000ms");
	CHECK_STR(sp_textfmt_time(b, sizeof(b), 1260000000), "1.260s");
	CHECK_STR(sp_textfmt_share(b, sizeof(b), 49472, 218803), "22.61%");
	CHECK_STR(sp_textfmt_share(b, sizeof(b), 0, 0), "NaN");
	CHECK_STR(sp_textfmt_delta(b, sizeof(b), -82000), "-82.000us");
	CHECK_STR(sp_textfmt_delta(b, sizeof(b), 1500000), "+1.500ms");
	uint64_t ns = 0;
	CHECK(sp_textfmt_parse_duration("10ms", &ns) == 0 && ns == 10000000);
	CHECK(sp_textfmt_parse_duration("1.5s", &ns) == 0 && ns == 1500000000);
	CHECK(sp_textfmt_parse_duration("200us", &ns) == 0 && ns == 200000);
	CHECK(sp_textfmt_parse_duration("2", &ns) == 0 && ns == 2000000000);
	CHECK(sp_textfmt_parse_duration("10 ms", &ns) != 0);
	CHECK(sp_textfmt_parse_duration("-1ms", &ns) != 0);
	CHECK(sp_textfmt_parse_duration("fast", &ns) != 0);
}

static char *capture_begin(FILE **f, size_t *len)
{
	static char *buf;
	free(buf);
	buf = NULL;
	*f = open_memstream(&buf, len);
	return buf;
}

static void test_json(void)
{
	FILE *f;
	size_t len;
	char *out = NULL;
	f = open_memstream(&out, &len);
	sp_json_str(f, "a\"b\\c\n\x01 \xc3\xa9 \xff");
	fclose(f);
	CHECK_STR(out, "\"a\\\"b\\\\c\\n\\u0001 \xc3\xa9 \\ufffd\"");
	free(out);
	(void)capture_begin;
}

/*
 * A model built by hand: stacks are root first. names/self times are the
 * reference's so the table rows can be compared with torch's own text.
 */
struct fake {
	struct sp_model m;
	struct sp_mframe frames[8];
	struct sp_mstack stacks[8];
	uint32_t ids[8][8];
	uint32_t locs[8][8];
};

static void fake_stack(struct fake *fk, int i, uint64_t ns, int n, const int *frames)
{
	for (int k = 0; k < n; k++)
		fk->ids[i][k] = (uint32_t)frames[k];
	fk->stacks[i] = (struct sp_mstack){.n = (uint32_t)n,
					   .frames = fk->ids[i],
					   .locs = fk->locs[i],
					   .weight_ns = ns,
					   .samples = 1};
	fk->m.total_weight_ns += ns;
	fk->m.total_samples++;
}

static void test_table_layout(void)
{
	static struct fake fk;
	const char *names[] = {"model_inference", "aten::native_batch_norm",
			       "aten::max_pool2d_with_indices"};
	for (int i = 0; i < 3; i++)
		fk.frames[i] = (struct sp_mframe){.func = names[i], .kind = SP_FRAME_FUNC};
	fk.m.frames = fk.frames;
	fk.m.n_frames = 3;
	/* self times from torch_key_averages.txt, in ns; the total is 218.803ms */
	fake_stack(&fk, 0, 3258000, 1, (int[]){0});
	fake_stack(&fk, 1, 50938000, 2, (int[]){0, 1});
	fake_stack(&fk, 2, 23816000, 2, (int[]){0, 2});
	fake_stack(&fk, 3, 218803000 - 3258000 - 50938000 - 23816000, 1, (int[]){0});
	fk.m.stacks = fk.stacks;
	fk.m.n_stacks = 4;

	char *out = NULL;
	size_t len;
	FILE *f = open_memstream(&out, &len);
	struct sp_table_opts o = {.sort = SP_TABLE_SELF, .row_limit = 10};
	CHECK(sp_table_write(&fk.m, &o, f) == 0);
	fclose(f);
	/* torch pads the name column to the longest name + 4 and ends lines with two spaces */
	const char *sep = "---------------------------------  ------------  ------------  "
			  "------------  ------------  ------------  \n";
	const char *head = "                             Name    Self CPU %      Self CPU   "
			   "CPU total %     CPU total       Samples  \n";
	const char *bn = "          aten::native_batch_norm        23.28%      50.938ms        "
			 "23.28%      50.938ms             1  \n";
	const char *pool = "    aten::max_pool2d_with_indices        10.88%      23.816ms        "
			   "10.88%      23.816ms             1  \n";
	CHECK(!strncmp(out, sep, strlen(sep)));
	CHECK(strstr(out, head) != NULL);
	CHECK(strstr(out, bn) != NULL);
	CHECK(strstr(out, pool) != NULL);
	CHECK(strstr(out, "Self CPU time total: 218.803ms\n") != NULL);
	if (failures)
		fprintf(stderr, "%s", out);
	free(out);

	/* group_by_stack_n: Source Location lines, innermost first, then a blank line */
	fk.frames[1].file = "torch/nn/functional.py";
	fk.frames[1].line = 2419;
	out = NULL;
	f = open_memstream(&out, &len);
	o.stack_n = 5;
	o.row_limit = 0;
	CHECK(sp_table_write(&fk.m, &o, f) == 0);
	fclose(f);
	/* the source column is min(longest entry + 4, 75) wide, left aligned */
	const char *e1 = "torch/nn/functional.py(2419): aten::native_batch_norm";
	int w = (int)strlen(e1) + 4;
	char want[256];
	snprintf(want, sizeof(want), "             1  %-*s  \n", w, e1);
	CHECK(strstr(out, want) != NULL);
	snprintf(want, sizeof(want), "  %-*s  \n", w, "model_inference");
	CHECK(strstr(out, want) != NULL);
	/* a line of spaces as long as the separator closes each row */
	size_t seplen = strchr(out, '\n') - out;
	char *blank = malloc(seplen + 3);
	memset(blank, ' ', seplen);
	strcpy(blank + seplen, "\n-");
	CHECK(strstr(out, blank) != NULL);
	free(blank);
	if (failures)
		fprintf(stderr, "%s", out);
	free(out);
}

static void test_collapse_model(void)
{
	static struct fake fk;
	fk.frames[0] = (struct sp_mframe){.func = "main", .kind = SP_FRAME_FUNC};
	fk.frames[1] = (struct sp_mframe){.func = "a b;c", .file = "f.c", .line = 3};
	fk.frames[2] = (struct sp_mframe){.func = "a b;c", .file = "f.c", .line = 4};
	fk.frames[3] = (struct sp_mframe){.func = "inl", .kind = SP_FRAME_INLINED};
	fk.m.frames = fk.frames;
	fk.m.n_frames = 4;
	fake_stack(&fk, 0, 1400, 2, (int[]){0, 1});
	fake_stack(&fk, 1, 1200, 2, (int[]){0, 2});
	fake_stack(&fk, 2, 400, 3, (int[]){0, 2, 3});
	fk.m.stacks = fk.stacks;
	fk.m.n_stacks = 3;

	char *out = NULL;
	size_t len;
	FILE *f = open_memstream(&out, &len);
	struct sp_collapse_opts o = {0};
	CHECK(sp_collapse_write(&fk.m, &o, f) == 0);
	fclose(f);
	/* 400ns rounds to 0us: the line is left out rather than printed as 0 */
	CHECK_STR(out, "main;a_b_c_(f.c:3) 1\nmain;a_b_c_(f.c:4) 1\n");
	free(out);

	/* --frame func merges the two lines of one function, and sums before rounding */
	out = NULL;
	f = open_memstream(&out, &len);
	o.label.style = SP_LABEL_FUNC;
	o.label.inline_mark = true;
	CHECK(sp_collapse_write(&fk.m, &o, f) == 0);
	fclose(f);
	CHECK_STR(out, "main;a_b_c 3\n");
	free(out);

	out = NULL;
	f = open_memstream(&out, &len);
	o.metric = SP_METRIC_SAMPLES;
	CHECK(sp_collapse_write(&fk.m, &o, f) == 0);
	fclose(f);
	CHECK_STR(out, "main;a_b_c 2\nmain;a_b_c;inl_[i] 1\n");
	free(out);
}

/* Samples outside every window are left out unless all_samples is set. */
static void test_model_windows(void)
{
	uint64_t pcs[1] = {0x1000};
	struct sp_prof_stack st = {.id = 1, .depth = 1, .pcs = pcs};
	struct sp_prof_sample smp[5];
	const uint64_t times[5] = {50, 100, 150, 250, 400};
	for (int i = 0; i < 5; i++)
		smp[i] = (struct sp_prof_sample){
		    .tid = 1, .stack = 1, .time_ns = times[i], .weight_ns = 10u << i};
	struct sp_prof_window win[2] = {{100, 200}, {300, UINT64_MAX}};
	struct sp_profile p = {.stacks = &st, .n_stacks = 1, .samples = smp, .n_samples = 5};

	struct sp_model *m = sp_model_build(&p, NULL);
	CHECK(m && m->total_samples == 5 && m->outside_windows == 0);
	sp_model_free(m);

	p.windows = win;
	p.n_windows = 2;
	m = sp_model_build(&p, NULL);
	/* kept: 100 and 150 (first window, its begin included), 400 (the open one) */
	CHECK(m && m->total_samples == 3 && m->outside_windows == 2 &&
	      m->total_weight_ns == (20u + 40u + 160u));
	sp_model_free(m);

	struct sp_model_opts o = {.all_samples = true};
	m = sp_model_build(&p, &o);
	CHECK(m && m->total_samples == 5 && m->outside_windows == 0);
	sp_model_free(m);
}

/*
 * A Source Location too long for its 75 columns is cut in its middle: the
 * path first, then the argument list; the function's name stays (torch
 * keeps the end behind "...", which lost it).
 */
static void test_table_cut(void)
{
	static struct fake fk;
	static const char *const funcs[] = {
	    "leaf_function_with_a_rather_long_name",
	    "at::native::structured_addmm_out_cpu::impl(at::Tensor const&, at::Tensor const&, "
	    "at::Tensor const&, c10::Scalar const&, c10::Scalar const&, at::Tensor const&)",
	};
	fk.frames[0] = (struct sp_mframe){
	    .func = funcs[0],
	    .file = "/build/reproducible-path/python3.11-3.11.2/a/very/deep/source/tree/of/"
		    "directories/Objects/ceval.c",
	    .line = 1234,
	    .kind = SP_FRAME_FUNC};
	fk.frames[1] = (struct sp_mframe){
	    .func = funcs[1], .file = "/src/aten/native/LinearAlgebra.cpp", .line = 77};
	fk.m.frames = fk.frames;
	fk.m.n_frames = 2;
	fake_stack(&fk, 0, 1000000, 2, (int[]){1, 0});
	fk.m.stacks = fk.stacks;
	fk.m.n_stacks = 1;
	char *out = NULL;
	size_t len;
	FILE *f = open_memstream(&out, &len);
	struct sp_table_opts o = {.stack_n = 2, .row_limit = 0};
	CHECK(sp_table_write(&fk.m, &o, f) == 0);
	fclose(f);
	/* the path loses its middle; its head, file name, line and the function stay */
	CHECK(strstr(out, "  /build/") != NULL);
	CHECK(strstr(out, "...") != NULL);
	CHECK(strstr(out, "/ceval.c(1234): leaf_function_with_a_rather_long_name  ") != NULL);
	/* the path keeps its file name; the argument list loses its middle */
	CHECK(
	    strstr(out, "...LinearAlgebra.cpp(77): at::native::structured_addmm_out_cpu::impl(") !=
	    NULL);
	CHECK(strstr(out, "...&)  ") != NULL);
	/* every line still fits: the widest is the table's own width */
	size_t widest = 0;
	for (char *l = out; *l;) {
		size_t n = strcspn(l, "\n");
		widest = n > widest ? n : widest;
		l += n + (l[n] == '\n');
	}
	CHECK(widest == 55 + 2 + 5 * 14 + 75 + 2);
	if (failures)
		fprintf(stderr, "%s", out);
	free(out);
}

/*
 * A Name longer than its 55 columns loses its middle, not its end (torch
 * keeps the first 52 characters): two unnamed frames of one library, or
 * two instances of a template, stay two readable rows. A cut never splits
 * a UTF-8 character.
 */
static void test_table_name_cut(void)
{
	static struct fake fk;
	static const char *const names[] = {
	    "libsome_rather_long_vendor_kernel_library_name.so.2.1+0x1234567",
	    "libsome_rather_long_vendor_kernel_library_name.so.2.1+0x1234abc",
	    "x\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3"
	    "\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9y",
	};
	for (int i = 0; i < 3; i++) {
		fk.frames[i] = (struct sp_mframe){.func = names[i], .kind = SP_FRAME_FUNC};
		fake_stack(&fk, i, 1000000 * (uint64_t)(i + 1), 1, (int[]){i});
	}
	fk.m.frames = fk.frames;
	fk.m.n_frames = 3;
	fk.m.stacks = fk.stacks;
	fk.m.n_stacks = 3;
	char *out = NULL;
	size_t len;
	FILE *f = open_memstream(&out, &len);
	struct sp_table_opts o = {.sort = SP_TABLE_SELF};
	CHECK(sp_table_write(&fk.m, &o, f) == 0);
	fclose(f);
	/* 26 bytes of the start, "...", 26 of the end: the offsets stay */
	CHECK(strstr(out, "\nlibsome_rather_long_vendor...rary_name.so.2.1+0x1234567  ") != NULL);
	CHECK(strstr(out, "\nlibsome_rather_long_vendor...rary_name.so.2.1+0x1234abc  ") != NULL);
	/* "x", 31 two-byte characters, "y": 26 bytes from either end would
	 * split one, so the start keeps 25 and the end 25 */
	char want[64] = "  x";
	for (int i = 0; i < 12; i++)
		strcat(want, "\xc3\xa9");
	strcat(want, "...");
	for (int i = 0; i < 12; i++)
		strcat(want, "\xc3\xa9");
	strcat(want, "y  ");
	CHECK(strstr(out, want) != NULL);
	if (failures)
		fprintf(stderr, "%s", out);
	free(out);
}

static void test_short_paths(void)
{
	struct sp_model_opts o = {.short_paths = true};
	CHECK_STR(
	    sp_model_short_path(&o, "/build/reproducible-path/python3.11-3.11.2/Python/ceval.c"),
	    "Python/ceval.c");
	CHECK_STR(sp_model_short_path(&o, "/build/reproducible-path/python3.11-3.11.2/"
					  "build-static/../Python/ceval.c"),
		  "Python/ceval.c");
	CHECK_STR(sp_model_short_path(&o, "/build/glibc-SzJkuk/glibc-2.36/nptl/pthread_create.c"),
		  "nptl/pthread_create.c");
	CHECK_STR(sp_model_short_path(&o, "/usr/src/debug/zlib-1.2.13/deflate.c"), "deflate.c");
	CHECK_STR(sp_model_short_path(&o, "./nptl/./nptl/pthread_create.c"),
		  "nptl/pthread_create.c");
	CHECK_STR(sp_model_short_path(&o, "./csu/../csu/libc-start.c"), "csu/libc-start.c");
	CHECK_STR(sp_model_short_path(&o, "/home/me/src/a.c"), "/home/me/src/a.c");
	CHECK_STR(sp_model_short_path(&o, "/build/x"), "/build/x");
	/* Python's standard library by import path, packages too; not C files */
	CHECK_STR(sp_model_short_path(&o, "/usr/lib/python3.11/threading.py"), "threading.py");
	CHECK_STR(sp_model_short_path(&o, "/usr/lib/python3.11/concurrent/futures/thread.py"),
		  "concurrent/futures/thread.py");
	CHECK_STR(sp_model_short_path(&o, "/usr/lib/python3.11/config/x.c"),
		  "/usr/lib/python3.11/config/x.c");
	/* a given prefix: a whole directory, with or without its slash */
	const char *pre[] = {"/home/me/"};
	struct sp_model_opts p = {.strip_prefixes = pre, .n_strip_prefixes = 1};
	CHECK_STR(sp_model_short_path(&p, "/home/me/src/a.c"), "src/a.c");
	pre[0] = "/home/me";
	CHECK_STR(sp_model_short_path(&p, "/home/me/src/a.c"), "src/a.c");
	CHECK_STR(sp_model_short_path(&p, "/home/meadow/a.c"), "/home/meadow/a.c");
	CHECK_STR(sp_model_short_path(&p, "/build/reproducible-path/p-1.0/x.c"),
		  "/build/reproducible-path/p-1.0/x.c");
	CHECK(sp_model_short_path(&p, NULL) == NULL);
}

/* A Python file's import path: under site-packages, the standard library,
 * and elsewhere from the outermost package directory still on disk. */
static void test_python_path(void)
{
	CHECK_STR(sp_model_python_path("/usr/lib/python3/dist-packages/torch/nn/modules/conv.py"),
		  "torch/nn/modules/conv.py");
	CHECK_STR(sp_model_python_path("/usr/lib/python3.11/json/decoder.py"), "json/decoder.py");
	CHECK_STR(sp_model_python_path("<string>"), "<string>");
	char dir[] = "/tmp/test-export-XXXXXX", path[256];
	CHECK(mkdtemp(dir) != NULL);
	static const char *const files[] = {"/pkg",	     "/pkg/__init__.py",
					    "/pkg/sub",	     "/pkg/sub/__init__.py",
					    "/pkg/sub/m.py", "/script.py"};
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", dir, files[i]);
		if (strstr(files[i], ".py"))
			fclose(fopen(path, "w"));
		else
			CHECK(mkdir(path, 0700) == 0);
	}
	snprintf(path, sizeof(path), "%s/pkg/sub/m.py", dir);
	CHECK_STR(sp_model_python_path(path), "pkg/sub/m.py");
	snprintf(path, sizeof(path), "%s/script.py", dir);
	CHECK_STR(sp_model_python_path(path), "script.py");
	/* a "." component ends the package path, as a name never has one */
	snprintf(path, sizeof(path), "%s/pkg/./sub/m.py", dir);
	CHECK_STR(sp_model_python_path(path), "sub/m.py");
	/* gone from the disk, or never a package: the file's name */
	CHECK_STR(sp_model_python_path("/nonexistent-dir/pkg/m.py"), "m.py");
	for (size_t i = sizeof(files) / sizeof(files[0]); i-- > 0;) {
		snprintf(path, sizeof(path), "%s%s", dir, files[i]);
		remove(path);
	}
	remove(dir);
}

/*
 * Operators by their Python callers (view SP_VIEW_OP_PYTHON, the table's
 * python_callers): rows are operators, split by the Python lines that
 * called them; Python code inside the innermost operator is that
 * operator's time; samples with no operator keep their Python lines.
 */
static void test_op_python_callers(void)
{
	static struct fake fk;
	fk.frames[0] = (struct sp_mframe){.func = "main", .kind = SP_FRAME_FUNC};
	fk.frames[1] = (struct sp_mframe){
	    .func = "<module>", .file = "infer.py", .line = 12, .kind = SP_MFRAME_PYTHON};
	fk.frames[2] =
	    (struct sp_mframe){.func = "Conv2d._conv_forward",
			       .file = "/usr/lib/python3/dist-packages/torch/nn/modules/conv.py",
			       .import_path = "torch/nn/modules/conv.py",
			       .line = 459,
			       .kind = SP_MFRAME_PYTHON};
	fk.frames[3] = (struct sp_mframe){.func = "at::_ops::conv2d::call(at::Tensor const&)",
					  .kind = SP_FRAME_FUNC};
	fk.frames[4] = (struct sp_mframe){.func = "conv_kernel", .kind = SP_FRAME_FUNC};
	fk.frames[5] = (struct sp_mframe){
	    .func = "hook", .file = "hooks.py", .line = 3, .kind = SP_MFRAME_PYTHON};
	fk.frames[6] = (struct sp_mframe){.func = "ResNet.forward",
					  .file = "torchvision/models/resnet.py",
					  .import_path = "torchvision/models/resnet.py",
					  .line = 285,
					  .kind = SP_MFRAME_PYTHON};
	fk.m.frames = fk.frames;
	fk.m.n_frames = 7;
	fake_stack(&fk, 0, 60000000, 5, (int[]){0, 1, 2, 3, 4});
	fake_stack(&fk, 1, 20000000, 6, (int[]){0, 1, 2, 3, 4, 5}); /* Python under the operator */
	fake_stack(&fk, 2, 10000000, 2, (int[]){0, 1});		    /* no operator */
	fake_stack(&fk, 3, 10000000, 5, (int[]){0, 6, 2, 3, 4});    /* another caller */
	fk.m.stacks = fk.stacks;
	fk.m.n_stacks = 4;
	struct sp_msample smp[4];
	for (int i = 0; i < 4; i++)
		smp[i] =
		    (struct sp_msample){.stack = (uint32_t)i, .weight_ns = fk.stacks[i].weight_ns};
	fk.m.samples = smp;
	fk.m.n_samples = 4;

	struct sp_view *v = sp_view_new(&fk.m, SP_VIEW_OP_PYTHON);
	CHECK(v != NULL);
	if (!v)
		return;
	char *out = NULL;
	size_t len;
	FILE *f = open_memstream(&out, &len);
	struct sp_table_opts o = {
	    .sort = SP_TABLE_SELF, .stack_n = 2, .row_limit = 0, .python_callers = true};
	CHECK(sp_table_write(sp_view_model(v), &o, f) == 0);
	fclose(f);
	/* 60 + 20 ms under _conv_forward called from infer.py:12; the hook's 20 are conv2d's */
	CHECK(strstr(out, "aten::conv2d        80.00%") != NULL);
	/* Python files by their import path, as torch.profiler names them */
	CHECK(strstr(out, "             2  torch/nn/modules/conv.py(459): Conv2d._conv_forward") !=
	      NULL);
	CHECK(strstr(out, "  infer.py(12): <module>") != NULL);
	/* the same operator from another line is a row of its own */
	CHECK(strstr(out, "aten::conv2d        10.00%") != NULL);
	CHECK(strstr(out, "  torchvision/models/resnet.py(285): ResNet.forward") != NULL);
	CHECK(strstr(out, "[no operator]        10.00%") != NULL);
	/* Python functions are callers, never rows */
	CHECK(strstr(out, "hook") == NULL);
	CHECK(strstr(out, "  Conv2d._conv_forward  ") == NULL);
	if (failures)
		fprintf(stderr, "%s", out);
	free(out);
	sp_view_free(v);
}

int main(void)
{
	test_escape();
	test_labels();
	test_textfmt();
	test_json();
	test_table_layout();
	test_table_cut();
	test_table_name_cut();
	test_short_paths();
	test_python_path();
	test_collapse_model();
	test_model_windows();
	test_op_python_callers();
	return check_exit("test-export");
}
