/*
 * pystack.c - Python frames in the signal handler (pystack.h).
 */
#include "sampler/capture/pystack.h"
#include "format/pyline.h"
#include "format/profile.h"
#include "sampler/base/hot.h"
#include "sampler/capture/pystate.h"
#include "sampler/core/ring.h"
#include "sampler/base/saferead.h"
#include "sampler/core/sampler.h"
#include "sampler/capture/handler.h"
#include "sampler/capture/sigshare.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* The interpreter being read (pystate.h): life/python.c fills it. */
struct sp_py sp_py;

/* ---- the code table ----------------------------------------------------- */

#define SP_CODES	(1u << 16) /* slots: a program's live code objects that run */
#define SP_CODE_PROBES	16
#define SP_CODE_DROPPED ((uintptr_t)1) /* a slot whose code died: free for another */

struct sp_codeent {
	_Atomic uintptr_t addr; /* the code object, 0 (never used) or SP_CODE_DROPPED */
	_Atomic uint32_t id;	/* 0 while being filled */
	_Atomic uint32_t fp;	/* what named it (sp_code_fp): a check, should a death be missed */
};

static struct sp_codeent *sp_codes;
static _Atomic uint32_t sp_code_ids; /* the last id given */

/*
 * How many code objects have died (sp_pystack_forget): the epoch of each
 * thread's memo. While it stays the same, no code object has been freed,
 * so an address that named a code object still names the same one.
 */
static _Atomic uint64_t sp_code_deaths;

/*
 * A thread's memo of the code objects its last samples met: what the table
 * and the code object said (the id, and the two fields a frame's
 * instruction is checked against), valid while no code object has died
 * since. A sample's frames are mostly the last one's: a hit skips the
 * code object's reads, its fingerprint and a probe of the shared table,
 * which is likely out of the cache after a millisecond of the program's
 * work. Direct-mapped; in the thread's scratch.
 *
 * A code object is memoized only when the table already knew it with the
 * same fingerprint: met twice (in two samples, of any threads). From
 * 3.11.1 on the interpreter unlinks a frame before its code can die, so a
 * frame on the thread's chain holds a live code object (3.10 too; 3.11.0
 * cleared a frame first, GH-99729); a torn read that met a dead one would
 * need to meet it twice, unchanged, to be remembered. A death drops the
 * code's table slot before it is counted, so a handler that reads the new
 * count can't find the dying code in the table and memoize it.
 */
struct sp_codememo {
	uintptr_t code;
	uint64_t epoch;
	uint32_t id;
	int32_t firsttraceable;
	int64_t nunits;
};
#define SP_MEMO 128

int sp_pystack_init(void)
{
	if (sp_codes)
		return 0;
	/* resident from the start, beside the unwinder's rule cache (hot.h):
	 * a probe then an insert on a fresh page is a copy-on-write fault and
	 * a TLB flush of every CPU, inside the handler */
	void *p = sp_hot_alloc(SP_CODES * sizeof(*sp_codes));
	if (!p)
		return -errno;
	sp_codes = p;
	return 0;
}

SP_SIGSAFE static uint32_t sp_code_hash(uintptr_t addr)
{
	uint64_t h = (uint64_t)addr * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 40) & (SP_CODES - 1);
}

void sp_pystack_forget(uintptr_t addr)
{
	if (!sp_codes)
		return;
	uint32_t h = sp_code_hash(addr);
	for (uint32_t i = 0; i < SP_CODE_PROBES; i++) {
		struct sp_codeent *e = &sp_codes[(h + i) & (SP_CODES - 1)];
		uintptr_t a = atomic_load(&e->addr);
		if (a == 0)
			break;
		/* the id goes too: a reader that meets the address again, once
		 * another code object has it, finds no id until that one's */
		if (a == addr && atomic_compare_exchange_strong(&e->addr, &a, SP_CODE_DROPPED))
			atomic_store_explicit(&e->id, 0, memory_order_release);
	}
	/* then every memo is stale, before the memory can hold another object:
	 * a handler that sees the new count sees the slot dropped too */
	atomic_fetch_add(&sp_code_deaths, 1);
}

