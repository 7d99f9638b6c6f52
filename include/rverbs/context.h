/**
 * @file rverbs/context.h
 * @brief Device contexts: open, query device and port attributes, dump the
 *        ownership tree.
 */
#ifndef RVERBS_CONTEXT_H
#define RVERBS_CONTEXT_H

#include <rverbs/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Bits of rv_context_attr::mask. */
enum rv_context_attr_mask {
	/** rv_context_attr::listen_addr is set (software device only). */
	RV_CONTEXT_ATTR_LISTEN_ADDR = 1u << 0,
	/** rv_context_attr::soft_flags is set (software device only). */
	RV_CONTEXT_ATTR_SOFT_FLAGS = 1u << 1,
	/** rv_context_attr::auth_secret and auth_secret_len are set (software device only). */
	RV_CONTEXT_ATTR_AUTH_SECRET = 1u << 2
};

/**
 * Bits of rv_context_attr::soft_flags: how the software device negotiates
 * its connections (iWARP MPA, RFC 5044 / RFC 6581). Ignored by other devices.
 */
typedef enum rv_soft_flags {
	/**
	 * Do not require the MPA CRC32c on this context's connections. The CRC is
	 * still used on a connection whose peer requires it (RFC 5044: CRC is on
	 * when either side asks for it). Default: required. The environment
	 * variable `RVERBS_SOFT_CRC=0` sets this flag for every context.
	 */
	RV_SOFT_CRC_OPTIONAL = 1u << 0,
	/**
	 * Do not offer the RFC 7306 extensions (immediate data, atomics) in the
	 * MPA exchange: this context's QPs neither send nor accept them, as a
	 * plain iWARP device. Default: offered. `RVERBS_SOFT_EXT=0` sets it too.
	 */
	RV_SOFT_NO_EXT = 1u << 1,
	/**
	 * Also receive RoCEv2 datagrams on UDP port 4791 of the listen address,
	 * as a RoCE NIC does, so that UD QPs of kernel and hardware RoCE devices
	 * (rxe, ConnectX) reach this context's UD QPs; an address handle with
	 * dlid 0 sends to that port of its peer. One context per address can
	 * have it (the port is one socket's). `RVERBS_SOFT_ROCE_PORT=1` sets it.
	 */
	RV_SOFT_ROCE_PORT = 1u << 2
} rv_soft_flags;

/** Options for rv_context_new(). Unset fields take the documented defaults. */
typedef struct rv_context_attr {
	uint64_t mask; /**< which fields the caller set (rv_context_attr_mask) */
	/**
	 * Software device: the IPv4 or IPv6 address to listen on and to use as
	 * the port's GID. Default "127.0.0.1". Ignored by libibverbs devices.
	 */
	const char *listen_addr;
	/** Software device: rv_soft_flags bits. Default 0 (CRC required, extensions offered). */
	uint32_t soft_flags;
	/**
	 * Software device: a shared secret (1 to 4096 bytes, copied) that every
	 * connection of this context must prove, both ways, in its MPA exchange
	 * (HMAC-SHA256 challenge-response; no encryption); that every UD datagram
	 * carries a MAC of; and that the connection helper (rv_connect,
	 * rv_listener) proves over its TCP exchange. A peer without the same
	 * secret is rejected. Default: none, unless the environment
	 * variable `RVERBS_SOFT_SECRET_FILE` names a file whose contents are the
	 * secret. Other devices: rv_context_new() fails with -EOPNOTSUPP.
	 */
	const void *auth_secret;
	uint32_t auth_secret_len; /**< bytes at rv_context_attr::auth_secret */
} rv_context_attr;

/** Link layer of a port (values equal IBV_LINK_LAYER_*). */
typedef enum rv_link_layer {
	RV_LINK_LAYER_UNSPECIFIED = 0, /**< not reported */
	RV_LINK_LAYER_INFINIBAND = 1,  /**< InfiniBand */
	RV_LINK_LAYER_ETHERNET = 2     /**< Ethernet (RoCE, iWARP, software device) */
} rv_link_layer;

/** Port state (values equal IBV_PORT_*). */
typedef enum rv_port_state {
	RV_PORT_NOP = 0,          /**< reserved */
	RV_PORT_DOWN = 1,         /**< link down */
	RV_PORT_INIT = 2,         /**< link up, not configured */
	RV_PORT_ARMED = 3,        /**< configured, not yet active */
	RV_PORT_ACTIVE = 4,       /**< ready for traffic */
	RV_PORT_ACTIVE_DEFER = 5  /**< active, deferring */
} rv_port_state;

