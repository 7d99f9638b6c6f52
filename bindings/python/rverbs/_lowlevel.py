"""The low-level layer: cffi's ABI mode over librverbs, no compiled extension.

`ffi` is built from the declarations that bindings/python/gen_cdef.py generated
from the public headers at build time (rverbs._cdef); `lib` is librverbs opened
with ffi.dlopen():

- RVERBS_LIBRARY=/path/to/librverbs.so.N in the environment (in-tree tests);
- else the librverbs inside this package, where a pip wheel puts it
  (librverbs.so.N.A.R next to this file);
- else the installed soname, librverbs.so.<soname>, through the dynamic
  loader's usual search path.

Every function of `lib` is called without the GIL: cffi releases it around each
call into C in ABI mode as in API mode, so a thread blocked in (or spinning on)
librverbs never stalls the interpreter.
"""
import errno as _errno
import os

from cffi import FFI

from . import _cdef

ffi = FFI()
ffi.cdef(_cdef.CDEF)


def _bundled():
    """The librverbs a pip wheel installed inside this package, or None.

    meson installs librverbs.so.N.A.R (the wheel holds no symlinks); the
    soname first, in case a copy under that name is there.
    """
    here = os.path.dirname(os.path.abspath(__file__))
    names = [_cdef.SONAME] + sorted(n for n in os.listdir(here)
                                    if n.startswith(_cdef.SONAME + "."))
    for name in names:
        path = os.path.join(here, name)
        if os.path.isfile(path):
            return path
    return None


def _load():
    path = os.environ.get("RVERBS_LIBRARY") or _bundled() or _cdef.SONAME
    try:
        return ffi.dlopen(path)
    except OSError as e:
        raise ImportError("rverbs: cannot load %s (set RVERBS_LIBRARY to the path of "
                          "librverbs.so.N): %s" % (path, e)) from e


lib = _load()

#: errno of every call on a closed handle (Linux EBADFD).
ECLOSED = _cdef.CONSTANTS["RV_ECLOSED"]
assert ECLOSED == getattr(_errno, "EBADFD", ECLOSED)


class RVerbsError(OSError):
    """A librverbs call failed.

    ``errno`` is the positive errno the call returned (negated), ``strerror``
    its text, ``func`` the C function, and ``detail`` the message of
    rv_error_last() read right after the failure (the call, the object, the
    cause and a hint).
    """

    def __init__(self, err, func, detail=""):
        super().__init__(err, os.strerror(err))
        self.func = func
        self.detail = detail

    def __str__(self):
        text = "%s: %s [errno %d]" % (self.func, self.strerror, self.errno)
        return text + (": " + self.detail if self.detail else "")

    def __reduce__(self):
        return (type(self), (self.errno, self.func, self.detail))


class RVerbsClosedError(RVerbsError):
    """The handle was closed, by close() or because something it depends on
    was closed (errno EBADFD, RV_ECLOSED)."""


def error(rc, func):
    """The exception for a negative return code @rc of C function @func."""
    err = -rc
    detail = ffi.string(lib.rv_error_last()).decode("utf-8", "replace")
    cls = RVerbsClosedError if err == ECLOSED else RVerbsError
    return cls(err, func, detail)


def check(rc, func):
    """Raise for a negative @rc; return it otherwise."""
    if rc < 0:
        raise error(rc, func)
    return rc
