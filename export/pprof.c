#include "export/pprof.h"
#include "format/buf.h"
#include "export/htab.h"
#include "export/label.h"
#include "export/textfmt.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* profile.proto field numbers */
enum {
	PB_PROFILE_SAMPLE_TYPE = 1,
	PB_PROFILE_SAMPLE = 2,
	PB_PROFILE_MAPPING = 3,
	PB_PROFILE_LOCATION = 4,
	PB_PROFILE_FUNCTION = 5,
	PB_PROFILE_STRING_TABLE = 6,
	PB_PROFILE_TIME_NANOS = 9,
	PB_PROFILE_DURATION_NANOS = 10,
	PB_PROFILE_PERIOD_TYPE = 11,
	PB_PROFILE_PERIOD = 12,
	PB_PROFILE_COMMENT = 13,
	PB_PROFILE_DEFAULT_SAMPLE_TYPE = 14,
};

#define PB_VARINT 0
#define PB_LEN	  2

static void pb_tag(struct sp_buf *b, unsigned field, unsigned wire)
{
	sp_buf_put_uleb(b, ((uint64_t)field << 3) | wire);
}

static void pb_varint(struct sp_buf *b, unsigned field, uint64_t v)
{
	pb_tag(b, field, PB_VARINT);
	sp_buf_put_uleb(b, v);
}

static void pb_bytes(struct sp_buf *b, unsigned field, const void *p, size_t n)
{
	pb_tag(b, field, PB_LEN);
	sp_buf_put_uleb(b, n);
	sp_buf_put_bytes(b, p, n);
}

/* Appends the finished submessage sub as field of b, and empties sub. */
static void pb_message(struct sp_buf *b, unsigned field, struct sp_buf *sub)
{
	pb_bytes(b, field, sub->data, sub->len);
	if (sub->oom)
		b->oom = true;
	sp_buf_reset(sub);
}

struct sp_pp {
	const struct sp_model *m;
	struct sp_labels *strs;	 /* the string table: id = index */
	struct sp_labels *funcs; /* "name\x1ffile" -> function id - 1 */
	struct sp_buf body, sub, sub2, packed;
	uint32_t *fid;	 /* per model frame: function id */
	uint32_t *synth; /* per model frame: location id of its address-less location, or 0 */
	uint32_t next_synth;
	/* locations standing for part of a model location (sp_pp_part) */
	struct sp_pp_partloc *parts;
	size_t n_parts;
	struct sp_htab part_idx;
	struct sp_pp_partloc *probe;
	bool oom;
};

struct sp_pp_partloc {
	uint32_t loc, first, n; /* frames [first, first + n) of model location loc */
	uint32_t id;
};

static int64_t sp_pp_str(struct sp_pp *p, const char *s)
{
	int64_t id = sp_labels_intern(p->strs, s ? s : "", s ? strlen(s) : 0);
	if (id < 0)
		p->oom = true;
	return id < 0 ? 0 : id;
}

static void sp_pp_value_type(struct sp_pp *p, unsigned field, const char *type, const char *unit)
{
	pb_varint(&p->sub, 1, (uint64_t)sp_pp_str(p, type));
	pb_varint(&p->sub, 2, (uint64_t)sp_pp_str(p, unit));
	pb_message(&p->body, field, &p->sub);
}

/* Function ids for every frame, writing each Function once. */
static void sp_pp_functions(struct sp_pp *p)
{
	const struct sp_model *m = p->m;
	struct sp_buf key;
	sp_buf_init(&key);
	for (size_t i = 0; i < m->n_frames && !p->oom; i++) {
		const struct sp_mframe *f = &m->frames[i];
		const char *file = sp_mframe_is_code(f) && f->file ? f->file : "";
		sp_buf_reset(&key);
		sp_buf_put_bytes(&key, f->func, strlen(f->func));
		sp_buf_put_u8(&key, 0x1f);
		sp_buf_put_bytes(&key, file, strlen(file));
		size_t before = sp_labels_count(p->funcs);
		int64_t id =
		    key.oom ? -ENOMEM : sp_labels_intern(p->funcs, (const char *)key.data, key.len);
		if (id < 0) {
			p->oom = true;
			break;
		}
		p->fid[i] = (uint32_t)id + 1;
		if ((size_t)id < before)
			continue;
		int64_t name = sp_pp_str(p, f->func), sysname = name;
		if (f->kind == SP_MFRAME_PYTHON && f->module) {
			/* A Python function's system name is its module's: a name
			 * equal to it would be "demangled" by pprof, whose heuristic
			 * for C++ names turns "<module>" and "<lambda>" into "". */
			sp_buf_reset(&key);
			sp_buf_put_bytes(&key, f->module, strlen(f->module));
			sp_buf_put_u8(&key, '.');
			sp_buf_put_bytes(&key, f->func, strlen(f->func) + 1);
			sysname = key.oom ? name : sp_pp_str(p, (const char *)key.data);
		}
		pb_varint(&p->sub, 1, p->fid[i]);
		pb_varint(&p->sub, 2, (uint64_t)name);
		pb_varint(&p->sub, 3, (uint64_t)sysname);
		pb_varint(&p->sub, 4, (uint64_t)sp_pp_str(p, file));
		if (f->def_line) /* a Python function's first line: start_line */
			pb_varint(&p->sub, 5, f->def_line);
		pb_message(&p->body, PB_PROFILE_FUNCTION, &p->sub);
	}
	sp_buf_release(&key);
}

