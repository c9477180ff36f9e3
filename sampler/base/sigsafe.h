/*
 * sigsafe.h - the signal boundary: every function the signal handler can
 * reach, and nothing else.
 *
 * A declaration marked SP_SIGSAFE may be called from the handler: it takes
 * no lock it can wait on, does not allocate, touches stdio or errno only as
 * async-signal-safe libc functions do, and calls only other SP_SIGSAFE
 * functions and the libc functions in SP_SIGSAFE_LIBC. Every other
 * declaration of the sampler is assumed unsafe.
 *
 * tests/unit/sigsafe-check.py holds the code to this: it builds the
 * sampler with gcc -fcallgraph-info=su, walks every call edge from the
 * handler's entry points, and fails if the handler can reach a function
 * that is in neither list below, or a listed sampler function whose
 * declaration lacks SP_SIGSAFE, or a function defined outside
 * sampler/capture/ and not in SP_SIGSAFE_OUTSIDE_CAPTURE. Calls through
 * function pointers are not edges gcc can see: their targets are listed
 * in SP_SIGSAFE_INDIRECT, and each is checked as an entry point of its own.
 */
#ifndef SP_SAMPLER_SIGSAFE_H
#define SP_SAMPLER_SIGSAFE_H

/* Marks a declaration callable from the signal handler. */
#define SP_SIGSAFE

/* A definition the program sees (an interposed libc function, the API),
 * and initial-exec TLS (signal-safe to read). */
#define SP_EXPORT __attribute__((visibility("default")))
#define SP_TLS	  __attribute__((tls_model("initial-exec")))

/* The handler's entry points: what the kernel calls (sp_handler, in
 * assembly, moves to the handler's own stack and calls sp_handler_body, or
 * sp_handler_foreign on a thread that runs on another's TLS). */
#define SP_SIGSAFE_ENTRY(X) X(sp_handler_body) X(sp_handler_foreign) X(sp_term_handler)

/* Reached only through function pointers (sources' ops, libunwind's
 * callbacks, the guarded reads' fault handler): each is an entry point for
 * the check too. */
#define SP_SIGSAFE_INDIRECT(X)                                                                     \
	X(sp_cpu_weight)                                                                           \
	X(sp_posix_owns)                                                                           \
	X(sp_perf_owns)                                                                            \
	X(sp_trap_owns)                                                                            \
	X(sp_ticker_owns)                                                                          \
	X(sp_itimer_owns)                                                                          \
	X(sp_posix_rearm)                                                                          \
	X(sp_iterate_snapshot)                                                                     \
	X(sp_py_fault)                                                                             \
	X(sigprocmask)

/* The reachable functions that call through a pointer: the sources' ops
 * (the handler, and the table's owns and rearm calls), libunwind, and the program's own SIGTRAP
 * handler. */
#define SP_SIGSAFE_CALLS_THROUGH(X)                                                                \
	X(sp_handler_body)                                                                         \
	X(sp_source_taken)                                                                         \
	X(sp_source_sent)                                                                          \
	X(sp_unwind_libunwind)                                                                     \
	X(sp_scan_restart)                                                                         \
	X(sp_slow_step)                                                                            \
	X(sp_unwind_signal)                                                                        \
	X(sp_share_forward)                                                                        \
	X(sp_iterate_snapshot)                                                                     \
	X(sigprocmask)

