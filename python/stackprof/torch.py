"""nn.Module paths on samples, like torch.profiler's ``with_modules``.

::

    import stackprof.torch
    handle = stackprof.torch.label_modules(model)
    model(x)           # samples carry ResNet/layer1/0/conv1 and the like
    handle.remove()

Each call of a labelled module opens a range before its forward and
closes it after. A range's name is one segment of the path: the attribute
name in the parent module (``conv1``, ``0``), the class name for the model
itself (``ResNet``). The segments nest as the calls nest, so a sample
inside ``layer1[0].conv1`` has the ranges ResNet, layer1, 0, conv1 from the
outside in, and a module called twice is counted twice. The ranges are
marked as module ranges in the profile, apart from record_function's.

How the ranges are opened and closed, by what ``model`` is:

- a ``torch.nn.Module``, with a torch that has process-wide module hooks
  (``torch.nn.modules.module.register_module_forward_pre_hook`` and
  ``register_module_forward_hook``; torch 1.13 has them): nothing is
  stored on the model. The labelled modules go into a registry keyed by
  ``id()`` (entries leave it when their module is garbage collected, so
  it keeps no model alive), and one pre-hook and one forward hook are
  registered for the whole process while any labelled module remains.
  torch calls them for every module call in the process; for a module
  that is not in the registry they return at once. So pickling,
  ``torch.save``, ``copy.deepcopy`` and ``torch.jit.script`` see the model
  as they would without stackprof, and a copy is not labelled.
- anything else with ``named_modules`` and the two per-module hook
  registrations (a torch without process-wide hooks, a look-alike): each
  module gets its own forward pre-hook and forward hook, as the module's
  state: such a model pickles and scripts only once ``remove()`` took them
  off.

Without the preloaded library nothing is registered either way, and torch
itself is never imported here.
"""

import sys
import threading
import weakref

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


def _enter(frame, name, push=_push_python, calls=_calls):
    """Open the range ``name`` for the module call whose hooks run in
    ``frame`` (the module's ``__call__``)."""
    stack = calls.open
    # A forward that raised never ran its forward hook (a torch without
    # always_call): its entry is on top, and its caller is not among ours.
    # Close such ranges here, before they swallow this call. Normally the
    # top entry is this call's parent, a few frames up, and this frame's
    # depth is the parent's plus that distance.
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


def _leave(frame, stack):
    """Close the range of the module call whose hooks run in ``frame``:
    normally the top entry; deeper when calls inside it raised and were
    caught."""
    for i in range(len(stack) - 1, -1, -1):
        if stack[i][0] is frame:
            break
    else:
        # torch 2 runs the pre-hook in a closure (inner) of the frame that
        # runs an always_call hook after forward raised: match the closure
        for i in range(len(stack) - 1, -1, -1):
            if stack[i][0].f_back is frame:
                break
        else:
            return  # no entry: the call began before the hooks were registered
    depth = stack[i][1]
    del stack[i:]
    if depth >= 0:
        _pop_to(depth)


# -- per-module hooks: the fallback ---------------------------------------


def _pre_hook(name):
    def pre(module, args):
        _enter(_getframe(1), name)

    return pre


def _post_hook(module, args, output):
    stack = _calls.open
    if stack:
        _leave(_getframe(1), stack)


# -- process-wide hooks: the registry -------------------------------------

# id(module) -> the segment its range is named (the newest label's); the
# global hooks read only this
_names = {}
# id(module) -> [weakref.finalize that forgets it, [(Handle, segment), ...]]
# in labelling order
_owners = {}
# the two torch handles of the global hooks while they are registered
_global = []
_lock = threading.RLock()


def _forget(mid):
    # the module was collected: its id may be reused by any new object
    _owners.pop(mid, None)
    _names.pop(mid, None)


def _global_pre(module, args, names_get=_names.get):
    name = names_get(id(module))
    if name is not None:
        _enter(_getframe(1), name)


def _global_post(module, args, output, names=_names, calls=_calls):
    stack = calls.open
    if stack:
        frame = _getframe(1)
        if stack[-1][0] is frame:
            _, depth, _ = stack.pop()
            if depth >= 0:
                _pop_to(depth)
        elif id(module) in names:
            _leave(frame, stack)


def _register_global(api):
    """Called with _lock held, when no labelled module is left or none was."""
    pre, post = api
    _global.append(pre(_global_pre))
    try:
        _global.append(post(_global_post, always_call=True))
    except TypeError:  # torch 1.x and 2.0: the global hook has no always_call
        _global.append(post(_global_post))


def _unregister_global():
    """Called with _lock held, once no labelled module is left."""
    while _global:
        _global.pop().remove()


def _global_api(model):
    """torch's two process-wide registrations if ``model`` is a torch
    Module and torch has them, else None."""
    mod = sys.modules.get("torch.nn.modules.module")
    if mod is None or not isinstance(model, getattr(mod, "Module", ())):
        return None
    pre = getattr(mod, "register_module_forward_pre_hook", None)
    post = getattr(mod, "register_module_forward_hook", None)
    return (pre, post) if pre is not None and post is not None else None


