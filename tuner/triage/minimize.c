/* minimize.c — delta debugging over a fusion's instructions (minimize.h). */
#include "minimize.h"

#include <ctype.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/dev_fusion.h"
#include "hlo/hlo.h"
#include "hlo/hlo_parse.h"
#include "hlo/hlo_print.h"
#include "hlo/hlo_verify.h"

/* Marks parameters created by a cut, so that renumbering puts them after
 * the original ones (keeping the original order stable). */
#define NEW_PARAM_BASE 1000000000LL

static hlo_module *parse_verified(const char *text, hlo_error *err) {
  hlo_module *m = hlo_parse(text, strlen(text), err);
  if (m && hlo_verify(m, err) != 0) {
    hlo_module_free(m);
    return NULL;
  }
  return m;
}

int tn_min_count(const char *text, hlo_error *err) {
  hlo_module *m = parse_verified(text, err);
  if (!m)
    return -1;
  dev_fusion f;
  int n = dev_fusion_analyze(m, &f, err) == 0 ? f.comp->ninstrs : -1;
  hlo_module_free(m);
  return n;
}

/* Instructions that may be cut: not parameters, not constants (cutting
 * one saves nothing), not the root. */
static bool cuttable(const hlo_computation *c, const hlo_instr *in) {
  return in != c->root && in->op != HLO_OP_PARAMETER && in->op != HLO_OP_CONSTANT;
}

/* Names of the cuttable instructions of text's kernel (malloc'd array of
 * malloc'd strings); -1 when text has no kernel. */
static int list_cuttable(const char *text, char ***names, int *n) {
  hlo_error err = {0};
  hlo_module *m = parse_verified(text, &err);
  dev_fusion f;
  *names = NULL;
  *n = 0;
  if (!m || dev_fusion_analyze(m, &f, &err) != 0) {
    hlo_module_free(m);
    return -1;
  }
  const hlo_computation *c = f.comp;
  *names = calloc((size_t)c->ninstrs + 1, sizeof **names);
  for (int i = 0; *names && i < c->ninstrs; i++)
    if (cuttable(c, c->instrs[i]))
      (*names)[(*n)++] = strdup(c->instrs[i]->name);
  hlo_module_free(m);
  return *names ? 0 : -1;
}

static void free_names(char **names, int n) {
  for (int i = 0; i < n; i++)
    free(names[i]);
  free(names);
}

/* Keeps the instructions of c reachable from its root, in order, and
 * renumbers its parameters: original ones first by their old number, cut
 * ones after.  old_num receives, per new number, the old parameter_number
 * (NEW_PARAM_BASE + j for cut j).  Returns the parameter count. */
static int prune(hlo_computation *c, int64_t *old_num) {
  bool *live = calloc((size_t)c->ninstrs, sizeof *live);
  hlo_instr **stack = malloc(sizeof *stack * (size_t)(c->ninstrs + 1));
  if (!live || !stack) {
    free(live);
    free(stack);
    return -1;
  }
  int sp = 0;
  stack[sp++] = c->root;
  live[c->root->index] = true;
  while (sp > 0) {
    hlo_instr *in = stack[--sp];
    for (int i = 0; i < in->noperands; i++) {
      hlo_instr *op = in->operands[i];
      if (op && op->parent == c && !live[op->index]) {
        live[op->index] = true;
        stack[sp++] = op;
      }
    }
  }
  int kept = 0, nparams = 0;
  for (int i = 0; i < c->ninstrs; i++) {
    hlo_instr *in = c->instrs[i];
    if (!live[i])
      continue;
    c->instrs[kept++] = in;
    if (in->op == HLO_OP_PARAMETER)
      old_num[nparams++] = in->parameter_number;
  }
  c->ninstrs = kept;
  /* Sort the surviving numbers (few: insertion sort). */
  for (int i = 1; i < nparams; i++)
    for (int j = i; j > 0 && old_num[j - 1] > old_num[j]; j--) {
      int64_t t = old_num[j];
      old_num[j] = old_num[j - 1];
      old_num[j - 1] = t;
    }
  for (int i = 0; i < kept; i++)
    if (c->instrs[i]->op == HLO_OP_PARAMETER)
      for (int k = 0; k < nparams; k++)
        if (old_num[k] == c->instrs[i]->parameter_number) {
          c->instrs[i]->parameter_number = k;
          break;
        }
  free(live);
  free(stack);
  return nparams;
}

