"""The Pythonic layer: one class per rverbs handle, modelled on pyverbs.

Lifetime rules (they mirror the C core, they never add to it):

- a Python object holds exactly one C reference, taken at creation, and drops
  it once: in close() or, failing that, when it is garbage collected. Objects
  may be collected in any order: the C children hold references on their C
  parents, so nothing is freed while something still uses it;
- close() calls rv_X_close() (the resource is destroyed now, after everything
  that depends on it, depth-first, in C), then drops the reference. The Python
  objects of those dependents are marked closed too; they keep their own
  reference until their own close() or collection, and any call on them
  raises RVerbsClosedError (errno EBADFD) with rv_error_last()'s reason;
- a failed close (a driver refused a destroy) raises and leaves the object
  open, as in C, so it can be retried.

Objects may be used from several threads; closing an object while another
thread uses it is a caller race, as in C.
"""
import collections
import errno
import struct
import threading
import time
import weakref

from ._lowlevel import ffi, lib, check, error, RVerbsClosedError, ECLOSED

_NULL = ffi.NULL
_CData = ffi.CData
_SGE_PTR = ffi.typeof("rv_sge *")

# The data path looks these up once (a cffi lib attribute is a dict lookup).
_rv_cq_poll = lib.rv_cq_poll
_rv_qp_post_send = lib.rv_qp_post_send
_rv_qp_post_recv = lib.rv_qp_post_recv
_rv_qp_write = lib.rv_qp_write
_rv_qp_read = lib.rv_qp_read
_rv_qp_send = lib.rv_qp_send
_rv_qp_recv = lib.rv_qp_recv


def _closed_error(obj, func):
    why = obj._closed_why or "closed"
    return RVerbsClosedError(ECLOSED, func, "%s is closed (%s)" % (obj._kind, why))


def _struct_dict(cdata):
    """A C struct (by value or pointer) as a dict of plain Python values."""
    out = {}
    for name, field in ffi.typeof(cdata).item.fields if ffi.typeof(cdata).kind == "pointer" \
            else ffi.typeof(cdata).fields:
        value = getattr(cdata, name)
        kind = field.type.kind
        if kind == "array":
            if field.type.item.cname == "char":
                value = ffi.string(value).decode("utf-8", "replace")
            else:
                value = bytes(ffi.buffer(value)) if field.type.item.cname == "uint8_t" \
                    else list(value)
        elif kind == "struct":
            value = _struct_dict(value)
        out[name] = value
    return out


class _Handle:
    """Base of every handle class: one C reference, close(), context manager."""

    _kind = "handle"          # words for messages
    _prefix = None            # "qp" -> rv_qp_close, rv_qp_unref

    def __init__(self):
        self._h = None
        self._closed_why = None
        self._children = weakref.WeakSet()
        self._parent = None

    def _adopt(self, ptr, parent=None):
        self._h = ptr
        cls = type(self)
        if "_close_fn" not in cls.__dict__:
            cls._close_fn = staticmethod(getattr(lib, "rv_%s_close" % cls._prefix))
            cls._unref_fn = staticmethod(getattr(lib, "rv_%s_unref" % cls._prefix))
        self._parent = parent
        if parent is not None:
            parent._children.add(self)

    @property
    def handle(self):
        """The C handle (rv_X *) for use with rverbs.lib; it stays owned by this object."""
        h = self._h
        if h is None:
            raise _closed_error(self, "%s.handle" % type(self).__name__)
        return h

    @property
    def closed(self):
        """True once this object or something it depends on was closed."""
        return self._h is None or self._closed_why is not None

    def _mark_closed(self, why):
        if self._closed_why is None:
            self._closed_why = why
        for child in list(self._children):
            child._mark_closed("closed because its %s was closed" % self._kind)

    def close(self):
        """Destroy the resource now, and first everything that depends on it.

        Idempotent. Raises RVerbsError (the object stays open) when a driver
        refuses a destroy.
        """
        h = self._h
        if h is None:
            return
        rc = self._close_fn(h)
        if rc < 0:
            raise error(rc, "rv_%s_close" % self._prefix)
        self._mark_closed("closed by close()")
        self._h = None
        self._unref_fn(h)

    def __del__(self):
        h = self._h
        if h is not None:
            self._h = None
            try:
                self._unref_fn(h)
            except Exception:  # interpreter shutdown: lib may be gone
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _ptr(self, func):
        h = self._h
        if h is None:
            raise _closed_error(self, func)
        return h

    def _value(self, fn, func):
        """fn(handle) for a C getter that answers 0 (or NULL) on a closed
        handle instead of an error code (rv_qp_num, rv_mr_lkey ...): raises
        RVerbsClosedError for an object closed by a cascade (the Python side
        knows) or one the C side reports closed, as every other call does."""
        h = self._ptr(func)
        if self._closed_why is not None:
            raise _closed_error(self, func)
        lib.rv_error_clear()
        value = fn(h)
        if not value:
            msg = ffi.string(lib.rv_error_last())
            if msg.startswith(func.encode() + b": "):
                raise error(-ECLOSED if b" is closed" in msg else -errno.EINVAL, func)
        return value

    def __repr__(self):
        state = "closed" if self.closed else "open"
        return "<rverbs.%s %s>" % (type(self).__name__, state)


# ---- devices and contexts ---------------------------------------------------

class Device(_Handle):
    """A device: ``soft0`` or a libibverbs device.

    Device() is the default device (RVERBS_DEVICE=name, else the first active
    libibverbs device, else soft0); Device("soft0") finds one by name.
    """

    _kind = "device"
    _prefix = "device"

    def __init__(self, name=None, _ptr=None):
        super().__init__()
        if _ptr is not None:
            self._adopt(_ptr)
            return
        out = ffi.new("rv_device **")
        if name is None:
            check(lib.rv_device_default(out), "rv_device_default")
        else:
            check(lib.rv_device_find(name.encode(), out), "rv_device_find")
        self._adopt(out[0])

    @staticmethod
    def list():
        """Every device, as a list of Device objects."""
        plist = ffi.new("rv_device ***")
        n = ffi.new("size_t *")
        check(lib.rv_device_list(plist, n), "rv_device_list")
        try:
            return [Device(_ptr=lib.rv_device_ref(plist[0][i])) for i in range(n[0])]
        finally:
            lib.rv_device_list_free(plist[0])

    @property
    def name(self):
        p = lib.rv_device_name(self._ptr("rv_device_name"))
        return ffi.string(p).decode() if p != _NULL else None

    @property
    def kind(self):
        """RV_DEVICE_SOFT or RV_DEVICE_VERBS."""
        return check(lib.rv_device_kind_of(self._ptr("rv_device_kind_of")), "rv_device_kind_of")

    def open(self, **kwargs):
        """A new Context on this device (see Context)."""
        return Context(self, **kwargs)

    def __repr__(self):
        name = self.name if self._h is not None else "?"
        return "<rverbs.Device %s%s>" % (name, " closed" if self.closed else "")