class Handle:
    """Returned by label_modules(): remove() takes the labels off again.

    Also a context manager that removes them on exit.
    """

    __slots__ = ("_hooks", "_ids", "__weakref__")

    def __init__(self, hooks=(), ids=()):
        self._hooks = list(hooks)  # per-module hooks (the fallback)
        self._ids = list(ids)  # ids of the modules in the registry

    def remove(self):
        hooks, self._hooks = self._hooks, []
        for h in hooks:
            h.remove()
        ids, self._ids = self._ids, []
        if not ids:
            return
        with _lock:
            for mid in ids:
                entry = _owners.get(mid)
                if entry is None:
                    continue  # collected
                labels = entry[1]
                labels[:] = [lab for lab in labels if lab[0] is not self]
                if labels:
                    _names[mid] = labels[-1][1]  # an older label is back
                elif _owners.pop(mid, None) is entry:
                    entry[0].detach()
                    _names.pop(mid, None)
            if not _owners:
                _unregister_global()

    def __len__(self):
        """The number of modules labelled (0 without the profiler)."""
        return len(self._ids) + len(self._hooks) // 2

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
        return False


def _segment(path, root, module):
    """A module's range name: its path segment, then its class after a
    unit separator (the reader splits them; the module-path views show
    ``features/0/1 (BatchNorm2d)``, as torch's ``with_modules`` does)."""
    seg = path.rpartition(".")[2] if path else root
    return ("%s\x1f%s" % (seg, type(module).__name__)).encode("utf-8", "replace")


def _label_global(model, root, api):
    handle = Handle()
    with _lock:
        try:
            for path, module in model.named_modules():
                seg = _segment(path, root, module)
                mid = id(module)
                entry = _owners.get(mid)
                if entry is None:
                    entry = _owners[mid] = [weakref.finalize(module, _forget, mid), []]
                entry[1].append((handle, seg))
                _names[mid] = seg
                handle._ids.append(mid)
            if _owners and not _global:
                _register_global(api)
        except BaseException:
            handle.remove()
            raise
    return handle


def _label_each(model, root):
    hooks = []
    always = True
    try:
        for path, module in model.named_modules():
            hooks.append(module.register_forward_pre_hook(_pre_hook(_segment(path, root, module))))
            if always:
                try:
                    hooks.append(module.register_forward_hook(_post_hook, always_call=True))
                    continue
                except TypeError:
                    always = False  # a torch without always_call
            hooks.append(module.register_forward_hook(_post_hook))
    except BaseException:
        for h in hooks:
            h.remove()
        raise
    return Handle(hooks=hooks)


def _warn_scripted(model):
    """Says, once per call, that TorchScript modules run their children unlabelled.

    A scripted or traced module's forward runs in the TorchScript
    interpreter, which calls its submodules without any Python hook: only
    the calls made from Python (the outermost scripted module's) open a
    range, and a user would see one path where they labelled hundreds.
    """
    jit = sys.modules.get("torch.jit")
    script = getattr(jit, "ScriptModule", None)
    if script is None:
        return
    try:
        scripted = [p for p, m in model.named_modules() if isinstance(m, script)]
    except Exception:
        return
    if scripted:
        import warnings

        where = "the model" if scripted[0] == "" else "%d of its modules (%s%s)" % (
            len(scripted), scripted[0], ", ..." if len(scripted) > 1 else "")
        warnings.warn(
            "stackprof.torch.label_modules: %s is TorchScript (torch.jit.script/trace): the "
            "modules it calls run without Python hooks, so their samples carry only the path "
            "of the scripted module; label the eager model for full paths, or read the "
            "operators (--aggregate-by op)" % where, stacklevel=3)


def label_modules(model, name=None):
    """Label every sample taken inside a module's forward with its module path.

    ``model`` is an ``nn.Module``; every module in ``model.named_modules()``
    (the model included) is labelled. The path's root segment is ``name``,
    by default the model's class name. A module that appears twice in the
    tree is labelled once, by the first name it has; where it is called
    decides its place in the path. Several models can be labelled at once.

    Labelling a module that is labelled already (the same model twice, or a
    submodule under another name) gives it the newest name, and its calls
    still one range each; removing the newer handle brings the older name
    back. (The per-module fallback instead adds a second range per call.)

    Returns a Handle; ``handle.remove()`` removes the labels, and the
    process-wide hooks once no labelled module is left. A model garbage
    collected without remove() leaves the registry by itself; the hooks
    then stay registered, returning at once, until the next remove().
    Without the preloaded stackprof library nothing is registered at all.

    When a forward raises, its range and those of the modules it was
    inside are closed at the next module call or at the end of an enclosing
    module (torch's ``always_call``, where it exists, closes them at once).
    """
    if _lib is None:
        return Handle()
    _warn_scripted(model)
    root = type(model).__name__ if name is None else str(name)
    api = _global_api(model)
    if api is None:
        return _label_each(model, root)
    return _label_global(model, root, api)
