/*
 * layout-probe.c - a library that layout-runtime.py loads with ctypes into
 * a running CPython, to check the layout tables against that interpreter's
 * own memory: what its _Py_DebugOffsets say, where autoTSSkey leads, and
 * the frames the table finds on the calling thread. Test code: it reads
 * the interpreter's structures directly, which only works because the
 * calling thread is blocked in this call and its frames cannot move.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "tests/python/layout-fields.h"
#include "format/pyline.h"

/* glibc 2.36 x86-64: struct pthread's specific_1stblock (struct
 * pthread_key_data {uintptr_t seq; void *data;}[32]), from the DWARF of
 * libc6-dbg and a scan of THREAD_SELF after pthread_setspecific; each run
 * compares it with pthread_getspecific() */
#define SP_GLIBC_SPECIFIC_1STBLOCK 0x310
#define SP_GLIBC_KEY_DATA_SIZE	   16

int sp_probe_debug_offsets(const void *rt, unsigned minor, char *buf, size_t len);
int sp_probe_tss(const void *rt, unsigned minor, uint64_t out[4]);
int sp_probe_walk(unsigned minor, const void *tstate, char *buf, size_t len);

/* 0 and the parsed table as text, or the parser's error */
int sp_probe_debug_offsets(const void *rt, unsigned minor, char *buf, size_t len)
{
	struct sp_pylayout l;
	int rc = sp_pylayout_from_debug_offsets(rt, minor, &l);
	if (rc == 0)
		sp_layout_format(&l, buf, len);
	return rc;
}

/*
 * out[0] Py_tss_t._is_initialized, out[1] its key, out[2] what this
 * thread's struct pthread holds for the key (read as a signal handler
 * would: %fs:0x10 is THREAD_SELF), out[3] pthread_getspecific(key).
 */
int sp_probe_tss(const void *rt, unsigned minor, uint64_t out[4])
{
	const struct sp_pylayout *l = sp_pylayout_builtin(minor);
	if (!l)
		return -EINVAL;
	int init;
	unsigned key;
	memcpy(&init, (const char *)rt + l->rt_tss_key, sizeof init);
	memcpy(&key, (const char *)rt + l->rt_tss_key + sizeof(int), sizeof key);
	out[0] = (uint64_t)init;
	out[1] = key;
	if (key >= 32)
		return -ERANGE; /* beyond the first block: a second-level lookup */
	const char *self;
	__asm__("mov %%fs:0x10, %0" : "=r"(self));
	void *raw;
	memcpy(&raw, self + SP_GLIBC_SPECIFIC_1STBLOCK + key * SP_GLIBC_KEY_DATA_SIZE + 8,
	       sizeof raw);
	out[2] = (uint64_t)(uintptr_t)raw;
	out[3] = (uint64_t)(uintptr_t)pthread_getspecific((pthread_key_t)key);
	return 0;
}

#define RD(type, base, off) (*(const type *)((const char *)(base) + (off)))

struct out {
	char *buf;
	size_t len, n;
};

static void emit(struct out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int k = vsnprintf(o->buf + o->n, o->n < o->len ? o->len - o->n : 0, fmt, ap);
	va_end(ap);
	if (k > 0)
		o->n += (size_t)k;
}

/* A str as Python's ascii(backslashreplace) would print it. */
static void emit_str(struct out *o, const struct sp_pylayout *l, const void *s)
{
	if (!s) {
		emit(o, "<NULL>");
		return;
	}
	uint32_t state = RD(uint32_t, s, l->str_state);
	long n = RD(long, s, l->str_length);
	unsigned kind = (state >> SP_PYSTR_KIND_SHIFT) & SP_PYSTR_KIND_MASK;
	if (!(state & SP_PYSTR_COMPACT) || (kind != 1 && kind != 2 && kind != 4)) {
		emit(o, "<not compact>");
		return;
	}
	const char *data =
	    (const char *)s + (state & SP_PYSTR_ASCII ? l->str_ascii_data : l->str_compact_data);
	for (long i = 0; i < n; i++) {
		uint32_t c = kind == 1	 ? ((const uint8_t *)data)[i]
			     : kind == 2 ? ((const uint16_t *)data)[i]
					 : ((const uint32_t *)data)[i];
		if (c >= 0x20 && c < 0x7f && c != '\\')
			emit(o, "%c", (int)c);
		else if (c < 0x100)
			emit(o, "\\x%02x", c);
		else if (c < 0x10000)
			emit(o, "\\u%04x", c);
		else
			emit(o, "\\U%08x", c);
	}
}

