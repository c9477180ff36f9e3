#include "format/profile.h"
#include "format/buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

struct sp_prof_writer {
	sp_prof_writer_sink_fn sink;
	void *sink_ctx;
	int fd; /* for the plain file sink */
	z_stream z;
	bool z_ready;
	struct sp_buf rec;  /* the record being built */
	struct sp_buf pend; /* framed records not yet given to zlib */
	uLong crc;	    /* over record bytes since the last checkpoint */
	uint64_t n_records; /* since the last checkpoint */
	uint64_t bytes;
	int error; /* sticky: the first write error */
	/* the EVENT records written: which ids samples may use, and whether
	 * their samples carry a payload and have their weight as time */
	uint64_t events_declared, events_payload, events_timed;
};

static const struct sp_prof_event sp_builtin_events[SP_EVENT_BUILTIN_COUNT] = {
    [SP_EVENT_CPU] = {SP_EVENT_CPU, SP_EVENT_TIMED, (char *)"cpu", (char *)"ns"},
    [SP_EVENT_WALL] = {SP_EVENT_WALL, SP_EVENT_TIMED | SP_EVENT_PAYLOAD, (char *)"wall",
		       (char *)"ns"},
    [SP_EVENT_ALLOC] = {SP_EVENT_ALLOC, SP_EVENT_PAYLOAD, (char *)"alloc", (char *)"bytes"},
    [SP_EVENT_FREE] = {SP_EVENT_FREE, SP_EVENT_PAYLOAD, (char *)"free", (char *)"bytes"},
    [SP_EVENT_USER] = {SP_EVENT_USER, SP_EVENT_PAYLOAD, (char *)"user", (char *)"count"},
};

const struct sp_prof_event *sp_prof_event_builtin(uint32_t id)
{
	return id < SP_EVENT_BUILTIN_COUNT ? &sp_builtin_events[id] : NULL;
}

const struct sp_prof_event *sp_prof_event_builtin_named(const char *name)
{
	for (uint32_t i = 0; name && i < SP_EVENT_BUILTIN_COUNT; i++)
		if (!strcmp(sp_builtin_events[i].name, name))
			return &sp_builtin_events[i];
	return NULL;
}

