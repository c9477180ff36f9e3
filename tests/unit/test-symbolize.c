/*
 * test-symbolize.c - unit tests for symbolize/: inline chains, C++ names,
 * return addresses (PC-1), the .eh_frame fallback for unnamed code, symbol
 * sizes, build-id checks, module order, JIT ranges and the vDSO image.
 *
 * The code under test is this program itself (it links tests/symbolize/
 * shapes.c): the test looks up its own functions at their run-time
 * addresses, as a profile would. Copies made at build time stand in for
 * the other cases:
 *   argv[1]  this program with --strip-debug (symbols, no DWARF)
 *   argv[2]  this program with --strip-all (no .symtab: .eh_frame only)
 *   argv[3]  shapes linked with another build-id
 *   argv[4]  tests/symbolize/shapes.c, for the MARK: line numbers
 * Exit 0 pass, 1 fail, 77 skip.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "symbolize/demangle.h"
#include "tests/symbolize/shapes.h"
#include "symbolize/symbolize.h"

static int sp_failures;

static void sp_fail(int line, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sp_fail(int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "test-symbolize.c:%d: FAIL: ", line);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	sp_failures++;
}

#define CHECK(cond, ...)                                                                           \
	do {                                                                                       \
		if (!(cond))                                                                       \
			sp_fail(__LINE__, __VA_ARGS__);                                            \
	} while (0)

/* This program's mapping: load bias, range and build-id, as the sampler records them. */
struct sp_self {
	uint64_t bias, start, end;
	uint8_t build_id[64];
	size_t build_id_len;
	char path[4096];
};

static int sp_self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct sp_self *s = arg;
	s->bias = info->dlpi_addr;
	s->start = UINT64_MAX;
	s->end = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD) {
			uint64_t lo = info->dlpi_addr + ph->p_vaddr;
			if (lo < s->start)
				s->start = lo;
			if (lo + ph->p_memsz > s->end)
				s->end = lo + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE) {
			const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
			const char *end = p + ph->p_memsz;
			while (p + sizeof(ElfW(Nhdr)) <= end) {
				const ElfW(Nhdr) *nh = (const void *)p;
				const char *name = p + sizeof(*nh);
				const char *desc = name + ((nh->n_namesz + 3) & ~3u);
				if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
				    !memcmp(name, "GNU", 4) &&
				    nh->n_descsz <= sizeof(s->build_id)) {
					memcpy(s->build_id, desc, nh->n_descsz);
					s->build_id_len = nh->n_descsz;
				}
				p = desc + ((nh->n_descsz + 3) & ~3u);
			}
		}
	}
	return 1; /* the first object is the program */
}

/* The line of "MARK:<name>" in the shapes source, or 0. */
static unsigned sp_mark(const char *src, const char *name)
{
	FILE *f = fopen(src, "r");
	char line[512], want[128];
	unsigned n = 0, found = 0;
	snprintf(want, sizeof(want), "MARK:%s */", name);
	while (f && fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, want)) {
			found = n;
			break;
		}
	}
	if (f)
		fclose(f);
	if (!found)
		sp_fail(__LINE__, "no MARK:%s in %s", name, src);
	return found;
}

static const char *sp_base(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p ? p : "(null)";
}

static struct sp_symbolizer *sp_new_with(const struct sp_self *self, const char *path,
					 unsigned flags, const uint8_t *bid, size_t bid_len)
{
	struct sp_symbolizer *s = sp_symbolizer_new(flags);
	if (!s ||
	    sp_symbolizer_add_module(s, path, self->start, self->end, self->bias, bid, bid_len)) {
		fprintf(stderr, "cannot set up a symbolizer for %s\n", path);
		exit(1);
	}
	return s;
}

static void sp_dump(const char *what, const struct sp_frame *f, int n)
{
	fprintf(stderr, "  %s: %d frame(s)\n", what, n);
	for (int i = 0; i < n; i++)
		fprintf(stderr, "    [%d] kind %d %s at %s:%u:%u (%s+0x%llx)\n", i, f[i].kind,
			f[i].func, f[i].file ? f[i].file : "??", f[i].line, f[i].column,
			f[i].module ? f[i].module : "-", (unsigned long long)f[i].offset);
}

