#include "symbolize/module.h"

#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbolize/dwarfidx.h"
#include "symbolize/ehframe.h"
#include "symbolize/symtab.h"

/* Sizes no binary has: the largest real ones (libtorch_cuda with debug info)
 * are a few GiB; a file mostly made of holes is no binary either. */
#define SP_MODULE_MAX_BYTES  (64ull << 30)
#define SP_MODULE_SPARSE_MIN (1ull << 30)

struct sp_module {
	unsigned flags;
	Dwfl *dwfl;	   /* NULL for an image */
	Elf *elf;	   /* the object; owned by dwfl, or by the module for an image */
	void *image;	   /* the image's copy */
	Dwarf *dw;	   /* NULL without debug info; owned by dwfl */
	uint64_t dw_delta; /* DWARF address = vaddr + dw_delta */
	struct sp_dwarfidx *dwidx;
	struct sp_symtab *symtab;
	uint64_t sym_delta; /* symbol value = vaddr + sym_delta */
	bool symtab_tried;
	struct sp_ehframe *eh;
	bool eh_tried;
	Dwarf_CFI *cfi; /* .eh_frame through libdw, for sp_module_is_outermost */
	bool cfi_tried;
	struct sp_frame *out;
	size_t out_cap;
};

/* Reads an ELF file's GNU build-id note. Returns its length, 0 if none. */
static size_t sp_elf_build_id(Elf *elf, const uint8_t **bits)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		GElf_Nhdr nh;
		size_t off = 0, name_off, desc_off;
		while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp((const char *)d->d_buf + name_off, "GNU", 4)) {
				*bits = (const uint8_t *)d->d_buf + desc_off;
				return nh.n_descsz;
			}
		}
	}
	return 0;
}

static void sp_hex(char *dst, size_t cap, const uint8_t *p, size_t n)
{
	size_t i = 0;
	for (; i < n && 2 * i + 2 < cap; i++)
		snprintf(dst + 2 * i, 3, "%02x", p[i]);
	dst[n && cap ? 2 * i : 0] = '\0';
}

/*
 * libdwfl's search (build-id links, .gnu_debuglink next to the file, in
 * .debug/ and under /usr/lib/debug), then /usr/lib/debug/<path> as older
 * debug packages install it; that one is only taken when its build-id
 * matches, since there is no debuglink CRC to check.
 */
static int sp_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			     Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			     GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	int fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name,
					      debuglink_file, debuglink_crc, debuginfo_file_name);
	if (fd >= 0 || !file_name || file_name[0] != '/')
		return fd;
	const unsigned char *want;
	GElf_Addr vaddr;
	int want_len = dwfl_module_build_id(mod, &want, &vaddr);
	if (want_len <= 0)
		return -1;
	char path[4096];
	if (snprintf(path, sizeof(path), "/usr/lib/debug%s", file_name) >= (int)sizeof(path))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -1;
	}
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const uint8_t *got;
	size_t got_len = elf ? sp_elf_build_id(elf, &got) : 0;
	bool same = got_len == (size_t)want_len && !memcmp(got, want, got_len);
	elf_end(elf);
	if (!same || !(*debuginfo_file_name = strdup(path))) {
		close(fd);
		return -1;
	}
	return fd;
}

static char *sp_debuginfo_path; /* NULL: libdwfl's default, ":.debug:/usr/lib/debug" */

static const Dwfl_Callbacks sp_dwfl_callbacks = {
    .find_elf = dwfl_build_id_find_elf,
    .find_debuginfo = sp_find_debuginfo,
    .section_address = dwfl_offline_section_address,
    .debuginfo_path = &sp_debuginfo_path,
};

static struct sp_module *sp_module_alloc(unsigned flags)
{
	struct sp_module *m = calloc(1, sizeof(*m));
	if (m)
		m->flags = flags;
	return m;
}

/*
 * Opens a recorded path for reading, if it still names what a binary can
 * be: a regular file (a FIFO would block the open, a terminal the read),
 * of a size a binary has, that begins like an ELF file. Returns the fd and
 * the file's size, or -errno with the reason in why.
 */
