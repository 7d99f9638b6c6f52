/**
 * @file rverbs/rverbs.h
 * @brief The umbrella header: include this one.
 *
 * It includes every public family header except rverbs/ibv.h, the escape
 * hatch to raw libibverbs objects.
 */
#ifndef RVERBS_RVERBS_H
#define RVERBS_RVERBS_H

#include <rverbs/version.h>
#include <rverbs/common.h>
#include <rverbs/device.h>
#include <rverbs/context.h>
#include <rverbs/pd.h>
#include <rverbs/mr.h>
#include <rverbs/mr_cache.h>
#include <rverbs/pool.h>
#include <rverbs/cq.h>
#include <rverbs/endpoint.h>
#include <rverbs/qp.h>
#include <rverbs/ah.h>
#include <rverbs/srq.h>
#include <rverbs/xrcd.h>
#include <rverbs/mw.h>
#include <rverbs/event.h>
#include <rverbs/conn.h>
#include <rverbs/soft.h>

#endif
