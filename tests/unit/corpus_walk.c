/* corpus_walk.c — see corpus_walk.h. */
#define _POSIX_C_SOURCE 200809L /* strdup, opendir */

#include "corpus_walk.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *cw_corpus_dir(int argc, char **argv) {
  if (argc > 1)
    return argv[1];
  const char *env = getenv("TUNE_CORPUS");
  return env && *env ? env : NULL;
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

int cw_list_hlo(const char *dir, cw_names *out) {
  *out = (cw_names){0};
  if (!dir || !*dir) {
    printf("TUNE_CORPUS is not set; skipping\n");
    return CW_SKIP;
  }
  DIR *d = opendir(dir);
  if (!d) {
    printf("corpus folder %s: %s; skipping\n", dir, strerror(errno));
    return CW_SKIP;
  }
  size_t cap = 0;
  bool oom = false;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (!has_suffix(e->d_name, ".hlo"))
      continue;
    if (out->count == cap) {
      cap = cap ? 2 * cap : 256;
      char **nn = realloc(out->name, cap * sizeof *out->name);
      if (!nn) {
        perror("realloc");
        oom = true;
        break;
      }
      out->name = nn;
    }
    if (!(out->name[out->count] = strdup(e->d_name))) {
      perror("strdup");
      oom = true;
      break;
    }
    out->count++;
  }
  closedir(d);
  if (oom) {
    cw_names_free(out);
    return 2;
  }
  qsort(out->name, out->count, sizeof *out->name, cmp_names);
  return 0;
}

void cw_names_free(cw_names *names) {
  for (size_t i = 0; i < names->count; i++)
    free(names->name[i]);
  free(names->name);
  *names = (cw_names){0};
}

char *cw_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap)
      break;
    char *nb = realloc(buf, cap *= 2);
    if (!nb)
      free(buf);
    buf = nb;
  }
  if (buf && ferror(f)) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  *len = n;
  return buf;
}