/* Turns `in` into parameter NEW_PARAM_BASE + j. */
static void make_param(hlo_instr *in, int j) {
  in->op = HLO_OP_PARAMETER;
  in->async_wrapped = HLO_OP_INVALID;
  in->noperands = 0;
  in->literal = NULL;
  memset(&in->attrs, 0, sizeof in->attrs);
  in->nraw = 0;
  in->parameter_number = NEW_PARAM_BASE + j;
}

/* The text of `text` with the named instructions of the kernel cut, or
 * NULL when the result is not a valid module.  Temporary arrays and
 * instructions are malloc'd and freed here; the module's own memory is its
 * arena's, freed with it. */
static char *cut(const char *text, char *const *names, int nnames) {
  hlo_error err = {0};
  hlo_module *m = parse_verified(text, &err);
  dev_fusion f;
  if (!m || dev_fusion_analyze(m, &f, &err) != 0) {
    hlo_module_free(m);
    return NULL;
  }
  hlo_computation *c = (hlo_computation *)f.comp;
  hlo_instr *launch = (hlo_instr *)f.launch;
  hlo_computation *e = m->entry;
  char *out = NULL;
  hlo_instr **cuts = calloc((size_t)nnames + 1, sizeof *cuts);
  hlo_instr *eparams = calloc((size_t)nnames + 1, sizeof *eparams);
  char (*pnames)[48] = calloc((size_t)nnames + 1, sizeof *pnames);
  int64_t *old_c = calloc((size_t)c->ninstrs + 1, sizeof *old_c);
  int64_t *old_e = calloc((size_t)e->ninstrs + (size_t)nnames + 1, sizeof *old_e);
  hlo_instr **ops = NULL, **einstrs = NULL;
  if (!cuts || !eparams || !pnames || !old_c || !old_e || (c != e && !launch))
    goto done;
  for (int j = 0; j < nnames; j++) {
    cuts[j] = hlo_computation_find(c, names[j]);
    if (!cuts[j] || !cuttable(c, cuts[j]))
      goto done;
    make_param(cuts[j], j);
  }
  int np = prune(c, old_c);
  if (np < 0)
    goto done;
  c->has_signature = false;
  if (c != e) {
    /* The launch passes the kernel's parameters in their new order; cut
     * ones come from new entry parameters. */
    ops = calloc((size_t)np + 1, sizeof *ops);
    einstrs = calloc((size_t)e->ninstrs + (size_t)nnames + 1, sizeof *einstrs);
    if (!ops || !einstrs)
      goto done;
    int ne = 0;
    for (int k = 0; k < np; k++) {
      if (old_c[k] < NEW_PARAM_BASE) {
        if (old_c[k] >= launch->noperands)
          goto done;
        ops[k] = launch->operands[old_c[k]];
        continue;
      }
      int j = (int)(old_c[k] - NEW_PARAM_BASE);
      hlo_instr *p = &eparams[j];
      snprintf(pnames[j], sizeof pnames[j], "min.param.%d", j);
      p->name = pnames[j];
      p->op = HLO_OP_PARAMETER;
      p->shape = cuts[j]->shape;
      p->parent = e;
      p->parameter_number = NEW_PARAM_BASE + j;
      einstrs[ne++] = p;
      ops[k] = p;
    }
    launch->operands = ops;
    launch->noperands = np;
    for (int i = 0; i < e->ninstrs; i++)
      einstrs[ne++] = e->instrs[i];
    e->instrs = einstrs;
    e->ninstrs = ne;
    for (int i = 0; i < ne; i++)
      einstrs[i]->index = i;
    if (prune(e, old_e) < 0)
      goto done;
    e->has_signature = false;
  }
  /* The header's entry layout would describe the old parameters. */
  int na = 0;
  for (int i = 0; i < m->nattrs; i++)
    if (strcmp(m->attrs[i].name, "entry_computation_layout") != 0)
      m->attrs[na++] = m->attrs[i];
  m->nattrs = na;
  out = hlo_print_module(m, NULL);
done:
  hlo_module_free(m);
  free(cuts);
  free(eparams);
  free(pnames);
  free(old_c);
  free(old_e);
  free(ops);
  free(einstrs);
  if (out) {
    /* Only a module that reads back and verifies is a step. */
    hlo_module *back = parse_verified(out, &err);
    if (!back) {
      free(out);
      out = NULL;
    }
    hlo_module_free(back);
  }
  return out;
}