void sp_pystack_atfork_child(void)
{
	if (!sp_codes)
		return;
	/* the child writes a profile of its own: every code object is named
	 * in it afresh, and no memo names one from the parent's */
	memset(sp_codes, 0, SP_CODES * sizeof(*sp_codes));
	atomic_fetch_add(&sp_code_deaths, 1);
}

/* ---- per-thread scratch ----------------------------------------------- */

/*
 * Layout, each array max_depth long: the native PCs and their stack
 * pointers (the unwinder writes them), the Python frames' words, each
 * segment's marker address, each frame's instruction as the walk found it
 * (until its code is read), and the segment (eval call) of each frame;
 * then the memo (SP_MEMO entries).
 */
SP_SIGSAFE static size_t sp_memo_offset(void)
{
	size_t at = (size_t)sp_g.cfg.max_depth * (5 * sizeof(uint64_t) + sizeof(uint32_t));
	return (at + 7) & ~(size_t)7;
}

size_t sp_pystack_scratch_size(void)
{
	return sp_memo_offset() + SP_MEMO * sizeof(struct sp_codememo);
}

uint64_t *sp_pystack_pcs(struct sp_thread *t)
{
	return atomic_load_explicit(&t->py_scratch, memory_order_acquire);
}

uint64_t *sp_pystack_sps(struct sp_thread *t)
{
	uint64_t *s = atomic_load_explicit(&t->py_scratch, memory_order_acquire);
	return s ? s + sp_g.cfg.max_depth : NULL;
}

/* ---- reading ------------------------------------------------------------ */

/*
 * Reads of the interpreter's memory: false for an address no object can
 * have, or a read that faulted. Strings and line tables are copied
 * (sp_rd); the fields of frames, code objects and thread states are
 * loaded one at a time (sp_rdw, sp_rd32, sp_rd8), straight into registers,
 * so that only the fields used are read.
 */
SP_SIGSAFE static bool sp_rd(void *dst, uintptr_t src, size_t n)
{
	if (src < 4096 || src > 0x00007fffffffffffull - n)
		return false;
	return sp_safe_copy(dst, (const void *)src, n) == 0;
}

/* The 8 bytes at src (a pointer or Py_ssize_t field). */
SP_SIGSAFE static bool sp_rdw(uintptr_t src, uint64_t *v)
{
	if (src < 4096 || src > 0x00007fffffffffffull - 8)
		return false;
	return sp_safe_load(v, src);
}

/* An int field, from the aligned word that holds it: that word never
 * crosses a page, where the field's own object might end. */
SP_SIGSAFE static bool sp_rd32(uintptr_t src, int32_t *v)
{
	uint64_t w;
	if (src & 3)
		return sp_rd(v, src, sizeof(*v));
	if (!sp_rdw(src & ~(uintptr_t)7, &w))
		return false;
	*v = (int32_t)(uint32_t)(w >> (src & 4) * 8);
	return true;
}

/* A char field, the same way. */
SP_SIGSAFE static bool sp_rd8(uintptr_t src, uint8_t *v)
{
	uint64_t w;
	if (!sp_rdw(src & ~(uintptr_t)7, &w))
		return false;
	*v = (uint8_t)(w >> (src & 7) * 8);
	return true;
}

/* This thread's PyThreadState, or 0 (no interpreter yet, a thread it
 * doesn't know, or a layout that does not fit). */
SP_SIGSAFE static uintptr_t sp_tstate(void)
{
	const struct sp_pylayout *L = &sp_py.L;
	int32_t init, key; /* Py_tss_t: int _is_initialized; pthread_key_t _key */
	if (!sp_rd32(sp_py.runtime + L->rt_tss_key, &init) ||
	    !sp_rd32(sp_py.runtime + L->rt_tss_key + 4, &key) || init != 1 || (uint32_t)key >= 32)
		return 0;
	uintptr_t self = (uintptr_t)pthread_self(), ts, tid;
	if (!sp_rdw(self + sp_py.specific + 16 * (uint32_t)key + 8, &ts) || !ts)
		return 0;
	if (!sp_rdw(ts + L->ts_thread_id, &tid) || tid != self) {
		atomic_fetch_add_explicit(&sp_py.bad_tstates, 1, memory_order_relaxed);
		return 0;
	}
	return ts;
}