static void test_inline_chain(const struct sp_self *self, const char *src)
{
	struct sp_symbolizer *s = sp_new_with(self, self->path, 0, NULL, 0);
	const struct sp_frame *f;
	int n = sp_symbolizer_lookup(s, sp_shape_ret[SP_SHAPE_RET_INLINED], true, &f);
	unsigned probe = sp_mark(src, "helper-calls-probe");
	unsigned call = sp_mark(src, "leaf-calls-helper");
	CHECK(n == 2, "inlined probe call: %d frames, want 2 (helper inlined into leaf)", n);
	if (n == 2) {
		CHECK(!strcmp(f[0].func, "sp_shape_helper") && f[0].kind == SP_FRAME_INLINED,
		      "innermost frame %s kind %d, want inlined sp_shape_helper", f[0].func,
		      f[0].kind);
		CHECK(f[0].line == probe && !strcmp(sp_base(f[0].file), "shapes.c"),
		      "innermost at %s:%u, want shapes.c:%u", sp_base(f[0].file), f[0].line, probe);
		CHECK(!strcmp(f[1].func, "sp_shape_leaf") && f[1].kind == SP_FRAME_FUNC,
		      "outer frame %s kind %d, want sp_shape_leaf", f[1].func, f[1].kind);
		CHECK(f[1].line == call && !strcmp(sp_base(f[1].file), "shapes.c"),
		      "outer frame at %s:%u, want the call site shapes.c:%u", sp_base(f[1].file),
		      f[1].line, call);
		CHECK(f[0].module && !strcmp(f[0].module, sp_base(self->path)),
		      "module %s, want %s", f[0].module ? f[0].module : "(null)",
		      sp_base(self->path));
	}
	if (sp_failures)
		sp_dump("inlined probe call", f, n);

	/* each distinct address is resolved once: the same frames come back */
	const struct sp_frame *again;
	int n2 = sp_symbolizer_lookup(s, sp_shape_ret[SP_SHAPE_RET_INLINED], true, &again);
	CHECK(n2 == n && again == f, "a second lookup did not come from the cache");
	sp_symbolizer_free(s);

	/* --no-inline: one frame, the outer function at its call line */
	s = sp_new_with(self, self->path, SP_SYM_NO_INLINE, NULL, 0);
	n = sp_symbolizer_lookup(s, sp_shape_ret[SP_SHAPE_RET_INLINED], true, &f);
	CHECK(n == 1 && !strcmp(f[0].func, "sp_shape_leaf") && f[0].line == call,
	      "SP_SYM_NO_INLINE: %d frames, %s:%u, want sp_shape_leaf:%u", n, f[0].func, f[0].line,
	      call);
	sp_symbolizer_free(s);
}

static void test_return_address(const struct sp_self *self, const char *src)
{
	struct sp_symbolizer *s = sp_new_with(self, self->path, SP_SYM_BASENAMES, NULL, 0);
	uintptr_t ra = sp_shape_ret[SP_SHAPE_RET_PLAIN];
	unsigned call = sp_mark(src, "mid-calls-probe");
	unsigned after = sp_mark(src, "mid-after-probe");
	const struct sp_frame *f;
	int n = sp_symbolizer_lookup(s, ra, true, &f);
	CHECK(n == 1 && !strcmp(f[0].func, "sp_shape_mid") && f[0].line == call,
	      "return address looked up at PC-1: %s:%u, want sp_shape_mid:%u", f[0].func, f[0].line,
	      call);
	CHECK(!strcmp(f[0].file ? f[0].file : "", "shapes.c"),
	      "SP_SYM_BASENAMES: file %s, want shapes.c", f[0].file ? f[0].file : "(null)");
	CHECK(f[0].offset == ra - 1 - self->bias, "offset 0x%llx, want the vaddr of PC-1",
	      (unsigned long long)f[0].offset);
	/* the same address as an interrupted PC is the statement after the call */
	n = sp_symbolizer_lookup(s, ra, false, &f);
	CHECK(n == 1 && !strcmp(f[0].func, "sp_shape_mid") && f[0].line == after,
	      "leaf PC at a return address: %s:%u, want sp_shape_mid:%u", f[0].func, f[0].line,
	      after);

	/* function entries of a noinline chain */
	struct {
		void *fn;
		const char *name;
	} chain[] = {
	    {(void *)sp_shape_top, "sp_shape_top"},
	    {(void *)sp_shape_mid, "sp_shape_mid"},
	    {(void *)sp_shape_leaf, "sp_shape_leaf"},
	};
	for (size_t i = 0; i < sizeof(chain) / sizeof(chain[0]); i++) {
		/* the first instruction may already belong to inlined code: the
		 * outermost frame is the function */
		n = sp_symbolizer_lookup(s, (uintptr_t)chain[i].fn, false, &f);
		CHECK(n >= 1 && !strcmp(f[n - 1].func, chain[i].name) &&
			  f[n - 1].kind == SP_FRAME_FUNC,
		      "entry of %s: %s", chain[i].name, f[n - 1].func);
	}
	sp_symbolizer_free(s);
}