/* Every function of stackprof's the handler may reach. */
#define SP_SIGSAFE_FUNCTIONS(X)                                                                    \
	X(sp_handler)                                                                              \
	X(sp_handler_body)                                                                         \
	X(sp_capture)                                                                              \
	X(sp_capture_walk)                                                                         \
	X(sp_trim_own)                                                                             \
	X(sp_capture_own_frames)                                                                   \
	X(sp_stacks_differ)                                                                        \
	X(sp_stack_hash)                                                                           \
	X(sp_cut_syscall)                                                                          \
	X(sp_unwcheck_keep)                                                                        \
	X(sp_now_ns)                                                                               \
	X(sp_fd_libunwind)                                                                         \
	X(sp_thread_cpu_ns)                                                                        \
	X(sp_gettid)                                                                               \
	X(sp_syscall)                                                                              \
	X(sp_trap_is_ours)                                                                         \
	X(sp_share_active)                                                                         \
	X(sp_share_forward)                                                                        \
	X(sp_handler_fault)                                                                        \
	X(sp_share_of)                                                                             \
	X(sp_is_fault)                                                                             \
	X(sp_sigstack_call_program)                                                                \
	X(sp_sys_sigaltstack)                                                                      \
	X(sp_within)                                                                               \
	X(sp_call_on_stack)                                                                        \
	X(sp_app_get)                                                                              \
	X(sp_plain_action)                                                                         \
	X(sp_si_perf_data)                                                                         \
	X(sp_ring_reserve)                                                                         \
	X(sp_ring_commit)                                                                          \
	X(sp_ring_half_full)                                                                       \
	X(sp_writer_poke)                                                                          \
	X(sp_term_handler)                                                                         \
	X(sp_writer_end_for_signal)                                                                \
	X(sp_futex_wake)                                                                           \
	X(sp_modules_missed)                                                                       \
	X(sp_modules_enter)                                                                        \
	X(sp_modules_leave)                                                                        \
	X(sp_modules_is_text)                                                                      \
	X(sp_modules_current)                                                                      \
	X(sp_modsnap_text)                                                                         \
	X(sp_modsnap_text_near)                                                                    \
	X(sp_find_text)                                                                            \
	X(sp_iterate_snapshot)                                                                     \
	X(sp_unwind_signal)                                                                        \
	X(sp_unwind_cached)                                                                        \
	X(sp_unwind_prefetch)                                                                      \
	X(sp_unwind_libunwind)                                                                     \
	X(sp_scan)                                                                                 \
	X(sp_scan_restart)                                                                         \
	X(sp_follows_call)                                                                         \
	X(sp_fast_step)                                                                            \
	X(sp_slow_step)                                                                            \
	X(sp_stack_word)                                                                           \
	X(sp_rule)                                                                                 \
	X(sp_rulecache_get)                                                                        \
	X(sp_rulecache_prefetch)                                                                   \
	X(sp_rulecache_put)                                                                        \
	X(sp_cfi_find)                                                                             \
	X(sp_cfi_pack)                                                                             \
	X(sp_cfi_unpack)                                                                           \
	X(sp_pystack_pcs)                                                                          \
	X(sp_pystack_sps)                                                                          \
	X(sp_pystack_read)                                                                         \
	X(sp_pystack_place)                                                                        \
	X(sp_safe_copy)                                                                            \
	X(sp_safe_word)                                                                            \
	X(sp_py_fault)                                                                             \
	X(sp_safe_resume)                                                                          \
	X(sp_safe_landing)                                                                         \
	X(sp_rdw)                                                                                  \
	X(sp_rd32)                                                                                 \
	X(sp_rd8)                                                                                  \
	X(sp_rd_code)                                                                              \
	X(sp_memo_offset)                                                                          \
	X(sp_memo_hit)                                                                             \
	X(sp_safe_load)                                                                            \
	X(sp_prefetch_code)                                                                        \
	X(sp_name_frame)                                                                           \
	X(sp_name_frames)                                                                          \
	X(sp_add_frame)                                                                            \
	X(sp_walk)                                                                                 \
	X(sp_tstate)                                                                               \
	X(sp_rd)                                                                                   \
	X(sp_end_segment)                                                                          \
	X(sp_code_id)                                                                              \
	X(sp_code_fp)                                                                              \
	X(sp_code_hash)                                                                            \
	X(sp_emit_code)                                                                            \
	X(sp_rd_str)                                                                               \
	X(sp_is_eval)                                                                              \
	X(sp_scratch)                                                                              \
	X(sp_cfa_run)                                                                              \
	X(sp_entry)                                                                                \
	X(sp_cfiread_uleb)                                                                         \
	X(sp_cfiread_sleb)                                                                         \
	X(sp_cfiread_fixed)                                                                        \
	X(sp_cfiread_ptr)                                                                          \
	X(sp_cfiread_aug)                                                                          \
	X(sp_cpu_weight)                                                                           \
	X(sp_posix_rearm)                                                                          \
	X(sp_posix_owns)                                                                           \
	X(sp_perf_owns)                                                                            \
	X(sp_trap_owns)                                                                            \
	X(sp_ticker_owns)                                                                          \
	X(sp_itimer_owns)                                                                          \
	X(sp_posix_set)                                                                            \
	X(sp_cputime_rand)                                                                         \
	X(sigprocmask)                                                                             \
	X(sp_sigmask_own)                                                                          \
	X(sp_mask_program)                                                                         \
	X(sp_mask_keep_pending)                                                                    \
	X(sp_managed)                                                                              \
	X(sp_bit)                                                                                  \
	X(sp_bits_of)                                                                              \
	X(sp_token)                                                                                \
	X(sp_idx)                                                                                  \
	X(sp_source_sent)                                                                          \
	X(sp_source_taken)                                                                         \
	X(sp_sources_send)                                                                         \
	X(sp_stepped_aside)

