"""Extended verbs: the extended device query, the device clock, CQs with
completion timestamps (CQ.poll_ex) and the work-request builder (QP.wr_*)."""
import errno
import threading
import time

import pytest

import rverbs

from conftest import MOCK

TIMEOUT = 10

needs_ext = pytest.mark.skipif(not hasattr(rverbs, "WCEx"), reason="no extended verbs in these headers")


@needs_ext
def test_query_device_has_the_extended_fields(context):
    d = context.query_device()
    for field in ("completion_timestamp_mask", "hca_core_clock", "odp_general_caps", "max_send_sge",
                  "max_recv_sge", "max_read_sge", "max_inline_data", "cq_wc_flags", "pci_atomic_swap"):
        assert field in d
    assert d["max_read_sge"] == d["max_sge_rd"]
    assert bool(d["cq_wc_flags"] & rverbs.CQ_WC_TIMESTAMP) == bool(d["completion_timestamp_mask"])


@needs_ext
def test_read_clock(context):
    if MOCK:
        # The mock driver has no clock: refused by name.
        with pytest.raises(rverbs.RVerbsError) as e:
            context.read_clock()
        assert e.value.errno == errno.EOPNOTSUPP and "rv_context_read_clock" in str(e.value)
        return
    a = context.read_clock()
    b = context.read_clock()
    assert b >= a


class _Side:
    def __init__(self, wc_flags):
        self.ctx = rverbs.Context("soft0")
        self.pd = rverbs.PD(self.ctx)
        self.cq = rverbs.CQ(self.ctx, cqe=64, wc_flags=wc_flags)
        self.qp = rverbs.QP(self.pd, self.cq, max_send_wr=16, max_recv_wr=16, max_send_sge=2)
        self.mr = rverbs.MR(self.pd, 65536, rverbs.RV_ACCESS_ALL_REMOTE)


def _pair(wc_flags):
    a, b = _Side(wc_flags), _Side(wc_flags)
    ea, eb = a.qp.endpoint(), b.qp.endpoint()
    t = threading.Thread(target=b.qp.connect, args=(ea,))
    t.start()
    a.qp.connect(eb)
    t.join(30)
    return a, b


def _poll_ex(cq, n=1):
    got, end = [], time.monotonic() + TIMEOUT
    while len(got) < n and time.monotonic() < end:
        got += cq.poll_ex(n - len(got))
    assert len(got) == n, "no completion within %ss" % TIMEOUT
    return got


@needs_ext
def test_timestamps_lie_between_clock_reads():
    if MOCK:
        pytest.skip("traffic needs soft0")
    flags = rverbs.CQ_WC_TIMESTAMP | rverbs.CQ_WC_TIMESTAMP_WALLCLOCK
    a, b = _pair(flags)
    assert a.cq.wc_flags == flags
    b.qp.recv(b.mr.sge(0, 1024), wr_id=5)
    t0, w0 = a.ctx.read_clock(), time.time_ns()
    a.mr.buf[0:5] = b"stamp"
    a.qp.send(a.mr.sge(0, 5), wr_id=1)
    (wa,), (wb,) = _poll_ex(a.cq), _poll_ex(b.cq)
    t1, w1 = a.ctx.read_clock(), time.time_ns()
    assert wa.ok and wa.wr_id == 1 and wb.ok and wb.wr_id == 5 and wb.byte_len == 5
    assert wa.ex_flags == flags
    assert t0 <= wa.timestamp <= t1 and t0 <= wb.timestamp <= t1
    assert w0 <= wa.timestamp_wallclock <= w1
    assert wb.wc.wr_id == 5
    a.ctx.close()
    b.ctx.close()


@needs_ext
def test_unsupported_wc_flag_is_refused(context):
    d = context.query_device()
    if d["cq_wc_flags"] & rverbs.CQ_WC_FLOW_TAG:
        pytest.skip("the device has flow tags")
    if MOCK:
        with pytest.raises(rverbs.RVerbsError) as e:
            rverbs.CQ(context, wc_flags=rverbs.CQ_WC_TIMESTAMP)
        assert e.value.errno == errno.EOPNOTSUPP
        return
    with pytest.raises(rverbs.RVerbsError) as e:
        rverbs.CQ(context, wc_flags=rverbs.CQ_WC_FLOW_TAG)
    assert e.value.errno == errno.EOPNOTSUPP and "flow" in str(e.value)


