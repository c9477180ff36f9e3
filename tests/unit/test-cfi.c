/*
 * test-cfi.c - the sampler's own CFI rules (sampler/capture/cfi.c) against an
 * unwinder nobody here wrote: glibc's backtrace(), which walks with
 * libgcc's. A noinline chain is walked both ways from inside; every caller
 * must match, down to _start, whose rule must say "outermost". A function
 * that realigns its stack through a DRAP register has a CFA expression: its rule must be SLOW, not
 * a wrong step. Rules survive packing at their extremes, and rule lookups
 * on junk unwind tables stay inside them (run under ASan by
 * tests/fuzz/run-sanitized.sh).
 */
#include <execinfo.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "sampler/capture/cfi.h"
#include "sampler/capture/rulecache.h"
#include "tests/unit/check.h"

#define NOINLINE __attribute__((noinline))
#define MAX_MODS 64
#define DEPTH	 64

struct mod {
	uintptr_t lo, hi; /* executable segment */
	struct sp_cfi_table cfi;
};
static struct mod mods[MAX_MODS];
static int n_mods;

static int add_mod(struct dl_phdr_info *info, size_t size, void *arg)
{
	for (int i = 0; i < info->dlpi_phnum && n_mods < MAX_MODS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		struct mod *m = &mods[n_mods++];
		m->lo = info->dlpi_addr + ph->p_vaddr;
		m->hi = m->lo + ph->p_memsz;
		sp_cfi_table_init(info, &m->cfi);
	}
	return 0;
}

static const struct mod *find_mod(uintptr_t addr)
{
	for (int i = 0; i < n_mods; i++)
		if (addr >= mods[i].lo && addr < mods[i].hi)
			return &mods[i];
	return NULL;
}

/* The rules' walk from uc, as the handler takes it; returns frames, sets *end_kind. */
__attribute__((no_sanitize_address)) static int walk(const ucontext_t *uc, uintptr_t *ips, int max,
						     int *end_kind)
{
	static const int greg[SP_CFI_REGS] = {REG_RBX, REG_RBP, REG_R12, REG_R13, REG_R14, REG_R15};
	uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
	uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	uintptr_t regs[SP_CFI_REGS];
	for (int i = 0; i < SP_CFI_REGS; i++)
		regs[i] = (uintptr_t)uc->uc_mcontext.gregs[greg[i]];
	int n = 0;
	bool exact = true;
	*end_kind = SP_CFI_NONE;
	while (n < max) {
		ips[n++] = ip;
		uintptr_t addr = exact ? ip : ip - 1;
		const struct mod *m = find_mod(addr);
		struct sp_cfi_rule r;
		if (!m || sp_cfi_find(&m->cfi, addr, &r) != SP_CFI_STEP) {
			*end_kind = m ? r.kind : SP_CFI_NONE;
			break;
		}
		uintptr_t cfa = (r.cfa_reg ? regs[r.cfa_reg - 1] : sp) + (intptr_t)r.cfa_off;
		for (int i = 0; i < SP_CFI_REGS; i++)
			if (r.saved[i])
				regs[i] = *(const uintptr_t *)(cfa - 8 * (uintptr_t)r.saved[i]);
		ip = *(const uintptr_t *)(cfa - 8);
		sp = cfa;
		exact = false;
	}
	return n;
}

static int n_walk, n_bt, walk_end;
static uintptr_t walk_ips[DEPTH];
static void *bt_ips[DEPTH];

NOINLINE static void probe(void)
{
	ucontext_t uc;
	getcontext(&uc);
	n_walk = walk(&uc, walk_ips, DEPTH, &walk_end);
	n_bt = backtrace(bt_ips, DEPTH);
	__asm__ volatile("" ::: "memory");
}

NOINLINE static void chain_c(int k)
{
	/* a frame that keeps callee-saved registers busy across the call */
	volatile long keep = k;
	probe();
	__asm__ volatile("" ::"r"(keep) : "rbx", "r12", "r13", "r14", "r15", "memory");
}

