"""Registered-memory helpers: the buffer pool (rverbs/pool.h), the
registration cache (rverbs/mr_cache.h) and the placement of allocated MRs.

Each part is defined only when the loaded declarations have it (they are
generated from the headers the package was built with), so the package works
with any library version it was generated for. Same ownership rules as the
other handles: one C reference per Python object, dropped once.
"""
from . import _cdef
from ._lowlevel import ffi, lib, check, error
from ._objects import _Handle, _closed_error, MR, _struct_dict, _default_access

_HAVE = set(_cdef.FUNCTIONS)

__all__ = []


def _mem_placement(attr, page, numa_node, strict, prefix):
    """Fill the page / numa_node / flags fields shared by the two attr structs."""
    if page is not None:
        attr.mask |= getattr(lib, prefix + "PAGE")
        attr.page = page
    if numa_node is not None:
        attr.mask |= getattr(lib, prefix + "NUMA_NODE")
        attr.numa_node = numa_node
    if strict:
        attr.mask |= getattr(lib, prefix + "FLAGS")
        attr.flags = lib.RV_MEM_STRICT


def _mr_from_handle(ptr, pd, owner=None):
    """An MR object for a new C reference (from rv_mr_alloc or rv_mr_cache_get)."""
    mr = MR.__new__(MR)
    _Handle.__init__(mr)
    mr._owner = owner  # caller memory the MR covers, kept alive with it
    mr.pd = pd
    mr._adopt(ptr, pd)
    mr.addr = int(ffi.cast("uintptr_t", lib.rv_mr_addr(ptr)))
    mr.length = lib.rv_mr_length(ptr)
    mr._view = None
    return mr


if {"rv_mr_page_size", "rv_mr_numa_node"} <= _HAVE:
    def _page_size(self):
        """The page size backing the region, as obtained (rv_mr_page_size)."""
        return self._value(lib.rv_mr_page_size, "rv_mr_page_size")

    def _numa_node(self):
        """The NUMA node of the region's first page, -1 when unknown (rv_mr_numa_node)."""
        return check(lib.rv_mr_numa_node(self._ptr("rv_mr_numa_node")), "rv_mr_numa_node")

    MR.page_size = property(_page_size)
    MR.numa_node = property(_numa_node)


if "rv_mr_alloc_attr" in _cdef.STRUCTS:
    def alloc_mr(pd, length, access=None, page=None, numa_node=None, strict=False):
        """rv_mr_alloc() with a placement: page (RV_MEM_PAGE_*), numa_node (a node,
        RV_MEM_NODE_DEVICE or RV_MEM_NODE_ANY), strict (RV_MEM_STRICT: fail
        instead of falling back). Returns an MR like MR(pd, length, access)."""
        attr = ffi.new("rv_mr_alloc_attr *")
        _mem_placement(attr, page, numa_node, strict, "RV_MR_ALLOC_ATTR_")
        out = ffi.new("rv_mr **")
        check(lib.rv_mr_alloc(pd._ptr("rv_mr_alloc"), length,
                              _default_access() if access is None else access, attr, out),
              "rv_mr_alloc")
        return _mr_from_handle(out[0], pd)

    __all__.append("alloc_mr")


