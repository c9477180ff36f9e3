#!/usr/bin/env python3
"""dump-lines.py - fixtures for tests/unit/test-pyline.c.

Run it with each CPython 3.10 to 3.13:

    python3.X tests/python/dump-lines.py > tests/python/fixtures/lines-3.X.txt

It compiles a few standard-library modules and a generated source made to
stress the line tables (big line jumps both ways, long code, long columns,
multi-line expressions, artificial instructions) and writes, for every code
object in them, recursively: its co_firstlineno, its co_linetable in hex, and
the line CPython itself gives each instruction (code unit), taken from
co_lines(), which reads the table with the same code as frame.f_lineno and
tracebacks. The C test decodes each table and compares every code unit.

Output, one record per code object:
    code FIRSTLINENO NUNITS HEXTABLE NAME
    lines COUNT:LINE COUNT:LINE ...     (run-length; LINE "-" means no line)
"""
import importlib.util
import platform
import sys
import types

# small enough to keep the fixtures small, varied enough to meet nested
# functions, lambdas, generators, comprehensions, classes, try/finally,
# with-blocks, module code and long functions
MODULES = ["argparse", "contextlib", "textwrap", "json.decoder", "fnmatch"]


def synthetic():
    """A source made to meet every branch of both table formats."""
    out = []

    def emit(line):
        out.append(line)

    emit("def long_function(x):")  # > 256 instructions, ranges > 254 bytes
    for i in range(300):
        emit(f"    x = (x * {i} + {i}) % 1000003")
    emit("    return x")
    emit("def big_jumps(n):")
    emit("    a = n")
    out.extend([""] * 1000)  # +1000 lines: several 3.10 pairs, 2-chunk varint
    emit("    b = a + 1")
    out.extend(["# filler"] * 100000)  # +100000: a 3-chunk varint
    emit("    for i in range(n):")  # a loop back over > 300 lines
    for i in range(320):
        emit(f"        b += i * {i}")
    emit("    return b")
    emit("def wide(x):")  # columns beyond 127: the long form
    emit("    return " + " + ".join(["x"] * 60) + " + len([y for y in range(x)])")
    emit("def multiline(a, b):")  # start and end lines differ
    emit("    return (a +")
    emit("            b +")
    emit("            (lambda q:")
    emit("                q * 2)(a))")
    emit("def gen(n):")
    emit("    for i in range(n):")
    emit("        try:")
    emit("            yield i")
    emit("        finally:")
    emit("            n -= 1")
    emit("    with open('/dev/null') as f:")
    emit("        yield {k: v for k, v in zip(range(n), range(n))}")
    emit("async def coro(x):")
    emit("    async with x as y:")
    emit("        return [await z for z in y]")
    emit("class K:")
    emit("    def method(self, *a, **k):")
    emit("        return super().method(*a, **k)")
    emit("    prop = property(lambda self: (")
    emit("        self))")
    emit("x = (1 +")
    out.extend([""] * 200)
    emit("     2)")  # an expression across 200 lines
    emit("y = [i for i in range(10) if i % 2]")
    emit("z = lambda: 0")
    return "\n".join(out) + "\n"


def code_objects(co):
    yield co
    for c in co.co_consts:
        if isinstance(c, types.CodeType):
            yield from code_objects(c)


def unit_lines(co):
    """The line of each code unit, by co_lines() (None: no line)."""
    nunits = len(co.co_code) // 2
    lines = [None] * nunits
    end = 0
    for start, stop, line in co.co_lines():
        assert start % 2 == 0 and stop % 2 == 0 and start >= end, (co, start, stop)
        for u in range(start // 2, min(stop // 2, nunits)):
            lines[u] = line
        end = stop
    # the table covers the code exactly: the C test expects "no line" past it
    assert end == len(co.co_code), (co, end, len(co.co_code))
    return lines


def runs(lines):
    out = []
    prev, count = object(), 0
    for ln in lines:
        if ln == prev:
            count += 1
            continue
        if count:
            out.append(f"{count}:{'-' if prev is None else prev}")
        prev, count = ln, 1
    if count:
        out.append(f"{count}:{'-' if prev is None else prev}")
    return " ".join(out)


def main():
    sources = []
    for name in MODULES:
        spec = importlib.util.find_spec(name)
        with open(spec.origin, encoding="utf-8") as f:
            sources.append((spec.origin, f.read()))
    sources.append(("<synthetic>", synthetic()))

    print(f"# dump-lines.py on CPython {platform.python_version()} "
          f"({sys.executable}); modules: {' '.join(MODULES)} <synthetic>")
    print(f"version {sys.version_info.major}.{sys.version_info.minor}")
    total = 0
    for filename, src in sources:
        top = compile(src, filename, "exec", dont_inherit=True)
        for co in code_objects(top):
            name = getattr(co, "co_qualname", co.co_name).replace(" ", "_")
            print(f"code {co.co_firstlineno} {len(co.co_code) // 2} "
                  f"{co.co_linetable.hex() or '-'} {name}@{filename.rsplit('/', 1)[-1]}")
            print(f"lines {runs(unit_lines(co))}")
            total += 1
    print(f"# {total} code objects", file=sys.stderr)


if __name__ == "__main__":
    main()