/* ---- shapes -------------------------------------------------------------- */

/* Is text[i] the '[' of a shape (an element type name just before it, and
 * only digits and commas inside)?  *end receives the index of its ']'. */
static bool shape_bracket(const char *text, size_t i, size_t *end) {
  if (text[i] != '[' || i == 0 || !(isalnum((unsigned char)text[i - 1])))
    return false;
  size_t j = i + 1;
  while (isdigit((unsigned char)text[j]) || text[j] == ',')
    j++;
  if (text[j] != ']' || j == i + 1)
    return false;
  *end = j;
  return true;
}

/* The dimension sizes in the shapes of text, in order of appearance:
 * *dims (malloc'd) receives them; returns how many, -1 when out of memory.
 * Resizing keeps their number and order, so an index names the same
 * dimension of the same shape from one step to the next. */
static int shape_dims(const char *text, int64_t **dims) {
  int n = 0, cap = 64;
  int64_t *d = malloc(sizeof *d * (size_t)cap);
  size_t end;
  for (size_t i = 0; d && text[i]; i++) {
    if (!shape_bracket(text, i, &end))
      continue;
    const char *p = text + i + 1;
    while (p < text + end) {
      char *q;
      long long v = strtoll(p, &q, 10);
      if (n == cap) {
        int64_t *g = realloc(d, sizeof *d * (size_t)(cap *= 2));
        if (!g) {
          free(d);
          return -1;
        }
        d = g;
      }
      d[n++] = v;
      p = q + 1; /* past the ',' or the ']' */
    }
    i = end;
  }
  *dims = d;
  return d ? n : -1;
}

/* text with each dimension i where pick[i] is set made `to`, if the
 * result parses and verifies; else NULL. */
static char *resize(const char *text, const bool *pick, int64_t to) {
  size_t len = strlen(text), cap = len + len / 2 + 64, o = 0, end;
  int idx = 0;
  char *out = malloc(cap);
  if (!out)
    return NULL;
  for (size_t i = 0; i < len;) {
    if (o + 64 > cap) {
      char *g = realloc(out, cap *= 2);
      if (!g) {
        free(out);
        return NULL;
      }
      out = g;
    }
    if (!shape_bracket(text, i, &end)) {
      out[o++] = text[i++];
      continue;
    }
    out[o++] = text[i++]; /* '[' */
    while (i <= end) {
      if (!isdigit((unsigned char)text[i])) {
        out[o++] = text[i++];
        continue;
      }
      char *q;
      long long v = strtoll(text + i, &q, 10);
      if (o + 32 > cap) {
        char *g = realloc(out, cap *= 2);
        if (!g) {
          free(out);
          return NULL;
        }
        out = g;
      }
      o += (size_t)snprintf(out + o, cap - o, "%lld", pick[idx] ? (long long)to : v);
      idx++;
      i = (size_t)(q - text);
    }
  }
  out[o] = '\0';
  hlo_error err = {0};
  hlo_module *m = parse_verified(out, &err);
  if (!m) {
    free(out);
    return NULL;
  }
  hlo_module_free(m);
  return out;
}

/* Shrinks the dimensions of *cur while test holds (minimize.h).  The
 * dimensions that had one size when shrinking began move together, and
 * apart from those of any other size, even once two sizes meet. */
