"""Logging hook, versions, constants."""
import rverbs
import pytest


def test_log_handler_receives_messages(device):
    got = []
    rverbs.set_log_handler(lambda level, msg: got.append((level, msg)))
    try:
        rverbs.set_log_level(rverbs.RV_LOG_DEBUG)
        with rverbs.Context(device) as ctx:
            rverbs.PD(ctx).close()
    finally:
        rverbs.set_log_level(rverbs.RV_LOG_WARN)
        rverbs.set_log_handler(None)
    assert all(isinstance(m, str) and 0 <= lvl <= 3 for lvl, m in got)


def test_versions_and_constants():
    assert rverbs.library_version_number() == rverbs.RVERBS_VERSION_MAJOR * 10000 + \
        rverbs.RVERBS_VERSION_MINOR * 100 + rverbs.RVERBS_VERSION_PATCH
    assert rverbs.QPT_RC == rverbs.RV_QPT_RC == 2
    assert rverbs.ECLOSED == rverbs.RV_ECLOSED == 77
    assert rverbs.wc_status_str(rverbs.RV_WC_SUCCESS)


def test_context_soft_flags():
    """soft_flags reaches rv_context_attr: known bits open a context, an unknown one is refused."""
    from conftest import MOCK
    if MOCK:
        pytest.skip("soft_flags concern the software device")
    ctx = rverbs.Context("soft0", soft_flags=rverbs.RV_SOFT_CRC_OPTIONAL | rverbs.RV_SOFT_NO_EXT)
    ctx.close()
    with pytest.raises(rverbs.RVerbsError) as e:
        rverbs.Context("soft0", soft_flags=1 << 9)
    assert "soft_flags" in str(e.value)


def test_context_auth_secret():
    """auth_secret reaches rv_context_attr: a secret opens a soft0 context, an empty one is refused."""
    from conftest import MOCK
    if MOCK:
        pytest.skip("authentication concerns the software device")
    ctx = rverbs.Context("soft0", auth_secret=b"0123456789abcdef0123456789abcdef")
    ctx.close()
    with pytest.raises(rverbs.RVerbsError) as e:
        rverbs.Context("soft0", auth_secret=b"")
    assert "auth_secret" in str(e.value)
