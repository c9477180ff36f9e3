# bench/tvfloor.awk - the noise floor of a sampled profile: the total
# variation distance from the truth that an ideal, unbiased random sampler
# gets with n samples. Used by bench/accuracy.sh and tests/e2e/t0030-phase.sh.
#
# Reads the truth ("truth func NAME SHARE" lines, as split.c and periodic.c
# print it; the shares are renormalised), draws REPS multinomial samples of
# size N from it (each sample a uniform number mapped through the
# cumulative shares; awk's rand() seeded with SEED, so the figures repeat),
# and prints the median, the 99th and the 99.9th percentile of their total
# variation distance (half the sum of |share - truth|), in percentage
# points, to 0.01:
#   awk -v n=1500 -v reps=2000 -v seed=1 -f bench/tvfloor.awk truth.txt
#   1.60 3.66 4.47
# An unbiased sampler is within the median in half of its runs; a sampler
# whose samples lock onto a phase of the program is off by far more.
# Cost: n * reps draws (1500 * 2000 take about half a second).
$1 == "truth" && $2 == "func" { p[++k] = $4 + 0; tot += $4 }
END {
	if (n + 0 < 1 || k < 2 || tot <= 0) { print "- - -"; exit 1 }
	if (reps + 0 < 1) reps = 2000
	srand(seed == "" ? 1 : seed)
	c[0] = 0
	for (i = 1; i <= k; i++) { p[i] /= tot; c[i] = c[i - 1] + p[i] }
	for (r = 0; r < reps; r++) {
		for (i = 1; i <= k; i++) m[i] = 0
		for (s = 0; s < n; s++) {
			u = rand()
			for (j = 1; j < k && u >= c[j]; j++)
				;
			m[j]++
		}
		tv = 0
		for (i = 1; i <= k; i++) { d = m[i] / n - p[i]; tv += d < 0 ? -d : d }
		h[int(tv * 5000)]++ # 0.01-point bins of tv / 2 * 100
	}
	nq = split("0.5 0.99 0.999", q, " ")
	acc = 0; qi = 1; out = ""
	for (b = 0; qi <= nq; b++) {
		acc += h[b]
		while (qi <= nq && acc >= q[qi] * reps) { out = out sprintf("%s%.2f", qi > 1 ? " " : "", (b + 0.5) * 0.01); qi++ }
	}
	print out
}