static int sp_module_open_file(const char *path, off_t *size, char *why, size_t why_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		snprintf(why, why_len, "cannot open: %s", strerror(e));
		return -e;
	}
	struct stat st;
	int rc = 0;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		snprintf(why, why_len, "cannot read: %s", strerror(-rc));
	} else if (!S_ISREG(st.st_mode)) {
		rc = -EINVAL;
		snprintf(why, why_len, "not a regular file (%s); not used",
			 S_ISFIFO(st.st_mode)  ? "a FIFO"
			 : S_ISCHR(st.st_mode) ? "a character device"
			 : S_ISBLK(st.st_mode) ? "a block device"
			 : S_ISDIR(st.st_mode) ? "a directory"
					       : "a socket");
	} else if ((uint64_t)st.st_size > SP_MODULE_MAX_BYTES ||
		   ((uint64_t)st.st_size > SP_MODULE_SPARSE_MIN &&
		    (uint64_t)st.st_blocks * 512 < (uint64_t)st.st_size / 16)) {
		rc = -EFBIG;
		snprintf(why, why_len,
			 "too large to be a binary (%llu bytes, %llu of them on disk); not used",
			 (unsigned long long)st.st_size, (unsigned long long)st.st_blocks * 512);
	}
	char magic[SELFMAG];
	ssize_t got = rc ? 0 : pread(fd, magic, SELFMAG, 0);
	if (!rc && got < 0) {
		rc = -errno;
		snprintf(why, why_len, "cannot read: %s", strerror(-rc));
	} else if (!rc && (got != SELFMAG || memcmp(magic, ELFMAG, SELFMAG))) {
		rc = -ENOEXEC;
		snprintf(why, why_len, "not an ELF file");
	}
	if (rc) {
		close(fd);
		return rc;
	}
	*size = st.st_size;
	return fd;
}

/*
 * Whether the file holds everything its ELF headers describe. A copy cut
 * short (a full disk, an interrupted download) still opens, and would name
 * nothing without saying why.
 */
static bool sp_elf_whole(Elf *elf, uint64_t size, char *why, size_t why_len)
{
	GElf_Ehdr eh;
	size_t shnum = 0, phnum = 0;
	uint64_t need = 0;
	if (!gelf_getehdr(elf, &eh)) {
		snprintf(why, why_len, "damaged: no readable ELF header; not used");
		return false;
	}
	if (elf_getshdrnum(elf, &shnum) == 0 && shnum && eh.e_shoff)
		need = eh.e_shoff + (uint64_t)shnum * eh.e_shentsize;
	if (elf_getphdrnum(elf, &phnum) == 0 && phnum) {
		uint64_t ph_end = eh.e_phoff + (uint64_t)phnum * eh.e_phentsize;
		need = ph_end > need ? ph_end : need;
		for (size_t i = 0; ph_end <= size && i < phnum; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    ph.p_offset + ph.p_filesz > need)
				need = ph.p_offset + ph.p_filesz;
		}
	}
	if (need <= size)
		return true;
	snprintf(why, why_len,
		 "damaged: the file has %llu bytes, its ELF headers describe %llu (cut "
		 "short?); not used",
		 (unsigned long long)size, (unsigned long long)need);
	return false;
}

int sp_module_open(const char *path, const uint8_t *build_id, size_t build_id_len, unsigned flags,
		   struct sp_module **out, char *why, size_t why_len)
{
	int rc;
	struct sp_module *m = NULL;
	*out = NULL;
	snprintf(why, why_len, "%s", "");

	/* libdwfl's errors do not say "missing" versus "not ELF": ask first */
	off_t size = 0;
	int fd = sp_module_open_file(path, &size, why, why_len);
	if (fd < 0)
		return fd;

	rc = -ENOMEM;
	m = sp_module_alloc(flags);
	if (!m || !(m->dwfl = dwfl_begin(&sp_dwfl_callbacks))) {
		close(fd);
		goto fail;
	}
	dwfl_report_begin(m->dwfl);
	const char *base = strrchr(path, '/');
	/* base 0 with add_p_vaddr: module addresses are the file's own vaddrs;
	 * libdwfl reads the fd we checked, and keeps it if the module is made */
	Dwfl_Module *dm = dwfl_report_elf(m->dwfl, base ? base + 1 : path, path, fd, 0, true);
	dwfl_report_end(m->dwfl, NULL, NULL);
	if (!dm) {
		close(fd);
		snprintf(why, why_len, "%s", dwfl_errmsg(-1));
		rc = -ENOEXEC;
		goto fail;
	}