static void test_cxx_names(const struct sp_self *self, const char *nodebug)
{
	if (!sp_demangle_available()) {
		fprintf(stderr, "note: no libstdc++.so.6 to demangle with; C++ checks skipped\n");
		return;
	}
	/* from DW_AT_linkage_name, and from .symtab alone */
	const char *paths[] = {self->path, nodebug};
	for (int i = 0; i < 2; i++) {
		struct sp_symbolizer *s = sp_new_with(self, paths[i], 0, NULL, 0);
		const struct sp_frame *f;
		int n = sp_symbolizer_lookup(s, (uintptr_t)sp_shape_cxx + 1, false, &f);
		CHECK(n == 1 && !strcmp(f[0].func, "ns::foo(int)"),
		      "%s: C++ name %s, want ns::foo(int)", sp_base(paths[i]), f[0].func);
		sp_symbolizer_free(s);
		s = sp_new_with(self, paths[i], SP_SYM_NO_DEMANGLE, NULL, 0);
		n = sp_symbolizer_lookup(s, (uintptr_t)sp_shape_cxx + 1, false, &f);
		CHECK(n == 1 && !strcmp(f[0].func, "_ZN2ns3fooEi"),
		      "%s: SP_SYM_NO_DEMANGLE gave %s", sp_base(paths[i]), f[0].func);
		sp_symbolizer_free(s);
	}
}

static void test_symbol_size(const struct sp_self *self, const char *nodebug)
{
	struct sp_symbolizer *s = sp_new_with(self, nodebug, 0, NULL, 0);
	const struct sp_frame *f;
	uintptr_t sized = (uintptr_t)sp_shape_sized;
	int n = sp_symbolizer_lookup(s, sized, false, &f);
	CHECK(n == 1 && !strcmp(f[0].func, "sp_shape_sized"), "sized symbol itself: %s", f[0].func);
	for (uintptr_t off = 1; off < 32; off += 10) {
		n = sp_symbolizer_lookup(s, sized + off, false, &f);
		CHECK(n == 1 && strcmp(f[0].func, "sp_shape_sized") &&
			  f[0].kind == SP_FRAME_UNNAMED,
		      "+%u past a 1-byte symbol named %s (kind %d); want unnamed", (unsigned)off,
		      f[0].func, f[0].kind);
	}
	const char *sym = sp_symbolizer_symbol(s, sized + 5, NULL);
	CHECK(!sym, "sp_symbolizer_symbol past the size gave %s", sym);
	uint64_t start = 0;
	sym = sp_symbolizer_symbol(s, (uintptr_t)sp_shape_mid + 2, &start);
	CHECK(sym && !strcmp(sym, "sp_shape_mid") && start == (uintptr_t)sp_shape_mid,
	      "sp_symbolizer_symbol inside sp_shape_mid: %s", sym ? sym : "(null)");
	sp_symbolizer_free(s);
}

static void test_ehframe_fallback(const struct sp_self *self, const char *stripped)
{
	struct sp_symbolizer *s = sp_new_with(self, stripped, 0, NULL, 0);
	uintptr_t fn = (uintptr_t)sp_shape_static_ptr;
	const struct sp_frame *a, *b;
	int na = sp_symbolizer_lookup(s, fn + 3, false, &a);
	int nb = sp_symbolizer_lookup(s, fn + 12, true, &b);
	char want[4200];
	snprintf(want, sizeof(want), "%s+0x%llx", sp_base(stripped),
		 (unsigned long long)(fn - self->bias));
	CHECK(na == 1 && a[0].kind == SP_FRAME_UNNAMED && !strcmp(a[0].func, want),
	      "stripped static function: %s (kind %d), want %s", a[0].func, a[0].kind, want);
	CHECK(nb == 1 && b[0].kind == SP_FRAME_UNNAMED && !strcmp(b[0].func, a[0].func),
	      "two PCs in one unnamed function: %s and %s", a[0].func, b[0].func);
	CHECK(a[0].offset == fn - self->bias, "unnamed offset 0x%llx, want the function start",
	      (unsigned long long)a[0].offset);
	sp_symbolizer_free(s);
}

