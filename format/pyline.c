#include "format/pyline.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

/* What a walk over the table has found for the instruction so far. */
struct sp_pyline_walk {
	uint64_t pos;  /* first code unit of the next range */
	int64_t line;  /* the running line: deltas accumulate through every entry */
	uint32_t want; /* the instruction, in code units */
	int found;     /* 0 not yet, 1 with a line, -1 in a range without one */
	int answer;
};

/* What a walk over a location table does with each range. */
typedef int sp_pyline_range_fn(void *ctx, int64_t delta, bool noline, uint64_t units);

/* The range [pos, pos + units) has the running line, or none. */
static int sp_pyline_range(void *ctx, int64_t delta, bool noline, uint64_t units)
{
	struct sp_pyline_walk *w = ctx;
	w->line += delta;
	/* deltas are at most 32 bits and lines start from an int, so the
	 * running line stays far inside int64_t between these checks */
	if (w->line < INT_MIN || w->line > INT_MAX)
		return -EINVAL;
	if (!w->found && w->want >= w->pos && w->want - w->pos < units) {
		w->found = noline ? -1 : 1;
		w->answer = (int)w->line;
	}
	w->pos += units;
	return 0;
}

/*
 * 3.10: (length in bytes, line delta) byte pairs. The delta of a range
 * without a line (-128) does not move the running line. Bytecode is in
 * 2-byte units, so an odd length cannot come from CPython's compiler.
 */
static int sp_pyline_310(const uint8_t *t, size_t len, struct sp_pyline_walk *w)
{
	if (len % 2)
		return -EINVAL;
	for (size_t i = 0; i < len; i += 2) {
		unsigned bytes = t[i];
		int delta = (int8_t)t[i + 1];
		if (bytes % 2)
			return -EINVAL;
		bool noline = delta == -128;
		int rc = sp_pyline_range(w, noline ? 0 : delta, noline, bytes / 2);
		if (rc)
			return rc;
	}
	return 0;
}

/*
 * An unsigned value of 6-bit chunks, least significant first, bit 6 saying
 * another chunk follows. Bit 7 belongs only to an entry's first byte, so a
 * byte with it set here means the value was cut short. More than 32 bits
 * is more than CPython ever writes.
 */