/* The sink sp_prof_writer_new() writes with: all of it to an fd. */
static int sp_write_all_fd(void *ctx, const uint8_t *p, size_t n)
{
	int fd = *(const int *)ctx;
	while (n) {
		ssize_t r = write(fd, p, n);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int sp_prof_writer_deflate(struct sp_prof_writer *w, const uint8_t *p, size_t n, int flush)
{
	uint8_t chunk[16384];
	w->z.next_in = (Bytef *)p;
	w->z.avail_in = (uInt)n;
	do {
		w->z.next_out = chunk;
		w->z.avail_out = sizeof(chunk);
		int rc = deflate(&w->z, flush);
		if (rc == Z_STREAM_ERROR)
			return -EIO;
		size_t have = sizeof(chunk) - w->z.avail_out;
		if (have) {
			int err = w->sink(w->sink_ctx, chunk, have);
			if (err)
				return err;
			w->bytes += have;
		}
	} while (w->z.avail_out == 0 || w->z.avail_in > 0);
	return 0;
}

/*
 * Records wait in w->pend and go to zlib this many bytes at a time, or at
 * a flush. One deflate() call costs about a microsecond whatever it is
 * given; called twice a record, it was most of the writer's CPU at 1 kHz
 * (a SAMPLE record is ~15 bytes). What reaches the file is unchanged:
 * zlib holds Z_NO_FLUSH input back anyway, and only a flush promises that
 * the records before it can be read.
 */
#define SP_PEND_BYTES 65536

static int sp_prof_writer_drain(struct sp_prof_writer *w, int flush)
{
	int err = sp_prof_writer_deflate(w, w->pend.data, w->pend.len, flush);
	sp_buf_reset(&w->pend);
	if (err)
		w->error = err;
	return err;
}

struct sp_prof_writer *sp_prof_writer_new(int fd)
{
	struct sp_prof_writer *w = sp_prof_writer_new_sink(NULL, NULL);
	if (!w)
		return NULL;
	w->fd = fd;
	w->error = sp_write_all_fd(&w->fd, (const uint8_t *)SP_PROFILE_MAGIC, SP_PROFILE_MAGIC_LEN);
	return w;
}

struct sp_prof_writer *sp_prof_writer_new_sink(sp_prof_writer_sink_fn sink, void *ctx)
{
	struct sp_prof_writer *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->sink = sink ? sink : sp_write_all_fd;
	w->sink_ctx = sink ? ctx : &w->fd;
	sp_buf_init(&w->rec);
	sp_buf_init(&w->pend);
	/* The writer shares the program's CPUs: level 1 deflates the sample
	 * stream twice as fast as the default level for ~10% more bytes. */
	if (deflateInit(&w->z, Z_BEST_SPEED) != Z_OK) {
		free(w);
		return NULL;
	}
	w->z_ready = true;
	w->crc = crc32(0L, Z_NULL, 0);
	if (sink)
		w->error = sink(ctx, (const uint8_t *)SP_PROFILE_MAGIC, SP_PROFILE_MAGIC_LEN);
	w->bytes = SP_PROFILE_MAGIC_LEN;
	return w;
}

/* Frames the payload in w->rec as one record, for zlib. */
static int sp_prof_writer_emit(struct sp_prof_writer *w, enum sp_rec_type type)
{
	if (w->error)
		return w->error;
	if (w->rec.oom) {
		/* sticky: a record left out would leave a gap in the ids the
		 * reader checks, so the stream ends at its last good flush */
		sp_buf_reset(&w->rec);
		w->error = -ENOMEM;
		return w->error;
	}
	uint8_t head[11];
	struct sp_buf hb = {.data = head, .len = 0, .cap = sizeof(head)};
	sp_buf_put_u8(&hb, (uint8_t)type);
	sp_buf_put_uleb(&hb, w->rec.len);
	if (type != SP_REC_CHECKPOINT) {
		w->crc = crc32(w->crc, head, (uInt)hb.len);
		w->crc = crc32(w->crc, w->rec.data, (uInt)w->rec.len);
		w->n_records++;
	}
	size_t n = hb.len + w->rec.len;
	int err = 0;
	if (w->pend.len && w->pend.len + n > SP_PEND_BYTES)
		err = sp_prof_writer_drain(w, Z_NO_FLUSH);
	if (!err && n <= SP_PEND_BYTES) {
		size_t at = w->pend.len;
		sp_buf_put_bytes(&w->pend, head, hb.len);
		sp_buf_put_bytes(&w->pend, w->rec.data, w->rec.len);
		if (w->pend.oom) {
			/* no room to grow: what is staged goes first, then this record */
			w->pend.len = at;
			w->pend.oom = false;
			err = sp_prof_writer_drain(w, Z_NO_FLUSH);
		} else {
			n = 0;
		}
	}
	/* a record larger than the buffer, or no memory for it: straight to zlib */
	if (!err && n)
		err = sp_prof_writer_deflate(w, head, hb.len, Z_NO_FLUSH);
	if (!err && n)
		err = sp_prof_writer_deflate(w, w->rec.data, w->rec.len, Z_NO_FLUSH);
	sp_buf_reset(&w->rec);
	if (err)
		w->error = err;
	return err;
}

int sp_prof_writer_header(struct sp_prof_writer *w, const struct sp_prof_header *h)
{
	struct sp_buf *b = &w->rec;
	sp_buf_put_uleb(b, h->version);
	sp_buf_put_sleb(b, h->pid);
	sp_buf_put_sleb(b, h->ppid);
	sp_buf_put_uleb(b, h->start_realtime_ns);
	sp_buf_put_uleb(b, h->start_mono_ns);
	sp_buf_put_uleb(b, h->freq_hz);
	sp_buf_put_uleb(b, h->max_depth);
	sp_buf_put_str(b, h->timer);
	sp_buf_put_str(b, h->cmdline);
	sp_buf_put_str(b, h->exe);
	sp_buf_put_str(b, h->hostname);
	return sp_prof_writer_emit(w, SP_REC_HEADER);
}

int sp_prof_writer_module(struct sp_prof_writer *w, const struct sp_prof_module *m)
{
	struct sp_buf *b = &w->rec;
	sp_buf_put_uleb(b, m->id);
	sp_buf_put_uleb(b, m->flags);
	sp_buf_put_uleb(b, m->start);
	sp_buf_put_uleb(b, m->end);
	sp_buf_put_uleb(b, m->bias);
	sp_buf_put_uleb(b, m->time_ns);
	sp_buf_put_str(b, m->path);
	sp_buf_put_blob(b, m->build_id, m->build_id_len);
	sp_buf_put_blob(b, m->image, m->image ? m->image_len : 0);
	return sp_prof_writer_emit(w, SP_REC_MODULE);
}

int sp_prof_writer_unload(struct sp_prof_writer *w, uint32_t module_id, uint64_t time_ns)
{
	sp_buf_put_uleb(&w->rec, module_id);
	sp_buf_put_uleb(&w->rec, time_ns);
	return sp_prof_writer_emit(w, SP_REC_UNLOAD);
}

int sp_prof_writer_thread(struct sp_prof_writer *w, const struct sp_prof_thread *t)
{
	sp_buf_put_sleb(&w->rec, t->tid);
	sp_buf_put_uleb(&w->rec, t->time_ns);
	sp_buf_put_str(&w->rec, t->name);
	return sp_prof_writer_emit(w, SP_REC_THREAD);
}

int sp_prof_writer_stack(struct sp_prof_writer *w, const struct sp_prof_stack *s)
{
	struct sp_buf *b = &w->rec;
	sp_buf_put_uleb(b, s->id);
	sp_buf_put_uleb(b, s->flags);
	sp_buf_put_uleb(b, s->depth);
	/* neighbouring return addresses are often close: store deltas */
	uint64_t prev = 0;
	for (uint32_t i = 0; i < s->depth; i++) {
		sp_buf_put_sleb(b, (int64_t)(s->pcs[i] - prev));
		prev = s->pcs[i];
	}
	return sp_prof_writer_emit(w, SP_REC_STACK);
}

int sp_prof_writer_stack_diff(struct sp_prof_writer *w, const struct sp_prof_stack *s,
			      uint32_t base, uint32_t keep)
{
	struct sp_buf *b = &w->rec;
	uint32_t own = keep <= s->depth ? s->depth - keep : 0;
	sp_buf_put_uleb(b, s->id);
	sp_buf_put_uleb(b, s->flags);
	sp_buf_put_uleb(b, base);
	sp_buf_put_uleb(b, keep);
	sp_buf_put_uleb(b, own);
	uint64_t prev = 0;
	for (uint32_t i = 0; i < own; i++) {
		sp_buf_put_sleb(b, (int64_t)(s->pcs[i] - prev));
		prev = s->pcs[i];
	}
	return sp_prof_writer_emit(w, SP_REC_STACK_DIFF);
}

int sp_prof_writer_event(struct sp_prof_writer *w, const struct sp_prof_event *e)
{
	if (e->id == 0 || e->id >= SP_PROF_WRITER_MAX_EVENTS || !e->name || !e->name[0])
		return -EINVAL;
	uint64_t bit = 1ull << e->id;
	if (w->events_declared & bit)
		return -EEXIST;
	struct sp_buf *b = &w->rec;
	sp_buf_put_uleb(b, e->id);
	sp_buf_put_uleb(b, e->flags);
	sp_buf_put_str(b, e->name);
	sp_buf_put_str(b, e->unit ? e->unit : "");
	int err = sp_prof_writer_emit(w, SP_REC_EVENT);
	if (!err) {
		w->events_declared |= bit;
		if (e->flags & SP_EVENT_PAYLOAD)
			w->events_payload |= bit;
		if (e->flags & SP_EVENT_TIMED)
			w->events_timed |= bit;
	}
	return err;
}

/*
 * A run of one thread's samples after a SAMPLES or EVENT_SAMPLES record's
 * head: tid, count, period, then each sample's stack, range, weight less
 * the period, and the time's gap from the previous one (less the weight
 * when the weight is time: timed), and its payload if the kind has one.
 */
static void sp_prof_writer_put_run(struct sp_buf *b, int32_t tid, uint64_t period,
				   const struct sp_prof_sample *s, size_t n, bool timed,
				   bool payload)
{
	sp_buf_put_sleb(b, tid);
	sp_buf_put_uleb(b, n);
	sp_buf_put_uleb(b, period);
	uint64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		sp_buf_put_uleb(b, s[i].stack);
		sp_buf_put_uleb(b, s[i].range);
		sp_buf_put_sleb(b, (int64_t)(s[i].weight_ns - period));
		sp_buf_put_sleb(b, (int64_t)(s[i].time_ns - prev - (timed ? s[i].weight_ns : 0)));
		if (payload)
			sp_buf_put_uleb(b, s[i].payload);
		prev = s[i].time_ns;
	}
}

/*
 * Each sample: stack, range, its weight less the period, and its time as
 * the gap since the previous sample (the first: since the start) less its
 * weight. For a thread that kept its CPU both are a few microseconds: a
 * byte or two each, where the weight took three and the time five.
 */
static int sp_prof_writer_cpu_samples(struct sp_prof_writer *w, int32_t tid, uint64_t period,
				      const struct sp_prof_sample *s, size_t n)
{
	sp_prof_writer_put_run(&w->rec, tid, period, s, n, true, false);
	return sp_prof_writer_emit(w, SP_REC_SAMPLES);
}

/*
 * The same for a kind other than cpu, with the event id first; the time's
 * gap is less the weight only when the weight is time (SP_EVENT_TIMED: a
 * byte count taken from a gap would make it longer), and the payload
 * follows each sample's other fields when the kind has one.
 */
static int sp_prof_writer_event_samples(struct sp_prof_writer *w, uint32_t event, int32_t tid,
					uint64_t period, const struct sp_prof_sample *s, size_t n)
{
	uint64_t bit = event < SP_PROF_WRITER_MAX_EVENTS ? 1ull << event : 0;
	if (!(w->events_declared & bit)) {
		const struct sp_prof_event *e = sp_prof_event_builtin(event);
		int err = e && bit ? sp_prof_writer_event(w, e) : -EINVAL;
		if (err)
			return err;
	}
	bool payload = w->events_payload & bit, timed = w->events_timed & bit;
	sp_buf_put_uleb(&w->rec, event);
	sp_prof_writer_put_run(&w->rec, tid, period, s, n, timed, payload);
	return sp_prof_writer_emit(w, SP_REC_EVENT_SAMPLES);
}

int sp_prof_writer_samples(struct sp_prof_writer *w, int32_t tid, uint64_t period,
			   const struct sp_prof_sample *s, size_t n)
{
	/* a record per run of one kind: the kind is the record's, not each sample's */
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && s[j].event == s[i].event;)
			j++;
		int err = s[i].event ? sp_prof_writer_event_samples(w, s[i].event, tid, period,
								    s + i, j - i)
				     : sp_prof_writer_cpu_samples(w, tid, period, s + i, j - i);
		if (err)
			return err;
	}
	return 0;
}

