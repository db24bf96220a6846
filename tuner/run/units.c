/* units.c — finding a module's tuning units and cutting each out as a
 * module of its own (units.h). */
#include "units.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_parse.h"
#include "hlo/hlo_print.h"
#include "hlo/hlo_verify.h"

/* Ops XLA emits as a kernel of their own when no fusion holds them. */
static bool heavy(hlo_opcode op) {
  switch (op) {
  case HLO_OP_DOT: case HLO_OP_CONVOLUTION: case HLO_OP_REDUCE: case HLO_OP_REDUCE_WINDOW:
  case HLO_OP_SORT: case HLO_OP_SCATTER: case HLO_OP_GATHER: case HLO_OP_DYNAMIC_UPDATE_SLICE:
  case HLO_OP_ALL_REDUCE: case HLO_OP_ALL_GATHER: case HLO_OP_REDUCE_SCATTER: case HLO_OP_ALL_TO_ALL:
  case HLO_OP_COLLECTIVE_PERMUTE: case HLO_OP_COLLECTIVE_BROADCAST: case HLO_OP_RAGGED_ALL_TO_ALL:
    return true;
  default:
    return false;
  }
}

/* The ops a launch may hold besides its one fusion (dev_fusion.c). */
static bool launch_only(hlo_opcode op) {
  return op == HLO_OP_PARAMETER || op == HLO_OP_CONSTANT || op == HLO_OP_TUPLE || op == HLO_OP_GET_TUPLE_ELEMENT ||
         op == HLO_OP_BITCAST || op == HLO_OP_COPY;
}

typedef struct {
  const hlo_module *m;
  unsigned char *seen;   /* per computation index */
  tn_units *out;
  int cap;
  int fusions, heavies, control;
  int failed;
} walk;

static void add(walk *w, const hlo_instr *ins, const hlo_computation *c) {
  if (w->out->n == w->cap) {
    int cap = w->cap ? 2 * w->cap : 16;
    tn_unit *v = realloc(w->out->v, sizeof *v * (size_t)cap);
    if (!v) {
      w->failed = 1;
      return;
    }
    w->out->v = v;
    w->cap = cap;
  }
  w->out->v[w->out->n++] = (tn_unit){.name = ins->name, .ins = ins, .where = c};
}

/* Walks the computations that run as a program (not inside a kernel): the
 * entry and what its control flow calls.  Fusion bodies and reducers are
 * not walked: they belong to their unit. */
static void walk_comp(walk *w, const hlo_computation *c) {
  if (!c || w->seen[c->index])
    return;
  w->seen[c->index] = 1;
  for (int i = 0; i < c->ninstrs && !w->failed; i++) {
    const hlo_instr *ins = c->instrs[i];
    const hlo_calls *k = &ins->attrs.calls;
    if (ins->op == HLO_OP_FUSION) {
      w->fusions++;
      add(w, ins, c);
    } else if (heavy(ins->op)) {
      w->heavies++;
      add(w, ins, c);
    } else if (ins->op == HLO_OP_WHILE) {
      w->control++;
      walk_comp(w, k->condition);
      walk_comp(w, k->body);
    } else if (ins->op == HLO_OP_CONDITIONAL) {
      w->control++;
      for (int b = 0; b < k->nbranches; b++)
        walk_comp(w, k->branches[b]);
    } else if (ins->op == HLO_OP_CALL) {
      w->control++;
      walk_comp(w, k->calls);
    }
  }
}

/* XLA's names are unique in a module, but hand-written modules reuse them
 * across computations; such units are told apart by where they sit. */
static int qualify_duplicates(tn_units *u) {
  for (int i = 0; i < u->n; i++) {
    bool dup = false;
    for (int j = 0; j < u->n && !dup; j++)
      dup = j != i && strcmp(u->v[j].ins->name, u->v[i].ins->name) == 0;
    if (!dup)
      continue;
    if (!u->owned && !(u->owned = calloc((size_t)u->n, sizeof *u->owned)))
      return -1;
    size_t len = strlen(u->v[i].ins->name) + strlen(u->v[i].where->name) + 2;
    char *q = malloc(len);
    if (!q)
      return -1;
    snprintf(q, len, "%s@%s", u->v[i].ins->name, u->v[i].where->name);
    u->owned[u->nowned++] = q;
    u->v[i].name = q;
  }
  return 0;
}