static void test_build_id(const struct sp_self *self, const char *otherid)
{
	if (!self->build_id_len) {
		fprintf(stderr,
			"note: this test program has no build-id; build-id checks skipped\n");
		return;
	}
	/* the right file with the recorded build-id: used */
	struct sp_symbolizer *s =
	    sp_new_with(self, self->path, 0, self->build_id, self->build_id_len);
	const struct sp_frame *f;
	int n = sp_symbolizer_lookup(s, (uintptr_t)sp_shape_mid, false, &f);
	CHECK(n == 1 && !strcmp(f[0].func, "sp_shape_mid"), "matching build-id: %s", f[0].func);
	CHECK(!*sp_symbolizer_warnings(s), "warnings for a good module: %s",
	      sp_symbolizer_warnings(s));
	sp_symbolizer_free(s);

	/* another build at the recorded path: never trusted */
	s = sp_new_with(self, otherid, 0, self->build_id, self->build_id_len);
	uintptr_t pc = (uintptr_t)sp_shape_mid + 4;
	n = sp_symbolizer_lookup(s, pc, false, &f);
	char want[4200];
	snprintf(want, sizeof(want), "%s+0x%llx", sp_base(otherid),
		 (unsigned long long)(pc - self->bias));
	CHECK(n == 1 && f[0].kind == SP_FRAME_UNNAMED && !strcmp(f[0].func, want),
	      "build-id mismatch gave %s (kind %d), want %s", f[0].func, f[0].kind, want);
	CHECK(strstr(sp_symbolizer_warnings(s), "build-id") != NULL, "no build-id warning: '%s'",
	      sp_symbolizer_warnings(s));
	sp_symbolizer_free(s);

	/* a file that is gone */
	s = sp_new_with(self, "/nonexistent/dir/libgone.so", 0, NULL, 0);
	n = sp_symbolizer_lookup(s, self->start + 0x10, false, &f);
	snprintf(want, sizeof(want), "libgone.so+0x%llx",
		 (unsigned long long)(self->start + 0x10 - self->bias));
	CHECK(n == 1 && f[0].kind == SP_FRAME_UNNAMED && !strcmp(f[0].func, want),
	      "missing file gave %s, want %s", f[0].func, want);
	CHECK(strstr(sp_symbolizer_warnings(s), "libgone.so") != NULL,
	      "no warning for a missing file: '%s'", sp_symbolizer_warnings(s));
	sp_symbolizer_free(s);
}

static void test_map(const struct sp_self *self)
{
	struct sp_symbolizer *s = sp_symbolizer_new(0);
	const struct sp_frame *f;
	int n = sp_symbolizer_lookup(s, 0x1234, false, &f);
	CHECK(n == 1 && f[0].kind == SP_FRAME_UNKNOWN && !strcmp(f[0].func, "0x1234"),
	      "no module: %s kind %d", f[0].func, f[0].kind);
	CHECK(sp_symbolizer_add_module(s, "/x", 10, 10, 0, NULL, 0) == -EINVAL,
	      "an empty range was accepted");

	/* added in any order; a later module over the same range wins */
	sp_symbolizer_add_module(s, "/lib/late.so", 0x200000, 0x300000, 0x200000, NULL, 0);
	sp_symbolizer_add_module(s, "/lib/early.so", 0x100000, 0x200000, 0x100000, NULL, 0);
	n = sp_symbolizer_lookup(s, 0x150000, false, &f);
	CHECK(n == 1 && !strcmp(f[0].func, "early.so+0x50000"), "first module: %s", f[0].func);
	n = sp_symbolizer_lookup(s, 0x250000, false, &f);
	CHECK(n == 1 && !strcmp(f[0].func, "late.so+0x50000"), "second module: %s", f[0].func);
	sp_symbolizer_add_module(s, "/lib/reused.so", 0x240000, 0x260000, 0x240000, NULL, 0);
	n = sp_symbolizer_lookup(s, 0x250000, false, &f);
	CHECK(n == 1 && !strcmp(f[0].func, "reused.so+0x10000"), "dlopen over a range: %s",
	      f[0].func);
	n = sp_symbolizer_lookup(s, 0x270000, false, &f);
	CHECK(n == 1 && !strcmp(f[0].func, "late.so+0x70000"), "after the reused range: %s",
	      f[0].func);

	/* JIT symbols */
	sp_symbolizer_add_jit(s, 0x7000000, 0x100, "jit_conv_kernel");
	n = sp_symbolizer_lookup(s, 0x7000050, true, &f);
	CHECK(n == 1 && f[0].kind == SP_FRAME_JIT && !strcmp(f[0].func, "jit_conv_kernel"),
	      "JIT: %s kind %d", f[0].func, f[0].kind);
	n = sp_symbolizer_lookup(s, 0x7000100, false, &f);
	CHECK(n == 1 && f[0].kind == SP_FRAME_UNKNOWN, "past a JIT symbol: %s", f[0].func);
	sp_symbolizer_free(s);
	(void)self;
}

