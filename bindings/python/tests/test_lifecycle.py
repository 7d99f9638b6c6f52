"""Ownership from Python: context managers, cascading close, use after close,
garbage collection in arbitrary orders. Runs on the mock driver everywhere and
on soft0 once it exists."""
import errno
import gc
import random

import pytest

import rverbs
from rverbs import ffi, lib, RVerbsClosedError, RVerbsError

from conftest import MOCK, mocklib


def make_tree(ctx):
    pd = rverbs.PD(ctx)
    cq = rverbs.CQ(ctx)
    qp = rverbs.QP(pd, cq)
    mr = rverbs.MR(pd, 4096)
    return pd, cq, qp, mr


def test_device_and_context_basics(device):
    assert device.name
    assert device.kind in (rverbs.RV_DEVICE_SOFT, rverbs.RV_DEVICE_VERBS)
    with rverbs.Context(device) as ctx:
        attr = ctx.query_device()
        assert attr["max_qp"] > 0
        port = ctx.query_port(1)
        assert port["active_mtu"] in range(1, 6)
        try:
            entry = ctx.query_gid_entry(1, 0)
        except rverbs.RVerbsError as e:
            # The test-only mock device has no typed GID query: a clear EOPNOTSUPP.
            assert e.errno == errno.EOPNOTSUPP and "GID types" in str(e)
        else:
            assert entry["gid"] == ctx.query_gid(1, 0)
            assert entry["gid_type"] in (rverbs.RV_GID_TYPE_IB, rverbs.RV_GID_TYPE_ROCE_V1,
                                         rverbs.RV_GID_TYPE_ROCE_V2)
            assert entry["port_num"] == 1 and entry["gid_index"] == 0
            if device.name == "soft0":
                assert entry["gid_type"] == rverbs.RV_GID_TYPE_ROCE_V2
                assert ctx.query_pkey(1, 0) == 0xffff
        assert "context" in ctx.dump()
    assert ctx.closed


def test_context_manager_closes_everything(device):
    with rverbs.Context(device) as ctx:
        pd, cq, qp, mr = make_tree(ctx)
        assert not qp.closed
    for obj in (pd, cq, qp, mr, ctx):
        assert obj.closed, obj


def test_close_cascades_like_the_c_core(context):
    pd, cq, qp, mr = make_tree(context)
    other_pd = rverbs.PD(context)
    pd.close()
    assert pd.closed and qp.closed and mr.closed
    assert not cq.closed and not other_pd.closed and not context.closed
    # The children keep their reference: C answers, and says why.
    with pytest.raises(RVerbsClosedError) as ei:
        qp.to_init()
    assert ei.value.errno == errno.EBADFD == rverbs.ECLOSED == 77
    assert "closed because" in ei.value.detail
    cq.close()
    assert cq.closed
    for obj in (qp, mr, cq, pd):
        obj.close()  # idempotent, drops each reference once


def test_closing_a_cq_closes_its_qps(context):
    pd, cq, qp, mr = make_tree(context)
    cq.close()
    assert qp.closed and not pd.closed and not mr.closed
    with pytest.raises(RVerbsClosedError):
        qp.post_recv([rverbs.RecvWR(1, [mr.sge(0, 64)])])


def test_use_after_close_raises_a_clear_error(context):
    pd, cq, qp, mr = make_tree(context)
    qp.close()
    with pytest.raises(RVerbsClosedError) as ei:
        qp.qp_num
    e = ei.value
    assert isinstance(e, RVerbsError) and isinstance(e, OSError)
    assert e.errno == errno.EBADFD
    assert "QP is closed" in str(e)
    with pytest.raises(RVerbsClosedError):
        qp.send(mr.sge(0, 8))
    with pytest.raises(RVerbsClosedError):
        mr.close() or mr.lkey
    with pytest.raises(RVerbsClosedError):
        qp.handle
    qp.close()


