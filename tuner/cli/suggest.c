/* suggest.c — closest names (suggest.h). */
#define _DEFAULT_SOURCE /* strndup */
#include "suggest.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/dev_defect.h"
#include "device/dev_machine.h"
#include "check/inputs.h"

/* Optimal string alignment distance, capped at cap + 1. */
static int distance(const char *a, const char *b, int cap) {
  int n = (int)strlen(a), m = (int)strlen(b);
  if (n > 64 || m > 64 || abs(n - m) > cap)
    return cap + 1;
  int d[65][65];
  for (int i = 0; i <= n; i++)
    d[i][0] = i;
  for (int j = 0; j <= m; j++)
    d[0][j] = j;
  for (int i = 1; i <= n; i++)
    for (int j = 1; j <= m; j++) {
      int cost = a[i - 1] != b[j - 1];
      int v = d[i - 1][j] + 1;
      if (d[i][j - 1] + 1 < v)
        v = d[i][j - 1] + 1;
      if (d[i - 1][j - 1] + cost < v)
        v = d[i - 1][j - 1] + cost;
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
        v = d[i - 2][j - 2] + 1;
      d[i][j] = v;
    }
  return d[n][m];
}

const char *tn_suggest(const char *word, const char *const *names, int n) {
  if (!word || !*word)
    return NULL;
  int len = (int)strlen(word), cap = len / 3 > 1 ? len / 3 : 1;
  const char *best = NULL, *prefixed = NULL;
  int best_d = cap + 1, nprefixed = 0;
  for (int i = 0; i < n; i++) {
    int dd = distance(word, names[i], cap);
    if (dd < best_d) {
      best_d = dd;
      best = names[i];
    }
    if (strncmp(names[i], word, (size_t)len) == 0) {
      prefixed = names[i];
      nprefixed++;
    }
  }
  if (best)
    return best;
  return nprefixed == 1 ? prefixed : NULL;
}

void tn_names_free(const char **names, char **owned, int n) {
  for (int i = 0; owned && i < n; i++)
    free(owned[i]);
  free(owned);
  free(names);
}

static int as_const(char **owned, int n, const char ***names) {
  *names = calloc((size_t)(n > 0 ? n : 1), sizeof **names);
  if (!*names)
    return 0;
  for (int i = 0; i < n; i++)
    (*names)[i] = owned[i];
  return n;
}

int tn_names_machines(const char ***names, char ***owned) {
  hlo_error err = {0};
  *names = NULL;
  *owned = NULL;
  int n = dev_machine_list(owned, &err);
  if (n <= 0)
    return 0;
  if (as_const(*owned, n, names) == 0) {
    tn_names_free(NULL, *owned, n);
    *owned = NULL;
    return 0;
  }
  return n;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int tn_names_compilers(const char ***names, char ***owned) {
  *names = NULL;
  *owned = NULL;
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/compilers", dev_configs_dir());
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  char **v = NULL;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len <= 4 || strcmp(e->d_name + len - 4, ".cfg") != 0)
      continue;
    char **nv = realloc(v, sizeof *v * (size_t)(n + 1));
    if (!nv)
      break;
    v = nv;
    if ((v[n] = strndup(e->d_name, len - 4)))
      n++;
  }
  closedir(d);
  if (n == 0) {
    free(v);
    return 0;
  }
  qsort(v, (size_t)n, sizeof *v, cmp_str);
  *owned = v;
  if (as_const(v, n, names) == 0) {
    tn_names_free(NULL, v, n);
    *owned = NULL;
    return 0;
  }
  return n;
}

int tn_names_defects(const char ***names) {
  *names = calloc(DEV_DEFECT_COUNT, sizeof **names);
  if (!*names)
    return 0;
  for (int i = 0; i < DEV_DEFECT_COUNT; i++)
    (*names)[i] = dev_defect_name((dev_defect)i);
  return DEV_DEFECT_COUNT;
}

int tn_names_profiles(const char ***names) {
  *names = calloc(CHK_INPUTS_PROFILE_COUNT, sizeof **names);
  if (!*names)
    return 0;
  for (int i = 0; i < CHK_INPUTS_PROFILE_COUNT; i++)
    (*names)[i] = chk_inputs_profile_name((chk_inputs_profile)i);
  return CHK_INPUTS_PROFILE_COUNT;
}