	if (build_id_len) {
		const unsigned char *bits;
		GElf_Addr vaddr;
		int n = dwfl_module_build_id(dm, &bits, &vaddr);
		if (n <= 0 || (size_t)n != build_id_len || memcmp(bits, build_id, build_id_len)) {
			char have[130], want[130];
			sp_hex(have, sizeof(have), n > 0 ? bits : NULL, n > 0 ? (size_t)n : 0);
			sp_hex(want, sizeof(want), build_id, build_id_len);
			snprintf(why, why_len,
				 "build-id %s on disk but %s when profiled: a different build, "
				 "not used",
				 n > 0 ? have : "(none)", want);
			rc = -ESTALE;
			goto fail;
		}
	}

	Dwarf_Addr mbias = 0, dbias = 0;
	m->elf = dwfl_module_getelf(dm, &mbias);
	if (!m->elf) {
		snprintf(why, why_len, "%s", dwfl_errmsg(-1));
		rc = -ENOEXEC;
		goto fail;
	}
	if (!sp_elf_whole(m->elf, (uint64_t)size, why, why_len)) {
		rc = -ENOEXEC;
		goto fail;
	}
	m->dw = dwfl_module_getdwarf(dm, &dbias);
	/* mbias is what the module's addresses add to vaddr; dbias what
	 * they add to the debug file's addresses */
	m->dw_delta = (uint64_t)mbias - (uint64_t)dbias;
	if (!m->dw)
		snprintf(why, why_len,
			 "no DWARF debug info (searched build-id, .gnu_debuglink and "
			 "/usr/lib/debug); names from the ELF symbol table only");
	*out = m;
	return 0;
fail:
	sp_module_free(m);
	return rc;
}

int sp_module_open_image(const void *image, size_t len, unsigned flags, struct sp_module **out,
			 char *why, size_t why_len)
{
	*out = NULL;
	snprintf(why, why_len, "%s", "");
	struct sp_module *m = sp_module_alloc(flags);
	if (!m || !(m->image = malloc(len ? len : 1))) {
		sp_module_free(m);
		return -ENOMEM;
	}
	memcpy(m->image, image, len);
	elf_version(EV_CURRENT);
	m->elf = elf_memory(m->image, len);
	if (!m->elf || elf_kind(m->elf) != ELF_K_ELF) {
		snprintf(why, why_len, "not an ELF image");
		sp_module_free(m);
		return -ENOEXEC;
	}
	*out = m;
	return 0;
}

void sp_module_free(struct sp_module *m)
{
	if (!m)
		return;
	sp_dwarfidx_free(m->dwidx);
	sp_symtab_free(m->symtab);
	sp_ehframe_free(m->eh);
	if (m->cfi)
		dwarf_cfi_end(m->cfi);
	if (m->dwfl)
		dwfl_end(m->dwfl);
	else if (m->elf)
		elf_end(m->elf);
	free(m->image);
	free(m->out);
	free(m);
}

/*
 * The symbol table: the object's .symtab, else the debug file's (a
 * stripped library with a debug package), else .dynsym (exported names
 * only, as in stripped libtorch_cpu).
 */
static struct sp_symtab *sp_module_symtab(struct sp_module *m)
{
	if (m->symtab_tried)
		return m->symtab;
	m->symtab_tried = true;
	int demangle = !(m->flags & SP_SYM_NO_DEMANGLE);
	if (sp_symtab_new(m->elf, SHT_SYMTAB, demangle, &m->symtab) == 0)
		return m->symtab;
	Elf *debug = m->dw ? dwarf_getelf(m->dw) : NULL;
	if (debug && debug != m->elf &&
	    sp_symtab_new(debug, SHT_SYMTAB, demangle, &m->symtab) == 0) {
		m->sym_delta = m->dw_delta;
		return m->symtab;
	}
	sp_symtab_new(m->elf, SHT_DYNSYM, demangle, &m->symtab);
	return m->symtab;
}

const char *sp_module_symbol(struct sp_module *m, uint64_t vaddr, uint64_t *start)
{
	struct sp_symtab *t = sp_module_symtab(m);
	uint64_t s;
	const char *name = sp_symtab_find(t, vaddr + m->sym_delta, &s);
	if (name && start)
		*start = s - m->sym_delta;
	return name;
}