/*
 * The boundary is a folder too: every function of stackprof's the handler
 * reaches is defined in sampler/capture/, or is one of these, each a leaf
 * (or a leaf's caller) below it or beside it that the capture path calls
 * by name or through a pointer. tests/unit/sigsafe-check.py finds where
 * each reachable function is defined and fails on any other.
 */

/* base/: system calls, clocks, the thread id, libunwind's descriptor
 * flag, a guarded read's resume: no sampler state. */
#define SP_SIGSAFE_BASE_LEAVES(X)                                                                  \
	X(sp_syscall)                                                                              \
	X(sp_sigmask_own)                                                                          \
	X(sp_now_ns)                                                                               \
	X(sp_thread_cpu_ns)                                                                        \
	X(sp_gettid)                                                                               \
	X(sp_fd_libunwind)                                                                         \
	X(sp_safe_resume)

/* core/: the ring, the writer's doorbell, the stand-aside flag, and the
 * source interface's "is this signal ours", shared with the writer, the
 * sources and life/. */
#define SP_SIGSAFE_CORE_LEAVES(X)                                                                  \
	X(sp_ring_reserve)                                                                         \
	X(sp_ring_commit)                                                                          \
	X(sp_ring_half_full)                                                                       \
	X(sp_writer_poke)                                                                          \
	X(sp_futex_wake)                                                                           \
	X(sp_stepped_aside)                                                                        \
	X(sp_source_sent)                                                                          \
	X(sp_source_taken)                                                                         \
	X(sp_sources_send)

/* format/: the CFI decoders the unwinder shares with the reader. */
#define SP_SIGSAFE_FORMAT_LEAVES(X)                                                                \
	X(sp_cfiread_uleb)                                                                         \
	X(sp_cfiread_sleb)                                                                         \
	X(sp_cfiread_fixed)                                                                        \
	X(sp_cfiread_ptr)                                                                          \
	X(sp_cfiread_aug)

/* sources/: the sources' signal-safe ops (core/source.h's weight,
 * rearm, owns), reached through the table of sources, never by name, and
 * the leaves they share. A new source's ops go here. */
#define SP_SIGSAFE_SOURCE_OPS(X)                                                                   \
	X(sp_cpu_weight)                                                                           \
	X(sp_cputime_rand)                                                                         \
	X(sp_posix_rearm)                                                                          \
	X(sp_posix_set)                                                                            \
	X(sp_posix_owns)                                                                           \
	X(sp_perf_owns)                                                                            \
	X(sp_trap_owns)                                                                            \
	X(sp_ticker_owns)                                                                          \
	X(sp_itimer_owns)

/* A signal entry of its own, not the capture path: the handler of the
 * signals that end the process (life/termsig.c) asks the writer to finish
 * the profile (writer/writer.c) before the process dies. */
#define SP_SIGSAFE_TERM(X) X(sp_term_handler) X(sp_writer_end_for_signal)

#define SP_SIGSAFE_OUTSIDE_CAPTURE(X)                                                              \
	SP_SIGSAFE_BASE_LEAVES(X)                                                                  \
	SP_SIGSAFE_CORE_LEAVES(X)                                                                  \
	SP_SIGSAFE_FORMAT_LEAVES(X)                                                                \
	SP_SIGSAFE_SOURCE_OPS(X)                                                                   \
	SP_SIGSAFE_TERM(X)

/*
 * libc and libunwind functions the handler may call: async-signal-safe by
 * POSIX (clock_gettime, syscall wrappers such as sigaction and
 * pthread_sigmask), or by their implementation here (the memory functions;
 * pthread_setcancelstate, a compare-and-swap on the thread's own word;
 * libunwind's local unwinder with caching off, whose only lock is its
 * memory pool's, never held by the thread a signal interrupts: libunwind
 * blocks signals around it).
 */
#define SP_SIGSAFE_LIBC(X)                                                                         \
	X(clock_gettime)                                                                           \
	X(pthread_self)                                                                            \
	X(pthread_setcancelstate)                                                                  \
	X(timer_settime)                                                                           \
	X(syscall)                                                                                 \
	X(getpid)                                                                                  \
	X(sigaction)                                                                               \
	X(pthread_sigmask)                                                                         \
	X(sigaddset)                                                                               \
	X(sigdelset)                                                                               \
	X(sigismember)                                                                             \
	X(sigfillset)                                                                              \
	X(sigemptyset)                                                                             \
	X(memcpy)                                                                                  \
	X(memmove)                                                                                 \
	X(memset)                                                                                  \
	X(memcmp)                                                                                  \
	X(memchr)                                                                                  \
	X(__errno_location)                                                                        \
	X(__tls_get_addr)

#endif
