/*
 * bidcache.h - copies of binaries kept by build-id, so that a profile stays
 * readable after its program is rebuilt (perf's ~/.debug build-id cache).
 *
 * Layout: DIR/buildid/<first 2 hex digits>/<the rest>/elf, the whole ELF
 * file (its symbols, DWARF and .eh_frame: everything the symbolizer reads).
 * An entry is written to a temporary name and renamed, so a reader sees a
 * whole copy or none. The cache is bounded: after an add, the entries least
 * recently added or read (by mtime, which a read refreshes) are removed
 * until the total is within the bound; a file larger than a quarter of the
 * bound is never copied. Nothing here reads the environment or prints.
 * Not async-signal-safe.
 */
#ifndef SP_SYMBOLIZE_BIDCACHE_H
#define SP_SYMBOLIZE_BIDCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The bound when none is given: 1 GiB. */
#define SP_BIDCACHE_DEFAULT_MAX (1ull << 30)

/*
 * Writes DIR/buildid/xx/rest/elf for build-id id (n bytes) into buf.
 * Returns 0, or -EINVAL (no build-id) / -ENAMETOOLONG.
 */
int sp_bidcache_path(const char *dir, const uint8_t *id, size_t n, char *buf, size_t cap);

/*
 * Whether path is the system's rather than the program's own: under /usr,
 * /lib*, /bin, /sbin, /opt, /snap or /nix/store, or inside an installed
 * Python package (a site-packages or dist-packages directory). A package
 * upgrade, not a rebuild, replaces those; they are also the large ones.
 */
bool sp_bidcache_is_system(const char *path);

/* mkdir -p of path's directory part (mode 0700: a cache may hold private
 * binaries), for the cache's files. 0 or -errno. */
int sp_bidcache_mkdirs(const char *path);

/*
 * Reads the GNU build-id of the ELF file at path into id (cap bytes).
 * Returns its length, 0 if the file has none, or -errno.
 */
int sp_bidcache_file_id(const char *path, uint8_t *id, size_t cap);

/*
 * Copies the ELF file at path into the cache under DIR, if the file's
 * build-id is id (n bytes; with n 0, whatever build-id it has), then trims
 * the cache to max_bytes. Returns 1 if copied, 0 if already there (its
 * mtime is refreshed), or -errno: -ESTALE (the file's build-id is not id:
 * rebuilt since), -ENODATA (no build-id), -EFBIG (larger than a quarter of
 * max_bytes), -ENOENT, -ENOSPC and the like.
 */
int sp_bidcache_add(const char *dir, const char *path, const uint8_t *id, size_t n,
		    uint64_t max_bytes);

/*
 * Removes the entries least recently added or read until the cache holds
 * at most max_bytes, never removing keep (an entry path, may be NULL).
 * Returns the number removed or -errno.
 */
int sp_bidcache_trim(const char *dir, uint64_t max_bytes, const char *keep);

/* One entry, for sp_bidcache_each: the build-id in hex, its file, size and mtime. */
struct sp_bidcache_entry {
	const char *build_id;
	const char *path;
	uint64_t size;
	int64_t mtime;
};

/*
 * Calls fn on each entry, oldest first; stops at fn's first non-zero return
 * and returns it. Returns 0 (also for a cache not yet made) or -errno.
 */
int sp_bidcache_each(const char *dir, int (*fn)(const struct sp_bidcache_entry *, void *),
		     void *arg);

/*
 * Removes every entry (and DIR/buildid itself; DIR is left). Returns the
 * number of entries removed or -errno.
 */
int sp_bidcache_clear(const char *dir);

#endif
