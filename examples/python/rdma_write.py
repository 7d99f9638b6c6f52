#!/usr/bin/python3
"""rdma_write.py: one RDMA WRITE between two processes, from Python.

The server listens with the connection helper and advertises a buffer; the
client connects, writes a message into that buffer with one RDMA WRITE and
disconnects; the server, which posted nothing, then prints the buffer.

    rdma_write.py                         run both sides (the client as a child process)
    rdma_write.py server [PORT]           wait for one client
    rdma_write.py client HOST PORT [MESSAGE]

The device is the default one (RVERBS_DEVICE=name to choose). In a build tree:
    RVERBS_LIBRARY=build/lib/librverbs.so \\
    PYTHONPATH=build/bindings/python:bindings/python python3 examples/python/rdma_write.py
"""
import subprocess
import sys

import rverbs

MESSAGE = "Hello from Python: this text arrived by RDMA WRITE."


def server(port=0, spawn_client=False):
    with rverbs.Context() as ctx:
        pd = rverbs.PD(ctx)
        buf = rverbs.MR(pd, 4096, rverbs.RV_ACCESS_LOCAL_WRITE | rverbs.RV_ACCESS_REMOTE_WRITE)
        listener = rverbs.Listener(ctx, "127.0.0.1:%d" % port)
        print("server: listening on port %d (%s)" % (listener.port, ctx.device.name), flush=True)
        child = None
        if spawn_client:
            child = subprocess.Popen([sys.executable, __file__, "client", "127.0.0.1",
                                      str(listener.port)])
        # accept() waits without holding the GIL.
        conn = listener.accept(timeout=30, pd=pd, mr=buf)
        # The client disconnects once its WRITE completed.
        event = conn.poll(timeout=30)
        if event != rverbs.RV_CONN_EVENT_DISCONNECTED:
            print("server: the client did not finish", file=sys.stderr)
            return 1
        text = bytes(buf.buf).split(b"\0", 1)[0].decode()
        print('server: received by RDMA WRITE: "%s"' % text)
        if child is not None and child.wait(30) != 0:
            return 1
        return 0


def client(host, port, message=MESSAGE):
    with rverbs.Context() as ctx:
        conn = rverbs.Conn.connect(ctx, "%s:%s" % (host, port), timeout=30)
        peer = conn.peer_endpoint(0)
        data = message.encode() + b"\0"
        if not peer.mask & rverbs.RV_ENDPOINT_MR or peer.mr_length < len(data):
            print("client: the server advertised no buffer large enough", file=sys.stderr)
            return 1
        mr = rverbs.MR(conn.pd, 4096, rverbs.RV_ACCESS_LOCAL_WRITE)
        mr.buf[0:len(data)] = data  # straight into registered memory, no copy
        conn.qp.write(mr.sge(0, len(data)), peer.mr_addr, peer.mr_rkey, wr_id=1)
        wcs = conn.cq.wait(1, timeout=10)
        if not wcs or not wcs[0].ok:
            print("client: RDMA WRITE failed: %s" % (wcs[0].status_str if wcs else "timeout"),
                  file=sys.stderr)
            return 1
        print("client: wrote %d bytes with one RDMA WRITE (QP %d)" % (len(data), conn.qp.qp_num))
        conn.disconnect(timeout=10)
        return 0


def main(argv):
    try:
        if len(argv) >= 2 and argv[1] == "server":
            return server(int(argv[2]) if len(argv) > 2 else 0)
        if len(argv) >= 4 and argv[1] == "client":
            return client(argv[2], argv[3], *argv[4:5])
        if len(argv) == 1:
            rc = server(0, spawn_client=True)
            print("rdma_write.py: %s" % ("ok" if rc == 0 else "FAILED"))
            return rc
    except rverbs.RVerbsError as e:
        print(e, file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
