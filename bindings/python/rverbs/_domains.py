"""Thread domains (rverbs/pd.h): TD(context) is bound to parent domains,
PD(context, parent=pd, td=td). Closing a TD closes the parent domains bound
to it. On soft0 a TD is accepted and changes no lock (docs/extended-verbs.md).
"""
from ._lowlevel import ffi, lib, check
from ._objects import _Handle

__all__ = ["TD"]


class TD(_Handle):
    """A thread domain (pyverbs' TD)."""

    _kind = "TD"
    _prefix = "td"

    def __init__(self, context):
        super().__init__()
        out = ffi.new("rv_td **")
        check(lib.rv_td_new(context._ptr("rv_td_new"), ffi.NULL, out), "rv_td_new")
        self.context = context
        self._adopt(out[0], context)