@needs_ext
def test_work_request_builder():
    if MOCK:
        pytest.skip("traffic needs soft0")
    a, b = _pair(0)
    b.qp.recv(b.mr.sge(0, 1024), wr_id=10)
    b.qp.recv(b.mr.sge(1024, 1024), wr_id=11)
    b.qp.recv(b.mr.sge(2048, 1024), wr_id=12)
    a.mr.buf[0:4] = b"data"
    b.mr.buf[8000:8008] = (40).to_bytes(8, "little")
    with a.qp.wr_batch():
        a.qp.wr_send(1, rverbs.SEND_SIGNALED)
        a.qp.wr_set_sge(a.mr.lkey, a.mr.addr, 4)
        a.qp.wr_send_imm(2, rverbs.SEND_SIGNALED, 99)
        a.qp.wr_set_inline_data(b"inline")
        a.qp.wr_rdma_write(3, rverbs.SEND_SIGNALED, b.mr.rkey, b.mr.addr + 4096)
        a.qp.wr_set_sge_list([a.mr.sge(0, 2), a.mr.sge(2, 2)])
        a.qp.wr_rdma_write_imm(4, rverbs.SEND_SIGNALED, b.mr.rkey, b.mr.addr + 5000, 7)
        a.qp.wr_set_inline_data_list([b"ab", b"cd"])
        a.qp.wr_rdma_read(5, rverbs.SEND_SIGNALED, b.mr.rkey, b.mr.addr + 4096)
        a.qp.wr_set_sge(a.mr.lkey, a.mr.addr + 100, 4)
        a.qp.wr_atomic_fetch_add(6, rverbs.SEND_SIGNALED, b.mr.rkey, b.mr.addr + 8000, 2)
        a.qp.wr_set_sge(a.mr.lkey, a.mr.addr + 200, 8)
        a.qp.wr_atomic_cmp_swp(7, rverbs.SEND_SIGNALED | rverbs.SEND_FENCE, b.mr.rkey, b.mr.addr + 8000, 42, 5)
        a.qp.wr_set_sge(a.mr.lkey, a.mr.addr + 208, 8)
    got = [w.wr_id for w in _poll_ex(a.cq, 7)]
    assert got == [1, 2, 3, 4, 5, 6, 7]
    rx = _poll_ex(b.cq, 3)
    assert [w.wr_id for w in rx] == [10, 11, 12] and all(w.ok for w in rx)
    assert bytes(b.mr.buf[0:4]) == b"data" and bytes(b.mr.buf[1024:1030]) == b"inline"
    assert rx[1].imm_data == 99 and rx[2].imm_data == 7
    assert bytes(b.mr.buf[4096:4100]) == b"data" and bytes(b.mr.buf[5000:5004]) == b"abcd"
    assert bytes(a.mr.buf[100:104]) == b"data"
    assert int.from_bytes(bytes(a.mr.buf[200:208]), "little") == 40
    assert int.from_bytes(bytes(a.mr.buf[208:216]), "little") == 42
    assert int.from_bytes(bytes(b.mr.buf[8000:8008]), "little") == 5
    # An exception inside the batch drops it; misuse is refused by name.
    with pytest.raises(RuntimeError):
        with a.qp.wr_batch():
            a.qp.wr_send(8, rverbs.SEND_SIGNALED)
            raise RuntimeError("dropped")
    assert a.cq.poll_ex() == []
    with pytest.raises(rverbs.RVerbsError) as e:
        a.qp.wr_send(9, 0)
    assert "rv_qp_wr_start" in str(e.value)
    a.qp.wr_start()
    with pytest.raises(rverbs.RVerbsError) as e:
        a.qp.wr_set_ud_addr(None, 1, 1)
    a.qp.wr_send(9, 0)
    with pytest.raises(rverbs.RVerbsError) as e:
        a.qp.wr_atomic_write(9, 0, b.mr.rkey, b.mr.addr, b"12345678")
    assert e.value.errno == errno.EOPNOTSUPP
    a.qp.wr_send_inv(10, 0, 0)
    a.qp.wr_abort()
    assert a.qp.wr_complete.__name__
    with pytest.raises(rverbs.RVerbsError):
        a.qp.wr_complete()
    a.ctx.close()
    b.ctx.close()


def test_dmabuf_mr_refuses_what_is_not_a_dmabuf(context):
    """MR(pd, length, dmabuf=fd): a descriptor that is not a dma-buf is refused by name."""
    import os
    pd = rverbs.PD(context)
    fd = os.memfd_create("not-a-dmabuf")
    try:
        os.ftruncate(fd, 65536)
        with pytest.raises(rverbs.RVerbsError) as e:
            rverbs.MR(pd, 65536, dmabuf=fd, iova=0x10000)
        assert e.value.errno == errno.EINVAL and "not a dma-buf" in str(e.value)
        with pytest.raises(TypeError):
            rverbs.MR(pd, dmabuf=fd)
    finally:
        os.close(fd)
