/*
 * model.c - symbolize a raw profile once and merge its stacks.
 *
 * The work is organised around three caches so that nothing is done per
 * sample that can be done per distinct thing:
 *   - each distinct (PC, is-return-address) is symbolized once (pc cache);
 *   - each distinct (thread root, range node, raw stack) becomes a model
 *     stack once (path cache), so the per-sample cost is one hash lookup;
 *   - frames and stacks are interned by content, so identical stacks merge
 *     even when they came from different raw stacks.
 */
#define _GNU_SOURCE /* qsort_r */
#include "export/model.h"
#include "format/pyline.h"
#include "symbolize/arena.h"
#include "export/htab.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A growable array of uint32_t. */
struct sp_u32v {
	uint32_t *v;
	size_t n, cap;
};

static int sp_u32v_push(struct sp_u32v *a, uint32_t x)
{
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 256;
		uint32_t *v = realloc(a->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		a->v = v;
		a->cap = cap;
	}
	a->v[a->n++] = x;
	return 0;
}

struct sp_pcent {
	uint64_t pc;
	bool ret;
	uint32_t loc; /* index into locs */
};

/* The path cache key: what fully determines a sample's model stack. */
struct sp_pathent {
	uint32_t thread; /* thread index + 1 when per-thread roots are on, else 0 */
	uint32_t range;
	uint32_t raw;	/* raw stack id */
	uint32_t stack; /* model stack index */
};

struct sp_builder {
	struct sp_model *m;
	const struct sp_model_opts *o;

	size_t frames_cap, stacks_cap, locs_cap, threads_cap, strs_cap;
	char **strs; /* strings the model owns (thread and range labels) */
	size_t n_strs;

	struct sp_htab frame_idx;
	struct sp_htab stack_idx;
	struct sp_htab pc_idx;
	struct sp_htab path_idx;
	struct sp_htab tid_idx;

	struct sp_pcent *pcs;
	size_t n_pcs, pcs_cap;
	struct sp_pathent *paths;
	size_t n_paths, paths_cap;

	/* Frame ids of all stacks and locations; pointers are fixed up at the end
	 * because the pools move while they grow. */
	struct sp_u32v pool;
	size_t *stack_off; /* per stack: offset of its frames, then its locs, in pool */
	size_t *loc_off;
	size_t stack_off_cap, loc_off_cap;

	struct sp_u32v cur;	 /* the stack being assembled: frame ids */
	struct sp_u32v cur_locs; /* and its locations (+1, 0 for synthetic) */

	const struct sp_mframe *probe_frame; /* lookup keys for the eq callbacks */
	const uint32_t *probe_ids;
	size_t probe_n;
	struct sp_pcent probe_pc;
	struct sp_pathent probe_path;
	int32_t probe_tid;

	uint32_t *range_frame;	 /* per raw range id: model frame, or UINT32_MAX if not made yet */
	struct sp_u32v chain;	 /* the sample's range ids, outermost first */
	signed char *range_keep; /* per raw range id: -1 unknown, 0 no, 1 inside opts->range */
	uint32_t *thread_frame;	 /* per thread index: model frame + 1 */
	size_t thread_frame_cap;
	uint32_t trunc_frame, unwerr_frame, unknown_frame; /* + 1, 0 until made */
	const char *interp; /* the module of the Python interpreter (basename), or NULL */
	char **pymod;	    /* per PYCODE record: its Python module name (model-owned), or NULL */
	size_t pymod_cap;
	const char **pyimport; /* per PYCODE record: its file's import path, or NULL */
	size_t pyimport_cap;
};

static bool sp_str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return a == b || !strcmp(a, b);
}

static uint64_t sp_frame_hash(const struct sp_mframe *f)
{
	uint64_t h = sp_hash_str(SP_HASH_SEED, f->func);
	h = sp_hash_str(h, f->file);
	h = sp_hash_str(h, f->module);
	return sp_hash_u64(h, ((uint64_t)f->line << 32) ^ (uint32_t)f->kind);
}

static bool sp_frame_eq(const void *ctx, uint32_t idx)
{
	const struct sp_builder *b = ctx;
	const struct sp_mframe *x = &b->m->frames[idx], *y = b->probe_frame;
	return x->line == y->line && x->def_line == y->def_line && x->kind == y->kind &&
	       sp_str_eq(x->func, y->func) && sp_str_eq(x->file, y->file) &&
	       sp_str_eq(x->module, y->module) && sp_str_eq(x->import_path, y->import_path);
}

/* Interns f (its strings must outlive the model); returns the frame id or -errno. */
static int64_t sp_frame_intern(struct sp_builder *b, const struct sp_mframe *f)
{
	uint64_t h = sp_frame_hash(f);
	b->probe_frame = f;
	int64_t id = sp_htab_find(&b->frame_idx, h, sp_frame_eq, b);
	if (id >= 0)
		return id;
	struct sp_model *m = b->m;
	if (sp_array_grow((void **)&m->frames, &b->frames_cap, m->n_frames + 1, sizeof(*m->frames)))
		return -ENOMEM;
	m->frames[m->n_frames] = *f;
	if (sp_htab_insert(&b->frame_idx, h, (uint32_t)m->n_frames))
		return -ENOMEM;
	return (int64_t)m->n_frames++;
}

