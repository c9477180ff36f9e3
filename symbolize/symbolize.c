/*
 * symbolize.c - the symbolizer: which module holds an address, the
 * per-address cache, fallbacks, and the frames handed out.
 *
 * Module records (what was mapped where) are cheap; the ELF file behind
 * them is opened on the first address that lands in it, and shared by every
 * record of the same path and build-id (a library dlopen'ed and dlclose'd
 * in a loop is opened once).
 */
#include "symbolize/symbolize.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/addrmap.h"
#include "symbolize/arena.h"
#include "symbolize/bidcache.h"
#include "symbolize/module.h"
#include "symbolize/rangemap.h"

/* An ELF object, opened on first use and shared by its mappings. */
struct sp_modfile {
	char *path; /* NULL for an image */
	uint8_t *build_id;
	size_t build_id_len;
	void *image; /* an image's bytes until it is opened */
	size_t image_len;
	const char *name;      /* basename, for frames and "name+0x..." */
	struct sp_module *mod; /* NULL until opened, or when unusable */
	bool tried;
	struct sp_addrmap unnamed; /* function start -> "name+0x<start>" */
};

/* One mapping of a file at a load bias. */
struct sp_modrec {
	uint64_t start;
	uint64_t end;
	uint64_t bias;
	struct sp_modfile *file;
};

struct sp_jit {
	uint64_t start;
	uint64_t end;
	const char *name;
};

struct sp_result {
	const struct sp_frame *frames;
	int n;
};

struct sp_symbolizer {
	unsigned flags;
	struct sp_modrec *mods;
	size_t n_mods;
	size_t mods_cap;
	struct sp_rangemap mod_map;
	bool mods_dirty;
	struct sp_modfile **files;
	size_t n_files;
	size_t files_cap;
	struct sp_addrmap file_by_key; /* hash of path and build-id -> file */
	struct sp_jit *jits;
	size_t n_jits;
	size_t jits_cap;
	struct sp_rangemap jit_map;
	bool jits_dirty;
	struct sp_addrmap cache[2]; /* [is_return_address]: address -> result */
	struct sp_arena arena;
	char *warnings;
	size_t warn_len;
	size_t warn_cap;
	char *cache_dir; /* the build-id cache, or NULL */
};

struct sp_symbolizer *sp_symbolizer_new(unsigned flags)
{
	struct sp_symbolizer *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->flags = flags;
	sp_arena_init(&s->arena);
	s->warnings = calloc(1, 1);
	if (!s->warnings) {
		free(s);
		return NULL;
	}
	s->warn_cap = 1;
	return s;
}

static void sp_modfile_free(struct sp_modfile *f)
{
	if (!f)
		return;
	sp_module_free(f->mod);
	free(f->path);
	free(f->build_id);
	free(f->image);
	sp_addrmap_release(&f->unnamed);
	free(f);
}

int sp_symbolizer_set_cache_dir(struct sp_symbolizer *s, const char *dir)
{
	char *copy = NULL;
	if (dir && !(copy = strdup(dir)))
		return -ENOMEM;
	free(s->cache_dir);
	s->cache_dir = copy;
	return 0;
}

void sp_symbolizer_free(struct sp_symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n_files; i++)
		sp_modfile_free(s->files[i]);
	free(s->files);
	free(s->mods);
	free(s->jits);
	sp_rangemap_release(&s->mod_map);
	sp_rangemap_release(&s->jit_map);
	sp_addrmap_release(&s->file_by_key);
	sp_addrmap_release(&s->cache[0]);
	sp_addrmap_release(&s->cache[1]);
	sp_arena_release(&s->arena);
	free(s->warnings);
	free(s->cache_dir);
	free(s);
}

const char *sp_symbolizer_warnings(const struct sp_symbolizer *s)
{
	return s->warnings;
}

static void sp_symbolizer_warn(struct sp_symbolizer *s, const char *what, const char *why)
{
	size_t need = s->warn_len + strlen(what) + strlen(why) + 4;
	/* a warning lost to allocation failure loses nothing else */
	if (sp_array_grow((void **)&s->warnings, &s->warn_cap, need, 1))
		return;
	s->warn_len += (size_t)sprintf(s->warnings + s->warn_len, "%s: %s\n", what, why);
}

