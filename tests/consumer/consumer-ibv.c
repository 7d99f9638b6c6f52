/* The escape hatch must compile with only the pkg-config flags of rverbs. */
#include <rverbs/ibv.h>

int consumer_ibv_hatch(void);

int consumer_ibv_hatch(void)
{
	struct ibv_qp *raw = rv_qp_ibv(NULL);

	return raw == NULL ? 0 : 1;
}
