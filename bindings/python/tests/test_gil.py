"""A thread waiting on rverbs does not stall the interpreter.

cffi releases the GIL around every call into C, in ABI mode as in API mode;
CQ.wait() also yields the GIL between polls. So the main thread keeps most of
its speed while another thread polls an idle CQ.
"""
import threading
import time

from rverbs import ffi


def spin_rate(seconds):
    n = 0
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        n += 1
    return n / seconds


def test_poller_thread_does_not_stall_the_interpreter(context):
    import rverbs
    cq = rverbs.CQ(context)
    alone = spin_rate(0.3)
    done = threading.Event()
    result = []

    def poller():
        result.append(cq.wait(1, timeout=1.0))  # nothing arrives: polls for 1 s
        done.set()

    t = threading.Thread(target=poller)
    t.start()
    time.sleep(0.05)
    shared = spin_rate(0.5)
    t.join(5)
    assert done.is_set() and result == [[]]
    # A stalled interpreter would get a few percent; sharing fairly gives ~50%.
    assert shared > 0.2 * alone, (shared, alone)


def test_blocking_abi_call_releases_the_gil():
    """A call blocked in C through cffi's ABI mode (here libc's poll(), the
    same mechanism as every rverbs call) lets other threads run."""
    libc_ffi = type(ffi)()
    libc_ffi.cdef("int poll(void *fds, unsigned long nfds, int timeout);")
    libc = libc_ffi.dlopen(None)
    t = threading.Thread(target=libc.poll, args=(libc_ffi.NULL, 0, 600))
    alone = spin_rate(0.2)
    t.start()
    shared = spin_rate(0.4)
    t.join()
    assert shared > 0.5 * alone, (shared, alone)