/*
 * The calling thread's frames, innermost first, one per line:
 *   py  QUALNAME FILENAME FIRSTLINENO INSTR LINE OWNER ENTRY FRAMEADDR
 *   shim - - - - - OWNER 0 FRAMEADDR             (3.12/3.13 entry shims)
 *   incomplete QUALNAME ...                      (not started; CPython hides them)
 * tab-separated; LINE is "-" when the table gives none. 3.11: each
 * is_entry frame is followed by "cframe ADDR", the _PyCFrame of the eval
 * call that ran the segment ending there.
 */
int sp_probe_walk(unsigned minor, const void *ts, char *buf, size_t len)
{
	const struct sp_pylayout *l = sp_pylayout_builtin(minor);
	const void *code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
	struct out o = {buf, len, 0};
	if (!l || !ts || !code_type)
		return -EINVAL;
	buf[0] = 0;

	const void *f, *cf = NULL;
	if (l->kind == SP_PYFRAMES_311 || l->kind == SP_PYFRAMES_312) {
		cf = RD(const void *, ts, l->ts_frame);
		f = RD(const void *, cf, l->cf_current_frame);
	} else {
		f = RD(const void *, ts, l->ts_frame);
	}
	for (int depth = 0; f && depth < 10000; depth++) {
		const void *code = RD(const void *, f, l->fr_code);
		int owner = l->fr_owner ? RD(char, f, l->fr_owner) : 0;
		int entry = l->fr_is_entry ? RD(_Bool, f, l->fr_is_entry) : 0;
		if (owner == SP_PY_OWNED_BY_CSTACK && l->kind >= SP_PYFRAMES_312) {
			emit(&o, "shim\t-\t-\t-\t-\t-\t%d\t0\t%p\n", owner, f);
			f = RD(const void *, f, l->fr_previous);
			continue;
		}
		if (!code || RD(const void *, code, l->ob_type) != code_type) {
			emit(&o, "notcode\t-\t-\t-\t-\t-\t%d\t%d\t%p\n", owner, entry, f);
			f = RD(const void *, f, l->fr_previous);
			continue;
		}
		long instr;
		if (l->kind == SP_PYFRAMES_310) {
			instr = RD(int, f, l->fr_instr);
		} else {
			const char *p = RD(const char *, f, l->fr_instr);
			instr = (p - ((const char *)code + l->co_code_adaptive)) / 2;
		}
		bool incomplete = l->kind != SP_PYFRAMES_310 && owner != SP_PY_OWNED_BY_GENERATOR &&
				  instr < RD(int, code, l->co_firsttraceable);
		int first = RD(int, code, l->co_firstlineno);
		const void *lt = RD(const void *, code, l->co_linetable);
		int line = 0, rc = -ENOENT;
		if (instr >= 0)
			rc = sp_pyline_addr2line(minor, (const uint8_t *)lt + l->bytes_data,
						 (size_t)RD(long, lt, l->bytes_size), first,
						 (uint32_t)instr, &line);
		emit(&o, "%s\t", incomplete ? "incomplete" : "py");
		emit_str(&o, l,
			 RD(const void *, code, l->co_qualname ? l->co_qualname : l->co_name));
		emit(&o, "\t");
		emit_str(&o, l, RD(const void *, code, l->co_filename));
		emit(&o, "\t%d\t%ld\t", first, instr);
		if (rc == 0)
			emit(&o, "%d", line);
		else
			emit(&o, rc == -ENOENT ? "-" : "bad%d", rc);
		emit(&o, "\t%d\t%d\t%p\n", owner, entry, f);
		if (entry && cf) {
			emit(&o, "cframe\t%p\n", cf);
			cf = RD(const void *, cf, l->cf_previous);
		}
		f = RD(const void *, f, l->fr_previous);
	}
	if (cf && l->kind == SP_PYFRAMES_311)
		emit(&o, "cframe\t%p\troot=%d\n", cf, cf == (const char *)ts + l->ts_root_cframe);
	return o.n < len ? 0 : -ENOSPC;
}
