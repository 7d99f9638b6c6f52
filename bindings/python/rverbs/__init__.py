"""rverbs: Python bindings of the rverbs C library (cffi ABI mode, no compiled code).

Two layers:

- ``rverbs.ffi`` / ``rverbs.lib``: every public function, struct, enum and
  integer macro of the C headers, generated from them at build time;
- Pythonic classes modelled on pyverbs: Device, Context, PD, MR, CQ, QP, AH,
  Listener and Conn (the connection helper), Endpoint, with context managers,
  cascading close(), exceptions carrying the errno and the rv_error_last()
  message, MR memory as a writable memoryview, and completions polled in
  batches.

Ownership: each Python object holds exactly one reference on its C handle and
drops it in close() or when it is garbage collected, in any order; close()
destroys the resource now and, as in C, everything that depends on it, which
the Python objects then report as closed.

The library is found through RVERBS_LIBRARY (a path), else inside the package
(a pip install puts it there), else by its installed
soname. All calls into C run without the GIL.
"""
import pkgutil as _pkgutil

# In a build tree the generated rverbs/_cdef.py lives under the build directory
# while the sources live in the source directory: both are on PYTHONPATH.
__path__ = _pkgutil.extend_path(__path__, __name__)

from ._lowlevel import ffi, lib, RVerbsError, RVerbsClosedError, ECLOSED  # noqa: E402
from ._objects import (  # noqa: E402
    Device, Context, PD, MR, CQ, QP, AH, McastMembership, Listener, Conn, Endpoint, WC, SendWR, RecvWR, sge,
    set_log_handler, set_log_level, wc_status_str, wc_status_hint,
)
from . import _cdef  # noqa: E402
from . import _memory  # noqa: E402
from . import _channel  # noqa: E402
from . import _fault  # noqa: E402
from . import _srq  # noqa: E402
from . import _mw  # noqa: E402
from . import _extended  # noqa: E402
from ._domains import TD  # noqa: E402

__version__ = _cdef.STRING_CONSTANTS["RVERBS_VERSION_STRING"]


def library_version():
    """The version of the loaded librverbs, as "MAJOR.MINOR.PATCH"."""
    return ffi.string(lib.rv_version()).decode()


def library_version_number():
    """The version of the loaded librverbs as MAJOR * 10000 + MINOR * 100 + PATCH."""
    return lib.rv_version_number()


def _export_constants(namespace):
    # RV_QPT_RC, RV_ACCESS_LOCAL_WRITE, RV_WC_SUCCESS ... without the "RV_" prefix
    # too (rverbs.QPT_RC), like pyverbs' enums.
    for names in _cdef.ENUMS.values():
        for name in names:
            namespace[name] = getattr(lib, name)
            namespace[name[3:]] = namespace[name]
    for name, value in _cdef.CONSTANTS.items():
        namespace[name] = value
        if name.startswith("RV_"):
            namespace[name[3:]] = value


_export_constants(globals())

# Pool, PoolBuffer, MRCache, alloc_mr, CompChannel, SRQ, AsyncEvent, MW, WCEx:
# present when the headers have them.
for _mod in (_memory, _channel, _srq, _mw, _extended):
    for _name in _mod.__all__:
        globals()[_name] = getattr(_mod, _name)

__all__ = [
    "ffi", "lib", "RVerbsError", "RVerbsClosedError", "ECLOSED", "Device", "Context",
    "PD", "MR", "CQ", "QP", "AH", "McastMembership", "Listener", "Conn", "Endpoint", "WC", "SendWR", "RecvWR", "sge",
    "set_log_handler", "set_log_level", "wc_status_str", "wc_status_hint",
    "library_version", "library_version_number",
] + list(_memory.__all__) + list(_channel.__all__) + list(_srq.__all__) + list(_mw.__all__) \
    + list(_extended.__all__)
