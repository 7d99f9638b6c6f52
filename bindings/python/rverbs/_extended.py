"""Extended verbs (docs/extended-verbs.md): the device clock, extended
completions and the work-request builder, defined when the headers the
package was generated from have them.

- Context.read_clock(): the raw device clock (rv_context_read_clock);
  Context.query_device() already returns the extended fields.
- CQ(context, wc_flags=rverbs.CQ_WC_TIMESTAMP | ...) stamps its completions;
  CQ.poll_ex() returns WCEx tuples (the WC fields and timestamp,
  timestamp_wallclock, flow_tag, ex_flags); CQ.wc_flags says what it carries.
- QP.wr_start() ... QP.wr_complete(): ibv_qp_ex's builder, one call per
  operation; ``with qp.wr_batch():`` completes on exit and aborts on an
  exception.
"""
import collections
import contextlib

from . import _cdef
from ._lowlevel import ffi, lib, check, error
from ._objects import _NULL, _WC_FIELDS, Context, CQ, QP, WC

_HAVE = set(_cdef.FUNCTIONS)

__all__ = []


def _resolve(*names):
    try:
        return all(n in _HAVE and getattr(lib, n) is not None for n in names)
    except AttributeError:
        return False


if _resolve("rv_context_read_clock"):
    def _read_clock(self):
        """The device's raw clock, in the units of CQ timestamps (hca_core_clock kHz)."""
        out = ffi.new("uint64_t *")
        check(lib.rv_context_read_clock(self._ptr("rv_context_read_clock"), out), "rv_context_read_clock")
        return out[0]

    Context.read_clock = _read_clock

if _resolve("rv_cq_poll_ex", "rv_cq_get_wc_flags"):
    _EX_FIELDS = ("timestamp", "timestamp_wallclock", "flow_tag", "ex_flags")

    class WCEx(collections.namedtuple("WCEx", _WC_FIELDS + _EX_FIELDS)):
        """A completion with its extended fields (CQ.poll_ex)."""

        __slots__ = ()

        @property
        def ok(self):
            return self.status == 0

        @property
        def wc(self):
            """The plain WC part."""
            return WC._make(self[:len(_WC_FIELDS)])

    def _poll_ex(self, max_entries=None):
        """Up to max_entries (default: the batch size) completions as WCEx, in one call."""
        n_max = max_entries or self._batch
        arr = getattr(self, "_wcx", None)
        if arr is None or len(arr) < n_max:
            arr = self._wcx = ffi.new("rv_wc_ex[]", n_max)
        n = lib.rv_cq_poll_ex(self._ptr("rv_cq_poll_ex"), arr, n_max)
        if n < 0:
            raise error(n, "rv_cq_poll_ex")
        return [WCEx._make(tuple(getattr(arr[i].wc, f) for f in _WC_FIELDS) +
                           tuple(getattr(arr[i], f) for f in _EX_FIELDS)) for i in range(n)]

    def _wc_flags(self):
        """The rv_cq_wc_flags the CQ was created with."""
        return lib.rv_cq_get_wc_flags(self._ptr("rv_cq_get_wc_flags"))

    CQ.poll_ex = _poll_ex
    CQ.wc_flags = property(_wc_flags)
    __all__ += ["WCEx"]

