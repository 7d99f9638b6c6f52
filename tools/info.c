/*
 * `rverbs info`: what ibv_devinfo shows, for libibverbs devices and the
 * software device alike. Text by default, every attribute with -v, JSON with
 * --json. Opens each device for as long as it takes to query it.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "tools.h"

struct info_opts {
	const char *dev;
	bool verbose;
	bool json;
};

/* The attributes printed without -v (ibv_devinfo's short form). */
static void text_device(const rv_device *dev, const rv_device_attr *d, bool verbose)
{
	char guid[32];

	printf("hca_id:\t%s\n", rv_device_name(dev));
	printf("\tdriver:\t\t\t\t%s\n", rv_device_kind_of(dev) == RV_DEVICE_SOFT ? "rverbs software device" : "libibverbs");
	printf("\tfw_ver:\t\t\t\t%s\n", d->fw_ver[0] ? d->fw_ver : "(none)");
	format_guid(d->node_guid, guid, sizeof(guid));
	printf("\tnode_guid:\t\t\t%s\n", guid);
	format_guid(d->sys_image_guid, guid, sizeof(guid));
	printf("\tsys_image_guid:\t\t\t%s\n", guid);
	printf("\tvendor_id:\t\t\t0x%04x\n", d->vendor_id);
	printf("\tvendor_part_id:\t\t\t%u\n", d->vendor_part_id);
	printf("\thw_ver:\t\t\t\t0x%x\n", d->hw_ver);
	printf("\tphys_port_cnt:\t\t\t%u\n", d->phys_port_cnt);
	printf("\tmax_qp:\t\t\t\t%u\n", d->max_qp);
	printf("\tmax_qp_wr:\t\t\t%u\n", d->max_qp_wr);
	printf("\tmax_cqe:\t\t\t%u\n", d->max_cqe);
	printf("\tmax_mr_size:\t\t\t0x%" PRIx64 "\n", d->max_mr_size);
	printf("\tmax_sge:\t\t\t%u\n", d->max_sge);
	printf("\tatomic_cap:\t\t\t%s (%u)\n", atomic_cap_name(d->atomic_cap), d->atomic_cap);
	if (!verbose)
		return;
	printf("\tpage_size_cap:\t\t\t0x%" PRIx64 "\n", d->page_size_cap);
	printf("\tdevice_cap_flags:\t\t0x%08x\n", d->device_cap_flags);
	printf("\tmax_sge_rd:\t\t\t%u\n", d->max_sge_rd);
	printf("\tmax_cq:\t\t\t\t%u\n", d->max_cq);
	printf("\tmax_mr:\t\t\t\t%u\n", d->max_mr);
	printf("\tmax_pd:\t\t\t\t%u\n", d->max_pd);
	printf("\tmax_qp_rd_atom:\t\t\t%u\n", d->max_qp_rd_atom);
	printf("\tmax_qp_init_rd_atom:\t\t%u\n", d->max_qp_init_rd_atom);
	printf("\tmax_srq:\t\t\t%u\n", d->max_srq);
	printf("\tmax_srq_wr:\t\t\t%u\n", d->max_srq_wr);
	printf("\tmax_srq_sge:\t\t\t%u\n", d->max_srq_sge);
	printf("\tmax_mw:\t\t\t\t%u\n", d->max_mw);
	printf("\tmax_ah:\t\t\t\t%u\n", d->max_ah);
	printf("\tmax_pkeys:\t\t\t%u\n", d->max_pkeys);
	/* The extended part (RV_DEVICE_ATTR_EX, as ibv_devinfo -v shows ibv_query_device_ex). */
	printf("\tdevice_cap_flags_ex:\t\t0x%" PRIx64 "\n", d->device_cap_flags_ex);
	printf("\tcompletion_timestamp_mask:\t0x%" PRIx64 "\n", d->completion_timestamp_mask);
	printf("\thca_core_clock:\t\t\t%" PRIu64 " kHz\n", d->hca_core_clock);
	printf("\tcq_wc_flags:\t\t\t0x%x%s%s%s\n", d->cq_wc_flags,
	       d->cq_wc_flags & RV_CQ_WC_TIMESTAMP ? " TIMESTAMP" : "",
	       d->cq_wc_flags & RV_CQ_WC_TIMESTAMP_WALLCLOCK ? " TIMESTAMP_WALLCLOCK" : "",
	       d->cq_wc_flags & RV_CQ_WC_FLOW_TAG ? " FLOW_TAG" : "");
	printf("\todp_caps:\t\t\tgeneral 0x%" PRIx64 " rc 0x%x uc 0x%x ud 0x%x xrc 0x%x\n", d->odp_general_caps,
	       d->odp_rc_caps, d->odp_uc_caps, d->odp_ud_caps, d->odp_xrc_caps);
	printf("\tpacket_pacing:\t\t\t%u..%u kbps, QP types 0x%x\n", d->pp_rate_limit_min, d->pp_rate_limit_max,
	       d->pp_supported_qpts);
	printf("\tmax_dm_size:\t\t\t%" PRIu64 "\n", d->max_dm_size);
	printf("\tpci_atomic_caps:\t\tfetch_add 0x%x swap 0x%x compare_swap 0x%x\n", d->pci_atomic_fetch_add,
	       d->pci_atomic_swap, d->pci_atomic_compare_swap);
	printf("\tmax_send_sge:\t\t\t%u\n", d->max_send_sge);
	printf("\tmax_recv_sge:\t\t\t%u\n", d->max_recv_sge);
	printf("\tmax_read_sge:\t\t\t%u\n", d->max_read_sge);
	printf("\tmax_inline_data:\t\t%u%s\n", d->max_inline_data,
	       d->max_inline_data ? "" : " (not reported; a QP's cap tells)");
}

