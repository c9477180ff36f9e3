/*
 * test-pyline.c - format/pyline.c against CPython itself, and against
 * malformed tables.
 *
 *   test-pyline FIXTURE_DIR
 *
 * FIXTURE_DIR holds lines-3.10.txt to lines-3.13.txt, written by
 * tests/python/dump-lines.py with each interpreter: for every code object
 * of a few stdlib modules and a generated stress source, its line table and
 * the line co_lines() gives each code unit. Every code unit is compared,
 * and the units just past the code must have no line. Then each table is
 * cut at every length (a cut inside an entry must be refused, a cut
 * between entries must answer like the whole table for what it still
 * covers), and random byte strings must come back as a line, "no line" or
 * "malformed" without a read out of bounds (each table sits in a buffer of
 * its exact size, so that -DSP_SANITIZE=address sees any overrun).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/unit/check.h"
#include "format/pyline.h"

struct fx_code {
	int firstlineno;
	uint32_t nunits;
	uint8_t *table;
	size_t len;
	int *lines; /* per code unit; INT_MIN: no line */
	char name[128];
};

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* "lines 3:12 2:- ..." into c->lines; false when it does not add up */
static bool parse_runs(char *s, struct fx_code *c)
{
	uint32_t u = 0;
	c->lines = malloc(sizeof(int) * (c->nunits ? c->nunits : 1));
	if (!c->lines)
		return false;
	for (char *tok = strtok(s, " \n"); tok; tok = strtok(NULL, " \n")) {
		char *colon = strchr(tok, ':');
		if (!colon)
			return false;
		unsigned long n = strtoul(tok, NULL, 10);
		int line = colon[1] == '-' ? INT_MIN : (int)strtol(colon + 1, NULL, 10);
		if (n > c->nunits - u)
			return false;
		for (unsigned long k = 0; k < n; k++)
			c->lines[u++] = line;
	}
	return u == c->nunits;
}

/* One fixture file; returns how many code objects it held, -1 on a bad file. */
static int load(const char *path, unsigned *minor, struct fx_code **out)
{
	*out = NULL;
	FILE *f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "test-pyline: %s: %s\n", path, strerror(errno));
		return -1;
	}
	char *buf = NULL;
	size_t cap = 0;
	int n = 0, ok = 1;
	size_t alloc = 0;
	struct fx_code *codes = NULL;
	*minor = 0;
	while (ok && getline(&buf, &cap, f) > 0) {
		if (!strncmp(buf, "version 3.", 10)) {
			*minor = (unsigned)strtoul(buf + 10, NULL, 10);
		} else if (!strncmp(buf, "code ", 5)) {
			if ((size_t)n == alloc) {
				alloc = alloc ? 2 * alloc : 256;
				struct fx_code *p = realloc(codes, alloc * sizeof *codes);
				if (!p) {
					ok = 0;
					break;
				}
				codes = p;
			}
			struct fx_code *c = &codes[n];
			memset(c, 0, sizeof *c);
			char *hex = malloc(strlen(buf) + 1);
			unsigned long nunits;
			if (!hex || sscanf(buf, "code %d %lu %s %127s", &c->firstlineno, &nunits,
					   hex, c->name) != 4) {
				free(hex);
				ok = 0;
				break;
			}
			c->nunits = (uint32_t)nunits;
			size_t hl = strcmp(hex, "-") ? strlen(hex) : 0;
			c->len = hl / 2;
			/* exactly len bytes, so that a sanitizer sees any overrun */
			c->table = malloc(c->len ? c->len : 1);
			for (size_t i = 0; c->table && i < c->len; i++) {
				int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
				if (hi < 0 || lo < 0)
					ok = 0;
				c->table[i] = (uint8_t)(hi << 4 | lo);
			}
			free(hex);
			if (!c->table || hl % 2)
				ok = 0;
			n++;
		} else if (!strncmp(buf, "lines", 5)) {
			if (!n || codes[n - 1].lines || !parse_runs(buf + 5, &codes[n - 1]))
				ok = 0;
		}
	}
	free(buf);
	fclose(f);
	for (int i = 0; ok && i < n; i++)
		if (!codes[i].lines)
			ok = 0;
	if (!ok || !*minor) {
		fprintf(stderr, "test-pyline: %s: not a dump-lines.py fixture\n", path);
		*out = codes;
		return -1 - n; /* the caller frees what was loaded */
	}
	*out = codes;
	return n;
}

static void free_codes(struct fx_code *codes, int n)
{
	for (int i = 0; i < n; i++) {
		free(codes[i].table);
		free(codes[i].lines);
	}
	free(codes);
}

