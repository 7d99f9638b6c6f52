"""rverbs/soft.h from Python. Fault injection on soft0: a reset connection
completes the posted work with RETRY_EXC_ERR, a delay keeps the traffic
correct, bad arguments raise with the errno and message. The path query: a
connected pair of this process reports TCP or the same-host path, a closed QP
raises. Skipped while soft0 cannot carry traffic or the headers have no
rverbs/soft.h."""
import errno

import pytest

import rverbs

needs_fault = pytest.mark.skipif(not hasattr(rverbs.Context, "fault_inject"),
                                 reason="no rverbs/soft.h")
TIMEOUT = 10.0


def wait_one(cq, what):
    wcs = cq.wait(1, timeout=TIMEOUT)
    assert wcs, "no completion for %s within %ss" % (what, TIMEOUT)
    return wcs[0]


@needs_fault
def test_delay_keeps_traffic_correct(rc_pair):
    a, b = rc_pair
    a.ctx.fault_inject(rverbs.RV_SOFT_FAULT_DELAY, count=2, delay_ms=50, qp=a.qp)
    data = bytes(range(256)) * 8
    a.mr.buf[0:len(data)] = data
    a.qp.write(a.mr.sge(0, len(data)), b.mr.addr + 64, b.mr.rkey, wr_id=3)
    wc = wait_one(a.cq, "WRITE")
    assert wc.ok, wc.status_str
    assert bytes(b.mr.buf[64:64 + len(data)]) == data


@needs_fault
def test_reset_completes_work_with_retry_exceeded(rc_pair):
    a, b = rc_pair
    # A round trip first: the connection is up and its setup frames are gone,
    # so the reset hits this SEND, not the connection setup (which would
    # flush the SEND instead).
    b.qp.recv(b.mr.sge(0, 4096), wr_id=6)
    a.qp.send(a.mr.sge(0, 16), wr_id=0)
    assert wait_one(a.cq, "SEND").status == rverbs.RV_WC_SUCCESS
    assert wait_one(b.cq, "RECV").status == rverbs.RV_WC_SUCCESS
    b.qp.recv(b.mr.sge(0, 4096), wr_id=7)
    a.ctx.fault_inject(rverbs.RV_SOFT_FAULT_RESET)
    a.qp.send(a.mr.sge(0, 16), wr_id=1)
    wc = wait_one(a.cq, "SEND")
    assert wc.wr_id == 1 and wc.status == rverbs.RV_WC_RETRY_EXC_ERR, wc.status_str
    wc = wait_one(b.cq, "RECV")
    assert wc.wr_id == 7 and wc.status == rverbs.RV_WC_WR_FLUSH_ERR, wc.status_str


@needs_fault
def test_bad_arguments(rc_pair):
    a, b = rc_pair
    with pytest.raises(rverbs.RVerbsError) as e:
        a.ctx.fault_inject(rverbs.RV_SOFT_FAULT_DROP, count=0)
    assert e.value.errno == errno.EINVAL
    with pytest.raises(rverbs.RVerbsError) as e:
        a.ctx.fault_inject(rverbs.RV_SOFT_FAULT_DROP, qp=b.qp)
    assert e.value.errno == errno.EINVAL and "another context" in str(e.value)
    a.ctx.fault_inject(rverbs.RV_SOFT_FAULT_CORRUPT, count=3)
    a.ctx.fault_inject(rverbs.RV_SOFT_FAULT_CLEAR)


needs_path = pytest.mark.skipif(not hasattr(rverbs.QP, "soft_path"), reason="no rv_soft_qp_path")


@needs_path
def test_soft_path_of_a_connected_pair(rc_pair):
    a, b = rc_pair
    b.qp.recv(b.mr.sge(0, 4096), wr_id=1)
    a.qp.send(a.mr.sge(0, 16), wr_id=2)
    assert wait_one(a.cq, "SEND").status == rverbs.RV_WC_SUCCESS
    assert wait_one(b.cq, "RECV").status == rverbs.RV_WC_SUCCESS
    # Up on both sides: TCP until the same-host agreement, then its rings.
    for qp in (a.qp, b.qp):
        assert qp.soft_path() in (rverbs.RV_SOFT_PATH_TCP, rverbs.RV_SOFT_PATH_SAME_HOST,
                                  rverbs.RV_SOFT_PATH_SAME_HOST_RINGS)
    lone = rverbs.QP(a.pd, a.cq)
    assert lone.soft_path() == rverbs.RV_SOFT_PATH_NONE
    lone.close()
    with pytest.raises(rverbs.RVerbsClosedError):
        lone.soft_path()
