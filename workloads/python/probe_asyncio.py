"""probe_asyncio - many asyncio tasks, a result that is the same on every run.

Issue 30, point 2: CPython 3.12 at 1 kHz and above under perf-sigtrap died
of SIGSEGV in this kind of program (a guarded read of Python's memory that
faults while another SIGTRAP is pending). Usage: probe_asyncio.py [TASKS
[ROUNDS]]; prints the tasks' checksum and exits 0.
"""
import asyncio
import sys


async def worker(i, rounds, queue):
    acc = i
    for r in range(rounds):
        # a little Python work between switches, with short-lived objects
        acc = (acc * 1103515245 + r + sum(k * k for k in range(i % 7 + 3))) % 2147483647
        if r % 4 == 0:
            await queue.put((i, acc))
        await asyncio.sleep(0)
    return acc


async def drain(queue, n):
    seen = 0
    for _ in range(n):
        i, acc = await queue.get()
        seen = (seen * 31 + i + acc) % 1000000007
    return seen


async def main(tasks, rounds):
    queue = asyncio.Queue()
    puts = tasks * ((rounds + 3) // 4)
    workers = [asyncio.create_task(worker(i, rounds, queue)) for i in range(tasks)]
    results = await asyncio.gather(*workers)
    # every put is done: the order of the queue is the scheduler's, the sum is not
    total = await drain(queue, puts)
    return sum(results) % 1000000007, puts, total >= 0


if __name__ == "__main__":
    tasks = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 40
    checksum, puts, ok = asyncio.run(main(tasks, rounds))
    print(f"asyncio: {tasks} tasks x {rounds} rounds, checksum {checksum}, {puts} puts, drained {ok}")
