/*
 * demangle.h - C++ symbol names to their source form, without linking C++.
 *
 * The demangler of record is libstdc++'s __cxa_demangle (what c++filt,
 * eu-addr2line -C and perf use). stackprof is a C project and must not link
 * libstdc++: it would drag the C++ runtime into every tool and change
 * exception handling for anything loaded next to it. So the demangler is
 * looked up at run time with dlopen("libstdc++.so.6"); where it is missing,
 * names stay mangled, which is still correct, only less readable.
 * Thread-safe; not async-signal-safe.
 */
#ifndef SP_SYMBOLIZE_DEMANGLE_H
#define SP_SYMBOLIZE_DEMANGLE_H

#include <stdbool.h>

/*
 * Returns the demangled form of an Itanium-ABI name ("_Z..."), malloc'd for
 * the caller to free, or NULL when name is not mangled, does not demangle,
 * or no demangler is available.
 */
char *sp_demangle(const char *name);

/* Whether a demangler could be loaded (tests skip on false). */
bool sp_demangle_available(void);

#endif
