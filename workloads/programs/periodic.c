/*
 * periodic.c - threads that repeat one fixed cycle of CPU, like an inference
 * loop, with a per-function CPU split the program measures itself.
 * It is the workload of bench/accuracy.sh --periodic and tests/e2e/t0030-phase.sh:
 * a sampler whose samples fall at a fixed phase of the cycle sees the same
 * few points of it again and again, and its profile is off by far more than
 * its sample count explains.
 *
 * Each thread runs the phases periodic_a, periodic_b, periodic_c and
 * periodic_d (noinline, each one call of the leaf `spin`) in that order,
 * over and over; the work of a phase is a number of loop iterations, never
 * a time. The default cycle is 12 ms of CPU: 6, 2, 2 and 2 ms (a 3:1:1:1
 * split, 50% / 16.7% / 16.7% / 16.7%). Why those lengths:
 *
 *   - A POSIX CPU timer fires only on a kernel tick, 4 ms apart at HZ=250,
 *     whatever its period. A thread that keeps its CPU is sampled at CPU
 *     times 4 ms apart, so at 3 points of a 12 ms cycle: phi, phi+4, phi+8.
 *     For any phi two of them fall in periodic_a and one in periodic_c, or
 *     one each in periodic_a, _b and _d: 67/0/33/0% or 33/33/0/33% against
 *     the truth's 50/17/17/17, 33 points of total variation. Changing
 *     the timer's period, even at random, changes which ticks are used,
 *     not where they fall.
 *   - A timer in the thread's own CPU time (perf task-clock) at 10 ms lands
 *     on 6 points of the cycle, 2 ms apart (10 k mod 12): every phase is a
 *     multiple of 2 ms, so every phase gets its exact share, whatever the
 *     phase of the first sample. The same holds at 1 kHz (1 ms apart).
 *   - A cycle whose length drifts lets the tick grid slide over it and
 *     averages the bias away: a calibration error of 0.5% sweeps the grid
 *     across the 4 ms spacing once every 0.8 s. So the work of the next
 *     cycle is steered from the clocks, by at most 20% of a cycle. Each
 *     phase is still a fixed amount of work once started.
 *
 * How the cycle is held (-g):
 *   tick  (default) every cycle starts at the same point of the 4 ms tick
 *         period in wall time (CLOCK_MONOTONIC, the clock the tick keeps;
 *         -k sets the tick). While a thread keeps its CPU this is a cycle
 *         of exactly 12 ms of CPU, as a forward pass repeats. When it loses
 *         its CPU off the tick (a profiler's writer thread waking up,
 *         another process), the tick grid moves against its CPU time and
 *         the next cycle gets back in phase with it, as a loop paced by
 *         that clock would; a preemption of whole ticks (time slices end on
 *         ticks) needs nothing. With a bursty process competing for the
 *         CPUs (the threads waiting 0.3-3.6 s of an 8 s run) the POSIX timer
 *         at 100 Hz was still 10-23 points off, against 28-33 when idle.
 *   cpu   every cycle ends on the grid t0 + j * 12 ms of the thread's CPU
 *         time: periodic in CPU time only. Preemptions off the tick then
 *         move the tick grid for good, and on a shared machine the lock
 *         comes and goes with the load.
 *   off   fixed work from the start-up calibration.
 * A timer in the thread's CPU time is exact with any of them ("truth
 * offcpu" below shows how long each thread waited).
 *
 * The truth: one CLOCK_THREAD_CPUTIME_ID reading at each phase boundary. A
 * reading is a system call of its own (~0.1-1 us); about one reading's
 * worth of each interval is outside the phase's function, so the cost of
 * one reading, measured at start, is taken off every phase (it would be
 * ~0.01% of a 2 ms phase anyway).
 *
 * Output (stdout), in split.c's form:
 *   truth func periodic_a 0.50012     (share of the four functions' CPU)
 *   truth thread periodic-1 3.012     (CPU seconds of that thread)
 *   truth offcpu periodic-1 0.004     (seconds it was runnable or blocked)
 *   truth cycle_us 12000.3            (mean CPU time of a cycle)
 *   truth clock_read_ns 312           (one CLOCK_THREAD_CPUTIME_ID reading)
 *
 * Usage: periodic [-s SECONDS] [-t THREADS] [-c CYCLE_US] [-g tick|cpu|off]
 *                 [-k TICK_US]
 *   -s SECONDS   CPU seconds per thread (default 3)
 *   -t THREADS   worker threads (default 2)
 *   -c CYCLE_US  CPU microseconds of one cycle (default 12000; the phases
 *                scale with it)
 *   -g GRID      how the cycle is held (default tick; above)
 *   -k TICK_US   the kernel's tick for -g tick (default 4000: HZ=250, as on
 *                Debian's kernels; the 12 ms cycle is chosen for it)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE	     __attribute__((noinline))
#define PERIODIC_PHASES	     4
#define PERIODIC_MAX_THREADS 64

static volatile double periodic_sink;

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static NOINLINE void spin(long n)
{
	double x = 0;
	for (long i = 0; i < n; i++)
		x += (double)i * 0.5;
	periodic_sink += x;
}

NOINLINE void periodic_a(long n)
{
	spin(n);
}

NOINLINE void periodic_b(long n)
{
	spin(n);
}

NOINLINE void periodic_c(long n)
{
	spin(n);
}

NOINLINE void periodic_d(long n)
{
	spin(n);
}

static void (*const periodic_fn[PERIODIC_PHASES])(long) = {periodic_a, periodic_b, periodic_c,
							   periodic_d};
static const char *const periodic_name[PERIODIC_PHASES] = {"periodic_a", "periodic_b", "periodic_c",
							   "periodic_d"};
/* sixths of the cycle: 6, 2, 2 and 2 ms of a 12 ms cycle */
static const int periodic_sixths[PERIODIC_PHASES] = {3, 1, 1, 1};

