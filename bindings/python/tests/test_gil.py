"""A thread waiting in rverbs does not stall the interpreter.

cffi releases the GIL around every call into C, in ABI mode as in API mode;
CQ.wait() also yields the GIL between polls. Each test parks a thread in a
wait that only the *main* thread can end, by doing Python work. If the wait
held the GIL, the main thread could never run, and the wait would end by its
(generous) timeout instead: so the tests check an outcome, not a speed, and a
loaded machine cannot make them fail.
"""
import os
import threading

from rverbs import ffi


def test_poller_thread_does_not_stall_the_interpreter(rc_pair):
    a, b = rc_pair
    msg = b"posted by the main thread"
    b.qp.recv(b.mr.sge(0, 4096), wr_id=7)
    result = []
    started = threading.Event()

    def poller():
        started.set()
        result.append(b.cq.wait(1, timeout=30.0))

    t = threading.Thread(target=poller)
    t.start()
    started.wait(5)
    # Only this thread can produce the completion the poller waits for.
    a.mr.buf[0:len(msg)] = msg
    a.qp.send(a.mr.sge(0, len(msg)), wr_id=1)
    t.join(60)
    assert not t.is_alive()
    assert len(result) == 1 and len(result[0]) == 1, \
        "the poller timed out: the main thread could not post while it waited"
    assert result[0][0].wr_id == 7 and result[0][0].ok
    assert a.cq.wait(1, timeout=30.0)


def test_blocking_abi_call_releases_the_gil():
    """A call blocked in C through cffi's ABI mode (here libc's poll(), the
    same mechanism as every rverbs call) lets other threads run."""
    libc_ffi = type(ffi)()
    libc_ffi.cdef("struct pollfd { int fd; short events; short revents; };"
                  "int poll(struct pollfd *fds, unsigned long nfds, int timeout);")
    libc = libc_ffi.dlopen(None)
    rfd, wfd = os.pipe()
    pfd = libc_ffi.new("struct pollfd *", {"fd": rfd, "events": 1})  # POLLIN
    result = []
    started = threading.Event()

    def blocker():
        started.set()
        result.append(libc.poll(pfd, 1, 30000))

    t = threading.Thread(target=blocker)
    t.start()
    started.wait(5)
    os.write(wfd, b"x")  # Python code in the main thread ends the wait
    t.join(60)
    os.close(rfd)
    os.close(wfd)
    assert result == [1], "poll() timed out: the main thread could not run while it blocked"
