"""Memory windows (rverbs/mw.h), defined when the headers the package was
generated from have them.

MW(pd, type=2) is an unbound window; mw.bind(qp, mr, addr, length, access)
posts the bind on qp's send queue (it completes there with opcode
WC_BIND_MW) and gives the window a new rkey (mw.rkey). Closing the MR a
window is bound to closes the window.
"""
from . import _cdef
from ._lowlevel import ffi, lib, check
from ._objects import _Handle

_HAVE = set(_cdef.FUNCTIONS)

__all__ = []

if {"rv_mw_alloc", "rv_qp_bind_mw", "rv_mw_rkey", "rv_mw_type_of"} <= _HAVE:
    class MW(_Handle):
        """A memory window of type 1 or 2 (pyverbs' MW)."""

        _kind = "MW"
        _prefix = "mw"

        def __init__(self, pd, type=2):
            super().__init__()
            out = ffi.new("rv_mw **")
            check(lib.rv_mw_alloc(pd._ptr("rv_mw_alloc"), type, out), "rv_mw_alloc")
            self.pd = pd
            self._adopt(out[0], pd)

        @property
        def rkey(self):
            """The rkey as of the last bind posted."""
            return self._value(lib.rv_mw_rkey, "rv_mw_rkey")

        @property
        def type(self):
            return self._value(lib.rv_mw_type_of, "rv_mw_type_of")

        def bind(self, qp, mr, addr, length, access, wr_id=0, flags=None):
            """Post a bind of the window to [addr, addr+length) of mr on qp
            (flags default: signalled). length 0 and access 0 unbind a type 1
            window. Returns the new rkey."""
            info = ffi.new("rv_mw_bind_info *")
            info.mr = mr._ptr("rv_qp_bind_mw")
            info.addr = addr
            info.length = length
            info.access = access
            if flags is None:
                flags = lib.RV_SEND_SIGNALED
            check(lib.rv_qp_bind_mw(qp._ptr("rv_qp_bind_mw"), self._ptr("rv_qp_bind_mw"), info,
                                    wr_id, flags), "rv_qp_bind_mw")
            return self.rkey

    __all__.append("MW")