int tn_units_find(const hlo_module *m, tn_units *out, hlo_error *err) {
  memset(out, 0, sizeof *out);
  const hlo_computation *e = m->entry;
  if (!e || !e->root)
    return hlo_error_set(err, 0, 0, "module has no entry computation");
  walk w = {.m = m, .out = out};
  w.seen = calloc((size_t)(m->ncomps ? m->ncomps : 1), 1);
  if (!w.seen)
    return hlo_error_set(err, 0, 0, "out of memory");
  walk_comp(&w, e);
  free(w.seen);
  if (w.failed) {
    tn_units_free(out);
    return hlo_error_set(err, 0, 0, "out of memory");
  }
  /* A launch of one fusion, or one hand-fused kernel: the whole module is
   * the unit, exactly as dev_fusion_analyze sees it. */
  int launch_extra = 0;
  const hlo_instr *launch = NULL;
  for (int i = 0; i < e->ninstrs; i++) {
    if (e->instrs[i]->op == HLO_OP_FUSION && !launch)
      launch = e->instrs[i];
    else if (!launch_only(e->instrs[i]->op))
      launch_extra++;
  }
  bool is_launch = launch && launch_extra == 0 && launch->attrs.calls.calls && w.fusions == 1;
  bool hand_fused = w.fusions == 0 && w.control == 0 && w.heavies <= 1;
  if (!is_launch && !hand_fused && qualify_duplicates(out) != 0) {
    tn_units_free(out);
    return hlo_error_set(err, 0, 0, "out of memory");
  }
  if (is_launch || hand_fused) {
    const char *name = is_launch ? launch->attrs.calls.calls->name : e->name;
    if (out->n == 0) {
      out->v = malloc(sizeof *out->v);
      if (!out->v)
        return hlo_error_set(err, 0, 0, "out of memory");
    }
    out->n = 1;
    out->v[0] = (tn_unit){.name = name, .ins = NULL, .where = e};
  }
  return 0;
}

void tn_units_free(tn_units *u) {
  if (!u)
    return;
  for (int i = 0; i < u->nowned; i++)
    free(u->owned[i]);
  free(u->owned);
  free(u->v);
  memset(u, 0, sizeof *u);
}

const char *tn_unit_kind(const tn_unit *u) {
  if (!u->ins)
    return "module";
  if (u->ins->op == HLO_OP_FUSION)
    return u->ins->attrs.kind ? u->ins->attrs.kind : "fusion";
  return "op";
}

bool tn_unit_selected(const char *pattern, const char *file, const char *name) {
  if (fnmatch(pattern, name, 0) == 0)
    return true;
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  for (int pass = 0; pass < 2; pass++) {
    const char *f = pass == 0 ? file : base;
    size_t n = strlen(f) + 1 + strlen(name) + 1;
    char *full = malloc(n);
    if (!full)
      return false;
    snprintf(full, n, "%s:%s", f, name);
    bool hit = fnmatch(pattern, full, 0) == 0;
    free(full);
    if (hit)
      return true;
  }
  return false;
}

/* ---- cutting a unit out ------------------------------------------------- */

/* An operand that stays itself in the cut-out entry: a constant whose
 * value was written (an elided `{...}` one becomes a parameter). */
static bool kept_constant(const hlo_instr *op) {
  return op->op == HLO_OP_CONSTANT && op->literal && !op->literal->elided;
}

/* The first position at which operand i's instruction appears. */
static int first_use(const hlo_instr *ins, int i) {
  for (int j = 0; j < i; j++)
    if (ins->operands[j] == ins->operands[i])
      return j;
  return i;
}

int tn_unit_param_operands(const tn_unit *u, int *pos) {
  int n = 0;
  for (int i = 0; u->ins && i < u->ins->noperands; i++)
    if (first_use(u->ins, i) == i && !kept_constant(u->ins->operands[i]))
      pos[n++] = i;
  return n;
}

static void mark_callees(const hlo_module *m, const hlo_computation *c, unsigned char *keep, int depth);

/* Marks every computation ins calls: those the parser resolved into
 * attrs.calls, and those it keeps only as text: select-and-scatter's
 * select= and scatter=, and a custom-call's called_computations (a
 * composite's body, a comparator). */
static void mark_calls_of(const hlo_module *m, const hlo_instr *ins, unsigned char *keep, int depth) {
  const hlo_calls *k = &ins->attrs.calls;
  mark_callees(m, k->to_apply, keep, depth);
  mark_callees(m, k->calls, keep, depth);
  mark_callees(m, k->condition, keep, depth);
  mark_callees(m, k->body, keep, depth);
  for (int b = 0; b < k->nbranches; b++)
    mark_callees(m, k->branches[b], keep, depth);
  if (ins->op == HLO_OP_SELECT_AND_SCATTER) {
    mark_callees(m, hlo_instr_named_computation(m, ins, "select"), keep, depth);
    mark_callees(m, hlo_instr_named_computation(m, ins, "scatter"), keep, depth);
  }
  int nlisted = 0;
  hlo_instr_listed_computation(m, ins, "called_computations", 0, &nlisted);
  for (int j = 0; j < nlisted; j++)
    mark_callees(m, hlo_instr_listed_computation(m, ins, "called_computations", j, NULL), keep, depth);
}

static void mark_callees(const hlo_module *m, const hlo_computation *c, unsigned char *keep, int depth) {
  if (!c || keep[c->index] || depth > 64)
    return;
  keep[c->index] = 1;
  for (int i = 0; i < c->ninstrs; i++)
    mark_calls_of(m, c->instrs[i], keep, depth + 1);
}

/* Header attributes that still hold for the cut-out module: the replica
 * and partition counts.  The entry's layout, aliasing and donors name the
 * original entry's parameters and do not. */