/* Takes ownership of s (freed with the model). Returns s, or NULL on failure. */
static char *sp_model_own(struct sp_builder *b, char *s)
{
	if (!s)
		return NULL;
	if (sp_array_grow((void **)&b->strs, &b->strs_cap, b->n_strs + 1, sizeof(*b->strs))) {
		free(s);
		return NULL;
	}
	b->strs[b->n_strs++] = s;
	return s;
}

static int64_t sp_synth_frame(struct sp_builder *b, const char *func, int kind)
{
	struct sp_mframe f = {.func = func, .kind = kind};
	return sp_frame_intern(b, &f);
}

static const char *sp_basename(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

static int sp_add_modules(struct sp_builder *b)
{
	const struct sp_profile *p = b->m->prof;
	struct sp_symbolizer *sym = b->m->sym;
	char alt[4096];
	for (size_t i = 0; i < p->n_modules; i++) {
		const struct sp_prof_module *mod = &p->modules[i];
		const char *path = mod->path ? mod->path : "";
		int rc;
		if (mod->image && mod->image_len) {
			rc = sp_symbolizer_add_image(sym, sp_basename(path), mod->image,
						     mod->image_len, mod->start, mod->end,
						     mod->bias);
		} else {
			/* a profile copied off the machine it was taken on: look for
			 * the binaries where the user keeps them */
			if (b->o->search_dir && access(path, R_OK) != 0) {
				int n = snprintf(alt, sizeof(alt), "%s/%s", b->o->search_dir,
						 sp_basename(path));
				if (n > 0 && (size_t)n < sizeof(alt) && access(alt, R_OK) == 0)
					path = alt;
			}
			rc = sp_symbolizer_add_module(sym, path, mod->start, mod->end, mod->bias,
						      mod->build_id, mod->build_id_len);
		}
		if (rc == -ENOMEM)
			return rc;
	}
	for (size_t i = 0; i < p->n_jits; i++) {
		const struct sp_prof_jit *j = &p->jits[i];
		int rc = sp_symbolizer_add_jit(sym, j->start, j->size, j->name ? j->name : "");
		if (rc == -ENOMEM)
			return rc;
	}
	return 0;
}

/* Whether the n bytes at s name a versioned source directory: "python3.11-3.11.2", "glibc-2.36". */
static bool sp_versioned_dir(const char *s, size_t n)
{
	for (size_t i = 1; i + 1 < n; i++)
		if (s[i] == '-' && s[i + 1] >= '0' && s[i + 1] <= '9')
			return true;
	return false;
}

/* Past a build tree's root: ROOT/first-segment/[versioned-dir/...]. */
static const char *sp_past_build_root(const char *path)
{
	static const char *const roots[] = {"/build/", "/builddir/build/BUILD/", "/usr/src/debug/",
					    "/usr/src/"};
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		size_t n = strlen(roots[i]);
		if (strncmp(path, roots[i], n))
			continue;
		const char *p = path + n, *slash = strchr(p, '/');
		if (!slash || slash == p)
			return path;
		p = slash + 1;
		while ((slash = strchr(p, '/')) && sp_versioned_dir(p, (size_t)(slash - p)))
			p = slash + 1;
		/* "build-static/../Python/ceval.c": a build directory stepped out of */
		while ((slash = strchr(p, '/')) && !strncmp(slash, "/../", 4) && slash != p &&
		       strncmp(p, "../", 3))
			p = slash + 4;
		return *p ? p : path;
	}
	return path;
}

const char *sp_model_short_path(const struct sp_model_opts *o, const char *path)
{
	if (!path || !o)
		return path;
	for (size_t i = 0; i < o->n_strip_prefixes; i++) {
		const char *pre = o->strip_prefixes[i];
		size_t n = strlen(pre);
		while (n > 1 && pre[n - 1] == '/')
			n--;
		/* a whole directory: "/src" strips "/src/a.c", not "/srcx/a.c" */
		if (n && !strncmp(path, pre, n) && (path[n] == '/' || pre[n - 1] == '/') &&
		    path[n + (path[n] == '/')])
			return path + n + (path[n] == '/');
	}
	if (!o->short_paths)
		return path;
	if (path[0] == '.') {
		/* glibc's "./nptl/./nptl/x.c", "./csu/../csu/x.c": after the last dot segment */
		const char *p = path, *q;
		while ((q = strstr(p, "./")) && (q == path || q[-1] == '/' || q[-1] == '.'))
			p = q + 2;
		return *p ? p : path;
	}
	const char *p = sp_past_build_root(path);
	if (p != path)
		return p;
	/* Python: a package as it is imported ("torch/nn/modules/conv.py"),
	 * a module of the standard library by its name ("threading.py") */
	static const char *const py_roots[] = {"/site-packages/", "/dist-packages/"};
	for (size_t i = 0; i < sizeof(py_roots) / sizeof(py_roots[0]); i++) {
		const char *q = strstr(path, py_roots[i]);
		if (q && q[strlen(py_roots[i])])
			return q + strlen(py_roots[i]);
	}
	/* the standard library by its import path too ("threading.py",
	 * "concurrent/futures/thread.py"): Python files only */
	const char *lib = strstr(path, "/lib/python3");
	size_t len = strlen(path);
	if (lib && (p = strchr(lib + 12, '/')) && p[1] && len > 3 && !strcmp(path + len - 3, ".py"))
		return p + 1;
	static char cwd[4096];
	static bool have_cwd;
	if (!have_cwd) {
		have_cwd = true;
		if (!getcwd(cwd, sizeof(cwd)) || !strcmp(cwd, "/"))
			cwd[0] = '\0';
	}
	size_t n = strlen(cwd);
	if (n && !strncmp(path, cwd, n) && path[n] == '/' && path[n + 1])
		return path + n + 1;
	return path;
}

