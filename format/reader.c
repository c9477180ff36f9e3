#include "format/profile.h"
#include "format/buf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* Bounds that no real profile reaches; they stop a corrupt length from asking for gigabytes. */
#define SP_MAX_RECORD (64u << 20)
#define SP_MAX_DEPTH  65536u
/* Above this size, a file mostly made of holes is not a profile. */
#define SP_SPARSE_MIN (64ull << 20)

struct sp_counts {
	size_t modules, threads, stacks, samples, ranges, jits, marks, pycodes, pyinfos, events;
	struct sp_prof_stats stats;
	bool has_stats;
	bool has_header;
};

struct sp_reader {
	struct sp_profile *p;
	size_t cap_modules, cap_threads, cap_stacks, cap_samples, cap_ranges, cap_jits, cap_marks;
	size_t cap_pycodes, cap_pyinfos, cap_events;
	struct sp_counts committed;
	bool has_header;
	uLong crc;
	uint64_t n_records;
	/* record bytes read, and the frames STACK_DIFF records copied from
	 * earlier stacks: a few bytes may copy 65536 frames, so what a file can
	 * make the reader hold is tied to its size (SP_DIFF_FRAMES_PER_BYTE) */
	uint64_t bytes, copied;
};

/*
 * Frames copied from a base stack that a STACK_DIFF record may cost, per
 * byte of records read so far (plus one stack of the deepest): the
 * sampler's torch profiles copy 3-8 a byte. A 2 KB file of records that
 * each copy 65536 frames would otherwise hold 500 MB.
 */
#define SP_DIFF_FRAMES_PER_BYTE 64

static void sp_set_error(struct sp_profile *p, enum sp_read_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void sp_set_error(struct sp_profile *p, enum sp_read_status st, const char *fmt, ...)
{
	if (p->status != SP_READ_OK)
		return; /* keep the first reason */
	p->status = st;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(p->error, sizeof(p->error), fmt, ap);
	va_end(ap);
}

static bool sp_grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return true;
	size_t cap2 = *cap ? *cap * 2 : 64;
	while (cap2 < need)
		cap2 *= 2;
	void *a = realloc(*arr, cap2 * elem);
	if (!a)
		return false;
	*arr = a;
	*cap = cap2;
	return true;
}