NOINLINE static void chain_b(int k)
{
	chain_c(k + 1);
	__asm__ volatile("" ::: "memory");
}

NOINLINE static void chain_a(int k)
{
	chain_b(k + 1);
	__asm__ volatile("" ::: "memory");
}

/*
 * A 64-byte aligned local and an alloca() in one frame: GCC realigns the
 * stack through a DRAP register, and the CFA becomes an expression.
 */
static enum sp_cfi_kind realigned_kind;

NOINLINE static void realigned(int n)
{
	_Alignas(64) volatile char buf[64];
	volatile char *vla = __builtin_alloca((size_t)n + 1);
	buf[0] = 1;
	vla[0] = 1;
	ucontext_t uc;
	getcontext(&uc);
	uintptr_t ip = (uintptr_t)uc.uc_mcontext.gregs[REG_RIP];
	const struct mod *m = find_mod(ip);
	struct sp_cfi_rule r;
	realigned_kind = m ? sp_cfi_find(&m->cfi, ip, &r) : SP_CFI_NONE;
	__asm__ volatile("" ::"r"(buf), "r"(vla) : "memory");
}

static void test_walk(void)
{
	chain_a(0);
	CHECK(n_walk > 5);
	CHECK(n_bt > 5);
	/* frame 0 is probe at two different calls, and a sanitizer's
	 * interceptor may add a frame of its own above probe in backtrace's
	 * list: line them up at probe's caller, then every caller must agree */
	int off = 0;
	while (off < n_bt && (uintptr_t)bt_ips[off] != walk_ips[1])
		off++;
	CHECK(off < n_bt);
	CHECK(n_walk - 1 == n_bt - off);
	int same = 1;
	for (int i = 1; i < n_walk && off + i - 1 < n_bt; i++)
		if (walk_ips[i] != (uintptr_t)bt_ips[off + i - 1]) {
			fprintf(stderr, "frame %d: rules %#lx, backtrace %p\n", i,
				(unsigned long)walk_ips[i], bt_ips[off + i - 1]);
			same = 0;
		}
	CHECK(same);
	/* the last frame is _start, whose CFI marks the return address undefined */
	CHECK(walk_end == SP_CFI_END);

	realigned(n_walk);
	CHECK(realigned_kind == SP_CFI_SLOW);
}

static void test_pack(void)
{
	struct sp_cfi_rule r = {.kind = SP_CFI_STEP, .cfa_reg = 6, .cfa_off = SP_CFI_CFA_MIN};
	for (int i = 0; i < SP_CFI_REGS; i++)
		r.saved[i] = (uint8_t)(i ? SP_CFI_SAVE_MAX - i : 0);
	struct sp_cfi_rule u;
	uint64_t v = sp_cfi_pack(&r);
	CHECK(v != 0);
	sp_cfi_unpack(v, &u);
	CHECK(u.kind == r.kind && u.cfa_reg == r.cfa_reg && u.cfa_off == r.cfa_off && !u.signal);
	CHECK(!memcmp(u.saved, r.saved, sizeof(r.saved)));
	r = (struct sp_cfi_rule){.kind = SP_CFI_SLOW, .signal = true, .cfa_off = SP_CFI_CFA_MAX};
	sp_cfi_unpack(sp_cfi_pack(&r), &u);
	CHECK(u.kind == SP_CFI_SLOW && u.signal && u.cfa_off == SP_CFI_CFA_MAX && u.cfa_reg == 0);
}

/*
 * Junk tables: a search table whose entries point at random bytes. Every
 * lookup must come back (STEP, END or SLOW) without reading outside the
 * buffer, which ASan checks when the tests run sanitized.
 */
