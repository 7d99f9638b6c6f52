"""Shared receive queues (rverbs/srq.h), asynchronous events (rverbs/event.h)
and CQ resize, defined when the headers the package was generated from have
them.

SRQ(pd, max_wr=, max_sge=, srq_limit=) is a pool of receive WRs; a QP made
with QP(pd, cq, srq=srq) takes its receives from it (and closing the SRQ
closes that QP). Context gains async_fd() and get_async_event(); each
AsyncEvent names the Python QP, CQ or SRQ object it is about, holds the C
references until ack() (or its collection), and never delays a close.
"""
from . import _cdef
from ._lowlevel import ffi, lib, check, error
from ._objects import _NULL, _Handle, _sge_array, Context, CQ, PD

_HAVE = set(_cdef.FUNCTIONS)
_EAGAIN, _ETIMEDOUT = 11, 110

__all__ = []


def _resolve(*names):
    try:
        return all(n in _HAVE and getattr(lib, n) is not None for n in names)
    except AttributeError:
        return False


def _timeout_ms(timeout):
    return -1 if timeout is None else max(0, int(timeout * 1000))


if _resolve("rv_srq_new", "rv_srq_post_recv", "rv_srq_modify", "rv_srq_query"):
    class SRQ(_Handle):
        """A shared receive queue (pyverbs' SRQ). Closing it closes its QPs."""

        _kind = "SRQ"
        _prefix = "srq"

        def __init__(self, pd, max_wr=None, max_sge=None, srq_limit=None, xrcd=None, cq=None):
            """With xrcd= and cq=, an XRC SRQ (rverbs/xrcd.h): it receives the
            SENDs that name its number (SRQ.num) and completes them on cq."""
            super().__init__()
            attr = ffi.new("rv_srq_attr *")
            if xrcd is not None or cq is not None:
                attr.mask |= lib.RV_SRQ_INIT_ATTR_XRC
                if xrcd is not None:
                    attr.xrcd = xrcd._ptr("rv_srq_new")
                if cq is not None:
                    attr.cq = cq._ptr("rv_srq_new")
            if max_wr is not None:
                attr.mask |= lib.RV_SRQ_INIT_ATTR_MAX_WR
                attr.max_wr = max_wr
            if max_sge is not None:
                attr.mask |= lib.RV_SRQ_INIT_ATTR_MAX_SGE
                attr.max_sge = max_sge
            if srq_limit is not None:
                attr.mask |= lib.RV_SRQ_INIT_ATTR_LIMIT
                attr.srq_limit = srq_limit
            out = ffi.new("rv_srq **")
            check(lib.rv_srq_new(pd._ptr("rv_srq_new"), attr, out), "rv_srq_new")
            self.pd = pd
            self._adopt(out[0], pd)
            self.xrcd, self.cq = xrcd, cq
            for d in (xrcd, cq):  # closing either closes the SRQ (in C)
                if d is not None:
                    d._children.add(self)
            self._n_posted = ffi.new("size_t *")

        @property
        def num(self):
            """An XRC SRQ's number (rv_srq_num), what initiators name it by."""
            out = ffi.new("uint32_t *")
            check(lib.rv_srq_num(self._ptr("rv_srq_num"), out), "rv_srq_num")
            return out[0]

        def post_recv(self, wrs, n=None):
            """Post receive WRs (a list of RecvWR or a cffi rv_recv_wr array);
            any QP using the SRQ may consume them. Returns the number posted."""
            h = self._ptr("rv_srq_post_recv")
            if isinstance(wrs, ffi.CData):
                arr, count = wrs, len(wrs) if n is None else n
            else:
                keep = []
                count = len(wrs)
                arr = ffi.new("rv_recv_wr[]", max(count, 1))
                for i, wr in enumerate(wrs):
                    arr[i].wr_id = wr.wr_id
                    arr[i].sg_list, arr[i].num_sge = _sge_array(wr.sg_list, keep)
            rc = lib.rv_srq_post_recv(h, arr, count, self._n_posted)
            if rc < 0:
                e = error(rc, "rv_srq_post_recv")
                e.posted = self._n_posted[0]
                raise e
            return count

        def modify(self, srq_limit=None, max_wr=None):
            """Arm the limit (srq_limit) and/or resize (max_wr)."""
            attr = ffi.new("rv_srq_attr *")
            if srq_limit is not None:
                attr.mask |= lib.RV_SRQ_LIMIT
                attr.srq_limit = srq_limit
            if max_wr is not None:
                attr.mask |= lib.RV_SRQ_MAX_WR
                attr.max_wr = max_wr
            check(lib.rv_srq_modify(self._ptr("rv_srq_modify"), attr), "rv_srq_modify")

        def query(self):
            """{"max_wr", "max_sge", "srq_limit"} (srq_limit 0: disarmed)."""
            attr = ffi.new("rv_srq_attr *")
            check(lib.rv_srq_query(self._ptr("rv_srq_query"), attr), "rv_srq_query")
            return {"max_wr": attr.max_wr, "max_sge": attr.max_sge, "srq_limit": attr.srq_limit}

    def _pd_srq(self, **kwargs):
        return SRQ(self, **kwargs)

    PD.srq = _pd_srq
    __all__.append("SRQ")