static void sp_pp_mappings(struct sp_pp *p)
{
	const struct sp_profile *prof = p->m->prof;
	char hex[129];
	for (size_t i = 0; i < prof->n_modules; i++) {
		const struct sp_prof_module *mod = &prof->modules[i];
		size_t n = mod->build_id_len < 64 ? mod->build_id_len : 64;
		for (size_t k = 0; k < n; k++)
			snprintf(hex + 2 * k, 3, "%02x", mod->build_id[k]);
		hex[2 * n] = '\0';
		pb_varint(&p->sub, 1, i + 1);
		pb_varint(&p->sub, 2, mod->start);
		pb_varint(&p->sub, 3, mod->end);
		/* where the lowest mapping sits in the file: bias + offset = start */
		pb_varint(&p->sub, 4, mod->start - mod->bias);
		pb_varint(&p->sub, 5, (uint64_t)sp_pp_str(p, mod->path));
		pb_varint(&p->sub, 6, (uint64_t)sp_pp_str(p, hex));
		pb_varint(&p->sub, 7, 1);
		pb_varint(&p->sub, 8, 1);
		pb_varint(&p->sub, 9, 1);
		pb_varint(&p->sub, 10, 1);
		pb_message(&p->body, PB_PROFILE_MAPPING, &p->sub);
	}
}

static void sp_pp_line(struct sp_pp *p, uint32_t frame)
{
	pb_varint(&p->sub2, 1, p->fid[frame]);
	pb_varint(&p->sub2, 2, p->m->frames[frame].line);
	pb_message(&p->sub, 4, &p->sub2);
}

static void sp_pp_locations(struct sp_pp *p)
{
	const struct sp_model *m = p->m;
	for (size_t i = 0; i < m->n_locs; i++) {
		const struct sp_mloc *l = &m->locs[i];
		pb_varint(&p->sub, 1, i + 1);
		if (l->module >= 0)
			pb_varint(&p->sub, 2, (uint64_t)l->module + 1);
		pb_varint(&p->sub, 3, l->addr);
		/* the model keeps the real function first; pprof wants the innermost first */
		for (uint32_t k = l->n; k-- > 0;)
			sp_pp_line(p, l->frames[k]);
		pb_message(&p->body, PB_PROFILE_LOCATION, &p->sub);
	}
}

/* The address-less location of a range, thread or marker frame, written on first use. */
static uint32_t sp_pp_synth(struct sp_pp *p, uint32_t frame)
{
	if (p->synth[frame])
		return p->synth[frame];
	uint32_t id = p->next_synth++;
	p->synth[frame] = id;
	pb_varint(&p->sub, 1, id);
	sp_pp_line(p, frame);
	pb_message(&p->body, PB_PROFILE_LOCATION, &p->sub);
	return id;
}

static bool sp_pp_part_eq(const void *ctx, uint32_t idx)
{
	const struct sp_pp *p = ctx;
	const struct sp_pp_partloc *a = &p->parts[idx], *b = p->probe;
	return a->loc == b->loc && a->first == b->first && a->n == b->n;
}

/*
 * The location of frames [first, first + n) of model location loc, written
 * on first use: its address and mapping, only those lines. A model stack
 * holds part of a location when Python frames sit between its inlined
 * frames (the eval loop's frame, then the Python code it ran, then the
 * call machinery inlined into it) or the interpreter's plumbing was folded
 * away: the whole location would put frames where they are not.
 */