#define SP_PUSH(r, field, capfield)                                                                \
	(sp_grow((void **)&(r)->p->field, &(r)->capfield, (r)->p->n_##field + 1,                   \
		 sizeof(*(r)->p->field))                                                           \
	     ? &(r)->p->field[(r)->p->n_##field++]                                                 \
	     : NULL)

static void sp_stats_release(struct sp_prof_stats *s)
{
	free(s->timer);
	free(s->timer_why);
	s->timer = NULL;
	s->timer_why = NULL;
}

/* Frees the strings of s that other does not share (the stats committed
 * at the last checkpoint and the ones read since are copies of one
 * another until a STATS record replaces one). */
static void sp_stats_free_unless(struct sp_prof_stats *s, const struct sp_prof_stats *other)
{
	if (s->timer != other->timer)
		free(s->timer);
	if (s->timer_why != other->timer_why)
		free(s->timer_why);
}

static void sp_header_release(struct sp_prof_header *h)
{
	free(h->timer);
	free(h->cmdline);
	free(h->exe);
	free(h->hostname);
	memset(h, 0, sizeof(*h));
}

static void sp_pycode_release(struct sp_prof_pycode *c)
{
	free(c->name);
	free(c->qualname);
	free(c->filename);
	free(c->linetable);
}

static void sp_pyinfo_release(struct sp_prof_pyinfo *i)
{
	free(i->module);
	free(i->status);
}

static void sp_event_release(struct sp_prof_event *e)
{
	free(e->name);
	free(e->unit);
}

/* Drops every record after the last good checkpoint. */
static void sp_rollback(struct sp_reader *r)
{
	struct sp_profile *p = r->p;
	struct sp_counts *c = &r->committed;
	for (size_t i = c->modules; i < p->n_modules; i++) {
		free(p->modules[i].path);
		free(p->modules[i].image);
	}
	for (size_t i = c->threads; i < p->n_threads; i++)
		free(p->threads[i].name);
	for (size_t i = c->stacks; i < p->n_stacks; i++)
		free(p->stacks[i].pcs);
	for (size_t i = c->ranges; i < p->n_ranges; i++)
		free(p->ranges[i].name);
	for (size_t i = c->jits; i < p->n_jits; i++)
		free(p->jits[i].name);
	for (size_t i = c->pycodes; i < p->n_pycodes; i++)
		sp_pycode_release(&p->pycodes[i]);
	for (size_t i = c->pyinfos; i < p->n_pyinfos; i++)
		sp_pyinfo_release(&p->pyinfos[i]);
	for (size_t i = c->events; i < p->n_events; i++)
		sp_event_release(&p->events[i]);
	p->n_events = c->events;
	p->n_pycodes = c->pycodes;
	p->n_pyinfos = c->pyinfos;
	p->n_modules = c->modules;
	p->n_threads = c->threads;
	p->n_stacks = c->stacks;
	p->n_samples = c->samples;
	p->n_ranges = c->ranges;
	p->n_jits = c->jits;
	p->n_marks = c->marks;
	sp_stats_free_unless(&p->stats, &c->stats);
	p->stats = c->stats;
	p->has_stats = c->has_stats;
	if (r->has_header && !c->has_header) {
		sp_header_release(&p->header);
		r->has_header = false;
	}
}

static void sp_commit(struct sp_reader *r)
{
	struct sp_profile *p = r->p;
	struct sp_counts *c = &r->committed;
	sp_stats_free_unless(&c->stats, &p->stats);
	c->modules = p->n_modules;
	c->threads = p->n_threads;
	c->stacks = p->n_stacks;
	c->samples = p->n_samples;
	c->ranges = p->n_ranges;
	c->jits = p->n_jits;
	c->marks = p->n_marks;
	c->pycodes = p->n_pycodes;
	c->pyinfos = p->n_pyinfos;
	c->events = p->n_events;
	c->stats = p->stats;
	c->has_stats = p->has_stats;
	c->has_header = r->has_header;
}

/* Parses one record. Returns false (with p->error set) if it is malformed. */
static bool sp_parse_record(struct sp_reader *r, uint8_t type, const uint8_t *data, size_t len)
{
	struct sp_profile *p = r->p;
	struct sp_cursor c;
	sp_cursor_init(&c, data, len);

	if (!r->has_header && type != SP_REC_HEADER && type != SP_REC_CHECKPOINT) {
		sp_set_error(p, SP_READ_CORRUPT, "record type %u before the header", type);
		return false;
	}
	switch (type) {
	case SP_REC_HEADER: {
		if (r->has_header) {
			sp_set_error(p, SP_READ_CORRUPT, "second header record");
			return false;
		}
		struct sp_prof_header *h = &p->header;
		h->version = (uint32_t)sp_cursor_uleb(&c);
		h->pid = (int32_t)sp_cursor_sleb(&c);
		h->ppid = (int32_t)sp_cursor_sleb(&c);
		h->start_realtime_ns = sp_cursor_uleb(&c);
		h->start_mono_ns = sp_cursor_uleb(&c);
		h->freq_hz = (uint32_t)sp_cursor_uleb(&c);
		h->max_depth = (uint32_t)sp_cursor_uleb(&c);
		h->timer = sp_cursor_str(&c);
		h->cmdline = sp_cursor_str(&c);
		h->exe = sp_cursor_str(&c);
		h->hostname = sp_cursor_str(&c);
		r->has_header = true;
		break;
	}
	case SP_REC_MODULE: {
		struct sp_prof_module *m = SP_PUSH(r, modules, cap_modules);
		if (!m)
			goto oom;
		memset(m, 0, sizeof(*m));
		m->id = (uint32_t)sp_cursor_uleb(&c);
		m->flags = (uint32_t)sp_cursor_uleb(&c);
		m->start = sp_cursor_uleb(&c);
		m->end = sp_cursor_uleb(&c);
		m->bias = sp_cursor_uleb(&c);
		m->time_ns = sp_cursor_uleb(&c);
		m->path = sp_cursor_str(&c);
		const uint8_t *bid;
		size_t n = sp_cursor_blob(&c, &bid);
		if (n > sizeof(m->build_id))
			c.bad = true;
		else if (n)
			memcpy(m->build_id, bid, n);
		m->build_id_len = (uint32_t)n;
		const uint8_t *img;
		n = sp_cursor_blob(&c, &img);
		if (n && !c.bad) {
			m->image = malloc(n);
			if (!m->image)
				goto oom;
			memcpy(m->image, img, n);
			m->image_len = n;
		}
		break;
	}
	case SP_REC_UNLOAD: {
		uint32_t id = (uint32_t)sp_cursor_uleb(&c);
		uint64_t t = sp_cursor_uleb(&c);
		for (size_t i = p->n_modules; i-- > 0;) {
			if (p->modules[i].id == id && !p->modules[i].unload_ns) {
				p->modules[i].unload_ns = t ? t : 1;
				break;
			}
		}
		break;
	}
	case SP_REC_THREAD: {
		struct sp_prof_thread *t = SP_PUSH(r, threads, cap_threads);
		if (!t)
			goto oom;
		t->tid = (int32_t)sp_cursor_sleb(&c);
		t->time_ns = sp_cursor_uleb(&c);
		t->name = sp_cursor_str(&c);
		break;
	}
	case SP_REC_STACK: {
		uint32_t id = (uint32_t)sp_cursor_uleb(&c);
		uint32_t flags = (uint32_t)sp_cursor_uleb(&c);
		uint64_t depth = sp_cursor_uleb(&c);
		if (c.bad || id != p->n_stacks + 1 || depth > SP_MAX_DEPTH || depth > len) {
			sp_set_error(p, SP_READ_CORRUPT, "bad stack record (id %u, depth %llu)", id,
				     (unsigned long long)depth);
			return false;
		}
		struct sp_prof_stack *s = SP_PUSH(r, stacks, cap_stacks);
		if (!s)
			goto oom;
		s->id = id;
		s->flags = flags;
		s->depth = (uint32_t)depth;
		s->pcs = malloc((depth ? depth : 1) * sizeof(uint64_t));
		if (!s->pcs)
			goto oom;
		uint64_t prev = 0;
		for (uint64_t i = 0; i < depth; i++) {
			prev += (uint64_t)sp_cursor_sleb(&c);
			s->pcs[i] = prev;
		}
		break;
	}
	case SP_REC_STACK_DIFF: {
		uint32_t id = (uint32_t)sp_cursor_uleb(&c);
		uint32_t flags = (uint32_t)sp_cursor_uleb(&c);
		uint64_t base = sp_cursor_uleb(&c);
		uint64_t keep = sp_cursor_uleb(&c);
		uint64_t own = sp_cursor_uleb(&c);
		const struct sp_prof_stack *b =
		    base >= 1 && base <= p->n_stacks ? &p->stacks[base - 1] : NULL;
		r->copied += keep;
		if (r->copied > r->bytes * SP_DIFF_FRAMES_PER_BYTE + SP_MAX_DEPTH) {
			sp_set_error(p, SP_READ_CORRUPT,
				     "stack records copy %llu frames, more than %llu bytes of a "
				     "profile can hold",
				     (unsigned long long)r->copied, (unsigned long long)r->bytes);
			return false;
		}
		if (c.bad || id != p->n_stacks + 1 || !b || keep > b->depth || own > len ||
		    own + keep > SP_MAX_DEPTH) {
			sp_set_error(p, SP_READ_CORRUPT,
				     "bad stack record (id %u, %llu frames on %llu of stack %llu)",
				     id, (unsigned long long)own, (unsigned long long)keep,
				     (unsigned long long)base);
			return false;
		}
		uint64_t *pcs = malloc((own + keep ? own + keep : 1) * sizeof(uint64_t));
		if (!pcs)
			goto oom;
		uint64_t prev = 0;
		for (uint64_t i = 0; i < own; i++) {
			prev += (uint64_t)sp_cursor_sleb(&c);
			pcs[i] = prev;
		}
		memcpy(pcs + own, b->pcs + (b->depth - keep), keep * sizeof(uint64_t));
		struct sp_prof_stack *s = SP_PUSH(r, stacks, cap_stacks);
		if (!s) {
			free(pcs);
			goto oom;
		}
		s->id = id;
		s->flags = flags;
		s->depth = (uint32_t)(own + keep);
		s->pcs = pcs;
		break;
	}
	case SP_REC_SAMPLES:
	case SP_REC_EVENT_SAMPLES: {
		const struct sp_prof_event *ev = p->events; /* cpu */
		if (type == SP_REC_EVENT_SAMPLES) {
			uint64_t id = sp_cursor_uleb(&c);
			ev = id && id <= UINT32_MAX ? sp_profile_event(p, (uint32_t)id) : NULL;
			if (c.bad || !ev) {
				sp_set_error(
				    p, SP_READ_CORRUPT,
				    "samples of event %llu, which no EVENT record declares",
				    (unsigned long long)id);
				return false;
			}
		}
		bool timed = ev->flags & SP_EVENT_TIMED, payload = ev->flags & SP_EVENT_PAYLOAD;
		int32_t tid = (int32_t)sp_cursor_sleb(&c);
		uint64_t n = sp_cursor_uleb(&c);
		uint64_t period = sp_cursor_uleb(&c);
		/* four bytes a sample at least */
		if (c.bad || n == 0 || n > len / 4) {
			sp_set_error(p, SP_READ_CORRUPT, "bad samples record (%llu samples)",
				     (unsigned long long)n);
			return false;
		}
		uint64_t prev = 0;
		for (uint64_t i = 0; i < n; i++) {
			struct sp_prof_sample *s = SP_PUSH(r, samples, cap_samples);
			if (!s)
				goto oom;
			s->tid = tid;
			s->event = ev->id;
			s->stack = (uint32_t)sp_cursor_uleb(&c);
			s->range = (uint32_t)sp_cursor_uleb(&c);
			s->weight_ns = period + (uint64_t)sp_cursor_sleb(&c);
			s->time_ns =
			    prev + (timed ? s->weight_ns : 0) + (uint64_t)sp_cursor_sleb(&c);
			s->payload = payload ? sp_cursor_uleb(&c) : 0;
			prev = s->time_ns;
			if (c.bad || s->stack == 0 || s->stack > p->n_stacks ||
			    s->range > p->n_ranges) {
				sp_set_error(
				    p, SP_READ_CORRUPT,
				    "sample %llu of %llu refers to unknown stack %u or range "
				    "%u",
				    (unsigned long long)i + 1, (unsigned long long)n, s->stack,
				    s->range);
				return false;
			}
		}
		break;
	}
	case SP_REC_EVENT: {
		uint64_t id = sp_cursor_uleb(&c);
		uint32_t flags = (uint32_t)sp_cursor_uleb(&c);
		char *name = sp_cursor_str(&c);
		char *unit = sp_cursor_str(&c);
		const struct sp_prof_event *old =
		    id <= UINT32_MAX ? sp_profile_event(p, (uint32_t)id) : NULL;
		/* id 0 is cpu, never declared; an id names one kind */
		if (c.bad || !name || !name[0] || id == 0 || id > UINT32_MAX || old) {
			sp_set_error(p, SP_READ_CORRUPT, "bad event record (id %llu%s%s)",
				     (unsigned long long)id, name ? ", " : "", name ? name : "");
			free(name);
			free(unit);
			return false;
		}
		struct sp_prof_event *e = SP_PUSH(r, events, cap_events);
		if (!e) {
			free(name);
			free(unit);
			goto oom;
		}
		*e = (struct sp_prof_event){
		    .id = (uint32_t)id, .flags = flags, .name = name, .unit = unit};
		break;
	}
	case SP_REC_SAMPLE: {
		struct sp_prof_sample *s = SP_PUSH(r, samples, cap_samples);
		if (!s)
			goto oom;
		s->tid = (int32_t)sp_cursor_sleb(&c);
		s->stack = (uint32_t)sp_cursor_uleb(&c);
		s->range = (uint32_t)sp_cursor_uleb(&c);
		s->time_ns = sp_cursor_uleb(&c);
		s->weight_ns = sp_cursor_uleb(&c);
		s->event = 0;
		s->payload = 0;
		if (!c.bad && (s->stack == 0 || s->stack > p->n_stacks || s->range > p->n_ranges)) {
			sp_set_error(p, SP_READ_CORRUPT,
				     "sample refers to unknown stack %u or range %u", s->stack,
				     s->range);
			return false;
		}
		break;
	}
	case SP_REC_RANGE: {
		uint32_t id = (uint32_t)sp_cursor_uleb(&c);
		uint32_t parent = (uint32_t)sp_cursor_uleb(&c);
		if (c.bad || id != p->n_ranges + 1 || parent >= id) {
			sp_set_error(p, SP_READ_CORRUPT, "bad range record (id %u)", id);
			return false;
		}
		struct sp_prof_range *rg = SP_PUSH(r, ranges, cap_ranges);
		if (!rg)
			goto oom;
		rg->id = id;
		rg->parent = parent;
		rg->name = sp_cursor_str(&c);
		/* added after the first files were written */
		rg->flags = c.p < c.end ? (uint32_t)sp_cursor_uleb(&c) : 0;
		rg->anchor = c.p < c.end ? (uint32_t)sp_cursor_uleb(&c) : 0;
		rg->cls = NULL;
		char *sep =
		    rg->name && (rg->flags & SP_RANGE_MODULE) ? strchr(rg->name, '\x1f') : NULL;
		if (sep) {
			*sep = '\0';
			rg->cls = sep + 1;
		}
		break;
	}
	case SP_REC_JIT: {
		struct sp_prof_jit *j = SP_PUSH(r, jits, cap_jits);
		if (!j)
			goto oom;
		j->start = sp_cursor_uleb(&c);
		j->size = sp_cursor_uleb(&c);
		j->name = sp_cursor_str(&c);
		break;
	}
	case SP_REC_PYCODE: {
		struct sp_prof_pycode *pc = SP_PUSH(r, pycodes, cap_pycodes);
		if (!pc)
			goto oom;
		memset(pc, 0, sizeof(*pc));
		pc->id = (uint32_t)sp_cursor_uleb(&c);
		pc->minor = (uint32_t)sp_cursor_uleb(&c);
		pc->firstlineno = (int32_t)sp_cursor_sleb(&c);
		pc->flags = (uint32_t)sp_cursor_uleb(&c);
		pc->name = sp_cursor_str(&c);
		pc->qualname = sp_cursor_str(&c);
		pc->filename = sp_cursor_str(&c);
		const uint8_t *lt;
		size_t n = sp_cursor_blob(&c, &lt);
		if (n && !c.bad) {
			pc->linetable = malloc(n);
			if (!pc->linetable)
				goto oom;
			memcpy(pc->linetable, lt, n);
			pc->linetable_len = n;
		}
		if (c.bad || !pc->id) {
			sp_set_error(p, SP_READ_CORRUPT, "bad Python code record (id %u)", pc->id);
			return false;
		}
		/* an empty qualname is 3.10's: it has none */
		if (pc->qualname && !pc->qualname[0]) {
			free(pc->qualname);
			pc->qualname = NULL;
		}
		break;
	}
	case SP_REC_PYINFO: {
		struct sp_prof_pyinfo *pi = SP_PUSH(r, pyinfos, cap_pyinfos);
		if (!pi)
			goto oom;
		pi->version = (uint32_t)sp_cursor_uleb(&c);
		pi->flags = (uint32_t)sp_cursor_uleb(&c);
		pi->module = sp_cursor_str(&c);
		pi->status = sp_cursor_str(&c);
		pi->time_ns = sp_cursor_uleb(&c);
		break;
	}
	case SP_REC_MARK: {
		struct sp_prof_mark *mk = SP_PUSH(r, marks, cap_marks);
		if (!mk)
			goto oom;
		mk->kind = (uint32_t)sp_cursor_uleb(&c);
		mk->time_ns = sp_cursor_uleb(&c);
		break;
	}
	case SP_REC_STATS: {
		struct sp_prof_stats s;
		memset(&s, 0, sizeof(s));
		s.flags = (uint32_t)sp_cursor_uleb(&c);
		s.time_ns = sp_cursor_uleb(&c);
		s.samples = sp_cursor_uleb(&c);
		s.drops = sp_cursor_uleb(&c);
		s.unwind_errors = sp_cursor_uleb(&c);
		s.truncated = sp_cursor_uleb(&c);
		s.skipped = sp_cursor_uleb(&c);
		s.weight_ns = sp_cursor_uleb(&c);
		s.signals = sp_cursor_uleb(&c);
		s.overruns = sp_cursor_uleb(&c);
		s.timer = sp_cursor_str(&c);
		/* added after the first files were written */
		if (c.p < c.end)
			s.handler_ns = sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.throttled = sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.unwind_fast = sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.unwind_slow = sp_cursor_uleb(&c);
		if (c.p < c.end) {
			uint64_t d = sp_cursor_uleb(&c);
			s.unwind_checked = d > 0;
			s.unwind_differ = d ? d - 1 : 0;
		}
		if (c.p < c.end)
			s.signal = (int32_t)sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.handler_stack = sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.timer_fallbacks = (uint32_t)sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.aside = (uint32_t)sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.randomized = sp_cursor_uleb(&c) != 0;
		if (c.p < c.end)
			s.py_unreadable = sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.py_faults = sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.py_bad_tstates = sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.writer_ns = sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.setup_ns = sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.syscalls_cut = sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.threads_missed = sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.missed_ns = sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.stray_signals = sp_cursor_uleb(&c);
		if (c.p < c.end)
			s.timer_why = sp_cursor_str(&c);
		if (c.p < c.end)
			s.timer_irq_ns = sp_cursor_uleb(&c);
		sp_stats_free_unless(&p->stats, &r->committed.stats);
		p->stats = s;
		p->has_stats = true;
		break;
	}
	case SP_REC_CHECKPOINT: {
		uint64_t crc = sp_cursor_uleb(&c);
		uint64_t n = sp_cursor_uleb(&c);
		if (c.bad || crc != r->crc || n != r->n_records) {
			sp_set_error(p, SP_READ_CORRUPT,
				     "checksum mismatch in the block ending at record %llu",
				     (unsigned long long)n);
			return false;
		}
		sp_commit(r);
		r->crc = crc32(0L, Z_NULL, 0);
		r->n_records = 0;
		return true;
	default:
		/* unknown types from a newer minor revision are skipped */
		break;
	}
	}
	if (c.bad) {
		sp_set_error(p, SP_READ_CORRUPT, "malformed record of type %u", type);
		return false;
	}
	return true;
oom:
	sp_set_error(p, SP_READ_CORRUPT, "out of memory");
	return false;
}

/*
 * Consumes whole records from data; returns the bytes used, or -1 once a
 * record is bad. The CRC covers each record's type, length and payload.
 */
static long sp_parse_records(struct sp_reader *r, const uint8_t *data, size_t len)
{
	size_t off = 0;
	while (off < len) {
		struct sp_cursor c;
		sp_cursor_init(&c, data + off, len - off);
		uint8_t type = sp_cursor_u8(&c);
		uint64_t n = sp_cursor_uleb(&c);
		if (c.bad)
			break; /* header incomplete: wait for more */
		if (n > SP_MAX_RECORD) {
			sp_set_error(r->p, SP_READ_CORRUPT, "record of %llu bytes",
				     (unsigned long long)n);
			return -1;
		}
		size_t head = (size_t)(c.p - (data + off));
		if (n > len - off - head)
			break;
		if (type != SP_REC_CHECKPOINT) {
			r->crc = crc32(r->crc, data + off, (uInt)(head + n));
			r->n_records++;
		}
		r->bytes += head + n;
		if (!sp_parse_record(r, type, data + off + head, (size_t)n))
			return -1;
		off += head + (size_t)n;
	}
	return (long)off;
}

const struct sp_prof_stack *sp_profile_stack(const struct sp_profile *p, uint32_t id)
{
	if (id == 0 || id > p->n_stacks)
		return NULL;
	return &p->stacks[id - 1];
}

const struct sp_prof_range *sp_profile_range(const struct sp_profile *p, uint32_t id)
{
	if (id == 0 || id > p->n_ranges)
		return NULL;
	return &p->ranges[id - 1];
}

const struct sp_prof_pycode *sp_profile_pycode(const struct sp_profile *p, uint32_t id)
{
	/* sorted by id once read (sp_sort_pycodes) */
	size_t lo = 0, hi = p->n_pycodes;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->pycodes[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->n_pycodes && p->pycodes[lo].id == id ? &p->pycodes[lo] : NULL;
}

static int sp_pycode_cmp(const void *a, const void *b)
{
	const struct sp_prof_pycode *x = a, *y = b;
	return (x->id > y->id) - (x->id < y->id);
}

/* The sampler numbers code objects as it meets them on any thread, and each
 * thread's records reach the file in its own order. */
static void sp_sort_pycodes(struct sp_profile *p)
{
	if (p->n_pycodes > 1)
		qsort(p->pycodes, p->n_pycodes, sizeof(*p->pycodes), sp_pycode_cmp);
}

const struct sp_prof_window *sp_profile_window(const struct sp_profile *p, uint64_t time_ns)
{
	size_t lo = 0, hi = p->n_windows;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct sp_prof_window *w = &p->windows[mid];
		if (time_ns < w->begin_ns)
			hi = mid;
		else if (time_ns > w->end_ns)
			lo = mid + 1;
		else
			return w;
	}
	return NULL;
}

static int sp_window_cmp(const void *a, const void *b)
{
	const struct sp_prof_window *x = a, *y = b;
	return (x->begin_ns > y->begin_ns) - (x->begin_ns < y->begin_ns);
}

/*
 * Pairs each WINDOW_BEGIN with the next WINDOW_END; a begin left open runs
 * to the end of the profile. The sampler writes them in pairs and in time
 * order, but a damaged or hand-made file may not: the windows are sorted
 * and overlaps merged, so that sp_profile_window() can bisect them.
 * false if out of memory.
 */
static bool sp_make_windows(struct sp_profile *p)
{
	size_t n = 0;
	for (size_t i = 0; i < p->n_marks; i++)
		n += p->marks[i].kind == SP_MARK_WINDOW_BEGIN;
	if (!n)
		return true;
	p->windows = malloc(n * sizeof(*p->windows));
	if (!p->windows)
		return false;
	bool open = false;
	for (size_t i = 0; i < p->n_marks; i++) {
		const struct sp_prof_mark *mk = &p->marks[i];
		if (mk->kind == SP_MARK_WINDOW_BEGIN && !open) {
			p->windows[p->n_windows++] =
			    (struct sp_prof_window){.begin_ns = mk->time_ns, .end_ns = UINT64_MAX};
			open = true;
		} else if (mk->kind == SP_MARK_WINDOW_END && open) {
			struct sp_prof_window *w = &p->windows[p->n_windows - 1];
			w->end_ns = mk->time_ns < w->begin_ns ? w->begin_ns : mk->time_ns;
			open = false;
		}
	}
	qsort(p->windows, p->n_windows, sizeof(*p->windows), sp_window_cmp);
	size_t k = 0;
	for (size_t i = 0; i < p->n_windows; i++) {
		if (k && p->windows[i].begin_ns <= p->windows[k - 1].end_ns) {
			if (p->windows[i].end_ns > p->windows[k - 1].end_ns)
				p->windows[k - 1].end_ns = p->windows[i].end_ns;
		} else {
			p->windows[k++] = p->windows[i];
		}
	}
	p->n_windows = k;
	return true;
}

const struct sp_prof_thread *sp_profile_thread(const struct sp_profile *p, int32_t tid)
{
	/* the last record for a tid wins: a thread may be renamed */
	for (size_t i = p->n_threads; i-- > 0;)
		if (p->threads[i].tid == tid)
			return &p->threads[i];
	return NULL;
}

/*
 * Reads the whole file. Only a regular file that begins with the magic is
 * read past its first bytes: a FIFO, a device or a huge file of holes
 * must not hang or stall a command (-EINVAL, -ENOEXEC, -EFBIG in *err).
 */
static uint8_t *sp_slurp(const char *path, size_t *len, int *err)
{
	uint8_t *data = NULL;
	/* O_NONBLOCK: opening a FIFO would wait for a writer */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		*err = errno;
		return NULL;
	}
	struct stat st;
	char magic[SP_PROFILE_MAGIC_LEN];
	if (fstat(fd, &st) < 0) {
		*err = errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		*err = EINVAL;
		goto out;
	}
	if (pread(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) ||
	    memcmp(magic, SP_PROFILE_MAGIC, sizeof(magic))) {
		*err = ENOEXEC;
		goto out;
	}
	/* compressed data has no runs of zeros for a filesystem to leave out */
	if ((uint64_t)st.st_size > SP_SPARSE_MIN &&
	    (uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size / 2) {
		*err = EFBIG;
		goto out;
	}
	data = malloc((size_t)st.st_size + 1);
	if (!data) {
		*err = ENOMEM;
		goto out;
	}
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, data + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	*len = got;
out:
	close(fd);
	return data;
}

/*
 * Says what a file without the magic looks like, so that the user knows what
 * was given instead: nothing, collapsed stacks, another profiler's file.
 */
static void sp_describe_not_profile(const char *path, char *err, size_t errlen)
{
	unsigned char head[512];
	ssize_t n = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd >= 0) {
		n = pread(fd, head, sizeof(head), 0);
		close(fd);
	}
	const char *what = NULL;
	if (n >= 4 && !memcmp(head, "\177ELF", 4))
		what = "an ELF file";
	else if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b)
		what = "gzip data (a pprof profile?)";
	else if (n >= 8 && (!memcmp(head, "PERFILE2", 8) || !memcmp(head, "PERFFILE", 8)))
		what = "a perf.data file";
	else if (n > 0) {
		/* collapsed stacks: text lines "frame;frame... COUNT" */
		size_t len = (size_t)n, line_end = 0;
		while (line_end < len && head[line_end] != '\n')
			line_end++;
		bool text = true;
		for (size_t i = 0; i < line_end; i++)
			if (head[i] < 0x20 && head[i] != '\t')
				text = false;
		size_t k = line_end;
		while (k > 0 && head[k - 1] == '\r')
			k--;
		size_t digits = 0;
		while (k > digits && head[k - 1 - digits] >= '0' && head[k - 1 - digits] <= '9')
			digits++;
		if (text && digits && k > digits && head[k - 1 - digits] == ' ' &&
		    (line_end < len || len < sizeof(head)))
			what = "collapsed stacks text (the output of stackprof collapse or "
			       "stackcollapse), not a raw profile";
		else if (text && line_end)
			what = "a text file";
	}
	if (n == 0)
		snprintf(err, errlen, "%s: empty file, not a stackprof profile", path);
	else if (what)
		snprintf(err, errlen, "%s: not a stackprof profile: this looks like %s", path,
			 what);
	else
		snprintf(err, errlen, "%s: not a stackprof profile (bad magic)", path);
}