class Context(_Handle):
    """An open device context (pyverbs' Context).

    Context() opens the default device; Context("soft0") or Context(device)
    a given one. listen_addr: the software device's address (default 127.0.0.1).
    soft_flags: the software device's flags (RV_SOFT_CRC_OPTIONAL,
    RV_SOFT_NO_EXT, RV_SOFT_ROCE_PORT from rverbs.lib), default 0. auth_secret: bytes (1 to 4096)
    that every connection of the software device must prove both ways
    (shared-secret authentication); other devices raise (EOPNOTSUPP).
    """

    _kind = "context"
    _prefix = "context"

    def __init__(self, device=None, listen_addr=None, soft_flags=None, auth_secret=None):
        super().__init__()
        if not isinstance(device, Device):
            device = Device(device)
        attr = _NULL
        keep = None
        keep_secret = None
        if listen_addr is not None or soft_flags is not None or auth_secret is not None:
            fields = {"mask": 0}
            if listen_addr is not None:
                keep = ffi.new("char[]", listen_addr.encode())
                fields["mask"] |= lib.RV_CONTEXT_ATTR_LISTEN_ADDR
                fields["listen_addr"] = keep
            if soft_flags is not None:
                fields["mask"] |= lib.RV_CONTEXT_ATTR_SOFT_FLAGS
                fields["soft_flags"] = soft_flags
            if auth_secret is not None:
                if isinstance(auth_secret, str):
                    auth_secret = auth_secret.encode()
                keep_secret = ffi.new("char[]", bytes(auth_secret))
                fields["mask"] |= lib.RV_CONTEXT_ATTR_AUTH_SECRET
                fields["auth_secret"] = keep_secret
                fields["auth_secret_len"] = len(auth_secret)
            attr = ffi.new("rv_context_attr *", fields)
        out = ffi.new("rv_context **")
        check(lib.rv_context_new(device._ptr("rv_context_new"), attr, out), "rv_context_new")
        self.device = device
        self._adopt(out[0], device)

    def query_device(self):
        """Device capabilities as a dict (rv_device_attr's fields)."""
        attr = ffi.new("rv_device_attr *", {"mask": lib.RV_DEVICE_ATTR_ALL})
        check(lib.rv_context_query_device(self._ptr("rv_context_query_device"), attr),
              "rv_context_query_device")
        return _struct_dict(attr)

    def query_port(self, port_num=1):
        """Port attributes as a dict (rv_port_attr's fields)."""
        attr = ffi.new("rv_port_attr *", {"mask": lib.RV_PORT_ATTR_ALL})
        check(lib.rv_context_query_port(self._ptr("rv_context_query_port"), port_num, attr),
              "rv_context_query_port")
        return _struct_dict(attr)

    def query_gid(self, port_num=1, index=0):
        """One GID table entry as 16 bytes."""
        gid = ffi.new("uint8_t[16]")
        check(lib.rv_context_query_gid(self._ptr("rv_context_query_gid"), port_num, index, gid),
              "rv_context_query_gid")
        return bytes(ffi.buffer(gid))

    def query_gid_entry(self, port_num=1, index=0):
        """One GID table entry with its type as a dict (rv_gid_entry's fields;
        gid_type is an RV_GID_TYPE_* value)."""
        entry = ffi.new("rv_gid_entry *")
        check(lib.rv_context_query_gid_entry(self._ptr("rv_context_query_gid_entry"), port_num,
                                             index, entry), "rv_context_query_gid_entry")
        return _struct_dict(entry)

    def query_pkey(self, port_num=1, index=0):
        """One P_Key table entry, host byte order."""
        pkey = ffi.new("uint16_t *")
        check(lib.rv_context_query_pkey(self._ptr("rv_context_query_pkey"), port_num, index, pkey),
              "rv_context_query_pkey")
        return pkey[0]

    def dump(self):
        """The live ownership tree of the context, as text (rv_context_dump)."""
        out = ffi.new("char **")
        check(lib.rv_context_dump(self._ptr("rv_context_dump"), out), "rv_context_dump")
        try:
            return ffi.string(out[0]).decode("utf-8", "replace")
        finally:
            lib.rv_free(out[0])

    def pd(self):
        return PD(self)

    def cq(self, cqe=None, batch=16):
        return CQ(self, cqe=cqe, batch=batch)


class PD(_Handle):
    """A protection domain, or with parent= a parent domain of that PD
    (pyverbs' ParentDomain), bound to the TD td= when given. A parent domain
    is a PD for every call that takes one; closing its parent or its TD
    closes it."""

    _kind = "PD"
    _prefix = "pd"

    def __init__(self, context, parent=None, td=None):
        super().__init__()
        out = ffi.new("rv_pd **")
        attr = _NULL
        if parent is not None or td is not None:
            attr = ffi.new("rv_pd_attr *")
            if parent is not None:
                attr.mask |= lib.RV_PD_ATTR_PARENT
                attr.parent = parent._ptr("rv_pd_new")
            if td is not None:
                attr.mask |= lib.RV_PD_ATTR_TD
                attr.td = td._ptr("rv_pd_new")
        check(lib.rv_pd_new(context._ptr("rv_pd_new"), attr, out), "rv_pd_new")
        self.context = context
        self.parent = parent
        self.td = td
        self._adopt(out[0], context)
        # Closing the parent or the TD closes the parent domain too.
        for dep in (parent, td):
            if dep is not None:
                dep._children.add(self)

    @property
    def is_parent_domain(self):
        """True for a parent domain (rv_pd_parent is not NULL)."""
        return lib.rv_pd_parent(self._ptr("rv_pd_parent")) != _NULL

    def mr(self, length=None, access=None, buffer=None):
        return MR(self, length=length, access=access, buffer=buffer)

    def advise_mr(self, advice, sges, flags=0):
        """Advice on ranges of this PD's on-demand MRs (rv_mr_advise, as
        ibv_advise_mr): advice RV_ADVISE_MR_PREFETCH, _PREFETCH_WRITE or
        _PREFETCH_NO_FAULT, flags RV_ADVISE_MR_FLAG_FLUSH; sges a list of
        rv_sge (MR.sge(), rverbs.sge()) or (addr, length, lkey) tuples."""
        items = list(sges)
        arr = ffi.new("rv_sge[]", max(len(items), 1))
        for i, g in enumerate(items):
            if isinstance(g, tuple):
                arr[i] = g
            else:
                arr[i] = g[0]
        check(lib.rv_mr_advise(self._ptr("rv_mr_advise"), advice, flags, arr, len(items)), "rv_mr_advise")

    def qp(self, send_cq, **kwargs):
        return QP(self, send_cq, **kwargs)

    def ah(self, **attrs):
        return AH(self, **attrs)


# ---- address handles (UD) -----------------------------------------------------

_AH_FIELDS = ("dgid", "flow_label", "sgid_index", "hop_limit", "traffic_class", "is_global",
              "dlid", "sl", "src_path_bits", "static_rate", "port_num")


class AH(_Handle):
    """An address handle (pyverbs' AH): where a UD send goes.

    AH(pd, dgid=b"...16 bytes", dlid=..., sl=..., port_num=..., hop_limit=...,
    traffic_class=..., flow_label=..., sgid_index=..., is_global=...);
    is_global defaults to 1 when a dgid is given. AH.from_wc(pd, wc, grh) makes
    the handle that replies to a received UD message: grh is the first
    GRH_LEN (40) bytes of its receive buffer.
    """

    _kind = "AH"
    _prefix = "ah"

    def __init__(self, pd, **attrs):
        super().__init__()
        a = ffi.new("rv_ah_attr *")
        for key, value in attrs.items():
            if key not in _AH_FIELDS:
                raise TypeError("unknown address handle attribute %r" % key)
            if key == "dgid":
                gid = bytes(value)
                if len(gid) != 16:
                    raise ValueError("dgid must be 16 bytes, not %d" % len(gid))
                ffi.memmove(a.dgid, gid, 16)
            else:
                setattr(a, key, value)
        if "dgid" in attrs and "is_global" not in attrs:
            a.is_global = 1
        out = ffi.new("rv_ah **")
        check(lib.rv_ah_new(pd._ptr("rv_ah_new"), a, out), "rv_ah_new")
        self.pd = pd
        self._adopt(out[0], pd)

    @classmethod
    def from_wc(cls, pd, wc, grh=None, port_num=0):
        c = ffi.new("rv_wc *", dict(zip(_WC_FIELDS, wc)))
        g = _NULL
        if grh is not None:
            g = ffi.from_buffer(bytes(grh[:GRH_LEN]))
            if len(g) < GRH_LEN:
                raise ValueError("grh must hold %d bytes" % GRH_LEN)
        out = ffi.new("rv_ah **")
        check(lib.rv_ah_from_wc(pd._ptr("rv_ah_from_wc"), port_num, c, g, out), "rv_ah_from_wc")
        obj = cls.__new__(cls)
        _Handle.__init__(obj)
        obj.pd = pd
        obj._adopt(out[0], pd)
        return obj

    def query(self):
        """The address vector as a dict (dgid as bytes)."""
        a = ffi.new("rv_ah_attr *")
        check(lib.rv_ah_query(self._ptr("rv_ah_query"), a), "rv_ah_query")
        return _struct_dict(a)


