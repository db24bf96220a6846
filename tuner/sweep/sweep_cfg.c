/* sweep_cfg.c — reading and using sweep files (sweep_cfg.h). */
#include "sweep_cfg.h"

#include <glob.h>
#include <libconfig.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/dev_cfgfile.h"
#include "hlo/hlo_hash.h"

const char *const tn_sweep_input_profiles[] = {"naive", "constrained", "edge", "oob-indices", "special", NULL};

static const char *const known_keys[] = {"corpus", "machines", "compiler", "inputs", "output", "budget",
                                         "time_budget", "threads", "seed", "run_id", "slowdown_threshold",
                                         "reports", "expected_failures", NULL};
static const char *const required_keys[] = {"corpus", "machines", "compiler", "inputs", "output", NULL};

static bool in_list(const char *const *list, const char *s) {
  for (; *list; list++)
    if (strcmp(*list, s) == 0)
      return true;
  return false;
}

/* A string setting copied into dst (non-empty, fits). */
static int get_str(const char *file, config_setting_t *s, const char *key, char *dst, size_t n, hlo_error *err) {
  int line = config_setting_source_line(s);
  const char *v = config_setting_get_string(s);
  if (!v)
    return hlo_error_set(err, line, 0, "%s:%d: '%s' must be a string", file, line, key);
  if (!v[0])
    return hlo_error_set(err, line, 0, "%s:%d: '%s' must not be empty", file, line, key);
  if (strlen(v) >= n)
    return hlo_error_set(err, line, 0, "%s:%d: '%s' is too long", file, line, key);
  memcpy(dst, v, strlen(v) + 1);
  return 0;
}

static int get_int(const char *file, config_setting_t *s, const char *key, long long max, long long *out,
                   hlo_error *err) {
  int line = config_setting_source_line(s), t = config_setting_type(s);
  if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64)
    return hlo_error_set(err, line, 0, "%s:%d: '%s' must be a non-negative integer", file, line, key);
  long long v = config_setting_get_int64(s);
  if (v < 0 || v > max)
    return hlo_error_set(err, line, 0, "%s:%d: '%s' must be an integer from 0 to %lld", file, line, key, max);
  *out = v;
  return 0;
}

static int get_real(const char *file, config_setting_t *s, const char *key, double *out, hlo_error *err) {
  int line = config_setting_source_line(s), t = config_setting_type(s);
  double v;
  if (t == CONFIG_TYPE_FLOAT)
    v = config_setting_get_float(s);
  else if (t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64)
    v = (double)config_setting_get_int64(s);
  else
    return hlo_error_set(err, line, 0, "%s:%d: '%s' must be a number", file, line, key);
  if (!(v >= 0) || v > 1e9)
    return hlo_error_set(err, line, 0, "%s:%d: '%s' must be a non-negative number", file, line, key);
  *out = v;
  return 0;
}

/* A non-empty array of strings, each copied into rows of width w. */
static int get_str_array(const char *file, config_setting_t *s, const char *key, char *rows, size_t w, int max,
                         int *n, hlo_error *err) {
  int line = config_setting_source_line(s);
  if (config_setting_type(s) != CONFIG_TYPE_ARRAY && config_setting_type(s) != CONFIG_TYPE_LIST)
    return hlo_error_set(err, line, 0, "%s:%d: '%s' must be an array of strings [ \"...\", ... ]", file, line, key);
  int len = config_setting_length(s);
  if (len == 0)
    return hlo_error_set(err, line, 0, "%s:%d: '%s' must not be empty", file, line, key);
  if (len > max)
    return hlo_error_set(err, line, 0, "%s:%d: '%s' has more than %d entries", file, line, key, max);
  for (int i = 0; i < len; i++)
    if (get_str(file, config_setting_get_elem(s, (unsigned)i), key, rows + (size_t)i * w, w, err) != 0)
      return -1;
  *n = len;
  return 0;
}