enum periodic_grid { PERIODIC_GRID_TICK, PERIODIC_GRID_CPU, PERIODIC_GRID_OFF };

struct periodic_arg {
	char name[16];
	long cycles;
	double cycle_ns;
	double rate; /* spin iterations per CPU nanosecond, the first guess */
	enum periodic_grid grid;
	int64_t tick_ns;
	int64_t read_ns;
	int64_t cpu[PERIODIC_PHASES];
	int64_t total;
	int64_t wall;
};

static void *periodic_thread(void *p)
{
	struct periodic_arg *a = p;
	pthread_setname_np(pthread_self(), a->name);
	double rate = a->rate;
	double len = a->cycle_ns; /* CPU time the next cycle should take */
	int64_t w0 = mono_ns();
	int64_t t0 = thread_cpu_ns();
	int64_t prev = t0;
	for (long c = 0; c < a->cycles; c++) {
		int64_t start = prev;
		long work = 0;
		for (int k = 0; k < PERIODIC_PHASES; k++) {
			long n = (long)(rate * len * periodic_sixths[k] / 6);
			periodic_fn[k](n);
			work += n;
			int64_t now = thread_cpu_ns();
			a->cpu[k] += now - prev - a->read_ns;
			prev = now;
		}
		if (a->grid == PERIODIC_GRID_OFF)
			continue;
		/*
		 * Track the rate slowly (it moves with the machine's load) and
		 * steer the next cycle's length. tick: cycles start at the same
		 * point of the tick period in wall time (the error is folded to
		 * the nearest tick), the whole error at once, so that a thread
		 * that lost its CPU off the tick is back in phase a cycle later;
		 * cpu: cycles end on the grid t0 + j * cycle of its CPU time, a
		 * third of the error at a time.
		 */
		rate = 0.9 * rate + 0.1 * (double)work / (double)(prev - start);
		double err;
		if (a->grid == PERIODIC_GRID_CPU) {
			err = (double)(prev - t0) - (double)(c + 1) * a->cycle_ns;
		} else {
			err = (double)((mono_ns() - w0) % a->tick_ns);
			if (err > (double)a->tick_ns / 2)
				err -= (double)a->tick_ns;
		}
		len = a->cycle_ns - (a->grid == PERIODIC_GRID_CPU ? err / 3 : err);
		if (len < 0.8 * a->cycle_ns)
			len = 0.8 * a->cycle_ns;
		if (len > 1.2 * a->cycle_ns)
			len = 1.2 * a->cycle_ns;
	}
	a->total = thread_cpu_ns() - t0;
	a->wall = mono_ns() - w0;
	return NULL;
}