/* ---- naming a code object --------------------------------------------- */

/* The fields of a code object the handler uses, as read. */
struct sp_codehdr {
	uintptr_t name, qualname, filename, linetable; /* qualname 0 on 3.10 */
	int64_t nunits;				       /* 3.11+ */
	int32_t firstlineno, firsttraceable;	       /* firsttraceable 3.11+ */
};

/* The bytes from the start of a code object to its last field used (the
 * walk prefetches them). */
#define SP_CODE_HDR 256

/* Code object code's fields into h: false if it can't be read or is not a
 * code object. */
SP_SIGSAFE static bool sp_rd_code(uintptr_t code, struct sp_codehdr *h)
{
	const struct sp_pylayout *L = &sp_py.L;
	uint64_t type;
	if (!sp_rdw(code + L->ob_type, &type) || type != sp_py.code_type)
		return false;
	h->qualname = 0;
	h->nunits = 0;
	h->firsttraceable = 0;
	if (!sp_rdw(code + L->co_name, &h->name) || !sp_rdw(code + L->co_filename, &h->filename) ||
	    !sp_rdw(code + L->co_linetable, &h->linetable) ||
	    !sp_rd32(code + L->co_firstlineno, &h->firstlineno) ||
	    (L->co_qualname && !sp_rdw(code + L->co_qualname, &h->qualname)))
		return false;
	if (L->kind != SP_PYFRAMES_310) {
		uint64_t n;
		if (!sp_rdw(code + L->co_nunits, &n) ||
		    !sp_rd32(code + L->co_firsttraceable, &h->firsttraceable))
			return false;
		h->nunits = (int64_t)n;
	}
	return true;
}

/* The most of each part a PYCODE entry copies. */
#define SP_MAX_NAME  512
#define SP_MAX_FILE  2048
#define SP_MAX_TABLE (32u << 10)

SP_SIGSAFE static uint32_t sp_code_fp(const struct sp_codehdr *c)
{
	uint64_t h = (uint64_t)(uint32_t)c->firstlineno * 0x100000001b3ull;
	h ^= c->name;
	h *= 0x9e3779b97f4a7c15ull;
	h ^= c->filename;
	h *= 0x9e3779b97f4a7c15ull;
	h ^= c->qualname;
	h *= 0x9e3779b97f4a7c15ull;
	h ^= c->linetable;
	h *= 0x9e3779b97f4a7c15ull;
	uint32_t fp = (uint32_t)(h >> 32) ^ (uint32_t)h;
	return fp ? fp : 1;
}

/*
 * A str object's characters: copies at most cap bytes to dst and says how
 * many characters of which width (1, 2 or 4 bytes). Only compact strings,
 * which every name and file name of a code object is. false if not.
 */
SP_SIGSAFE static bool sp_rd_str(uintptr_t obj, uint8_t *dst, size_t cap, uint32_t *len,
				 uint32_t *kind)
{
	const struct sp_pylayout *L = &sp_py.L;
	uint8_t hdr[80];
	if (!sp_rd(hdr, obj, L->str_compact_data))
		return false;
	uint64_t n;
	uint32_t state;
	memcpy(&n, hdr + L->str_length, sizeof(n));
	memcpy(&state, hdr + L->str_state, sizeof(state));
	uint32_t k = (state >> SP_PYSTR_KIND_SHIFT) & SP_PYSTR_KIND_MASK;
	if (!(state & SP_PYSTR_COMPACT) || (k != 1 && k != 2 && k != 4) || n > (1u << 24))
		return false;
	uint32_t data = (state & SP_PYSTR_ASCII) ? L->str_ascii_data : L->str_compact_data;
	size_t bytes = (size_t)n * k;
	if (bytes > cap)
		bytes = cap - cap % k;
	if (!sp_rd(dst, obj + data, bytes))
		return false;
	*len = (uint32_t)(bytes / k);
	*kind = k;
	return true;
}

/*
 * A PYCODE ring entry, in words:
 *   [0] id | minor << 32 | flags << 40   [1] firstlineno
 *   [2] name chars | kind << 32          [3] qualname chars | kind << 32
 *   [4] filename chars | kind << 32      [5] line table bytes
 *   then the four byte strings back to back, padded to a word.
 */
