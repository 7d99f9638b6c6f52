"""Fixtures of the Python binding's tests.

Two runs (bindings/python/meson.build):
- RVERBS_LIBRARY=librverbs.so: the generated-coverage checks, and the
  lifecycle and traffic tests over the software device soft0 (skipped, with
  the reason, while soft0 is missing or cannot carry traffic);
- RVERBS_MOCK=1, RVERBS_LIBRARY=librverbs-pymock.so: the same lifecycle tests on
  the mock driver of tests/mock-driver.c, which also checks that the binding
  never destroys anything twice or out of order.
"""
import errno
import gc
import os
import threading

import pytest

import rverbs
from rverbs import ffi

MOCK = os.environ.get("RVERBS_MOCK") == "1"

if MOCK:
    ffi.cdef("""
        int rvmock_device_new(const char *name, rv_device **ret_dev);
        void rvmock_reset(void);
        unsigned rvmock_live_total(void);
        unsigned rvmock_live_resources(void);
        unsigned rvmock_violations(void);
        void rvmock_set_completions(int n, uint32_t status);
        unsigned rvmock_n_post_send(void);
    """)
    mocklib = ffi.dlopen(os.environ["RVERBS_LIBRARY"])
else:
    mocklib = None

# errnos meaning "this device cannot do that yet", not "the binding is wrong".
NOT_READY = {errno.ENODEV, errno.ENOSYS, errno.EOPNOTSUPP}


def open_device():
    """A Device for the lifecycle tests: the mock, or soft0 (skip without it)."""
    if MOCK:
        out = ffi.new("rv_device **")
        rc = mocklib.rvmock_device_new(b"mock0", out)
        assert rc == 0
        return rverbs.Device(_ptr=out[0])
    try:
        return rverbs.Device("soft0")
    except rverbs.RVerbsError as e:
        if e.errno in NOT_READY:
            pytest.skip("no soft0 device: %s" % e)
        raise


@pytest.fixture
def device():
    if MOCK:
        gc.collect()
        if mocklib.rvmock_live_total() == 0:
            mocklib.rvmock_reset()
    dev = open_device()
    yield dev
    del dev
    gc.collect()
    if MOCK:
        assert mocklib.rvmock_violations() == 0, "the mock driver saw a contract violation"
        # pytest still holds the device until its teardown ends.
        assert mocklib.rvmock_live_resources() == 0, \
            "resources left after every object was collected"


@pytest.fixture
def context(device):
    try:
        ctx = rverbs.Context(device)
    except rverbs.RVerbsError as e:
        if e.errno in NOT_READY:
            pytest.skip("cannot open a context on %s: %s" % (device.name, e))
        raise
    yield ctx
    ctx.close()


def _soft_context():
    try:
        return rverbs.Context("soft0")
    except rverbs.RVerbsError as e:
        if e.errno in NOT_READY:
            pytest.skip("soft0 cannot open a context yet: %s" % e)
        raise


class Side:
    """One end of a connection: context, PD, CQ, QP and a 64 KiB MR."""

    def __init__(self, ctx, size=65536):
        self.ctx = ctx
        self.pd = rverbs.PD(ctx)
        self.cq = rverbs.CQ(ctx, cqe=256, batch=16)
        self.qp = rverbs.QP(self.pd, self.cq, max_send_wr=64, max_recv_wr=64)
        self.mr = rverbs.MR(self.pd, size, rverbs.RV_ACCESS_ALL_REMOTE)

    def close(self):
        self.ctx.close()


@pytest.fixture
def rc_pair():
    """Two RC QPs connected over soft0, in two contexts of this process."""
    if MOCK:
        pytest.skip("traffic needs a real device (the mock only cans completions)")
    a, b = Side(_soft_context()), Side(_soft_context())
    ea, eb = a.qp.endpoint(), b.qp.endpoint()
    errors = []

    def connect(side, peer):
        try:
            side.qp.connect(peer)
        except rverbs.RVerbsError as e:
            errors.append(e)

    # Both at once: a connect may wait for its peer; each runs without the GIL.
    threads = [threading.Thread(target=connect, args=(a, eb)),
               threading.Thread(target=connect, args=(b, ea))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    if errors:
        if all(e.errno in NOT_READY for e in errors):
            pytest.skip("soft0 cannot connect QPs yet: %s" % errors[0])
        raise errors[0]
    yield a, b
    a.close()
    b.close()