static void json_device_attr(struct json *j, const rv_device_attr *d, bool verbose)
{
	char guid[32];

	json_string(j, "fw_ver", d->fw_ver);
	format_guid(d->node_guid, guid, sizeof(guid));
	json_string(j, "node_guid", guid);
	format_guid(d->sys_image_guid, guid, sizeof(guid));
	json_string(j, "sys_image_guid", guid);
	json_uint(j, "vendor_id", d->vendor_id);
	json_uint(j, "vendor_part_id", d->vendor_part_id);
	json_uint(j, "hw_ver", d->hw_ver);
	json_uint(j, "phys_port_cnt", d->phys_port_cnt);
	json_uint(j, "max_qp", d->max_qp);
	json_uint(j, "max_qp_wr", d->max_qp_wr);
	json_uint(j, "max_cqe", d->max_cqe);
	json_uint(j, "max_mr_size", d->max_mr_size);
	json_uint(j, "max_sge", d->max_sge);
	json_string(j, "atomic_cap", atomic_cap_name(d->atomic_cap));
	if (!verbose)
		return;
	json_uint(j, "page_size_cap", d->page_size_cap);
	json_uint(j, "device_cap_flags", d->device_cap_flags);
	json_uint(j, "max_sge_rd", d->max_sge_rd);
	json_uint(j, "max_cq", d->max_cq);
	json_uint(j, "max_mr", d->max_mr);
	json_uint(j, "max_pd", d->max_pd);
	json_uint(j, "max_qp_rd_atom", d->max_qp_rd_atom);
	json_uint(j, "max_qp_init_rd_atom", d->max_qp_init_rd_atom);
	json_uint(j, "max_srq", d->max_srq);
	json_uint(j, "max_srq_wr", d->max_srq_wr);
	json_uint(j, "max_srq_sge", d->max_srq_sge);
	json_uint(j, "max_mw", d->max_mw);
	json_uint(j, "max_ah", d->max_ah);
	json_uint(j, "max_pkeys", d->max_pkeys);
	json_uint(j, "device_cap_flags_ex", d->device_cap_flags_ex);
	json_uint(j, "completion_timestamp_mask", d->completion_timestamp_mask);
	json_uint(j, "hca_core_clock", d->hca_core_clock);
	json_uint(j, "cq_wc_flags", d->cq_wc_flags);
	json_uint(j, "odp_general_caps", d->odp_general_caps);
	json_uint(j, "odp_rc_caps", d->odp_rc_caps);
	json_uint(j, "odp_uc_caps", d->odp_uc_caps);
	json_uint(j, "odp_ud_caps", d->odp_ud_caps);
	json_uint(j, "odp_xrc_caps", d->odp_xrc_caps);
	json_uint(j, "pp_rate_limit_min", d->pp_rate_limit_min);
	json_uint(j, "pp_rate_limit_max", d->pp_rate_limit_max);
	json_uint(j, "pp_supported_qpts", d->pp_supported_qpts);
	json_uint(j, "max_dm_size", d->max_dm_size);
	json_uint(j, "pci_atomic_fetch_add", d->pci_atomic_fetch_add);
	json_uint(j, "pci_atomic_swap", d->pci_atomic_swap);
	json_uint(j, "pci_atomic_compare_swap", d->pci_atomic_compare_swap);
	json_uint(j, "max_send_sge", d->max_send_sge);
	json_uint(j, "max_recv_sge", d->max_recv_sge);
	json_uint(j, "max_read_sge", d->max_read_sge);
	json_uint(j, "max_inline_data", d->max_inline_data);
}

