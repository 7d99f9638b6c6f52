"""The buffer pool, the registration cache and MR placement from Python
(present when the library's headers have them)."""
import errno
import gc

import pytest

import rverbs
from rverbs import ffi

needs_pool = pytest.mark.skipif(not hasattr(rverbs, "Pool"), reason="no rverbs/pool.h")
needs_cache = pytest.mark.skipif(not hasattr(rverbs, "MRCache"), reason="no rverbs/mr_cache.h")
needs_alloc = pytest.mark.skipif(not hasattr(rverbs, "alloc_mr"), reason="no rv_mr_alloc_attr")


@needs_pool
def test_pool_get_put_and_views(context):
    pd = rverbs.PD(context)
    with rverbs.Pool(pd, classes=[256, 4096], max_bytes=1 << 22, chunk_bytes=1 << 16) as pool:
        with pool.get(100) as b:
            assert b.length == 256
            view = b.buf
            view[0:4] = b"pool"
            assert bytes(ffi.buffer(ffi.cast("char *", b.addr), 4)) == b"pool"
            assert b.sge(0, 4)[0].lkey == b.lkey
        big = pool.get(4000)
        assert big.length == 4096
        stats = pool.stats()
        assert stats["gets"] >= 2 and stats["buffers_in_use"] >= 1
        assert pool.same_pd()
        with pytest.raises(rverbs.RVerbsError):
            pool.get(1 << 20)  # above the largest class
    assert pool.closed
    with pytest.raises(rverbs.RVerbsClosedError):
        pool.get(10)
    big.put()  # after close: dropped, no error
    assert bytes(view[0:4]) == b"pool"  # the view keeps the memory mapped
    del view
    gc.collect()


@needs_pool
def test_pool_closes_with_its_pd(context):
    pd = rverbs.PD(context)
    pool = rverbs.Pool(pd)
    pd.close()
    assert pool.closed
    with pytest.raises(rverbs.RVerbsClosedError):
        pool.get(10)


@needs_cache
def test_mr_cache_hits_and_invalidation(context):
    pd = rverbs.PD(context)
    buf = bytearray(8192)
    with rverbs.MRCache(pd, max_entries=4) as cache:
        mr1 = cache.get(buf)
        mr2 = cache.get(buf)
        assert mr1.lkey == mr2.lkey
        assert mr1.addr <= int(ffi.cast("uintptr_t", ffi.from_buffer(buf)))
        st = cache.stats()
        assert st["hits"] >= 1 and st["misses"] >= 1
        assert cache.invalidate(buf) >= 1
        mr1.close()
        mr2.close()
    assert cache.closed
    with pytest.raises(rverbs.RVerbsClosedError):
        cache.get(buf)


@needs_alloc
def test_alloc_mr_with_placement(context):
    pd = rverbs.PD(context)
    mr = rverbs.alloc_mr(pd, 1 << 16, page=rverbs.RV_MEM_PAGE_NORMAL, numa_node=rverbs.RV_MEM_NODE_ANY)
    assert mr.length >= 1 << 16 and mr.page_size >= 4096
    assert mr.numa_node >= -1
    mr.buf[0:2] = b"ok"
    mr.close()


def test_mr_rereg_moves_pd_and_memory(context):
    pd, pd2 = context.pd(), context.pd()
    mr = rverbs.MR(pd, buffer=bytearray(4096), access=rverbs.RV_ACCESS_LOCAL_WRITE)
    try:
        mr.rereg(access=rverbs.RV_ACCESS_LOCAL_WRITE | rverbs.RV_ACCESS_REMOTE_READ, pd=pd2)
    except rverbs.RVerbsError as e:
        # The test-only mock device cannot re-register: a clear EOPNOTSUPP.
        assert e.errno == errno.EOPNOTSUPP and "re-register" in str(e)
        return
    assert mr.pd is pd2
    pd.close()
    assert not mr.closed and mr.lkey != 0
    buf = bytearray(128)
    mr.rereg(buffer=buf)
    assert mr.length == 128 and len(mr.buf) == 128
    mr.buf[0] = 7
    assert buf[0] == 7
    pd2.close()
    assert mr.closed