#define SP_PYC_HEAD 6

/* Copies a code object (its fields in hdr) into a new PYCODE entry of t's
 * ring under id. false if the ring is full or the code unreadable. */
SP_SIGSAFE static bool sp_emit_code(struct sp_thread *t, const struct sp_codehdr *hdr, uint32_t id)
{
	const struct sp_pylayout *L = &sp_py.L;
	size_t max_words = SP_PYC_HEAD + (SP_MAX_NAME * 2 + SP_MAX_FILE + SP_MAX_TABLE) / 8 + 4;
	uint64_t *e = sp_ring_reserve(&t->ring, max_words);
	if (!e)
		return false;
	uint8_t *bytes = (uint8_t *)(e + SP_PYC_HEAD);
	size_t at = 0;
	uint32_t flags = 0, len, kind;
	uintptr_t strs[3] = {hdr->name, hdr->qualname, hdr->filename};
	size_t caps[3] = {SP_MAX_NAME, SP_MAX_NAME, SP_MAX_FILE};
	for (int i = 0; i < 3; i++) {
		len = kind = 0;
		if (strs[i] && !sp_rd_str(strs[i], bytes + at, caps[i], &len, &kind))
			return false; /* the reservation is simply not committed */
		if ((size_t)len * (kind ? kind : 1) >= caps[i])
			flags |= SP_PYCODE_CUT_NAME;
		e[2 + i] = len | (uint64_t)kind << 32;
		at += (size_t)len * kind;
	}
	/* the line table: a bytes object */
	uintptr_t table = hdr->linetable;
	uint8_t bh[40];
	uint64_t tlen = 0;
	if (table && sp_rd(bh, table, L->bytes_data)) {
		memcpy(&tlen, bh + L->bytes_size, sizeof(tlen));
		if (tlen > SP_MAX_TABLE) {
			tlen = SP_MAX_TABLE;
			flags |= SP_PYCODE_CUT_TABLE;
		}
		if (!sp_rd(bytes + at, table + L->bytes_data, tlen))
			tlen = 0;
	}
	at += tlen;
	e[5] = tlen;
	e[0] = id | (uint64_t)sp_py.L.minor << 32 | (uint64_t)flags << 40;
	e[1] = (uint64_t)(int64_t)hdr->firstlineno;
	sp_ring_commit(&t->ring, SP_PYC_HEAD + (at + 7) / 8, SP_RING_PYCODE);
	return true;
}

/* The id of code (header hdr): from the table (*known set), or a new one
 * named now. 0 when it can't be named (the ring is full): the frame is
 * unknown. */
SP_SIGSAFE static uint32_t sp_code_id(struct sp_thread *t, uintptr_t code,
				      const struct sp_codehdr *hdr, bool *known)
{
	uint32_t fp = sp_code_fp(hdr);
	uint32_t h = sp_code_hash(code);
	struct sp_codeent *free_slot = NULL;
	for (uint32_t i = 0; i < SP_CODE_PROBES; i++) {
		struct sp_codeent *e = &sp_codes[(h + i) & (SP_CODES - 1)];
		uintptr_t a = atomic_load_explicit(&e->addr, memory_order_acquire);
		if (a == code) {
			/* the id, its fingerprint, and the id again: a slot being
			 * filled (id 0, fp, id) never pairs one code's id with
			 * another's fingerprint */
			uint32_t id = atomic_load_explicit(&e->id, memory_order_acquire);
			uint32_t efp = atomic_load_explicit(&e->fp, memory_order_acquire);
			if (id && efp == fp &&
			    atomic_load_explicit(&e->id, memory_order_relaxed) == id) {
				*known = true;
				return id;
			}
			free_slot = e; /* stale (a death missed): named again below */
			break;
		}
		if (!free_slot && (a == 0 || a == SP_CODE_DROPPED))
			free_slot = e;
		if (a == 0)
			break;
	}
	uint32_t id = atomic_fetch_add_explicit(&sp_code_ids, 1, memory_order_relaxed) + 1;
	if (!sp_emit_code(t, hdr, id))
		return 0;
	if (free_slot) {
		uintptr_t a = atomic_load(&free_slot->addr);
		/* another thread may take the slot first: then this code is named
		 * twice, and both records describe it */
		if (a == code || atomic_compare_exchange_strong(&free_slot->addr, &a, code)) {
			atomic_store_explicit(&free_slot->id, 0, memory_order_relaxed);
			atomic_store_explicit(&free_slot->fp, fp, memory_order_release);
			atomic_store_explicit(&free_slot->id, id, memory_order_release);
		}
	}
	return id;
}

