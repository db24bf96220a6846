/* eval_attr.c — see eval_attr.h. */
#include "eval_attr.h"

#include <stdlib.h>
#include <string.h>

int chk_parse_ints(const char *v, char open, char close, int64_t *out, int max) {
  if (!v || *v++ != open)
    return -1;
  int n = 0;
  for (;;) {
    while (*v == ' ' || *v == ',' || *v == '"' || *v == '\n' || *v == '\t')
      v++;
    if (*v == close)
      return n;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || n == max)
      return -1;
    out[n++] = x;
    v = end;
  }
}

int chk_raw_ints(const hlo_instr *ins, const char *name, int64_t *out, int max) {
  for (int i = 0; i < ins->nraw; i++)
    if (strcmp(ins->raw[i].name, name) == 0 && ins->raw[i].value)
      return chk_parse_ints(ins->raw[i].value, '{', '}', out, max);
  return -1;
}

char *chk_raw_attr(const hlo_instr *ins, const char *name) {
  for (int i = 0; i < ins->nraw; i++) {
    if (strcmp(ins->raw[i].name, name) != 0 || !ins->raw[i].value)
      continue;
    const char *v = ins->raw[i].value;
    size_t n = strlen(v);
    char *out = malloc(n + 1);
    if (!out)
      return NULL;
    if (n >= 2 && v[0] == '"' && v[n - 1] == '"') {
      size_t k = 0;
      for (size_t j = 1; j + 1 < n; j++) {
        if (v[j] == '\\' && j + 2 < n)
          j++;
        out[k++] = v[j];
      }
      out[k] = '\0';
    } else {
      memcpy(out, v, n + 1);
    }
    return out;
  }
  return NULL;
}

static const char *skip_blanks(const char *q) {
  while (*q == ' ' || *q == '\t' || *q == '\n')
    q++;
  return q;
}

const char *chk_json_value(const char *json, const char *key) {
  if (!json)
    return NULL;
  size_t kl = strlen(key);
  for (const char *p = strchr(json, '"'); p; p = strchr(p + 1, '"')) {
    if (strncmp(p + 1, key, kl) != 0 || p[1 + kl] != '"')
      continue;
    const char *q = skip_blanks(p + 2 + kl);
    if (*q != ':')
      continue;
    return skip_blanks(q + 1);
  }
  return NULL;
}

bool chk_json_number(const char *json, const char *key, double def, double *out) {
  const char *v = chk_json_value(json, key);
  *out = def;
  if (!v)
    return true;
  if (*v == '"')
    v++;
  char *end;
  double x = strtod(v, &end);
  if (end == v)
    return false;
  *out = x;
  return true;
}

int chk_json_ints(const char *json, const char *key, int64_t *out, int max) {
  const char *v = chk_json_value(json, key);
  return v ? chk_parse_ints(v, '[', ']', out, max) : 0;
}

bool chk_json_string(const char *json, const char *key, char *out, size_t n) {
  const char *v = chk_json_value(json, key);
  if (!v || *v != '"')
    return false;
  v++;
  size_t k = 0;
  while (*v && *v != '"' && k + 1 < n)
    out[k++] = *v++;
  out[k] = '\0';
  return true;
}