/** Path MTU (values equal IBV_MTU_*). */
typedef enum rv_mtu {
	RV_MTU_256 = 1,  /**< 256 bytes */
	RV_MTU_512 = 2,  /**< 512 bytes */
	RV_MTU_1024 = 3, /**< 1024 bytes */
	RV_MTU_2048 = 4, /**< 2048 bytes */
	RV_MTU_4096 = 5  /**< 4096 bytes */
} rv_mtu;

/** Atomic operation support (values equal IBV_ATOMIC_*). */
typedef enum rv_atomic_cap {
	RV_ATOMIC_NONE = 0, /**< no atomics */
	RV_ATOMIC_HCA = 1,  /**< atomic with respect to this device */
	RV_ATOMIC_GLOB = 2  /**< atomic with respect to the whole node */
} rv_atomic_cap;

/** Request the base fields of rv_device_attr (fw_ver to phys_port_cnt), as ibv_query_device. */
#define RV_DEVICE_ATTR_BASE UINT64_C(0x1)
/**
 * Request the extended fields of rv_device_attr (device_cap_flags_ex to the
 * end): the completion clock, ODP, packet pacing, device memory, PCI atomics
 * and the limits per work-request type, as ibv_query_device_ex.
 */
#define RV_DEVICE_ATTR_EX UINT64_C(0x2)
/**
 * Request the multicast limits of rv_device_attr (max_mcast_grp to
 * max_total_mcast_qp_attach, after the extended fields), as ibv_query_device
 * reports them; all 0 on a device without multicast (rv_qp_attach_mcast()).
 */
#define RV_DEVICE_ATTR_MCAST UINT64_C(0x4)
/** Request every field of rv_device_attr known to this header version. */
#define RV_DEVICE_ATTR_ALL (RV_DEVICE_ATTR_BASE | RV_DEVICE_ATTR_EX | RV_DEVICE_ATTR_MCAST)

/** Bits of rv_device_attr::odp_general_caps (values equal IBV_ODP_SUPPORT*). */
typedef enum rv_odp_general_caps {
	RV_ODP_SUPPORT = 1u << 0,         /**< on-demand paging: memory need not be pinned */
	RV_ODP_SUPPORT_IMPLICIT = 1u << 1 /**< implicit ODP (the whole address space as one MR) */
} rv_odp_general_caps;

/** Bits of rv_device_attr::odp_rc_caps, odp_uc_caps, odp_ud_caps (values equal IBV_ODP_SUPPORT_*). */
typedef enum rv_odp_transport_caps {
	RV_ODP_SUPPORT_SEND = 1u << 0,    /**< SEND from ODP memory */
	RV_ODP_SUPPORT_RECV = 1u << 1,    /**< receive into ODP memory */
	RV_ODP_SUPPORT_WRITE = 1u << 2,   /**< RDMA WRITE targets ODP memory */
	RV_ODP_SUPPORT_READ = 1u << 3,    /**< RDMA READ of ODP memory */
	RV_ODP_SUPPORT_ATOMIC = 1u << 4,  /**< atomics on ODP memory */
	RV_ODP_SUPPORT_SRQ_RECV = 1u << 5 /**< SRQ receives into ODP memory */
} rv_odp_transport_caps;

/** Bits of rv_device_attr::pci_atomic_fetch_add and its siblings (values equal IBV_PCI_ATOMIC_*). */
typedef enum rv_pci_atomic_size {
	RV_PCI_ATOMIC_4_BYTE = 1u << 0,  /**< 4-byte operands */
	RV_PCI_ATOMIC_8_BYTE = 1u << 1,  /**< 8-byte operands */
	RV_PCI_ATOMIC_16_BYTE = 1u << 2  /**< 16-byte operands */
} rv_pci_atomic_size;

/**
 * Bit of rv_device_attr::device_cap_flags_ex: the device executes
 * RDMA atomic write (rv_qp_wr_atomic_write()); the kernel's
 * IB_UVERBS_DEVICE_ATOMIC_WRITE.
 */
#define RV_DEVICE_CAP_ATOMIC_WRITE (UINT64_C(1) << 40)