static void shrink_shapes(char **cur, tn_min_test test, void *ctx, tn_min_result *res) {
  int64_t *dims = NULL;
  int n = shape_dims(*cur, &dims);
  bool *pick = n > 0 ? calloc((size_t)n, sizeof *pick) : NULL;
  bool *done = n > 0 ? calloc((size_t)n, sizeof *done) : NULL;
  size_t at = 0;
  for (;;) {
    if (!pick || !done)
      break;
    /* The largest size not yet tried. */
    int64_t size = 1;
    for (int i = 0; i < n; i++)
      if (!done[i] && dims[i] > size)
        size = dims[i];
    if (size <= 1)
      break;
    for (int i = 0; i < n; i++) {
      pick[i] = !done[i] && dims[i] == size;
      done[i] |= pick[i];
    }
    int64_t hold = size, fail = 0;
    /* Halve while it holds, then bisect between the smallest size that
     * held and the first that did not. */
    while (hold > 1 && fail == 0) {
      int64_t t = hold / 2;
      char *next = resize(*cur, pick, t);
      if (next)
        res->tests++;
      if (next && test(next, ctx) == 1) {
        free(*cur);
        *cur = next;
        hold = t;
      } else {
        free(next);
        fail = t;
      }
    }
    while (fail > 0 && hold - fail > 1) {
      int64_t mid = fail + (hold - fail) / 2;
      char *next = resize(*cur, pick, mid);
      if (next)
        res->tests++;
      if (next && test(next, ctx) == 1) {
        free(*cur);
        *cur = next;
        hold = mid;
      } else {
        free(next);
        fail = mid;
      }
    }
    if (hold != size && at < sizeof res->shrunk) {
      int w = snprintf(res->shrunk + at, sizeof res->shrunk - at, "%s%lld -> %lld", at ? ", " : "",
                       (long long)size, (long long)hold);
      if (w > 0)
        at += (size_t)w;
    }
  }
  free(pick);
  free(done);
  free(dims);
}

int tn_minimize(const char *text, tn_min_test test, void *ctx, tn_min_result *res, hlo_error *err) {
  memset(res, 0, sizeof *res);
  res->instrs_before = tn_min_count(text, err);
  if (res->instrs_before < 0)
    return -1;
  char *cur = strdup(text);
  if (!cur)
    return hlo_error_set(err, 0, 0, "out of memory");
  char **names = NULL;
  int n = 0;
  if (list_cuttable(cur, &names, &n) != 0) {
    free(cur);
    return hlo_error_set(err, 0, 0, "the module has no kernel to minimize");
  }
  int chunk = (n + 1) / 2;
  while (n > 0 && chunk > 0) {
    bool progress = false;
    for (int start = 0; start < n && !progress; start += chunk) {
      int len = start + chunk <= n ? chunk : n - start;
      char *next = cut(cur, names + start, len);
      if (!next)
        continue;
      res->tests++;
      if (test(next, ctx) == 1) {
        free(cur);
        cur = next;
        progress = true;
      } else {
        free(next);
      }
    }
    if (progress) {
      free_names(names, n);
      if (list_cuttable(cur, &names, &n) != 0)
        break;
      if (chunk > n)
        chunk = n;
    } else {
      chunk = chunk == 1 ? 0 : (chunk + 1) / 2;
    }
  }
  free_names(names, n);
  shrink_shapes(&cur, test, ctx, res);
  res->text = cur;
  res->instrs_after = tn_min_count(cur, err);
  return 0;
}

int tn_min_config_check(const char *hlo_text, const tn_min_config *c, tn_fusion_result *out, hlo_error *err) {
  memset(out, 0, sizeof *out);
  hlo_module *m = hlo_parse(hlo_text, strlen(hlo_text), err);
  if (!m)
    return -1;
  int found = -1;
  if ((!c->verify || hlo_verify(m, err) == 0) && tn_check_fusion(m, "minimize", &c->so, out, err) == 0) {
    for (int i = 0; i < out->ncands && found < 0; i++)
      if (strcmp(out->cands[i].config, c->so.only) == 0)
        found = i;
    if (found < 0) {
      tn_fusion_result_free(out);
      memset(out, 0, sizeof *out);
      hlo_error_set(err, 0, 0, "the minimized module has no candidate %s", c->so.only);
    }
  }
  hlo_module_free(m);
  return found;
}

int tn_min_config_diverges(const char *hlo_text, void *ctx) {
  const tn_min_config *c = ctx;
  hlo_error err = {0};
  hlo_module *m = hlo_parse(hlo_text, strlen(hlo_text), &err);
  if (!m)
    return 0;
  tn_fusion_result r;
  int holds = 0;
  if ((!c->verify || hlo_verify(m, &err) == 0) && tn_check_fusion(m, "minimize", &c->so, &r, &err) == 0) {
    for (int i = 0; i < r.ncands; i++)
      if (strcmp(r.cands[i].config, c->so.only) == 0 && chk_verdict_is_divergent(r.cands[i].verdict))
        holds = 1;
    tn_fusion_result_free(&r);
  }
  hlo_module_free(m);
  return holds;
}
