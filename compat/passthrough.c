/*
 * Loading the system's real libibverbs (see passthrough.h for why it lives
 * in a namespace of its own). Never calls into rverbs.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "passthrough.h"

struct compat_real compat_real;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static bool loaded;
static Lmid_t real_lmid; /* the real library's namespace, once loaded */
static bool have_lmid;

/* Where the real library is: RVERBS_COMPAT_REAL (a path, or "none"), else the
 * path meson found at build time. */
static const char *real_path(void)
{
	const char *env = getenv("RVERBS_COMPAT_REAL");

	return env && *env ? env : COMPAT_REAL_LIBIBVERBS;
}

static void load(void)
{
	const char *path = real_path();
	struct compat_real r = {0};
	Lmid_t lmid;
	void *h, *libc;

	if (strcmp(path, "none") == 0)
		return;
	/* Without the kernel's verbs class there is nothing to pass through:
	 * do not pay for a second libc. */
	if (access("/sys/class/infiniband_verbs", F_OK) != 0)
		return;
	h = dlmopen(LM_ID_NEWLM, path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		if (getenv("RVERBS_COMPAT_DEBUG"))
			fprintf(stderr, "rverbs compat: cannot load %s: %s\n", path, dlerror());
		return;
	}
/* memcpy: ISO C has no cast between object and function pointers. */
#define COMPAT_REAL_LOOKUP(ver, name)                                          \
	do {                                                                   \
		void *sym_ = dlvsym(h, #name, ver);                            \
		memcpy(&r.name, &sym_, sizeof(sym_));                          \
	} while (0);
	COMPAT_REAL_FUNCS(COMPAT_REAL_LOOKUP)
#undef COMPAT_REAL_LOOKUP
	/* The path may name this very layer (installed over the system's): then
	 * there is no real library to reach. */
	if (!r.ibv_get_device_list || r.ibv_get_device_list == &ibv_get_device_list) {
		dlclose(h);
		return;
	}
	if (dlinfo(h, RTLD_DI_LMID, &lmid) == 0) {
		real_lmid = lmid;
		have_lmid = true;
		libc = dlmopen(lmid, "libc.so.6", RTLD_NOW | RTLD_NOLOAD);
		if (libc) {
			void *sym = dlsym(libc, "__errno_location");

			memcpy(&r.errno_location, &sym, sizeof(sym));
		}
	}
#ifdef COMPAT_HAVE_PRIVATE
	compat_private_resolve(h);
#endif
	compat_real = r;
	loaded = true;
}

bool compat_real_load(void)
{
	pthread_once(&load_once, load);
	return loaded;
}

void compat_real_errno(void)
{
	if (compat_real.errno_location)
		errno = *compat_real.errno_location();
}

/* The system's librdmacm, for the layer's librdmacm (cm-real.c): loaded by
 * absolute path into the real libibverbs' namespace, so that its verbs calls
 * reach the real libibverbs and its providers, never this layer. */
static pthread_once_t rdmacm_once = PTHREAD_ONCE_INIT;
static void *rdmacm_handle;

static void load_rdmacm(void)
{
	const char *path = getenv("RVERBS_COMPAT_REAL_RDMACM");

	if (!path || !*path)
		path = COMPAT_REAL_LIBRDMACM;
	if (strcmp(path, "none") == 0 || !compat_real_load() || !have_lmid)
		return;
	rdmacm_handle = dlmopen(real_lmid, path, RTLD_NOW | RTLD_LOCAL);
	if (!rdmacm_handle && getenv("RVERBS_COMPAT_DEBUG"))
		fprintf(stderr, "rverbs compat: cannot load %s: %s\n", path, dlerror());
}

__attribute__((visibility("default"))) void *rverbs_compat_real_rdmacm(void)
{
	pthread_once(&rdmacm_once, load_rdmacm);
	return rdmacm_handle;
}