static bool sp_tid_eq(const void *ctx, uint32_t idx)
{
	const struct sp_builder *b = ctx;
	return b->m->threads[idx].tid == b->probe_tid;
}

/* Returns the thread index for tid, adding an unnamed thread if new; -errno. */
static int64_t sp_thread_index(struct sp_builder *b, int32_t tid)
{
	uint64_t h = sp_hash_u64(SP_HASH_SEED, (uint32_t)tid);
	b->probe_tid = tid;
	int64_t i = sp_htab_find(&b->tid_idx, h, sp_tid_eq, b);
	if (i >= 0)
		return i;
	struct sp_model *m = b->m;
	if (sp_array_grow((void **)&m->threads, &b->threads_cap, m->n_threads + 1,
			  sizeof(*m->threads)))
		return -ENOMEM;
	m->threads[m->n_threads] = (struct sp_mthread){.tid = tid, .name = ""};
	if (sp_htab_insert(&b->tid_idx, h, (uint32_t)m->n_threads))
		return -ENOMEM;
	return (int64_t)m->n_threads++;
}

static int sp_add_threads(struct sp_builder *b)
{
	const struct sp_profile *p = b->m->prof;
	for (size_t i = 0; i < p->n_threads; i++) {
		int64_t t = sp_thread_index(b, p->threads[i].tid);
		if (t < 0)
			return (int)t;
		/* a thread renamed later (pthread_setname_np) keeps its last name */
		if (p->threads[i].name && p->threads[i].name[0])
			b->m->threads[t].name = p->threads[i].name;
	}
	return 0;
}

static bool sp_tid_wanted(const struct sp_model_opts *o, int32_t tid)
{
	if (!o->n_tids)
		return true;
	for (size_t i = 0; i < o->n_tids; i++)
		if (o->tids[i] == tid)
			return true;
	return false;
}

/* Whether range node id or one of its parents is named o->range. */
static bool sp_range_wanted(struct sp_builder *b, uint32_t id)
{
	const struct sp_profile *p = b->m->prof;
	if (!b->o->range)
		return true;
	uint32_t depth = 0;
	for (uint32_t r = id; r && r <= p->n_ranges; r = p->ranges[r - 1].parent) {
		const char *name = p->ranges[r - 1].name;
		if (b->range_keep[r] == 1 || (name && !strcmp(name, b->o->range))) {
			b->range_keep[id] = 1;
			return true;
		}
		if (b->range_keep[r] == 0)
			break;
		/* a corrupt parent chain must not loop forever */
		if (++depth > p->n_ranges)
			break;
	}
	b->range_keep[id] = 0;
	return false;
}

static bool sp_pc_eq(const void *ctx, uint32_t idx)
{
	const struct sp_builder *b = ctx;
	return b->pcs[idx].pc == b->probe_pc.pc && b->pcs[idx].ret == b->probe_pc.ret;
}

/* file's path from the outermost package directory above it (one holding
 * an __init__.py), or its basename if it is in none. */
static const char *sp_package_path(const char *file)
{
	const char *top = sp_basename(file);
	if (file[0] != '/')
		return top;
	char probe[4096];
	while (top > file + 1) {
		size_t dir = (size_t)(top - 1 - file); /* file[0, dir) is top's directory */
		if (dir + sizeof("/__init__.py") > sizeof(probe))
			break;
		memcpy(probe, file, dir);
		memcpy(probe + dir, "/__init__.py", sizeof("/__init__.py"));
		if (access(probe, F_OK) != 0)
			break;
		const char *up = top - 1;
		while (up > file && up[-1] != '/')
			up--;
		/* "pk/./m.py", "pk/../m.py": not a package's name */
		if (up[0] == '.' && (up[1] == '/' || (up[1] == '.' && up[2] == '/')))
			break;
		top = up;
	}
	return top;
}

const char *sp_model_python_path(const char *file)
{
	static const char *const roots[] = {"/site-packages/", "/dist-packages/"};
	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		const char *q = strstr(file, roots[i]);
		if (q)
			return q + strlen(roots[i]);
	}
	const char *lib = strstr(file, "/lib/python3");
	if (lib && strchr(lib + 12, '/'))
		return strchr(lib + 12, '/') + 1;
	return file[0] == '<' ? file : sp_package_path(file);
}

/*
 * A Python file's module, as Python would name it, from its import path
 * (sp_model_python_path): without .py, dots for slashes
 * ("torch.nn.modules.conv", "threading"); a pseudo-file ("<string>") as
 * it is. malloc'd.
 */
static char *sp_python_module(const char *import_path)
{
	char *m = strdup(import_path);
	if (!m)
		return NULL;
	size_t n = strlen(m);
	if (n > 3 && !strcmp(m + n - 3, ".py"))
		m[n -= 3] = '\0';
	if (n > 9 && !strcmp(m + n - 9, "/__init__"))
		m[n -= 9] = '\0';
	if (m[0] != '<')
		for (char *c = m; *c; c++)
			if (*c == '/')
				*c = '.';
	return m;
}