def test_errors_carry_errno_and_the_library_message(context):
    pd, cq, qp, mr = make_tree(context)
    with pytest.raises(RVerbsError) as ei:
        qp.to_rts()  # RESET -> RTS is not a transition
    assert ei.value.errno == errno.EINVAL
    assert ei.value.func == "rv_qp_to_rts"
    assert "RESET -> RTS" in ei.value.detail
    with pytest.raises(RVerbsError) as ei:
        rverbs.MR(pd, 0)
    assert ei.value.errno == errno.EINVAL
    with pytest.raises(rverbs.RVerbsError) as ei:
        rverbs.Device("no-such-device")
    assert ei.value.errno == errno.ENODEV


def test_qp_state_machine(context):
    pd, cq, qp, mr = make_tree(context)
    assert qp.state == rverbs.RV_QPS_RESET
    qp.to_init()
    assert qp.state == rverbs.RV_QPS_INIT
    assert qp.cap["max_send_wr"] >= 1


def test_mr_memory_is_a_writable_view_without_copy(context):
    pd = rverbs.PD(context)
    mr = rverbs.MR(pd, 8192)
    view = mr.buf
    assert isinstance(view, memoryview) and not view.readonly and len(view) == mr.length
    assert int(ffi.cast("uintptr_t", ffi.from_buffer(view))) == mr.addr  # same memory
    view[0:5] = b"hello"
    assert bytes(ffi.buffer(ffi.cast("char *", mr.addr), 5)) == b"hello"
    mr.close()
    # A view outlives close(): rv_mr_alloc memory lives until the last reference.
    assert bytes(view[0:5]) == b"hello"
    del view
    gc.collect()


def test_mr_over_caller_memory(context):
    pd = rverbs.PD(context)
    buf = bytearray(b"x" * 4096)
    mr = rverbs.MR(pd, buffer=buf)
    assert mr.addr == int(ffi.cast("uintptr_t", ffi.from_buffer(buf)))
    mr.buf[0:3] = b"abc"
    assert buf[0:3] == b"abc"
    with pytest.raises(TypeError):
        rverbs.MR(pd, buffer=b"read-only bytes")
    mr.close()


def test_poll_in_batches_reuses_one_array(context):
    cq = rverbs.CQ(context, batch=8)
    n, arr = cq.poll_raw()
    assert n == 0 and len(arr) == 8
    if MOCK:
        mocklib.rvmock_set_completions(5, 0)
        wcs = cq.poll()
        assert [w.wr_id for w in wcs] == [0, 1, 2, 3, 4] and all(w.ok for w in wcs)
        n2, arr2 = cq.poll_raw()
        assert n2 == 5 and arr2 is arr
        mocklib.rvmock_set_completions(0, 0)
    assert cq.poll() == []
    assert cq.wait(1, timeout=0.01) == []


def test_endpoint_roundtrip(context):
    pd, cq, qp, mr = make_tree(context)
    ep = qp.endpoint()
    ep.set_mr(mr)
    ep.user_data = b"hello"
    data = ep.pack()
    back = rverbs.Endpoint.unpack(data)
    assert back.qpn == qp.qp_num and back.mr_rkey == mr.rkey and back.user_data == b"hello"
    with pytest.raises(RVerbsError) as ei:
        rverbs.Endpoint.unpack(b"garbage")
    assert ei.value.errno in (errno.EBADMSG, errno.EPROTONOSUPPORT)


def test_device_list_holds_references():
    devs = rverbs.Device.list()
    names = [d.name for d in devs]
    del devs
    gc.collect()
    assert isinstance(names, list)


@pytest.mark.parametrize("seed", range(40))
def test_gc_in_arbitrary_orders_never_crashes(device, seed):
    """Build a tree, then close and drop its objects in a random order, with
    reference cycles so that the collector finalizes them in its own order."""
    rnd = random.Random(seed)
    ctx = rverbs.Context(device)
    objs = [ctx]
    for _ in range(rnd.randint(1, 3)):
        pd = rverbs.PD(ctx)
        objs.append(pd)
        for _ in range(rnd.randint(0, 2)):
            objs.append(rverbs.MR(pd, 4096))
        cq = rverbs.CQ(ctx)
        objs.append(cq)
        for _ in range(rnd.randint(0, 3)):
            objs.append(rverbs.QP(pd, cq, recv_cq=rnd.choice([None, cq])))
    views = [o.buf for o in objs if isinstance(o, rverbs.MR) and rnd.random() < 0.5]
    # Some cycles: an object that refers to a list holding it.
    for o in objs:
        if rnd.random() < 0.3:
            o.cycle = [o, objs]
    rnd.shuffle(objs)
    for o in objs:
        if rnd.random() < 0.3:
            o.close()
    while objs:
        objs.pop(rnd.randrange(len(objs)))
        if rnd.random() < 0.3:
            gc.collect()
    del ctx, pd, cq, o
    for v in views:
        v[0:1] = b"z"  # still valid memory
    del views
    gc.collect()
    gc.collect()


