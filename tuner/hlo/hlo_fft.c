/* hlo_fft.c — reading an fft instruction's attributes (hlo_fft.h). */
#include "hlo_fft.h"

#include <stdlib.h>
#include <string.h>

static const char *raw_value(const hlo_instr *ins, const char *name) {
  for (int i = 0; i < ins->nraw; i++)
    if (strcmp(ins->raw[i].name, name) == 0)
      return ins->raw[i].value;
  return NULL;
}

/* "{8,4}": 1 to 3 positive sizes; the count, or -1. */
static int parse_lengths(const char *v, int64_t *len) {
  if (!v || *v != '{')
    return -1;
  int k = 0;
  v++;
  for (;;) {
    while (*v == ' ' || *v == ',')
      v++;
    if (*v == '}')
      return k > 0 && v[1] == 0 ? k : -1;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (end == v || k == 3 || x <= 0)
      return -1;
    len[k++] = x;
    v = end;
  }
}

static const char *const names[] = {"FFT", "IFFT", "RFFT", "IRFFT"};

const char *hlo_fft_read(const hlo_instr *ins, hlo_fft *out) {
  memset(out, 0, sizeof *out);
  const char *type = raw_value(ins, "fft_type");
  int t = -1;
  for (int i = 0; type && i < 4; i++)
    if (strcmp(type, names[i]) == 0)
      t = i;
  if (t < 0)
    return "fft_type must be FFT, IFFT, RFFT or IRFFT";
  out->type = (hlo_fft_type)t;
  out->rank = parse_lengths(raw_value(ins, "fft_length"), out->len);
  if (out->rank < 0)
    return "fft_length must list 1 to 3 positive sizes";
  return NULL;
}

int hlo_fft_of(const hlo_instr *ins, hlo_fft *out, hlo_error *err) {
  const char *why = hlo_fft_read(ins, out);
  return why ? hlo_error_set(err, ins->line, ins->col, "%s: %s", ins->name, why) : 0;
}

const char *hlo_fft_type_name(hlo_fft_type t) {
  return (unsigned)t < 4 ? names[t] : "?";
}
