/* hlo.h — the in-memory form of an HLO module.
 *
 * Ownership: a module owns one arena (hlo_arena.h) and every node, string and
 * array reachable from it lives in that arena, so hlo_module_free() is the only
 * free a caller ever does.  Nodes are never freed one by one; a module is built
 * once by the parser and then only read.
 *
 * What is typed and what is raw: every attribute that has semantics for
 * evaluation, lowering or verification is parsed into hlo_attrs.  Everything
 * else (metadata, backend_config, sharding, frontend_attributes, ...) is kept
 * as its exact source text in `raw`, in source order, so the printer can write
 * it back unchanged.
 */
#ifndef TUNE_HLO_H
#define TUNE_HLO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hlo_arena.h"
#include "hlo_opcode.h"
#include "hlo_types.h"

typedef struct hlo_module hlo_module;
typedef struct hlo_computation hlo_computation;
typedef struct hlo_instr hlo_instr;

/* A list of integers: dimension numbers, sizes, a minor_to_major order. */
typedef struct hlo_ints {
  int n;
  int64_t *v;
} hlo_ints;

/* ---- shapes ---------------------------------------------------------- */

#define HLO_TILE_COMBINE INT64_MIN /* a '*' entry in T(...) */

typedef struct hlo_tile {
  hlo_ints dims;
} hlo_tile;

typedef struct hlo_layout {
  hlo_ints minor_to_major;
  int ntiles;
  hlo_tile *tiles;       /* T(8,128)(2,1) gives two tiles */
  int64_t memory_space;  /* S(n); 0 when absent */
  const char *extra;     /* other layout items (D, L, E, P, M, #, *) as source
                            text in source order, NULL when none */
} hlo_layout;

/* dims[i] >= 0.  A dynamic dimension `<=8` has dims[i] = 8 (its bound) and
 * dynamic[i] = HLO_DIM_BOUNDED; an unbounded `?` has dims[i] = -1 and
 * dynamic[i] = HLO_DIM_UNBOUNDED. */
enum { HLO_DIM_STATIC = 0, HLO_DIM_BOUNDED = 1, HLO_DIM_UNBOUNDED = 2 };

typedef struct hlo_shape hlo_shape;
struct hlo_shape {
  hlo_etype type;     /* HLO_TUPLE for tuples */
  int rank;           /* arrays only */
  int64_t *dims;
  uint8_t *dynamic;   /* NULL when every dimension is static */
  hlo_layout *layout; /* NULL when the text gave none */
  int ntuple;         /* tuples only */
  hlo_shape *elems;
};

/* ---- constants ------------------------------------------------------- */

/* A literal's element values, flattened row-major, one array per class so
 * that no precision is lost on the way through text:
 *   floats (any width)  -> f  (double; the printer writes them back exactly)
 *   complex             -> f  (re, im pairs: 2*count doubles)
 *   signed ints, pred   -> i
 *   unsigned ints       -> u
 * Exactly one of f/i/u is set for an array literal.  `elided` marks XLA's
 * `{...}`: the data exists but was not written; evaluation must refuse it. */
typedef struct hlo_literal hlo_literal;
struct hlo_literal {
  bool elided;
  int64_t count;
  double *f;
  int64_t *i;
  uint64_t *u;
  int ntuple; /* tuple literal `( a, b )`: one literal per element */
  hlo_literal *elems;
};

/* ---- typed attributes ------------------------------------------------ */

typedef struct hlo_window_dim {
  int64_t size, stride, pad_lo, pad_hi, lhs_dilate, rhs_dilate;
  bool reversal;
} hlo_window_dim;

typedef struct hlo_window {
  int rank;
  hlo_window_dim *dims;
} hlo_window;

typedef struct hlo_slice_dim {
  int64_t start, limit, stride;
} hlo_slice_dim;

typedef struct hlo_pad_dim {
  int64_t lo, hi, interior; /* lo/hi may be negative */
} hlo_pad_dim;

typedef struct hlo_dot_dnums {
  hlo_ints lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
} hlo_dot_dnums;

