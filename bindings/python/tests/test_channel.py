"""Completion channels and blocking CQ waits (present when the headers have them)."""
import threading
import time

import pytest

import rverbs

from conftest import MOCK, NOT_READY

needs_channel = pytest.mark.skipif(not hasattr(rverbs, "CompChannel"),
                                   reason="no completion channels in these headers")


_peers = []


def _pair(channel_a):
    a_ctx = channel_a.context
    b_ctx = rverbs.Context("soft0")
    a_cq = rverbs.CQ(a_ctx, channel=channel_a)
    a_pd, b_pd = rverbs.PD(a_ctx), rverbs.PD(b_ctx)
    b_cq = rverbs.CQ(b_ctx)
    a_qp, b_qp = rverbs.QP(a_pd, a_cq), rverbs.QP(b_pd, b_cq)
    ea, eb = a_qp.endpoint(), b_qp.endpoint()
    t = threading.Thread(target=b_qp.connect, args=(ea,))
    t.start()
    a_qp.connect(eb)
    t.join()
    a_mr, b_mr = rverbs.MR(a_pd, 4096), rverbs.MR(b_pd, 4096)
    # Keep the peer QP alive: its last unref would close it and flush a_qp.
    _peers.append((b_pd, b_cq, b_qp))
    return a_cq, a_qp, a_mr, b_mr, b_ctx


@needs_channel
def test_channel_event_and_blocking_wait(context):
    if MOCK:
        pytest.skip("events need a real device")
    try:
        ch = rverbs.CompChannel(context)
        cq, qp, mr, peer_mr, peer_ctx = _pair(ch)
    except rverbs.RVerbsError as e:
        if e.errno in NOT_READY:
            pytest.skip("no completion channels on this device: %s" % e.detail)
        raise
    assert ch.fileno() >= 0
    cq.req_notify()
    qp.write(mr.sge(0, 8), peer_mr.addr, peer_mr.rkey, wr_id=1)
    assert ch.get_event(timeout=10) is cq
    cq.ack_events(1)
    assert cq.wait(1, timeout=10)[0].ok
    # A blocking wait in another thread leaves the interpreter free.
    cq.set_wait_mode(rverbs.RV_CQ_WAIT_EVENT)
    result = []
    t = threading.Thread(target=lambda: result.append(cq.wait(1, timeout=10)))
    t.start()
    n, end = 0, time.monotonic() + 0.2
    while time.monotonic() < end:
        n += 1
    qp.write(mr.sge(0, 8), peer_mr.addr, peer_mr.rkey, wr_id=2)
    t.join(15)
    assert n > 1000 and result and result[0] and result[0][0].wr_id == 2
    ch.close()
    assert cq.closed and qp.closed
    peer_ctx.close()
