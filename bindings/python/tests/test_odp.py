"""On-demand paging from Python: implicit MRs (MR(pd, implicit=True)) and
PD.advise_mr (rv_mr_advise). On the mock (no ODP) both are refused with
EOPNOTSUPP; on soft0 a peer's WRITE lands in a bytearray no MR names."""
import errno
import mmap
import pytest

import rverbs
from rverbs import ffi

from conftest import MOCK

ODP = rverbs.RV_ACCESS_ON_DEMAND | rverbs.RV_ACCESS_LOCAL_WRITE


def _addr(obj):
    return int(ffi.cast("uintptr_t", ffi.from_buffer(obj)))


def _wait_one(cq, what):
    wcs = cq.wait(1, timeout=10)
    assert wcs, "no completion for %s within 10 s" % what
    return wcs[0]


def test_implicit_mr_and_advice_arguments(context):
    pd = rverbs.PD(context)
    general = context.query_device()["odp_general_caps"]
    with pytest.raises(TypeError):
        rverbs.MR(pd, 4096, ODP, implicit=True)
    if not general & rverbs.RV_ODP_SUPPORT_IMPLICIT:
        assert MOCK  # soft0 reports implicit ODP
        with pytest.raises(rverbs.RVerbsError) as e:
            rverbs.MR(pd, access=ODP, implicit=True)
        assert e.value.errno == errno.EOPNOTSUPP
        with pytest.raises(rverbs.RVerbsError) as e:
            pd.advise_mr(rverbs.RV_ADVISE_MR_PREFETCH, [(0x1000, 8, 1)])
        assert e.value.errno == errno.EOPNOTSUPP
        return
    mr = rverbs.MR(pd, access=ODP, implicit=True)
    assert mr.addr == 0 and mr.length == int(ffi.cast("size_t", -1))
    with pytest.raises(TypeError):
        mr.buf
    with pytest.raises(rverbs.RVerbsError) as e:
        rverbs.MR(pd, access=rverbs.RV_ACCESS_LOCAL_WRITE, implicit=True)
    assert e.value.errno == errno.EINVAL
    m = mmap.mmap(-1, 4 * mmap.PAGESIZE)
    base = _addr(m)
    pd.advise_mr(rverbs.RV_ADVISE_MR_PREFETCH_WRITE, [mr.sge(base, 4 * mmap.PAGESIZE)],
                 flags=rverbs.RV_ADVISE_MR_FLAG_FLUSH)
    pd.advise_mr(rverbs.RV_ADVISE_MR_PREFETCH_NO_FAULT, [(base, 8, mr.lkey)])
    with pytest.raises(rverbs.RVerbsError) as e:
        pd.advise_mr(rverbs.RV_ADVISE_MR_PREFETCH, [])
    assert e.value.errno == errno.EINVAL
    with pytest.raises(rverbs.RVerbsError) as e:
        pd.advise_mr(rverbs.RV_ADVISE_MR_PREFETCH, [(base, 8, mr.lkey ^ 0x5a5a5a5a)])
    assert e.value.errno == errno.ENOENT
    mr.close()
    m.close()


def test_write_through_an_implicit_rkey_lands_in_unregistered_memory(rc_pair):
    a, b = rc_pair
    imr = rverbs.MR(b.pd, access=ODP | rverbs.RV_ACCESS_REMOTE_WRITE, implicit=True)
    target = bytearray(300)
    data = bytes(range(200))
    a.mr.buf[0:len(data)] = data
    a.qp.write(a.mr.sge(0, len(data)), _addr(target) + 50, imr.rkey, wr_id=21)
    wc = _wait_one(a.cq, "WRITE")
    assert wc.ok, wc.status_str
    assert bytes(target[50:250]) == data
    assert bytes(target[:50]) == bytes(50) and bytes(target[250:]) == bytes(50)
    imr.close()