/* dim_labels such as b01f_01io->b01f, decoded.  Spatial lists are in the
 * order the digits name them (spatial dimension 0 first). */
typedef struct hlo_conv_dnums {
  int64_t input_batch, input_feature;
  hlo_ints input_spatial;
  int64_t kernel_input_feature, kernel_output_feature;
  hlo_ints kernel_spatial;
  int64_t output_batch, output_feature;
  hlo_ints output_spatial;
} hlo_conv_dnums;

typedef struct hlo_gather_dnums {
  hlo_ints offset_dims, collapsed_slice_dims, start_index_map;
  hlo_ints operand_batching_dims, start_indices_batching_dims;
  int64_t index_vector_dim;
} hlo_gather_dnums;

typedef struct hlo_scatter_dnums {
  hlo_ints update_window_dims, inserted_window_dims;
  hlo_ints scatter_dims_to_operand_dims;
  hlo_ints input_batching_dims, scatter_indices_batching_dims;
  int64_t index_vector_dim;
} hlo_scatter_dnums;

typedef enum hlo_cmp_dir {
  HLO_CMP_NONE = 0, HLO_CMP_EQ, HLO_CMP_NE, HLO_CMP_LT, HLO_CMP_LE,
  HLO_CMP_GT, HLO_CMP_GE
} hlo_cmp_dir;

typedef enum hlo_cmp_type {
  HLO_CMPT_NONE = 0, /* not written: implied by the operand type */
  HLO_CMPT_FLOAT, HLO_CMPT_TOTALORDER, HLO_CMPT_SIGNED, HLO_CMPT_UNSIGNED
} hlo_cmp_type;

typedef enum hlo_precision {
  HLO_PREC_DEFAULT = 0, HLO_PREC_HIGH, HLO_PREC_HIGHEST
} hlo_precision;

typedef enum hlo_rng_dist {
  HLO_RNG_NONE = 0, HLO_RNG_UNIFORM, HLO_RNG_NORMAL
} hlo_rng_dist;

typedef struct hlo_replica_groups {
  int ngroups;  /* 0 with `{}`: one group of all replicas */
  hlo_ints *groups;
} hlo_replica_groups;

typedef struct hlo_pair {
  int64_t a, b;
} hlo_pair;

/* Which typed attributes an instruction carries (bit per field below). */
enum {
  HLO_A_DIMENSIONS = 1u << 0,
  HLO_A_SLICE = 1u << 1,
  HLO_A_PADDING = 1u << 2,
  HLO_A_WINDOW = 1u << 3,
  HLO_A_DIM_LABELS = 1u << 4,
  HLO_A_DOT_DNUMS = 1u << 5,
  HLO_A_FEATURE_GROUP_COUNT = 1u << 6,
  HLO_A_BATCH_GROUP_COUNT = 1u << 7,
  HLO_A_GATHER_DNUMS = 1u << 8,
  HLO_A_SCATTER_DNUMS = 1u << 9,
  HLO_A_SLICE_SIZES = 1u << 10,
  HLO_A_DIRECTION = 1u << 11,
  HLO_A_CMP_TYPE = 1u << 12,
  HLO_A_INDEX = 1u << 13,
  HLO_A_IOTA_DIMENSION = 1u << 14,
  HLO_A_DYNAMIC_SLICE_SIZES = 1u << 15,
  HLO_A_IS_STABLE = 1u << 16,
  HLO_A_REPLICA_GROUPS = 1u << 17,
  HLO_A_CHANNEL_ID = 1u << 18,
  HLO_A_OPERAND_PRECISION = 1u << 19,
  HLO_A_DISTRIBUTION = 1u << 20,
  HLO_A_CUSTOM_CALL_TARGET = 1u << 21,
  HLO_A_KIND = 1u << 22,
  HLO_A_SOURCE_TARGET_PAIRS = 1u << 23,
  HLO_A_EXPONENT_BITS = 1u << 24,
  HLO_A_MANTISSA_BITS = 1u << 25,
  HLO_A_INDICES_ARE_SORTED = 1u << 26,
  HLO_A_UNIQUE_INDICES = 1u << 27,
  HLO_A_USE_GLOBAL_DEVICE_IDS = 1u << 28,
  HLO_A_TUPLE_INDEX = 1u << 29, /* reserved */
};

