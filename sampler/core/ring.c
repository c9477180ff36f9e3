#include "sampler/core/ring.h"
#include "sampler/base/hot.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#define SP_HDR(len, flags) (((uint64_t)(flags) << 32) | (uint64_t)(len))

int sp_ring_init(struct sp_ring *r, size_t n_words)
{
	memset(r, 0, sizeof(*r));
	void *p = mmap(NULL, n_words * sizeof(uint64_t), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	r->words = p;
	r->n_words = n_words;
	return 0;
}

void sp_ring_populate(struct sp_ring *r, size_t upto)
{
	if (upto > r->n_words)
		upto = r->n_words;
	/* whole pages: the first page not yet backed, to the page that holds upto */
	size_t page = 4096 / sizeof(uint64_t);
	size_t from = r->populated / page * page, to = (upto + page - 1) / page * page;
	if (to > r->n_words)
		to = r->n_words;
	if (!r->words || to <= from)
		return;
	if (sp_populate(r->words + from, (to - from) * sizeof(uint64_t)) == 0)
		r->populated = to;
	else
		r->populated = r->n_words; /* not supported (EINVAL): don't ask again */
}

void sp_ring_keep_ahead(struct sp_ring *r)
{
	size_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	size_t wrote = head >= r->seen ? head - r->seen : head + (r->n_words - r->seen);
	r->seen = head;
	if (r->populated >= r->n_words || wrote == 0)
		return;
	size_t ahead = wrote > SP_RING_AHEAD / 4 ? SP_RING_AHEAD : 4 * wrote;
	sp_ring_populate(r, head + ahead);
}

void sp_ring_release(struct sp_ring *r)
{
	if (r->words)
		munmap(r->words, r->n_words * sizeof(uint64_t));
	memset(r, 0, sizeof(*r));
}

uint64_t *sp_ring_reserve(struct sp_ring *r, size_t max_words)
{
	size_t need = max_words + 1;
	size_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	size_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);

	if (need >= r->n_words)
		return NULL;
	if (head >= tail) {
		/* free space: [head, n) and [0, tail); keep one word so head==tail means empty */
		if (r->n_words - head >= need) {
			if (r->n_words - head == need && tail == 0)
				return NULL;
			r->reserved_at = head;
		} else if (tail > need) {
			r->reserved_at = 0; /* wrap: the commit writes the skip marker */
		} else {
			return NULL;
		}
	} else {
		if (tail - head <= need)
			return NULL;
		r->reserved_at = head;
	}
	r->reserved_len = max_words;
	return r->words + r->reserved_at + 1;
}

void sp_ring_commit(struct sp_ring *r, size_t words, uint32_t flags)
{
	size_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	size_t at = r->reserved_at;
	r->words[at] = SP_HDR(words, flags);
	if (at != head)
		r->words[head] = 0; /* skip marker: the entry went to the start */
	size_t next = at + words + 1;
	if (next == r->n_words)
		next = 0;
	atomic_store_explicit(&r->head, next, memory_order_release);
}

bool sp_ring_half_full(struct sp_ring *r)
{
	size_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
	size_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	size_t used = head >= tail ? head - tail : r->n_words - tail + head;
	return used > r->n_words / 2;
}

const uint64_t *sp_ring_peek(struct sp_ring *r, size_t *words, uint32_t *flags)
{
	size_t head = atomic_load_explicit(&r->head, memory_order_acquire);
	size_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	if (tail == head)
		return NULL;
	uint64_t hdr = r->words[tail];
	if (hdr == 0) {
		/* skip marker: continue at the start */
		tail = 0;
		atomic_store_explicit(&r->tail, 0, memory_order_release);
		if (tail == head)
			return NULL;
		hdr = r->words[0];
	}
	*words = (size_t)(hdr & 0xffffffffu);
	*flags = (uint32_t)(hdr >> 32);
	return r->words + tail + 1;
}

void sp_ring_pop(struct sp_ring *r)
{
	size_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	size_t len = (size_t)(r->words[tail] & 0xffffffffu);
	size_t next = tail + len + 1;
	if (next == r->n_words)
		next = 0;
	atomic_store_explicit(&r->tail, next, memory_order_release);
}
