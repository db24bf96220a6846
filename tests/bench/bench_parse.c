/* bench_parse.c — parser throughput on a generated module.
 *
 * Usage: bench_parse FILE [MB]
 * Writes a module of about MB megabytes (default 50) to FILE when FILE does
 * not exist, then parses it several times and prints the best rate.  The
 * module mixes what real dumps contain: layouts, metadata, constants, tuples,
 * calls, so the figure is not flattered by a trivial token stream.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hlo/hlo_parse.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int generate(const char *path, long mb) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fputs("HloModule bench, is_scheduled=true, entry_computation_layout={(f32[8,128]{1,0}, "
        "f32[8,128]{1,0})->f32[8,128]{1,0}}\n\n"
        "add_f32 {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
        "  ROOT s = f32[] add(a, b)\n}\n\n",
        f);
  long target = mb * 1000000L, comp = 0;
  while (ftell(f) < target) {
    fprintf(f, "fused_%ld {\n  p0 = f32[8,128]{1,0:T(8,128)} parameter(0)\n"
               "  p1 = f32[8,128]{1,0:T(8,128)} parameter(1)\n", comp);
    const char *ops[] = {"add", "multiply", "subtract", "maximum"};
    for (int i = 0; i < 400; i++) {
      const char *a = i == 0 ? "p0" : NULL;
      char prev[32];
      if (!a) {
        snprintf(prev, sizeof prev, "v.%d", i - 1);
        a = prev;
      }
      if (i % 50 == 7)
        fprintf(f, "  v.%d = f32[8,128]{1,0} broadcast(f32[] c.%d), dimensions={}\n"
                   "  c.%d = f32[] constant(0.125)\n",
                i, i, i);
      else
        fprintf(f,
                "  v.%d = f32[8,128]{1,0:T(8,128)} %s(f32[8,128]{1,0} %s, f32[8,128]{1,0} p1), "
                "metadata={op_type=\"%s\" op_name=\"jit(step)/layer_%d/%s\" "
                "source_file=\"model.py\" source_line=%d}\n",
                i, ops[i % 4], a, ops[i % 4], i / 10, ops[i % 4], 100 + i);
    }
    fprintf(f, "  r = f32[8] reduce(v.399, c.7), dimensions={1}, to_apply=add_f32\n"
               "  ROOT t = (f32[8,128]{1,0}, f32[8]{0}) tuple(v.399, r)\n}\n\n");
    comp++;
  }
  fputs("ENTRY main {\n  a = f32[8,128]{1,0} parameter(0)\n  b = f32[8,128]{1,0} parameter(1)\n"
        "  f = (f32[8,128]{1,0}, f32[8]{0}) fusion(a, b), kind=kLoop, calls=fused_0\n"
        "  ROOT g = f32[8,128]{1,0} get-tuple-element(f), index=0\n}\n",
        f);
  return fclose(f);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: bench_parse FILE [MB]\n");
    return 2;
  }
  long mb = argc > 2 ? atol(argv[2]) : 50;
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    if (generate(argv[1], mb) != 0) {
      perror(argv[1]);
      return 2;
    }
    f = fopen(argv[1], "rb");
  }
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)len);
  if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len) {
    fprintf(stderr, "bench_parse: cannot read %s\n", argv[1]);
    return 2;
  }
  fclose(f);
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    hlo_error err;
    double t0 = now();
    hlo_module *m = hlo_parse(buf, (size_t)len, &err);
    double t = now() - t0;
    if (!m) {
      fprintf(stderr, "bench_parse: %d:%d: %s\n", err.line, err.col, err.msg);
      return 1;
    }
    hlo_module_free(m);
    if (t < best)
      best = t;
  }
  printf("parse: %.1f MB in %.3f s = %.1f MB/s\n", (double)len / 1e6, best, (double)len / 1e6 / best);
  free(buf);
  return 0;
}
