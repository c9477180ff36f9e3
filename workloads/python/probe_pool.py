"""probe_pool.py METHOD DIR - a multiprocessing Pool ended by terminate().

Starts a Pool of 2 workers with the start method METHOD (spawn or
forkserver); each worker burns CPU in burn() and, once it has burned
0.3 s, writes its pid to DIR/w.<pid>. When both have, the script calls
pool.terminate(), which SIGTERMs the workers mid-work (what `with Pool()`
does on leaving the block), joins them and prints their exit codes.
Workers run at most 20 s if no one ends them. Exits 0 when both workers
died of SIGTERM.
"""
import multiprocessing as mp
import os
import sys
import time


def burn(dirname):
    t = time.thread_time()
    told = False
    x = 0
    while time.thread_time() - t < 20:
        for _ in range(10000):
            x += 1
        if not told and time.thread_time() - t >= 0.3:
            with open(os.path.join(dirname, "w.%d" % os.getpid()), "w") as f:
                f.write("%d\n" % os.getpid())
            told = True
    return x


def main():
    method, dirname = sys.argv[1], sys.argv[2]
    ctx = mp.get_context(method)
    pool = ctx.Pool(2)
    pids = sorted(p.pid for p in pool._pool)
    res = pool.map_async(burn, [dirname, dirname], chunksize=1)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if all(os.path.exists(os.path.join(dirname, "w.%d" % p)) for p in pids):
            break
        time.sleep(0.02)
    else:
        print("the workers did not start burning")
        return 1
    workers = list(pool._pool)
    pool.terminate()
    pool.join()
    codes = [w.exitcode for w in workers]
    print("workers ended with", codes)
    return 0 if codes == [-15, -15] else 1


if __name__ == "__main__":
    sys.exit(main())