if _resolve("rv_qp_wr_start", "rv_qp_wr_complete", "rv_qp_wr_abort"):
    def _call(fn, name):
        def method(self, *args):
            return check(fn(self._ptr(name), *args), name)
        method.__name__ = name[6:]
        return method

    def _wr_start(self):
        """Open a batch (rv_qp_wr_start); add operations with the wr_* methods."""
        check(lib.rv_qp_wr_start(self._ptr("rv_qp_wr_start")), "rv_qp_wr_start")

    def _wr_complete(self):
        """Post the batch (rv_qp_wr_complete); returns how many WRs were posted.
        On an error the exception's ``posted`` says how many went before it."""
        n = ffi.new("size_t *")
        rc = lib.rv_qp_wr_complete(self._ptr("rv_qp_wr_complete"), n)
        if rc < 0:
            e = error(rc, "rv_qp_wr_complete")
            e.posted = n[0]
            raise e
        return n[0]

    def _wr_abort(self):
        """Drop the open batch (rv_qp_wr_abort)."""
        check(lib.rv_qp_wr_abort(self._ptr("rv_qp_wr_abort")), "rv_qp_wr_abort")

    @contextlib.contextmanager
    def _wr_batch(self):
        """``with qp.wr_batch(): qp.wr_send(...); qp.wr_set_sge(...)``: posts on
        a normal exit, drops the batch on an exception."""
        self.wr_start()
        try:
            yield self
        except BaseException:
            self.wr_abort()
            raise
        self.wr_complete()

    def _wr_set_sge_list(self, sges):
        """The latest WR's SGEs: rv_sge values (MR.sge()) or (addr, length, lkey) tuples."""
        arr = ffi.new("rv_sge[]", [(g.addr, g.length, g.lkey) if not isinstance(g, tuple) else g
                                   for g in sges])
        check(lib.rv_qp_wr_set_sge_list(self._ptr("rv_qp_wr_set_sge_list"), arr, len(sges)),
              "rv_qp_wr_set_sge_list")

    def _wr_set_inline_data(self, data):
        """The latest WR's payload: these bytes, copied now and sent inline."""
        data = bytes(data)
        check(lib.rv_qp_wr_set_inline_data(self._ptr("rv_qp_wr_set_inline_data"), data, len(data)),
              "rv_qp_wr_set_inline_data")

    def _wr_set_inline_data_list(self, chunks):
        """The latest WR's payload: these byte strings, concatenated, sent inline."""
        keep = [ffi.from_buffer(bytes(c)) for c in chunks]
        arr = ffi.new("rv_sge[]", [(int(ffi.cast("uintptr_t", k)), len(k), 0) for k in keep])
        check(lib.rv_qp_wr_set_inline_data_list(self._ptr("rv_qp_wr_set_inline_data_list"), arr,
                                                len(keep)),
              "rv_qp_wr_set_inline_data_list")

    def _wr_set_ud_addr(self, ah, remote_qpn, remote_qkey):
        """Address the latest WR of a UD QP's batch."""
        check(lib.rv_qp_wr_set_ud_addr(self._ptr("rv_qp_wr_set_ud_addr"),
                                       _NULL if ah is None else ah._ptr("rv_qp_wr_set_ud_addr"),
                                       remote_qpn, remote_qkey),
              "rv_qp_wr_set_ud_addr")

    def _wr_atomic_write(self, wr_id, send_flags, rkey, remote_addr, value):
        """RDMA atomic write of 8 bytes, where the device has it."""
        value = bytes(value)
        if len(value) != 8:
            raise ValueError("an atomic write carries exactly 8 bytes")
        check(lib.rv_qp_wr_atomic_write(self._ptr("rv_qp_wr_atomic_write"), wr_id, send_flags, rkey,
                                        remote_addr, value),
              "rv_qp_wr_atomic_write")

    QP.wr_start = _wr_start
    QP.wr_complete = _wr_complete
    QP.wr_abort = _wr_abort
    QP.wr_batch = _wr_batch
    QP.wr_send = _call(lib.rv_qp_wr_send, "rv_qp_wr_send")
    QP.wr_send_imm = _call(lib.rv_qp_wr_send_imm, "rv_qp_wr_send_imm")
    QP.wr_send_inv = _call(lib.rv_qp_wr_send_inv, "rv_qp_wr_send_inv")
    QP.wr_rdma_write = _call(lib.rv_qp_wr_rdma_write, "rv_qp_wr_rdma_write")
    QP.wr_rdma_write_imm = _call(lib.rv_qp_wr_rdma_write_imm, "rv_qp_wr_rdma_write_imm")
    QP.wr_rdma_read = _call(lib.rv_qp_wr_rdma_read, "rv_qp_wr_rdma_read")
    QP.wr_atomic_cmp_swp = _call(lib.rv_qp_wr_atomic_cmp_swp, "rv_qp_wr_atomic_cmp_swp")
    QP.wr_atomic_fetch_add = _call(lib.rv_qp_wr_atomic_fetch_add, "rv_qp_wr_atomic_fetch_add")
    QP.wr_atomic_write = _wr_atomic_write
    QP.wr_set_sge = _call(lib.rv_qp_wr_set_sge, "rv_qp_wr_set_sge")
    QP.wr_set_sge_list = _wr_set_sge_list
    QP.wr_set_inline_data = _wr_set_inline_data
    QP.wr_set_inline_data_list = _wr_set_inline_data_list
    QP.wr_set_ud_addr = _wr_set_ud_addr
    if "rv_qp_wr_set_xrc_srqn" in _HAVE:
        QP.wr_set_xrc_srqn = _call(lib.rv_qp_wr_set_xrc_srqn, "rv_qp_wr_set_xrc_srqn")
