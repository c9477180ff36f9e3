"""Control the stackprof sampler from Python, in torch.profiler's shapes.

stackprof samples a program with no code change (``stackprof run --
python3 script.py``). This package is for scripts that want more: named
ranges, a step schedule, and ``profile()`` blocks that say which part of the
run to look at::

    import stackprof

    model = load()                       # not looked at
    with stackprof.profile():            # only this block is shown
        for batch in data:
            with stackprof.record_function("preprocess"):
                x = prep(batch)
            model(x)

The package talks to the preloaded ``libstackprof.so`` through ctypes. When
the program runs without it, every function here does nothing: the choice is
made once, at import, so a call costs a no-op and a decorator returns the
function it was given.

Ranges (``record_function``) belong to the thread that opens them; windows
(``profile``), ``start``/``stop``, the schedule and the step counter are
process-wide. See ``sampler/life/stackprof.h`` for the C functions underneath.
"""

import ctypes
import functools
import sys

_getframe = sys._getframe

__all__ = [
    "active",
    "start",
    "stop",
    "flush",
    "record_function",
    "schedule",
    "step",
    "profile",
]

__version__ = "0.1.0"

# STACKPROF_RANGE_MODULE in stackprof.h: a range pushed for an nn.Module call.
_RANGE_MODULE = 0x1


def _bind():
    """The preloaded library's stackprof_* functions, or None without it."""
    # Two handles on the global scope, where LD_PRELOAD'ed objects are. A
    # CDLL call lets go of the GIL for its duration, and getting it back
    # waits for any busy thread's switch interval (5 ms): two per module
    # call under label_modules. So every call that returns at once goes
    # through PyDLL, which keeps the GIL; only flush, which waits for the
    # writer, lets it go.
    try:
        lib = ctypes.PyDLL(None)
        waits = ctypes.CDLL(None)
        is_active = lib.stackprof_active
    except (OSError, AttributeError):
        return None
    is_active.argtypes = []
    is_active.restype = ctypes.c_int
    if not is_active():
        return None  # loaded, but the sampler did not start (see its stderr)

    def fn(name, restype, *argtypes, dll=lib):
        f = getattr(dll, name, None)
        if f is not None:
            f.argtypes = list(argtypes)
            f.restype = restype
        return f

    c_int, c_uint, c_long = ctypes.c_int, ctypes.c_uint, ctypes.c_long
    c = {
        "start": fn("stackprof_start", None),
        "stop": fn("stackprof_stop", None),
        "flush": fn("stackprof_flush", None, dll=waits),
        "push": fn("stackprof_range_push", c_int, ctypes.c_char_p),
        "push_flags": fn("stackprof_range_push_flags", c_int, ctypes.c_char_p, c_uint),
        "push_python": fn("stackprof_range_push_python", c_int, ctypes.c_char_p, c_uint, c_uint),
        "pop": fn("stackprof_range_pop", c_int),
        "schedule": fn("stackprof_schedule", c_int, c_uint, c_uint, c_uint, c_uint),
        "step": fn("stackprof_step", c_long),
        "window_begin": fn("stackprof_window_begin", c_int),
        "window_end": fn("stackprof_window_end", c_int),
    }
    for name in ("start", "stop", "flush", "push", "pop", "schedule", "step"):
        if c[name] is None:
            return None  # not a stackprof library this package knows
    if c["push_flags"] is None:
        # a library older than range flags: module ranges become plain ranges
        push = c["push"]
        c["push_flags"] = lambda name, flags: push(name)
    if c["push_python"] is None:
        # older than anchors: the range sits at the root of the stack
        push_flags = c["push_flags"]
        c["push_python"] = lambda name, flags, depth: push_flags(name, flags)
    if c["window_begin"] is None:
        # older than windows: the block is still all that is sampled when the
        # run starts paused, but the profile cannot say where it was
        start, stop = c["start"], c["stop"]

        def window_begin():
            start()
            return 1

        def window_end():
            stop()
            return 0

        c["window_begin"], c["window_end"] = window_begin, window_end
    return c


_lib = _bind()


def _noop(*args):
    return None


def _minus_one(*args):
    return -1


if _lib is not None:
    _start, _stop, _flush = _lib["start"], _lib["stop"], _lib["flush"]
    _push_flags, _push_python, _pop = _lib["push_flags"], _lib["push_python"], _lib["pop"]
    _schedule, _step = _lib["schedule"], _lib["step"]
    _window_begin, _window_end = _lib["window_begin"], _lib["window_end"]
else:
    _start = _stop = _flush = _schedule = _step = _noop
    _push_flags = _push_python = _pop = _window_begin = _window_end = _minus_one


def active():
    """True if the stackprof sampler is loaded and running in this process."""
    return _lib is not None


def start():
    """Keep samples from now on (the default unless STACKPROF_START=0)."""
    _start()


def stop():
    """Ignore samples from now on; the timers stop too, so nothing is paid."""
    _stop()


def flush():
    """Write everything sampled so far to the profile, and wait until it is on disk."""
    _flush()


def _encode(name):
    return str(name).encode("utf-8", "replace")