/** Device capabilities, as rv_context_query_device() reports them. */
typedef struct rv_device_attr {
	/**
	 * In: which fields the caller wants (RV_DEVICE_ATTR_ALL). Out: which
	 * fields were written.
	 */
	uint64_t mask;
	char fw_ver[64];          /**< firmware version text */
	uint64_t node_guid;       /**< node GUID (host byte order) */
	uint64_t sys_image_guid;  /**< system image GUID (host byte order) */
	uint64_t max_mr_size;     /**< largest registrable region, bytes */
	uint64_t page_size_cap;   /**< supported page sizes, bit mask */
	uint32_t vendor_id;       /**< IEEE vendor id */
	uint32_t vendor_part_id;  /**< vendor part id */
	uint32_t hw_ver;          /**< hardware version */
	uint32_t max_qp;          /**< queue pairs */
	uint32_t max_qp_wr;       /**< work requests per queue */
	uint32_t device_cap_flags;/**< IBV_DEVICE_* capability flags */
	uint32_t max_sge;         /**< scatter/gather entries per send/recv WR */
	uint32_t max_sge_rd;      /**< scatter/gather entries per RDMA READ */
	uint32_t max_cq;          /**< completion queues */
	uint32_t max_cqe;         /**< entries per completion queue */
	uint32_t max_mr;          /**< memory regions */
	uint32_t max_pd;          /**< protection domains */
	uint32_t max_qp_rd_atom;  /**< outstanding READ/atomic as target, per QP */
	uint32_t max_qp_init_rd_atom; /**< outstanding READ/atomic as initiator, per QP */
	uint32_t atomic_cap;      /**< an rv_atomic_cap */
	uint32_t max_srq;         /**< shared receive queues */
	uint32_t max_srq_wr;      /**< work requests per SRQ */
	uint32_t max_srq_sge;     /**< scatter/gather entries per SRQ WR */
	uint32_t max_mw;          /**< memory windows */
	uint32_t max_ah;          /**< address handles */
	uint32_t max_pkeys;       /**< P_Key table size */
	uint32_t phys_port_cnt;   /**< number of ports (numbered from 1) */
	/* ---- RV_DEVICE_ATTR_EX: written only when that bit is set ---- */
	/** IBV_DEVICE_* capability flags, all 64 bits (RV_DEVICE_CAP_ATOMIC_WRITE among them) */
	uint64_t device_cap_flags_ex;
	/**
	 * The bits a raw completion timestamp has (RV_CQ_WC_TIMESTAMP); 0: the
	 * device does not stamp completions.
	 */
	uint64_t completion_timestamp_mask;
	/** Frequency of the raw completion clock in kHz (rv_context_read_clock()); 0: unknown */
	uint64_t hca_core_clock;
	/** Device memory that can be allocated, bytes; 0: none */
	uint64_t max_dm_size;
	/** rv_odp_general_caps bits; 0: no on-demand paging */
	uint64_t odp_general_caps;
	uint32_t odp_rc_caps;     /**< rv_odp_transport_caps of RC QPs */
	uint32_t odp_uc_caps;     /**< rv_odp_transport_caps of UC QPs */
	uint32_t odp_ud_caps;     /**< rv_odp_transport_caps of UD QPs */
	uint32_t odp_xrc_caps;    /**< rv_odp_transport_caps of XRC QPs */
	uint32_t pp_rate_limit_min; /**< packet pacing: lowest rate limit of a QP, kbps; 0: no pacing */
	uint32_t pp_rate_limit_max; /**< packet pacing: highest rate limit of a QP, kbps */
	uint32_t pp_supported_qpts; /**< packet pacing: bit (1 << rv_qp_type) per QP type that has it */
	uint32_t pci_atomic_fetch_add;    /**< rv_pci_atomic_size bits: fetch-and-add over PCIe */
	uint32_t pci_atomic_swap;         /**< rv_pci_atomic_size bits: swap over PCIe */
	uint32_t pci_atomic_compare_swap; /**< rv_pci_atomic_size bits: compare-and-swap over PCIe */
	uint32_t max_send_sge;    /**< scatter/gather entries per send WR (SEND, WRITE) */
	uint32_t max_recv_sge;    /**< scatter/gather entries per receive WR */
	uint32_t max_read_sge;    /**< scatter/gather entries per RDMA READ WR (as max_sge_rd) */
	/**
	 * Inline bytes per send WR; 0 where the device does not report it (a
	 * libibverbs device: rv_qp_get_cap() of a created QP tells)
	 */
	uint32_t max_inline_data;
	/**
	 * The rv_cq_wc_flags bits rv_cq_new() is known to accept on this device
	 * (RV_CQ_ATTR_WC_FLAGS). libibverbs reports only timestamps (from
	 * completion_timestamp_mask): on such a device only creating the CQ tells
	 * whether wall-clock stamps and flow tags are there.
	 */
	uint32_t cq_wc_flags;
	/* ---- RV_DEVICE_ATTR_MCAST: written only when that bit is set ---- */
	uint32_t max_mcast_grp;       /**< multicast groups a context joins; 0: no multicast */
	uint32_t max_mcast_qp_attach; /**< QPs attached to one multicast group */
	uint32_t max_total_mcast_qp_attach; /**< QP attachments over every group */
} rv_device_attr;

