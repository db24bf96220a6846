/* test_baseline.c — the device's false-positive baseline (issue 4, "Done
 * when"): with no defect enabled, for every fusion in datasets/ (*.hlo) and a
 * budget of legal candidates from its space, the device's output matches
 * the reference evaluator run with emulate_device.  The two are independent
 * implementations for every op the device lowers itself (issue 14; gather,
 * scatter, sort, dynamic-(update-)slice, reduce-window, convolution and
 * the collectives included), so this can fail; what the device still hands
 * to its host (dev_elemental.h: map, calls, complex numbers,
 * collective-broadcast, ...) reaches the reference and agrees by
 * construction.
 *
 * What "matches" means:
 *   - integer, pred and every output of a config that keeps the reference's
 *     order of accumulation (pack=1, no split-reduction, prec not above the
 *     dots' own operand_precision): bitwise.  The device folds chunks in
 *     ascending order into one running accumulator, which is exactly the
 *     reference's sequential order, so nothing may differ;
 *   - float outputs of configs that reorder (pack > 1, split-reduction) or
 *     raise dot precision: |dev - ref| <= 4 * K^2 * eps(acc) * max(1, |ref|),
 *     K the reduction length: each of the two orders is within K * eps * S
 *     of the exact sum, S = sum |terms| <= K for the synthesised inputs in
 *     [-1, 1) (|products| <= 1 too), with a factor 2 for the epilogue
 *     (normalisations divide by values that can be below 1).  Loose by
 *     design: the bitwise class above is the sharp check.
 *   - the output of an fft root (the device's own DFT, tuner/device/dev_fft.c,
 *     against FFTW in the reference): within the derived bound of
 *     check/tol_fft.h for the config's depth against the reference's, part
 *     by part.  The two are different algorithms, so the default must not
 *     equal the reference bit for bit (that would mean the device fell back
 *     to the reference's transform), and the default's output with one
 *     element moved just beyond its bound must fail the same comparison
 *     (so the bound is not vacuous);
 *   - transcendental ops get no allowance: the reference emulates the
 *     device's approximations and FTZ (emulate_device), so they follow the
 *     two rules above like everything else.
 * Budget: the default plus up to BUDGET candidates per fusion (fewer, down
 * to 2, when the reference evaluation of the fusion takes more than 0.25 s:
 * about 3 s of reference time per fusion, and at most 4 above 1e8 flops),
 * spread evenly over the space's
 * list (up to 256 long), to keep the run within about two minutes.  Prints "N (fusion, candidate) pairs checked,
 * M mismatches"; exit 1 on any mismatch, 77 when datasets/ has no fusion.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run/backend_host.h"
#include "device/dev_backend.h"
#include "device/dev_fft.h"
#include "device/dev_fusion.h"
#include "hlo/hlo_numerics.h"
#include "device/dev_space.h"
#include "check/eval.h"
#include "hlo/hlo_parse.h"
#include "check/inputs.h"
#include "check/tol_fft.h"

#define BUDGET 12

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *buf = malloc((size_t)n + 1);
  if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf) {
    buf[n] = 0;
    *len = (size_t)n;
  }
  return buf;
}

static int cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static double eps_of(hlo_etype t) {
  switch (t) {
  case HLO_F64: return 0x1p-52;
  case HLO_F32: return 0x1p-23;
  case HLO_BF16: return 0x1p-7;
  case HLO_F16: return 0x1p-10;
  default: return 0x1p-3; /* f8 */
  }
}

/* Does cfg keep the reference's accumulation order and precision? */
static int order_preserving(const dev_fusion *f, const dev_config *c) {
  if (c->pack > 1 || (c->flags & DEV_FLAG_SPLIT_REDUCTION))
    return 0;
  for (int i = 0; i < f->comp->ninstrs; i++) {
    const hlo_instr *ins = f->comp->instrs[i];
    if (ins->op == HLO_OP_DOT && hlo_num_dot_precision(ins, c->prec) != hlo_num_dot_precision(ins, DEV_PREC_DEFAULT))
      return 0;
  }
  return 1;
}