static uint32_t sp_pp_part(struct sp_pp *p, uint32_t loc, uint32_t first, uint32_t n)
{
	struct sp_pp_partloc key = {.loc = loc, .first = first, .n = n};
	uint64_t h = sp_hash_u64(sp_hash_u64(sp_hash_u64(SP_HASH_SEED, loc), first), n);
	p->probe = &key;
	int64_t i = sp_htab_find(&p->part_idx, h, sp_pp_part_eq, p);
	if (i >= 0)
		return p->parts[i].id;
	void *grown = realloc(p->parts, (p->n_parts + 1) * sizeof(*p->parts));
	if (!grown) {
		p->oom = true;
		return 0;
	}
	p->parts = grown;
	key.id = p->next_synth++;
	p->parts[p->n_parts] = key;
	if (sp_htab_insert(&p->part_idx, h, (uint32_t)p->n_parts++))
		p->oom = true;
	const struct sp_mloc *l = &p->m->locs[loc];
	pb_varint(&p->sub, 1, key.id);
	if (l->module >= 0)
		pb_varint(&p->sub, 2, (uint64_t)l->module + 1);
	pb_varint(&p->sub, 3, l->addr);
	for (uint32_t k = first + n; k-- > first;) /* innermost first */
		sp_pp_line(p, l->frames[k]);
	pb_message(&p->body, PB_PROFILE_LOCATION, &p->sub);
	return key.id;
}

/*
 * The pprof location ids of st, root first, into ids; returns how many.
 * Consecutive frames that are a whole model location are that location.
 */
static size_t sp_pp_stack_locs(struct sp_pp *p, const struct sp_mstack *st, uint64_t *ids)
{
	const struct sp_model *m = p->m;
	size_t nids = 0;
	for (uint32_t f = 0; f < st->n;) {
		uint32_t loc = st->locs[f];
		if (!loc) {
			ids[nids++] = sp_pp_synth(p, st->frames[f]);
			f++;
			continue;
		}
		const struct sp_mloc *l = &m->locs[loc - 1];
		/* where this frame is in its location, and how many of the
		 * location's next frames follow it in the stack */
		uint32_t first = 0, run = 0;
		for (uint32_t k = 0; k < l->n && !run; k++) {
			uint32_t r = 0;
			while (k + r < l->n && f + r < st->n && st->locs[f + r] == loc &&
			       st->frames[f + r] == l->frames[k + r])
				r++;
			if (r)
				first = k, run = r;
		}
		if (!run) { /* not one of its location's frames: cannot happen, stay correct */
			ids[nids++] = sp_pp_synth(p, st->frames[f]);
			f++;
			continue;
		}
		ids[nids++] = run == l->n ? loc : sp_pp_part(p, loc - 1, first, run);
		f += run;
	}
	return nids;
}

struct sp_pp_key {
	uint32_t stack, thread, range;
	uint64_t count, ns;
};

struct sp_pp_groups {
	struct sp_pp_key *v;
	struct sp_pp_key probe;
};

static bool sp_pp_key_eq(const void *ctx, uint32_t idx)
{
	const struct sp_pp_groups *g = ctx;
	const struct sp_pp_key *a = &g->v[idx], *b = &g->probe;
	return a->stack == b->stack && a->thread == b->thread && a->range == b->range;
}

/* The nn.Module path of range id: its module ranges' names from the
 * outside in, joined by '/' (ResNet/layer1/0/conv1); "" when it is in no
 * module range. The reader keeps parents below their children: no loop. */
static const char *sp_pp_module_path(const struct sp_profile *prof, uint32_t id, char *buf,
				     size_t cap)
{
	const char *seg[128];
	size_t n = 0, len = 0;
	for (uint32_t r = id; r && r <= prof->n_ranges && n < 128; r = prof->ranges[r - 1].parent) {
		const struct sp_prof_range *rg = &prof->ranges[r - 1];
		if (rg->flags & SP_RANGE_MODULE)
			seg[n++] = rg->name && rg->name[0] ? rg->name : "[unnamed module]";
	}
	buf[0] = '\0';
	while (n-- > 0) {
		int w = snprintf(buf + len, cap - len, "%s%s", len ? "/" : "", seg[n]);
		if (w < 0 || (size_t)w >= cap - len)
			break;
		len += (size_t)w;
	}
	return buf;
}

