/*
 * The system's real libibverbs, for every device that is not soft0.
 *
 * It is loaded by absolute path into a link-map namespace of its own
 * (dlmopen): there "libibverbs.so.1" is the real library, so the providers it
 * loads (librxe, libmlx5 ...) bind to it and never to this layer, which has
 * the same soname in the program's namespace. Objects of real devices are the
 * real library's own; the layer only forwards the exported calls, and the
 * data path (ibv_post_send and friends, inline in verbs.h) goes straight to
 * the provider through the object's ops.
 */
#ifndef RVERBS_COMPAT_PASSTHROUGH_H
#define RVERBS_COMPAT_PASSTHROUGH_H

#include <stdbool.h>

#include <infiniband/verbs.h>

#undef ibv_reg_mr
#undef ibv_reg_mr_iova
#undef ibv_query_port

/* Every forwarded call: the version is the real library's default one. */
#define COMPAT_REAL_FUNCS(X)                                                   \
	X("IBVERBS_1.1", ibv_get_device_list)                                  \
	X("IBVERBS_1.1", ibv_free_device_list)                                 \
	X("IBVERBS_1.1", ibv_get_device_guid)                                  \
	X("IBVERBS_1.9", ibv_get_device_index)                                 \
	X("IBVERBS_1.1", ibv_open_device)                                      \
	X("IBVERBS_1.1", ibv_close_device)                                     \
	X("IBVERBS_1.10", ibv_import_device)                                   \
	X("IBVERBS_1.1", ibv_get_async_event)                                  \
	X("IBVERBS_1.1", ibv_ack_async_event)                                  \
	X("IBVERBS_1.1", ibv_query_device)                                     \
	X("IBVERBS_1.1", ibv_query_port)                                       \
	X("IBVERBS_1.1", ibv_query_gid)                                        \
	X("IBVERBS_1.11", _ibv_query_gid_ex)                                   \
	X("IBVERBS_1.11", _ibv_query_gid_table)                                \
	X("IBVERBS_1.1", ibv_query_pkey)                                       \
	X("IBVERBS_1.5", ibv_get_pkey_index)                                   \
	X("IBVERBS_1.1", ibv_alloc_pd)                                         \
	X("IBVERBS_1.1", ibv_dealloc_pd)                                       \
	X("IBVERBS_1.10", ibv_import_pd)                                       \
	X("IBVERBS_1.10", ibv_unimport_pd)                                     \
	X("IBVERBS_1.1", ibv_reg_mr)                                           \
	X("IBVERBS_1.7", ibv_reg_mr_iova)                                      \
	X("IBVERBS_1.8", ibv_reg_mr_iova2)                                     \
	X("IBVERBS_1.12", ibv_reg_dmabuf_mr)                                   \
	X("IBVERBS_1.1", ibv_rereg_mr)                                         \
	X("IBVERBS_1.1", ibv_dereg_mr)                                         \
	X("IBVERBS_1.10", ibv_import_mr)                                       \
	X("IBVERBS_1.10", ibv_unimport_mr)                                     \
	X("IBVERBS_1.13", ibv_import_dm)                                       \
	X("IBVERBS_1.13", ibv_unimport_dm)                                     \
	X("IBVERBS_1.0", ibv_create_comp_channel)                              \
	X("IBVERBS_1.0", ibv_destroy_comp_channel)                             \
	X("IBVERBS_1.1", ibv_create_cq)                                        \
	X("IBVERBS_1.1", ibv_resize_cq)                                        \
	X("IBVERBS_1.1", ibv_destroy_cq)                                       \
	X("IBVERBS_1.1", ibv_get_cq_event)                                     \
	X("IBVERBS_1.1", ibv_ack_cq_events)                                    \
	X("IBVERBS_1.1", ibv_create_srq)                                       \
	X("IBVERBS_1.1", ibv_modify_srq)                                       \
	X("IBVERBS_1.1", ibv_query_srq)                                        \
	X("IBVERBS_1.1", ibv_destroy_srq)                                      \
	X("IBVERBS_1.1", ibv_create_qp)                                        \
	X("IBVERBS_1.1", ibv_query_qp)                                         \
	X("IBVERBS_1.1", ibv_modify_qp)                                        \
	X("IBVERBS_1.1", ibv_destroy_qp)                                       \
	X("IBVERBS_1.6", ibv_qp_to_qp_ex)                                      \
	X("IBVERBS_1.10", ibv_query_ece)                                       \
	X("IBVERBS_1.10", ibv_set_ece)                                         \
	X("IBVERBS_1.14", ibv_query_qp_data_in_order)                          \
	X("IBVERBS_1.1", ibv_create_ah)                                        \
	X("IBVERBS_1.1", ibv_destroy_ah)                                       \
	X("IBVERBS_1.1", ibv_init_ah_from_wc)                                  \
	X("IBVERBS_1.1", ibv_create_ah_from_wc)                                \
	X("IBVERBS_1.1", ibv_attach_mcast)                                     \
	X("IBVERBS_1.1", ibv_detach_mcast)                                     \
	X("IBVERBS_1.1", ibv_resolve_eth_l2_from_gid)                          \
	X("IBVERBS_1.1", ibv_fork_init)                                        \
	X("IBVERBS_1.13", ibv_is_fork_initialized)                             \
	X("IBVERBS_1.1", ibv_dontfork_range)                                   \
	X("IBVERBS_1.1", ibv_dofork_range)                                     \
	X("IBVERBS_1.1", ibv_copy_ah_attr_from_kern)                           \
	X("IBVERBS_1.0", ibv_copy_qp_attr_from_kern)                           \
	X("IBVERBS_1.0", ibv_copy_path_rec_from_kern)                          \
	X("IBVERBS_1.0", ibv_copy_path_rec_to_kern)                            \
	X("IBVERBS_PRIVATE_34", ibv_query_gid_type)

