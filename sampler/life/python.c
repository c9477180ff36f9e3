/*
 * python.c - finding the interpreter and readying the handler to read its
 * frames (python.h).
 */
#include "sampler/life/python.h"
#include "sampler/life/interpose.h"
#include "sampler/capture/modules.h"
#include "sampler/capture/pystack.h"
#include "sampler/base/saferead.h"
#include "sampler/core/sampler.h"
#include "sampler/life/signals.h"
#include "sampler/capture/sigshare.h"
#include "sampler/base/sys.h"
#include "sampler/life/thread.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static pthread_mutex_t sp_py_lock = PTHREAD_MUTEX_INITIALIZER;
static bool sp_py_looked; /* an interpreter was found and judged: don't look again */

/* PyTypeObject.tp_dealloc: the same in every 3.x default build (after
 * ob_refcnt, ob_type, ob_size, tp_name, tp_basicsize, tp_itemsize). */
#define SP_TP_DEALLOC 48

static void (*sp_code_dealloc_orig)(void *);

/* PyCode_Type.tp_dealloc, wrapped: the handler's table forgets the code
 * object before its memory can hold another. Runs with the GIL held, in
 * normal context, like the original. */
static void sp_code_dealloc(void *co)
{
	sp_pystack_forget((uintptr_t)co);
	sp_code_dealloc_orig(co);
}

/*
 * The C API the thread-name lookup calls (sp_python_thread_name), found
 * with the interpreter. All of it runs with the GIL held, in the thread
 * that holds it.
 */
static struct {
	void *(*this_tstate)(void);		/* PyGILState_GetThisThreadState */
	void *(*holder)(void);			/* the GIL holder's tstate, NULL when released */
	void *(*getattr)(void *, void *);	/* PyObject_GenericGetAttr */
	void *(*intern)(const char *);		/* PyUnicode_InternFromString */
	const char *(*utf8)(void *, ssize_t *); /* PyUnicode_AsUTF8AndSize */
	void (*fetch)(void **, void **, void **);
	void (*restore)(void *, void *, void *);
	void (*decref)(void *);
	void *name_attr; /* "_name", interned, kept */
	bool ok;
} sp_pyapi;

static void sp_pyapi_find(void *lib);

