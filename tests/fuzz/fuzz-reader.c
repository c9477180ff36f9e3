/*
 * fuzz-reader.c - libFuzzer target for the raw-profile reader
 * (format/reader.c: sp_profile_read and the lookups the CLI uses).
 *
 * An input is taken two ways:
 *
 *   "STKPROF\n" ...   a raw profile file as it is, byte for byte: this is
 *                     what a user hands the CLI (truncated, bit-flipped,
 *                     junk after the magic, zlib errors).
 *   anything else     a mode byte and then a plain, uncompressed record
 *                     stream (type u8, uleb128 length, payload). The
 *                     harness deflates it behind the magic, so mutations
 *                     reach the record parser instead of dying in zlib.
 *                     Mode bits: 0x1 rewrite every CHECKPOINT with the
 *                     right CRC-32 and record count, so records are
 *                     committed and the walk below sees them; 0x2 end the
 *                     zlib stream (Z_FINISH), else only Z_SYNC_FLUSH (a
 *                     killed program); 0x4 flush after every record;
 *                     0x80 none of this: the rest is the file as it is
 *                     (junk without the magic, short files).
 *
 * sp_profile_read() takes a path: the bytes go to a memfd read back through
 * /proc/self/fd/N, so nothing touches the disk and parallel jobs
 * (-jobs/-workers) do not share a file. SP_FUZZ_VERBOSE=1 in the
 * environment prints what each input read as (for triage and seeds);
 * SP_FUZZ_SAVE=DIR writes each file the reader was given to
 * DIR/<crc32>.prof: that is how corpus/cli/ (hostile profiles for the
 * sanitized CLI) is made from this corpus.
 *
 * After a successful read every record is walked the way the CLI does
 * (stacks through sp_profile_stack, ranges up their parent chains, samples
 * to their stack, range and thread, windows through sp_profile_window), so an inconsistent profile
 * that the reader let through shows up here as an ASan report, not in export/.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "format/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MODE_FIX_CRC  0x1u
#define MODE_FINISH   0x2u
#define MODE_FLUSH_EV 0x4u
#define MODE_AS_IS    0x80u

/* sp_profile_thread is a linear scan: bound the harness' own quadratic work */
#define SP_FUZZ_MAX_TID_LOOKUPS 1024

static int sp_fuzz_fd = -1;
static char sp_fuzz_path[64];
static bool sp_fuzz_verbose;	 /* SP_FUZZ_VERBOSE=1: say what each input read as */
static const char *sp_fuzz_save; /* SP_FUZZ_SAVE=DIR: keep the files read */

/* A sink for values read from the profile, so the walk is not optimized out. */
static volatile uint64_t sp_fuzz_sink;

struct obuf {
	uint8_t *p;
	size_t n, cap;
};

static void obuf_put(struct obuf *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->n + n)
			cap *= 2;
		uint8_t *q = realloc(b->p, cap);
		if (!q)
			abort(); /* the harness itself, not the code under test */
		b->p = q;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void obuf_uleb(struct obuf *b, uint64_t v)
{
	do {
		uint8_t byte = v & 0x7f;
		v >>= 7;
		if (v)
			byte |= 0x80;
		obuf_put(b, &byte, 1);
	} while (v);
}

/* Reads a uleb128 at *off; false if it runs past len or past 10 bytes. */
static bool get_uleb(const uint8_t *p, size_t len, size_t *off, uint64_t *v)
{
	*v = 0;
	for (unsigned shift = 0; shift < 64 && *off < len; shift += 7) {
		uint8_t byte = p[(*off)++];
		*v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return true;
	}
	return false;
}

static void deflate_chunk(z_stream *z, struct obuf *out, const uint8_t *p, size_t n, int flush)
{
	uint8_t tmp[16384];
	z->next_in = (Bytef *)p;
	z->avail_in = (uInt)n;
	do {
		z->next_out = tmp;
		z->avail_out = sizeof(tmp);
		int rc = deflate(z, flush);
		if (rc == Z_STREAM_ERROR)
			abort();
		obuf_put(out, tmp, sizeof(tmp) - z->avail_out);
	} while (z->avail_out == 0 || z->avail_in);
}

/*
 * Builds a profile file from a mode byte and a plain record stream. With
 * MODE_FIX_CRC, CHECKPOINT payloads are replaced by the right values; bytes
 * that do not frame as records are passed through as they are.
 */