/*
 * The frame a Python word of a stack stands for (format/profile.h): its
 * code object's qualname, file and the line its instruction belongs to,
 * from the code's own line table. A code the sampler could not read, or
 * whose record is missing (a cut-off profile), is a frame of its own, named
 * as such: never guessed. *def_line gets its first line, *import_path its
 * file's import path (NULL where whole paths were asked for).
 */
static struct sp_frame sp_python_frame(struct sp_builder *b, uint64_t word, unsigned *def_line,
				       const char **import_path)
{
	struct sp_frame f = {.func = "[unreadable Python frame]", .kind = SP_FRAME_FUNC};
	uint32_t id = sp_pyframe_code(word), instr = sp_pyframe_instr(word);
	const struct sp_prof_pycode *c = id ? sp_profile_pycode(b->m->prof, id) : NULL;
	if (!c) {
		if (id)
			f.func = "[Python code not recorded]";
		return f;
	}
	f.func = c->qualname && c->qualname[0] ? c->qualname : c->name ? c->name : "[unnamed code]";
	f.file = c->filename;
	if (c->filename && (b->o->sym_flags & SP_SYM_BASENAMES))
		f.file = sp_basename(c->filename); /* as the symbolizer does for native files */
	*def_line = c->firstlineno > 0 ? (unsigned)c->firstlineno : 0;
	if (c->filename) {
		/* once per code record (the import path may look for __init__.py
		 * files): the import path, and the module string made from it,
		 * owned by the model */
		size_t idx = (size_t)(c - b->m->prof->pycodes), n = b->m->prof->n_pycodes;
		if (!sp_array_grow((void **)&b->pymod, &b->pymod_cap, n, sizeof(*b->pymod)) &&
		    !sp_array_grow((void **)&b->pyimport, &b->pyimport_cap, n,
				   sizeof(*b->pyimport))) {
			if (!b->pyimport[idx])
				b->pyimport[idx] = sp_model_python_path(c->filename);
			if (!b->pymod[idx])
				b->pymod[idx] = sp_model_own(b, sp_python_module(b->pyimport[idx]));
			f.module = b->pymod[idx];
			if (!b->o->whole_paths)
				*import_path = b->pyimport[idx];
		}
	}
	int line;
	if (instr != SP_PYFRAME_NO_INSTR &&
	    sp_pyline_addr2line(c->minor, c->linetable, c->linetable_len, c->firstlineno, instr,
				&line) == 0 &&
	    line > 0)
		f.line = (unsigned)line;
	return f;
}

/* Symbolizes pc once; returns the location index or -errno. */
static int64_t sp_pc_loc(struct sp_builder *b, uint64_t pc, bool ret)
{
	uint64_t h = sp_hash_u64(SP_HASH_SEED + ret, pc);
	b->probe_pc.pc = pc;
	b->probe_pc.ret = ret;
	int64_t i = sp_htab_find(&b->pc_idx, h, sp_pc_eq, b);
	if (i >= 0)
		return b->pcs[i].loc;

	struct sp_model *m = b->m;
	const struct sp_frame *fr;
	struct sp_frame py;
	unsigned py_def_line = 0;
	const char *py_import = NULL;
	int n = 1;
	if (sp_pc_is_pyframe(pc)) {
		py = sp_python_frame(b, pc, &py_def_line, &py_import);
		fr = &py;
	} else {
		n = sp_symbolizer_lookup(m->sym, pc, ret, &fr);
	}
	if (n < 0)
		return n;
	if (sp_array_grow((void **)&m->locs, &b->locs_cap, m->n_locs + 1, sizeof(*m->locs)) ||
	    sp_array_grow((void **)&b->loc_off, &b->loc_off_cap, m->n_locs + 1,
			  sizeof(*b->loc_off)))
		return -ENOMEM;
	struct sp_mloc *loc = &m->locs[m->n_locs];
	loc->addr = pc;
	loc->module = -1;
	loc->n = (uint32_t)(n > 0 ? n : 1);
	loc->frames = NULL;
	b->loc_off[m->n_locs] = b->pool.n;
	/* the symbolizer gives the innermost inlined frame first; stacks are root first */
	for (int k = n - 1; k >= 0; k--) {
		struct sp_mframe f = {
		    .func = fr[k].func ? fr[k].func : "[unknown]",
		    .file = sp_model_short_path(b->o, fr[k].file),
		    .line = fr[k].line,
		    .module = fr[k].module,
		    .def_line = fr == &py ? py_def_line : 0,
		    .import_path = fr == &py ? py_import : NULL,
		    .offset = fr[k].offset,
		    .kind = fr == &py ? SP_MFRAME_PYTHON : (int)fr[k].kind,
		};
		int64_t id = sp_frame_intern(b, &f);
		if (id < 0 || sp_u32v_push(&b->pool, (uint32_t)id))
			return -ENOMEM;
	}
	if (n == 0) {
		int64_t id = sp_synth_frame(b, "[unknown]", SP_FRAME_UNKNOWN);
		if (id < 0 || sp_u32v_push(&b->pool, (uint32_t)id))
			return -ENOMEM;
	}

	if (sp_array_grow((void **)&b->pcs, &b->pcs_cap, b->n_pcs + 1, sizeof(*b->pcs)))
		return -ENOMEM;
	b->pcs[b->n_pcs] = (struct sp_pcent){.pc = pc, .ret = ret, .loc = (uint32_t)m->n_locs};
	if (sp_htab_insert(&b->pc_idx, h, (uint32_t)b->n_pcs))
		return -ENOMEM;
	b->n_pcs++;
	return (int64_t)m->n_locs++;
}

