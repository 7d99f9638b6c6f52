"""The software device's own calls (rverbs/soft.h): fault injection and the
path query, each defined when the headers the package was generated from
have it.

Context.fault_inject(kind, count=1, delay_ms=0, qp=None) makes soft0 lose,
corrupt, delay or reset the next frames the context (or only that QP) sends,
so that an application can test its error paths; kind is one of
rverbs.RV_SOFT_FAULT_DROP, _CORRUPT, _DELAY, _RESET or _CLEAR. On another
device it raises RVerbsError with errno EOPNOTSUPP.

QP.soft_path() says which path the QP's traffic takes now:
rverbs.RV_SOFT_PATH_NONE (not connected), _TCP, _SAME_HOST (large WRITEs and
SENDs by reference) or _SAME_HOST_RINGS (frames on shared-memory rings). On
another device it raises RVerbsError with errno EOPNOTSUPP.
"""
from . import _cdef
from ._lowlevel import ffi, lib, check
from ._objects import Context, QP

__all__ = []

if "rv_soft_fault_inject" in set(_cdef.FUNCTIONS):
    def fault_inject(self, kind, count=1, delay_ms=0, qp=None):
        """Inject a fault into the next `count` frames this context (or `qp`,
        one of its QPs) sends; see rverbs/soft.h for what each kind does."""
        if kind == lib.RV_SOFT_FAULT_CLEAR:
            count = 0
        check(lib.rv_soft_fault_inject(self._ptr("rv_soft_fault_inject"),
                                       qp._ptr("rv_soft_fault_inject") if qp is not None else ffi.NULL,
                                       int(kind), int(count), int(delay_ms)),
              "rv_soft_fault_inject")

    Context.fault_inject = fault_inject

if "rv_soft_qp_path" in set(_cdef.FUNCTIONS):
    def soft_path(self):
        """The path this QP's traffic takes now on soft0, an RV_SOFT_PATH_*
        value (rv_soft_qp_path); it moves from TCP to the same-host path to
        its rings in the moments after the QP connects."""
        out = ffi.new("rv_soft_path *")
        check(lib.rv_soft_qp_path(self._ptr("rv_soft_qp_path"), out), "rv_soft_qp_path")
        return int(out[0])

    QP.soft_path = soft_path