/** Request every field of rv_port_attr known to this header version. */
#define RV_PORT_ATTR_ALL UINT64_C(0x1)

/** Port attributes, as rv_context_query_port() reports them. */
typedef struct rv_port_attr {
	/** In: which fields the caller wants (RV_PORT_ATTR_ALL). Out: which were written. */
	uint64_t mask;
	uint32_t state;          /**< an rv_port_state */
	uint32_t max_mtu;        /**< an rv_mtu */
	uint32_t active_mtu;     /**< an rv_mtu */
	uint32_t gid_tbl_len;    /**< GID table length */
	uint32_t port_cap_flags; /**< IBV_PORT_* capability flags */
	uint32_t max_msg_sz;     /**< largest message, bytes */
	uint32_t pkey_tbl_len;   /**< P_Key table length */
	uint16_t lid;            /**< base LID (software device: its TCP port) */
	uint16_t sm_lid;         /**< subnet manager LID */
	uint8_t link_layer;      /**< an rv_link_layer */
	uint8_t active_speed;    /**< IBV speed code */
	uint8_t active_width;    /**< IBV width code */
	uint8_t phys_state;      /**< physical port state */
} rv_port_attr;

/**
 * Open a context on a device. The context holds a reference on the device.
 * @param dev      the device
 * @param attr     options, or NULL for defaults
 * @param ret_ctx  receives the new context
 * @retval 0             success
 * @retval -EINVAL       a NULL argument, or an unknown bit in attr->mask
 * @retval -RV_ECLOSED   @p dev was closed
 * @retval -EADDRNOTAVAIL the software device could not listen on listen_addr
 * @retval negative      the driver failed; rv_error_last() says why
 */
RV_API int rv_context_new(rv_device *dev, const rv_context_attr *attr, rv_context **ret_ctx);

/** Take a reference on @p ctx. Returns @p ctx (NULL-safe). */
RV_API rv_context *rv_context_ref(rv_context *ctx);

/**
 * Drop a reference; the last one closes and frees the context. Accepts NULL;
 * returns NULL. With `RVERBS_DEBUG=leaks` in the environment, closing a context
 * that still has referenced dependents logs each one as a leak.
 */
RV_API rv_context *rv_context_unref(rv_context *ctx);

/**
 * Close the context now: every resource in it is closed first, depth-first
 * (QPs before CQs, MRs before PDs, everything before the context).
 * @retval 0            success, or already closed
 * @retval -EINVAL      @p ctx is NULL or not a context
 * @retval negative     a dependent could not be destroyed; the context stays
 *                      open and the call may be retried
 */
RV_API int rv_context_close(rv_context *ctx);

/** The device the context was opened on (borrowed), or NULL for an invalid handle. */
RV_API rv_device *rv_context_device(const rv_context *ctx);

/**
 * Query device capabilities. RV_DEVICE_ATTR_BASE asks for the fields of
 * ibv_query_device, RV_DEVICE_ATTR_EX for those of ibv_query_device_ex
 * (docs/extended-verbs.md says what soft0 reports); a program built with an
 * older header passes only the bits it knows and its smaller struct is never
 * written past its end.
 * @param ctx   the context
 * @param attr  in: attr->mask names the wanted fields; out: the fields
 * @retval 0            success
 * @retval -EINVAL      a NULL argument or an unknown mask bit
 * @retval -RV_ECLOSED  the context is closed
 */
RV_API int rv_context_query_device(rv_context *ctx, rv_device_attr *attr);