/* Every code unit against CPython's answer; the units past the end have none. */
static void check_against_cpython(unsigned minor, const struct fx_code *c, long *units)
{
	int bad = 0;
	for (uint32_t u = 0; u < c->nunits + 3; u++) {
		int line = -1;
		int rc = sp_pyline_addr2line(minor, c->table, c->len, c->firstlineno, u, &line);
		int want = u < c->nunits ? c->lines[u] : INT_MIN;
		bool good = want == INT_MIN ? rc == -ENOENT : rc == 0 && line == want;
		if (!good && bad++ < 3)
			fprintf(stderr, "3.%u %s unit %u: got rc %d line %d, CPython says %d\n",
				minor, c->name, u, rc, rc ? 0 : line, want == INT_MIN ? -1 : want);
		CHECK(good);
	}
	*units += c->nunits;
}

/*
 * The table cut to k bytes. Cut inside an entry: refused for every
 * instruction. Cut between entries: the prefix answers like the whole for
 * the units it covers and gives no line past them.
 */
static void check_cuts(unsigned minor, const struct fx_code *c, long *cuts)
{
	for (size_t k = 0; k < c->len; k++) {
		uint8_t *t = malloc(k ? k : 1);
		if (!t)
			abort();
		memcpy(t, c->table, k);
		bool boundary = minor == 10 ? k % 2 == 0 : (c->table[k] & 0x80) != 0;
		/* the units the prefix covers */
		uint32_t covered = 0;
		if (boundary) {
			if (minor == 10) {
				for (size_t i = 0; i < k; i += 2)
					covered += c->table[i] / 2;
			} else {
				for (size_t i = 0; i < k; i++)
					if (c->table[i] & 0x80)
						covered += (c->table[i] & 7) + 1;
			}
		}
		/* a few units: the first, around the cut and past it */
		uint32_t probes[] = {0, covered ? covered - 1 : 0, covered, covered + 1,
				     c->nunits ? c->nunits - 1 : 0};
		for (size_t p = 0; p < sizeof probes / sizeof probes[0]; p++) {
			uint32_t u = probes[p];
			int line = -1;
			int rc = sp_pyline_addr2line(minor, t, k, c->firstlineno, u, &line);
			if (!boundary) {
				CHECK(rc == -EINVAL);
				continue;
			}
			int want = u < covered && u < c->nunits ? c->lines[u] : INT_MIN;
			bool good = want == INT_MIN ? rc == -ENOENT : rc == 0 && line == want;
			if (!good)
				fprintf(stderr,
					"3.%u %s cut at %zu, unit %u: rc %d line %d, want %d\n",
					minor, c->name, k, u, rc, line, want);
			CHECK(good);
		}
		free(t);
		(*cuts)++;
	}
}

/* xorshift: the same random tables on every run */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void check_random(void)
{
	long counts[3] = {0};
	for (int i = 0; i < 200000; i++) {
		size_t len = rng() % 48;
		unsigned minor = 10 + (unsigned)(rng() % 4);
		uint8_t *t = malloc(len ? len : 1);
		if (!t)
			abort();
		for (size_t k = 0; k < len; k++) {
			uint8_t b = (uint8_t)rng();
			/* half of them look like tables, so decoding gets deep:
			 * even lengths on 3.10, an entry every few bytes after */
			if (i % 2 && minor == 10 && k % 2 == 0)
				b &= 0xfe;
			else if (i % 2 && minor > 10)
				b = k % 3 == 0 ? b | 0x80 : b & 0x7f;
			t[k] = b;
		}
		int first = (int)(rng() % 3) == 0 ? INT_MAX - 5 : (int)(rng() % 100000);
		int line = 0;
		int rc = sp_pyline_addr2line(minor, t, len, first, (uint32_t)(rng() % 64), &line);
		CHECK(rc == 0 || rc == -ENOENT || rc == -EINVAL);
		counts[rc == 0 ? 0 : rc == -ENOENT ? 1 : 2]++;
		free(t);
	}
	printf("random tables: %ld with a line, %ld without, %ld refused\n", counts[0], counts[1],
	       counts[2]);
	/* all three answers were met, so the walk went deep enough */
	CHECK(counts[0] > 0 && counts[1] > 0 && counts[2] > 0);
}

