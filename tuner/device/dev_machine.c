/* dev_machine.c — machine model files. */
#include "dev_machine.h"

#include "dev_cfgfile.h"

#include <dirent.h>
#include <errno.h>
#include <libconfig.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef TUNE_DATADIR
#define TUNE_DATADIR "/usr/local/share/tune"
#endif
#ifndef TUNE_SRC_CONFIGS
#define TUNE_SRC_CONFIGS ""
#endif

typedef enum { K_INT, K_INT64, K_FLOAT, K_STRING } key_kind;

typedef struct {
  const char *path; /* dotted path under `machine` */
  key_kind kind;
  size_t offset;
  size_t size; /* for strings */
} key_spec;

#define OFF(f) offsetof(dev_machine, f)
static const key_spec keys[] = {
    {"name", K_STRING, OFF(name), sizeof(((dev_machine *)0)->name)},
    {"description", K_STRING, OFF(description), sizeof(((dev_machine *)0)->description)},
    {"cores", K_INT, OFF(cores), 0},
    {"clock_mhz", K_FLOAT, OFF(clock_mhz), 0},
    {"vreg.sublanes", K_INT, OFF(sublanes), 0},
    {"vreg.lanes", K_INT, OFF(lanes), 0},
    {"vmem_bytes", K_INT64, OFF(vmem_bytes), 0},
    {"hbm.bytes", K_INT64, OFF(hbm_bytes), 0},
    {"hbm.bandwidth_gbps", K_FLOAT, OFF(hbm_gbps), 0},
    {"mxu.count", K_INT, OFF(mxu_count), 0},
    {"mxu.rows", K_INT, OFF(mxu_rows), 0},
    {"mxu.cols", K_INT, OFF(mxu_cols), 0},
    {"mxu.bf16_tflops", K_FLOAT, OFF(mxu_bf16_tflops), 0},
    {"mxu.int8_tops", K_FLOAT, OFF(mxu_int8_tops), 0},
    {"mxu.f32_passes", K_INT, OFF(f32_passes), 0},
    {"vpu_gops", K_FLOAT, OFF(vpu_gops), 0},
    {"eup_gops", K_FLOAT, OFF(eup_gops), 0},
    {"step_overhead_ns", K_FLOAT, OFF(step_overhead_ns), 0},
    {"dma_latency_ns", K_FLOAT, OFF(dma_latency_ns), 0},
};
enum { NKEYS = sizeof keys / sizeof keys[0] };

/* Is `path` (dotted, relative to `machine`) a known key or group? */
static int known(const char *path) {
  size_t n = strlen(path);
  for (int i = 0; i < NKEYS; i++) {
    if (strcmp(keys[i].path, path) == 0)
      return 1;
    if (strncmp(keys[i].path, path, n) == 0 && keys[i].path[n] == '.')
      return 2; /* a group */
  }
  return 0;
}

/* Rejects any setting under g that is not in the key table. */
static int check_unknown(const char *file, config_setting_t *g, const char *prefix, hlo_error *err) {
  int n = config_setting_length(g);
  for (int i = 0; i < n; i++) {
    config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
    const char *nm = config_setting_name(s);
    char path[128];
    snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", nm ? nm : "?");
    int k = nm ? known(path) : 0;
    int line = config_setting_source_line(s);
    if (!k)
      return hlo_error_set(err, line, 0, "%s:%d: unknown key 'machine.%s'", file, line, path);
    if (k == 2) {
      if (config_setting_type(s) != CONFIG_TYPE_GROUP)
        return hlo_error_set(err, line, 0, "%s:%d: 'machine.%s' must be a group { ... }", file, line, path);
      if (check_unknown(file, s, path, err) != 0)
        return -1;
    }
  }
  return 0;
}