/**
 * Read the device's free-running clock, the one raw completion timestamps
 * (rv_wc_ex::timestamp) count in, as ibv_query_rt_values_ex. With
 * rv_device_attr::hca_core_clock (kHz) a program turns the difference of two
 * raw values into nanoseconds, and a raw timestamp into host time by reading
 * this clock between two reads of its own clock.
 * On soft0 the clock is CLOCK_MONOTONIC in nanoseconds (hca_core_clock
 * 1000000 kHz).
 * @param ctx      the context
 * @param ret_raw  receives the raw clock value (masked with
 *                 rv_device_attr::completion_timestamp_mask)
 * @retval 0            success
 * @retval -EINVAL      a NULL argument
 * @retval -EOPNOTSUPP  the device has no readable clock
 * @retval -RV_ECLOSED  the context is closed
 * @retval negative     the driver failed; rv_error_last() says why
 */
RV_API int rv_context_read_clock(rv_context *ctx, uint64_t *ret_raw);

/**
 * Query one port.
 * @param ctx       the context
 * @param port_num  port number, from 1
 * @param attr      in: attr->mask names the wanted fields; out: the fields
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, an unknown mask bit, or no such port
 * @retval -RV_ECLOSED  the context is closed
 */
RV_API int rv_context_query_port(rv_context *ctx, uint8_t port_num, rv_port_attr *attr);

/**
 * Read one GID table entry.
 * @param ctx       the context
 * @param port_num  port number, from 1
 * @param index     GID index
 * @param ret_gid   receives 16 bytes (network order)
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, no such port or index
 * @retval -RV_ECLOSED  the context is closed
 */
RV_API int rv_context_query_gid(rv_context *ctx, uint8_t port_num, int index, uint8_t ret_gid[16]);

/** The type of a GID table entry; the values are libibverbs' IBV_GID_TYPE_*. */
typedef enum rv_gid_type {
	RV_GID_TYPE_IB = 0,      /**< InfiniBand (also RoCE v1 on devices that do not tell them apart) */
	RV_GID_TYPE_ROCE_V1 = 1, /**< RoCE v1: GRH over Ethernet (EtherType 0x8915) */
	RV_GID_TYPE_ROCE_V2 = 2, /**< RoCE v2: IP/UDP encapsulation (UDP port 4791) */
} rv_gid_type;

/** One GID table entry with its type (rv_context_query_gid_entry()). */
typedef struct rv_gid_entry {
	uint8_t gid[16];       /**< the GID, network order (IPv4-mapped for an IPv4 address) */
	uint32_t gid_index;    /**< its index in the port's GID table */
	uint32_t port_num;     /**< its port, from 1 */
	uint32_t gid_type;     /**< an rv_gid_type */
	uint32_t ndev_ifindex; /**< the network interface it belongs to, 0 if none or unknown */
	uint32_t reserved[4];  /**< zero; room for later fields */
} rv_gid_entry;

/**
 * Read one GID table entry with its type and network interface.
 * On the software device the port has one entry: the listen address,
 * type RV_GID_TYPE_ROCE_V2 (its UD traffic is framed as RoCE v2), and the
 * index of the interface that owns the address (0 for a wildcard address).
 * @param ctx       the context
 * @param port_num  port number, from 1
 * @param index     GID index, from 0
 * @param ret       receives the entry (reserved fields zeroed)
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, no such port or index, or an empty entry
 * @retval -EOPNOTSUPP  the device cannot tell GID types
 * @retval -RV_ECLOSED  the context is closed
 */
RV_API int rv_context_query_gid_entry(rv_context *ctx, uint8_t port_num, uint32_t index, rv_gid_entry *ret);

/**
 * Read one P_Key table entry.
 * The software device has one entry, index 0, the default full-membership
 * P_Key 0xffff.
 * @param ctx       the context
 * @param port_num  port number, from 1
 * @param index     P_Key index, from 0 (below rv_port_attr.pkey_tbl_len)
 * @param ret_pkey  receives the P_Key in host byte order
 * @retval 0            success
 * @retval -EINVAL      a NULL argument, no such port or index
 * @retval -EOPNOTSUPP  the device has no P_Key query
 * @retval -RV_ECLOSED  the context is closed
 */
RV_API int rv_context_query_pkey(rv_context *ctx, uint8_t port_num, uint16_t index, uint16_t *ret_pkey);

/**
 * Describe the live ownership tree of the context: one line per handle with
 * its type, id, reference count and state, indented under what it depends on.
 * @param ctx       the context (an already closed one is described too)
 * @param ret_text  receives a NUL-terminated text; free it with rv_free()
 * @retval 0        success
 * @retval -EINVAL  a NULL argument or not a context
 * @retval -ENOMEM  out of memory
 */
RV_API int rv_context_dump(rv_context *ctx, char **ret_text);

#ifdef __cplusplus
}
#endif

#endif