/* Called computations.  Names are resolved to pointers by the parser after
 * the whole module is read, so forward references work. */
typedef struct hlo_calls {
  hlo_computation *to_apply;     /* reduce, map, sort, scatter, all-reduce... */
  hlo_computation *calls;        /* fusion, call, async-start */
  hlo_computation *condition;    /* while */
  hlo_computation *body;         /* while */
  int nbranches;                 /* conditional: branch_computations, or  */
  hlo_computation **branches;    /* true_computation/false_computation as 2 */
  bool true_false_form;          /* written as true_/false_computation */
} hlo_calls;

typedef struct hlo_attrs {
  uint32_t has;                  /* HLO_A_* bits */
  hlo_ints dimensions;
  int nslice;                    /* slice={[0:4:1], ...} */
  hlo_slice_dim *slice;
  int npad;                      /* pad's padding=0_0_0x1_2 */
  hlo_pad_dim *pad;
  hlo_window window;
  hlo_conv_dnums conv;           /* from dim_labels */
  hlo_dot_dnums dot;
  int64_t feature_group_count, batch_group_count;
  hlo_gather_dnums gather;
  hlo_scatter_dnums scatter;
  hlo_ints slice_sizes;          /* gather */
  hlo_cmp_dir direction;
  hlo_cmp_type cmp_type;
  int64_t index;                 /* get-tuple-element */
  int64_t iota_dimension;
  hlo_ints dynamic_slice_sizes;
  bool is_stable, indices_are_sorted, unique_indices, use_global_device_ids;
  hlo_replica_groups replica_groups;
  int64_t channel_id;
  int nprecision;
  hlo_precision *precision;      /* operand_precision={default,high} */
  hlo_rng_dist distribution;
  const char *custom_call_target;
  const char *kind;              /* fusion kind as written: "kLoop" */
  int npairs;                    /* collective-permute source_target_pairs */
  hlo_pair *pairs;
  int64_t exponent_bits, mantissa_bits; /* reduce-precision */
  hlo_calls calls;
} hlo_attrs;

/* An attribute kept as text: `name=value` with value exactly as written. */
typedef struct hlo_raw_attr {
  const char *name;
  const char *value;
} hlo_raw_attr;

/* ---- instructions, computations, modules ----------------------------- */

struct hlo_instr {
  const char *name;           /* without the '%' */
  hlo_opcode op;
  hlo_opcode async_wrapped;   /* `fusion-start` sugar: op is ASYNC_START and
                                 this is FUSION; HLO_OP_INVALID otherwise */
  hlo_shape shape;
  int noperands;
  int index;                  /* position in parent->instrs; here, beside
                                 the operands and in the cache line the
                                 walks over a computation read anyway (the
                                 struct is large: at its end it cost one
                                 more cache miss per instruction and walk) */
  hlo_instr **operands;
  int64_t parameter_number;   /* parameter(N) */
  hlo_literal *literal;       /* constant */
  hlo_attrs attrs;
  int nraw;
  hlo_raw_attr *raw;
  hlo_computation *parent;
  int line, col;              /* where the instruction's name starts */
};

struct hlo_computation {
  const char *name;
  bool is_entry;
  bool has_signature;         /* `name (p: f32[2]) -> f32[2] {` */
  int nsig_params;            /* the signature's parameters, as written */
  const char **sig_param_names;
  hlo_shape *sig_param_shapes;
  hlo_shape sig_result;
  const char *execution_thread; /* raw text, NULL when absent */
  int ninstrs;
  hlo_instr **instrs;         /* in source order */
  hlo_instr *root;            /* ROOT, else the last instruction */
  bool root_marked;           /* the text said ROOT */
  int nparams;                /* parameters indexed by parameter_number */
  hlo_instr **params;
  int index;                  /* position in module->comps */
  int line, col;
};

