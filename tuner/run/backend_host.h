/* backend_host.h — the services tune hands the device (dev_host,
 * dev_host.h): to a loaded backend when it is attached, and to the built-in
 * device through every dev_fusion the tuner builds (dev_fusion.host).  They
 * live in the tuner because they are check's: the device layer declares
 * what it may ask for, and only the layer above both can answer with the
 * reference evaluator.
 */
#ifndef TUNE_BACKEND_HOST_H
#define TUNE_BACKEND_HOST_H

#include "device/dev_host.h"

/* The host's services, static and valid for the life of the process. */
const dev_host *tn_backend_host(void);

#endif