/* ---- walking the frames ------------------------------------------------- */

struct sp_walk_out {
	uint64_t *words; /* the Python frames, innermost first: their code
			  * objects' addresses until sp_name_frames makes
			  * them frame words */
	uint64_t *instr; /* each frame's instruction as read (SP_INSTR_*) */
	uint32_t *seg;	 /* the eval call (segment) of each */
	uint64_t *marks; /* per segment: its marker address, 0 if not known */
	size_t n, nseg, max;
	struct sp_codememo *memo; /* the thread's memo, and the epoch it is read at */
	uint64_t epoch;
};

/* instr[] words: 3.10's lasti (int) or 3.11+'s instruction pointer, and
 * whether the frame is a generator's (never "not started"); UNREAD when
 * the frame itself could not be read. */
#define SP_INSTR_GENERATOR (1ull << 63)
#define SP_INSTR_UNREAD	   (1ull << 62)

/*
 * Frame i's word, from its code object (read now) and the instruction the
 * walk saw (3.10: lasti, in code units; after: instr_ptr, an address in
 * the code) or SP_PYFRAME_NO_INSTR. false for a frame that has not
 * started yet: CPython leaves it out of tracebacks, and so does this; a
 * generator's is never "not started".
 */
/* The memo's entry for code, if it holds code at this epoch; else NULL. */
SP_SIGSAFE static struct sp_codememo *sp_memo_hit(const struct sp_walk_out *o, uintptr_t code)
{
	struct sp_codememo *m = &o->memo[sp_code_hash(code) % SP_MEMO];
	return m->id && m->code == code && m->epoch == o->epoch ? m : NULL;
}

SP_SIGSAFE static bool sp_name_frame(struct sp_thread *t, const struct sp_walk_out *o,
				     uintptr_t code, uint64_t iw, uint64_t *word)
{
	const struct sp_pylayout *L = &sp_py.L;
	struct sp_codehdr hdr;
	uint32_t id = 0, instr = SP_PYFRAME_NO_INSTR;
	struct sp_codememo *m = NULL;
	bool known = false; /* the code object's fields are in hdr */
	if (!(iw & SP_INSTR_UNREAD)) {
		if ((m = sp_memo_hit(o, code))) {
			id = m->id;
			hdr.firsttraceable = m->firsttraceable;
			hdr.nunits = m->nunits;
			known = true;
		} else {
			known = sp_rd_code(code, &hdr);
		}
	}
	if (known) {
		if (L->kind == SP_PYFRAMES_310) {
			int32_t lasti = (int32_t)(uint32_t)iw;
			if (lasti >= 0)
				instr = (uint32_t)lasti;
		} else {
			uintptr_t instr_ptr =
			    (uintptr_t)(iw & ~(SP_INSTR_GENERATOR | SP_INSTR_UNREAD));
			uintptr_t first = code + L->co_code_adaptive;
			int64_t units = (int64_t)(instr_ptr - first) / 2;
			if (!(iw & SP_INSTR_GENERATOR) && units < hdr.firsttraceable)
				return false;
			if (instr_ptr >= first && units < hdr.nunits)
				instr = (uint32_t)units;
		}
		/* memoized once the table knew it: named in an earlier sample,
		 * and with the same fingerprint now */
		bool named_before = false;
		if (!id && (id = sp_code_id(t, code, &hdr, &named_before)) && named_before)
			o->memo[sp_code_hash(code) % SP_MEMO] = (struct sp_codememo){
			    code, o->epoch, id, hdr.firsttraceable, hdr.nunits};
	}
	if (!id)
		atomic_fetch_add_explicit(&t->py_unreadable, 1, memory_order_relaxed);
	*word = sp_pyframe_word(id, instr);
	return true;
}

