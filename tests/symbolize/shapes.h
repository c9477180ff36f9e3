/*
 * shapes.h - the test shapes' entry points and recorded return addresses
 * (see shapes.c).
 */
#ifndef SP_TESTS_SHAPES_H
#define SP_TESTS_SHAPES_H

#include <stdint.h>

enum {
	SP_SHAPE_RET_INLINED = 0, /* probe called from the helper inlined into sp_shape_leaf */
	SP_SHAPE_RET_PLAIN,	  /* probe called from sp_shape_mid */
	SP_SHAPE_NRET,
};

extern uintptr_t sp_shape_ret[SP_SHAPE_NRET];

int sp_shape_run(int x);
int sp_shape_top(int x);
int sp_shape_mid(int x);
int sp_shape_leaf(int x);
void sp_shape_probe(int slot);
int sp_shape_cxx(int x) __asm__("_ZN2ns3fooEi");
void sp_shape_sized(void);
extern int (*sp_shape_static_ptr)(int);

#endif
