"""Shared receive queues, asynchronous events and CQ resize (present when the headers have them)."""
import select
import threading

import pytest

import rverbs

from conftest import MOCK

needs_srq = pytest.mark.skipif(not hasattr(rverbs, "SRQ") or not hasattr(rverbs, "AsyncEvent"),
                               reason="no SRQ or asynchronous events in these headers")


def _connect(a, b):
    ea, eb = a.endpoint(), b.endpoint()
    t = threading.Thread(target=b.connect, args=(ea,))
    t.start()
    a.connect(eb)
    t.join()


@needs_srq
def test_srq_shared_by_two_qps_and_its_limit_event(context):
    if MOCK:
        pytest.skip("traffic and events need soft0")
    peer = rverbs.Context("soft0")
    pd, ppd = rverbs.PD(context), rverbs.PD(peer)
    cq, pcq = rverbs.CQ(context), rverbs.CQ(peer)
    srq = rverbs.SRQ(pd, max_wr=16)
    qps = [rverbs.QP(pd, cq, srq=srq) for _ in range(2)]
    pqps = [rverbs.QP(ppd, pcq) for _ in range(2)]
    for a, b in zip(qps, pqps):
        _connect(a, b)
    mr, pmr = rverbs.MR(pd, 4096), rverbs.MR(ppd, 4096)
    with pytest.raises(rverbs.RVerbsError) as e:
        qps[0].recv(mr.sge(0, 64), 1)
    assert "rv_srq_post_recv" in str(e.value)
    srq.post_recv([rverbs.RecvWR(k, [mr.sge(k * 64, 64)]) for k in range(6)])
    # Resized while it holds 6 receives: below them is refused, 32 keeps them.
    with pytest.raises(rverbs.RVerbsError) as e:
        srq.modify(max_wr=5)
    assert "below the 6 receive WRs" in str(e.value)
    srq.modify(max_wr=32)
    assert srq.query()["max_wr"] == 32
    srq.modify(srq_limit=5)
    assert srq.query() == {"max_wr": 32, "max_sge": 1, "srq_limit": 5}
    for i, q in enumerate(pqps):
        q.send(pmr.sge(0, 16), i)
    assert len(pcq.wait(2, timeout=10)) == 2
    wcs = cq.wait(2, timeout=10)
    assert sorted(w.qp_num for w in wcs) == sorted(q.qp_num for q in qps)
    assert all(w.ok for w in wcs)
    # 4 left < 5: the limit event, through the descriptor.
    fd = context.async_fd()
    ev = None
    while ev is None or ev.type != rverbs.EVENT_SRQ_LIMIT_REACHED:
        assert select.select([fd], [], [], 10)[0] == [fd]
        ev = context.get_async_event(0)
    assert ev.srq is srq
    assert ev.type_str == "SRQ_LIMIT_REACHED"
    ev.ack()
    assert srq.query()["srq_limit"] == 0
    # Closing the SRQ closes its QPs.
    srq.close()
    assert all(q.closed for q in qps)
    peer.close()


@needs_srq
def test_cq_resize_and_no_event(context):
    cq = rverbs.CQ(context, cqe=8)
    cq.resize(100)
    assert cq.size >= 100
    if not MOCK:
        assert context.get_async_event(0) is None
    assert rverbs.async_event_str(rverbs.EVENT_QP_FATAL) == "QP_FATAL"
    cq.close()


needs_xrc = pytest.mark.skipif(not hasattr(rverbs, "XRCD"), reason="no XRC in these headers")


@needs_xrc
def test_xrc_sends_land_in_the_named_srq_and_close_with_the_domain(context):
    xrcd = rverbs.XRCD(context)
    pd, cq0, cq1 = rverbs.PD(context), rverbs.CQ(context), rverbs.CQ(context)
    srqs = [rverbs.SRQ(pd, xrcd=xrcd, cq=cq) for cq in (cq0, cq1)]
    assert srqs[0].num != srqs[1].num
    plain = rverbs.SRQ(pd)
    with pytest.raises(rverbs.RVerbsError) as e:
        plain.num
    assert "not an XRC SRQ" in str(e.value)
    tgt = rverbs.QP(pd, None, qp_type=rverbs.QPT_XRC_RECV, xrcd=xrcd)
    if not MOCK:
        peer = rverbs.Context("soft0")
        ppd, pcq = rverbs.PD(peer), rverbs.CQ(peer)
        ini = rverbs.QP(ppd, pcq, qp_type=rverbs.QPT_XRC_SEND)
        _connect(tgt, ini)
        mr, pmr = rverbs.MR(pd, 4096), rverbs.MR(ppd, 4096)
        for k, s in enumerate(srqs):
            s.post_recv([rverbs.RecvWR(k, [mr.sge(k * 64, 64)])])
        pmr.buf[0:5] = b"hello"
        pmr.buf[64:69] = b"world"
        ini.post_send([rverbs.SendWR(1, sg_list=[pmr.sge(64, 5)], send_flags=rverbs.SEND_SIGNALED,
                                     remote_srqn=srqs[1].num)])
        with ini.wr_batch():
            ini.wr_send(2, rverbs.SEND_SIGNALED)
            ini.wr_set_sge(pmr.lkey, pmr.addr, 5)
            ini.wr_set_xrc_srqn(srqs[0].num)
        assert all(w.ok for w in pcq.wait(2, timeout=10))
        (w1,) = cq1.wait(1, timeout=10)
        (w0,) = cq0.wait(1, timeout=10)
        assert (w0.wr_id, w0.byte_len, w0.qp_num) == (0, 5, tgt.qp_num)
        assert (w1.wr_id, w1.byte_len) == (1, 5)
        assert bytes(mr.buf[0:5]) == b"hello" and bytes(mr.buf[64:69]) == b"world"
        peer.close()
    xrcd.close()
    assert tgt.closed and all(s.closed for s in srqs) and not plain.closed
