"""Thread and parent domains (TD, PD(parent=, td=)), ECE and rate limits:
a parent domain carries a QP and MRs, closing its TD closes it and them,
and soft0 refuses ECE and rate limits with EOPNOTSUPP."""
import errno

import pytest

import rverbs

from conftest import MOCK


def test_parent_domain_with_td_and_close_cascade(context):
    pd = rverbs.PD(context)
    td = rverbs.TD(context)
    pdom = rverbs.PD(context, parent=pd, td=td)
    assert pdom.is_parent_domain and not pd.is_parent_domain
    cq = rverbs.CQ(context, pd=pdom)
    qp = rverbs.QP(pdom, cq)
    with pytest.raises(rverbs.RVerbsError) as e:
        rverbs.CQ(context, pd=pd)        # a CQ takes a parent domain only
    assert e.value.errno == errno.EINVAL
    mr = rverbs.MR(pdom, 4096, rverbs.ACCESS_LOCAL_WRITE)
    with pytest.raises(rverbs.RVerbsError) as e:
        rverbs.PD(context, parent=pdom)  # a parent domain's parent must be a PD
    assert e.value.errno == errno.EINVAL
    with pytest.raises(rverbs.RVerbsError) as e:
        rverbs.PD(context, td=td)        # a TD needs a parent
    assert e.value.errno == errno.EINVAL
    td.close()
    assert pdom.closed and cq.closed and qp.closed and mr.closed and not pd.closed
    with pytest.raises(rverbs.RVerbsClosedError):
        qp.state()
    pd.close()


def test_ece_and_rate_limit_refused_on_soft0(context):
    if MOCK:
        pytest.skip("the refusals are soft0's")
    pd = rverbs.PD(context)
    qp = rverbs.QP(pd, rverbs.CQ(context))
    for call in (qp.query_ece, lambda: qp.set_ece(0, 0), lambda: qp.set_rate_limit(1000),
                 lambda: qp.set_rate_limit(1000, max_burst=4096, packet_size=1024)):
        with pytest.raises(rverbs.RVerbsError) as e:
            call()
        assert e.value.errno == errno.EOPNOTSUPP
