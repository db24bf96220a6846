/* backend_host.h — the services tune hands a loaded backend (dev_host,
 * dev_backend.h).  They live in the tuner because they are check's: the
 * device layer declares what a backend may ask for, and only the layer
 * above both can answer with the reference evaluator.
 */
#ifndef TUNE_BACKEND_HOST_H
#define TUNE_BACKEND_HOST_H

#include "dev_backend.h"

/* The host's services, static and valid for the life of the process. */
const dev_host *tn_backend_host(void);

#endif
