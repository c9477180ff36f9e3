/*
 * real.h - the libc definitions behind the ones this library replaces
 * (life/interpose.h lists them): dlsym(RTLD_NEXT). Not signal-safe.
 */
#ifndef SP_SAMPLER_REAL_H
#define SP_SAMPLER_REAL_H

/* The next definition of name after this library's (dlsym RTLD_NEXT). */
void *sp_real_sym(const char *name);
#define SP_REAL(name) ((__typeof__(&name))sp_real_sym(#name))

/* glibc's dlopen, for loading libunwind privately. */
void *sp_real_dlopen(const char *file, int mode);

#endif