/* Where the input of a profile without its stream's end ran out. */
enum sp_cut_at {
	SP_CUT_MID_RECORD,   /* inside a record */
	SP_CUT_MID_FLUSH,    /* between the records of a flush that never ended */
	SP_CUT_AFTER_FLUSH,  /* right at the end of a flush */
	SP_CUT_BEFORE_FIRST, /* before the first flush ended */
};

/*
 * Says where such a profile stops short and how much was read before that
 * (after the rollback, so the counts are final). Everything up to the last
 * flush was checked (checkpoint CRCs, and every flush ended on a
 * checkpoint): the file is whole up to there, then ends. Why is the
 * caller's to say.
 */
static void sp_set_truncated(struct sp_profile *p, enum sp_cut_at at, uint64_t size, bool header)
{
	static const char *const where[] = {
	    [SP_CUT_MID_RECORD] = ", in a record after its last flush",
	    [SP_CUT_MID_FLUSH] = ", in the middle of a flush",
	    [SP_CUT_AFTER_FLUSH] = ", right after a flush",
	    [SP_CUT_BEFORE_FIRST] = ", before its first flush",
	};
	char got[96];
	if (!header)
		snprintf(got, sizeof(got), "nothing could be read: its header is not complete");
	else
		snprintf(got, sizeof(got), "%zu sample%s read, up to its last flush", p->n_samples,
			 p->n_samples == 1 ? "" : "s");
	sp_set_error(p, SP_READ_TRUNCATED, "the file ends at byte %llu%s; %s",
		     (unsigned long long)size, where[at], got);
}