static void sp_pp_samples(struct sp_pp *p)
{
	const struct sp_model *m = p->m;
	const struct sp_profile *prof = m->prof;
	struct sp_pp_groups g = {0};
	struct sp_htab idx;
	size_t n = 0;
	uint64_t *ids = NULL;
	uint32_t max_n = 1;
	char tid[16];
	sp_htab_init(&idx);
	g.v = malloc((m->n_samples ? m->n_samples : 1) * sizeof(*g.v));
	for (size_t i = 0; i < m->n_stacks; i++)
		max_n = m->stacks[i].n > max_n ? m->stacks[i].n : max_n;
	ids = malloc(max_n * sizeof(*ids));
	if (!g.v || !ids) {
		p->oom = true;
		goto out;
	}
	/* samples of one stack, thread and range differ only in time: one pprof Sample */
	for (size_t i = 0; i < m->n_samples; i++) {
		const struct sp_msample *s = &m->samples[i];
		g.probe =
		    (struct sp_pp_key){.stack = s->stack, .thread = s->thread, .range = s->range};
		uint64_t h = sp_hash_u64(
		    sp_hash_u64(sp_hash_u64(SP_HASH_SEED, s->stack), s->thread), s->range);
		int64_t k = sp_htab_find(&idx, h, sp_pp_key_eq, &g);
		if (k < 0) {
			k = (int64_t)n;
			g.v[n++] = g.probe;
			if (sp_htab_insert(&idx, h, (uint32_t)k)) {
				p->oom = true;
				goto out;
			}
		}
		g.v[k].count++;
		g.v[k].ns += s->weight_ns;
	}
	int64_t k_thread = sp_pp_str(p, "thread"), k_tid = sp_pp_str(p, "thread_id"),
		k_range = sp_pp_str(p, "range"), k_modpath = sp_pp_str(p, "module_path");
	char path[1024];
	for (size_t i = 0; i < n && !p->oom; i++) {
		const struct sp_pp_key *key = &g.v[i];
		const struct sp_mstack *st = &m->stacks[key->stack];
		size_t nids = sp_pp_stack_locs(p, st, ids);
		sp_buf_reset(&p->packed);
		for (size_t k = nids; k-- > 0;) /* pprof lists the leaf first */
			sp_buf_put_uleb(&p->packed, ids[k]);
		pb_message(&p->sub, 1, &p->packed);
		sp_buf_put_uleb(&p->packed, key->count);
		sp_buf_put_uleb(&p->packed, key->ns);
		pb_message(&p->sub, 2, &p->packed);

		const struct sp_mthread *t = &m->threads[key->thread];
		snprintf(tid, sizeof(tid), "%d", (int)t->tid);
		pb_varint(&p->sub2, 1, (uint64_t)k_thread);
		pb_varint(&p->sub2, 2, (uint64_t)sp_pp_str(p, t->name[0] ? t->name : tid));
		pb_message(&p->sub, 3, &p->sub2);
		pb_varint(&p->sub2, 1, (uint64_t)k_tid);
		pb_varint(&p->sub2, 3, (uint64_t)(int64_t)t->tid);
		pb_message(&p->sub, 3, &p->sub2);
		const struct sp_prof_range *r =
		    key->range ? sp_profile_range(prof, key->range) : NULL;
		if (r) {
			pb_varint(&p->sub2, 1, (uint64_t)k_range);
			pb_varint(&p->sub2, 2, (uint64_t)sp_pp_str(p, r->name));
			pb_message(&p->sub, 3, &p->sub2);
		}
		if (r && *sp_pp_module_path(prof, key->range, path, sizeof(path))) {
			pb_varint(&p->sub2, 1, (uint64_t)k_modpath);
			pb_varint(&p->sub2, 2, (uint64_t)sp_pp_str(p, path));
			pb_message(&p->sub, 3, &p->sub2);
		}
		pb_message(&p->body, PB_PROFILE_SAMPLE, &p->sub);
	}
out:
	sp_htab_release(&idx);
	free(g.v);
	free(ids);
}

/* gzip (windowBits 15 + 16) of data to out. */
static int sp_gzip(const uint8_t *data, size_t len, FILE *out)
{
	z_stream z;
	unsigned char chunk[65536];
	memset(&z, 0, sizeof(z));
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)len;
	int rc, err = 0;
	do {
		z.next_out = chunk;
		z.avail_out = sizeof(chunk);
		rc = deflate(&z, Z_FINISH);
		if (rc == Z_STREAM_ERROR) {
			err = -EIO;
			break;
		}
		fwrite(chunk, 1, sizeof(chunk) - z.avail_out, out);
		if ((err = sp_textfmt_out_error(out)))
			break;
	} while (rc != Z_STREAM_END);
	deflateEnd(&z);
	return err;
}

