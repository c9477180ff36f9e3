#include "export/ops.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* "name.overload" for every overloaded operator, sorted by "name_overload". */
static const char *const sp_aten_overloads[] = {
#include "export/aten-overloads.inc"
};

#define SP_N_OVERLOADS (sizeof(sp_aten_overloads) / sizeof(sp_aten_overloads[0]))

/* Compares the n bytes of u with entry e read as its struct name ('.' as '_'). */
static int sp_struct_cmp(const char *u, size_t n, const char *e)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char a = (unsigned char)u[i];
		unsigned char b = (unsigned char)(e[i] == '.' ? '_' : e[i]);
		if (a != b || !b)
			return a < b ? -1 : a > b;
	}
	return e[n] ? -1 : 0;
}

/* The table entry whose struct name is the n bytes at u, or NULL. */
static const char *sp_overload_find(const char *u, size_t n)
{
	size_t lo = 0, hi = SP_N_OVERLOADS;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = sp_struct_cmp(u, n, sp_aten_overloads[mid]);
		if (!c)
			return sp_aten_overloads[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

/* Whether the table has an overload of the operator named by the n bytes at name. */
static bool sp_overloaded_base(const char *name, size_t n)
{
	/* a linear scan: it runs once per distinct operator frame the table lacks */
	for (size_t i = 0; i < SP_N_OVERLOADS; i++) {
		const char *e = sp_aten_overloads[i];
		if (!strncmp(e, name, n) && e[n] == '.')
			return true;
	}
	return false;
}

/* Whether s looks like an overload name: Tensor, Scalar_out, out, dim_out. */
static bool sp_overload_like(const char *s)
{
	size_t n = strlen(s);
	if (!n)
		return false;
	if (isupper((unsigned char)s[0]) || !strcmp(s, "out"))
		return true;
	return n > 4 && !strcmp(s + n - 4, "_out");
}

size_t sp_ops_split(const char *u)
{
	size_t n = strlen(u);
	const char *e = sp_overload_find(u, n);
	if (e)
		return (size_t)(strchr(e, '.') - e);
	/* not a torch 1.13 operator: split the way its names are made */
	for (size_t i = n; i-- > 1;) {
		if (u[i] != '_' || !sp_overload_like(u + i + 1))
			continue;
		if (sp_overloaded_base(u, i))
			return i;
	}
	return n;
}

/*
 * The function's own qualified name within func: after a return type (a
 * space outside brackets), up to its parameter list (the first '(' outside
 * template brackets). Sets *len; returns NULL when there is none.
 */
static const char *sp_scope(const char *func, size_t *len)
{
	const char *start = func, *p;
	int depth = 0;
	for (p = func; *p; p++) {
		char c = *p;
		if (c == '<' || (c == '(' && depth > 0)) {
			depth++;
		} else if (c == '>' || c == ')') {
			if (depth > 0)
				depth--;
		} else if (c == '(') {
			break;
		} else if (c == ' ' && depth == 0) {
			start = p + 1;
		}
	}
	if (p == start)
		return NULL;
	*len = (size_t)(p - start);
	return start;
}

static bool sp_copy(char *out, const char *s, size_t n)
{
	if (n >= SP_OPS_NAME_MAX)
		return false;
	memcpy(out, s, n);
	out[n] = '\0';
	return true;
}

bool sp_ops_parse(const char *func, struct sp_op *op)
{
	static const char prefix[] = "at::_ops::";
	const size_t plen = sizeof(prefix) - 1;
	size_t len;
	if (!func)
		return false;
	const char *s = sp_scope(func, &len);
	if (!s || len <= plen || strncmp(s, prefix, plen))
		return false;
	const char *name = s + plen, *end = s + len;
	const char *q = name;
	while (q < end && (isalnum((unsigned char)*q) || *q == '_'))
		q++;
	size_t name_len = (size_t)(q - name);
	if (!name_len || end - q < 2 || q[0] != ':' || q[1] != ':')
		return false;
	q += 2;
	bool redispatch;
	size_t rest = (size_t)(end - q);
	if (rest >= 4 && !strncmp(q, "call", 4)) {
		redispatch = false;
		q += 4;
	} else if (rest >= 10 && !strncmp(q, "redispatch", 10)) {
		redispatch = true;
		q += 10;
	} else {
		return false;
	}
	/* nothing more but an ABI tag: "call[abi:cxx11]" */
	if (q < end && *q != '[')
		return false;
	if (name_len + 6 >= SP_OPS_NAME_MAX)
		return false;
	if (!op)
		return true;
	if (!sp_copy(op->unambiguous, name, name_len))
		return false;
	size_t base = sp_ops_split(op->unambiguous);
	memcpy(op->name, "aten::", 6);
	memcpy(op->name + 6, name, base);
	op->name[6 + base] = '\0';
	op->overload[0] = '\0';
	if (base < name_len)
		sp_copy(op->overload, name + base + 1, name_len - base - 1);
	op->redispatch = redispatch;
	return true;
}