# ---- memory -----------------------------------------------------------------

def _default_access():
    return lib.RV_ACCESS_LOCAL_WRITE | lib.RV_ACCESS_REMOTE_WRITE | lib.RV_ACCESS_REMOTE_READ


class MR(_Handle):
    """A registered memory region.

    MR(pd, length, access): rverbs allocates page-aligned zeroed memory.
    MR(pd, buffer=obj, access=...): registers the memory of a writable object
    supporting the buffer protocol (bytearray, mmap, numpy array ...), which the
    MR keeps alive. access defaults to LOCAL_WRITE | REMOTE_WRITE | REMOTE_READ.
    MR(pd, access=... | RV_ACCESS_ON_DEMAND, implicit=True): implicit ODP, the
    whole address space (addr 0, length SIZE_MAX, no buf); ``mr.sge(addr, n)``
    names any n bytes at address addr.

    ``mr.buf`` is the memory as a writable memoryview: no copy. A memoryview
    keeps the memory valid even after close() (the region is then just no
    longer registered), so a stale view never reads freed memory.
    """

    _kind = "MR"
    _prefix = "mr"
    _dmabuf = False  # rv_mr_reg_dmabuf: no buf (MRs made elsewhere, e.g. by _wrap, are not)
    _implicit = False  # implicit ODP: the whole address space, no buf

    def __init__(self, pd, length=None, access=None, buffer=None, dmabuf=None, offset=0, iova=0,
                 implicit=False):
        super().__init__()
        if access is None:
            access = _default_access()
        out = ffi.new("rv_mr **")
        self._owner = None
        self._dmabuf = dmabuf is not None
        self._implicit = bool(implicit)
        if implicit:
            if length is not None or buffer is not None or dmabuf is not None:
                raise TypeError("an implicit MR is the whole address space: no length, buffer or dma-buf")
            check(lib.rv_mr_reg(pd._ptr("rv_mr_reg"), ffi.NULL, lib.RV_MR_IMPLICIT_LENGTH, access, out),
                  "rv_mr_reg")
        elif dmabuf is not None:
            # MR(pd, length, dmabuf=fd, offset=, iova=): a dma-buf (rv_mr_reg_dmabuf);
            # the fd may be closed afterwards. Its memory is the exporter's: no buf.
            if length is None or buffer is not None:
                raise TypeError("a dma-buf MR needs a length and no buffer")
            check(lib.rv_mr_reg_dmabuf(pd._ptr("rv_mr_reg_dmabuf"), offset, length, iova, dmabuf, access, out),
                  "rv_mr_reg_dmabuf")
        elif buffer is None:
            if length is None:
                raise TypeError("MR needs a length or a buffer")
            check(lib.rv_mr_alloc(pd._ptr("rv_mr_alloc"), length, access, ffi.NULL, out), "rv_mr_alloc")
        else:
            try:
                self._owner = ffi.from_buffer("char[]", buffer, require_writable=True)
            except BufferError as e:
                raise TypeError("MR buffer must be writable memory: %s" % e) from None
            n = len(self._owner) if length is None else length
            check(lib.rv_mr_reg(pd._ptr("rv_mr_reg"), self._owner, n, access, out), "rv_mr_reg")
        self.pd = pd
        self._adopt(out[0], pd)
        h = out[0]
        self.addr = int(ffi.cast("uintptr_t", lib.rv_mr_addr(h)))
        self.length = lib.rv_mr_length(h)
        self._view = None

    @property
    def lkey(self):
        return self._value(lib.rv_mr_lkey, "rv_mr_lkey")

    @property
    def rkey(self):
        return self._value(lib.rv_mr_rkey, "rv_mr_rkey")

    @property
    def buf(self):
        """The region's memory as a writable memoryview (no copy)."""
        if self._dmabuf:
            raise TypeError("a dma-buf MR's memory is the exporter's: map the dma-buf to read it")
        if self._implicit:
            raise TypeError("an implicit MR is the whole address space: it has no buffer of its own")
        view = self._view
        if view is None:
            h = self._ptr("MR.buf")
            if self._owner is not None:
                raw = ffi.buffer(self._owner, self.length)
            else:
                # The view holds its own C reference, dropped when the last
                # view goes: rv_mr_alloc memory lives until the last unref.
                ref = lib.rv_mr_ref(h)
                base = ffi.gc(ffi.cast("char *", lib.rv_mr_addr(h)),
                              lambda _p, ref=ref: lib.rv_mr_unref(ref))
                raw = ffi.buffer(base, self.length)
            view = self._view = memoryview(raw)
        return view

    def rereg(self, access=None, pd=None, buffer=None):
        """Change the region in place (rv_mr_rereg): new access flags, a new PD
        (the MR then depends on it, not the old one) and/or new memory (a
        writable buffer, kept alive; not for MRs rverbs allocated). The keys
        change: read lkey/rkey again."""
        flags = 0
        owner = None
        addr, length = ffi.NULL, 0
        if access is not None:
            flags |= lib.RV_REREG_ACCESS
        if pd is not None:
            flags |= lib.RV_REREG_PD
        if buffer is not None:
            flags |= lib.RV_REREG_TRANS
            try:
                owner = ffi.from_buffer("char[]", buffer, require_writable=True)
            except BufferError as e:
                raise TypeError("MR buffer must be writable memory: %s" % e) from None
            addr, length = owner, len(owner)
        check(lib.rv_mr_rereg(self._ptr("rv_mr_rereg"), flags,
                              pd._ptr("rv_mr_rereg") if pd is not None else ffi.NULL,
                              addr, length, access or 0), "rv_mr_rereg")
        if pd is not None and pd is not self.pd:
            self.pd._children.discard(self)
            pd._children.add(self)
            self.pd = self._parent = pd
        if owner is not None:
            self._owner = owner
            self.addr = int(ffi.cast("uintptr_t", owner))
            self.length = length
            self._view = None

    def sge(self, offset=0, length=None):
        """An rv_sge (a cffi struct, reusable) for bytes [offset, offset+length).
        Raises RVerbsClosedError once the MR is closed (its lkey is gone)."""
        lkey = self.lkey
        if length is None:
            length = self.length - offset
        if offset < 0 or length < 0 or offset + length > self.length:
            raise ValueError("sge [%d, %d) outside the MR's %d bytes"
                             % (offset, offset + length, self.length))
        return ffi.new("rv_sge *", (self.addr + offset, length, lkey))

    def close(self):
        super().close()
        self._view = None


def sge(addr, length, lkey):
    """An rv_sge from raw values (like pyverbs' SGE)."""
    return ffi.new("rv_sge *", (addr, length, lkey))


# ---- completions ------------------------------------------------------------

def wc_status_str(status):
    return ffi.string(lib.rv_wc_status_str(status)).decode()


def wc_status_hint(status):
    return ffi.string(lib.rv_wc_status_hint(status)).decode()


_FMT = {"uint8_t": "B", "uint16_t": "H", "uint32_t": "I", "uint64_t": "Q",
        "int8_t": "b", "int16_t": "h", "int32_t": "i", "int64_t": "q"}