/* Hand-made tables for the corners the fixtures may not reach. */
static void check_corners(void)
{
	int line = 0;
	/* 3.10: (4 bytes, +1) (2 bytes, none) (0, +127) (2 bytes, +3) */
	const uint8_t t10[] = {4, 1, 2, 0x80, 0, 127, 2, 3};
	CHECK(sp_pyline_addr2line(10, t10, sizeof t10, 10, 0, &line) == 0 && line == 11);
	CHECK(sp_pyline_addr2line(10, t10, sizeof t10, 10, 1, &line) == 0 && line == 11);
	CHECK(sp_pyline_addr2line(10, t10, sizeof t10, 10, 2, &line) == -ENOENT);
	CHECK(sp_pyline_addr2line(10, t10, sizeof t10, 10, 3, &line) == 0 && line == 141);
	CHECK(sp_pyline_addr2line(10, t10, sizeof t10, 10, 4, &line) == -ENOENT);
	CHECK(sp_pyline_addr2line(10, t10, 7, 10, 0, &line) == -EINVAL); /* odd length */
	const uint8_t odd[] = {3, 1};
	CHECK(sp_pyline_addr2line(10, odd, sizeof odd, 1, 0, &line) == -EINVAL);
	const uint8_t up[] = {2, 127};
	CHECK(sp_pyline_addr2line(10, up, sizeof up, INT_MAX - 127, 0, &line) == 0 &&
	      line == INT_MAX);
	CHECK(sp_pyline_addr2line(10, up, sizeof up, INT_MAX - 126, 0, &line) == -EINVAL);
	const uint8_t down[] = {2, 0x81}; /* -127 */
	CHECK(sp_pyline_addr2line(10, down, sizeof down, INT_MIN + 127, 0, &line) == 0 &&
	      line == INT_MIN);
	CHECK(sp_pyline_addr2line(10, down, sizeof down, INT_MIN + 126, 0, &line) == -EINVAL);

	/* 3.11+: kind 13 (no columns) with line delta -70 (svarint 141 = 0x4d 0x02),
	 * 3 units; kind 15 (none), 1 unit; kind 11 (+1), 2 units, columns 5 and 9 */
	const uint8_t t11[] = {0x80 | 13 << 3 | 2, 0x40 | 13, 2, 0x80 | 15 << 3,
			       0x80 | 11 << 3 | 1, 5,	      9};
	for (unsigned m = 11; m <= 13; m++) {
		CHECK(sp_pyline_addr2line(m, t11, sizeof t11, 100, 2, &line) == 0 && line == 30);
		CHECK(sp_pyline_addr2line(m, t11, sizeof t11, 100, 3, &line) == -ENOENT);
		CHECK(sp_pyline_addr2line(m, t11, sizeof t11, 100, 5, &line) == 0 && line == 31);
		CHECK(sp_pyline_addr2line(m, t11, sizeof t11, 100, 6, &line) == -ENOENT);
		/* a column byte with bit 7 set is the next entry come too early */
		const uint8_t early[] = {0x80 | 11 << 3, 5, 0x85};
		CHECK(sp_pyline_addr2line(m, early, sizeof early, 1, 0, &line) == -EINVAL);
		/* a value that never ends, and one longer than 32 bits */
		const uint8_t endless[] = {0x80 | 13 << 3, 0x41, 0x41};
		CHECK(sp_pyline_addr2line(m, endless, sizeof endless, 1, 0, &line) == -EINVAL);
		const uint8_t wide[] = {0x80 | 13 << 3, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 1};
		CHECK(sp_pyline_addr2line(m, wide, sizeof wide, 1, 0, &line) == -EINVAL);
		/* long form: +5, end line, two columns; then a table not starting with an entry */
		const uint8_t lng[] = {0x80 | 14 << 3 | 7, 10, 1, 0x40 | 3, 2, 4};
		CHECK(sp_pyline_addr2line(m, lng, sizeof lng, 1, 7, &line) == 0 && line == 6);
		CHECK(sp_pyline_addr2line(m, lng, sizeof lng - 1, 1, 0, &line) == -EINVAL);
		CHECK(sp_pyline_addr2line(m, lng + 1, sizeof lng - 1, 1, 0, &line) == -EINVAL);
	}
	/* versions it does not know, an empty table, no table */
	CHECK(sp_pyline_addr2line(9, t10, sizeof t10, 1, 0, &line) == -EINVAL);
	CHECK(sp_pyline_addr2line(14, t11, sizeof t11, 1, 0, &line) == -EINVAL);
	CHECK(sp_pyline_addr2line(12, t11, 0, 1, 0, &line) == -ENOENT);
	CHECK(sp_pyline_addr2line(12, NULL, 0, 1, 0, &line) == -ENOENT);
	CHECK(sp_pyline_addr2line(12, NULL, 4, 1, 0, &line) == -EINVAL);
	/* *line untouched on failure */
	line = 1234;
	CHECK(sp_pyline_addr2line(10, t10, sizeof t10, 10, 2, &line) == -ENOENT && line == 1234);
}

