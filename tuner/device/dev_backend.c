/* dev_backend.c — loading another backend from a shared object.
 *
 * The object exports `tune_backend_v1`, a dev_backend whose abi field must
 * be DEV_BACKEND_ABI and whose every function pointer is set; anything else
 * is refused with a message naming the file.  An optional
 * `tune_backend_attach_v1` receives the host's services (dev_host).  The handle is never closed:
 * the backend's functions stay in use until the process exits.
 *
 * A path without a slash names a file in the current folder, as every
 * other file argument of tune does; dlopen alone would instead search the
 * loader's library path for it and report a confusing "not found".
 */
#include "dev_backend.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int dev_backend_load(const char *path, const dev_host *host, const dev_backend **out, hlo_error *err) {
  *out = NULL;
  char *local = NULL;
  const char *open_path = path;
  if (!strchr(path, '/')) {
    local = malloc(strlen(path) + 3);
    if (!local)
      return hlo_error_set(err, 0, 0, "%s: out of memory", path);
    sprintf(local, "./%s", path);
    open_path = local;
  }
  void *h = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
  free(local);
  if (!h) {
    const char *e = dlerror();
    return hlo_error_set(err, 0, 0, "%s: cannot load backend: %s", path, e ? e : "unknown error");
  }
  const dev_backend *b = dlsym(h, "tune_backend_v1");
  if (!b) {
    dlclose(h);
    return hlo_error_set(err, 0, 0,
                         "%s: not a tune backend: no symbol tune_backend_v1 (a const dev_backend, see dev_backend.h)",
                         path);
  }
  if (b->abi != DEV_BACKEND_ABI) {
    int abi = b->abi;
    dlclose(h);
    return hlo_error_set(err, 0, 0, "%s: backend ABI %d, this tune needs %d (rebuild it against this dev_backend.h)",
                         path, abi, DEV_BACKEND_ABI);
  }
  const char *unset = !b->name      ? "name"
                      : !b->space   ? "space()"
                      : !b->compile ? "compile()"
                      : !b->run     ? "run()"
                      : !b->cost    ? "cost()"
                      : !b->release ? "release()"
                                    : NULL;
  if (unset) {
    char name[64];
    snprintf(name, sizeof name, "%s", b->name ? b->name : "?");
    dlclose(h);
    return hlo_error_set(err, 0, 0, "%s: backend '%s' leaves %s unset", path, name, unset);
  }
  /* Optional: a backend that uses the host's services asks for them. */
  void *sym = dlsym(h, "tune_backend_attach_v1");
  if (sym) {
    dev_backend_attach_fn *attach;
    memcpy(&attach, &sym, sizeof attach); /* object to function pointer, as POSIX dlsym allows */
    attach(host);
  }
  *out = b;
  return 0;
}