/* Results cached before a module was added may now be wrong. */
static void sp_symbolizer_forget(struct sp_symbolizer *s)
{
	sp_addrmap_release(&s->cache[0]);
	sp_addrmap_release(&s->cache[1]);
}

static uint64_t sp_fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int sp_symbolizer_add_file(struct sp_symbolizer *s, struct sp_modfile *f)
{
	if (sp_array_grow((void **)&s->files, &s->files_cap, s->n_files + 1, sizeof(*s->files)))
		return -ENOMEM;
	s->files[s->n_files++] = f;
	return 0;
}

static int sp_symbolizer_add_rec(struct sp_symbolizer *s, struct sp_modfile *f, uint64_t start,
				 uint64_t end, uint64_t bias)
{
	if (sp_array_grow((void **)&s->mods, &s->mods_cap, s->n_mods + 1, sizeof(*s->mods)))
		return -ENOMEM;
	s->mods[s->n_mods++] = (struct sp_modrec){start, end, bias, f};
	s->mods_dirty = true;
	sp_symbolizer_forget(s);
	return 0;
}

static const char *sp_basename(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

int sp_symbolizer_add_module(struct sp_symbolizer *s, const char *path, uint64_t start,
			     uint64_t end, uint64_t bias, const uint8_t *build_id,
			     size_t build_id_len)
{
	if (!path || start >= end || (build_id_len && !build_id))
		return -EINVAL;
	/* /proc/pid/maps marks a file replaced while mapped; the name is what matters */
	static const char deleted[] = " (deleted)";
	size_t len = strlen(path), dl = sizeof(deleted) - 1;
	if (len > dl && !strcmp(path + len - dl, deleted))
		len -= dl;

	uint64_t key = sp_fnv(0xcbf29ce484222325ull, path, len);
	key = sp_fnv(key ^ 0xff, build_id, build_id_len);
	struct sp_modfile *f = sp_addrmap_get(&s->file_by_key, key);
	if (f && (strlen(f->path) != len || memcmp(f->path, path, len) ||
		  f->build_id_len != build_id_len ||
		  (build_id_len && memcmp(f->build_id, build_id, build_id_len))))
		f = NULL; /* a hash collision: this file gets its own record */
	if (!f) {
		f = calloc(1, sizeof(*f));
		if (!f)
			return -ENOMEM;
		f->path = strndup(path, len);
		f->build_id = build_id_len ? malloc(build_id_len) : NULL;
		if (!f->path || (build_id_len && !f->build_id) || sp_symbolizer_add_file(s, f)) {
			sp_modfile_free(f);
			return -ENOMEM;
		}
		if (build_id_len)
			memcpy(f->build_id, build_id, build_id_len);
		f->build_id_len = build_id_len;
		f->name = sp_basename(f->path);
		if (!sp_addrmap_get(&s->file_by_key, key) &&
		    sp_addrmap_put(&s->file_by_key, key, f))
			return -ENOMEM;
	}
	return sp_symbolizer_add_rec(s, f, start, end, bias);
}

int sp_symbolizer_add_image(struct sp_symbolizer *s, const char *name, const void *image,
			    size_t len, uint64_t start, uint64_t end, uint64_t bias)
{
	if (!name || !image || !len || start >= end)
		return -EINVAL;
	struct sp_modfile *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->image = malloc(len);
	char *copy = sp_arena_strdup(&s->arena, name);
	if (!f->image || !copy || sp_symbolizer_add_file(s, f)) {
		sp_modfile_free(f);
		return -ENOMEM;
	}
	memcpy(f->image, image, len);
	f->image_len = len;
	f->name = copy;
	return sp_symbolizer_add_rec(s, f, start, end, bias);
}

int sp_symbolizer_add_jit(struct sp_symbolizer *s, uint64_t start, uint64_t size, const char *name)
{
	if (!name || !size || start + size < start)
		return -EINVAL;
	const char *copy = sp_arena_strdup(&s->arena, name);
	if (!copy ||
	    sp_array_grow((void **)&s->jits, &s->jits_cap, s->n_jits + 1, sizeof(*s->jits)))
		return -ENOMEM;
	s->jits[s->n_jits++] = (struct sp_jit){start, start + size, copy};
	s->jits_dirty = true;
	sp_symbolizer_forget(s);
	return 0;
}

/* Rebuilds the address -> module map after additions; the last added wins. */
static int sp_symbolizer_maps(struct sp_symbolizer *s)
{
	if (s->mods_dirty) {
		struct sp_range *r = malloc((s->n_mods ? s->n_mods : 1) * sizeof(*r));
		if (!r)
			return -ENOMEM;
		for (size_t i = 0; i < s->n_mods; i++)
			r[i] = (struct sp_range){s->mods[i].start, s->mods[i].end, (uint32_t)i,
						 (uint32_t)i};
		int rc = sp_rangemap_build(&s->mod_map, r, s->n_mods);
		free(r);
		if (rc)
			return rc;
		s->mods_dirty = false;
	}
	if (s->jits_dirty) {
		struct sp_range *r = malloc((s->n_jits ? s->n_jits : 1) * sizeof(*r));
		if (!r)
			return -ENOMEM;
		for (size_t i = 0; i < s->n_jits; i++)
			r[i] = (struct sp_range){s->jits[i].start, s->jits[i].end, (uint32_t)i,
						 (uint32_t)i};
		int rc = sp_rangemap_build(&s->jit_map, r, s->n_jits);
		free(r);
		if (rc)
			return rc;
		s->jits_dirty = false;
	}
	return 0;
}

/*
 * The file at the recorded path is gone or rebuilt (rc, why): open the copy
 * the build-id cache keeps of that build instead. Reading it refreshes its
 * mtime, so the entries in use are the last evicted. Without a copy, why
 * says how to keep one next time.
 */
static int sp_modfile_open_cached(struct sp_symbolizer *s, struct sp_modfile *f, int rc, char *why,
				  size_t why_len)
{
	char path[4096], cwhy[256];
	size_t n = strlen(why);
	if (sp_bidcache_path(s->cache_dir, f->build_id, f->build_id_len, path, sizeof(path)) ||
	    access(path, R_OK) != 0) {
		snprintf(why + n, why_len - n,
			 "; no copy in the build-id cache (`stackprof run` keeps one of the "
			 "program's own binaries, `stackprof cache add` of any)");
		return rc;
	}
	int crc = sp_module_open(path, f->build_id, f->build_id_len, s->flags, &f->mod, cwhy,
				 sizeof(cwhy));
	if (crc == -ENOMEM)
		return crc;
	if (crc < 0) {
		snprintf(why + n, why_len - n, "; its copy in the build-id cache: %s", cwhy);
		return rc;
	}
	utimensat(AT_FDCWD, path, NULL, 0);
	/* not "not used": the names are right, so commands stay quiet and
	 * `stackprof info` says where they came from */
	if (rc == -ESTALE)
		snprintf(why, why_len,
			 "rebuilt since the run; read from the copy of that build in %.400s", path);
	else
		snprintf(why, why_len,
			 "gone since the run; read from the copy of that build in %.400s", path);
	return 0;
}

/* Opens a file on its first use; a file that cannot be used warns once. */
static int sp_modfile_open(struct sp_symbolizer *s, struct sp_modfile *f)
{
	if (f->tried)
		return 0;
	f->tried = true;
	char why[512];
	int rc;
	if (f->image) {
		rc = sp_module_open_image(f->image, f->image_len, s->flags, &f->mod, why,
					  sizeof(why));
		free(f->image);
		f->image = NULL;
	} else {
		rc = sp_module_open(f->path, f->build_id, f->build_id_len, s->flags, &f->mod, why,
				    sizeof(why));
		if (rc < 0 && rc != -ENOMEM && f->build_id_len && s->cache_dir)
			rc = sp_modfile_open_cached(s, f, rc, why, sizeof(why));
	}
	if (rc == -ENOMEM)
		return rc;
	if (why[0])
		sp_symbolizer_warn(s, f->path ? f->path : f->name, why);
	return 0;
}

/* "name+0x<offset>", one string per function start of a file. */
static const char *sp_modfile_unnamed(struct sp_symbolizer *s, struct sp_modfile *f,
				      uint64_t offset)
{
	const char *name = sp_addrmap_get(&f->unnamed, offset);
	if (name)
		return name;
	name = sp_arena_printf(&s->arena, "%s+0x%" PRIx64, f->name, offset);
	if (name && sp_addrmap_put(&f->unnamed, offset, (void *)name))
		return NULL;
	return name;
}

/* Resolves one address into arena-owned frames. */
static int sp_symbolizer_resolve(struct sp_symbolizer *s, uint64_t addr, uint64_t pc,
				 struct sp_result *res)
{
	int rc = sp_symbolizer_maps(s);
	if (rc)
		return rc;
	struct sp_frame *out;
	const struct sp_range *r = sp_rangemap_find(&s->jit_map, pc);
	if (r) {
		const struct sp_jit *j = &s->jits[r->id];
		if (!(out = sp_arena_alloc(&s->arena, sizeof(*out))))
			return -ENOMEM;
		*out = (struct sp_frame){
		    .func = j->name, .offset = pc - j->start, .kind = SP_FRAME_JIT};
		res->frames = out;
		res->n = 1;
		return 0;
	}
	r = sp_rangemap_find(&s->mod_map, pc);
	if (!r) {
		if (!(out = sp_arena_alloc(&s->arena, sizeof(*out))))
			return -ENOMEM;
		const char *name = sp_arena_printf(&s->arena, "0x%" PRIx64, addr);
		if (!name)
			return -ENOMEM;
		*out = (struct sp_frame){.func = name, .offset = addr, .kind = SP_FRAME_UNKNOWN};
		res->frames = out;
		res->n = 1;
		return 0;
	}
	const struct sp_modrec *m = &s->mods[r->id];
	struct sp_modfile *f = m->file;
	uint64_t vaddr = pc - m->bias;
	if ((rc = sp_modfile_open(s, f)))
		return rc;
	const struct sp_frame *mf;
	struct sp_frame unusable = {.offset = vaddr, .kind = SP_FRAME_UNNAMED};
	int n = 1;
	if (f->mod) {
		n = sp_module_lookup(f->mod, vaddr, &mf);
		if (n < 0)
			return n;
	} else {
		mf = &unusable;
	}
	if (!(out = sp_arena_alloc(&s->arena, (size_t)n * sizeof(*out))))
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		out[i] = mf[i];
		out[i].module = f->name;
		if (out[i].kind == SP_FRAME_UNNAMED &&
		    !(out[i].func = sp_modfile_unnamed(s, f, out[i].offset)))
			return -ENOMEM;
	}
	res->frames = out;
	res->n = n;
	return 0;
}