static int sp_push_frame(struct sp_builder *b, uint32_t frame, uint32_t loc1)
{
	if (sp_u32v_push(&b->cur, frame) || sp_u32v_push(&b->cur_locs, loc1))
		return -ENOMEM;
	return 0;
}

/* Collects range id's chain into b->chain, outermost first (a chain
 * longer than the file's ranges loops: it is cut there). */
static int sp_range_chain(struct sp_builder *b, uint32_t id)
{
	const struct sp_profile *p = b->m->prof;
	b->chain.n = 0;
	for (; id && id <= p->n_ranges && b->chain.n < p->n_ranges; id = p->ranges[id - 1].parent)
		if (sp_u32v_push(&b->chain, id))
			return -ENOMEM;
	for (size_t i = 0, j = b->chain.n; i + 1 < j; i++, j--) {
		uint32_t t = b->chain.v[i];
		b->chain.v[i] = b->chain.v[j - 1];
		b->chain.v[j - 1] = t;
	}
	return 0;
}

static int sp_push_range(struct sp_builder *b, uint32_t id)
{
	if (b->range_frame[id] == UINT32_MAX) {
		const char *name = b->m->prof->ranges[id - 1].name;
		int64_t f =
		    sp_synth_frame(b, name && name[0] ? name : "[unnamed range]", SP_MFRAME_RANGE);
		if (f < 0)
			return (int)f;
		b->range_frame[id] = (uint32_t)f;
	}
	return sp_push_frame(b, b->range_frame[id], 0);
}

/* Where a sample's stack stands while its frames are pushed from the root:
 * the raw frames passed, and the next range of the chain to place. */
struct sp_place {
	uint32_t native, python;
	size_t next;
};

/*
 * Pushes the chain's ranges whose place the stack has reached (all of
 * them when all is set): each just inside the frame that pushed it
 * (SP_ANCHOR_*, format/profile.h), in nesting order, so a range never
 * goes outside the one that holds it.
 */
static int sp_place_ranges(struct sp_builder *b, struct sp_place *pl, bool all)
{
	const struct sp_profile *p = b->m->prof;
	for (; pl->next < b->chain.n; pl->next++) {
		uint32_t id = b->chain.v[pl->next];
		uint32_t a = p->ranges[id - 1].anchor;
		uint32_t at = (a & SP_ANCHOR_PYTHON) ? pl->python : pl->native;
		if (!all && at < SP_ANCHOR_FRAMES(a))
			break;
		int rc = sp_push_range(b, id);
		if (rc)
			return rc;
	}
	return 0;
}

static uint64_t sp_ids_hash(const uint32_t *ids, size_t n)
{
	return sp_hash_bytes(SP_HASH_SEED, ids, n * sizeof(*ids));
}

static bool sp_stack_eq(const void *ctx, uint32_t idx)
{
	const struct sp_builder *b = ctx;
	size_t off = b->stack_off[idx];
	return b->m->stacks[idx].n == b->probe_n &&
	       !memcmp(b->pool.v + off, b->probe_ids, b->probe_n * sizeof(uint32_t));
}

/* Interns b->cur as a model stack; returns its index or -errno. */
static int64_t sp_stack_intern(struct sp_builder *b)
{
	uint64_t h = sp_ids_hash(b->cur.v, b->cur.n);
	b->probe_ids = b->cur.v;
	b->probe_n = b->cur.n;
	int64_t i = sp_htab_find(&b->stack_idx, h, sp_stack_eq, b);
	if (i >= 0)
		return i;
	struct sp_model *m = b->m;
	if (sp_array_grow((void **)&m->stacks, &b->stacks_cap, m->n_stacks + 1,
			  sizeof(*m->stacks)) ||
	    sp_array_grow((void **)&b->stack_off, &b->stack_off_cap, m->n_stacks + 1,
			  sizeof(size_t)))
		return -ENOMEM;
	b->stack_off[m->n_stacks] = b->pool.n;
	for (size_t k = 0; k < b->cur.n; k++)
		if (sp_u32v_push(&b->pool, b->cur.v[k]))
			return -ENOMEM;
	for (size_t k = 0; k < b->cur.n; k++)
		if (sp_u32v_push(&b->pool, b->cur_locs.v[k]))
			return -ENOMEM;
	m->stacks[m->n_stacks] = (struct sp_mstack){.n = (uint32_t)b->cur.n};
	if (sp_htab_insert(&b->stack_idx, h, (uint32_t)m->n_stacks))
		return -ENOMEM;
	return (int64_t)m->n_stacks++;
}

/* Pushes the synthetic frame name (made once, its id + 1 kept in *frame). */
static int sp_push_marker(struct sp_builder *b, uint32_t *frame, const char *name, int kind)
{
	if (!*frame) {
		int64_t f = sp_synth_frame(b, name, kind);
		if (f < 0)
			return (int)f;
		*frame = (uint32_t)f + 1;
	}
	return sp_push_frame(b, *frame - 1, 0);
}

