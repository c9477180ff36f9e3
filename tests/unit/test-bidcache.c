/*
 * test-bidcache.c - symbolize/bidcache.c on copies of this test's own
 * binary: the path layout, the system rule, add (a match, a mismatch,
 * twice), the bound's eviction order and the quarter rule, each and clear.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/bidcache.h"
#include "tests/unit/check.h"

static int count(const struct sp_bidcache_entry *e, void *arg)
{
	(void)e;
	++*(int *)arg;
	return 0;
}

int main(void)
{
	char dir[] = "/tmp/sp-bidcache.XXXXXX", path[4096], self[4096];
	CHECK(mkdtemp(dir) != NULL);
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	CHECK(n > 0);
	self[n > 0 ? n : 0] = '\0';

	const uint8_t id[] = {0xab, 0xcd, 0xef, 0x01};
	CHECK(sp_bidcache_path("/c", id, sizeof(id), path, sizeof(path)) == 0);
	CHECK(!strcmp(path, "/c/buildid/ab/cdef01/elf"));
	CHECK(sp_bidcache_path("/c", id, 0, path, sizeof(path)) == -EINVAL);

	CHECK(sp_bidcache_is_system("/usr/lib/x86_64-linux-gnu/libc.so.6"));
	CHECK(sp_bidcache_is_system("/lib64/ld-linux-x86-64.so.2"));
	CHECK(sp_bidcache_is_system("/home/u/.venv/lib/python3.11/site-packages/torch/lib/x.so"));
	CHECK(!sp_bidcache_is_system("/home/u/src/app/build/app"));
	CHECK(!sp_bidcache_is_system("/usrlocal/app"));

	uint8_t mine[64];
	int len = sp_bidcache_file_id(self, mine, sizeof(mine));
	CHECK(len > 0);
	struct stat st;
	CHECK(stat(self, &st) == 0);
	uint64_t max = 4 * (uint64_t)st.st_size + (uint64_t)st.st_size / 2;

	uint8_t other[64];
	memcpy(other, mine, sizeof(other));
	other[0] ^= 1;
	CHECK(sp_bidcache_add(dir, self, other, (size_t)len, max) == -ESTALE);
	CHECK(sp_bidcache_add(dir, self, mine, (size_t)len, max) == 1);
	CHECK(sp_bidcache_add(dir, self, mine, (size_t)len, max) == 0);
	CHECK(sp_bidcache_path(dir, mine, (size_t)len, path, sizeof(path)) == 0);
	CHECK(access(path, R_OK) == 0);
	/* over a quarter of the bound: not copied (in a cache without it) */
	char dir2[4200];
	snprintf(dir2, sizeof(dir2), "%s/2", dir);
	CHECK(sp_bidcache_add(dir2, self, NULL, 0, (uint64_t)st.st_size * 3) == -EFBIG);
	CHECK(access(dir2, F_OK) != 0);

	/* three fake entries of the same size, older than the real one; a
	 * bound of two and a half leaves the newest fake and the one kept */
	char fake[4096];
	for (int i = 1; i <= 3; i++) {
		uint8_t fid[4] = {0x10, 0, 0, (uint8_t)i};
		CHECK(sp_bidcache_path(dir, fid, sizeof(fid), fake, sizeof(fake)) == 0);
		char cmd[20480];
		snprintf(cmd, sizeof(cmd),
			 "mkdir -p \"$(dirname %s)\" && cp %s %s && touch -d '%d minutes ago' %s",
			 fake, self, fake, 10 - i, fake);
		CHECK(system(cmd) == 0);
	}
	int k = 0;
	CHECK(sp_bidcache_each(dir, count, &k) == 0);
	CHECK(k == 4);
	CHECK(sp_bidcache_trim(dir, (uint64_t)st.st_size * 5 / 2, path) == 2);
	uint8_t oldest[4] = {0x10, 0, 0, 1}, newest[4] = {0x10, 0, 0, 3};
	CHECK(sp_bidcache_path(dir, oldest, 4, fake, sizeof(fake)) == 0);
	CHECK(access(fake, F_OK) != 0);
	CHECK(sp_bidcache_path(dir, newest, 4, fake, sizeof(fake)) == 0);
	CHECK(access(fake, F_OK) == 0);
	CHECK(access(path, F_OK) == 0);

	CHECK(sp_bidcache_clear(dir) == 2);
	k = 0;
	CHECK(sp_bidcache_each(dir, count, &k) == 0 && k == 0);
	CHECK(rmdir(dir) == 0);
	return check_exit("unit/bidcache");
}
