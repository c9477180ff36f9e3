/*
 * `resnet18 --selftest`: checks the fast paths against obvious reference
 * code, because a blocked GEMM with a wrong edge case still produces
 * plausible-looking logits. Covers ragged tile edges, several K/M/N cache
 * blocks, padded and strided convolutions, and bit-identical results across
 * thread counts. Takes about a second; CTest runs it.
 */
#ifndef RN_SELFTEST_H
#define RN_SELFTEST_H

/* Runs every check, reports each on stdout. Returns 0 if all pass, 1 if not. */
int rn_selftest(void);

#endif