/* A frame of one of CPython's built-in extension modules (its Modules/
 * directory: _blake2, _sre, _json, time, math...), which an interpreter
 * with the modules linked in holds beside its own machinery. */
static bool sp_is_builtin_module(const char *file)
{
	if (!file)
		return false;
	const char *p = strstr(file, "Modules/");
	return p && (p == file || p[-1] == '/');
}

/*
 * The interpreter's own frames between Python frames, and after the
 * innermost one, are its machinery (the eval loop, calls, arithmetic on
 * its objects): they come out, so each Python line holds the time spent
 * running it. Frames of other modules (C extensions, torch, libc) stay,
 * and so do those of the extension modules built into the interpreter,
 * when its debug info names their files: hashlib.blake2b's compression
 * is not the calling line's own time. Below the innermost Python frame,
 * everything such a module calls stays too (the work it asked for).
 */
static void sp_fold_plumbing(struct sp_builder *b)
{
	const struct sp_model *m = b->m;
	size_t last_py = b->cur.n;
	for (size_t i = 0; i < b->cur.n; i++)
		if (m->frames[b->cur.v[i]].kind == SP_MFRAME_PYTHON)
			last_py = i;
	if (last_py == b->cur.n)
		return;
	size_t out = 0;
	bool in_python = false, in_builtin = false;
	for (size_t i = 0; i < b->cur.n; i++) {
		const struct sp_mframe *f = &m->frames[b->cur.v[i]];
		if (f->kind == SP_MFRAME_PYTHON)
			in_python = true;
		else if (in_python && f->kind < SP_MFRAME_RANGE && f->module &&
			 !strcmp(f->module, b->interp)) {
			bool builtin = sp_is_builtin_module(f->file);
			in_builtin |= builtin && i > last_py;
			if (!in_builtin && !builtin)
				continue;
		}
		b->cur.v[out] = b->cur.v[i];
		b->cur_locs.v[out] = b->cur_locs.v[i];
		out++;
	}
	b->cur.n = out;
	b->cur_locs.n = out;
}

/* Builds the model stack for (thread, range, raw stack) into b->cur and interns it. */
static int64_t sp_make_stack(struct sp_builder *b, uint32_t thread, uint32_t range,
			     const struct sp_prof_stack *raw)
{
	struct sp_model *m = b->m;
	b->cur.n = 0;
	b->cur_locs.n = 0;
	int rc;

	if (b->o->per_thread) {
		if (!b->thread_frame[thread]) {
			char tmp[256];
			char *label =
			    strdup(sp_model_thread_label(&m->threads[thread], tmp, sizeof(tmp)));
			if (!sp_model_own(b, label))
				return -ENOMEM;
			int64_t f = sp_synth_frame(b, label, SP_MFRAME_THREAD);
			if (f < 0)
				return f;
			b->thread_frame[thread] = (uint32_t)f + 1;
		}
		if ((rc = sp_push_frame(b, b->thread_frame[thread] - 1, 0)))
			return rc;
	}
	/* a stack whose outer frames are missing must not look like a thread
	 * root of its own: a marker root says why it ends there, and comes
	 * before its ranges, which are then not a root either */
	if (raw && (raw->flags & SP_STACK_TRUNCATED) &&
	    (rc = sp_push_marker(b, &b->trunc_frame, "[truncated]", SP_MFRAME_TRUNC)))
		return rc;
	if (raw && (raw->flags & SP_STACK_UNWIND_ERR) && !(raw->flags & SP_STACK_TRUNCATED) &&
	    (rc = sp_push_marker(b, &b->unwerr_frame, "[unwind error]", SP_MFRAME_UNWERR)))
		return rc;
	/* Ranges go where they were pushed. Without the stack's root (cut
	 * off at max depth, or an unwind that stopped early) no place can be
	 * counted: they go at the top, under the marker. */
	struct sp_place pl = {0, 0, 0};
	b->chain.n = 0;
	if (!b->o->no_ranges && (rc = sp_range_chain(b, range)))
		return rc;
	if ((rc = sp_place_ranges(
		 b, &pl, !raw || (raw->flags & (SP_STACK_TRUNCATED | SP_STACK_UNWIND_ERR)))))
		return rc;
	uint32_t depth = raw ? raw->depth : 0;
	for (uint32_t i = depth; i-- > 0;) {
		/* pcs[0] is where the thread was interrupted; the rest return addresses */
		int64_t loc = sp_pc_loc(b, raw->pcs[i], i != 0);
		bool entry_is_py = sp_pc_is_pyframe(raw->pcs[i]);
		if (loc < 0)
			return loc;
		size_t off = b->loc_off[loc];
		/* The Python frames an eval call ran follow its native frame:
		 * they go right after the function itself, before the frames
		 * inlined at its call site (the call machinery they called). */
		uint32_t split = m->locs[loc].n;
		if (i > 0 && sp_pc_is_pyframe(raw->pcs[i - 1]) && !sp_pc_is_pyframe(raw->pcs[i]))
			split = 1;
		for (uint32_t k = 0; k < split; k++)
			if ((rc = sp_push_frame(b, b->pool.v[off + k], (uint32_t)loc + 1)))
				return rc;
		for (; split < m->locs[loc].n && i > 0 && sp_pc_is_pyframe(raw->pcs[i - 1]); i--) {
			int64_t py = sp_pc_loc(b, raw->pcs[i - 1], true);
			if (py < 0)
				return py;
			if ((rc = sp_push_frame(b, b->pool.v[b->loc_off[py]], (uint32_t)py + 1)))
				return rc;
			pl.python++;
			if ((rc = sp_place_ranges(b, &pl, false)))
				return rc;
		}
		for (uint32_t k = split; k < m->locs[loc].n; k++)
			if ((rc = sp_push_frame(b, b->pool.v[off + k], (uint32_t)loc + 1)))
				return rc;
		if (entry_is_py)
			pl.python++;
		else
			pl.native++;
		if ((rc = sp_place_ranges(b, &pl, false)))
			return rc;
	}
	/* a range whose frame this stack doesn't reach holds its innermost frames */
	if ((rc = sp_place_ranges(b, &pl, true)))
		return rc;
	if (b->interp && !b->o->python_plumbing)
		sp_fold_plumbing(b);
	if (b->cur.n == 0 || depth == 0) {
		/* a sample with no frames still counts: show where time went missing */
		if (!b->unknown_frame) {
			int64_t f = sp_synth_frame(b, "[unknown]", SP_FRAME_UNKNOWN);
			if (f < 0)
				return f;
			b->unknown_frame = (uint32_t)f + 1;
		}
		if ((rc = sp_push_frame(b, b->unknown_frame - 1, 0)))
			return rc;
	}
	return sp_stack_intern(b);
}