def _py_depth(frame):
    """How many Python frames from the root of the thread's stack through
    ``frame``: where a range pushed by it goes in the profile (the sampler
    counts the frames of each sample the same way)."""
    n = 0
    while frame is not None:
        n += 1
        frame = frame.f_back
    return n


def _pop_to(depth):
    """Close this thread's ranges until ``depth`` are left (or none is)."""
    d = _pop()
    while d > depth:
        d = _pop()


class record_function:
    """A named range, like ``torch.profiler.record_function``.

    As a context manager the range is opened on enter and closed on exit,
    also when the block raises; as a decorator, around every call. Samples
    taken inside carry the name, which becomes a frame of their stack just
    inside the frame of the ``with`` statement, or the decorator's wrapper
    (nested ranges nest). ``args`` is accepted for torch.profiler's
    signature and not recorded. On exit, ranges left open inside the block
    (an ``nn.Module`` forward that raised) are closed too, so one failure
    never shifts every later range.
    """

    __slots__ = ("name", "_name", "_depths")

    def __init__(self, name, args=None):
        self.name = name
        self._name = _encode(name)
        self._depths = []  # a stack: the instance may be entered again inside itself

    if _lib is not None:

        def __enter__(self):
            # the range goes just inside the frame of the with statement
            depth = _py_depth(_getframe(1))
            self._depths.append(_push_python(self._name, 0, depth) - 1)
            return self

        def __exit__(self, *exc):
            depth = self._depths.pop()
            if depth >= 0:
                _pop_to(depth)
            return False

        def __call__(self, fn):
            name = self._name

            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                # just inside this wrapper, which calls fn
                depth = _push_python(name, 0, _py_depth(_getframe(0))) - 1
                try:
                    return fn(*args, **kwargs)
                finally:
                    if depth >= 0:
                        _pop_to(depth)

            return wrapper

    else:

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def __call__(self, fn):
            return fn

    def __repr__(self):
        return "stackprof.record_function(%r)" % (self.name,)


class schedule:
    """A step schedule, like ``torch.profiler.schedule``.

    After ``wait`` steps, ``warmup`` more are skipped too, then ``active``
    steps are sampled; the cycle runs ``repeat`` times (0: for ever). Steps
    are counted by ``step()`` (or ``profile.step()``). Making one sets it in
    the sampler at once, counting from step 0; ``profile(schedule=...)``
    sets it again when the block opens. Warm-up steps are not sampled at all
    (torch.profiler traces them and throws the trace away).
    """

    __slots__ = ("wait", "warmup", "active", "repeat")

    def __init__(self, *, wait, warmup, active, repeat=0):
        for k, v in (("wait", wait), ("warmup", warmup), ("active", active), ("repeat", repeat)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0 or v >= 1 << 32:
                raise ValueError("schedule: %s must be an int from 0 to 2**32-1, got %r" % (k, v))
        if active < 1:
            raise ValueError("schedule: active must be at least 1")
        self.wait, self.warmup, self.active, self.repeat = wait, warmup, active, repeat
        self._apply()

    def _apply(self):
        _schedule(self.wait, self.warmup, self.active, self.repeat)

    def __call__(self, step):
        """Whether step number ``step`` (from 0) is sampled."""
        cycle = self.wait + self.warmup + self.active
        if self.repeat and step >= cycle * self.repeat:
            return False
        return step % cycle >= self.wait + self.warmup

    def __repr__(self):
        return "stackprof.schedule(wait=%d, warmup=%d, active=%d, repeat=%d)" % (
            self.wait,
            self.warmup,
            self.active,
            self.repeat,
        )


_Schedule = schedule  # profile()'s argument of the same name hides the class


def step():
    """Mark the end of one step (one inference, one batch) for the schedule."""
    _step()


# Whether a profile() block set a schedule, to be undone by the next block without one.
_schedule_set = [False]


class profile:
    """A block of the run to look at, like ``torch.profiler.profile``.

    The block is a window of the whole process: sampling starts when it
    opens and stops when it closes, and the profile records both times.
    Once a program has opened a window, the stackprof commands show only
    the samples taken inside windows, even when sampling ran from the start
    (``stackprof run`` samples the imports too; STACKPROF_START=0 spares
    them). Blocks may nest; the outermost counts. ``schedule`` applies a
    ``stackprof.schedule`` from step 0 of the block; a block without one
    samples every step (undoing an earlier block's schedule). Other
    torch.profiler arguments are not taken: there is nothing to configure.
    """

    __slots__ = ("schedule", "_open")

    def __init__(self, schedule=None):
        if schedule is not None and not isinstance(schedule, _Schedule):
            raise TypeError("profile: schedule must come from stackprof.schedule()")
        self.schedule = schedule
        self._open = False

    def start(self):
        """Open the window (what entering the block does)."""
        if self._open:
            return
        if self.schedule is not None:
            self.schedule._apply()
            _schedule_set[0] = True
        elif _schedule_set[0]:
            _schedule(0, 0, 1, 0)  # every step active
            _schedule_set[0] = False
        _window_begin()
        self._open = True

    def stop(self):
        """Close the window (what leaving the block does)."""
        if self._open:
            self._open = False
            _window_end()

    def step(self):
        """Mark the end of one step for the block's schedule."""
        _step()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False