static void sp_set_status(bool active, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sp_set_status(bool active, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(sp_py.status, sizeof(sp_py.status), fmt, ap);
	va_end(ap);
	atomic_store(&sp_py.active, active);
	atomic_fetch_add(&sp_py.status_gen, 1);
}

/* A symbol of the interpreter: in the global scope, or in a libpython
 * loaded privately (a program that embeds Python with RTLD_LOCAL). */
static void *sp_py_sym(void *lib, const char *name)
{
	return dlsym(lib ? lib : RTLD_DEFAULT, name);
}

struct sp_libpy {
	char path[1024];
};

static int sp_find_libpython(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct sp_libpy *l = arg;
	const char *base = strrchr(info->dlpi_name, '/');
	base = base ? base + 1 : info->dlpi_name;
	if (!strncmp(base, "libpython3.", 11)) {
		snprintf(l->path, sizeof(l->path), "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

/* The interpreter's version: Py_Version on 3.11+, else its version string. */
static uint32_t sp_py_version(void *lib)
{
	const uint32_t *v = sp_py_sym(lib, "Py_Version");
	if (v) /* 0xMMmmppLS: major, minor, micro, release level and serial */
		return ((*v >> 24) & 0xff) << 16 | ((*v >> 16) & 0xff) << 8 | ((*v >> 8) & 0xff);
	/* 3.10: formats a static buffer, safe before the interpreter starts */
	const char *(*get)(void) = (const char *(*)(void))sp_py_sym(lib, "Py_GetVersion");
	unsigned a, b, c;
	if (get && sscanf(get(), "%u.%u.%u", &a, &b, &c) == 3)
		return a << 16 | b << 8 | c;
	return 0;
}

/* The size of the symbol at addr (its ELF st_size), 0 if unknown. */
static size_t sp_sym_size(const void *addr)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;
	if (!dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return 0;
	return sym->st_size;
}

/* Where glibc keeps thread-specific data in struct pthread: found by
 * looking for the value this thread set for stackprof's own key. */
static int sp_find_specific(void)
{
	unsigned key = sp_thread_key_id();
	uintptr_t want = (uintptr_t)sp_self;
	if (key >= 32 || !want)
		return -1;
	const uintptr_t *self = (const uintptr_t *)pthread_self();
	for (uintptr_t off = 16 * key + 8; off < 4096; off += 8) {
		uintptr_t v;
		if (sp_safe_copy(&v, (const char *)self + off, sizeof(v)) == 0 && v == want)
			return (int)(off - 16 * key - 8);
	}
	return -1;
}

/* Judges the interpreter at runtime (the _PyRuntime symbol) found in lib
 * (NULL: the global scope); sets sp_py and returns whether frames are read. */
static bool sp_py_judge(void *runtime, void *lib)
{
	/* the file that holds it: a library, or the executable, whose entry
	 * dladdr names by argv[0] (or not at all) */
	Dl_info info;
	char *real = NULL;
	if (dladdr(runtime, &info) && info.dli_fname && info.dli_fname[0])
		real = realpath(info.dli_fname, NULL);
	char exe[sizeof(sp_py.module)];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = '\0';
	const char *file = real ? real : exe;
	size_t flen = strlen(file);
	if (flen >= sizeof(sp_py.module))
		flen = sizeof(sp_py.module) - 1;
	memcpy(sp_py.module, file, flen);
	sp_py.module[flen] = '\0';
	free(real);
	uint32_t v = sp_py_version(lib);
	sp_py.version = v;
	unsigned major = v >> 16, minor = (v >> 8) & 0xff, micro = v & 0xff;
	if (!sp_g.cfg.python) {
		sp_set_status(false, "Python %u.%u.%u: frames not read (STACKPROF_PYTHON=0)", major,
			      minor, micro);
		return false;
	}
	if (major != 3 || minor < 10 || minor > 13) {
		sp_set_status(
		    false,
		    "Python %u.%u.%u: frames not read: stackprof knows CPython 3.10 to 3.13; "
		    "native stacks only",
		    major, minor, micro);
		return false;
	}
	struct sp_pylayout L;
	if (minor == 13) {
		int err = sp_pylayout_from_debug_offsets(runtime, minor, &L);
		if (err) {
			sp_set_status(
			    false, "Python %u.%u.%u: frames not read: %s; native stacks only",
			    major, minor, micro,
			    err == -EOPNOTSUPP
				? "a free-threaded build, whose frames stackprof does not read"
			    : err == -ENOENT
				? "its _Py_DebugOffsets are missing (an unknown build?)"
				: "its _Py_DebugOffsets do not describe a layout "
				  "stackprof knows (an unknown build?)");
			return false;
		}
	} else {
		L = *sp_pylayout_builtin(minor);
		size_t size = sp_sym_size(runtime);
		if (size != L.rt_size) {
			sp_set_status(
			    false,
			    "Python %u.%u.%u: frames not read: its runtime is %zu bytes, not "
			    "the %u of the layout stackprof knows (another build?); native "
			    "stacks only",
			    major, minor, micro, size, L.rt_size);
			return false;
		}
	}
	void *code_type = sp_py_sym(lib, "PyCode_Type");
	void *eval = sp_py_sym(lib, "_PyEval_EvalFrameDefault");
	int specific = sp_find_specific();
	if (!code_type || !eval || specific < 0) {
		sp_set_status(false, "Python %u.%u.%u: frames not read: %s; native stacks only",
			      major, minor, micro,
			      specific < 0
				  ? "glibc's thread keys could not be found"
				  : "PyCode_Type or _PyEval_EvalFrameDefault is not exported");
		return false;
	}
	int err = sp_pystack_guard();
	if (err) {
		sp_set_status(false,
			      "Python %u.%u.%u: frames not read: cannot guard reads of its memory "
			      "(%s); native stacks only",
			      major, minor, micro, strerror(-err));
		return false;
	}
	err = sp_pystack_init();
	if (err) {
		sp_set_status(false, "Python %u.%u.%u: frames not read: %s; native stacks only",
			      major, minor, micro, strerror(-err));
		return false;
	}
	sp_py.L = L;
	sp_py.runtime = (uintptr_t)runtime;
	sp_py.code_type = (uintptr_t)code_type;
	sp_py.eval_lo = (uintptr_t)eval;
	sp_py.eval_hi = sp_py.eval_lo + sp_sym_size(eval);
	sp_py.specific = (uint32_t)specific;
	/* code objects that die from now on leave the handler's table */
	void **slot = (void **)((char *)code_type + SP_TP_DEALLOC);
	if (!sp_code_dealloc_orig) {
		sp_code_dealloc_orig = (void (*)(void *)) * slot;
		__atomic_store_n(slot, (void *)sp_code_dealloc, __ATOMIC_RELEASE);
	}
	sp_pyapi_find(lib);
	sp_set_status(true, "Python %u.%u.%u (%s): frames read", major, minor, micro,
		      minor == 13 ? "layout from its debug offsets" : "layout checked");
	return true;
}

/* Finds the C API sp_python_thread_name calls; leaves it unused if any
 * part is missing. */
static void sp_pyapi_find(void *lib)
{
	void *holder = sp_py_sym(lib, "PyThreadState_GetUnchecked"); /* 3.13 */
	if (!holder)
		holder = sp_py_sym(lib, "_PyThreadState_UncheckedGet");
	void *syms[] = {sp_py_sym(lib, "PyGILState_GetThisThreadState"),
			holder,
			sp_py_sym(lib, "PyObject_GenericGetAttr"),
			sp_py_sym(lib, "PyUnicode_InternFromString"),
			sp_py_sym(lib, "PyUnicode_AsUTF8AndSize"),
			sp_py_sym(lib, "PyErr_Fetch"),
			sp_py_sym(lib, "PyErr_Restore"),
			sp_py_sym(lib, "Py_DecRef")};
	for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++)
		if (!syms[i])
			return;
	*(void **)&sp_pyapi.this_tstate = syms[0];
	*(void **)&sp_pyapi.holder = syms[1];
	*(void **)&sp_pyapi.getattr = syms[2];
	*(void **)&sp_pyapi.intern = syms[3];
	*(void **)&sp_pyapi.utf8 = syms[4];
	*(void **)&sp_pyapi.fetch = syms[5];
	*(void **)&sp_pyapi.restore = syms[6];
	*(void **)&sp_pyapi.decref = syms[7];
	sp_pyapi.ok = true;
}

/* A word of the interpreter's memory, in normal context. */
static bool sp_py_word(uintptr_t *v, uintptr_t addr)
{
	return addr >= 4096 && sp_safe_copy(v, (const void *)addr, sizeof(*v)) == 0;
}

/* A str object's characters as UTF-8 (borrowed, the interpreter caches
 * them), or NULL; an error it raises is left for the caller to clear. */
static const char *sp_py_utf8(uintptr_t obj, ssize_t *len)
{
	return obj ? sp_pyapi.utf8((void *)obj, len) : NULL;
}

bool sp_python_thread_name(char *out, size_t cap)
{
	if (!atomic_load(&sp_py.active) || !sp_pyapi.ok || cap < 2)
		return false;
	/* nothing may be called into the interpreter unless this thread holds
	 * its GIL: its own thread state must be the holder's */
	void *ts = sp_pyapi.this_tstate();
	if (!ts || sp_pyapi.holder() != ts)
		return false;
	/* the innermost frame: the GIL keeps it still */
	const struct sp_pylayout *L = &sp_py.L;
	uintptr_t frame = 0, cf, code, type, self, co_name, co_file;
	if (L->kind == SP_PYFRAMES_311 || L->kind == SP_PYFRAMES_312) {
		if (!sp_py_word(&cf, (uintptr_t)ts + L->ts_frame) ||
		    !sp_py_word(&frame, cf + L->cf_current_frame))
			return false;
	} else if (!sp_py_word(&frame, (uintptr_t)ts + L->ts_frame)) {
		return false;
	}
	if (!frame || !sp_py_word(&code, frame + L->fr_code) ||
	    !sp_py_word(&type, code + L->ob_type) || type != sp_py.code_type ||
	    !sp_py_word(&self, frame + L->fr_localsplus) || !self ||
	    !sp_py_word(&co_name, code + L->co_name) ||
	    !sp_py_word(&co_file, code + L->co_filename))
		return false;

	bool named = false;
	void *et, *ev, *tb;
	sp_pyapi.fetch(&et, &ev, &tb);
	ssize_t n;
	const char *name = sp_py_utf8(co_name, &n);
	const char *file = name && !strcmp(name, "start") ? sp_py_utf8(co_file, &n) : NULL;
	const char *base = file ? strrchr(file, '/') : NULL;
	/* threading.Thread.start(self): its first local is the Thread, whose
	 * _name is read from the instance itself (no property, no
	 * __getattribute__ of the program's runs) */
	if (file && !strcmp(base ? base + 1 : file, "threading.py")) {
		if (!sp_pyapi.name_attr)
			sp_pyapi.name_attr = sp_pyapi.intern("_name");
		void *v =
		    sp_pyapi.name_attr ? sp_pyapi.getattr((void *)self, sp_pyapi.name_attr) : NULL;
		const char *s = v ? sp_pyapi.utf8(v, &n) : NULL;
		if (s && n > 0) {
			size_t len = (size_t)n < cap - 1 ? (size_t)n : cap - 1;
			while (len && len < (size_t)n && ((unsigned char)s[len] & 0xc0) == 0x80)
				len--; /* cut on a character's first byte */
			memcpy(out, s, len);
			out[len] = '\0';
			named = len > 0;
		}
		if (v)
			sp_pyapi.decref(v);
	}
	/* whatever was raised here is dropped, and the program's own pending
	 * exception, if any, put back */
	sp_pyapi.restore(et, ev, tb);
	return named;
}

static void sp_python_look(void)
{
	pthread_mutex_lock(&sp_py_lock);
	if (sp_py_looked)
		goto out;
	void *lib = NULL;
	void *rt = sp_py_sym(NULL, "_PyRuntime");
	if (!rt && sp_modules_loader_usable()) {
		struct sp_libpy l = {{0}};
		sp_real_dl_iterate_phdr(sp_find_libpython, &l);
		if (l.path[0])
			lib = sp_real_dlopen(l.path, RTLD_NOW | RTLD_NOLOAD);
		rt = lib ? sp_py_sym(lib, "_PyRuntime") : NULL;
	}
	if (!rt)
		goto out; /* no Python (yet) */
	sp_py_looked = true;
	if (sp_py_judge(rt, lib))
		sp_python_attach_all();
	/* a libpython opened here stays: it is loaded anyway, and dlclose would
	 * take stackprof's own rendezvous for nothing */
out:
	pthread_mutex_unlock(&sp_py_lock);
}

void sp_python_atfork(int phase)
{
	if (phase == 0)
		pthread_mutex_lock(&sp_py_lock);
	else if (phase == 1)
		pthread_mutex_unlock(&sp_py_lock);
	else
		pthread_mutex_init(&sp_py_lock, NULL);
}

void sp_python_init(void)
{
	sp_python_look();
}

void sp_python_refresh(void)
{
	if (!sp_py_looked)
		sp_python_look();
}

int sp_python_attach(struct sp_thread *t)
{
	if (!atomic_load(&sp_py.active) || t->py_scratch)
		return 0;
	size_t len = sp_pystack_scratch_size();
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -errno;
	/* the handler reads the pointer: publish it whole */
	__atomic_store_n(&t->py_scratch, p, __ATOMIC_RELEASE);
	return 0;
}

void sp_python_attach_all(void)
{
	uint32_t n = atomic_load(&sp_g.n_slots);
	for (uint32_t i = 0; i < n; i++) {
		struct sp_thread *t = &sp_g.threads[i];
		if (atomic_load(&t->state) == SP_SLOT_LIVE)
			sp_python_attach(t);
	}
}