typedef struct stats {
  long pairs, mismatches, bitwise, bounded, compile_errors, runtime_errors;
} stats;

/* Compares one leaf; returns 0 when it matches under the rule. */
static int compare_leaf(const hlo_value *d, const hlo_value *r, int strict, double bound_scale, char *why,
                        size_t n) {
  if (d->type != r->type || d->count != r->count) {
    snprintf(why, n, "type or shape differs");
    return -1;
  }
  if (memcmp(d->data, r->data, (size_t)d->count * d->elem_size) == 0)
    return 0;
  if (hlo_etype_class(d->type) != HLO_CLASS_FLOAT || strict) {
    for (int64_t i = 0; i < d->count; i++)
      if (memcmp((char *)d->data + i * d->elem_size, (char *)r->data + i * r->elem_size, d->elem_size)) {
        snprintf(why, n, "element %lld differs bitwise (dev %.9g, ref %.9g)", (long long)i,
                 hlo_value_get_f64(d, i), hlo_value_get_f64(r, i));
        return -1;
      }
    return 0;
  }
  double maxr = 1.0;
  for (int64_t i = 0; i < r->count; i++) {
    double v = fabs(hlo_value_get_f64(r, i));
    if (isfinite(v) && v > maxr)
      maxr = v;
  }
  for (int64_t i = 0; i < d->count; i++) {
    double a = hlo_value_get_f64(d, i), b = hlo_value_get_f64(r, i);
    if (isnan(a) && isnan(b))
      continue;
    if (isinf(a) || isinf(b)) {
      if (a == b)
        continue;
      snprintf(why, n, "element %lld: dev %.9g, ref %.9g", (long long)i, a, b);
      return -1;
    }
    double tol = bound_scale * maxr;
    if (fabs(a - b) > tol || isnan(a) != isnan(b)) {
      snprintf(why, n, "element %lld: dev %.9g, ref %.9g, |diff| %.3g > bound %.3g", (long long)i, a, b,
               fabs(a - b), tol);
      return -1;
    }
  }
  return 0;
}

/* Part p (0 real, 1 imaginary) of complex element i. */
static double part(const hlo_value *v, int64_t i, int p) {
  return v->type == HLO_C64 ? ((const float *)v->data)[2 * i + p] : ((const double *)v->data)[2 * i + p];
}

/* Compares the output d of fft root ins under config c with the
 * reference's r: each part within the bound chk_tol_fft_map derives.
 * 0 when it matches, -1 with why. */
static int compare_fft(const hlo_instr *ins, const dev_config *c, const hlo_value *d, const hlo_value *r, char *why,
                       size_t n) {
  if (d->type != r->type || d->count != r->count || (d->type != HLO_C64 && d->type != HLO_C128)) {
    snprintf(why, n, "type or shape differs");
    return -1;
  }
  double *map = calloc((size_t)(r->count ? r->count : 1), sizeof *map);
  hlo_error err;
  if (!map || chk_tol_fft_map(ins, r, dev_fft_depth(ins, c), CHK_FFT_DEPTH_REFERENCE, map, &err) != 0) {
    snprintf(why, n, "no fft bound: %.200s", map ? err.msg : "out of memory");
    free(map);
    return -1;
  }
  int rc = 0;
  for (int64_t i = 0; i < r->count && rc == 0; i++)
    for (int p = 0; p < 2 && rc == 0; p++) {
      double a = part(d, i, p), b = part(r, i, p);
      if (!(map[i] > 0 && isfinite(map[i])) || !(fabs(a - b) <= map[i])) {
        snprintf(why, n, "element %lld part %d: dev %.9g, ref %.9g, |diff| %.3g, fft bound %.3g", (long long)i, p,
                 a, b, fabs(a - b), map[i]);
        rc = -1;
      }
    }
  free(map);
  return rc;
}

/* The checks on the default's fft output: not bitwise the reference's, and
 * an element moved beyond its bound is caught.  0 when both hold. */