static void port_out(struct json *j, rv_context *ctx, const char *name, uint8_t p, bool verbose)
{
	rv_port_attr pa = {.mask = RV_PORT_ATTR_ALL};
	int rc = rv_context_query_port(ctx, p, &pa);

	if (j) {
		json_object_begin(j, NULL);
		json_uint(j, "port", p);
	} else {
		printf("\t\tport:\t%u\n", p);
	}
	if (rc < 0) {
		if (j) {
			json_string(j, "error", rv_error_last());
			json_object_end(j);
		} else {
			printf("\t\t\terror:\t\t\t%s\n", rv_error_last());
		}
		return;
	}
	if (j) {
		json_string(j, "state", port_state_name(pa.state));
		json_uint(j, "max_mtu", (uint64_t)mtu_bytes(pa.max_mtu));
		json_uint(j, "active_mtu", (uint64_t)mtu_bytes(pa.active_mtu));
		json_string(j, "link_layer", link_layer_name(pa.link_layer));
		json_uint(j, "lid", pa.lid);
		json_uint(j, "sm_lid", pa.sm_lid);
		json_uint(j, "gid_tbl_len", pa.gid_tbl_len);
		if (verbose) {
			json_uint(j, "port_cap_flags", pa.port_cap_flags);
			json_uint(j, "max_msg_sz", pa.max_msg_sz);
			json_uint(j, "pkey_tbl_len", pa.pkey_tbl_len);
			json_uint(j, "active_speed", pa.active_speed);
			json_uint(j, "active_width", pa.active_width);
			json_uint(j, "phys_state", pa.phys_state);
		}
		json_array_begin(j, "gids");
	} else {
		printf("\t\t\tstate:\t\t\t%s (%u)\n", port_state_name(pa.state), pa.state);
		printf("\t\t\tmax_mtu:\t\t%d (%u)\n", mtu_bytes(pa.max_mtu), pa.max_mtu);
		printf("\t\t\tactive_mtu:\t\t%d (%u)\n", mtu_bytes(pa.active_mtu), pa.active_mtu);
		printf("\t\t\tsm_lid:\t\t\t%u\n", pa.sm_lid);
		printf("\t\t\tport_lid:\t\t%u\n", pa.lid);
		printf("\t\t\tlink_layer:\t\t%s\n", link_layer_name(pa.link_layer));
		if (verbose) {
			printf("\t\t\tport_cap_flags:\t\t0x%08x\n", pa.port_cap_flags);
			printf("\t\t\tmax_msg_sz:\t\t0x%x\n", pa.max_msg_sz);
			printf("\t\t\tpkey_tbl_len:\t\t%u\n", pa.pkey_tbl_len);
			printf("\t\t\tgid_tbl_len:\t\t%u\n", pa.gid_tbl_len);
			printf("\t\t\tactive_speed:\t\t%u\n", pa.active_speed);
			printf("\t\t\tactive_width:\t\t%u\n", pa.active_width);
			printf("\t\t\tphys_state:\t\t%u\n", pa.phys_state);
		}
	}
	for (uint32_t i = 0; i < pa.gid_tbl_len; i++) {
		uint8_t gid[16];
		char text[48], type[32];
		rv_gid_entry ge;

		if (rv_context_query_gid(ctx, p, (int)i, gid) < 0 || (gid_is_zero(gid) && !verbose))
			continue;
		format_gid(gid, text, sizeof(text));
		gid_type(name, p, (int)i, gid, type, sizeof(type));
		/* The device's own word on the type, when it gives one. */
		if (rv_context_query_gid_entry(ctx, p, i, &ge) == 0 && ge.gid_type <= RV_GID_TYPE_ROCE_V2) {
			static const char *const names[] = {"IB/RoCE v1", "RoCE v1", "RoCE v2"};

			snprintf(type, sizeof(type), "%s", names[ge.gid_type]);
		}
		if (j) {
			json_object_begin(j, NULL);
			json_uint(j, "index", i);
			json_string(j, "gid", text);
			json_string(j, "type", type);
			json_object_end(j);
		} else {
			printf("\t\t\tGID[%3u]:\t\t%s, %s\n", i, text, type);
		}
	}
	if (j) {
		json_array_end(j);
		json_object_end(j);
	}
}