static bool sp_path_eq(const void *ctx, uint32_t idx)
{
	const struct sp_builder *b = ctx;
	const struct sp_pathent *x = &b->paths[idx], *y = &b->probe_path;
	return x->thread == y->thread && x->range == y->range && x->raw == y->raw;
}

static int64_t sp_sample_stack(struct sp_builder *b, uint32_t thread,
			       const struct sp_prof_sample *s)
{
	struct sp_pathent key = {
	    .thread = b->o->per_thread ? thread + 1 : 0,
	    .range = b->o->no_ranges ? 0 : s->range,
	    .raw = s->stack,
	};
	uint64_t h =
	    sp_hash_u64(sp_hash_u64(sp_hash_u64(SP_HASH_SEED, key.thread), key.range), key.raw);
	b->probe_path = key;
	int64_t i = sp_htab_find(&b->path_idx, h, sp_path_eq, b);
	if (i >= 0)
		return b->paths[i].stack;
	int64_t st = sp_make_stack(b, thread, key.range, sp_profile_stack(b->m->prof, s->stack));
	if (st < 0)
		return st;
	if (sp_array_grow((void **)&b->paths, &b->paths_cap, b->n_paths + 1, sizeof(*b->paths)))
		return -ENOMEM;
	key.stack = (uint32_t)st;
	b->paths[b->n_paths] = key;
	if (sp_htab_insert(&b->path_idx, h, (uint32_t)b->n_paths))
		return -ENOMEM;
	b->n_paths++;
	return st;
}

/* Sets frames, locs and module pointers once the pools stopped moving. */
static void sp_model_fixup(struct sp_builder *b)
{
	struct sp_model *m = b->m;
	const struct sp_profile *p = m->prof;
	for (size_t i = 0; i < m->n_stacks; i++) {
		m->stacks[i].frames = b->pool.v + b->stack_off[i];
		m->stacks[i].locs = b->pool.v + b->stack_off[i] + m->stacks[i].n;
	}
	for (size_t i = 0; i < m->n_locs; i++) {
		struct sp_mloc *l = &m->locs[i];
		l->frames = b->pool.v + b->loc_off[i];
		for (size_t k = 0; k < p->n_modules; k++)
			if (l->addr >= p->modules[k].start && l->addr < p->modules[k].end) {
				l->module = (int32_t)k;
				break;
			}
	}
}

struct sp_model *sp_model_build(const struct sp_profile *prof, const struct sp_model_opts *opts)
{
	static const struct sp_model_opts defaults;
	struct sp_builder b;
	int err = -ENOMEM;
	memset(&b, 0, sizeof(b));
	b.o = opts ? opts : &defaults;
	b.m = calloc(1, sizeof(*b.m));
	if (!b.m)
		goto out;
	struct sp_model *m = b.m;
	m->prof = prof;
	m->sym = sp_symbolizer_new(b.o->sym_flags);
	b.range_frame = malloc((prof->n_ranges + 1) * sizeof(*b.range_frame));
	b.range_keep = malloc(prof->n_ranges + 1);
	if (!m->sym || !b.range_frame || !b.range_keep ||
	    sp_symbolizer_set_cache_dir(m->sym, b.o->cache_dir))
		goto out;
	memset(b.range_frame, 0xff, (prof->n_ranges + 1) * sizeof(*b.range_frame));
	memset(b.range_keep, -1, prof->n_ranges + 1);

	/* the interpreter's module, by the basename frames carry */
	for (size_t i = prof->n_pyinfos; i-- > 0;)
		if (prof->pyinfos[i].module && prof->pyinfos[i].module[0]) {
			b.interp = sp_basename(prof->pyinfos[i].module);
			break;
		}
	if ((err = sp_add_modules(&b)) || (err = sp_add_threads(&b)))
		goto out;
	err = -ENOMEM;
	m->samples = malloc((prof->n_samples ? prof->n_samples : 1) * sizeof(*m->samples));
	if (!m->samples)
		goto out;

