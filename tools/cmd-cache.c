/*
 * cmd-cache.c - `stackprof cache`: the build-id cache, copies of binaries
 * kept so that a profile still reads after its program is rebuilt
 * (symbolize/bidcache.h). `stackprof run` fills it; this command adds to
 * it by hand, lists it and clears it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"
#include "tools/commands.h"
#include "format/profile.h"
#include "symbolize/bidcache.h"

enum { OPT_ALL = 256 };

static const struct sp_cli_opt sp_cache_opts[] = {
    {OPT_ALL, 0, "all", NULL,
     "add: a profile's system modules too (/usr, /lib*,\ninstalled Python packages, ...)"},
    {0, 0, NULL, NULL, NULL},
};

static const struct sp_cli_cmd sp_cache_cmd = {
    .name = "cache",
    .synopsis = "add [--all] FILE... | list | clear",
    .about = "The build-id cache keeps a copy of each binary a profile ran in, by its\n"
	     "build-id, as perf's ~/.debug does: a program rebuilt after profiling has\n"
	     "another build-id, and its old profile is read from the copy (with the\n"
	     "right names and lines) instead of showing module+0xoffset frames.\n"
	     "`stackprof run` copies the program's own binaries when it ends: the\n"
	     "modules outside /usr, /lib*, /bin, /sbin, /opt, /snap, /nix/store and\n"
	     "installed Python packages (site-packages, dist-packages), which a\n"
	     "package upgrade, not a rebuild, replaces.\n"
	     "\n"
	     "  add FILE...  copy FILE, an ELF binary, or each of a profile's own\n"
	     "               binaries (with --all, every one with a build-id); a binary\n"
	     "               rebuilt since the profile was taken is not copied\n"
	     "  list         one line per copy, oldest first: build-id, bytes, file;\n"
	     "               then the total and the bound\n"
	     "  clear        remove every copy\n"
	     "\n"
	     "The cache is bounded: after each copy, the copies least recently added or\n"
	     "read are removed until the total is within STACKPROF_CACHE_MAX, and a\n"
	     "binary larger than a quarter of it is not copied.\n",
    .opts = sp_cache_opts,
    .more = "environment:\n"
	    "  STACKPROF_CACHE_DIR  the cache (default $XDG_CACHE_HOME/stackprof, else\n"
	    "                       ~/.cache/stackprof); copies are in\n"
	    "                       buildid/<2 hex digits>/<the rest>/elf\n"
	    "  STACKPROF_CACHE_MAX  its bound in bytes, or with K, M or G (default 1G);\n"
	    "                       0: `stackprof run` keeps no copies\n"
	    "\n"
	    "examples:\n"
	    "  stackprof cache add app.prof        # before rebuilding, for a profile taken\n"
	    "                                      # without `stackprof run`\n"
	    "  stackprof cache add ./build/app\n"
	    "  stackprof cache list\n"
	    "  stackprof cache clear\n"
	    "  stackprof run --no-cache -- ./app   # keep no copy\n",
};

static bool sp_cache_is_elf(const char *path)
{
	char magic[4];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	bool elf = fd >= 0 && read(fd, magic, 4) == 4 && !memcmp(magic, "\177ELF", 4);
	if (fd >= 0)
		close(fd);
	return elf;
}

static const char *sp_cache_why(int rc)
{
	switch (rc) {
	case -ESTALE:
		return "rebuilt since the profile (another build-id); not copied";
	case -ENODATA:
		return "has no build-id to keep it by";
	case -EFBIG:
		return "larger than a quarter of the cache's bound (STACKPROF_CACHE_MAX)";
	default:
		return strerror(-rc);
	}
}

/* Adds one binary; prints what happened. Returns false on an error. */
static bool sp_cache_add_one(const char *dir, uint64_t max, const char *path, const uint8_t *id,
			     size_t n)
{
	int rc = sp_bidcache_add(dir, path, id, n, max);
	if (rc < 0) {
		sp_cli_error("cache: %s: %s", path, sp_cache_why(rc));
		return false;
	}
	printf("%s %s\n", rc ? "added" : "kept ", path);
	return true;
}