static int one_device(struct json *j, rv_device *dev, const struct info_opts *o)
{
	rv_device_attr d = {.mask = RV_DEVICE_ATTR_ALL};
	const char *name = rv_device_name(dev);
	rv_context *ctx = NULL;
	int rc = rv_context_new(dev, NULL, &ctx);

	if (rc == 0)
		rc = rv_context_query_device(ctx, &d);
	if (j) {
		json_object_begin(j, NULL);
		json_string(j, "name", name);
		json_string(j, "kind", rv_device_kind_of(dev) == RV_DEVICE_SOFT ? "soft" : "verbs");
	}
	if (rc < 0) {
		if (j) {
			json_string(j, "error", rv_error_last());
			json_object_end(j);
		} else {
			printf("hca_id:\t%s\n\terror:\t\t\t\t%s\n\n", name, rv_error_last());
		}
		rv_context_unref(ctx);
		return 1;
	}
	if (j) {
		json_device_attr(j, &d, o->verbose);
		json_array_begin(j, "ports");
	} else {
		text_device(dev, &d, o->verbose);
	}
	for (uint32_t p = 1; p <= d.phys_port_cnt && p < 256; p++)
		port_out(j, ctx, name, (uint8_t)p, o->verbose);
	if (j) {
		json_array_end(j);
		json_object_end(j);
	} else {
		printf("\n");
	}
	rv_context_close(ctx);
	rv_context_unref(ctx);
	return 0;
}

int cmd_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"device", required_argument, NULL, 'd'},
		{"ib-dev", required_argument, NULL, 'd'},
		{"verbose", no_argument, NULL, 'v'},
		{"json", no_argument, NULL, 'j'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	struct info_opts o = {0};
	rv_device **list;
	struct json js, *j = NULL;
	size_t n;
	int opt, rc, failed = 0, shown = 0;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "d:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd': o.dev = optarg; break;
		case 'v': o.verbose = true; break;
		case 'j': o.json = true; break;
		case 'h':
			printf("usage: rverbs info [-d DEV] [-v] [--json]\n");
			return 0;
		default:
			fprintf(stderr, "usage: rverbs info [-d DEV] [-v] [--json]\n");
			return 2;
		}
	}
	rc = rv_device_list(&list, &n);
	if (rc < 0)
		return tool_fail("rv_device_list", rc);
	if (o.json) {
		j = &js;
		json_init(j, stdout);
		json_object_begin(j, NULL);
		json_string(j, "rverbs_version", rv_version());
		json_array_begin(j, "devices");
	}
	for (size_t i = 0; i < n; i++) {
		if (o.dev && strcmp(o.dev, rv_device_name(list[i])) != 0)
			continue;
		failed |= one_device(j, list[i], &o);
		shown++;
	}
	if (j) {
		json_array_end(j);
		json_object_end(j);
		json_finish(j);
	} else if (n == 0) {
		printf("No RDMA devices found (and the software device is not built in).\n");
	}
	rv_device_list_free(list);
	if (o.dev && shown == 0) {
		fprintf(stderr, "rverbs info: no device is named \"%s\"\n", o.dev);
		return 1;
	}
	return failed;
}