/*
 * Whether inflate() just stopped (Z_BLOCK) at the end of a sync flush's
 * marker: an empty stored block, which made no output since the last block
 * boundary (out_at_boundary), ends on a byte, and is the bytes 00 00 ff ff.
 * The writer makes one only right after a checkpoint (sp_prof_writer_flush):
 * records still open there mean the file is damaged, not cut off.
 */
static bool sp_at_sync_marker(const z_stream *z, const uint8_t *in, uLong out_at_boundary)
{
	static const uint8_t marker[4] = {0x00, 0x00, 0xff, 0xff};
	return (z->data_type & 0x80) && !(z->data_type & 0x07) && z->total_out == out_at_boundary &&
	       z->next_in - in >= 4 && !memcmp(z->next_in - 4, marker, 4);
}

struct sp_profile *sp_profile_read(const char *path, char *err, size_t errlen)
{
	struct sp_profile *p = NULL;
	struct sp_reader r;
	uint8_t *file = NULL, *pend = NULL;
	size_t flen = 0, plen = 0, pcap = 0;
	int e = 0;
	z_stream z;
	bool z_ready = false;

	memset(&r, 0, sizeof(r));
	file = sp_slurp(path, &flen, &e);
	if (!file) {
		if (err && e == ENOEXEC)
			sp_describe_not_profile(path, err, errlen);
		else if (err)
			snprintf(err, errlen, "%s: %s", path,
				 e == EINVAL  ? "not a regular file"
				 : e == EFBIG ? "mostly holes (a sparse file): not a profile"
					      : strerror(e));
		errno = e == ENOEXEC ? EINVAL : e;
		goto fail;
	}
	if (flen < SP_PROFILE_MAGIC_LEN || memcmp(file, SP_PROFILE_MAGIC, SP_PROFILE_MAGIC_LEN)) {
		/* it changed between the two reads */
		if (err)
			snprintf(err, errlen, "%s: not a stackprof profile (bad magic)", path);
		errno = EINVAL;
		goto fail;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		goto fail;
	}
	p->file_bytes = flen;
	r.p = p;
	r.crc = crc32(0L, Z_NULL, 0);
	/* cpu: every file's kind 0, declared by none */
	struct sp_prof_event *cpu = SP_PUSH(&r, events, cap_events);
	const struct sp_prof_event *b = sp_prof_event_builtin(SP_EVENT_CPU);
	if (cpu)
		*cpu = (struct sp_prof_event){.id = b->id,
					      .flags = b->flags,
					      .name = strdup(b->name),
					      .unit = strdup(b->unit)};
	if (!cpu || !cpu->name || !cpu->unit) {
		errno = ENOMEM;
		goto fail;
	}
	r.committed.events = 1;