static bool sp_cache_add(const char *dir, uint64_t max, const char *file, bool all)
{
	if (sp_cache_is_elf(file))
		return sp_cache_add_one(dir, max, file, NULL, 0);
	struct sp_profile *p = sp_cli_read_profile(file);
	if (!p)
		return false;
	bool ok = true;
	for (size_t i = 0; i < p->n_modules; i++) {
		const struct sp_prof_module *m = &p->modules[i];
		const char *base = m->path ? strrchr(m->path, '/') : NULL;
		/* stackprof's own library is no part of the program */
		if (!base || m->path[0] != '/' || m->image || !m->build_id_len ||
		    (!all && sp_bidcache_is_system(m->path)) || !strcmp(base, "/libstackprof.so"))
			continue;
		/* a module gone since is no error: there is nothing to keep */
		if (access(m->path, F_OK) != 0)
			continue;
		ok &= sp_cache_add_one(dir, max, m->path, m->build_id, m->build_id_len);
	}
	sp_profile_free(p);
	return ok;
}

static int sp_cache_print(const struct sp_bidcache_entry *e, void *arg)
{
	uint64_t *total = arg;
	*total += e->size;
	printf("%s %12llu %s\n", e->build_id, (unsigned long long)e->size, e->path);
	return 0;
}

int sp_cmd_cache(int argc, char **argv)
{
	struct sp_cli_args a;
	bool all = false;
	int rc = SP_EXIT_USAGE, c;

	sp_cli_args_init(&a, &sp_cache_cmd, argc, argv);
	while ((c = sp_cli_next(&a)) > 0) {
		if (c == OPT_ALL)
			all = true;
	}
	if (c < 0) {
		rc = a.rc;
		goto out;
	}
	const char *verb = a.n_operands ? a.operands[0] : NULL;
	bool add = verb && !strcmp(verb, "add");
	if (!verb) {
		sp_cli_bad(&a, "expected add, list or clear");
		goto out;
	}
	if (!add && strcmp(verb, "list") && strcmp(verb, "clear")) {
		sp_cli_bad(&a, "'%s' is not add, list or clear", verb);
		goto out;
	}
	if (add && a.n_operands < 2) {
		sp_cli_bad(&a, "add wants a FILE or PROFILE");
		goto out;
	}
	if (!add && a.n_operands != 1) {
		sp_cli_bad(&a, "%s takes no operands", verb);
		goto out;
	}
	rc = SP_EXIT_ERROR;
	const char *dir = sp_cli_cache_dir();
	if (!dir) {
		sp_cli_error("cache: no cache directory: set STACKPROF_CACHE_DIR (or HOME)");
		goto out;
	}
	if (add) {
		uint64_t max = sp_cli_cache_max();
		bool ok = true;
		for (int i = 1; i < a.n_operands; i++)
			ok &= sp_cache_add(dir, max, a.operands[i], all);
		rc = sp_cli_finish_output(stdout, "-");
		if (rc == SP_EXIT_OK && !ok)
			rc = SP_EXIT_ERROR;
	} else if (!strcmp(verb, "list")) {
		uint64_t total = 0;
		int err = sp_bidcache_each(dir, sp_cache_print, &total);
		if (err < 0) {
			sp_cli_error("cache: %s: %s", dir, strerror(-err));
			goto out;
		}
		printf("%llu bytes in %s (bound %llu)\n", (unsigned long long)total, dir,
		       (unsigned long long)sp_cli_cache_max());
		rc = sp_cli_finish_output(stdout, "-");
	} else {
		int n = sp_bidcache_clear(dir);
		if (n < 0) {
			sp_cli_error("cache: %s: %s", dir, strerror(-n));
			goto out;
		}
		printf("removed %d cop%s from %s\n", n, n == 1 ? "y" : "ies", dir);
		/* and the host's timer figure: the next run measures it again */
		char host[4096];
		if (snprintf(host, sizeof(host), "%s/host-timer", dir) < (int)sizeof(host) &&
		    unlink(host) == 0)
			printf("removed the timer figure kept for this host (%s)\n", host);
		rc = sp_cli_finish_output(stdout, "-");
	}
out:
	sp_cli_args_release(&a);
	return rc;
}