if _resolve("rv_xrcd_new", "rv_xrcd_close", "rv_srq_num"):
    class XRCD(_Handle):
        """An XRC domain (pyverbs' XRCD, rverbs/xrcd.h): its XRC SRQs and target
        QPs close with it; it closes with its context."""

        _kind = "XRCD"
        _prefix = "xrcd"

        def __init__(self, context):
            super().__init__()
            out = ffi.new("rv_xrcd **")
            check(lib.rv_xrcd_new(context._ptr("rv_xrcd_new"), _NULL, out), "rv_xrcd_new")
            self.context = context
            self._adopt(out[0], context)

    __all__.append("XRCD")

if _resolve("rv_context_async_fd", "rv_context_get_async_event", "rv_async_event_ack",
            "rv_async_event_str"):
    def async_event_str(event_type):
        """The name of an asynchronous event type ("QP_FATAL")."""
        return ffi.string(lib.rv_async_event_str(event_type)).decode()

    def _find(root, ptr):
        """The Python object among root's dependents whose C handle is ptr."""
        seen, todo = set(), [root]
        while todo:
            obj = todo.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if obj is not root and obj._h == ptr:
                return obj
            todo.extend(obj._children)
        return None

    class AsyncEvent:
        """One asynchronous event: type, type_str, port_num and the qp, cq or
        srq object it is about (None when it has no Python object). ack()
        releases the C references; it is called at collection too."""

        def __init__(self, context, c):
            self._c = c
            self.type = c.type
            self.type_str = async_event_str(c.type)
            self.port_num = c.port_num
            self.qp = _find(context, c.qp) if c.qp != ffi.NULL else None
            self.cq = _find(context, c.cq) if c.cq != ffi.NULL else None
            self.srq = _find(context, c.srq) if c.srq != ffi.NULL else None

        def ack(self):
            c, self._c = self._c, None
            if c is not None:
                lib.rv_async_event_ack(c)

        def __del__(self):
            try:
                self.ack()
            except Exception:  # interpreter shutdown
                pass

        def __repr__(self):
            return "<rverbs.AsyncEvent %s>" % self.type_str

    def _async_fd(self):
        """The context's asynchronous event descriptor (readable while an event waits)."""
        return check(lib.rv_context_async_fd(self._ptr("rv_context_async_fd")), "rv_context_async_fd")

    def _get_async_event(self, timeout=None):
        """The next AsyncEvent, waiting up to timeout seconds (None: forever,
        0: not at all, without the GIL); None when none came."""
        c = ffi.new("rv_async_event *")
        rc = lib.rv_context_get_async_event(self._ptr("rv_context_get_async_event"), c,
                                            _timeout_ms(timeout))
        if rc in (-_EAGAIN, -_ETIMEDOUT):
            return None
        if rc < 0:
            raise error(rc, "rv_context_get_async_event")
        return AsyncEvent(self, c)

    Context.async_fd = _async_fd
    Context.get_async_event = _get_async_event
    __all__ += ["AsyncEvent", "async_event_str"]

if _resolve("rv_cq_resize"):
    def _resize(self, cqe):
        """Resize the CQ to at least cqe entries, keeping its completions."""
        check(lib.rv_cq_resize(self._ptr("rv_cq_resize"), cqe), "rv_cq_resize")

    CQ.resize = _resize