	/* cpu is every profile's kind, even one put together without the
	 * reader (and so without its events[0]) */
	m->event = sp_profile_event_named(prof, b.o->event ? b.o->event : "cpu");
	if (!m->event && (!b.o->event || !strcmp(b.o->event, "cpu")))
		m->event = sp_prof_event_builtin(SP_EVENT_CPU);
	m->windowed = prof->n_windows && !b.o->all_samples;
	m->module_classes = !b.o->module_bare;
	for (size_t i = 0; i < prof->n_samples; i++) {
		const struct sp_prof_sample *s = &prof->samples[i];
		if (!m->event || s->event != m->event->id)
			continue; /* another kind: its unit is not this one's */
		if (!sp_tid_wanted(b.o, s->tid))
			continue;
		if (s->range > prof->n_ranges)
			continue; /* a corrupt record: there is no such range */
		if (b.o->range && !sp_range_wanted(&b, s->range))
			continue;
		if (prof->n_windows && !b.o->all_samples && !sp_profile_window(prof, s->time_ns)) {
			m->outside_windows++;
			continue;
		}
		int64_t t = sp_thread_index(&b, s->tid);
		if (t < 0 || sp_array_grow((void **)&b.thread_frame, &b.thread_frame_cap,
					   m->n_threads + 1, sizeof(*b.thread_frame))) {
			err = -ENOMEM;
			goto out;
		}
		int64_t st = sp_sample_stack(&b, (uint32_t)t, s);
		if (st < 0) {
			err = (int)st;
			goto out;
		}
		m->stacks[st].weight_ns += s->weight_ns;
		m->stacks[st].samples++;
		m->threads[t].weight_ns += s->weight_ns;
		m->threads[t].samples++;
		m->total_weight_ns += s->weight_ns;
		m->total_samples++;
		m->samples[m->n_samples++] = (struct sp_msample){
		    .thread = (uint32_t)t,
		    .stack = (uint32_t)st,
		    .range = s->range,
		    .time_ns = s->time_ns,
		    .weight_ns = s->weight_ns,
		};
	}
	sp_model_fixup(&b);
	m->pool_ = b.pool.v;
	b.pool.v = NULL;
	m->strs_ = b.strs;
	m->n_strs_ = b.n_strs;
	b.strs = NULL;
	b.n_strs = 0;
	err = 0;
out:
	for (size_t i = 0; i < b.n_strs; i++)
		free(b.strs[i]);
	free(b.strs);
	sp_htab_release(&b.frame_idx);
	sp_htab_release(&b.stack_idx);
	sp_htab_release(&b.pc_idx);
	sp_htab_release(&b.path_idx);
	sp_htab_release(&b.tid_idx);
	free(b.pcs);
	free(b.paths);
	free(b.pool.v);
	free(b.stack_off);
	free(b.loc_off);
	free(b.cur.v);
	free(b.cur_locs.v);
	free(b.range_frame);
	free(b.chain.v);
	free(b.range_keep);
	free(b.pymod);
	free(b.pyimport);
	free(b.thread_frame);
	if (err) {
		sp_model_free(b.m);
		errno = -err;
		return NULL;
	}
	return b.m;
}

void sp_model_free(struct sp_model *m)
{
	if (!m)
		return;
	sp_symbolizer_free(m->sym);
	for (size_t i = 0; i < m->n_strs_; i++)
		free(m->strs_[i]);
	free(m->strs_);
	free(m->pool_);
	free(m->frames);
	free(m->stacks);
	free(m->samples);
	free(m->threads);
	free(m->locs);
	free(m);
}

char *sp_model_thread_label(const struct sp_mthread *t, char *out, size_t len)
{
	if (t->name && t->name[0])
		snprintf(out, len, "%s-%d", t->name, (int)t->tid);
	else
		snprintf(out, len, "%d", (int)t->tid);
	return out;
}

const char *sp_model_unit(const struct sp_model *m)
{
	return m->event && m->event->unit ? m->event->unit : "ns";
}

const char *sp_model_event_name(const struct sp_model *m)
{
	return m->event && m->event->name ? m->event->name : "cpu";
}

bool sp_model_is_cpu(const struct sp_model *m)
{
	return !m->event || m->event->id == SP_EVENT_CPU;
}

bool sp_model_is_timed(const struct sp_model *m)
{
	return !strcmp(sp_model_unit(m), "ns");
}

static int sp_sample_cmp(const void *a, const void *b, void *arg)
{
	const struct sp_model *m = arg;
	uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
	const struct sp_msample *x = &m->samples[i], *y = &m->samples[j];
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? -1 : 1;
	return (i > j) - (i < j);
}

uint32_t *sp_model_samples_by_thread(const struct sp_model *m)
{
	uint32_t *order = malloc((m->n_samples ? m->n_samples : 1) * sizeof(*order));
	if (!order)
		return NULL;
	for (size_t i = 0; i < m->n_samples; i++)
		order[i] = (uint32_t)i;
	qsort_r(order, m->n_samples, sizeof(*order), sp_sample_cmp, (void *)m);
	return order;
}
