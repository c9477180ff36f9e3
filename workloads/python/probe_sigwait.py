"""probe_sigwait.py - the shutdown design in Python (issue 30, point 9): the
main thread blocks every signal with signal.pthread_sigmask, worker threads
(which inherit the mask) do CPU work, and one of them sends SIGUSR1 when it
is done; the main thread waits for it with signal.sigwait, then with
signal.sigtimedwait, then with signal.sigwaitinfo. A profiler's SIGTRAP or
SIGPROF must never come out of these waits.

It also prints what pthread_sigmask says of SIGTRAP and SIGPROF (blocked,
as the program asked) and, after raising SIGTRAP itself while it is
blocked, that it is the program's own SIGTRAP that the next wait returns.

usage: python3 probe_sigwait.py
Exit 0 when every wait returned the signal the program sent, 1 otherwise.
"""
import os
import signal
import sys
import threading
import time


def spin(seconds):
    end = time.thread_time() + seconds
    x = 1.0
    while time.thread_time() < end:
        for _ in range(2000):
            x = x * 1.0000001 + 0.5
    return x


def worker(send):
    spin(0.05)
    if send:
        os.kill(os.getpid(), signal.SIGUSR1)


def round_of(wait):
    spin(0.05)
    ts = [threading.Thread(target=worker, args=(i == 1,)) for i in range(2)]
    for t in ts:
        t.start()
    got = wait()
    for t in ts:
        t.join()
    return got


def main():
    everything = signal.valid_signals()
    signal.pthread_sigmask(signal.SIG_BLOCK, everything)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    print("SIGTRAP", "blocked" if signal.SIGTRAP in mask else "open")
    print("SIGPROF", "blocked" if signal.SIGPROF in mask else "open")
    bad = 0
    waits = [
        ("sigwait", lambda: signal.sigwait(everything)),
        ("sigtimedwait", lambda: (signal.sigtimedwait(everything, 10) or [None])[0]),
        ("sigwaitinfo", lambda: signal.sigwaitinfo(everything).si_signo),
    ]
    for name, wait in waits:
        sig = round_of(wait)
        print("%s: %s" % (name, signal.Signals(sig).name if sig else "nothing"))
        bad |= sig != signal.SIGUSR1
    signal.raise_signal(signal.SIGTRAP)
    sig = round_of(lambda: signal.sigwait(everything))
    print("own: %s" % signal.Signals(sig).name)
    bad |= sig != signal.SIGTRAP
    sig = signal.sigwait(everything)
    print("then: %s" % signal.Signals(sig).name)
    bad |= sig != signal.SIGUSR1
    sys.stdout.flush()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