/*
 * Names the frames the walk found, in place: each code object's address
 * becomes its frame word, and frames not started yet leave the list.
 * Their code objects and code-table slots were prefetched as the walk met
 * them, so that the cache misses of a cold sample (a program whose working
 * set evicts ours between samples, as torch's does) overlap instead of
 * coming one after another.
 */
SP_SIGSAFE static void sp_name_frames(struct sp_thread *t, struct sp_walk_out *o)
{
	size_t j = 0;
	for (size_t i = 0; i < o->n; i++) {
		uint64_t w;
		if (!sp_name_frame(t, o, (uintptr_t)o->words[i], o->instr[i], &w))
			continue;
		o->words[j] = w;
		o->seg[j] = o->seg[i];
		j++;
	}
	o->n = j;
}

/* The lines of code object code (and its code-table slot) that
 * sp_name_frame reads. A prefetch never faults, whatever the address. */
SP_SIGSAFE static void sp_prefetch_code(const struct sp_walk_out *o, uintptr_t code)
{
	if (code < 4096 || sp_memo_hit(o, code))
		return; /* the memo knows it: nothing to read */
	for (uint32_t off = 0; off < SP_CODE_HDR; off += 64)
		__builtin_prefetch((const void *)(code + off), 0, 3);
	__builtin_prefetch(&sp_codes[sp_code_hash(code)], 0, 3);
}

/* Appends a frame (its code, its instruction word) to the current segment. */
SP_SIGSAFE static void sp_add_frame(struct sp_walk_out *o, uintptr_t code, uint64_t iw)
{
	sp_prefetch_code(o, code);
	o->words[o->n] = code;
	o->instr[o->n] = iw;
	o->seg[o->n] = (uint32_t)o->nseg;
	o->n++;
}

/* Closes the current segment with its marker. */
SP_SIGSAFE static void sp_end_segment(struct sp_walk_out *o, uintptr_t mark)
{
	if (o->nseg < o->max) {
		o->marks[o->nseg] = mark;
		o->nseg++;
	}
}

/* The thread's frames from tstate ts, into o. */
SP_SIGSAFE static void sp_walk(struct sp_thread *t, uintptr_t ts, struct sp_walk_out *o)
{
	const struct sp_pylayout *L = &sp_py.L;
	uintptr_t frame = 0, cf = 0, root_cf = 0;
	if (L->kind == SP_PYFRAMES_311 || L->kind == SP_PYFRAMES_312) {
		root_cf = ts + L->ts_root_cframe;
		if (!sp_rdw(ts + L->ts_frame, &cf) || !sp_rdw(cf + L->cf_current_frame, &frame))
			return;
	} else if (!sp_rdw(ts + L->ts_frame, &frame)) {
		return;
	}
	for (int steps = 0; frame && o->n < o->max && o->nseg < o->max && steps < 4096; steps++) {
		uint64_t code, prev, iw = 0;
		int32_t lasti = 0;
		uint8_t owner = 0, entry = 0;
		bool ok =
		    sp_rdw(frame + L->fr_code, &code) && sp_rdw(frame + L->fr_previous, &prev);
		if (L->kind == SP_PYFRAMES_310)
			ok = ok && sp_rd32(frame + L->fr_instr, &lasti);
		else
			ok = ok && sp_rdw(frame + L->fr_instr, &iw) &&
			     sp_rd8(frame + L->fr_owner, &owner) &&
			     (L->kind != SP_PYFRAMES_311 || sp_rd8(frame + L->fr_is_entry, &entry));
		if (!ok) {
			/* a frame that can't be read ends the walk, and says so
			 * (sp_name_frames makes it an unknown frame) */
			sp_add_frame(o, 0, SP_INSTR_UNREAD);
			break;
		}
		if (L->kind == SP_PYFRAMES_310) {
			sp_add_frame(o, code, (uint32_t)lasti);
			sp_end_segment(o, 0); /* placed by the eval call's code address */
		} else if (L->kind >= SP_PYFRAMES_312 && owner == SP_PY_OWNED_BY_CSTACK) {
			/* the shim that starts an eval call: a local of its C frame */
			sp_end_segment(o, frame);
		} else {
			iw &= ~(SP_INSTR_GENERATOR | SP_INSTR_UNREAD);
			if (owner == SP_PY_OWNED_BY_GENERATOR)
				iw |= SP_INSTR_GENERATOR;
			sp_add_frame(o, code, iw);
			if (L->kind == SP_PYFRAMES_311 && entry) {
				/* the first frame this eval call ran */
				sp_end_segment(o, cf == root_cf ? 0 : cf);
				if (!sp_rdw(cf + L->cf_previous, &cf))
					cf = 0;
			}
		}
		frame = prev;
	}
	/* frames after the last boundary: placed where nothing is known */
	if (o->n && (!o->nseg || o->seg[o->n - 1] >= o->nseg))
		sp_end_segment(o, 0);
	sp_name_frames(t, o);
}