static bool keep_header_attr(const char *name) {
  return strcmp(name, "replica_count") == 0 || strcmp(name, "num_partitions") == 0;
}

/* The unit instruction printed as the root of a fresh entry.  Only the
 * names of the pieces reach the text, so the new entry borrows the
 * original's shapes, literals and callees; it lives only until printed. */
static char *unit_text(const hlo_module *m, const tn_unit *u, hlo_error *err) {
  const hlo_instr *ins = u->ins;
  int nops = ins->noperands;
  hlo_instr *copies = calloc((size_t)nops + 1, sizeof *copies);
  hlo_instr **entry_instrs = calloc((size_t)nops + 1, sizeof *entry_instrs);
  hlo_instr **unit_ops = calloc((size_t)(nops ? nops : 1), sizeof *unit_ops);
  unsigned char *keep = calloc((size_t)(m->ncomps ? m->ncomps : 1), 1);
  hlo_computation **comps = calloc((size_t)m->ncomps + 1, sizeof *comps);
  hlo_raw_attr *attrs = calloc((size_t)(m->nattrs ? m->nattrs : 1), sizeof *attrs);
  hlo_raw_attr *raw = calloc((size_t)(ins->nraw ? ins->nraw : 1), sizeof *raw);
  char *text = NULL;
  if (!copies || !entry_instrs || !unit_ops || !keep || !comps || !attrs || !raw) {
    hlo_error_set(err, 0, 0, "out of memory");
    goto done;
  }
  /* One parameter per distinct operand, in first-use order; a constant
   * (unless elided) stays itself, so masks and indices keep their values. */
  int ninstrs = 0, nparams = 0;
  for (int i = 0; i < nops; i++) {
    const hlo_instr *op = ins->operands[i];
    int found = first_use(ins, i);
    if (found != i) {
      unit_ops[i] = unit_ops[found];
      continue;
    }
    hlo_instr *c = &copies[ninstrs];
    *c = *op;
    c->index = ninstrs;
    if (!kept_constant(op)) {
      c->op = HLO_OP_PARAMETER;
      c->async_wrapped = HLO_OP_INVALID;
      c->parameter_number = nparams++;
      c->literal = NULL;
      c->noperands = 0;
      c->operands = NULL;
      memset(&c->attrs, 0, sizeof c->attrs);
      c->nraw = 0;
      c->raw = NULL;
    }
    entry_instrs[ninstrs++] = c;
    unit_ops[i] = c;
  }
  hlo_instr *root = &copies[ninstrs];
  *root = *ins;
  root->operands = unit_ops;
  root->index = ninstrs;
  /* control-predecessors name instructions the new entry does not have */
  root->nraw = 0;
  root->raw = raw;
  for (int i = 0; i < ins->nraw; i++)
    if (strcmp(ins->raw[i].name, "control-predecessors") != 0)
      raw[root->nraw++] = ins->raw[i];
  entry_instrs[ninstrs++] = root;

  hlo_computation entry;
  memset(&entry, 0, sizeof entry);
  entry.name = m->entry->name;
  entry.is_entry = true;
  entry.ninstrs = ninstrs;
  entry.instrs = entry_instrs;
  entry.root = root;
  entry.root_marked = true;

  mark_calls_of(m, ins, keep, 0);
  int ncomps = 0;
  for (int i = 0; i < m->ncomps; i++)
    if (keep[i] && m->comps[i] != m->entry)
      comps[ncomps++] = m->comps[i];
  comps[ncomps++] = &entry;

  hlo_module um;
  memset(&um, 0, sizeof um);
  um.name = m->name ? m->name : "unit";
  for (int i = 0; i < m->nattrs; i++)
    if (keep_header_attr(m->attrs[i].name))
      attrs[um.nattrs++] = m->attrs[i];
  um.attrs = attrs;
  um.replica_count = m->replica_count;
  um.num_partitions = m->num_partitions;
  um.ncomps = ncomps;
  um.comps = comps;
  um.entry = &entry;
  text = hlo_print_module(&um, NULL);
  if (!text)
    hlo_error_set(err, 0, 0, "out of memory");
done:
  free(copies);
  free(entry_instrs);
  free(unit_ops);
  free(keep);
  free(comps);
  free(attrs);
  free(raw);
  return text;
}

hlo_module *tn_unit_module(const hlo_module *m, const tn_unit *u, hlo_error *err) {
  if (!u->ins) {
    hlo_error_set(err, 0, 0, "%s is the whole module", u->name);
    return NULL;
  }
  char *text = unit_text(m, u, err);
  if (!text)
    return NULL;
  hlo_error perr = {0};
  hlo_module *um = hlo_parse(text, strlen(text), &perr);
  if (um && hlo_verify(um, &perr) != 0) {
    hlo_module_free(um);
    um = NULL;
  }
  free(text);
  if (!um)
    hlo_error_set(err, u->ins->line, u->ins->col, "%s cannot be checked on its own: %.300s", u->name, perr.msg);
  return um;
}