static int sp_pyline_varint(const uint8_t *t, size_t len, size_t *i, uint32_t *out)
{
	uint64_t v = 0;
	for (unsigned shift = 0;; shift += 6) {
		if (*i >= len || shift > 30)
			return -EINVAL;
		uint8_t b = t[(*i)++];
		if (b & 0x80)
			return -EINVAL;
		v |= (uint64_t)(b & 0x3f) << shift;
		if (!(b & 0x40))
			break;
	}
	if (v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* The signed form: magnitude shifted left by one, sign in bit 0. */
static int sp_pyline_svarint(const uint8_t *t, size_t len, size_t *i, int64_t *out)
{
	uint32_t u;
	int rc = sp_pyline_varint(t, len, i, &u);
	if (rc)
		return rc;
	*out = (u & 1) ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return 0;
}

/* count bytes with bit 7 clear (columns) must follow at *i */
static int sp_pyline_skip(const uint8_t *t, size_t len, size_t *i, unsigned count)
{
	for (unsigned k = 0; k < count; k++) {
		if (*i >= len || t[*i] & 0x80)
			return -EINVAL;
		(*i)++;
	}
	return 0;
}

/* The kinds of location entry, from the 4 bits after bit 7 */
enum {
	SP_LOC_SHORT_LAST = 9, /* 0-9: same line, columns in one byte */
	SP_LOC_ONE_LINE0 = 10, /* 10-12: line + 0..2, two column bytes */
	SP_LOC_ONE_LINE_LAST = 12,
	SP_LOC_NO_COLUMNS = 13, /* signed line delta */
	SP_LOC_LONG = 14,	/* signed line delta, end line, two columns */
	SP_LOC_NONE = 15,	/* no location at all */
};

/* 3.11+: location entries, each covering 1 to 8 code units, handed to
 * range one by one. */
static int sp_pyline_loc(const uint8_t *t, size_t len, sp_pyline_range_fn *range, void *ctx)
{
	size_t i = 0;
	while (i < len) {
		uint8_t head = t[i++];
		if (!(head & 0x80))
			return -EINVAL;
		unsigned kind = (head >> 3) & 15;
		unsigned units = (head & 7) + 1;
		int64_t delta = 0;
		uint32_t ignored;
		int rc = 0;
		if (kind <= SP_LOC_SHORT_LAST) {
			rc = sp_pyline_skip(t, len, &i, 1);
		} else if (kind <= SP_LOC_ONE_LINE_LAST) {
			delta = kind - SP_LOC_ONE_LINE0;
			rc = sp_pyline_skip(t, len, &i, 2);
		} else if (kind == SP_LOC_NO_COLUMNS) {
			rc = sp_pyline_svarint(t, len, &i, &delta);
		} else if (kind == SP_LOC_LONG) {
			rc = sp_pyline_svarint(t, len, &i, &delta);
			for (int k = 0; k < 3 && !rc; k++) /* end line delta, columns */
				rc = sp_pyline_varint(t, len, &i, &ignored);
		}
		if (!rc)
			rc = range(ctx, delta, kind == SP_LOC_NONE, units);
		if (rc)
			return rc;
	}
	return 0;
}

int sp_pyline_addr2line(unsigned minor, const uint8_t *table, size_t len, int firstlineno,
			uint32_t instr, int *line)
{
	struct sp_pyline_walk w = {.line = firstlineno, .want = instr};
	int rc;

	if (!table && len)
		return -EINVAL;
	if (minor == 10)
		rc = sp_pyline_310(table, len, &w);
	else if (minor >= 11 && minor <= 13)
		rc = sp_pyline_loc(table, len, sp_pyline_range, &w);
	else
		rc = -EINVAL;
	if (rc)
		return rc;
	if (w.found != 1)
		return -ENOENT;
	*line = w.answer;
	return 0;
}

/* ---- the lines alone ---------------------------------------------------- */

/* A run of code units on one line (or on none), being written to out. */
struct sp_pyline_runs {
	uint8_t *out;
	size_t n, cap;
	int64_t line;	 /* the running line, from 0: only deltas are written */
	int64_t written; /* the line the output's running line is at */
	uint64_t units;	 /* the open run: its length (0: none open) */
	int64_t run_line;
	bool run_noline;
};

static int sp_pyline_put(struct sp_pyline_runs *r, uint8_t b)
{
	if (r->n >= r->cap)
		return -EINVAL; /* never: the output is never longer than the input */
	r->out[r->n++] = b;
	return 0;
}

/* The open run as entries of up to 8 units: the first carries the delta
 * from the output's running line, the rest a delta of 0. */
static int sp_pyline_flush(struct sp_pyline_runs *r)
{
	int rc = 0;
	while (r->units && !rc) {
		unsigned n = r->units > 8 ? 8 : (unsigned)r->units;
		r->units -= n;
		unsigned kind = r->run_noline ? SP_LOC_NONE : SP_LOC_NO_COLUMNS;
		rc = sp_pyline_put(r, (uint8_t)(0x80 | kind << 3 | (n - 1)));
		if (rc || r->run_noline)
			continue;
		int64_t d = r->run_line - r->written;
		r->written = r->run_line;
		/* signed varint: magnitude << 1 | sign, in 6-bit chunks */
		uint64_t u = d < 0 ? (uint64_t)(-d) << 1 | 1 : (uint64_t)d << 1;
		do {
			uint8_t b = u & 0x3f;
			u >>= 6;
			rc = sp_pyline_put(r, u ? b | 0x40 : b);
		} while (u && !rc);
	}
	return rc;
}

static int sp_pyline_run(void *ctx, int64_t delta, bool noline, uint64_t units)
{
	struct sp_pyline_runs *r = ctx;
	r->line += delta;
	if (r->line < INT_MIN || r->line > INT_MAX)
		return -EINVAL;
	if (r->units && noline == r->run_noline && (noline || r->line == r->run_line)) {
		r->units += units;
		return 0;
	}
	int rc = sp_pyline_flush(r);
	r->units = units;
	r->run_line = r->line;
	r->run_noline = noline;
	return rc;
}

long sp_pyline_lines_only(unsigned minor, const uint8_t *table, size_t len, uint8_t *out)
{
	if ((!table || !out) && len)
		return -EINVAL;
	if (minor == 10) {
		/* no columns to drop; checked like any table before it is kept */
		struct sp_pyline_walk w = {.want = UINT32_MAX};
		int rc = sp_pyline_310(table, len, &w);
		if (rc)
			return rc;
		if (len)
			memcpy(out, table, len);
		return (long)len;
	}
	if (minor < 11 || minor > 13)
		return -EINVAL;
	struct sp_pyline_runs r = {.out = out, .cap = len};
	int rc = sp_pyline_loc(table, len, sp_pyline_run, &r);
	if (!rc)
		rc = sp_pyline_flush(&r);
	return rc ? rc : (long)r.n;
}