/*
 * The table with its lines only (what the sampler's writer stores): every
 * code unit still gets CPython's answer from it, it is never longer, and
 * it is made of "no columns" and "none" entries alone. Adds the bytes in
 * and out to *in and *out.
 */
static void check_lines_only(unsigned minor, const struct fx_code *c, long *in, long *out)
{
	uint8_t *t = malloc(c->len ? c->len : 1);
	if (!t)
		abort();
	long n = sp_pyline_lines_only(minor, c->table, c->len, t);
	CHECK(n >= 0 && (size_t)n <= c->len);
	if (n < 0) {
		fprintf(stderr, "3.%u %s: lines_only refused the table (%ld)\n", minor, c->name, n);
		free(t);
		return;
	}
	uint8_t *exact = malloc(n ? (size_t)n : 1); /* its own size: ASan sees overruns */
	if (!exact)
		abort();
	memcpy(exact, t, (size_t)n);
	int bad = 0;
	for (uint32_t u = 0; u < c->nunits + 3; u++) {
		int line = -1;
		int rc = sp_pyline_addr2line(minor, exact, (size_t)n, c->firstlineno, u, &line);
		int want = u < c->nunits ? c->lines[u] : INT_MIN;
		bool good = want == INT_MIN ? rc == -ENOENT : rc == 0 && line == want;
		if (!good && bad++ < 3)
			fprintf(stderr, "3.%u %s lines only, unit %u: got rc %d line %d, want %d\n",
				minor, c->name, u, rc, rc ? 0 : line, want == INT_MIN ? -1 : want);
		CHECK(good);
	}
	if (minor >= 11) {
		bool plain = true;
		for (long i = 0; i < n; i++) {
			unsigned kind = (exact[i] >> 3) & 15;
			if ((exact[i] & 0x80) && kind != 13 && kind != 15)
				plain = false;
		}
		CHECK(plain);
	} else {
		CHECK(n == (long)c->len && !memcmp(exact, c->table, c->len));
	}
	*in += (long)c->len;
	*out += n;
	free(exact);
	free(t);
}

/* Tables lines_only must refuse: what addr2line refuses, and unknown versions. */
static void check_lines_only_refusals(void)
{
	uint8_t out[16];
	const uint8_t cut[] = {0x80 | 13 << 3, 0x42}; /* a varint with its next chunk missing */
	CHECK(sp_pyline_lines_only(11, cut, sizeof cut, out) == -EINVAL);
	const uint8_t stray[] = {0x05}; /* no entry starts with bit 7 clear */
	CHECK(sp_pyline_lines_only(12, stray, sizeof stray, out) == -EINVAL);
	const uint8_t odd[] = {3, 1}; /* 3.10: an odd byte length */
	CHECK(sp_pyline_lines_only(10, odd, sizeof odd, out) == -EINVAL);
	const uint8_t fine[] = {0x80 | 13 << 3, 0x02};
	CHECK(sp_pyline_lines_only(9, fine, sizeof fine, out) == -EINVAL);
	CHECK(sp_pyline_lines_only(14, fine, sizeof fine, out) == -EINVAL);
	CHECK(sp_pyline_lines_only(11, NULL, 0, out) == 0);
	CHECK(sp_pyline_lines_only(11, fine, sizeof fine, out) == 2);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test-pyline FIXTURE_DIR\n");
		return 2;
	}
	check_corners();
	check_lines_only_refusals();
	for (unsigned want = 10; want <= 13; want++) {
		char path[4096];
		snprintf(path, sizeof path, "%s/lines-3.%u.txt", argv[1], want);
		unsigned minor;
		struct fx_code *codes;
		int n = load(path, &minor, &codes);
		if (n < 0) {
			free_codes(codes, -1 - n);
			failures++;
			continue;
		}
		CHECK(minor == want);
		long units = 0, cuts = 0;
		for (int i = 0; i < n; i++)
			check_against_cpython(minor, &codes[i], &units);
		for (int i = 0; i < n; i++)
			check_cuts(minor, &codes[i], &cuts);
		long in = 0, out = 0;
		for (int i = 0; i < n; i++)
			check_lines_only(minor, &codes[i], &in, &out);
		printf("3.%u: %d code objects, %ld code units compared, %ld cut tables; "
		       "lines only: %ld bytes of %ld\n",
		       minor, n, units, cuts, out, in);
		/* the columns are most of a 3.11+ table */
		if (minor >= 11)
			CHECK(out * 2 < in);
		CHECK(n > 100);
		free_codes(codes, n);
	}
	check_random();
	return check_exit("test-pyline");
}