if {"rv_pool_new", "rv_pool_get", "rv_pool_put"} <= _HAVE:
    class PoolBuffer:
        """A buffer from a Pool: addr, length, lkey, rkey, ``buf`` (a writable
        memoryview, no copy) and sge(). Return it with put() (or use it as a
        context manager); a buffer is never returned twice."""

        __slots__ = ("pool", "_c", "addr", "length", "lkey", "rkey", "__weakref__")

        def __init__(self, pool, c):
            self.pool = pool
            self._c = c
            self.addr, self.length, self.lkey, self.rkey = c.addr, c.length, c.lkey, c.rkey

        @property
        def buf(self):
            if self._c is None:
                raise ValueError("the buffer was put back")
            h = self.pool._ptr("PoolBuffer.buf")
            # The view holds a reference on the pool: buffers stay mapped until
            # the pool's last unref, even after close().
            ref = lib.rv_pool_ref(h)
            base = ffi.gc(ffi.cast("char *", self.addr), lambda _p, ref=ref: lib.rv_pool_unref(ref))
            return memoryview(ffi.buffer(base, self.length))

        def sge(self, offset=0, length=None):
            if length is None:
                length = self.length - offset
            if offset < 0 or length < 0 or offset + length > self.length:
                raise ValueError("sge outside the buffer")
            return ffi.new("rv_sge *", (self.addr + offset, length, self.lkey))

        def put(self):
            c, self._c = self._c, None
            if c is not None:
                self.pool._put(c)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.put()

        def __repr__(self):
            return "<rverbs.PoolBuffer addr=0x%x length=%d>" % (self.addr, self.length)

    class Pool(_Handle):
        """A registered-memory pool on a PD (rv_pool): size classes of buffers
        carved from registered chunks.

        Pool(pd, classes=None (list of sizes), max_bytes=None, chunk_bytes=None,
        access=None, page=None, numa_node=None, strict=False, thread_cache=None,
        prealloc_chunks=None). get(length) returns a PoolBuffer.
        """

        _kind = "pool"
        _prefix = "pool"

        def __init__(self, pd, classes=None, max_bytes=None, chunk_bytes=None, access=None,
                     page=None, numa_node=None, strict=False, thread_cache=None,
                     prealloc_chunks=None):
            super().__init__()
            a = ffi.new("rv_pool_attr *")
            if classes is not None:
                a.mask |= lib.RV_POOL_ATTR_CLASSES
                a.n_classes = len(classes)
                for i, size in enumerate(classes):
                    a.class_size[i] = size
            for key, value, bit in (("max_bytes", max_bytes, "MAX_BYTES"),
                                    ("chunk_bytes", chunk_bytes, "CHUNK_BYTES"),
                                    ("access", access, "ACCESS"),
                                    ("thread_cache", thread_cache, "THREAD_CACHE"),
                                    ("prealloc_chunks", prealloc_chunks, "PREALLOC")):
                if value is not None:
                    a.mask |= getattr(lib, "RV_POOL_ATTR_" + bit)
                    setattr(a, key, value)
            _mem_placement(a, page, numa_node, strict, "RV_POOL_ATTR_")
            out = ffi.new("rv_pool **")
            check(lib.rv_pool_new(pd._ptr("rv_pool_new"), a, out), "rv_pool_new")
            self.pd = pd
            self._adopt(out[0], pd)
            self._out = ffi.new("rv_pool_buf **")

        def get(self, length):
            h = self._h
            if h is None:
                raise _closed_error(self, "rv_pool_get")
            rc = lib.rv_pool_get(h, length, self._out)
            if rc < 0:
                raise error(rc, "rv_pool_get")
            return PoolBuffer(self, self._out[0])

        def _put(self, c):
            h = self._h
            if h is None:
                return  # our reference is gone; the C pool dropped the buffer with it
            check(lib.rv_pool_put(h, c), "rv_pool_put")

        put = staticmethod(lambda buf: buf.put())

        def stats(self):
            s = ffi.new("rv_pool_stats *", {"mask": lib.RV_POOL_STATS_ALL})
            check(lib.rv_pool_stats_get(self._ptr("rv_pool_stats_get"), s), "rv_pool_stats_get")
            return _struct_dict(s)

        def same_pd(self):
            """True when the C pool's PD is this Pool's ``pd`` (rv_pool_pd)."""
            return lib.rv_pool_pd(self._ptr("rv_pool_pd")) == self.pd.handle

    __all__ += ["Pool", "PoolBuffer"]


if {"rv_mr_cache_new", "rv_mr_cache_get", "rv_mr_cache_invalidate"} <= _HAVE:
    class MRCache:
        """A bounded registration cache for caller memory (rv_mr_cache).

        MRCache(pd, max_entries=None, max_bytes=None). get(buffer, access)
        returns an MR (its own reference) covering the buffer, reusing a cached
        registration when one covers it; invalidate(buffer) before the memory is
        freed or reused for something else. close() drops this object's
        reference (the C cache has no close of its own; closing the PD closes
        its cached MRs).
        """

        def __init__(self, pd, max_entries=None, max_bytes=None):
            a = ffi.new("rv_mr_cache_attr *")
            if max_entries is not None:
                a.mask |= lib.RV_MR_CACHE_ATTR_MAX_ENTRIES
                a.max_entries = max_entries
            if max_bytes is not None:
                a.mask |= lib.RV_MR_CACHE_ATTR_MAX_BYTES
                a.max_bytes = max_bytes
            out = ffi.new("rv_mr_cache **")
            self._h = None
            check(lib.rv_mr_cache_new(pd._ptr("rv_mr_cache_new"), a, out), "rv_mr_cache_new")
            self._h = out[0]
            self.pd = pd

        def _ptr(self, func):
            h = self._h
            if h is None:
                raise _closed_error(self, func)
            return h

        _kind = "MR cache"
        _closed_why = "closed by close()"

        @property
        def closed(self):
            return self._h is None

        def get(self, buffer, access=None, length=None):
            """An MR covering the writable buffer (or its first ``length`` bytes)."""
            if access is None:
                access = lib.RV_ACCESS_LOCAL_WRITE
            owner = ffi.from_buffer("char[]", buffer, require_writable=True)
            n = len(owner) if length is None else length
            out = ffi.new("rv_mr **")
            check(lib.rv_mr_cache_get(self._ptr("rv_mr_cache_get"), owner, n, access, out),
                  "rv_mr_cache_get")
            return _mr_from_handle(out[0], self.pd, owner)

        def invalidate(self, buffer, length=None):
            """Forget cached registrations overlapping the buffer; returns how many."""
            owner = ffi.from_buffer("char[]", buffer)
            n = len(owner) if length is None else length
            return check(lib.rv_mr_cache_invalidate(self._ptr("rv_mr_cache_invalidate"),
                                                    owner, n), "rv_mr_cache_invalidate")

        def stats(self):
            s = ffi.new("rv_mr_cache_stats *", {"mask": lib.RV_MR_CACHE_STATS_ALL})
            check(lib.rv_mr_cache_stats_get(self._ptr("rv_mr_cache_stats_get"), s),
                  "rv_mr_cache_stats_get")
            return _struct_dict(s)

        def close(self):
            h, self._h = self._h, None
            if h is not None:
                lib.rv_mr_cache_unref(h)

        def __del__(self):
            h = getattr(self, "_h", None)
            if h is not None:
                self._h = None
                try:
                    lib.rv_mr_cache_unref(h)
                except Exception:
                    pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.close()

    __all__.append("MRCache")