static int sp_module_reserve(struct sp_module *m, size_t n)
{
	if (n <= m->out_cap)
		return 0;
	size_t cap = m->out_cap ? m->out_cap * 2 : 16;
	while (cap < n)
		cap *= 2;
	struct sp_frame *p = realloc(m->out, cap * sizeof(*p));
	if (!p)
		return -ENOMEM;
	m->out = p;
	m->out_cap = cap;
	return 0;
}

int sp_module_is_outermost(struct sp_module *m, uint64_t vaddr)
{
	/* .eh_frame is in the file itself, so this works without debug info;
	 * read once per module, ended with it */
	if (!m->cfi_tried) {
		m->cfi_tried = true;
		m->cfi = dwarf_getcfi_elf(m->elf);
	}
	Dwarf_Frame *frame = NULL;
	if (!m->cfi || dwarf_cfi_addrframe(m->cfi, vaddr, &frame) != 0)
		return -1;
	int ra = dwarf_frame_info(frame, NULL, NULL, NULL);
	Dwarf_Op ops_mem[3], *ops = NULL;
	size_t nops = 0;
	int rc = ra >= 0 ? dwarf_frame_register(frame, ra, ops_mem, &ops, &nops) : -1;
	free(frame);
	if (rc < 0)
		return -1;
	/* No operations: "undefined" (libdw 0.188 reports it as 0 with no
	 * operations, not the documented 1) or "same value", which for a return
	 * address would make the frame its own caller. Either way, the end. */
	return nops == 0;
}

int sp_module_lookup(struct sp_module *m, uint64_t vaddr, const struct sp_frame **frames)
{
	struct sp_dwline loc = {0};
	int n = 0;

	if (m->dw && !m->dwidx) {
		m->dwidx = sp_dwarfidx_new(m->dw, m->flags);
		if (!m->dwidx)
			return -ENOMEM;
	}
	if (m->dwidx) {
		const struct sp_dwframe *df;
		n = sp_dwarfidx_lookup(m->dwidx, vaddr + m->dw_delta, &df, &loc);
		if (n < 0)
			return n;
		if (n > 0 && sp_module_reserve(m, (size_t)n))
			return -ENOMEM;
		for (int i = 0; i < n; i++)
			m->out[i] = (struct sp_frame){
			    .func = df[i].func,
			    .file = df[i].file,
			    .line = df[i].line,
			    .column = df[i].column,
			    .offset = vaddr,
			    .kind = df[i].inlined ? SP_FRAME_INLINED : SP_FRAME_FUNC,
			};
	}
	if (n == 0) {
		if (sp_module_reserve(m, 1))
			return -ENOMEM;
		/* no function DIE: the symbol, with whatever line the line table has */
		struct sp_frame *f = &m->out[0];
		*f = (struct sp_frame){
		    .file = loc.file,
		    .line = loc.line,
		    .column = loc.column,
		    .offset = vaddr,
		    .kind = SP_FRAME_FUNC,
		};
		f->func = sp_module_symbol(m, vaddr, NULL);
		if (!f->func) {
			if (!m->eh_tried) {
				m->eh_tried = true;
				if (sp_ehframe_new(m->elf, &m->eh) == -ENOMEM)
					return -ENOMEM;
			}
			uint64_t start;
			bool signal = false;
			f->kind = SP_FRAME_UNNAMED;
			f->offset =
			    sp_ehframe_find(m->eh, vaddr, &start, NULL, &signal) ? start : vaddr;
			/* the return address a signal frame holds: the kernel's return
			 * to the interrupted code (glibc's __restore_rt, unnamed in a
			 * stripped libc). Named as gdb shows it. */
			if (signal) {
				f->func = "<signal handler called>";
				f->kind = SP_FRAME_FUNC;
			}
			/* a stripped executable's entry function is _start by definition
			 * (e_entry); naming it lets a stack be seen to reach its root */
			GElf_Ehdr eh;
			if (f->offset == start && gelf_getehdr(m->elf, &eh) && eh.e_entry &&
			    eh.e_entry == start) {
				f->func = "_start";
				f->kind = SP_FRAME_FUNC;
			}
		}
		n = 1;
	}
	if ((m->flags & SP_SYM_NO_INLINE) && n > 1) {
		/* the outer function, at the line of the call inlined into it */
		m->out[0] = m->out[n - 1];
		n = 1;
	}
	*frames = m->out;
	return n;
}
