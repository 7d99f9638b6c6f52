"""Memory windows (present when the headers have them): bind, remote WRITE
through the window, a WRITE past its end refused, closing the MR closes it."""
import threading

import pytest

import rverbs

from conftest import MOCK

needs_mw = pytest.mark.skipif(not hasattr(rverbs, "MW"), reason="no memory windows in these headers")


def _connect(a, b):
    ea, eb = a.endpoint(), b.endpoint()
    t = threading.Thread(target=b.connect, args=(ea,))
    t.start()
    a.connect(eb)
    t.join()


@needs_mw
def test_mw_bind_write_and_mr_close(context):
    if MOCK:
        pytest.skip("windows need soft0")
    peer = rverbs.Context("soft0")
    pd, ppd = rverbs.PD(context), rverbs.PD(peer)
    cq, pcq = rverbs.CQ(context), rverbs.CQ(peer)
    qp, pqp = rverbs.QP(pd, cq), rverbs.QP(ppd, pcq)
    _connect(qp, pqp)
    access = (rverbs.ACCESS_LOCAL_WRITE | rverbs.ACCESS_REMOTE_WRITE | rverbs.ACCESS_REMOTE_READ
              | rverbs.ACCESS_MW_BIND)
    mr, pmr = rverbs.MR(pd, 8192, access), rverbs.MR(ppd, 4096, access)
    mw = rverbs.MW(pd, 2)
    assert mw.type == 2
    old = mw.rkey
    rkey = mw.bind(qp, mr, mr.addr + 1024, 512, rverbs.ACCESS_REMOTE_WRITE, wr_id=5)
    assert rkey == mw.rkey and rkey & 0xff == (old + 1) & 0xff and rkey != mr.rkey
    (wc,) = cq.wait(1, timeout=20)
    assert wc.status == rverbs.WC_SUCCESS and wc.opcode == rverbs.WC_BIND_MW and wc.wr_id == 5
    pmr.buf[:512] = b"w" * 512
    pqp.write(pmr.sge(0, 512), mr.addr + 1024, rkey, wr_id=1)
    (wc,) = pcq.wait(1, timeout=20)
    assert wc.status == rverbs.WC_SUCCESS
    assert bytes(mr.buf[1024:1536]) == b"w" * 512
    pqp.write(pmr.sge(0, 16), mr.addr + 1536 - 8, rkey, wr_id=2)
    (wc,) = pcq.wait(1, timeout=20)
    assert wc.status == rverbs.WC_REM_ACCESS_ERR
    assert bytes(mr.buf[1536:1544]) == b"\0" * 8
    mr.close()
    with pytest.raises(rverbs.RVerbsClosedError):
        mw.bind(qp, pmr, pmr.addr, 8, rverbs.ACCESS_REMOTE_WRITE)
    peer.close()
