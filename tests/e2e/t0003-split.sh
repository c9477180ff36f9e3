#!/bin/bash
# Truth on a program whose CPU split is known (it measures itself with
# CLOCK_THREAD_CPUTIME_ID): each function's share of the profile is within
# 1 percentage point of the truth, and a thread doing 3x the work gets 3x
# the samples. Run at 4 kHz for ~60k samples: the sampling noise on a 50%
# share is then 0.2 points, so the 1-point bound is 5 of its standard
# deviations (at 1 kHz and 16k samples it was 2.5, and CI saw it fail).
# Then the sampler-thread timer, whose wake-ups are wall-clock: every
# thread sampled in proportion to its CPU time.
. "$(dirname "$0")/lib.sh"

"$SP" run --no-summary -F 4000 -o s.prof -- "$BIN/split" 4 >truth.txt
check "split exits 0" [ $? -eq 0 ]
"$SP" collapse --frame func --metric us s.prof >s.folded
"$SP" info s.prof >info.txt
grep -E '^(timer|achieved|samples)' info.txt
for f in split_a split_b split_c; do
	truth=$(awk -v f=$f '$1 == "truth" && $2 == "func" && $3 == f { printf "%.3f", 100 * $4 }' truth.txt)
	# share among the three work functions only (the calibration and thread
	# start-up are outside them)
	got=$(awk -v f=$f '{ v = $NF; if ($0 ~ /;split_[abc];/) { t += v; if ($0 ~ ";" f ";") m += v } }
		END { printf "%.3f", 100 * m / t }' s.folded)
	say "$f: truth $truth%, profile $got%"
	check "$f within 1 point" awk -v a="$truth" -v b="$got" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1.0) }'
done
# stackprof starts the threads (to sample them from their first
# instruction), but no frame of its own may sit in their stacks
check "the threads' stacks go start_thread;split_thread, nothing of stackprof's between" \
	bash -c "grep -q ';start_thread;split_thread;' s.folded && ! grep -q 'sp_thread_start' s.folded"
one=$(awk '/split-1x/ && /samples/ { print $3 }' info.txt)
three=$(awk '/split-3x/ && /samples/ { print $3 }' info.txt)
t1=$(awk '$2 == "thread" && $3 == "split-1x" { print $4 }' truth.txt)
t3=$(awk '$2 == "thread" && $3 == "split-3x" { print $4 }' truth.txt)
say "samples: split-1x $one, split-3x $three; CPU seconds (truth): $t1, $t3"
# 3x the work is 3x the CPU only on a quiet machine: while both threads run
# they share caches and cores, and once split-1x ends split-3x runs alone and
# faster (seen under ctest -j2: 2.2x the CPU for 3x the work). So the tight
# check is against the CPU time each thread measured itself, and the
# nominal 3x is checked loosely
check "the 3x thread has about 3x the samples of the 1x thread" \
	awk -v a="$one" -v b="$three" 'BEGIN { r = b / a; exit !(r > 2.0 && r < 3.6) }'
check "the sample ratio matches the CPU-time ratio within 3%" \
	awk -v a="$one" -v b="$three" -v x="$t1" -v y="$t3" 'BEGIN { r = (b / a) / (y / x); exit !(r > 0.97 && r < 1.03) }'

"$SP" run --no-summary -F 1000 --timer thread -o th.prof -- "$BIN/split" 1 >thtruth.txt
check "thread timer: split exits 0" [ $? -eq 0 ]
"$SP" info th.prof >thinfo.txt
grep -E '^(timer|achieved|samples)' thinfo.txt
check "thread timer: it ran" grep -q '^timer: *sampler-thread' thinfo.txt
# The ticker is a thread of its own: on 2 cores beside split's 2 busy
# threads, and more so with other processes running, it wakes late, and
# fewer samples carry more weight each. Under heavier load it goes the
# other way too: a thread preempted after running half an interval is
# signalled as well, and gets its sample when it runs again, with less
# than a period of CPU behind it (1104 per CPU-second in a fresh-clone CI
# run while other work loaded the machine). The rate is then a load figure, not
# the timer's: the bound below catches a timer that stops or runs away,
# and the CPU check after it holds the weights to 3%.
check "thread timer: 500-1500 samples per CPU-second at 1 kHz" \
	has thinfo.txt '$1 == "achieved:"' '$2 >= 500 && $2 <= 1500'
# the profile's CPU per thread (samples x weights) against the truth; a
# thread the ticker finds preempted at a wake-up is sampled at a later one,
# with the weight of all the time since
cpu() { awk -v n="$1" '$2 == n && $4 == "samples" { v = $5; u = v; sub(/[a-z]+$/, "", v); sub(/^[0-9.]+/, "", u);
	print v * (u == "s" ? 1 : u == "ms" ? 1e-3 : 1e-6) }' thinfo.txt; }
p1=$(cpu split-1x)
p3=$(cpu split-3x)
t1=$(awk '$2 == "thread" && $3 == "split-1x" { print $4 }' thtruth.txt)
t3=$(awk '$2 == "thread" && $3 == "split-3x" { print $4 }' thtruth.txt)
say "thread timer: profile CPU split-1x ${p1}s, split-3x ${p3}s; truth ${t1}s, ${t3}s"
check "thread timer: each thread's CPU in the profile within 3% of the truth" \
	awk -v a="$p1" -v b="$p3" -v x="$t1" -v y="$t3" 'BEGIN { exit !(a > 0.97 * x && a < 1.03 * x && b > 0.97 * y && b < 1.03 * y) }'
finish