int sp_prof_writer_sample(struct sp_prof_writer *w, const struct sp_prof_sample *s)
{
	if (s->event)
		return -EINVAL; /* a SAMPLE record has no kind: it is a cpu sample */
	struct sp_buf *b = &w->rec;
	sp_buf_put_sleb(b, s->tid);
	sp_buf_put_uleb(b, s->stack);
	sp_buf_put_uleb(b, s->range);
	sp_buf_put_uleb(b, s->time_ns);
	sp_buf_put_uleb(b, s->weight_ns);
	return sp_prof_writer_emit(w, SP_REC_SAMPLE);
}

int sp_prof_writer_range(struct sp_prof_writer *w, const struct sp_prof_range *r)
{
	char *joined = NULL;
	if (r->cls) {
		/* the class rides after the name, as the Python package sends it */
		size_t a = strlen(r->name), b = strlen(r->cls);
		if (!(joined = malloc(a + b + 2)))
			return -ENOMEM;
		memcpy(joined, r->name, a);
		joined[a] = '\x1f';
		memcpy(joined + a + 1, r->cls, b + 1);
	}
	sp_buf_put_uleb(&w->rec, r->id);
	sp_buf_put_uleb(&w->rec, r->parent);
	sp_buf_put_str(&w->rec, joined ? joined : r->name);
	free(joined);
	/* added after the first version: older readers stop before it */
	sp_buf_put_uleb(&w->rec, r->flags);
	sp_buf_put_uleb(&w->rec, r->anchor);
	return sp_prof_writer_emit(w, SP_REC_RANGE);
}

