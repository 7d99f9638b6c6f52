/**
 * @file rverbs/device.h
 * @brief Devices: listing, choosing the default, and reference counting.
 *
 * The device list merges the libibverbs devices (hardware, rxe, siw) with the
 * built-in software device `soft0`. The default device is the first libibverbs
 * device with an active port, else `soft0`; the environment variable
 * `RVERBS_DEVICE=name` picks one explicitly.
 */
#ifndef RVERBS_DEVICE_H
#define RVERBS_DEVICE_H

#include <rverbs/common.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Which driver serves a device. */
typedef enum rv_device_kind {
	RV_DEVICE_VERBS = 0, /**< a libibverbs device (NIC, rxe, siw, ...) */
	RV_DEVICE_SOFT = 1   /**< the software device built into rverbs */
} rv_device_kind;

/**
 * List every device. Each entry holds a reference; release the whole list with
 * rv_device_list_free().
 * @param ret_list  receives a NULL-terminated array of devices
 * @param ret_n     receives the number of devices (may be NULL)
 * @retval 0        success (the list holds at least `soft0` when the software
 *                  device is built in)
 * @retval -EINVAL  @p ret_list is NULL
 * @retval -ENOMEM  out of memory
 */
RV_API int rv_device_list(rv_device ***ret_list, size_t *ret_n);

/**
 * Release a list from rv_device_list(): unreference every entry and free the
 * array. Devices the caller referenced on its own stay valid. Accepts NULL.
 */
RV_API void rv_device_list_free(rv_device **list);

/**
 * Find a device by name.
 * @param name     device name, such as "soft0" or "mlx5_0"
 * @param ret_dev  receives a new reference
 * @retval 0        success
 * @retval -EINVAL  an argument is NULL
 * @retval -ENODEV  no device has that name
 */
RV_API int rv_device_find(const char *name, rv_device **ret_dev);

/**
 * The default device: `RVERBS_DEVICE` if set, else the first libibverbs device
 * with an active port, else `soft0`. rv_error_last() is not set on success;
 * the log (RV_LOG_INFO) says why the device was chosen.
 * @param ret_dev  receives a new reference
 * @retval 0        success
 * @retval -EINVAL  @p ret_dev is NULL
 * @retval -ENODEV  `RVERBS_DEVICE` names no device, or no device exists
 */
RV_API int rv_device_default(rv_device **ret_dev);

/** Take a reference on @p dev. Returns @p dev (NULL-safe). */
RV_API rv_device *rv_device_ref(rv_device *dev);

/** Drop a reference on @p dev; the last one frees it. Accepts NULL; returns NULL. */
RV_API rv_device *rv_device_unref(rv_device *dev);

/**
 * Close a device handle: every context opened on it is closed first (which
 * closes everything in those contexts). The handle stays valid memory until
 * its last unref.
 * @retval 0            success, or already closed
 * @retval -EINVAL      @p dev is NULL or not a device
 * @retval negative     a dependent could not be destroyed; nothing after it was
 *                      closed and the call may be retried
 */
RV_API int rv_device_close(rv_device *dev);

/** The device's name, or NULL for an invalid handle. */
RV_API const char *rv_device_name(const rv_device *dev);

/** The device's kind (an rv_device_kind), or a negative errno for an invalid handle. */
RV_API int rv_device_kind_of(const rv_device *dev);

#ifdef __cplusplus
}
#endif

#endif