/* The vDSO, as the sampler copies it. */
static void test_vdso(void)
{
	const ElfW(Ehdr) *eh = (const void *)getauxval(AT_SYSINFO_EHDR);
	if (!eh) {
		fprintf(stderr, "note: no vDSO; image check skipped\n");
		return;
	}
	const ElfW(Phdr) *ph = (const void *)((const char *)eh + eh->e_phoff);
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < eh->e_phnum; i++)
		if (ph[i].p_type == PT_LOAD) {
			lo = ph[i].p_vaddr < lo ? ph[i].p_vaddr : lo;
			hi =
			    ph[i].p_vaddr + ph[i].p_memsz > hi ? ph[i].p_vaddr + ph[i].p_memsz : hi;
		}
	size_t len = eh->e_shoff + (size_t)eh->e_shnum * eh->e_shentsize;
	uint64_t bias = (uintptr_t)eh - lo;
	/* find __vdso_clock_gettime in its .dynsym, the test's own way */
	const ElfW(Shdr) *sh = (const void *)((const char *)eh + eh->e_shoff);
	uint64_t want = 0;
	for (int i = 0; i < eh->e_shnum && !want; i++) {
		if (sh[i].sh_type != SHT_DYNSYM)
			continue;
		const ElfW(Sym) *sym = (const void *)((const char *)eh + sh[i].sh_offset);
		const char *str = (const char *)eh + sh[sh[i].sh_link].sh_offset;
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*sym); k++)
			if (!strcmp(str + sym[k].st_name, "__vdso_clock_gettime"))
				want = sym[k].st_value;
	}
	if (!want) {
		fprintf(stderr, "note: no __vdso_clock_gettime; image check skipped\n");
		return;
	}
	struct sp_symbolizer *s = sp_symbolizer_new(0);
	CHECK(sp_symbolizer_add_image(s, "[vdso]", eh, len, lo + bias, hi + bias, bias) == 0,
	      "add_image failed");
	const struct sp_frame *f;
	int n = sp_symbolizer_lookup(s, want + bias + 1, false, &f);
	CHECK(n == 1 && f[0].kind == SP_FRAME_FUNC &&
		  (!strcmp(f[0].func, "__vdso_clock_gettime") ||
		   !strcmp(f[0].func, "clock_gettime")) &&
		  f[0].module && !strcmp(f[0].module, "[vdso]"),
	      "vDSO: %s kind %d module %s", f[0].func, f[0].kind,
	      f[0].module ? f[0].module : "(null)");
	sp_symbolizer_free(s);
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: %s NODEBUG STRIPPED OTHERID SHAPES.C\n", argv[0]);
		return 1;
	}
	struct sp_self self = {0};
	ssize_t len = readlink("/proc/self/exe", self.path, sizeof(self.path) - 1);
	if (len <= 0) {
		fprintf(stderr, "skip: cannot read /proc/self/exe\n");
		return 77;
	}
	dl_iterate_phdr(sp_self_cb, &self);
	if (sp_shape_run(3) == 12345)
		puts("unlikely");

	test_inline_chain(&self, argv[4]);
	test_return_address(&self, argv[4]);
	test_cxx_names(&self, argv[1]);
	test_symbol_size(&self, argv[1]);
	test_ehframe_fallback(&self, argv[2]);
	test_build_id(&self, argv[3]);
	test_map(&self);
	test_vdso();

	if (sp_failures) {
		fprintf(stderr, "test-symbolize: %d failure(s)\n", sp_failures);
		return 1;
	}
	puts("test-symbolize: ok");
	return 0;
}
