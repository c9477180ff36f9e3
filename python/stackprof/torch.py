"""nn.Module paths on samples, like torch.profiler's ``with_modules``.

::

    import stackprof.torch
    handle = stackprof.torch.label_modules(model)
    model(x)           # samples carry ResNet/layer1/0/conv1 and the like
    handle.remove()

Every submodule gets a forward pre-hook that opens a range and a forward
hook that closes it. A range's name is one segment of the path: the
attribute name in the parent module (``conv1``, ``0``), the class name for
the model itself (``ResNet``). The segments nest as the calls nest, so a
sample inside ``layer1[0].conv1`` has the ranges ResNet, layer1, 0, conv1
from the outside in, and a module called twice is counted twice. The ranges
are marked as module ranges in the profile, apart from record_function's.

Without the preloaded library nothing is registered. torch itself is not
imported here: any object with ``named_modules`` and the two hook
registrations works.
"""

import sys
import threading

from . import _RANGE_MODULE, _lib, _pop_to, _push_python, _py_depth

__all__ = ["label_modules"]

_getframe = sys._getframe


class _Calls(threading.local):
    def __init__(self):
        # one entry per module call whose range is open on this thread:
        # (the frame that ran its hooks, the range depth before its push,
        # that frame's Python depth: its range's place in the stack)
        self.open = []


_calls = _Calls()


def _distance(frame, here):
    """How many frames ``here`` is inside ``frame`` (0: it is ``frame``), or
    -1 if ``frame`` is not among its callers, i.e. no longer running."""
    n = 0
    while here is not None:
        if here is frame:
            return n
        here = here.f_back
        n += 1
    return -1


def _pre_hook(name):
    push, calls = _push_python, _calls

    def pre(module, args):
        frame = _getframe(1)  # the module's __call__, which runs both hooks
        stack = calls.open
        # A forward that raised never ran its forward hook (torch < 2.0 has
        # no always_call): its entry is on top, and its caller is not among
        # ours. Close such ranges here, before they swallow this call.
        # Normally the top entry is this call's parent, a few frames up,
        # and this frame's depth is the parent's plus that distance.
        while stack:
            d = _distance(stack[-1][0], frame)
            if d > 0:
                pydepth = stack[-1][2] + d
                break
            _, depth, _ = stack.pop()
            if depth >= 0:
                _pop_to(depth)
        else:
            pydepth = _py_depth(frame)
        stack.append((frame, push(name, _RANGE_MODULE, pydepth) - 1, pydepth))

    return pre


def _post_hook(module, args, output):
    frame = _getframe(1)
    stack = _calls.open
    # normally the top entry; deeper when calls inside raised and were caught
    for i in range(len(stack) - 1, -1, -1):
        if stack[i][0] is frame:
            depth = stack[i][1]
            del stack[i:]
            if depth >= 0:
                _pop_to(depth)
            return
    # no entry: the call began before the hooks were registered


class Handle:
    """Returned by label_modules(): remove() takes the hooks off again.

    Also a context manager that removes them on exit.
    """

    __slots__ = ("_hooks",)

    def __init__(self, hooks):
        self._hooks = hooks

    def remove(self):
        hooks, self._hooks = self._hooks, []
        for h in hooks:
            h.remove()

    def __len__(self):
        """The number of modules labelled (0 without the profiler)."""
        return len(self._hooks) // 2

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def label_modules(model, name=None):
    """Label every sample taken inside a module's forward with its module path.

    ``model`` is an ``nn.Module``; every module in ``model.named_modules()``
    (the model included) gets a forward pre-hook and a forward hook. The
    path's root segment is ``name``, by default the model's class name.
    A module that appears twice in the tree is labelled once, by the first
    name it has; where it is called decides its place in the path.

    Returns a Handle; ``handle.remove()`` removes every hook. Without the
    preloaded stackprof library no hook is registered at all.

    When a forward raises, its range and those of the modules it was
    inside are closed at the next module call or at the end of an enclosing
    module (torch 2's ``always_call`` closes them at once, where it exists).
    """
    if _lib is None:
        return Handle([])
    root = type(model).__name__ if name is None else str(name)
    hooks = []
    always = True
    try:
        for path, module in model.named_modules():
            seg = path.rpartition(".")[2] if path else root
            hooks.append(module.register_forward_pre_hook(_pre_hook(seg.encode("utf-8", "replace"))))
            if always:
                try:
                    hooks.append(module.register_forward_hook(_post_hook, always_call=True))
                    continue
                except TypeError:
                    always = False  # torch < 2.0
            hooks.append(module.register_forward_hook(_post_hook))
    except BaseException:
        for h in hooks:
            h.remove()
        raise
    return Handle(hooks)