/* ---- merging ------------------------------------------------------------ */

/* Whether native frame i (pcs[i], a return address when i > 0) is in
 * _PyEval_EvalFrameDefault. */
SP_SIGSAFE static bool sp_is_eval(const uint64_t *pcs, size_t i)
{
	uintptr_t pc = pcs[i] - (i ? 1 : 0);
	return pc >= sp_py.eval_lo && pc < sp_py.eval_hi;
}

/* The scratch arrays of t, as the walk fills them. */
SP_SIGSAFE static struct sp_walk_out sp_scratch(struct sp_thread *t)
{
	uint64_t *base = sp_pystack_pcs(t);
	size_t m = sp_g.cfg.max_depth;
	struct sp_walk_out o = {.words = base + 2 * m,
				.marks = base + 3 * m,
				.instr = base + 4 * m,
				.seg = (uint32_t *)(base + 5 * m),
				.max = m,
				.memo = (struct sp_codememo *)((uint8_t *)base + sp_memo_offset())};
	return o;
}

struct sp_pyframes sp_pystack_read(struct sp_thread *t)
{
	struct sp_walk_out o = sp_scratch(t);
	o.epoch = atomic_load_explicit(&sp_code_deaths, memory_order_acquire);
	uintptr_t ts = atomic_load_explicit(&sp_py.active, memory_order_relaxed) ? sp_tstate() : 0;
	if (ts)
		sp_walk(t, ts, &o);
	return (struct sp_pyframes){o.n, o.nseg};
}

size_t sp_pystack_place(struct sp_thread *t, struct sp_pyframes pf, const uint64_t *pcs,
			const uint64_t *sps, size_t n, uint64_t *out, size_t max, uint32_t *flags)
{
	struct sp_walk_out o = sp_scratch(t);
	o.n = pf.n;
	o.nseg = pf.nseg;
	/* place each segment: the native frame it runs in, going outwards */
	size_t k = 0, f = 0, e = 0;
	for (size_t s = 0; s < o.nseg; s++) {
		uint64_t mark = o.marks[s];
		size_t at = n; /* not placed: after every native frame */
		if (sp_py.L.kind == SP_PYFRAMES_310) {
			while (e < n && !sp_is_eval(pcs, e))
				e++;
			if (e < n)
				at = e++;
		} else if (mark) {
			size_t j = e;
			while (j < n && !(sps[j] <= mark && (j + 1 == n || mark < sps[j + 1])))
				j++;
			if (j < n) {
				at = j;
				e = j;
			}
		}
		if (at == n && f < o.n)
			*flags |= SP_STACK_PY_UNPLACED;
		/* native frames inside it, then its Python frames */
		for (; k < at && k < n; k++) {
			if (f + k >= max)
				goto full;
			out[f + k] = pcs[k];
		}
		while (f < o.n && o.seg[f] == s) {
			if (f + k >= max)
				goto full;
			out[f + k] = o.words[f];
			f++;
		}
	}
	for (; k < n; k++) {
		if (f + k >= max)
			goto full;
		out[f + k] = pcs[k];
	}
	return f + k;
full:
	*flags |= SP_STACK_TRUNCATED;
	return max;
}

/* ---- the writer's side ---------------------------------------------------- */