static int fft_default_checks(const hlo_instr *ins, const dev_config *c, const hlo_value *d, const hlo_value *r,
                              char *why, size_t n) {
  if (hlo_value_equal(d, r)) {
    snprintf(why, n, "the default's fft equals the reference bit for bit: not the device's own DFT");
    return -1;
  }
  double *map = calloc((size_t)(r->count ? r->count : 1), sizeof *map);
  hlo_value *moved = hlo_value_clone(d);
  hlo_error err;
  int rc = -1;
  if (map && moved && r->count > 0 &&
      chk_tol_fft_map(ins, r, dev_fft_depth(ins, c), CHK_FFT_DEPTH_REFERENCE, map, &err) == 0) {
    /* the middle element's real part, past the bound from the reference's
     * value (so the outcome does not depend on d's own error), by half the
     * bound again so that rounding to the element type keeps it outside */
    int64_t i = r->count / 2;
    double x = part(r, i, 0) + 1.5 * map[i];
    if (moved->type == HLO_C64)
      ((float *)moved->data)[2 * i] = (float)x;
    else
      ((double *)moved->data)[2 * i] = x;
    char w[256];
    if (!(fabs(part(moved, i, 0) - part(r, i, 0)) > map[i]))
      snprintf(why, n, "element %lld cannot be moved past its fft bound %.3g", (long long)i, map[i]);
    else if (compare_fft(ins, c, moved, r, w, sizeof w) == 0)
      snprintf(why, n, "element %lld moved by 1.5 x its fft bound %.3g passes the comparison", (long long)i, map[i]);
    else
      rc = 0;
  } else {
    snprintf(why, n, "no fft bound for the perturbation check");
  }
  hlo_value_unref(moved);
  free(map);
  return rc;
}

static int leaves(const hlo_value *v, const hlo_value **out, int max) {
  if (v->type != HLO_TUPLE) {
    out[0] = v;
    return 1;
  }
  int n = 0;
  for (int i = 0; i < v->ntuple && n < max; i++)
    n += leaves(v->elems[i], out + n, max - n);
  return n;
}