def _unpacker(ctype):
    """A struct.Struct reading a C struct of integer fields, from cffi's layout
    (which test_generated.py checks against the C compiler), or None."""
    fmt, pos = "=", 0
    for _name, field in ffi.typeof(ctype).fields:
        code = _FMT.get(field.type.cname)
        if code is None or field.offset < pos:
            return None
        fmt += "x" * (field.offset - pos) + code
        pos = field.offset + ffi.sizeof(field.type)
    fmt += "x" * (ffi.sizeof(ctype) - pos)
    st = struct.Struct(fmt)
    return st if st.size == ffi.sizeof(ctype) else None


_WC_FIELDS = tuple(name for name, _ in ffi.typeof("rv_wc").fields)
GRH_LEN = 40  # RV_UD_GRH_LEN: the GRH area at the start of every UD receive buffer
_WC_UNPACK = _unpacker("rv_wc")
_WC_SIZE = ffi.sizeof("rv_wc")


class WC(collections.namedtuple("WC", _WC_FIELDS)):
    """A work completion, copied out of the CQ (see CQ.poll): a named tuple of
    the fields of rv_wc (wr_id, status, opcode, byte_len, imm_data ...)."""

    __slots__ = ()

    @classmethod
    def _from_c(cls, c):
        return cls._make(getattr(c, f) for f in _WC_FIELDS)

    @property
    def ok(self):
        return self.status == 0

    @property
    def status_str(self):
        return wc_status_str(self.status)

    def __repr__(self):
        return "<rverbs.WC wr_id=%d %s opcode=%d byte_len=%d>" % (
            self.wr_id, self.status_str, self.opcode, self.byte_len)


