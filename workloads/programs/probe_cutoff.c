/*
 * probe_cutoff - programs that end without running any exit path a
 * preloaded library could see, so that a profile of theirs ends at its
 * last flush (issue 30 point 14):
 *
 *   probe_cutoff term SECONDS FILE   burns CPU in spin() until SIGTERM
 *                                    comes from outside (at most SECONDS);
 *                                    writes its pid to FILE once it has
 *                                    burned 0.3 s, for the sender
 *   probe_cutoff ownterm SECONDS FILE
 *                                    prints the SIGTERM action it finds
 *                                    (sigaction) and sets a handler of its
 *                                    own (signal(), whose answer it prints
 *                                    too), then as term; its handler makes
 *                                    spin() return: prints "handled 15",
 *                                    exits 5
 *   probe_cutoff sigwait FILE        blocks SIGTERM, writes its pid to FILE,
 *                                    takes the signal with sigwait(), prints
 *                                    "sigwait got 15", exits 0
 *   probe_cutoff exitgroup SECONDS STATUS
 *                                    burns SECONDS of CPU in spin(), prints
 *                                    a line, then ends with a raw
 *                                    exit_group system call (as Go's
 *                                    runtime does): no atexit, no
 *                                    destructor, no _exit
 *
 * spin() is noinline so that the profile shows it by name.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile unsigned long sink;
static volatile sig_atomic_t handled;

static void on_term(int sig)
{
	handled = sig;
}

static void write_pid(const char *path)
{
	/* written whole, then renamed: the reader never sees half */
	char tmp[4096];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (f) {
		fprintf(f, "%d\n", (int)getpid());
		if (fclose(f) == 0)
			rename(tmp, path);
	}
}

__attribute__((noinline)) void spin(double seconds, const char *ready)
{
	double t0 = cpu_now();
	int told = ready == NULL;
	unsigned long x = 0;
	for (;;) {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005ul + 1442695040888963407ul;
		sink = x;
		double used = cpu_now() - t0;
		if (!told && used >= 0.3) {
			write_pid(ready);
			told = 1;
		}
		if (used >= seconds || handled)
			return;
	}
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "term")) {
		spin(atof(argv[2]), argv[3]);
		printf("no SIGTERM came\n");
		return 3;
	}
	if (argc == 4 && !strcmp(argv[1], "ownterm")) {
		struct sigaction sa;
		sigaction(SIGTERM, NULL, &sa);
		printf("SIGTERM at start: %s\n", sa.sa_handler == SIG_DFL   ? "SIG_DFL"
						 : sa.sa_handler == SIG_IGN ? "SIG_IGN"
									    : "a handler");
		void (*prev)(int) = signal(SIGTERM, on_term);
		printf("signal() answered %s\n", prev == SIG_DFL ? "SIG_DFL" : "something else");
		fflush(stdout);
		spin(atof(argv[2]), argv[3]);
		printf("handled %d\n", (int)handled);
		return handled ? 5 : 3;
	}
	if (argc == 3 && !strcmp(argv[1], "sigwait")) {
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, SIGTERM);
		sigprocmask(SIG_BLOCK, &set, NULL);
		spin(0.1, NULL);
		write_pid(argv[2]);
		int sig = 0;
		sigwait(&set, &sig);
		printf("sigwait got %d\n", sig);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "exitgroup")) {
		spin(atof(argv[2]), NULL);
		printf("spun %s s\n", argv[2]);
		fflush(stdout);
		syscall(SYS_exit_group, atoi(argv[3]));
		return 99; /* not reached */
	}
	fprintf(stderr, "usage: probe_cutoff term|ownterm SECONDS FILE | sigwait FILE | exitgroup "
			"SECONDS STATUS\n");
	return 2;
}