static int get_reports(const char *file, config_setting_t *s, tn_sweep_cfg *out, hlo_error *err) {
  int line = config_setting_source_line(s);
  if (config_setting_type(s) != CONFIG_TYPE_LIST)
    return hlo_error_set(err, line, 0, "%s:%d: 'sweep.reports' must be a list ( { format = ...; output = ...; } )",
                         file, line);
  int len = config_setting_length(s);
  if (len > TN_SWEEP_MAX_REPORTS)
    return hlo_error_set(err, line, 0, "%s:%d: 'sweep.reports' has more than %d entries", file, line,
                         TN_SWEEP_MAX_REPORTS);
  for (int i = 0; i < len; i++) {
    config_setting_t *r = config_setting_get_elem(s, (unsigned)i);
    int rl = config_setting_source_line(r);
    if (config_setting_type(r) != CONFIG_TYPE_GROUP)
      return hlo_error_set(err, rl, 0, "%s:%d: 'sweep.reports' entries must be groups { ... }", file, rl);
    for (int k = 0; k < config_setting_length(r); k++) {
      config_setting_t *e = config_setting_get_elem(r, (unsigned)k);
      const char *nm = config_setting_name(e);
      if (!nm || (strcmp(nm, "format") != 0 && strcmp(nm, "output") != 0)) {
        int el = config_setting_source_line(e);
        return hlo_error_set(err, el, 0, "%s:%d: unknown key 'sweep.reports.%s'", file, el, nm ? nm : "?");
      }
    }
    config_setting_t *f = config_setting_get_member(r, "format"), *o = config_setting_get_member(r, "output");
    if (!f || !o)
      return hlo_error_set(err, rl, 0, "%s:%d: missing key 'sweep.reports.%s'", file, rl, f ? "output" : "format");
    tn_sweep_report *rep = &out->reports[i];
    if (get_str(file, f, "sweep.reports.format", rep->format, sizeof rep->format, err) != 0 ||
        get_str(file, o, "sweep.reports.output", rep->output, sizeof rep->output, err) != 0)
      return -1;
    if (strcmp(rep->format, "html") != 0 && strcmp(rep->format, "md") != 0 && strcmp(rep->format, "json") != 0 &&
        strcmp(rep->format, "junit") != 0) {
      int fl = config_setting_source_line(f);
      return hlo_error_set(err, fl, 0, "%s:%d: 'sweep.reports.format' must be html, md, json or junit, not '%s'",
                           file, fl, rep->format);
    }
  }
  out->nreports = len;
  return 0;
}