/* n characters of width kind at p, as UTF-8 (malloc'd). */
static char *sp_utf8(const uint8_t *p, uint32_t n, uint32_t kind)
{
	char *s = malloc((size_t)n * 4 + 1), *d = s;
	if (!s)
		return NULL;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t c;
		if (kind == 1)
			c = p[i];
		else if (kind == 2)
			c = (uint32_t)p[2 * i] | (uint32_t)p[2 * i + 1] << 8;
		else
			memcpy(&c, p + 4 * i, 4);
		if (c < 0x80) {
			*d++ = (char)c;
		} else if (c < 0x800) {
			*d++ = (char)(0xc0 | c >> 6);
			*d++ = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			*d++ = (char)(0xe0 | c >> 12);
			*d++ = (char)(0x80 | ((c >> 6) & 0x3f));
			*d++ = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x110000) {
			*d++ = (char)(0xf0 | c >> 18);
			*d++ = (char)(0x80 | ((c >> 12) & 0x3f));
			*d++ = (char)(0x80 | ((c >> 6) & 0x3f));
			*d++ = (char)(0x80 | (c & 0x3f));
		} else {
			*d++ = '?';
		}
	}
	*d = '\0';
	return s;
}

int sp_pystack_code_decode(const uint64_t *w, size_t n, struct sp_prof_pycode *c)
{
	memset(c, 0, sizeof(*c));
	if (n < SP_PYC_HEAD)
		return -EINVAL;
	c->id = (uint32_t)w[0];
	c->minor = (uint32_t)(w[0] >> 32) & 0xff;
	c->flags = (uint32_t)(w[0] >> 40) & 0xff;
	c->firstlineno = (int32_t)(int64_t)w[1];
	const uint8_t *p = (const uint8_t *)(w + SP_PYC_HEAD);
	size_t avail = (n - SP_PYC_HEAD) * 8, at = 0;
	char **dst[3] = {&c->name, &c->qualname, &c->filename};
	for (int i = 0; i < 3; i++) {
		uint32_t len = (uint32_t)w[2 + i], kind = (uint32_t)(w[2 + i] >> 32);
		size_t bytes = (size_t)len * kind;
		if (at + bytes > avail)
			return -EINVAL;
		if (kind)
			*dst[i] = sp_utf8(p + at, len, kind);
		at += bytes;
	}
	size_t tlen = (size_t)w[5];
	if (at + tlen > avail)
		return -EINVAL;
	c->linetable = malloc(tlen ? tlen : 1);
	if (!c->linetable)
		return 0;
	/* the lines alone: a 3.11+ table is mostly columns, which no view
	 * reads, and the profile's zlib stream would carry them (3-4 times
	 * the bytes). A table cut at SP_MAX_TABLE ends inside an entry as
	 * often as not: its whole entries are kept, which answer for the
	 * code they cover as before. One that can't be read goes as it is. */
	size_t whole = tlen;
	if (c->flags & SP_PYCODE_CUT_TABLE) {
		if (c->minor == 10)
			whole &= ~(size_t)1;
		else if (whole) {
			/* back to the last entry's first byte, then before it */
			while (whole > 1 && !(p[at + whole - 1] & 0x80))
				whole--;
			whole--;
		}
	}
	long lines = sp_pyline_lines_only(c->minor, p + at, whole, c->linetable);
	if (lines < 0)
		memcpy(c->linetable, p + at, tlen);
	c->linetable_len = lines < 0 ? tlen : (size_t)lines;
	return 0;
}

void sp_pystack_code_release(struct sp_prof_pycode *c)
{
	free(c->name);
	free(c->qualname);
	free(c->filename);
	free(c->linetable);
	memset(c, 0, sizeof(*c));
}

/* SIGSEGV and SIGBUS while frames are read: a guarded read's fault
 * resumes at its error return (saferead.h); every other is the program's. */
SP_SIGSAFE static void sp_py_fault(int sig, siginfo_t *si, void *uc)
{
	if (!sp_safe_resume(si, uc))
		sp_share_forward(sig, si, uc);
}

int sp_pystack_guard(void)
{
	sigset_t mask = sp_handler_mask();
	int err = sp_share_install(SIGSEGV, sp_py_fault, &mask);
	if (!err)
		err = sp_share_install(SIGBUS, sp_py_fault, &mask);
	return err;
}