int sp_prof_writer_jit(struct sp_prof_writer *w, const struct sp_prof_jit *j)
{
	sp_buf_put_uleb(&w->rec, j->start);
	sp_buf_put_uleb(&w->rec, j->size);
	sp_buf_put_str(&w->rec, j->name);
	return sp_prof_writer_emit(w, SP_REC_JIT);
}

int sp_prof_writer_stats(struct sp_prof_writer *w, const struct sp_prof_stats *s)
{
	struct sp_buf *b = &w->rec;
	sp_buf_put_uleb(b, s->flags);
	sp_buf_put_uleb(b, s->time_ns);
	sp_buf_put_uleb(b, s->samples);
	sp_buf_put_uleb(b, s->drops);
	sp_buf_put_uleb(b, s->unwind_errors);
	sp_buf_put_uleb(b, s->truncated);
	sp_buf_put_uleb(b, s->skipped);
	sp_buf_put_uleb(b, s->weight_ns);
	sp_buf_put_uleb(b, s->signals);
	sp_buf_put_uleb(b, s->overruns);
	sp_buf_put_str(b, s->timer);
	sp_buf_put_uleb(b, s->handler_ns);
	sp_buf_put_uleb(b, s->throttled);
	sp_buf_put_uleb(b, s->unwind_fast);
	sp_buf_put_uleb(b, s->unwind_slow);
	/* check mode only: "no difference" and "not compared" must read apart */
	sp_buf_put_uleb(b, s->unwind_checked ? s->unwind_differ + 1 : 0);
	sp_buf_put_uleb(b, s->flags & SP_STATS_SIGNAL ? (uint32_t)s->signal : 0);
	sp_buf_put_uleb(b, s->handler_stack);
	sp_buf_put_uleb(b, s->timer_fallbacks);
	sp_buf_put_uleb(b, s->aside);
	sp_buf_put_uleb(b, s->randomized);
	sp_buf_put_uleb(b, s->py_unreadable);
	sp_buf_put_uleb(b, s->py_faults);
	sp_buf_put_uleb(b, s->py_bad_tstates);
	sp_buf_put_uleb(b, s->writer_ns);
	sp_buf_put_uleb(b, s->setup_ns);
	sp_buf_put_uleb(b, s->syscalls_cut);
	sp_buf_put_uleb(b, s->threads_missed);
	sp_buf_put_uleb(b, s->missed_ns);
	sp_buf_put_uleb(b, s->stray_signals);
	sp_buf_put_str(b, s->timer_why ? s->timer_why : "");
	sp_buf_put_uleb(b, s->timer_irq_ns);
	return sp_prof_writer_emit(w, SP_REC_STATS);
}

