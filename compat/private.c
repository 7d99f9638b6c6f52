/*
 * rdma-core's provider interface (IBVERBS_PRIVATE_34), forwarded.
 *
 * Programs such as perftest link provider libraries (libmlx5.so.1,
 * libefa.so.1) directly for their direct-verbs calls; with BIND_NOW those
 * libraries load only if every libibverbs symbol they import exists. Each
 * symbol here jumps to the real library's own (whose objects are the only
 * ones a provider can be handed: soft0's are never a provider's), and when
 * there is no real library fails: NULL, ENOSYS, or nothing for a void call.
 * The provider's registration is a no-op: the real library registers the
 * providers of its own namespace.
 *
 * The jumps are x86-64 assembly: arguments pass through untouched without
 * knowing the prototypes. On other machines this file is not built and such
 * programs do not load (compat/README.md).
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>

#include "compat.h"
#include "passthrough.h"

#define COMPAT_PRIVATE_FUNCS(X) \
	X(0, __ioctl_final_num_attrs, INT) \
	X(1, __verbs_log, VOID) \
	X(2, _verbs_init_and_alloc_context, PTR) \
	X(3, execute_ioctl, INT) \
	X(4, ibv_cmd_advise_mr, INT) \
	X(5, ibv_cmd_alloc_dm, INT) \
	X(6, ibv_cmd_alloc_mw, INT) \
	X(7, ibv_cmd_alloc_pd, INT) \
	X(8, ibv_cmd_attach_mcast, INT) \
	X(9, ibv_cmd_close_xrcd, INT) \
	X(10, ibv_cmd_create_ah, INT) \
	X(11, ibv_cmd_create_counters, INT) \
	X(12, ibv_cmd_create_cq, INT) \
	X(13, ibv_cmd_create_cq_ex, INT) \
	X(14, ibv_cmd_create_flow, INT) \
	X(15, ibv_cmd_create_flow_action_esp, INT) \
	X(16, ibv_cmd_create_qp, INT) \
	X(17, ibv_cmd_create_qp_ex, INT) \
	X(18, ibv_cmd_create_qp_ex2, INT) \
	X(19, ibv_cmd_create_rwq_ind_table, INT) \
	X(20, ibv_cmd_create_srq, INT) \
	X(21, ibv_cmd_create_srq_ex, INT) \
	X(22, ibv_cmd_create_wq, INT) \
	X(23, ibv_cmd_dealloc_mw, INT) \
	X(24, ibv_cmd_dealloc_pd, INT) \
	X(25, ibv_cmd_dereg_mr, INT) \
	X(26, ibv_cmd_destroy_ah, INT) \
	X(27, ibv_cmd_destroy_counters, INT) \
	X(28, ibv_cmd_destroy_cq, INT) \
	X(29, ibv_cmd_destroy_flow, INT) \
	X(30, ibv_cmd_destroy_flow_action, INT) \
	X(31, ibv_cmd_destroy_qp, INT) \
	X(32, ibv_cmd_destroy_rwq_ind_table, INT) \
	X(33, ibv_cmd_destroy_srq, INT) \
	X(34, ibv_cmd_destroy_wq, INT) \
	X(35, ibv_cmd_detach_mcast, INT) \
	X(36, ibv_cmd_free_dm, INT) \
	X(37, ibv_cmd_get_context, INT) \
	X(38, ibv_cmd_modify_cq, INT) \
	X(39, ibv_cmd_modify_flow_action_esp, INT) \
	X(40, ibv_cmd_modify_qp, INT) \
	X(41, ibv_cmd_modify_qp_ex, INT) \
	X(42, ibv_cmd_modify_srq, INT) \
	X(43, ibv_cmd_modify_wq, INT) \
	X(44, ibv_cmd_open_qp, INT) \
	X(45, ibv_cmd_open_xrcd, INT) \
	X(46, ibv_cmd_poll_cq, INT) \
	X(47, ibv_cmd_post_recv, INT) \
	X(48, ibv_cmd_post_send, INT) \
	X(49, ibv_cmd_post_srq_recv, INT) \
	X(50, ibv_cmd_query_context, INT) \
	X(51, ibv_cmd_query_device_any, INT) \
	X(52, ibv_cmd_query_mr, INT) \
	X(53, ibv_cmd_query_port, INT) \
	X(54, ibv_cmd_query_qp, INT) \
	X(55, ibv_cmd_query_srq, INT) \
	X(56, ibv_cmd_read_counters, INT) \
	X(57, ibv_cmd_reg_dm_mr, INT) \
	X(58, ibv_cmd_reg_dmabuf_mr, INT) \
	X(59, ibv_cmd_reg_mr, INT) \
	X(60, ibv_cmd_req_notify_cq, INT) \
	X(61, ibv_cmd_rereg_mr, INT) \
	X(62, ibv_cmd_resize_cq, INT) \
	X(63, ibv_read_ibdev_sysfs_file, INT) \
	X(64, verbs_init_cq, VOID) \
	X(65, verbs_open_device, PTR) \
	X(66, verbs_set_ops, VOID) \
	X(67, verbs_uninit_context, VOID)

#define COUNT_ONE(i, name, kind) +1
#define N_PRIVATE (0 COMPAT_PRIVATE_FUNCS(COUNT_ONE))

/* Read by the jumps below (hidden: reached PC-relative). */
__attribute__((visibility("hidden"))) void *compat_private_fn[N_PRIVATE];

static const char *const private_names[N_PRIVATE] = {
#define NAME_ONE(i, name, kind) [i] = #name,
	COMPAT_PRIVATE_FUNCS(NAME_ONE)
};

#define FAIL_PTR "xorl %eax, %eax"
#define FAIL_VOID "xorl %eax, %eax"
#define FAIL_INT "movl $38, %eax" /* ENOSYS */
#define JUMP_ONE(i, name, kind)                                                \
	__asm__(".text\n.globl " #name "\n.type " #name ", @function\n" #name ":\n" \
		"\tmovq compat_private_fn+8*" #i "(%rip), %r11\n"               \
		"\ttestq %r11, %r11\n\tjz 1f\n\tjmp *%r11\n1:\t" FAIL_##kind "\n\tret\n" \
		".size " #name ", .-" #name "\n");
COMPAT_PRIVATE_FUNCS(JUMP_ONE)

/* A provider loaded in the program's namespace registers here: ignored. */
struct verbs_device_ops;
COMPAT_EXPORT void verbs_register_driver_34(const struct verbs_device_ops *ops);
COMPAT_EXPORT void verbs_register_driver_34(const struct verbs_device_ops *ops)
{
	(void)ops;
}

/* A variable of the interface; providers read it. */
COMPAT_EXPORT bool verbs_allow_disassociate_destroy;

void compat_private_resolve(void *real_handle)
{
	for (size_t i = 0; i < N_PRIVATE; i++) {
		void *sym = dlvsym(real_handle, private_names[i], "IBVERBS_PRIVATE_34");

		memcpy(&compat_private_fn[i], &sym, sizeof(sym));
	}
}