static void build_profile(const uint8_t *rec, size_t len, unsigned mode, struct obuf *file)
{
	struct obuf plain = {0};
	z_stream z;
	memset(&z, 0, sizeof(z));
	if (deflateInit(&z, Z_BEST_SPEED) != Z_OK)
		abort();
	obuf_put(file, SP_PROFILE_MAGIC, SP_PROFILE_MAGIC_LEN);

	uLong crc = crc32(0L, Z_NULL, 0);
	uint64_t count = 0;
	size_t off = 0;
	while (off < len) {
		size_t start = off, head;
		uint64_t n;
		off++; /* type */
		if (!get_uleb(rec, len, &off, &n) || n > len - off) {
			obuf_put(&plain, rec + start, len - start);
			break;
		}
		head = off - start;
		uint8_t type = rec[start];
		if (type == SP_REC_CHECKPOINT && (mode & MODE_FIX_CRC)) {
			struct obuf payload = {0};
			obuf_uleb(&payload, crc);
			obuf_uleb(&payload, count);
			obuf_put(&plain, &type, 1);
			obuf_uleb(&plain, payload.n);
			obuf_put(&plain, payload.p, payload.n);
			free(payload.p);
			crc = crc32(0L, Z_NULL, 0);
			count = 0;
			/* the writer flushes right after a checkpoint */
			deflate_chunk(&z, file, plain.p, plain.n, Z_SYNC_FLUSH);
			plain.n = 0;
		} else {
			if (type != SP_REC_CHECKPOINT) {
				crc = crc32(crc, rec + start, (uInt)(head + n));
				count++;
			}
			obuf_put(&plain, rec + start, head + (size_t)n);
			if (mode & MODE_FLUSH_EV) {
				deflate_chunk(&z, file, plain.p, plain.n, Z_SYNC_FLUSH);
				plain.n = 0;
			}
		}
		off += (size_t)n;
	}
	deflate_chunk(&z, file, plain.p, plain.n, (mode & MODE_FINISH) ? Z_FINISH : Z_SYNC_FLUSH);
	deflateEnd(&z);
	free(plain.p);
}

