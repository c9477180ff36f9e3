#include "symbolize/bidcache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sp_bidcache_path(const char *dir, const uint8_t *id, size_t n, char *buf, size_t cap)
{
	char hex[2 * 64 + 1];
	if (!n || n > 64)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	int len = snprintf(buf, cap, "%s/buildid/%.2s/%s/elf", dir, hex, hex + 2);
	return len < 0 || (size_t)len >= cap ? -ENAMETOOLONG : 0;
}

bool sp_bidcache_is_system(const char *path)
{
	static const char *const roots[] = {"/usr/", "/lib/",  "/lib32/", "/lib64/", "/libx32/",
					    "/bin/", "/sbin/", "/opt/",	  "/snap/",  "/nix/store/"};
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (!strncmp(path, roots[i], strlen(roots[i])))
			return true;
	return strstr(path, "/site-packages/") || strstr(path, "/dist-packages/");
}

int sp_bidcache_file_id(const char *path, uint8_t *id, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	int rc = elf && elf_kind(elf) == ELF_K_ELF ? 0 : -ENOEXEC;
	Elf_Scn *scn = NULL;
	while (!rc && (scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)d->d_buf + name_off, "GNU", 4) &&
			    nh.n_descsz <= cap) {
				memcpy(id, (const char *)d->d_buf + desc_off, nh.n_descsz);
				rc = (int)nh.n_descsz;
				break;
			}
		}
		if (rc)
			break;
	}
	elf_end(elf);
	close(fd);
	return rc;
}

int sp_bidcache_mkdirs(const char *path)
{
	char tmp[4096];
	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		/* private, as the binaries may be: like ~/.cache itself */
		if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return 0;
}

static int sp_bidcache_copy(int in, int out)
{
	char buf[1 << 16];
	for (;;) {
		ssize_t got = read(in, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return 0;
		for (ssize_t put = 0; put < got;) {
			ssize_t w = write(out, buf + put, (size_t)(got - put));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return -errno;
			put += w;
		}
	}
}

int sp_bidcache_add(const char *dir, const char *path, const uint8_t *id, size_t n,
		    uint64_t max_bytes)
{
	uint8_t have[64];
	int len = sp_bidcache_file_id(path, have, sizeof(have));
	if (len < 0)
		return len;
	if (len == 0)
		return -ENODATA;
	if (n && ((size_t)len != n || memcmp(have, id, n)))
		return -ESTALE;
	char dest[4096], tmp[4200];
	int rc = sp_bidcache_path(dir, have, (size_t)len, dest, sizeof(dest));
	if (rc)
		return rc;
	if (access(dest, F_OK) == 0) {
		utimensat(AT_FDCWD, dest, NULL, 0);
		return 0;
	}
	int in = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK), out = -1;
	struct stat st;
	if (in < 0)
		return -errno;
	if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		goto out;
	}
	if ((uint64_t)st.st_size > max_bytes / 4) {
		rc = -EFBIG;
		goto out;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", dest, (int)getpid());
	if ((rc = sp_bidcache_mkdirs(dest)))
		goto out;
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0) {
		rc = -errno;
		goto out;
	}
	rc = sp_bidcache_copy(in, out);
	if (close(out) < 0 && !rc)
		rc = -errno;
	out = -1;
	if (!rc && rename(tmp, dest) < 0)
		rc = -errno;
	if (rc) {
		unlink(tmp);
		goto out;
	}
	rc = sp_bidcache_trim(dir, max_bytes, dest);
	rc = rc < 0 ? rc : 1;
out:
	close(in);
	return rc;
}

struct sp_bidcache_list {
	struct sp_bidcache_entry *v;
	size_t n, cap;
};

static void sp_bidcache_list_free(struct sp_bidcache_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free((char *)l->v[i].build_id);
		free((char *)l->v[i].path);
	}
	free(l->v);
}

static int sp_bidcache_by_mtime(const void *a, const void *b)
{
	const struct sp_bidcache_entry *x = a, *y = b;
	return (x->mtime > y->mtime) - (x->mtime < y->mtime);
}