/* rdma-core declares these in marshall.h, which Debian does not install;
 * librdmacm calls them for the kernel's rdma_cm (real devices only). */
struct ib_uverbs_ah_attr;
struct ib_uverbs_qp_attr;
struct ib_user_path_rec;
struct ibv_sa_path_rec;
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);
/* Declared in rdma-core's driver.h, which is private; exported all the same. */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
/* ibv_devinfo calls it; its type is rdma-core's enum ibv_gid_type_sysfs:
 * 0 for an IB or RoCE v1 GID, 1 for RoCE v2. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       int *type);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

struct compat_real {
#define COMPAT_REAL_MEMBER(ver, name) __typeof__(&name) name;
	COMPAT_REAL_FUNCS(COMPAT_REAL_MEMBER)
#undef COMPAT_REAL_MEMBER
	int *(*errno_location)(void); /* the real library's libc has its own errno */
};

/* Filled by compat_real_load(); all NULL when there is no real library. */
extern struct compat_real compat_real;

/* Load the real library once; false when there is none (no kernel RDMA
 * support, RVERBS_COMPAT_REAL=none, or the library cannot be loaded). */
bool compat_real_load(void);

/* private.c: point the forwarded provider interface at the real library. */
void compat_private_resolve(void *real_handle);

/* The system's librdmacm in the real library's namespace (a dlmopen
 * handle), or NULL; exported for the layer's librdmacm (libibverbs.map). */
void *rverbs_compat_real_rdmacm(void);

/* Copy the real library's errno into the program's, after a failed call. */
void compat_real_errno(void);

/* Forward a call returning a pointer / an int to the real library. A real
 * object exists only once the library is loaded, so a missing function means
 * the argument is no object of any device. */
#define COMPAT_REAL_PTR(name, ...)                                             \
	do {                                                                   \
		if (!compat_real.name) {                                       \
			errno = EINVAL;                                        \
			return NULL;                                           \
		}                                                              \
		__typeof__(compat_real.name(__VA_ARGS__)) r_ = compat_real.name(__VA_ARGS__); \
		if (!r_)                                                       \
			compat_real_errno();                                   \
		return r_;                                                     \
	} while (0)

#define COMPAT_REAL_INT(name, ...)                                             \
	do {                                                                   \
		if (!compat_real.name)                                         \
			return errno = EINVAL;                                 \
		__typeof__(compat_real.name(__VA_ARGS__)) r_ = compat_real.name(__VA_ARGS__); \
		if (r_)                                                        \
			compat_real_errno();                                   \
		return r_;                                                     \
	} while (0)

#endif