static void check_fusion(const char *dir, const char *name, const dev_machine *mach, stats *st) {
  char path[2100];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  size_t len;
  char *text = read_file(path, &len);
  hlo_error err;
  hlo_module *m = text ? hlo_parse(text, len, &err) : NULL;
  free(text);
  if (!m) {
    printf("SKIP %s: does not parse\n", name);
    return;
  }
  dev_fusion f;
  if (dev_fusion_analyze(m, &f, &err) != 0) {
    printf("SKIP %s: %s\n", name, err.msg);
    hlo_module_free(m);
    return;
  }
  f.host = tn_backend_host();
  int nargs = m->entry->nparams;
  hlo_value **args = calloc((size_t)(nargs ? nargs : 1), sizeof *args);
  chk_inputs_opts io = {.seed = 1, .profile = CHK_INPUTS_NAIVE};
  int reps = m->replica_count > 1 ? (int)m->replica_count : 1;
  hlo_value **refs = calloc((size_t)reps, sizeof *refs);
  chk_eval_opts eo = {.replicas = reps, .emulate_device = 1};
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  if (chk_inputs_make(m, &io, args, &err) != 0 || chk_eval_module(m, nargs, args, &eo, refs, &err) != 0) {
    printf("SKIP %s: reference: %s\n", name, err.msg);
    free(refs);
    free(args);
    hlo_module_free(m);
    return;
  }
  const dev_backend *be = dev_sim_backend();
  dev_config *cands = NULL, dflt;
  int ncands = 0;
  if (be->space(&f, mach, &cands, &ncands, &dflt, &err) != 0) {
    printf("FAIL %s: space: %s\n", name, err.msg);
    st->mismatches++;
    ncands = 0;
  }
  /* expensive fusions get fewer candidates: a candidate costs about what
   * the reference took, so the budget is ~3 s of reference time */
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ref_s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  int budget = ref_s > 0 ? (int)(3.0 / ref_s) : BUDGET;
  budget = budget < 2 ? 2 : budget > BUDGET ? BUDGET : budget;
  if (f.flops > 100000000 && budget > 4) /* big GEMMs: the device side costs more */
    budget = 4;
  int total = ncands < budget ? ncands : budget;
  for (int ci = -1; ci < total; ci++) {
    const dev_config *c = ci < 0 ? &dflt : &cands[(int64_t)ci * ncands / (total ? total : 1)];
    char ctext[DEV_CONFIG_TEXT_MAX], why[512];
    dev_config_print(c, ctext, sizeof ctext);
    dev_kernel *k = NULL;
    if (be->compile(&f, c, mach, NULL, &k, why, sizeof why) != DEV_OK) {
      st->compile_errors++;
      continue;
    }
    dev_run run;
    be->run(k, args, nargs, 7, &run);
    st->pairs++;
    if (run.status != DEV_OK) {
      printf("MISMATCH %s [%s]: runtime error: %s\n", name, ctext, run.message);
      st->mismatches++;
      st->runtime_errors++;
      be->release(k);
      continue;
    }
    const hlo_value *dl[64], *rl[64];
    int nd = leaves(run.out, dl, 64), nr = leaves(refs[0], rl, 64);
    int strict = order_preserving(&f, c);
    int64_t kt = f.k_total > 0 ? f.k_total : 1;
    double scale = 4.0 * (double)kt * (double)kt * eps_of(f.acc_type);
    int bad = nd != nr;
    const hlo_instr *root = f.comp->root;
    int fft_root = root->op == HLO_OP_FFT && nd == 1;
    for (int j = 0; !bad && j < nd; j++)
      if ((fft_root ? compare_fft(root, c, dl[j], rl[j], why, sizeof why)
                    : compare_leaf(dl[j], rl[j], strict, scale, why, sizeof why)) != 0) {
        printf("MISMATCH %s [%s] output %d: %s\n", name, ctext, j, why);
        bad = 1;
      }
    if (!bad && fft_root && ci < 0 && fft_default_checks(root, c, dl[0], rl[0], why, sizeof why) != 0) {
      printf("MISMATCH %s [%s] (default): %s\n", name, ctext, why);
      bad = 1;
    }
    if (bad) {
      st->mismatches++;
    } else {
      int same = 1;
      for (int j = 0; j < nd; j++)
        same = same && hlo_value_equal(dl[j], rl[j]);
      if (same)
        st->bitwise++;
      else
        st->bounded++;
    }
    hlo_value_unref(run.out);
    be->release(k);
  }
  free(cands);
  for (int r = 0; r < reps; r++)
    hlo_value_unref(refs[r]);
  free(refs);
  for (int i = 0; i < nargs; i++)
    hlo_value_unref(args[i]);
  free(args);
  hlo_module_free(m);
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *src = getenv("TUNE_SRCDIR");
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/datasets", argc > 1 ? argv[1] : src ? src : ".");
  DIR *d = opendir(dir);
  if (!d) {
    printf("SKIP: no %s\n", dir);
    return 77;
  }
  char *names[1024];
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) && n < 1024) {
    size_t l = strlen(de->d_name);
    if (l > 4 && strcmp(de->d_name + l - 4, ".hlo") == 0)
      names[n++] = strdup(de->d_name);
  }
  closedir(d);
  if (n == 0) {
    printf("SKIP: no fusion in %s\n", dir);
    return 77;
  }
  qsort(names, (size_t)n, sizeof *names, cmp_names);
  dev_machine mach;
  hlo_error err;
  if (dev_machine_find("tpu-v5e", &mach, &err) != 0) {
    printf("FAIL: machine: %s\n", err.msg);
    return 1;
  }
  stats st = {0};
  for (int i = 0; i < n; i++) {
    if (argc > 2 && !strstr(names[i], argv[2])) {
      free(names[i]);
      continue;
    }
    check_fusion(dir, names[i], &mach, &st);
    free(names[i]);
  }
  printf("%ld (fusion, candidate) pairs checked, %ld mismatches (%ld bitwise, %ld within the accumulation "
         "bound; %ld compile errors skipped)\n",
         st.pairs, st.mismatches, st.bitwise, st.bounded, st.compile_errors);
  return st.mismatches ? 1 : 0;
}