static void test_junk(void)
{
	enum { N = 64, EH = 4096 };
	uint64_t seed = 0x5eed;
	size_t rounds = 0, steps = 0;
	for (int round = 0; round < 400; round++) {
		uint8_t *buf = malloc(8 * N + EH);
		if (!buf)
			return;
		for (size_t i = 0; i < 8 * N + EH; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			buf[i] = (uint8_t)(seed >> 56);
		}
		/* a plausible skeleton half the time: lengths and CIE pointers that fit */
		int32_t *tab = (int32_t *)buf;
		for (int i = 0; i < N; i++) {
			tab[2 * i] = 8 * N + i * 64;
			tab[2 * i + 1] =
			    (int32_t)(8 * N + (round % 2 ? i * 64 : (int)(seed >> 40) % EH));
			if (round % 2) {
				uint8_t *e = buf + 8 * N + i * 64;
				uint32_t len = 60, back = 4 + (uint32_t)(i * 64 % 256);
				memcpy(e, &len, 4);
				memcpy(e + 4, &back, 4);
			}
		}
		struct sp_cfi_table t = {
		    .hdr = (uintptr_t)buf,
		    .table = (uintptr_t)buf,
		    .count = N,
		    .lo = (uintptr_t)buf + 8 * N,
		    .hi = (uintptr_t)buf + 8 * N + EH,
		    .hdr_lo = (uintptr_t)buf,
		    .hdr_hi = (uintptr_t)buf + 8 * N + EH,
		};
		for (int k = 0; k < 200; k++) {
			struct sp_cfi_rule r;
			uintptr_t addr = (uintptr_t)buf + 8 * N + (uintptr_t)(k * 97 % (EH + 64));
			enum sp_cfi_kind kind = sp_cfi_find(&t, addr, &r);
			CHECK(kind == SP_CFI_STEP || kind == SP_CFI_END || kind == SP_CFI_SLOW);
			CHECK(kind == r.kind);
			steps += kind == SP_CFI_STEP;
		}
		free(buf);
		rounds++;
	}
	printf("junk tables: %zu rounds, %zu lookups gave a rule\n", rounds, steps);
}

/*
 * The rule cache: a rule comes back for its address and epoch only, an
 * unload (a new epoch) hides it, and the 16-bit epoch in its keys cannot
 * wrap around to an entry of 65536 unloads ago.
 */
static void test_rulecache(void)
{
	CHECK(sp_rulecache_init() == 0);
	uintptr_t a = 0x401234, b = 0x7f0000005678;
	sp_rulecache_put(a, 1, 0x1111);
	sp_rulecache_put(b, 1, 0x2222);
	CHECK(sp_rulecache_get(a, 1) == 0x1111);
	CHECK(sp_rulecache_get(b, 1) == 0x2222);
	CHECK(sp_rulecache_get(a + 1, 1) == 0);
	CHECK(sp_rulecache_get(a, 2) == 0);
	sp_rulecache_put(a, 2, 0x3333); /* takes a stale slot or a free one */
	CHECK(sp_rulecache_get(a, 2) == 0x3333);
	CHECK(sp_rulecache_get(a, 1) == 0 || sp_rulecache_get(a, 1) == 0x1111);
	/* epochs that don't wrap keep the table */
	sp_rulecache_epoch(2);
	CHECK(sp_rulecache_get(a, 2) == 0x3333);
	/* 65536 unloads after epoch 1 its keys would match again: the wrap empties the table */
	CHECK(sp_rulecache_get(b, 1 + 65536) == 0x2222);
	sp_rulecache_epoch(65536);
	CHECK(sp_rulecache_get(b, 1 + 65536) == 0);
	CHECK(sp_rulecache_get(a, 2 + 65536) == 0);
	/* and it fills again */
	sp_rulecache_put(b, 65537, 0x4444);
	CHECK(sp_rulecache_get(b, 65537) == 0x4444);
}

int main(void)
{
	dl_iterate_phdr(add_mod, NULL);
	CHECK(n_mods > 0);
	test_walk();
	test_pack();
	test_junk();
	test_rulecache();
	return check_exit("test-cfi");
}