int sp_pprof_write(const struct sp_model *m, FILE *out)
{
	struct sp_pp p = {.m = m};
	struct sp_buf all;
	int err = -ENOMEM;
	const struct sp_profile *prof = m->prof;
	sp_buf_init(&p.body);
	sp_buf_init(&p.sub);
	sp_buf_init(&p.sub2);
	sp_buf_init(&p.packed);
	sp_buf_init(&all);
	p.strs = sp_labels_new(NULL);
	p.funcs = sp_labels_new(NULL);
	p.fid = calloc(m->n_frames + 1, sizeof(*p.fid));
	p.synth = calloc(m->n_frames + 1, sizeof(*p.synth));
	sp_htab_init(&p.part_idx);
	if (!p.strs || !p.funcs || !p.fid || !p.synth)
		goto out;
	p.next_synth = (uint32_t)m->n_locs + 1;
	sp_pp_str(&p, ""); /* string_table[0] must be "" */

	/* the second value is the model's kind in its unit, as pprof names
	 * units: cpu nanoseconds (the timer's period is its period), or
	 * another kind's (wall nanoseconds, alloc bytes, user count) */
	const char *kind = m->event && m->event->name ? m->event->name : "cpu";
	const char *unit = m->event && m->event->unit ? m->event->unit : "ns";
	if (!strcmp(unit, "ns"))
		unit = "nanoseconds";
	bool cpu = !m->event || m->event->id == SP_EVENT_CPU;
	sp_pp_value_type(&p, PB_PROFILE_SAMPLE_TYPE, "samples", "count");
	sp_pp_value_type(&p, PB_PROFILE_SAMPLE_TYPE, kind, unit);
	sp_pp_value_type(&p, PB_PROFILE_PERIOD_TYPE, kind, unit);
	uint32_t hz = prof->header.freq_hz;
	pb_varint(&p.body, PB_PROFILE_PERIOD, cpu && hz ? 1000000000ull / hz : 0);
	/* the run's wall time, or with windows the time they were open,
	 * from the first one's start: what the samples kept cover */
	uint64_t end = prof->has_stats ? prof->stats.time_ns : 0, start = 0, dur = 0;
	for (size_t i = 0; i < m->n_samples; i++)
		end = m->samples[i].time_ns > end ? m->samples[i].time_ns : end;
	if (m->windowed) {
		start = prof->windows[0].begin_ns;
		for (size_t i = 0; i < prof->n_windows; i++) {
			uint64_t b = prof->windows[i].begin_ns, e = prof->windows[i].end_ns;
			e = e < end ? e : end;
			dur += e > b ? e - b : 0;
		}
	} else {
		dur = end;
	}
	pb_varint(&p.body, PB_PROFILE_TIME_NANOS, prof->header.start_realtime_ns + start);
	pb_varint(&p.body, PB_PROFILE_DURATION_NANOS, dur);
	if (prof->header.cmdline && prof->header.cmdline[0])
		pb_varint(&p.body, PB_PROFILE_COMMENT,
			  (uint64_t)sp_pp_str(&p, prof->header.cmdline));
	pb_varint(&p.body, PB_PROFILE_DEFAULT_SAMPLE_TYPE, (uint64_t)sp_pp_str(&p, kind));

	sp_pp_mappings(&p);
	sp_pp_functions(&p);
	sp_pp_locations(&p);
	sp_pp_samples(&p);
	if (p.oom || p.body.oom || p.sub.oom || p.sub2.oom || p.packed.oom)
		goto out;

	/* the string table goes last: only now is every string known */
	sp_buf_put_bytes(&all, p.body.data, p.body.len);
	for (size_t i = 0; i < sp_labels_count(p.strs); i++) {
		const char *s = sp_labels_text(p.strs, (uint32_t)i);
		pb_bytes(&all, PB_PROFILE_STRING_TABLE, s, strlen(s));
	}
	if (all.oom)
		goto out;
	err = sp_gzip(all.data, all.len, out);
out:
	sp_buf_release(&p.body);
	sp_buf_release(&p.sub);
	sp_buf_release(&p.sub2);
	sp_buf_release(&p.packed);
	sp_buf_release(&all);
	sp_labels_free(p.strs);
	sp_labels_free(p.funcs);
	free(p.fid);
	free(p.synth);
	free(p.parts);
	sp_htab_release(&p.part_idx);
	return err;
}