int sp_symbolizer_is_outermost(struct sp_symbolizer *s, uint64_t addr, bool is_return_address)
{
	if (sp_symbolizer_maps(s))
		return 0;
	uint64_t pc = is_return_address && addr ? addr - 1 : addr;
	const struct sp_range *r = sp_rangemap_find(&s->mod_map, pc);
	if (!r)
		return 0;
	const struct sp_modrec *m = &s->mods[r->id];
	if (sp_modfile_open(s, m->file) || !m->file->mod)
		return 0;
	return sp_module_is_outermost(m->file->mod, pc - m->bias) == 1;
}

int sp_symbolizer_lookup(struct sp_symbolizer *s, uint64_t addr, bool is_return_address,
			 const struct sp_frame **frames)
{
	struct sp_addrmap *cache = &s->cache[is_return_address];
	struct sp_result *res = sp_addrmap_get(cache, addr);
	if (!res) {
		res = sp_arena_alloc(&s->arena, sizeof(*res));
		if (!res)
			return -ENOMEM;
		/* a return address points after the call; the call is at addr-1 */
		uint64_t pc = is_return_address && addr ? addr - 1 : addr;
		int rc = sp_symbolizer_resolve(s, addr, pc, res);
		if (rc)
			return rc;
		if (sp_addrmap_put(cache, addr, res))
			return -ENOMEM;
	}
	*frames = res->frames;
	return res->n;
}

const char *sp_symbolizer_symbol(struct sp_symbolizer *s, uint64_t addr, uint64_t *start)
{
	if (sp_symbolizer_maps(s))
		return NULL;
	const struct sp_range *r = sp_rangemap_find(&s->mod_map, addr);
	if (!r)
		return NULL;
	const struct sp_modrec *m = &s->mods[r->id];
	if (sp_modfile_open(s, m->file) || !m->file->mod)
		return NULL;
	uint64_t st;
	const char *name = sp_module_symbol(m->file->mod, addr - m->bias, &st);
	if (name && start)
		*start = st + m->bias;
	return name;
}