class CQ(_Handle):
    """A completion queue.

    Completions are polled in batches into one cffi array of rv_wc that the CQ
    allocates once (``batch`` entries) and reuses: poll() copies them into WC
    objects; poll_raw() returns the array itself, for loops that want no
    Python object per completion.
    """

    _kind = "CQ"
    _prefix = "cq"

    def __init__(self, context, cqe=None, batch=16, channel=None, wc_flags=None, pd=None):
        super().__init__()
        attr = _NULL
        if cqe is not None or channel is not None or wc_flags is not None or pd is not None:
            attr = ffi.new("rv_cq_attr *")
            if pd is not None:  # a parent domain (PD(ctx, parent=...)); closing it closes the CQ
                attr.mask |= lib.RV_CQ_ATTR_PD
                attr.pd = pd._ptr("rv_cq_new")
            if wc_flags is not None:  # rv_cq_wc_flags: read them with poll_ex() (_extended.py)
                attr.mask |= lib.RV_CQ_ATTR_WC_FLAGS
                attr.wc_flags = wc_flags
            if cqe is not None:
                attr.mask |= lib.RV_CQ_ATTR_CQE
                attr.cqe = cqe
            if channel is not None:
                attr.mask |= lib.RV_CQ_ATTR_CHANNEL
                attr.channel = channel._ptr("rv_cq_new")
        out = ffi.new("rv_cq **")
        check(lib.rv_cq_new(context._ptr("rv_cq_new"), attr, out), "rv_cq_new")
        self.context = context
        self._adopt(out[0], context)
        if pd is not None:
            pd._children.add(self)
        self.channel = None
        if channel is not None:
            CQ._attach_channel(self, channel)  # rverbs/_channel.py
        self._batch = batch
        self._wc = ffi.new("rv_wc[]", batch)

    @property
    def size(self):
        return self._value(lib.rv_cq_size, "rv_cq_size")

    def poll_raw(self, max_entries=None):
        """(n, wcs): n completions in the reused cffi array wcs (valid until the
        next poll on this CQ)."""
        h = self._h
        if h is None:
            raise _closed_error(self, "rv_cq_poll")
        n = _rv_cq_poll(h, self._wc, max_entries or self._batch)
        if n < 0:
            raise error(n, "rv_cq_poll")
        return n, self._wc

    def poll(self, max_entries=None):
        """Up to max_entries (default: the batch size) completions, as WC objects."""
        if max_entries is not None and max_entries > self._batch:
            self._batch = max_entries
            self._wc = ffi.new("rv_wc[]", max_entries)
        n, wcs = self.poll_raw(max_entries)
        if n == 0:
            return []
        if _WC_UNPACK is not None:  # one C-level unpack per completion
            return list(map(WC._make, _WC_UNPACK.iter_unpack(ffi.buffer(wcs, n * _WC_SIZE))))
        return [WC._from_c(wcs[i]) for i in range(n)]

    def wait(self, count=1, timeout=None):
        """Poll until ``count`` completions arrived or ``timeout`` seconds passed;
        returns the list of WC (possibly shorter on timeout).

        This is the fallback for a library without rv_cq_wait: it busy-polls,
        yielding the GIL between polls, so other Python threads keep running.
        With rv_cq_wait (rverbs/_channel.py replaces this method) the wait
        happens in C without the GIL, blocking on the CQ's completion channel
        in the mode set_wait_mode() chose.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        got = []
        spins = 0
        while len(got) < count:
            batch = self.poll(min(self._batch, count - len(got)))
            if batch:
                got.extend(batch)
                spins = 0
                continue
            spins += 1
            if deadline is not None and time.monotonic() >= deadline:
                break
            time.sleep(0 if spins < 1000 else 0.0001)
        return got


# ---- endpoints --------------------------------------------------------------

class Endpoint:
    """What a peer needs to connect to a QP (rv_endpoint), with its portable
    byte encoding (pack/unpack) for any out-of-band channel."""

    def __init__(self, _c=None):
        self._c = _c if _c is not None else ffi.new("rv_endpoint *")

    def __getattr__(self, name):
        c = self.__dict__.get("_c")
        if c is None or name.startswith("_"):
            raise AttributeError(name)
        try:
            value = getattr(c, name)
        except AttributeError:
            raise AttributeError(name) from None
        if name == "gid":
            return bytes(ffi.buffer(value))
        if name == "user_data":
            return bytes(ffi.buffer(value, c.user_data_len))
        return value

    def __setattr__(self, name, value):
        if name.startswith("_"):
            object.__setattr__(self, name, value)
        elif name == "user_data":
            data = bytes(value)
            if len(data) > lib.RV_ENDPOINT_USER_DATA_MAX:
                raise ValueError("user_data is limited to %d bytes"
                                 % lib.RV_ENDPOINT_USER_DATA_MAX)
            ffi.memmove(self._c.user_data, data, len(data))
            self._c.user_data_len = len(data)
            self._c.mask |= lib.RV_ENDPOINT_USER_DATA
        else:
            setattr(self._c, name, value)

    def set_mr(self, mr, offset=0, length=None, rkey=None):
        """Advertise (part of) an MR to the peer (RV_ENDPOINT_MR)."""
        c = self._c
        c.mr_addr = mr.addr + offset
        c.mr_length = (mr.length - offset) if length is None else length
        c.mr_rkey = mr.rkey if rkey is None else rkey
        c.mask |= lib.RV_ENDPOINT_MR

    def pack(self):
        buf = ffi.new("uint8_t[]", lib.RV_ENDPOINT_PACKED_MAX)
        n = ffi.new("size_t *")
        check(lib.rv_endpoint_pack(self._c, buf, len(buf), n), "rv_endpoint_pack")
        return bytes(ffi.buffer(buf, n[0]))

    @classmethod
    def unpack(cls, data):
        c = ffi.new("rv_endpoint *")
        check(lib.rv_endpoint_unpack(ffi.from_buffer(data), len(data), c), "rv_endpoint_unpack")
        return cls(c)

    def to_dict(self):
        return _struct_dict(self._c)

    def __repr__(self):
        return "<rverbs.Endpoint qpn=%d lid=%d>" % (self._c.qpn, self._c.lid)


# ---- queue pairs ------------------------------------------------------------

class SendWR:
    """A send work request (pyverbs' SendWR), built into an rv_send_wr array at
    post time. sg_list: a sequence of rv_sge (MR.sge(), rverbs.sge())."""

    __slots__ = ("wr_id", "opcode", "sg_list", "send_flags", "imm_data", "remote_addr",
                 "rkey", "compare_add", "swap", "ah", "remote_qpn", "remote_qkey", "remote_srqn")

    def __init__(self, wr_id=0, opcode=None, sg_list=(), send_flags=0, imm_data=0,
                 remote_addr=0, rkey=0, compare_add=0, swap=0, ah=None, remote_qpn=0,
                 remote_qkey=0, remote_srqn=0):
        self.wr_id = wr_id
        self.opcode = lib.RV_WR_SEND if opcode is None else opcode
        self.sg_list = sg_list
        self.send_flags = send_flags
        self.imm_data = imm_data
        self.remote_addr = remote_addr
        self.rkey = rkey
        self.compare_add = compare_add
        self.swap = swap
        self.ah = ah                    # UD: an AH
        self.remote_qpn = remote_qpn    # UD: the destination QP number
        self.remote_qkey = remote_qkey  # UD: the destination Q_Key
        self.remote_srqn = remote_srqn  # XRC initiator: the remote XRC SRQ (SRQ.num there)


class RecvWR:
    """A receive work request (pyverbs' RecvWR)."""

    __slots__ = ("wr_id", "sg_list")

    def __init__(self, wr_id=0, sg_list=()):
        self.wr_id = wr_id
        self.sg_list = sg_list


def _sge_array(sg_list, keep):
    n = len(sg_list)
    if n == 0:
        return _NULL, 0
    if n == 1 and ffi.typeof(sg_list[0]) is _SGE_PTR:
        return sg_list[0], 1  # one rv_sge * (MR.sge()): point at it, no copy
    arr = ffi.new("rv_sge[]", n)
    for i, s in enumerate(sg_list):
        arr[i] = s[0] if ffi.typeof(s) is _SGE_PTR else s
    keep.append(arr)
    return arr, n


_QP_ATTRS = {
    # keyword: mask bit name
    "qp_state": "RV_QP_STATE", "cur_qp_state": "RV_QP_CUR_STATE",
    "en_sqd_async_notify": "RV_QP_EN_SQD_ASYNC_NOTIFY",
    "qp_access_flags": "RV_QP_ACCESS_FLAGS", "pkey_index": "RV_QP_PKEY_INDEX",
    "port_num": "RV_QP_PORT", "qkey": "RV_QP_QKEY", "ah_attr": "RV_QP_AV",
    "path_mtu": "RV_QP_PATH_MTU", "timeout": "RV_QP_TIMEOUT", "retry_cnt": "RV_QP_RETRY_CNT",
    "rnr_retry": "RV_QP_RNR_RETRY", "rq_psn": "RV_QP_RQ_PSN",
    "max_rd_atomic": "RV_QP_MAX_QP_RD_ATOMIC", "min_rnr_timer": "RV_QP_MIN_RNR_TIMER",
    "sq_psn": "RV_QP_SQ_PSN", "max_dest_rd_atomic": "RV_QP_MAX_DEST_RD_ATOMIC",
    "cap": "RV_QP_CAP", "dest_qp_num": "RV_QP_DEST_QPN",
}


def _qp_attr(kwargs):
    if not kwargs:
        return _NULL
    attr = ffi.new("rv_qp_attr *")
    for key, value in kwargs.items():
        if key not in _QP_ATTRS:
            raise TypeError("unknown QP attribute %r" % key)
        attr.mask |= getattr(lib, _QP_ATTRS[key])
        if isinstance(value, dict):
            for k, v in value.items():
                if k == "dgid":
                    ffi.memmove(attr.ah_attr.dgid, bytes(v), 16)
                else:
                    setattr(getattr(attr, key), k, v)
        else:
            setattr(attr, key, value)
    return attr


class QP(_Handle):
    """A queue pair (pyverbs' QP), created in RESET.

    QP(pd, send_cq, recv_cq=None, qp_type=RV_QPT_RC, max_send_wr=..., max_recv_wr=...,
    max_send_sge=..., max_recv_sge=..., max_inline_data=..., sq_sig_all=None, srq=None,
    xrcd=None)

    An XRC target (qp_type=RV_QPT_XRC_RECV) takes xrcd= and no CQ (send_cq=None).
    """

    _kind = "QP"
    _prefix = "qp"

    def __init__(self, pd, send_cq, recv_cq=None, qp_type=None, sq_sig_all=None, srq=None, xrcd=None,
                 **cap):
        super().__init__()
        attr = ffi.new("rv_qp_init_attr *")
        if srq is not None:  # rverbs/_srq.py: receives come from the SRQ
            attr.mask |= lib.RV_QP_INIT_ATTR_SRQ
            attr.srq = srq._ptr("rv_qp_new")
        if xrcd is not None:  # rverbs/_srq.py: an XRC target's domain
            attr.mask |= lib.RV_QP_INIT_ATTR_XRCD
            attr.xrcd = xrcd._ptr("rv_qp_new")
        if send_cq is not None:
            attr.mask |= lib.RV_QP_INIT_ATTR_SEND_CQ
            attr.send_cq = send_cq._ptr("rv_qp_new")
        if recv_cq is not None:
            attr.mask |= lib.RV_QP_INIT_ATTR_RECV_CQ
            attr.recv_cq = recv_cq._ptr("rv_qp_new")
        if qp_type is not None:
            attr.mask |= lib.RV_QP_INIT_ATTR_TYPE
            attr.qp_type = qp_type
        if sq_sig_all is not None:
            attr.mask |= lib.RV_QP_INIT_ATTR_SQ_SIG_ALL
            attr.sq_sig_all = int(bool(sq_sig_all))
        if cap:
            defaults = {"max_send_wr": 128, "max_recv_wr": 128, "max_send_sge": 1,
                        "max_recv_sge": 1, "max_inline_data": 0}
            for k in cap:
                if k not in defaults:
                    raise TypeError("unknown QP capability %r" % k)
            defaults.update(cap)
            attr.mask |= lib.RV_QP_INIT_ATTR_CAP
            for k, v in defaults.items():
                setattr(attr.cap, k, v)
        out = ffi.new("rv_qp **")
        check(lib.rv_qp_new(pd._ptr("rv_qp_new"), attr, out), "rv_qp_new")
        self.pd = pd
        self.send_cq = send_cq
        self.recv_cq = recv_cq if recv_cq is not None else send_cq
        self._adopt(out[0], pd)
        # A QP depends on its CQs (and an XRC target on its domain) too:
        # closing one closes the QP (in C).
        if send_cq is not None:
            send_cq._children.add(self)
        self.xrcd = xrcd
        if xrcd is not None:
            xrcd._children.add(self)
        if recv_cq is not None:
            recv_cq._children.add(self)
        self.srq = srq
        if srq is not None:
            srq._children.add(self)
        self._n_posted = ffi.new("size_t *")

    @property
    def qp_num(self):
        return self._value(lib.rv_qp_num, "rv_qp_num")

    num = qp_num

    @property
    def state(self):
        return check(lib.rv_qp_state_of(self._ptr("rv_qp_state_of")), "rv_qp_state_of")

    @property
    def cap(self):
        c = ffi.new("rv_qp_cap *")
        check(lib.rv_qp_get_cap(self._ptr("rv_qp_get_cap"), c), "rv_qp_get_cap")
        return _struct_dict(c)

    def query(self):
        attr = ffi.new("rv_qp_attr *", {"mask": lib.RV_QP_ATTR_ALL})
        check(lib.rv_qp_query(self._ptr("rv_qp_query"), attr), "rv_qp_query")
        return _struct_dict(attr)

    def query_ece(self):
        """The ECE options as a dict (vendor_id, options, comp_mask);
        RVerbsError EOPNOTSUPP on a device without ECE (soft0, rxe)."""
        e = ffi.new("rv_ece *")
        check(lib.rv_qp_query_ece(self._ptr("rv_qp_query_ece"), e), "rv_qp_query_ece")
        return _struct_dict(e)

    def set_ece(self, vendor_id, options):
        e = ffi.new("rv_ece *", {"vendor_id": vendor_id, "options": options})
        check(lib.rv_qp_set_ece(self._ptr("rv_qp_set_ece"), e), "rv_qp_set_ece")

    def set_rate_limit(self, kbps, max_burst=None, packet_size=None):
        """Pace the send queue at kbps (0: no limit); RVerbsError EOPNOTSUPP
        where the device does not pace (pp_rate_limit_max 0)."""
        a = ffi.new("rv_qp_rate_limit_attr *", {"mask": lib.RV_QP_RATE_LIMIT_RATE, "rate_limit": kbps})
        if max_burst is not None:
            a.mask |= lib.RV_QP_RATE_LIMIT_MAX_BURST
            a.max_burst_sz = max_burst
        if packet_size is not None:
            a.mask |= lib.RV_QP_RATE_LIMIT_PKT_SIZE
            a.typical_pkt_sz = packet_size
        check(lib.rv_qp_set_rate_limit(self._ptr("rv_qp_set_rate_limit"), a), "rv_qp_set_rate_limit")

    def modify(self, **attrs):
        check(lib.rv_qp_modify(self._ptr("rv_qp_modify"), _qp_attr(attrs)), "rv_qp_modify")

    def to_init(self, **attrs):
        check(lib.rv_qp_to_init(self._ptr("rv_qp_to_init"), _qp_attr(attrs)), "rv_qp_to_init")

    def to_rtr(self, **attrs):
        check(lib.rv_qp_to_rtr(self._ptr("rv_qp_to_rtr"), _qp_attr(attrs)), "rv_qp_to_rtr")

    def to_rts(self, **attrs):
        check(lib.rv_qp_to_rts(self._ptr("rv_qp_to_rts"), _qp_attr(attrs)), "rv_qp_to_rts")

    def endpoint(self):
        """This QP's Endpoint, to hand to the peer."""
        ep = Endpoint()
        check(lib.rv_qp_endpoint(self._ptr("rv_qp_endpoint"), ep._c), "rv_qp_endpoint")
        return ep

    @property
    def gid_index(self):
        """The index of the GID this QP advertises and sends from (rv_qp_gid_index):
        the sgid_index for an AH or an RTR address built by hand."""
        return check(lib.rv_qp_gid_index(self._ptr("rv_qp_gid_index")), "rv_qp_gid_index")

    @gid_index.setter
    def gid_index(self, index):
        check(lib.rv_qp_set_gid_index(self._ptr("rv_qp_set_gid_index"), index), "rv_qp_set_gid_index")

    def attach_mcast(self, gid, lid=0):
        """Attach this UD QP to the multicast group `gid` (16 bytes: ff00::/8, or
        ::ffff:224.0.0.0/4 on RoCE and soft0) with multicast LID `lid`
        (rv_qp_attach_mcast). Datagrams sent to the group (remote_qpn
        RV_MCAST_QPN) then reach this QP."""
        gid = bytes(gid)
        if len(gid) != 16:
            raise ValueError("a GID is 16 bytes, not %d" % len(gid))
        check(lib.rv_qp_attach_mcast(self._ptr("rv_qp_attach_mcast"), gid, lid), "rv_qp_attach_mcast")

    def join_mcast(self, group, timeout_ms=5000):
        """Join this UD QP to the IP multicast group `group` ("239.1.2.3",
        "ff0e::1") and attach it (rv_mcast_join: rdma_join_multicast on a
        kernel device, the IP group's GID on soft0). Returns (membership, ah,
        qkey): send with SendWR(ah=ah, remote_qpn=RV_MCAST_QPN,
        remote_qkey=qkey); membership.leave() (or a with block) leaves."""
        out = ffi.new("rv_mcast **")
        ahp = ffi.new("rv_ah **")
        qkey = ffi.new("uint32_t *")
        check(lib.rv_mcast_join(self._ptr("rv_mcast_join"), group.encode(), timeout_ms, out, ahp, qkey),
              "rv_mcast_join")
        ah = AH.__new__(AH)
        _Handle.__init__(ah)
        ah.pd = self.pd
        ah._adopt(ahp[0], ah.pd)
        return McastMembership(out[0], self), ah, qkey[0]

    def detach_mcast(self, gid, lid=0):
        """Detach this UD QP from the multicast group `gid` (rv_qp_detach_mcast)."""
        gid = bytes(gid)
        if len(gid) != 16:
            raise ValueError("a GID is 16 bytes, not %d" % len(gid))
        check(lib.rv_qp_detach_mcast(self._ptr("rv_qp_detach_mcast"), gid, lid), "rv_qp_detach_mcast")

    def connect(self, peer):
        """RESET/INIT -> RTS against the peer's Endpoint (or its packed bytes)."""
        if not isinstance(peer, Endpoint):
            peer = Endpoint.unpack(peer)
        check(lib.rv_qp_connect(self._ptr("rv_qp_connect"), peer._c), "rv_qp_connect")

    def set_signal_every(self, n):
        """Selective signalling as a policy of this QP (it needs sq_sig_all=False):
        rverbs signals every n-th send WR, the last WR of each post_send, and
        never lets unsignalled work fill the send queue; completions polled from
        the send CQ are accounted (send_outstanding). 0 turns it off."""
        check(lib.rv_qp_set_signal_every(self._ptr("rv_qp_set_signal_every"), n),
              "rv_qp_set_signal_every")

    @property
    def send_outstanding(self):
        """Send WRs posted and not yet known complete (needs a signalling policy)."""
        return check(lib.rv_qp_send_outstanding(self._ptr("rv_qp_send_outstanding")),
                     "rv_qp_send_outstanding")

    # -- data path --

    def post_send(self, wrs, n=None):
        """Post send work requests: a list of SendWR, or a cffi rv_send_wr array
        (with n) for loops that build it once. Returns the number posted; on an
        error, the exception's ``posted`` says how many went before it."""
        h = self._h
        if h is None:
            raise _closed_error(self, "rv_qp_post_send")
        if isinstance(wrs, _CData):
            arr, count = wrs, len(wrs) if n is None else n
        else:
            keep = []
            count = len(wrs)
            # One initializer, in rv_send_wr's field order: cffi fills it in C.
            init = []
            for wr in wrs:
                sg, nsg = _sge_array(wr.sg_list, keep)
                ah = _NULL if wr.ah is None else wr.ah._ptr("rv_qp_post_send")
                init.append((wr.wr_id, _NULL, sg, nsg, wr.opcode, wr.send_flags, wr.imm_data,
                             wr.remote_addr, wr.rkey, wr.remote_qpn, wr.compare_add, wr.swap,
                             ah, wr.remote_qkey, wr.remote_srqn))
            arr = ffi.new("rv_send_wr[]", init)
        rc = _rv_qp_post_send(h, arr, count, self._n_posted)
        if rc < 0:
            e = error(rc, "rv_qp_post_send")
            e.posted = self._n_posted[0]
            raise e
        return count

    def post_recv(self, wrs, n=None):
        """Post receive work requests: a list of RecvWR or a cffi rv_recv_wr array."""
        h = self._h
        if h is None:
            raise _closed_error(self, "rv_qp_post_recv")
        if isinstance(wrs, _CData):
            arr, count = wrs, len(wrs) if n is None else n
        else:
            keep = []
            count = len(wrs)
            arr = ffi.new("rv_recv_wr[]", count)
            for i, wr in enumerate(wrs):
                arr[i].wr_id = wr.wr_id
                arr[i].sg_list, arr[i].num_sge = _sge_array(wr.sg_list, keep)
        rc = _rv_qp_post_recv(h, arr, count, self._n_posted)
        if rc < 0:
            e = error(rc, "rv_qp_post_recv")
            e.posted = self._n_posted[0]
            raise e
        return count

    def write(self, local, remote_addr, rkey, wr_id=0):
        """One signalled RDMA WRITE of the rv_sge ``local`` (MR.sge())."""
        h = self._h
        if h is None:
            raise _closed_error(self, "rv_qp_write")
        rc = _rv_qp_write(h, local, remote_addr, rkey, wr_id)
        if rc < 0:
            raise error(rc, "rv_qp_write")

    def read(self, local, remote_addr, rkey, wr_id=0):
        """One signalled RDMA READ into the rv_sge ``local``."""
        h = self._h
        if h is None:
            raise _closed_error(self, "rv_qp_read")
        rc = _rv_qp_read(h, local, remote_addr, rkey, wr_id)
        if rc < 0:
            raise error(rc, "rv_qp_read")

    def send(self, local, wr_id=0):
        """One signalled SEND of the rv_sge ``local``."""
        h = self._h
        if h is None:
            raise _closed_error(self, "rv_qp_send")
        rc = _rv_qp_send(h, local, wr_id)
        if rc < 0:
            raise error(rc, "rv_qp_send")

    def recv(self, local, wr_id=0):
        """Post one receive into the rv_sge ``local``."""
        h = self._h
        if h is None:
            raise _closed_error(self, "rv_qp_recv")
        rc = _rv_qp_recv(h, local, wr_id)
        if rc < 0:
            raise error(rc, "rv_qp_recv")


# ---- the connection helper (rverbs/conn.h) -----------------------------------

def _timeout_ms(timeout):
    """Seconds (float) to the C API's milliseconds; None waits without limit."""
    if timeout is None:
        return -1
    return max(0, int(timeout * 1000))


def _wrap(cls, ptr, parent, **attrs):
    """A Python object for a borrowed C handle: it takes its own reference."""
    if ptr == _NULL:
        return None
    obj = cls.__new__(cls)
    _Handle.__init__(obj)
    ref = getattr(lib, "rv_%s_ref" % cls._prefix)(ptr)
    obj._adopt(ref, parent)
    for k, v in attrs.items():
        setattr(obj, k, v)
    return obj


# Routing options of a connection (issue 19): keyword -> its mask bit.
_CONN_ROUTE = {"gid_index": "RV_CONN_ATTR_GID_INDEX", "traffic_class": "RV_CONN_ATTR_TRAFFIC_CLASS",
               "sl": "RV_CONN_ATTR_SL", "flow_label": "RV_CONN_ATTR_FLOW_LABEL",
               "hop_limit": "RV_CONN_ATTR_HOP_LIMIT", "ack_timeout": "RV_CONN_ATTR_ACK_TIMEOUT"}


def _conn_attr(opts, keep):
    """rv_conn_attr from keyword options (see Conn)."""
    if not opts:
        return _NULL
    a = ffi.new("rv_conn_attr *")
    keep.append(a)
    for key, value in opts.items():
        if value is None:
            continue
        if key == "pd":
            a.mask |= lib.RV_CONN_ATTR_PD
            a.pd = value._ptr("rv_conn_attr.pd")
        elif key == "cq":
            a.mask |= lib.RV_CONN_ATTR_CQ
            a.send_cq = value._ptr("rv_conn_attr.send_cq")
        elif key == "recv_cq":
            a.mask |= lib.RV_CONN_ATTR_CQ
            a.recv_cq = value._ptr("rv_conn_attr.recv_cq")
        elif key == "qp_type":
            a.mask |= lib.RV_CONN_ATTR_QP_TYPE
            a.qp_type = value
        elif key == "qkey":
            a.mask |= lib.RV_CONN_ATTR_QKEY
            a.qkey = value
        elif key == "qp_cap":
            a.mask |= lib.RV_CONN_ATTR_QP_CAP
            cap = {"max_send_wr": 128, "max_recv_wr": 128, "max_send_sge": 1,
                   "max_recv_sge": 1, "max_inline_data": 0}
            cap.update(value)
            for k, v in cap.items():
                setattr(a.qp_cap, k, v)
        elif key == "num_qps":
            a.mask |= lib.RV_CONN_ATTR_NUM_QPS
            a.num_qps = value
        elif key == "qps":
            arr = ffi.new("rv_qp *[]", [q._ptr("rv_conn_attr.qps") for q in value])
            keep.append(arr)
            a.mask |= lib.RV_CONN_ATTR_QPS
            a.qps = arr
            a.num_qps = len(value)
        elif key == "mr":
            a.mask |= lib.RV_CONN_ATTR_MR
            a.mr = value._ptr("rv_conn_attr.mr")
        elif key == "private_data":
            data = ffi.from_buffer(bytes(value))
            keep.append(data)
            a.mask |= lib.RV_CONN_ATTR_PRIVATE_DATA
            a.private_data = data
            a.private_data_len = len(data)
        elif key == "required_caps":
            a.mask |= lib.RV_CONN_ATTR_REQUIRED_CAPS
            a.required_caps = value
        elif key == "transport":
            a.mask |= lib.RV_CONN_ATTR_TRANSPORT
            a.transport = value
        elif key in _CONN_ROUTE:
            a.mask |= getattr(lib, _CONN_ROUTE[key])
            setattr(a, key, value)
        elif key == "resolve":  # (timeout_ms, retries), rdma_cm only
            a.mask |= lib.RV_CONN_ATTR_RESOLVE
            a.resolve_timeout_ms, a.resolve_retries = value
        else:
            raise TypeError("unknown connection option %r" % key)
    return a


class Listener(_Handle):
    """Listens on "host:port" for rverbs connections (rv_listener).

    Listener(context, "127.0.0.1:0", backlog=None, handshake_timeout=None (s),
    max_pending=None, transport=None). ``port`` is the port it listens on;
    accept(timeout=None, **options) waits for one client without holding the
    GIL and returns a Conn.
    """

    _kind = "listener"
    _prefix = "listener"

    def __init__(self, context, addr="127.0.0.1:0", backlog=None, handshake_timeout=None,
                 max_pending=None, transport=None):
        super().__init__()
        a = ffi.new("rv_listener_attr *")
        if backlog is not None:
            a.mask |= lib.RV_LISTENER_ATTR_BACKLOG
            a.backlog = backlog
        if handshake_timeout is not None:
            a.mask |= lib.RV_LISTENER_ATTR_HANDSHAKE_TIMEOUT
            a.handshake_timeout_ms = max(1, int(handshake_timeout * 1000))
        if max_pending is not None:
            a.mask |= lib.RV_LISTENER_ATTR_MAX_PENDING
            a.max_pending = max_pending
        if transport is not None:
            a.mask |= lib.RV_LISTENER_ATTR_TRANSPORT
            a.transport = transport
        out = ffi.new("rv_listener **")
        check(lib.rv_listener_new(context._ptr("rv_listener_new"), addr.encode(), a, out),
              "rv_listener_new")
        self.context = context
        self._adopt(out[0], context)

    @property
    def port(self):
        return check(lib.rv_listener_port(self._ptr("rv_listener_port")), "rv_listener_port")

    def fileno(self):
        """A descriptor that is readable when accept() has work (for select/poll)."""
        return check(lib.rv_listener_fd(self._ptr("rv_listener_fd")), "rv_listener_fd")

    def accept(self, timeout=None, **options):
        """Wait for one client and return the established Conn (options: see Conn)."""
        keep = []
        attr = _conn_attr(options, keep)
        out = ffi.new("rv_conn **")
        check(lib.rv_listener_accept(self._ptr("rv_listener_accept"), attr,
                                     _timeout_ms(timeout), out), "rv_listener_accept")
        return Conn._adopt_new(out[0], self.context)


class McastMembership:
    """A UD QP's membership of a multicast group (QP.join_mcast). leave()
    detaches the QP and leaves the group (rv_mcast_leave); a with block leaves
    at its end. It keeps its QP object alive until then."""

    def __init__(self, ptr, qp):
        self._p = ptr
        self.qp = qp

    def leave(self):
        if self._p is not None:
            p, self._p = self._p, None
            check(lib.rv_mcast_leave(p), "rv_mcast_leave")

    @property
    def joined(self):
        return self._p is not None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.leave()

    def __del__(self):
        try:
            self.leave()
        except Exception:
            pass


class Conn(_Handle):
    """A connection from the connection helper (rv_conn): connected QPs in RTS.

    Conn.connect(context, "host:port", timeout=None, **options) waits (without
    the GIL); Conn.connect_start(...) returns at once, then poll() until
    RV_CONN_EVENT_ESTABLISHED. Options: pd, cq, recv_cq, qp_type (RC, UC or UD:
    then peer_ah() gives what a send to the peer needs), qkey (UD), qp_cap (dict),
    num_qps, qps (list of QP), mr (advertised to the peer), private_data
    (bytes), required_caps, transport; routing: gid_index, traffic_class, sl,
    flow_label, hop_limit, ack_timeout, resolve=(timeout_ms, retries) (rdma_cm).

    ``qps`` are QP objects for the connection's QPs; ``peer_endpoint(i)`` has the
    peer's advertised memory region (mr_addr, mr_length, mr_rkey).
    """

    _kind = "connection"
    _prefix = "conn"

    @classmethod
    def _adopt_new(cls, ptr, context):
        obj = cls.__new__(cls)
        _Handle.__init__(obj)
        obj.context = context
        obj._adopt(ptr, context)
        obj._wrap_parts()
        return obj

    def _wrap_parts(self):
        # Python objects for the connection's PD, CQ and QPs, each with its own
        # reference; closing the PD or CQ closes the connection (in C).
        h = self._h
        ctx = self.context
        self.pd = _wrap(PD, lib.rv_conn_pd(h), ctx, context=ctx)
        self.cq = _wrap(CQ, lib.rv_conn_cq(h), ctx, context=ctx, _batch=16,
                        _wc=ffi.new("rv_wc[]", 16))
        deps = [d for d in (self.pd, self.cq) if d is not None]
        for d in deps:
            d._children.add(self)
        self.qps = []
        for i in range(lib.rv_conn_num_qps(h)):
            q = _wrap(QP, lib.rv_conn_qp(h, i), self, pd=self.pd, send_cq=self.cq,
                      recv_cq=self.cq, _n_posted=ffi.new("size_t *"))
            if q is None:
                continue
            for d in deps:
                d._children.add(q)
            self.qps.append(q)

    @classmethod
    def connect(cls, context, addr, timeout=None, **options):
        keep = []
        attr = _conn_attr(options, keep)
        out = ffi.new("rv_conn **")
        check(lib.rv_connect(context._ptr("rv_connect"), addr.encode(), attr,
                             _timeout_ms(timeout), out), "rv_connect")
        return cls._adopt_new(out[0], context)

    @classmethod
    def connect_start(cls, context, addr, **options):
        keep = []
        attr = _conn_attr(options, keep)
        out = ffi.new("rv_conn **")
        check(lib.rv_connect_start(context._ptr("rv_connect_start"), addr.encode(), attr, out),
              "rv_connect_start")
        return cls._adopt_new(out[0], context)

    @property
    def qp(self):
        """The first (usually the only) QP."""
        return self.qps[0] if self.qps else None

    def poll(self, timeout=0):
        """Process the control channel; returns an rv_conn_event (RV_CONN_EVENT_*)."""
        ev = ffi.new("uint32_t *")
        check(lib.rv_conn_poll(self._ptr("rv_conn_poll"), _timeout_ms(timeout), ev),
              "rv_conn_poll")
        if ev[0] == lib.RV_CONN_EVENT_ESTABLISHED and not self.qps:
            self._wrap_parts()
        return ev[0]

    def disconnect(self, timeout=5.0):
        """Tell the peer, flush the QPs, wait for its acknowledgement."""
        check(lib.rv_conn_disconnect(self._ptr("rv_conn_disconnect"), _timeout_ms(timeout)),
              "rv_conn_disconnect")

    def fileno(self):
        return check(lib.rv_conn_fd(self._ptr("rv_conn_fd")), "rv_conn_fd")

    @property
    def state(self):
        """An rv_conn_state (RV_CONN_*)."""
        return check(lib.rv_conn_state_of(self._ptr("rv_conn_state_of")), "rv_conn_state_of")

    @property
    def num_qps(self):
        return lib.rv_conn_num_qps(self._ptr("rv_conn_num_qps"))

    def peer_ah(self, index=0):
        """A UD connection's (AH, qpn, qkey) for a send to the peer's QP `index`
        (rv_conn_peer_ah): SendWR(ah=..., remote_qpn=..., remote_qkey=...)."""
        out = ffi.new("rv_ah **")
        qpn = ffi.new("uint32_t *")
        qkey = ffi.new("uint32_t *")
        check(lib.rv_conn_peer_ah(self._ptr("rv_conn_peer_ah"), index, out, qpn, qkey), "rv_conn_peer_ah")
        ah = AH.__new__(AH)
        _Handle.__init__(ah)
        ah.pd = self.pd
        ah._adopt(out[0], ah.pd)
        return ah, qpn[0], qkey[0]

    def peer_endpoint(self, index=0):
        ep = Endpoint()
        check(lib.rv_conn_peer_endpoint(self._ptr("rv_conn_peer_endpoint"), index, ep._c),
              "rv_conn_peer_endpoint")
        return ep

    @property
    def peer_data(self):
        """The application data the peer sent (bytes)."""
        h = self._ptr("rv_conn_peer_data")
        n = ffi.new("size_t *")
        check(lib.rv_conn_peer_data(h, _NULL, 0, n), "rv_conn_peer_data")
        buf = ffi.new("char[]", max(1, n[0]))
        check(lib.rv_conn_peer_data(h, buf, len(buf), n), "rv_conn_peer_data")
        return bytes(ffi.buffer(buf, n[0]))

    @property
    def peer_addr(self):
        buf = ffi.new("char[]", 128)
        check(lib.rv_conn_peer_addr(self._ptr("rv_conn_peer_addr"), buf, len(buf)),
              "rv_conn_peer_addr")
        return ffi.string(buf).decode()

    @property
    def path_mtu(self):
        """An rv_mtu."""
        return check(lib.rv_conn_path_mtu(self._ptr("rv_conn_path_mtu")), "rv_conn_path_mtu")

    @property
    def transport(self):
        """An rv_conn_transport."""
        return check(lib.rv_conn_transport_of(self._ptr("rv_conn_transport_of")),
                     "rv_conn_transport_of")


# ---- logging ----------------------------------------------------------------

_log_lock = threading.Lock()
_log_callback = None


def set_log_handler(fn):
    """Route librverbs' log to fn(level, message) (None removes it). Exceptions
    raised by fn are ignored (printed by cffi)."""
    global _log_callback
    with _log_lock:
        if fn is None:
            lib.rv_set_log_handler(_NULL, _NULL)
            _log_callback = None
            return

        @ffi.callback("rv_log_fn")
        def cb(level, msg, user):
            fn(level, ffi.string(msg).decode("utf-8", "replace"))

        lib.rv_set_log_handler(cb, _NULL)
        _log_callback = cb  # keep it alive while installed


def set_log_level(level):
    check(lib.rv_set_log_level(level), "rv_set_log_level")


__all__ = ["Device", "Context", "PD", "MR", "CQ", "QP", "McastMembership", "Listener", "Conn", "Endpoint", "WC", "SendWR",
           "RecvWR", "sge", "set_log_handler", "set_log_level", "wc_status_str",
           "wc_status_hint"]