static void walk(const struct sp_profile *p)
{
	uint64_t acc = p->header.version + (uint64_t)p->header.pid + p->header.freq_hz;
	acc += p->header.timer ? strlen(p->header.timer) : 0;
	acc += p->header.cmdline ? strlen(p->header.cmdline) : 0;
	acc += p->header.exe ? strlen(p->header.exe) : 0;
	acc += p->header.hostname ? strlen(p->header.hostname) : 0;
	for (size_t i = 0; i < p->n_modules; i++) {
		const struct sp_prof_module *m = &p->modules[i];
		acc += m->start ^ m->end ^ m->bias ^ m->flags;
		acc += m->path ? strlen(m->path) : 0;
		if (m->build_id_len > sizeof(m->build_id))
			abort(); /* the reader promised at most 64 bytes */
		for (uint32_t k = 0; k < m->build_id_len; k++)
			acc += m->build_id[k];
		if (m->image_len) {
			acc += m->image[0] + m->image[m->image_len - 1];
		}
	}
	for (size_t i = 0; i < p->n_threads; i++) {
		const struct sp_prof_thread *t = &p->threads[i];
		acc += t->name ? strlen(t->name) : 0;
		if (i >= SP_FUZZ_MAX_TID_LOOKUPS)
			continue;
		const struct sp_prof_thread *last = sp_profile_thread(p, t->tid);
		if (!last)
			abort(); /* every listed tid must be found */
		acc += (uint64_t)last->tid;
	}
	for (size_t i = 0; i < p->n_stacks; i++) {
		const struct sp_prof_stack *s = &p->stacks[i];
		if (sp_profile_stack(p, s->id) != s)
			abort(); /* "sorted by id, ids are dense from 1" */
		for (uint32_t k = 0; k < s->depth; k++)
			acc += s->pcs[k];
	}
	for (size_t i = 0; i < p->n_ranges; i++) {
		const struct sp_prof_range *r = &p->ranges[i];
		if (sp_profile_range(p, r->id) != r)
			abort();
		acc += r->name ? strlen(r->name) : 0;
		/* up to the root; parents come before children, so this ends */
		size_t hops = 0;
		for (const struct sp_prof_range *q = r; q; q = sp_profile_range(p, q->parent)) {
			if (++hops > p->n_ranges + 1)
				abort(); /* a parent cycle */
			acc += q->id;
		}
	}
	for (size_t i = 0; i < p->n_samples; i++) {
		const struct sp_prof_sample *s = &p->samples[i];
		const struct sp_prof_stack *st = sp_profile_stack(p, s->stack);
		if (!st)
			abort(); /* the reader checks stack ids */
		if (st->depth)
			acc += st->pcs[0] + st->pcs[st->depth - 1];
		if (s->range) {
			const struct sp_prof_range *r = sp_profile_range(p, s->range);
			if (!r)
				abort(); /* the reader checks range ids */
			acc += r->id;
		}
		if (i < SP_FUZZ_MAX_TID_LOOKUPS) {
			const struct sp_prof_thread *t = sp_profile_thread(p, s->tid);
			acc += t ? (uint64_t)t->tid : 0;
		}
		acc += s->weight_ns + s->time_ns;
	}
	for (size_t i = 0; i < p->n_marks; i++)
		acc += p->marks[i].kind + p->marks[i].time_ns;
	for (size_t i = 0; i < p->n_windows; i++) {
		const struct sp_prof_window *w = &p->windows[i];
		/* "sorted by begin_ns, disjoint": what sp_profile_window bisects */
		if (w->begin_ns > w->end_ns || (i && w->begin_ns <= p->windows[i - 1].end_ns))
			abort();
		if (sp_profile_window(p, w->begin_ns) != w || sp_profile_window(p, w->end_ns) != w)
			abort();
		if (w->begin_ns && (!i || w->begin_ns - 1 > p->windows[i - 1].end_ns) &&
		    sp_profile_window(p, w->begin_ns - 1))
			abort(); /* just before a window is outside every window */
	}
	for (size_t i = 0; i < p->n_jits; i++)
		acc += p->jits[i].start + p->jits[i].size +
		       (p->jits[i].name ? strlen(p->jits[i].name) : 0);
	if (p->has_stats)
		acc += p->stats.samples + (p->stats.timer ? strlen(p->stats.timer) : 0);
	if (p->status != SP_READ_OK && !p->error[0])
		abort(); /* a partial profile must say why */
	if (memchr(p->error, '\0', sizeof(p->error)) == NULL)
		abort();
	sp_fuzz_sink += acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct obuf file = {0};
	const uint8_t *bytes = data;
	size_t len = size;

	if (sp_fuzz_fd < 0) {
		sp_fuzz_fd = memfd_create("sp-fuzz-reader", MFD_CLOEXEC);
		if (sp_fuzz_fd < 0) {
			perror("memfd_create");
			abort();
		}
		snprintf(sp_fuzz_path, sizeof(sp_fuzz_path), "/proc/self/fd/%d", sp_fuzz_fd);
		sp_fuzz_verbose = getenv("SP_FUZZ_VERBOSE") != NULL;
		sp_fuzz_save = getenv("SP_FUZZ_SAVE");
	}
	if (size && !(size >= SP_PROFILE_MAGIC_LEN &&
		      !memcmp(data, SP_PROFILE_MAGIC, SP_PROFILE_MAGIC_LEN))) {
		if (data[0] & MODE_AS_IS) {
			bytes = data + 1;
			len = size - 1;
		} else {
			build_profile(data + 1, size - 1, data[0], &file);
			bytes = file.p;
			len = file.n;
		}
	}
	if (ftruncate(sp_fuzz_fd, 0) < 0 ||
	    (len && pwrite(sp_fuzz_fd, bytes, len, 0) != (ssize_t)len)) {
		perror("memfd write");
		abort();
	}

	if (sp_fuzz_save) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%08lx.prof", sp_fuzz_save,
			 crc32(0L, bytes, (uInt)len));
		FILE *f = fopen(path, "wb");
		if (!f || (len && fwrite(bytes, 1, len, f) != len) || fclose(f))
			perror(path);
	}

	char err[512];
	err[0] = '\0';
	errno = 0;
	struct sp_profile *p = sp_profile_read(sp_fuzz_path, err, sizeof(err));
	if (!p && sp_fuzz_verbose)
		fprintf(stderr, "rejected: %s\n", err);
	if (!p) {
		/* "nothing usable": the CLI prints err and exits 1, so it must say why */
		if (!err[0] || !memchr(err, '\0', sizeof(err)) || errno == 0)
			abort();
	} else {
		walk(p);
		if (sp_fuzz_verbose)
			fprintf(
			    stderr,
			    "status %d (%s): %zu modules, %zu threads, %zu stacks, %zu samples, "
			    "%zu ranges, %zu jits, stats %d\n",
			    p->status, p->error, p->n_modules, p->n_threads, p->n_stacks,
			    p->n_samples, p->n_ranges, p->n_jits, p->has_stats);
		sp_profile_free(p);
	}
	free(file.p);
	return 0;
}
