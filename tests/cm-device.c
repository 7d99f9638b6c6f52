/* The device and address the rdma_cm tests use (tests/cm-device.h). */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <rdma/rdma_cma.h>

#include "cm-device.h"

char cm_dev_name[64], cm_ip[64];

bool cm_device_find(void)
{
	struct rdma_event_channel *ch;
	struct ifaddrs *ifs, *i;
	const char *env = getenv("RVERBS_TEST_CM_ADDR");
	bool found = false;

	ch = rdma_create_event_channel();
	if (!ch || getifaddrs(&ifs) < 0)
		return false;
	for (i = ifs; i && !found; i = i->ifa_next) {
		struct rdma_cm_id *id = NULL;
		char a[64];
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, a, sizeof(a));
		if (env && strcmp(env, a) != 0)
			continue;
		if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) == 0) {
			if (rdma_bind_addr(id, i->ifa_addr) == 0 && id->verbs) {
				snprintf(cm_dev_name, sizeof(cm_dev_name), "%s", ibv_get_device_name(id->verbs->device));
				snprintf(cm_ip, sizeof(cm_ip), "%s", a);
				found = true;
			}
			rdma_destroy_id(id);
		}
	}
	freeifaddrs(ifs);
	rdma_destroy_event_channel(ch);
	return found;
}

rv_context *cm_ctx(void)
{
	rv_device *dev = NULL;
	rv_context *ctx = NULL;

	assert_int_equal(rv_device_find(cm_dev_name, &dev), 0);
	assert_int_equal(rv_context_new(dev, NULL, &ctx), 0);
	rv_device_unref(dev);
	return ctx;
}