/* the cost of one clock reading: the median of 7 batches of 1000 */
static int64_t clock_read_cost(void)
{
	int64_t v[7];
	for (int b = 0; b < 7; b++) {
		int64_t s = thread_cpu_ns();
		for (int i = 0; i < 1000; i++)
			(void)thread_cpu_ns();
		v[b] = (thread_cpu_ns() - s) / 1001;
	}
	for (int i = 1; i < 7; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			int64_t t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[3];
}

/* spin iterations per CPU nanosecond: the median of 5 runs of ~10 ms */
static double spin_rate(void)
{
	long n = 2000000;
	double v[5];
	spin(n); /* warm up */
	for (int r = 0; r < 5; r++) {
		int64_t s = thread_cpu_ns();
		spin(n);
		v[r] = (double)n / (double)(thread_cpu_ns() - s);
	}
	for (int i = 1; i < 5; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[2];
}

static void usage(void)
{
	fprintf(stderr, "usage: periodic [-s SECONDS] [-t THREADS] [-c CYCLE_US] [-g tick|cpu|off] "
			"[-k TICK_US]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	double secs = 3, cycle_us = 12000;
	int threads = 2, opt;
	enum periodic_grid grid = PERIODIC_GRID_TICK;
	double tick_us = 4000;
	while ((opt = getopt(argc, argv, "s:t:c:g:k:")) != -1) {
		switch (opt) {
		case 's':
			secs = atof(optarg);
			break;
		case 't':
			threads = atoi(optarg);
			break;
		case 'c':
			cycle_us = atof(optarg);
			break;
		case 'k':
			tick_us = atof(optarg);
			break;
		case 'g':
			if (!strcmp(optarg, "tick"))
				grid = PERIODIC_GRID_TICK;
			else if (!strcmp(optarg, "cpu"))
				grid = PERIODIC_GRID_CPU;
			else if (!strcmp(optarg, "off"))
				grid = PERIODIC_GRID_OFF;
			else
				usage();
			break;
		default:
			usage();
		}
	}
	if (optind != argc || !(secs > 0 && secs < 86400) || threads < 1 ||
	    threads > PERIODIC_MAX_THREADS || !(cycle_us >= 100 && cycle_us <= 1e7) ||
	    !(tick_us >= 100 && tick_us <= 1e6))
		usage();
	pthread_setname_np(pthread_self(), "periodic-main");

	int64_t read_ns = clock_read_cost();
	double rate = spin_rate();
	long cycles = (long)(secs * 1e6 / cycle_us);
	if (cycles < 1)
		cycles = 1;
	static struct periodic_arg arg[PERIODIC_MAX_THREADS];
	static pthread_t tid[PERIODIC_MAX_THREADS];
	for (int i = 0; i < threads; i++) {
		snprintf(arg[i].name, sizeof(arg[i].name), "periodic-%d", i + 1);
		arg[i].cycles = cycles;
		arg[i].cycle_ns = cycle_us * 1e3;
		arg[i].rate = rate;
		arg[i].grid = grid;
		arg[i].tick_ns = (int64_t)(tick_us * 1e3);
		arg[i].read_ns = read_ns;
		if (pthread_create(&tid[i], NULL, periodic_thread, &arg[i])) {
			fprintf(stderr, "periodic: pthread_create failed\n");
			return 1;
		}
	}
	double cpu[PERIODIC_PHASES] = {0}, sum = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(tid[i], NULL);
		for (int k = 0; k < PERIODIC_PHASES; k++) {
			cpu[k] += (double)arg[i].cpu[k];
			sum += (double)arg[i].cpu[k];
		}
	}
	for (int k = 0; k < PERIODIC_PHASES; k++)
		printf("truth func %s %.5f\n", periodic_name[k], cpu[k] / sum);
	for (int i = 0; i < threads; i++)
		printf("truth thread %s %.5f\n", arg[i].name, (double)arg[i].total / 1e9);
	for (int i = 0; i < threads; i++)
		printf("truth offcpu %s %.5f\n", arg[i].name,
		       (double)(arg[i].wall - arg[i].total) / 1e9);
	printf("truth cycle_us %.1f\n", sum / 1e3 / (double)cycles / threads);
	printf("truth clock_read_ns %lld\n", (long long)read_ns);
	return 0;
}
