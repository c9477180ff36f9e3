/*
 * probe_blocked - a program that blocks signals on purpose (issue 30, points
 * 9 to 11). Everything it prints is the same with and without a profiler:
 * a signal of the profiler's must never reach it, and a signal it blocked
 * stays blocked as far as it can tell.
 *
 *   probe_blocked wait
 *       The shutdown design: the main thread blocks every signal, works,
 *       starts two workers (which inherit the mask) and waits for the
 *       SIGUSR1 a worker sends when its work is done, five times over:
 *       sigtimedwait, sigwaitinfo, sigwait, a signalfd, and sigtimedwait
 *       once more after raising SIGTRAP and SIGPROF itself (its own signals
 *       must stay pending for it and come out of the wait, in order). It
 *       prints each signal it got; a profiler's SIGTRAP or SIGPROF among
 *       them, or none within 10 s, is a failure (exit 1).
 *   probe_blocked ppoll N
 *       The ppoll/pselect idiom: every signal blocked but during the wait.
 *       N rounds of 0.5 ms of work and a 1 ms ppoll, then N with pselect,
 *       then N with epoll_pwait; prints how many waits of each ended with
 *       EINTR (alone: 0).
 *   probe_blocked exec
 *       Blocks SIGTRAP and SIGPROF and execs itself as `report`, which
 *       prints what sigprocmask and pthread_sigmask say of them on the
 *       main thread and on a new thread, and whether either is pending.
 *       Exit 0 when both are blocked everywhere, as they were inherited.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

static volatile double sink;

static double now_cpu(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin(double seconds)
{
	double end = now_cpu() + seconds;
	double x = 1.0;
	while (now_cpu() < end)
		for (int i = 0; i < 2000; i++)
			x = x * 1.0000001 + 0.5;
	sink = x;
}

static const char *sig_name(int sig)
{
	switch (sig) {
	case SIGTRAP:
		return "SIGTRAP";
	case SIGPROF:
		return "SIGPROF";
	case SIGUSR1:
		return "SIGUSR1";
	case SIGUSR2:
		return "SIGUSR2";
	default:
		return sigabbrev_np(sig) ? sigabbrev_np(sig) : "?";
	}
}

static const char *code_name(int code)
{
	switch (code) {
	case SI_USER:
		return "SI_USER";
	case SI_TKILL:
		return "SI_TKILL";
	case SI_QUEUE:
		return "SI_QUEUE";
	default:
		return "other";
	}
}

static void *worker(void *arg)
{
	spin(0.03);
	if (arg)
		kill(getpid(), SIGUSR1); /* process-directed: only the main thread waits for it */
	return NULL;
}

static int bad; /* a signal the program did not send, or none */

static void got(const char *how, int sig, int code, int want)
{
	if (sig <= 0) {
		printf("%s: no signal (%s)\n", how, strerror(errno));
		bad = 1;
		return;
	}
	if (sig != want)
		bad = 1;
	printf("%s: %s %s\n", how, sig_name(sig), code_name(code));
	fflush(stdout);
}

static void start_workers(pthread_t w[2])
{
	pthread_create(&w[0], NULL, worker, NULL);
	pthread_create(&w[1], NULL, worker, (void *)1);
}

static void join_workers(pthread_t w[2])
{
	pthread_join(w[0], NULL);
	pthread_join(w[1], NULL);
}