static int read_sweep(const char *file, config_setting_t *g, tn_sweep_cfg *out, hlo_error *err) {
  for (int i = 0; i < config_setting_length(g); i++) {
    config_setting_t *s = config_setting_get_elem(g, (unsigned)i);
    const char *nm = config_setting_name(s);
    if (!nm || !in_list(known_keys, nm)) {
      int line = config_setting_source_line(s);
      return hlo_error_set(err, line, 0, "%s:%d: unknown key 'sweep.%s'", file, line, nm ? nm : "?");
    }
  }
  int gline = config_setting_source_line(g);
  for (const char *const *k = required_keys; *k; k++)
    if (!config_setting_get_member(g, *k))
      return hlo_error_set(err, gline, 0, "%s:%d: missing key 'sweep.%s'", file, gline, *k);
  config_setting_t *s;
  long long v;
  if (get_str_array(file, config_setting_get_member(g, "corpus"), "sweep.corpus", out->corpus[0],
                    sizeof out->corpus[0], TN_SWEEP_MAX_GLOBS, &out->ncorpus, err) != 0 ||
      get_str_array(file, config_setting_get_member(g, "machines"), "sweep.machines", out->machines[0],
                    sizeof out->machines[0], TN_SWEEP_MAX_MACHINES, &out->nmachines, err) != 0 ||
      get_str(file, config_setting_get_member(g, "compiler"), "sweep.compiler", out->compiler, sizeof out->compiler,
              err) != 0 ||
      get_str(file, config_setting_get_member(g, "output"), "sweep.output", out->output, sizeof out->output, err) != 0)
    return -1;
  s = config_setting_get_member(g, "inputs");
  int it = config_setting_type(s);
  if (it == CONFIG_TYPE_ARRAY || it == CONFIG_TYPE_LIST) {
    if (get_str_array(file, s, "sweep.inputs", out->inputs[0], sizeof out->inputs[0], TN_SWEEP_MAX_PROFILES,
                      &out->ninputs, err) != 0)
      return -1;
  } else if (get_str(file, s, "sweep.inputs", out->inputs[0], sizeof out->inputs[0], err) != 0) {
    return -1;
  } else {
    out->ninputs = 1;
  }
  for (int i = 0; i < out->ninputs; i++)
    if (!in_list(tn_sweep_input_profiles, out->inputs[i])) {
      config_setting_t *e = it == CONFIG_TYPE_ARRAY || it == CONFIG_TYPE_LIST ? config_setting_get_elem(s, (unsigned)i) : s;
      int line = config_setting_source_line(e ? e : s);
      return hlo_error_set(err, line, 0, "%s:%d: 'sweep.inputs' must be an input profile (naive, constrained, edge, oob-indices, special), not '%s'",
                           file, line, out->inputs[i]);
    }
  if ((s = config_setting_get_member(g, "budget"))) {
    if (get_int(file, s, "sweep.budget", 1000000, &v, err) != 0)
      return -1;
    out->budget = (int)v;
  }
  if ((s = config_setting_get_member(g, "time_budget")) &&
      get_real(file, s, "sweep.time_budget", &out->time_budget, err) != 0)
    return -1;
  if ((s = config_setting_get_member(g, "threads"))) {
    if (get_int(file, s, "sweep.threads", 1024, &v, err) != 0)
      return -1;
    out->threads = (int)v;
  }
  if ((s = config_setting_get_member(g, "seed"))) {
    if (get_int(file, s, "sweep.seed", INT64_MAX, &v, err) != 0)
      return -1;
    out->seed = (uint64_t)v;
  }
  if ((s = config_setting_get_member(g, "run_id"))) {
    if (get_str(file, s, "sweep.run_id", out->run_id, sizeof out->run_id - 24, err) != 0)
      return -1;
    if (strchr(out->run_id, '/')) {
      int line = config_setting_source_line(s);
      return hlo_error_set(err, line, 0, "%s:%d: 'sweep.run_id' must not contain '/'", file, line);
    }
  }
  if ((s = config_setting_get_member(g, "slowdown_threshold")) &&
      get_real(file, s, "sweep.slowdown_threshold", &out->slowdown_threshold, err) != 0)
    return -1;
  if ((s = config_setting_get_member(g, "reports")) && get_reports(file, s, out, err) != 0)
    return -1;
  if ((s = config_setting_get_member(g, "expected_failures")) &&
      get_str(file, s, "sweep.expected_failures", out->expected_failures, sizeof out->expected_failures, err) != 0)
    return -1;
  return 0;
}

int tn_sweep_cfg_load(const char *path, tn_sweep_cfg *out, hlo_error *err) {
  memset(out, 0, sizeof *out);
  snprintf(out->run_id, sizeof out->run_id, "%%Y%%m%%d");
  out->slowdown_threshold = 0.10;
  config_t cfg;
  /* The shared opener refuses unreadable files, parse errors and stray
   * top-level keys the way the machine and compiler readers do. */
  config_setting_t *g = dev_cfgfile_open(&cfg, path, "the sweep file", "sweep", err);
  int rc = g ? read_sweep(path, g, out, err) : -1;
  config_destroy(&cfg);
  return rc;
}

int tn_sweep_expand(const char *pattern, time_t t, char *buf, size_t n, hlo_error *err) {
  struct tm tm;
  if (!gmtime_r(&t, &tm))
    return hlo_error_set(err, 0, 0, "cannot convert the time");
  /* The pattern comes from the sweep file: that is the point of it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
  size_t w = strftime(buf, n, pattern, &tm);
#pragma GCC diagnostic pop
  if (w == 0)
    return hlo_error_set(err, 0, 0, "'%s' expands to nothing or to more than %zu bytes", pattern, n - 1);
  /* strftime's %n and %t are a newline and a tab: no file name or run id
   * should hold one (nor any other control character). */
  for (size_t i = 0; i < w; i++)
    if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
      return hlo_error_set(err, 0, 0, "'%s' expands to a name with a control character (%%n is a newline, %%t a tab)",
                           pattern);
  return 0;
}


