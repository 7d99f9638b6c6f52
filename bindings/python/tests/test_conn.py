"""The connection helper from Python: Listener.accept() in a thread (it waits
without the GIL) while the main thread connects; RDMA WRITE into the buffer the
server advertised; private data; disconnect; close cascades."""
import threading

import pytest

import rverbs

from conftest import MOCK, NOT_READY


@pytest.fixture
def conn_pair():
    if MOCK:
        pytest.skip("the connection helper needs a real device")
    try:
        sctx, cctx = rverbs.Context("soft0"), rverbs.Context("soft0")
    except rverbs.RVerbsError as e:
        if e.errno in NOT_READY:
            pytest.skip("no soft0: %s" % e)
        raise
    spd = rverbs.PD(sctx)
    smr = rverbs.MR(spd, 65536, rverbs.RV_ACCESS_ALL_REMOTE)
    listener = rverbs.Listener(sctx, "127.0.0.1:0")
    result = {}

    def serve():
        try:
            result["conn"] = listener.accept(timeout=20, pd=spd, mr=smr,
                                             private_data=b"from server")
        except rverbs.RVerbsError as e:
            result["error"] = e

    t = threading.Thread(target=serve)
    t.start()
    try:
        client = rverbs.Conn.connect(cctx, "127.0.0.1:%d" % listener.port, timeout=20,
                                     private_data=b"from client", gid_index=0,
                                     traffic_class=0x68, sl=2, flow_label=0x12345,
                                     hop_limit=9, ack_timeout=18)
    finally:
        t.join(30)
    if "error" in result:
        raise result["error"]
    server = result["conn"]
    yield server, client, smr
    for obj in (client, server, listener, sctx, cctx):
        obj.close()


def test_connect_write_and_private_data(conn_pair):
    server, client, smr = conn_pair
    assert client.state == rverbs.RV_CONN_ESTABLISHED == server.state
    assert client.peer_data == b"from server" and server.peer_data == b"from client"
    assert client.num_qps == 1 and len(client.qps) == 1
    assert client.peer_addr.startswith("127.0.0.1:")
    peer = client.peer_endpoint(0)
    assert peer.mask & rverbs.RV_ENDPOINT_MR and peer.mr_rkey == smr.rkey
    cmr = rverbs.MR(client.pd, 4096)
    cmr.buf[0:6] = b"conn!\0"
    client.qp.write(cmr.sge(0, 6), peer.mr_addr, peer.mr_rkey, wr_id=21)
    wcs = client.cq.wait(1, timeout=10)
    assert wcs and wcs[0].ok, wcs
    assert bytes(smr.buf[0:6]) == b"conn!\0"


def test_routing_options_are_applied_and_checked(conn_pair):
    server, client, smr = conn_pair
    assert client.qp.gid_index == 0  # soft0's one GID
    q = client.qp.query()
    assert q["timeout"] == 18
    assert q["ah_attr"]["hop_limit"] == 9 and q["ah_attr"]["traffic_class"] == 0x68
    ctx = client.context
    with pytest.raises(rverbs.RVerbsError) as e:
        rverbs.Conn.connect_start(ctx, "127.0.0.1:1", sl=16)
    assert "sl 16" in str(e.value)
    with pytest.raises(rverbs.RVerbsError) as e:
        rverbs.Conn.connect_start(ctx, "127.0.0.1:1", resolve=(0, 1))
    assert "resolve_timeout_ms 0" in str(e.value)


def test_disconnect_is_seen_by_the_peer(conn_pair):
    server, client, smr = conn_pair
    done = {}
    t = threading.Thread(target=lambda: done.setdefault("ev", server.poll(timeout=10)))
    t.start()
    client.disconnect(timeout=10)
    t.join(15)
    assert done.get("ev") == rverbs.RV_CONN_EVENT_DISCONNECTED
    assert client.state == rverbs.RV_CONN_DISCONNECTED


def test_closing_the_pd_closes_the_connection(conn_pair):
    server, client, smr = conn_pair
    client.pd.close()
    assert client.closed and client.qp.closed
    with pytest.raises(rverbs.RVerbsClosedError):
        client.state


def test_accept_times_out_cleanly(context):
    if MOCK:
        pytest.skip("the connection helper needs a real device")
    with rverbs.Listener(context, "127.0.0.1:0") as listener:
        with pytest.raises(rverbs.RVerbsError) as ei:
            listener.accept(timeout=0.05)
        assert ei.value.errno in (11, 110)  # EAGAIN or ETIMEDOUT


def test_ud_connection_gives_the_peer_address_handle():
    if MOCK:
        pytest.skip("the connection helper needs a real device")
    try:
        sctx, cctx = rverbs.Context("soft0"), rverbs.Context("soft0")
    except rverbs.RVerbsError as e:
        if e.errno in NOT_READY:
            pytest.skip("no soft0: %s" % e)
        raise
    spd = rverbs.PD(sctx)
    scq = rverbs.CQ(sctx, cqe=64)
    sqp = rverbs.QP(spd, scq, qp_type=rverbs.RV_QPT_UD)
    sqp.to_init(qkey=0x4444)
    smr = rverbs.MR(spd, 4096, rverbs.RV_ACCESS_LOCAL_WRITE)
    sqp.post_recv([rverbs.RecvWR(wr_id=1, sg_list=[smr.sge(0, 1024)])])
    listener = rverbs.Listener(sctx, "127.0.0.1:0")
    result = {}

    def serve():
        try:
            result["conn"] = listener.accept(timeout=20, qps=[sqp])
        except rverbs.RVerbsError as e:
            result["error"] = e

    t = threading.Thread(target=serve)
    t.start()
    try:
        client = rverbs.Conn.connect(cctx, "127.0.0.1:%d" % listener.port, timeout=20,
                                     qp_type=rverbs.RV_QPT_UD, qkey=0x5555)
    finally:
        t.join(30)
    if "error" in result:
        raise result["error"]
    server = result["conn"]
    ah, qpn, qkey = client.peer_ah(0)
    assert qpn == sqp.qp_num and qkey == 0x4444
    assert server.peer_ah(0)[2] == 0x5555
    cmr = rverbs.MR(client.pd, 4096)
    cmr.buf[0:2] = b"ud"
    client.qp.post_send([rverbs.SendWR(wr_id=2, sg_list=[cmr.sge(0, 2)], ah=ah, remote_qpn=qpn,
                                       remote_qkey=qkey, send_flags=rverbs.RV_SEND_SIGNALED)])
    wcs = scq.wait(1, timeout=10)
    assert wcs and wcs[0].ok and wcs[0].wr_id == 1, wcs
    assert bytes(smr.buf[rverbs.RV_UD_GRH_LEN:rverbs.RV_UD_GRH_LEN + 2]) == b"ud"
    with pytest.raises(rverbs.RVerbsError) as e:
        client.peer_ah(1)
    assert e.value.errno == 22
    for obj in (client, server, listener, sctx, cctx):
        obj.close()
