/* test-ring.c - the per-thread sample ring: order, wrap-around, full, empty,
 * and memory backed ahead of the producer. */
#include <stdio.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>

#include "sampler/core/ring.h"
#include "tests/unit/check.h"

/* Pushes an entry of n words whose payload is seq, seq+1, ... */
static int push(struct sp_ring *r, size_t n, uint64_t seq)
{
	uint64_t *p = sp_ring_reserve(r, n + 4);
	if (!p)
		return -1;
	for (size_t i = 0; i < n; i++)
		p[i] = seq + i;
	sp_ring_commit(r, n, (uint32_t)(seq & 0xff));
	return 0;
}

static int pop_check(struct sp_ring *r, size_t n, uint64_t seq)
{
	size_t words;
	uint32_t flags;
	const uint64_t *p = sp_ring_peek(r, &words, &flags);
	if (!p || words != n || flags != (uint32_t)(seq & 0xff))
		return -1;
	for (size_t i = 0; i < n; i++)
		if (p[i] != seq + i)
			return -1;
	sp_ring_pop(r);
	return 0;
}

/* How many of r's pages are in memory. */
static size_t resident(const struct sp_ring *r)
{
	size_t pages = (r->n_words * 8 + 4095) / 4096, n = 0;
	unsigned char vec[64];
	if (pages > sizeof(vec) || mincore(r->words, r->n_words * 8, vec) != 0)
		return (size_t)-1;
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	return n;
}

/* Whether this kernel has MADV_POPULATE_WRITE. */
static int can_populate(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok = p != MAP_FAILED && madvise(p, 4096, 23 /* MADV_POPULATE_WRITE */) == 0;
	if (p != MAP_FAILED)
		munmap(p, 4096);
	return ok;
}

int main(void)
{
	struct sp_ring r;
	CHECK(sp_ring_init(&r, 100) == 0);

	size_t w;
	uint32_t f;
	CHECK(sp_ring_peek(&r, &w, &f) == NULL);

	/* FIFO order with many wrap-arounds and entry sizes */
	uint64_t pushed = 0, popped = 0;
	for (int round = 0; round < 5000; round++) {
		size_t n = 1 + (size_t)(round * 7) % 23;
		while (push(&r, n, pushed * 1000) < 0) {
			size_t m = 1 + (size_t)(popped * 7) % 23;
			CHECK(pop_check(&r, m, popped * 1000) == 0);
			popped++;
		}
		pushed++;
	}
	while (popped < pushed) {
		size_t m = 1 + (size_t)(popped * 7) % 23;
		CHECK(pop_check(&r, m, popped * 1000) == 0);
		popped++;
	}
	CHECK(sp_ring_peek(&r, &w, &f) == NULL);

	/* a full ring refuses, never overwrites */
	int accepted = 0;
	while (push(&r, 10, (uint64_t)accepted) == 0)
		accepted++;
	CHECK(accepted >= 6 && accepted <= 9);
	for (int i = 0; i < accepted; i++)
		CHECK(pop_check(&r, 10, (uint64_t)i) == 0);
	CHECK(sp_ring_peek(&r, &w, &f) == NULL);

	/* an entry larger than the ring is refused */
	CHECK(sp_ring_reserve(&r, 200) == NULL);

	sp_ring_release(&r);

	/* populating backs whole pages up to the word asked for, and no more
	 * (MADV_POPULATE_WRITE: Linux 5.14) */
	if (!can_populate()) {
		printf("test-ring: this kernel has no MADV_POPULATE_WRITE: populate not checked\n");
		return check_exit("test-ring");
	}
	CHECK(sp_ring_init(&r, 16 * 512) == 0); /* 16 pages */
	CHECK(resident(&r) == 0);
	sp_ring_populate(&r, 512 * 3 + 1);
	CHECK(resident(&r) == 4 && r.populated == 4 * 512);
	sp_ring_populate(&r, 100); /* behind: nothing to do */
	CHECK(resident(&r) == 4);
	sp_ring_populate(&r, 1u << 20); /* past the end: up to it */
	CHECK(resident(&r) == 16 && r.populated == r.n_words);
	sp_ring_release(&r);

	/* keeping ahead: nothing for a producer that wrote nothing, then four
	 * times what it wrote, then at most SP_RING_AHEAD */
	CHECK(sp_ring_init(&r, 2 * SP_RING_AHEAD) == 0);
	sp_ring_keep_ahead(&r);
	CHECK(r.populated == 0);
	CHECK(push(&r, 100, 1) == 0); /* 101 words with its header */
	sp_ring_keep_ahead(&r);
	CHECK(r.populated == 512); /* 101 + 404 words: the first page */
	sp_ring_keep_ahead(&r);
	CHECK(r.populated == 512);
	while (atomic_load(&r.head) <= SP_RING_AHEAD / 4) /* more than a quarter of it */
		CHECK(push(&r, 500, 1) == 0);
	sp_ring_keep_ahead(&r);
	size_t head = atomic_load(&r.head);
	CHECK(r.populated >= head + SP_RING_AHEAD && r.populated < head + SP_RING_AHEAD + 512);
	sp_ring_release(&r);
	return check_exit("test-ring");
}
