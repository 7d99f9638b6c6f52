"""UD from Python over soft0: address handles, SendWR's UD fields, the GRH
area, AH.from_wc for the reply, and the AH's lifetime rules."""
import pytest

import rverbs
from rverbs import SendWR, RecvWR

from conftest import MOCK, NOT_READY

TIMEOUT = 10.0
QKEY = 0x11111111


def recv_one(cq, what):
    for _ in range(8):
        wcs = cq.wait(1, timeout=TIMEOUT)
        assert wcs, "no completion for %s within %ss" % (what, TIMEOUT)
        if wcs[0].opcode & rverbs.RV_WC_RECV:
            return wcs[0]
    raise AssertionError("no receive completion for %s" % what)


@pytest.fixture
def ud():
    if MOCK:
        pytest.skip("traffic needs a real device (the mock only cans completions)")
    try:
        ctx = rverbs.Context("soft0")
    except rverbs.RVerbsError as e:
        if e.errno in NOT_READY:
            pytest.skip("soft0 is not available: %s" % e)
        raise
    pd = rverbs.PD(ctx)
    cq = rverbs.CQ(ctx, cqe=256, batch=16)
    qps = [rverbs.QP(pd, cq, qp_type=rverbs.RV_QPT_UD) for _ in range(2)]
    for qp in qps:
        qp.to_init(qkey=QKEY)
        qp.to_rtr()
        qp.to_rts()
    mr = rverbs.MR(pd, 65536, rverbs.RV_ACCESS_LOCAL_WRITE)
    yield ctx, pd, cq, qps, mr
    ctx.close()


def test_ud_send_and_reply_from_wc(ud):
    ctx, pd, cq, (a, b), mr = ud
    eb = b.endpoint()
    assert a.gid_index == 0  # soft0's one GID
    ah = rverbs.AH(pd, dgid=eb.gid, dlid=eb.lid, traffic_class=0x20, sgid_index=a.gid_index)
    assert ah.query()["is_global"] == 1 and ah.query()["hop_limit"] == 64
    b.post_recv([RecvWR(wr_id=5, sg_list=[mr.sge(4096, 1024)])])
    mr.buf[0:5] = b"hello"
    a.post_send([SendWR(wr_id=1, sg_list=[mr.sge(0, 5)], ah=ah, remote_qpn=b.qp_num,
                        remote_qkey=QKEY, send_flags=rverbs.RV_SEND_SIGNALED)])
    wc = recv_one(cq, "UD SEND")
    assert wc.ok and wc.wr_id == 5 and wc.byte_len == rverbs.RV_UD_GRH_LEN + 5
    assert wc.src_qp == a.qp_num and wc.wc_flags & rverbs.RV_WC_GRH
    grh = bytes(mr.buf[4096:4096 + rverbs.RV_UD_GRH_LEN])
    assert grh[:20] == bytes(20) and grh[20] == 0x45 and grh[21] == 0x20
    assert bytes(mr.buf[4096 + 40:4096 + 45]) == b"hello"

    reply = rverbs.AH.from_wc(pd, wc, grh)
    assert reply.query()["dgid"] == bytes(eb.gid)
    a.post_recv([RecvWR(wr_id=6, sg_list=[mr.sge(8192, 1024)])])
    b.post_send([SendWR(wr_id=2, sg_list=[mr.sge(0, 3)], ah=reply, remote_qpn=wc.src_qp,
                        remote_qkey=QKEY)])
    wc = recv_one(cq, "the reply")
    assert wc.ok and wc.wr_id == 6 and wc.src_qp == b.qp_num


def test_ud_ah_errors_and_lifetime(ud):
    ctx, pd, cq, (a, b), mr = ud
    eb = b.endpoint()
    with pytest.raises(rverbs.RVerbsError) as e:
        rverbs.AH(pd, dgid=eb.gid, dlid=eb.lid, sgid_index=1)
    assert "sgid_index 1" in str(e.value)
    with pytest.raises(rverbs.RVerbsError) as e:
        a.gid_index = 0  # a and b are in RTS: their GID is chosen
    assert "RTS" in str(e.value)
    fresh = rverbs.QP(pd, cq, qp_type=rverbs.RV_QPT_UD)
    with pytest.raises(rverbs.RVerbsError) as e:
        fresh.gid_index = 1
    assert "past the GID table" in str(e.value)
    fresh.gid_index = 0
    assert fresh.gid_index == 0
    fresh.close()
    rverbs.AH(pd, dgid=eb.gid, dlid=0).close()  # dlid 0: RoCEv2's port 4791, as to a NIC
    with pytest.raises(TypeError):
        rverbs.AH(pd, nonsense=1)
    ah = pd.ah(dgid=eb.gid, dlid=eb.lid)
    with pytest.raises(rverbs.RVerbsError) as e:
        a.post_send([SendWR(sg_list=[mr.sge(0, 5000)], ah=ah, remote_qpn=b.qp_num, remote_qkey=QKEY)])
    assert "path MTU" in str(e.value)
    pd.close()
    assert ah.closed
    with pytest.raises(rverbs.RVerbsClosedError):
        ah.query()