static int mode_wait(void)
{
	sigset_t all;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	struct timespec tmo = {10, 0};
	pthread_t w[2];
	siginfo_t si;

	spin(0.05); /* samples while every signal is blocked */
	start_workers(w);
	int sig = sigtimedwait(&all, &si, &tmo);
	got("sigtimedwait", sig, sig > 0 ? si.si_code : 0, SIGUSR1);
	join_workers(w);

	spin(0.05);
	start_workers(w);
	sig = sigwaitinfo(&all, &si);
	got("sigwaitinfo", sig, sig > 0 ? si.si_code : 0, SIGUSR1);
	join_workers(w);

	spin(0.05);
	start_workers(w);
	if (sigwait(&all, &sig) != 0)
		sig = -1;
	got("sigwait", sig, SI_USER, SIGUSR1);
	join_workers(w);

	spin(0.05);
	int fd = signalfd(-1, &all, SFD_CLOEXEC);
	start_workers(w);
	struct signalfd_siginfo ssi;
	sig = -1;
	if (fd >= 0 && read(fd, &ssi, sizeof(ssi)) == sizeof(ssi))
		sig = (int)ssi.ssi_signo;
	got("signalfd", sig, sig > 0 ? ssi.ssi_code : 0, SIGUSR1);
	join_workers(w);
	close(fd);

	/* its own, sent while blocked: they wait for it, and come out first */
	raise(SIGTRAP);
	raise(SIGPROF);
	spin(0.05);
	start_workers(w);
	static const int want[] = {SIGTRAP, SIGPROF, SIGUSR1};
	for (int i = 0; i < 3; i++) {
		sig = sigtimedwait(&all, &si, &tmo);
		got("own", sig, sig > 0 ? si.si_code : 0, want[i]);
	}
	join_workers(w);
	return bad;
}

static int mode_ppoll(int n)
{
	sigset_t all, none;
	sigfillset(&all);
	sigemptyset(&none);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	int cut = 0;
	for (int i = 0; i < n; i++) {
		spin(0.0005);
		struct timespec ts = {0, 1000000};
		if (ppoll(NULL, 0, &ts, &none) < 0 && errno == EINTR)
			cut++;
	}
	printf("ppoll: %d of %d waits cut short\n", cut, n);
	cut = 0;
	for (int i = 0; i < n; i++) {
		spin(0.0005);
		struct timespec ts = {0, 1000000};
		if (pselect(0, NULL, NULL, NULL, &ts, &none) < 0 && errno == EINTR)
			cut++;
	}
	printf("pselect: %d of %d waits cut short\n", cut, n);
	cut = 0;
	int ep = epoll_create1(EPOLL_CLOEXEC);
	for (int i = 0; i < n; i++) {
		spin(0.0005);
		struct epoll_event ev;
		if (epoll_pwait(ep, &ev, 1, 1, &none) < 0 && errno == EINTR)
			cut++;
	}
	close(ep);
	printf("epoll_pwait: %d of %d waits cut short\n", cut, n);
	return 0;
}

static int report_mask(const char *who)
{
	sigset_t pm, tm, pend;
	sigprocmask(SIG_BLOCK, NULL, &pm);
	pthread_sigmask(SIG_BLOCK, NULL, &tm);
	sigpending(&pend);
	int trap = sigismember(&pm, SIGTRAP) && sigismember(&tm, SIGTRAP);
	int prof = sigismember(&pm, SIGPROF) && sigismember(&tm, SIGPROF);
	printf("%s: SIGTRAP %s, SIGPROF %s; pending:%s%s\n", who, trap ? "blocked" : "open",
	       prof ? "blocked" : "open", sigismember(&pend, SIGTRAP) ? " SIGTRAP" : "",
	       sigismember(&pend, SIGPROF) ? " SIGPROF" : "");
	return trap && prof ? 0 : 1;
}

static void *report_thread(void *arg)
{
	spin(0.05);
	*(int *)arg = report_mask("thread");
	return NULL;
}

static int mode_report(void)
{
	int rc = report_mask("main");
	spin(0.2); /* samples, while both stay blocked */
	int trc = 1;
	pthread_t t;
	pthread_create(&t, NULL, report_thread, &trc);
	pthread_join(t, NULL);
	rc |= report_mask("main after");
	return rc | trc;
}

static int mode_exec(char *self)
{
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTRAP);
	sigaddset(&set, SIGPROF);
	sigprocmask(SIG_BLOCK, &set, NULL);
	spin(0.05);
	char *argv[] = {self, "report", NULL};
	execv(self, argv);
	perror("execv");
	return 2;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "wait"))
		return mode_wait();
	if (!strcmp(mode, "ppoll"))
		return mode_ppoll(argc > 2 ? atoi(argv[2]) : 200);
	if (!strcmp(mode, "exec"))
		return mode_exec(argv[0]);
	if (!strcmp(mode, "report"))
		return mode_report();
	fprintf(stderr, "usage: probe_blocked wait | ppoll [N] | exec\n");
	return 2;
}