int sp_prof_writer_pycode(struct sp_prof_writer *w, const struct sp_prof_pycode *c)
{
	struct sp_buf *b = &w->rec;
	sp_buf_reset(b);
	sp_buf_put_uleb(b, c->id);
	sp_buf_put_uleb(b, c->minor);
	sp_buf_put_sleb(b, c->firstlineno);
	sp_buf_put_uleb(b, c->flags);
	sp_buf_put_str(b, c->name);
	sp_buf_put_str(b, c->qualname);
	sp_buf_put_str(b, c->filename);
	sp_buf_put_blob(b, c->linetable, c->linetable_len);
	return sp_prof_writer_emit(w, SP_REC_PYCODE);
}

int sp_prof_writer_pyinfo(struct sp_prof_writer *w, const struct sp_prof_pyinfo *i)
{
	struct sp_buf *b = &w->rec;
	sp_buf_reset(b);
	sp_buf_put_uleb(b, i->version);
	sp_buf_put_uleb(b, i->flags);
	sp_buf_put_str(b, i->module);
	sp_buf_put_str(b, i->status);
	sp_buf_put_uleb(b, i->time_ns);
	return sp_prof_writer_emit(w, SP_REC_PYINFO);
}

int sp_prof_writer_mark(struct sp_prof_writer *w, const struct sp_prof_mark *m)
{
	sp_buf_put_uleb(&w->rec, m->kind);
	sp_buf_put_uleb(&w->rec, m->time_ns);
	return sp_prof_writer_emit(w, SP_REC_MARK);
}

int sp_prof_writer_flush(struct sp_prof_writer *w)
{
	if (w->error)
		return w->error;
	if (w->n_records) {
		sp_buf_put_uleb(&w->rec, w->crc);
		sp_buf_put_uleb(&w->rec, w->n_records);
		int err = sp_prof_writer_emit(w, SP_REC_CHECKPOINT);
		if (err)
			return err;
		w->crc = crc32(0L, Z_NULL, 0);
		w->n_records = 0;
	}
	return sp_prof_writer_drain(w, Z_SYNC_FLUSH);
}

uint64_t sp_prof_writer_records(const struct sp_prof_writer *w)
{
	return w ? w->n_records : 0;
}

int sp_prof_writer_end(struct sp_prof_writer *w)
{
	if (!w)
		return 0;
	int err = sp_prof_writer_flush(w);
	if (!err)
		err = sp_prof_writer_deflate(w, NULL, 0, Z_FINISH);
	if (err)
		w->error = err;
	else if (!w->error)
		w->error = -EPIPE; /* nothing may follow the stream's end */
	return err;
}

int sp_prof_writer_close(struct sp_prof_writer *w)
{
	if (!w)
		return 0;
	int err = sp_prof_writer_end(w);
	sp_prof_writer_abandon(w);
	return err;
}

void sp_prof_writer_abandon(struct sp_prof_writer *w)
{
	if (!w)
		return;
	if (w->z_ready)
		deflateEnd(&w->z);
	sp_buf_release(&w->rec);
	sp_buf_release(&w->pend);
	free(w);
}

uint64_t sp_prof_writer_bytes(const struct sp_prof_writer *w)
{
	return w->bytes;
}