static int read_key(const char *file, config_setting_t *m, const key_spec *k, dev_machine *out,
                    hlo_error *err) {
  config_setting_t *s = config_setting_lookup(m, k->path);
  int gline = config_setting_source_line(m);
  if (!s)
    return hlo_error_set(err, gline, 0, "%s:%d: missing key 'machine.%s'", file, gline, k->path);
  int line = config_setting_source_line(s);
  char *dst = (char *)out + k->offset;
  int type = config_setting_type(s);
  switch (k->kind) {
  case K_STRING: {
    const char *v = config_setting_get_string(s);
    if (!v)
      return hlo_error_set(err, line, 0, "%s:%d: 'machine.%s' must be a string", file, line, k->path);
    snprintf(dst, k->size, "%s", v);
    return 0;
  }
  case K_INT:
  case K_INT64: {
    if (type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64)
      return hlo_error_set(err, line, 0, "%s:%d: 'machine.%s' must be an integer", file, line, k->path);
    long long v = config_setting_get_int64(s);
    if (v <= 0 && strcmp(k->path, "mxu.int8_tops") != 0)
      return hlo_error_set(err, line, 0, "%s:%d: 'machine.%s' must be positive", file, line, k->path);
    if (k->kind == K_INT) {
      if (v > 1 << 30)
        return hlo_error_set(err, line, 0, "%s:%d: 'machine.%s' is too large", file, line, k->path);
      int iv = (int)v;
      memcpy(dst, &iv, sizeof iv);
    } else {
      int64_t lv = v;
      memcpy(dst, &lv, sizeof lv);
    }
    return 0;
  }
  case K_FLOAT: {
    double v;
    if (type == CONFIG_TYPE_FLOAT)
      v = config_setting_get_float(s);
    else if (type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64)
      v = (double)config_setting_get_int64(s);
    else
      return hlo_error_set(err, line, 0, "%s:%d: 'machine.%s' must be a number", file, line, k->path);
    int may_be_zero = strcmp(k->path, "mxu.int8_tops") == 0;
    if (!(v > 0) && !(may_be_zero && v == 0))
      return hlo_error_set(err, line, 0, "%s:%d: 'machine.%s' must be positive", file, line, k->path);
    memcpy(dst, &v, sizeof v);
    return 0;
  }
  }
  return -1;
}

int dev_machine_load(const char *path, dev_machine *out, hlo_error *err) {
  config_t cfg;
  memset(out, 0, sizeof *out);
  config_setting_t *m = dev_cfgfile_open(&cfg, path, "machine file", "machine", err);
  int rc = m ? check_unknown(path, m, "", err) : -1;
  for (int i = 0; i < NKEYS && rc == 0; i++)
    rc = read_key(path, m, &keys[i], out, err);
  config_destroy(&cfg);
  return rc;
}

static int is_dir(const char *p) {
  struct stat st;
  return p && p[0] && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

const char *dev_configs_dir(void) {
  const char *env = getenv("TUNE_CONFIGS");
  if (env && env[0])
    return env;
  if (is_dir(TUNE_SRC_CONFIGS))
    return TUNE_SRC_CONFIGS;
  return TUNE_DATADIR;
}

int dev_machine_find(const char *name, dev_machine *out, hlo_error *err) {
  if (strchr(name, '/'))
    return dev_machine_load(name, out, err);
  char path[4096];
  snprintf(path, sizeof path, "%s/machines/%s.cfg", dev_configs_dir(), name);
  /* access(), not fopen(): fopen allocates, and a host out of memory
   * must not pass for a mistyped name. */
  if (access(path, F_OK) != 0 && (errno == ENOENT || errno == ENOTDIR))
    return hlo_error_set(err, 0, 0, "unknown machine '%s' (no %s; see tune --list-machines)", name, path);
  return dev_machine_load(path, out, err);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int dev_machine_list(char ***names, hlo_error *err) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/machines", dev_configs_dir());
  DIR *d = opendir(dir);
  if (!d)
    return hlo_error_set(err, 0, 0, "%s: cannot open the machines directory", dir);
  char **v = NULL;
  int n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len <= 4 || strcmp(e->d_name + len - 4, ".cfg") != 0)
      continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 8;
      char **nv = realloc(v, sizeof *v * (size_t)cap);
      if (!nv)
        break;
      v = nv;
    }
    v[n] = strndup(e->d_name, len - 4);
    if (v[n])
      n++;
  }
  closedir(d);
  qsort(v, (size_t)n, sizeof *v, cmp_str);
  *names = v;
  return n;
}
