"""Completion channels and CQ wait modes (rverbs/cq.h), defined when the
headers the package was generated from have them.

CompChannel(context) is a file descriptor (fileno()) that signals armed CQs;
CQ(context, channel=ch) attaches a CQ to it. With them, CQ gains
req_notify(), ack_events(), set_wait_mode() and a CQ.wait() that blocks in C
(rv_cq_wait) without the GIL instead of polling from Python.
"""
import weakref

from . import _cdef
from ._lowlevel import ffi, lib, check, error
from ._objects import _Handle, _closed_error, CQ, WC, _WC_UNPACK, _WC_SIZE

_HAVE = set(_cdef.FUNCTIONS)


def _resolve(*names):
    """True when the headers declare every name and the library exports it
    (a library older than its headers fails test_generated.py, not the import)."""
    try:
        return all(n in _HAVE and getattr(lib, n) is not None for n in names)
    except AttributeError:
        return False

__all__ = []


def _timeout_ms(timeout):
    return -1 if timeout is None else max(0, int(timeout * 1000))


if _resolve("rv_comp_channel_new", "rv_comp_channel_get_event", "rv_comp_channel_fd",
            "rv_cq_req_notify", "rv_cq_ack_events"):
    class CompChannel(_Handle):
        """A completion channel (rv_comp_channel); closing it closes its CQs."""

        _kind = "completion channel"
        _prefix = "comp_channel"

        def __init__(self, context):
            super().__init__()
            out = ffi.new("rv_comp_channel **")
            check(lib.rv_comp_channel_new(context._ptr("rv_comp_channel_new"), ffi.NULL, out),
                  "rv_comp_channel_new")
            self.context = context
            self._adopt(out[0], context)
            self._cqs = weakref.WeakValueDictionary()  # C address -> CQ object
            self._out = ffi.new("rv_cq **")

        def fileno(self):
            """The channel's descriptor (readable while an event waits)."""
            return check(lib.rv_comp_channel_fd(self._ptr("rv_comp_channel_fd")),
                         "rv_comp_channel_fd")

        def get_event(self, timeout=None):
            """Wait for an event (without the GIL); the CQ that fired, or None
            when the timeout passed. Acknowledge it with cq.ack_events()."""
            rc = lib.rv_comp_channel_get_event(self._ptr("rv_comp_channel_get_event"),
                                               _timeout_ms(timeout), self._out)
            if rc in (-11, -110):  # EAGAIN, ETIMEDOUT
                return None
            if rc < 0:
                raise error(rc, "rv_comp_channel_get_event")
            return self._cqs.get(int(ffi.cast("uintptr_t", self._out[0])))

    def _attach(cq, channel):
        channel._cqs[int(ffi.cast("uintptr_t", cq.handle))] = cq
        channel._children.add(cq)
        cq.channel = channel

    def req_notify(self, solicited_only=False):
        """Arm the CQ: its next completion sends one event to its channel."""
        check(lib.rv_cq_req_notify(self._ptr("rv_cq_req_notify"), int(bool(solicited_only))),
              "rv_cq_req_notify")

    def ack_events(self, n=1):
        """Acknowledge n events taken from the channel for this CQ."""
        check(lib.rv_cq_ack_events(self._ptr("rv_cq_ack_events"), n), "rv_cq_ack_events")

    CQ._attach_channel = staticmethod(_attach)
    CQ.req_notify = req_notify
    CQ.ack_events = ack_events
    __all__.append("CompChannel")


if _resolve("rv_cq_set_wait_mode", "rv_cq_wait"):
    def set_wait_mode(self, mode, spin_ns=0):
        """RV_CQ_WAIT_POLL, RV_CQ_WAIT_EVENT (needs a channel) or
        RV_CQ_WAIT_SPIN_THEN_BLOCK (spin for spin_ns, then block)."""
        check(lib.rv_cq_set_wait_mode(self._ptr("rv_cq_set_wait_mode"), mode, spin_ns),
              "rv_cq_set_wait_mode")

    def wait(self, count=1, timeout=None):
        """Wait until ``count`` completions arrived or ``timeout`` seconds passed,
        in C (rv_cq_wait, as set by set_wait_mode) and without the GIL; returns
        the list of WC (possibly shorter on timeout)."""
        import time
        deadline = None if timeout is None else time.monotonic() + timeout
        got = []
        while len(got) < count:
            h = self._h
            if h is None:
                raise _closed_error(self, "rv_cq_wait")
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            want = min(self._batch, count - len(got))
            n = lib.rv_cq_wait(h, self._wc, want, _timeout_ms(left))
            if n in (-11, -110):  # EAGAIN, ETIMEDOUT: the time is up
                break
            if n < 0:
                raise error(n, "rv_cq_wait")
            if _WC_UNPACK is not None:
                got.extend(map(WC._make, _WC_UNPACK.iter_unpack(ffi.buffer(self._wc,
                                                                           n * _WC_SIZE))))
            else:
                got.extend(WC._from_c(self._wc[i]) for i in range(n))
        return got

    CQ.set_wait_mode = set_wait_mode
    CQ.wait = wait