def test_ud_multicast_attach_send_detach(ud):
    import os
    ctx, pd, cq, (a, b), mr = ud
    group = bytes(10) + b"\xff\xff" + bytes([239, 160, (os.getpid() >> 8) & 0xff, os.getpid() & 0xff | 1])
    try:
        b.attach_mcast(group)
    except rverbs.RVerbsError as e:
        if e.errno == 98:  # EADDRINUSE: a kernel RoCE device holds UDP 4791 (docs/ud.md)
            pytest.skip("soft0 cannot bind its multicast socket to UDP 4791 here: %s" % e)
        raise
    b.post_recv([RecvWR(wr_id=21, sg_list=[mr.sge(4096, 1024)])])
    ah = rverbs.AH(pd, dgid=group)
    mr.buf[0:5] = b"group"
    a.post_send([SendWR(wr_id=3, sg_list=[mr.sge(0, 5)], ah=ah, remote_qpn=rverbs.RV_MCAST_QPN,
                        remote_qkey=QKEY, send_flags=rverbs.RV_SEND_SIGNALED)])
    wc = recv_one(cq, "the group's datagram")
    assert wc.ok and wc.wr_id == 21 and wc.qp_num == b.qp_num and wc.src_qp == a.qp_num
    assert bytes(mr.buf[4096 + rverbs.RV_UD_GRH_LEN:4096 + rverbs.RV_UD_GRH_LEN + 5]) == b"group"
    b.detach_mcast(group)
    with pytest.raises(rverbs.RVerbsError) as e:
        b.detach_mcast(group)  # not attached any more
    assert e.value.errno == 22 and "not attached" in str(e.value)
    with pytest.raises(rverbs.RVerbsError) as e:
        a.attach_mcast(bytes(10) + b"\xff\xff" + bytes([127, 0, 0, 1]))
    assert "not a multicast GID" in str(e.value)
    with pytest.raises(ValueError):
        a.attach_mcast(b"short")


def test_ud_join_mcast(ud):
    """QP.join_mcast (rv_mcast_join): the join attaches the QP and returns the
    group's AH and Q_Key, which reach it; leave() detaches; bad groups refused."""
    import os
    ctx, pd, cq, (a, b), mr = ud
    group = "239.161.%d.%d" % ((os.getpid() >> 8) & 0xff, os.getpid() & 0xff | 1)
    try:
        m, ah, qkey = b.join_mcast(group)
    except rverbs.RVerbsError as e:
        if e.errno == 98:  # EADDRINUSE: a kernel RoCE device holds UDP 4791 (docs/ud.md)
            pytest.skip("soft0 cannot bind its multicast socket to UDP 4791 here: %s" % e)
        raise
    assert qkey == QKEY and m.joined and m.qp is b
    b.post_recv([RecvWR(wr_id=22, sg_list=[mr.sge(4096, 1024)])])
    mr.buf[0:6] = b"joined"
    a.post_send([SendWR(wr_id=4, sg_list=[mr.sge(0, 6)], ah=ah, remote_qpn=rverbs.RV_MCAST_QPN,
                        remote_qkey=qkey, send_flags=rverbs.RV_SEND_SIGNALED)])
    wc = recv_one(cq, "the group's datagram")
    assert wc.ok and wc.wr_id == 22 and wc.qp_num == b.qp_num and wc.src_qp == a.qp_num
    assert bytes(mr.buf[4096 + rverbs.RV_UD_GRH_LEN:4096 + rverbs.RV_UD_GRH_LEN + 6]) == b"joined"
    m.leave()
    assert not m.joined
    m.leave()  # a second leave does nothing
    with pytest.raises(rverbs.RVerbsError) as e:
        b.detach_mcast(bytes(10) + b"\xff\xff" + bytes(int(x) for x in group.split(".")))
    assert e.value.errno == 22  # left: not attached any more
    with pytest.raises(rverbs.RVerbsError) as e:
        a.join_mcast("10.1.2.3")
    assert e.value.errno == 22 and "not an IPv4 multicast" in str(e.value)
