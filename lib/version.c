/* The run-time version of the library. */
#include <rverbs/version.h>

#include "rverbs-private.h"

RV_EXPORT const char *rv_version(void)
{
	return RVERBS_VERSION_STRING;
}

RV_EXPORT uint32_t rv_version_number(void)
{
	return RVERBS_VERSION_MAJOR * 10000u + RVERBS_VERSION_MINOR * 100u + RVERBS_VERSION_PATCH;
}