	memset(&z, 0, sizeof(z));
	if (inflateInit(&z) != Z_OK) {
		errno = ENOMEM;
		goto fail;
	}
	z_ready = true;
	z.next_in = file + SP_PROFILE_MAGIC_LEN;
	z.avail_in = (uInt)(flen - SP_PROFILE_MAGIC_LEN);

	bool ended = false;
	int last_type = 0;	   /* z.data_type after the last inflate() that made progress */
	uLong out_at_boundary = 0; /* z.total_out at the last block boundary */
	for (;;) {
		if (!sp_grow((void **)&pend, &pcap, plen + 65536, 1)) {
			sp_set_error(p, SP_READ_CORRUPT, "out of memory");
			break;
		}
		z.next_out = pend + plen;
		z.avail_out = (uInt)(pcap - plen);
		/* stops at every block's end, so that each flush's end is seen */
		int rc = inflate(&z, Z_BLOCK);
		if (rc != Z_BUF_ERROR)
			last_type = z.data_type; /* a call without progress resets it */
		plen = pcap - z.avail_out;
		if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT || rc == Z_MEM_ERROR) {
			sp_set_error(p, SP_READ_CORRUPT,
				     "compressed data is corrupt at byte %llu (%s)",
				     (unsigned long long)(z.total_in + SP_PROFILE_MAGIC_LEN),
				     z.msg ? z.msg : "zlib error");
			break;
		}
		long used = sp_parse_records(&r, pend, plen);
		if (used < 0)
			break;
		memmove(pend, pend + used, plen - (size_t)used);
		plen -= (size_t)used;
		if (rc != Z_BUF_ERROR &&
		    sp_at_sync_marker(&z, file + SP_PROFILE_MAGIC_LEN, out_at_boundary) &&
		    (plen || r.n_records)) {
			/* a length that ran past its checkpoint, or a lost one */
			sp_set_error(
			    p, SP_READ_CORRUPT,
			    "the flush that ends at byte %llu does not end on a checkpoint",
			    (unsigned long long)(z.total_in + SP_PROFILE_MAGIC_LEN));
			break;
		}
		if (rc != Z_BUF_ERROR && (z.data_type & 0x80))
			out_at_boundary = z.total_out;
		if (rc == Z_STREAM_END) {
			ended = true;
			break;
		}
		if (rc == Z_BUF_ERROR && z.avail_in == 0)
			break; /* input used up before the stream end */
	}
	if (p->status == SP_READ_OK && ended && (plen || r.n_records)) {
		/* a clean zlib end must also end on a checkpoint */
		sp_set_error(p, SP_READ_CORRUPT, "trailing data after the last checkpoint");
	}
	if (p->status == SP_READ_OK && ended && z.avail_in) {
		/* the profile is whole, but it is not all the file holds */
		const uint8_t *rest = z.next_in;
		bool another = z.avail_in >= SP_PROFILE_MAGIC_LEN &&
			       !memcmp(rest, SP_PROFILE_MAGIC, SP_PROFILE_MAGIC_LEN);
		sp_set_error(p, SP_READ_CORRUPT,
			     "%u bytes follow the end of the profile at byte %llu%s", z.avail_in,
			     (unsigned long long)(flen - z.avail_in),
			     another ? ": another profile (two files concatenated?)" : "");
	}
	/* a process that exec'ed ends its stream with a flush, not a zlib end */
	bool exec_end = p->has_stats && (p->stats.flags & SP_STATS_EXEC) && !plen && !r.n_records;
	bool cut = p->status == SP_READ_OK && !ended && !exec_end;
	/* the last flush is whole if its records are and zlib stopped between
	 * blocks on a byte (data_type 128, no bits left: the end of a sync
	 * flush's empty block) */
	enum sp_cut_at at = !r.committed.has_header	? SP_CUT_BEFORE_FIRST
			    : plen			? SP_CUT_MID_RECORD
			    : r.n_records		? SP_CUT_MID_FLUSH
			    : (last_type & 0xbf) == 128 ? SP_CUT_AFTER_FLUSH
							: SP_CUT_MID_FLUSH;
	if (p->status != SP_READ_OK || cut)
		sp_rollback(&r);
	if (cut)
		sp_set_truncated(p, at, flen, r.has_header);
	if (!r.has_header) {
		if (err && cut)
			snprintf(err, errlen,
				 "%s: cut off before its first flush (the process was killed or "
				 "ended at once, or the file was cut or copied while being "
				 "written): %s",
				 path, p->error);
		else if (err)
			snprintf(err, errlen, "%s: no complete header: %s", path,
				 p->error[0] ? p->error : "empty profile");
		errno = EINVAL;
		goto fail;
	}
	if (p->header.version < SP_PROFILE_VERSION_MIN || p->header.version > SP_PROFILE_VERSION) {
		if (err)
			snprintf(err, errlen,
				 "%s: profile version %u, this stackprof reads versions %u to %u",
				 path, p->header.version, SP_PROFILE_VERSION_MIN,
				 SP_PROFILE_VERSION);
		errno = EINVAL;
		goto fail;
	}
	sp_sort_pycodes(p);
	if (!sp_make_windows(p)) {
		if (err)
			snprintf(err, errlen, "%s: out of memory", path);
		errno = ENOMEM;
		goto fail;
	}
	sp_stats_free_unless(&r.committed.stats, &p->stats);
	inflateEnd(&z);
	free(pend);
	free(file);
	return p;