def test_lowlevel_unref_orders(device):
    """The C core alone: children unreferenced after their parents."""
    out_ctx = ffi.new("rv_context **")
    assert lib.rv_context_new(device.handle, ffi.NULL, out_ctx) == 0
    out_pd = ffi.new("rv_pd **")
    assert lib.rv_pd_new(out_ctx[0], ffi.NULL, out_pd) == 0
    out_mr = ffi.new("rv_mr **")
    assert lib.rv_mr_alloc(out_pd[0], 4096, lib.RV_ACCESS_LOCAL_WRITE, ffi.NULL, out_mr) == 0
    assert lib.rv_context_unref(out_ctx[0]) == ffi.NULL
    assert lib.rv_pd_unref(out_pd[0]) == ffi.NULL
    assert lib.rv_mr_unref(out_mr[0]) == ffi.NULL


def test_qp_signal_policy(context):
    """Selective signalling: set on a QP with sq_sig_all off, its accounting
    starts at 0, and the bad cases raise with the reason."""
    pd = rverbs.PD(context)
    cq = rverbs.CQ(context)
    qp = rverbs.QP(pd, cq, sq_sig_all=False, max_send_wr=8, max_recv_wr=8)
    with pytest.raises(rverbs.RVerbsError) as e:
        qp.send_outstanding
    assert "no signalling policy" in str(e.value)
    qp.set_signal_every(4)
    assert qp.send_outstanding == 0
    with pytest.raises(rverbs.RVerbsError) as e:
        qp.set_signal_every(qp.cap["max_send_wr"] + 1)
    assert e.value.errno == errno.EINVAL and "max_send_wr" in str(e.value)
    qp.set_signal_every(0)
    every = rverbs.QP(pd, cq, max_send_wr=8, max_recv_wr=8)
    with pytest.raises(rverbs.RVerbsError) as e:
        every.set_signal_every(4)
    assert "sq_sig_all" in str(e.value)


def test_cascade_closed_objects_raise_on_every_getter(device):
    """Issue 17: after ctx.close(), the getters C answers with 0 for a closed
    handle (rv_qp_num, rv_cq_size, rv_mr_lkey, rv_mr_rkey) raise, as
    bindings/README.md promises, and mr.sge() does too."""
    ctx = rverbs.Context(device)
    pd, cq, qp, mr = make_tree(ctx)
    ctx.close()
    for get in (lambda: qp.qp_num, lambda: qp.num, lambda: cq.size, lambda: mr.lkey,
                lambda: mr.rkey, lambda: mr.sge(), lambda: mr.sge(0, 8)):
        with pytest.raises(RVerbsClosedError) as ei:
            get()
        assert ei.value.errno == errno.EBADFD
        assert "closed because" in ei.value.detail
    for obj in (qp, mr, cq, pd):
        obj.close()


def test_getters_raise_when_c_closed_the_handle_behind_python(context):
    """A handle closed on the C side only (through lib, without the Python
    parent knowing) is reported closed by the getters too, not read as 0."""
    pd, cq, qp, mr = make_tree(context)
    assert mr.lkey and qp.qp_num and cq.size
    assert lib.rv_pd_close(pd.handle) == 0
    assert not mr.closed  # Python was not told
    with pytest.raises(RVerbsClosedError) as ei:
        mr.lkey
    assert "rv_mr_lkey" in str(ei.value) and "closed because its PD" in ei.value.detail
    with pytest.raises(RVerbsClosedError):
        qp.qp_num
    with pytest.raises(RVerbsClosedError):
        mr.sge(0, 8)
    assert cq.size  # the CQ does not depend on the PD
    for obj in (qp, mr, cq, pd):
        obj.close()
