"""signals.py - Python's own signal handling, which a profiler inside the
process must leave working.

  handlers   signal.signal handlers for SIGUSR1 and SIGALRM: SIGUSR1 sent to
             itself COUNT times, each waited for before the next (so none
             coalesce); SIGALRM from an interval timer (setitimer) while
             Python code runs
  sigint     SIGINT sent to itself inside a try: KeyboardInterrupt is raised
             and caught
  ctrl-c     prints "ready", then runs Python code until SIGINT arrives from
             outside (a terminal's Ctrl-C, sent to the process group); the
             KeyboardInterrupt is not caught, so Python ends the way it does
             on Ctrl-C (a traceback, then death by SIGINT)

usage: python3 signals.py handlers|sigint|ctrl-c [COUNT]
Prints what it saw: "usr1 N of COUNT", "alrm N", "KeyboardInterrupt ok".
"""
import os
import signal
import sys
import time


def spin(secs):
    end = time.thread_time() + secs
    x = 0
    while time.thread_time() < end:
        x += 1
    return x


def handlers(count):
    seen = {"usr1": 0, "alrm": 0}

    def on_usr1(signo, frame):
        seen["usr1"] += 1

    def on_alrm(signo, frame):
        seen["alrm"] += 1

    signal.signal(signal.SIGUSR1, on_usr1)
    signal.signal(signal.SIGALRM, on_alrm)
    for i in range(count):
        os.kill(os.getpid(), signal.SIGUSR1)
        deadline = time.monotonic() + 5
        while seen["usr1"] <= i and time.monotonic() < deadline:
            spin(0.0001)
    # 10 ms of wall time per SIGALRM, over 0.5 s of Python code
    signal.setitimer(signal.ITIMER_REAL, 0.01, 0.01)
    spin(0.5)
    signal.setitimer(signal.ITIMER_REAL, 0, 0)
    print("usr1 %d of %d" % (seen["usr1"], count))
    print("alrm %d" % seen["alrm"])


def sigint():
    try:
        os.kill(os.getpid(), signal.SIGINT)
        spin(5)  # the KeyboardInterrupt arrives long before this ends
        print("KeyboardInterrupt not raised")
    except KeyboardInterrupt:
        print("KeyboardInterrupt ok")


def ctrl_c():
    print("ready", flush=True)
    end = time.monotonic() + 30
    while time.monotonic() < end:
        spin(0.01)
    print("no Ctrl-C in 30 s")


def main():
    what = sys.argv[1]
    if what == "handlers":
        handlers(int(sys.argv[2]) if len(sys.argv) > 2 else 100)
    elif what == "sigint":
        sigint()
    elif what == "ctrl-c":
        ctrl_c()
    else:
        sys.exit("usage: signals.py handlers|sigint|ctrl-c [COUNT]")


if __name__ == "__main__":
    main()