fail:
	if (z_ready)
		inflateEnd(&z);
	if (p)
		sp_stats_free_unless(&r.committed.stats, &p->stats);
	sp_profile_free(p);
	free(pend);
	free(file);
	return NULL;
}

void sp_profile_free(struct sp_profile *p)
{
	if (!p)
		return;
	sp_header_release(&p->header);
	for (size_t i = 0; i < p->n_modules; i++) {
		free(p->modules[i].path);
		free(p->modules[i].image);
	}
	for (size_t i = 0; i < p->n_threads; i++)
		free(p->threads[i].name);
	for (size_t i = 0; i < p->n_stacks; i++)
		free(p->stacks[i].pcs);
	for (size_t i = 0; i < p->n_ranges; i++)
		free(p->ranges[i].name);
	for (size_t i = 0; i < p->n_jits; i++)
		free(p->jits[i].name);
	sp_stats_release(&p->stats);
	free(p->modules);
	free(p->threads);
	free(p->stacks);
	free(p->samples);
	free(p->ranges);
	free(p->jits);
	free(p->marks);
	free(p->windows);
	for (size_t i = 0; i < p->n_pycodes; i++)
		sp_pycode_release(&p->pycodes[i]);
	for (size_t i = 0; i < p->n_pyinfos; i++)
		sp_pyinfo_release(&p->pyinfos[i]);
	free(p->pycodes);
	free(p->pyinfos);
	for (size_t i = 0; i < p->n_events; i++)
		sp_event_release(&p->events[i]);
	free(p->events);
	free(p);
}

const struct sp_prof_event *sp_profile_event(const struct sp_profile *p, uint32_t id)
{
	for (size_t i = 0; i < p->n_events; i++)
		if (p->events[i].id == id)
			return &p->events[i];
	return NULL;
}

const struct sp_prof_event *sp_profile_event_named(const struct sp_profile *p, const char *name)
{
	for (size_t i = 0; name && i < p->n_events; i++)
		if (p->events[i].name && !strcmp(p->events[i].name, name))
			return &p->events[i];
	return NULL;
}