/* Every DIR/buildid/xx/rest/elf, oldest first. */
static int sp_bidcache_scan(const char *dir, struct sp_bidcache_list *l)
{
	char top[4096], sub[4096], file[4096];
	memset(l, 0, sizeof(*l));
	if (snprintf(top, sizeof(top), "%s/buildid", dir) >= (int)sizeof(top))
		return -ENAMETOOLONG;
	DIR *d = opendir(top);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	int rc = 0;
	struct dirent *e;
	while (!rc && (e = readdir(d)) != NULL) {
		if (strlen(e->d_name) != 2)
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", top, e->d_name) >= (int)sizeof(sub))
			continue;
		DIR *d2 = opendir(sub);
		struct dirent *e2;
		while (!rc && d2 && (e2 = readdir(d2)) != NULL) {
			struct stat st;
			if (e2->d_name[0] == '.' || strlen(e2->d_name) > 126)
				continue;
			int len = snprintf(file, sizeof(file), "%s/%s/elf", sub, e2->d_name);
			if (len >= (int)sizeof(file) || stat(file, &st) < 0)
				continue;
			if (l->n == l->cap) {
				size_t cap = l->cap ? 2 * l->cap : 16;
				void *p = realloc(l->v, cap * sizeof(*l->v));
				if (!p) {
					rc = -ENOMEM;
					break;
				}
				l->v = p;
				l->cap = cap;
			}
			char id[160];
			if (snprintf(id, sizeof(id), "%s%s", e->d_name, e2->d_name) >=
			    (int)sizeof(id))
				continue;
			struct sp_bidcache_entry *x = &l->v[l->n];
			x->build_id = strdup(id);
			x->path = strdup(file);
			x->size = (uint64_t)st.st_size;
			x->mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
			l->n++;
			if (!x->build_id || !x->path)
				rc = -ENOMEM;
		}
		if (d2)
			closedir(d2);
	}
	closedir(d);
	if (!rc)
		qsort(l->v, l->n, sizeof(*l->v), sp_bidcache_by_mtime);
	return rc;
}

/* Removes an entry's file and the directories it leaves empty. */
static void sp_bidcache_remove(const char *file)
{
	char p[4096];
	snprintf(p, sizeof(p), "%s", file);
	unlink(p);
	for (int up = 0; up < 2; up++) {
		char *slash = strrchr(p, '/');
		if (!slash)
			return;
		*slash = '\0';
		if (rmdir(p) < 0)
			return;
	}
}

int sp_bidcache_trim(const char *dir, uint64_t max_bytes, const char *keep)
{
	struct sp_bidcache_list l;
	int rc = sp_bidcache_scan(dir, &l);
	uint64_t total = 0;
	for (size_t i = 0; !rc && i < l.n; i++)
		total += l.v[i].size;
	int removed = 0;
	for (size_t i = 0; !rc && i < l.n && total > max_bytes; i++) {
		if (keep && !strcmp(l.v[i].path, keep))
			continue;
		sp_bidcache_remove(l.v[i].path);
		total -= l.v[i].size;
		removed++;
	}
	sp_bidcache_list_free(&l);
	return rc ? rc : removed;
}

int sp_bidcache_each(const char *dir, int (*fn)(const struct sp_bidcache_entry *, void *),
		     void *arg)
{
	struct sp_bidcache_list l;
	int rc = sp_bidcache_scan(dir, &l);
	for (size_t i = 0; !rc && i < l.n; i++)
		rc = fn(&l.v[i], arg);
	sp_bidcache_list_free(&l);
	return rc;
}

int sp_bidcache_clear(const char *dir)
{
	struct sp_bidcache_list l;
	int rc = sp_bidcache_scan(dir, &l);
	for (size_t i = 0; !rc && i < l.n; i++)
		sp_bidcache_remove(l.v[i].path);
	int n = (int)l.n;
	sp_bidcache_list_free(&l);
	char top[4096];
	snprintf(top, sizeof(top), "%s/buildid", dir);
	rmdir(top);
	return rc ? rc : n;
}