struct hlo_module {
  const char *name;           /* NULL for a header-less file */
  int nattrs;                 /* header attributes, raw, in source order */
  hlo_raw_attr *attrs;
  int64_t replica_count;      /* typed copies of header attributes that */
  int64_t num_partitions;     /* matter; 1 when absent */
  bool is_scheduled;
  int ncomps;
  hlo_computation **comps;    /* in source order */
  hlo_computation *entry;
  hlo_arena *arena;
};

/* Frees the module and everything in its arena.  NULL is fine. */
void hlo_module_free(hlo_module *m);

/* Lookups by name; NULL when absent.  Linear: for tools, not hot paths. */
hlo_computation *hlo_module_find(const hlo_module *m, const char *name);
hlo_instr *hlo_computation_find(const hlo_computation *c, const char *name);
/* The computation that ins names in its raw attribute attr (select-and-
 * scatter's `select=%ge` and `scatter=%add`, which the parser keeps as
 * text rather than resolving into attrs.calls); NULL when ins has no such
 * attribute, m is NULL, or the module has no computation of that name. */
hlo_computation *hlo_instr_named_computation(const hlo_module *m, const hlo_instr *ins, const char *attr);
/* The k-th computation (from 0) named in ins's raw list attribute attr,
 * written `{%a, %b}` (a custom-call's called_computations, which the
 * parser keeps as text).  NULL when k is past the list, when the k-th name
 * names no computation of m, or when the list is malformed; *count, when
 * count is not NULL, gets the number of names in the list (0 when ins has
 * no such attribute or the list is malformed). */
hlo_computation *hlo_instr_listed_computation(const hlo_module *m, const hlo_instr *ins, const char *attr, int k,
                                              int *count);
/* Whether nothing can depend on ins's result: it belongs to a computation,
 * is not its root, no instruction there reads it, and it writes no operand
 * in place (output_to_operand_aliasing).  Linear in the computation. */
bool hlo_instr_unread(const hlo_instr *ins);
/* The binary opcode of a simple reducer: a computation of exactly two
 * distinct scalar parameters and a scalar root that is add, multiply,
 * maximum, minimum, and, or or xor of them (all commutative, so their
 * order does not matter); else HLO_OP_INVALID.  Anything more (a dead
 * instruction, an array root) is not simple: the reference and the device
 * then call the computation itself, so no side condition is ever lost.
 * One rule for both, so that they never disagree on what folds how. */
hlo_opcode hlo_simple_reducer(const hlo_computation *c);

/* Shape helpers. */
int64_t hlo_shape_elements(const hlo_shape *s);  /* product of dims; 1 for rank 0 */
/* Bytes of a value of shape s (tuples: the sum of their leaves; a size no
 * machine holds saturates at INT64_MAX / 2). */
int64_t hlo_shape_bytes(const hlo_shape *s);
/* The size of a dimension of size n >= 0 after padding p:
 * lo + n + (n - 1) * interior + hi (no interior gap when n = 0).  False
 * when that, or a partial sum on the way, does not fit in int64: pad
 * values come from the HLO text, and such a config describes no shape. */
bool hlo_pad_size(int64_t n, const hlo_pad_dim *p, int64_t *out);
bool hlo_shape_is_tuple(const hlo_shape *s);
bool hlo_shape_equal(const hlo_shape *a, const hlo_shape *b, bool with_layout);
/* Number of array leaves of a (possibly nested) tuple shape; 1 for an array. */
int hlo_shape_leaf_count(const hlo_shape *s);
/* The k-th array leaf in depth-first order. */
const hlo_shape *hlo_shape_leaf(const hlo_shape *s, int k);
/* hlo_shape_leaf(s, 0), inline for an array: the device asks it of every
 * operand of every instruction it evaluates, almost always of an array. */
static inline const hlo_shape *hlo_shape_leaf0(const hlo_shape *s) {
  return s->type != HLO_TUPLE ? s : hlo_shape_leaf(s, 0);
}

#endif