const char *tn_sweep_inputs_of_day(const tn_sweep_cfg *c, time_t t) {
  int64_t day = (int64_t)t / 86400 - ((int64_t)t % 86400 < 0); /* floor, for times before 1970 */
  int64_t i = c->ninputs > 1 ? day % c->ninputs : 0;
  return c->inputs[i < 0 ? i + c->ninputs : i];
}

void tn_sweep_inputs_text(const tn_sweep_cfg *c, char *buf, size_t n) {
  size_t len = 0;
  if (n)
    buf[0] = 0;
  for (int i = 0; i < c->ninputs && len < n; i++) {
    int w = snprintf(buf + len, n - len, "%s%s", i ? "," : "", c->inputs[i]);
    if (w < 0)
      break;
    len += (size_t)w;
  }
}

void tn_sweep_identity(const tn_sweep_cfg *c, const char *machine, int shard_k, int shard_n, char *buf, size_t n) {
  char text[256], inputs[TN_SWEEP_MAX_PROFILES * 32];
  tn_sweep_inputs_text(c, inputs, sizeof inputs);
  uint64_t h = HLO_FNV_BASIS;
  for (int i = 0; i < c->ncorpus; i++) {
    h = hlo_fnv1a_str(h, c->corpus[i]);
    h = hlo_fnv1a_str(h, "\n");
  }
  snprintf(text, sizeof text, "|%d|%.17g|%llu|%d/%d|", c->budget, c->time_budget, (unsigned long long)c->seed,
           shard_k, shard_n);
  h = hlo_fnv1a_str(hlo_fnv1a_str(hlo_fnv1a_str(hlo_fnv1a_str(h, machine), c->compiler), inputs), text);
  snprintf(buf, n, "%016llx", (unsigned long long)h);
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int tn_sweep_corpus(const tn_sweep_cfg *c, char ***files, int *nfiles, hlo_error *err) {
  *files = NULL;
  *nfiles = 0;
  size_t n = 0;
  char **all = NULL;
  for (int i = 0; i < c->ncorpus; i++) {
    glob_t g;
    int rc = glob(c->corpus[i], 0, NULL, &g);
    if (rc == GLOB_NOMATCH) {
      tn_sweep_files_free(all, (int)n);
      return hlo_error_set(err, 0, 0, "corpus glob '%s' matches no file", c->corpus[i]);
    }
    if (rc != 0) {
      tn_sweep_files_free(all, (int)n);
      return hlo_error_set(err, 0, 0, "corpus glob '%s': %s", c->corpus[i],
                           rc == GLOB_NOSPACE ? "out of memory" : "cannot expand it");
    }
    char **grown = realloc(all, sizeof *all * (n + g.gl_pathc + 1));
    if (!grown) {
      globfree(&g);
      tn_sweep_files_free(all, (int)n);
      return hlo_error_set(err, 0, 0, "out of memory");
    }
    all = grown;
    for (size_t k = 0; k < g.gl_pathc; k++)
      all[n++] = strdup(g.gl_pathv[k]);
    globfree(&g);
  }
  for (size_t i = 0; i < n; i++)
    if (!all[i]) {
      tn_sweep_files_free(all, (int)n);
      return hlo_error_set(err, 0, 0, "out of memory");
    }
  qsort(all, n, sizeof *all, cmp_str);
  size_t kept = 0;
  for (size_t i = 0; i < n; i++) {
    if (kept > 0 && strcmp(all[kept - 1], all[i]) == 0) {
      free(all[i]);
      continue;
    }
    all[kept++] = all[i];
  }
  *files = all;
  *nfiles = (int)kept;
  return 0;
}

void tn_sweep_files_free(char **files, int n) {
  for (int i = 0; i < n; i++)
    free(files[i]);
  free(files);
}

int tn_sweep_shard_of(const char *path, int n) {
  return (int)(hlo_fnv1a_str(HLO_FNV_BASIS, path) % (uint64_t)n) + 1;
}
