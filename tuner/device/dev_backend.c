/* dev_backend.c — loading another backend from a shared object.
 *
 * The object exports `tune_backend_v1`, a dev_backend whose abi field must
 * be DEV_BACKEND_ABI and whose every function pointer is set; anything else
 * is refused with a message naming the file.  The handle is never closed:
 * the backend's functions stay in use until the process exits.
 */
#include "dev_backend.h"

#include <dlfcn.h>

int dev_backend_load(const char *path, const dev_backend **out, hlo_error *err) {
  *out = NULL;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    return hlo_error_set(err, 0, 0, "%s: cannot load backend: %s", path, e ? e : "unknown error");
  }
  const dev_backend *b = dlsym(h, "tune_backend_v1");
  if (!b) {
    dlclose(h);
    return hlo_error_set(err, 0, 0, "%s: no symbol tune_backend_v1", path);
  }
  if (b->abi != DEV_BACKEND_ABI) {
    int abi = b->abi;
    dlclose(h);
    return hlo_error_set(err, 0, 0, "%s: backend ABI %d, this tune needs %d", path, abi, DEV_BACKEND_ABI);
  }
  if (!b->name || !b->space || !b->compile || !b->run || !b->cost || !b->release) {
    dlclose(h);
    return hlo_error_set(err, 0, 0, "%s: backend leaves a required function unset", path);
  }
  *out = b;
  return 0;
}
