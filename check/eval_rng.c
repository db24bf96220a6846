/* eval_rng.c — rng-bit-generator and rng.
 *
 * rng-bit-generator(state), algorithm=rng_three_fry | rng_philox, returns
 * (new state, data) and is defined bit for bit by XLA's expansion
 * (RngBitGeneratorExpander over prng.cc); state[0] is the key, split into
 * two u32 words low half first, the remaining words are the counter:
 *   three_fry (state u64[2]): block i encrypts the u64 counter state[1] + i
 *     (as {low, high}) with Threefry-2x32-20.  64-bit data: element i is
 *     block i, word 0 low.  32-bit data of n elements: h = ceil(n/2) blocks;
 *     word 0 of every block first, then word 1 (elements h..n-1).  The new
 *     counter is state[1] + the number of blocks.
 *   philox (state u64[2] or u64[3]): the 128-bit counter is state[1] (low)
 *     and state[2] (high; 0 for u64[2]); block j encrypts counter + j, as
 *     four u32 words low first, with Philox-4x32-10.  32-bit data: element
 *     4j + w is word w of block j; 64-bit data: element 2j + h is words
 *     2h (low) and 2h+1 of block j.  The new counter is counter + blocks.
 *   8- and 16-bit data: the 32-bit stream of as many elements, each
 *     truncated to its low bits (XLA converts u32 to the narrow type).
 * rng_default is the backend's choice; XLA's CPU and GPU compilers expand
 * it as philox (their RngBitGeneratorExpander's default algorithm), and so
 * does the reference: rng_default gives rng_philox's bits.
 *
 * rng(a, b), distribution=rng_uniform | rng_normal, has no defined bits in
 * XLA.  The reference draws from Philox-4x32-10 keyed by the run's seed
 * (chk_eval_opts.rng_seed, the --seed of tune), with the counter's high
 * half a hash (FNV-1a) of the instruction's name and the low half the
 * element index, so the draw is deterministic, differs between rng
 * instructions and never depends on evaluation order.  From block words
 * w0, w1: u = w0 / 2^32 + w1 / 2^64 (in [0, 1)).
 *   uniform, float: a + (b - a) * u in double, rounded to the type; a draw
 *     that rounds up to b becomes a, so the result stays in [a, b).
 *   uniform, integer: a + (64 random bits mod (b - a)) for b > a, else a.
 *   normal (floats): a + b * sqrt(-2 ln(1 - u)) * cos(2 pi u') with u'
 *     from words 2 and 3 (Box-Muller): mean a, standard deviation b.
 */
#include "eval_rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval_internal.h"
#include "hlo/hlo_dtype.h"
#include "hlo/hlo_hash.h"

/* ---- blocks --------------------------------------------------------------- */

static uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

void chk_threefry2x32(const uint32_t ctr[2], const uint32_t key[2], uint32_t out[2]) {
  static const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
  const uint32_t ks[3] = {key[0], key[1], 0x1BD11BDAu ^ key[0] ^ key[1]};
  uint32_t x0 = ctr[0] + ks[0], x1 = ctr[1] + ks[1];
  /* Five groups of four rounds, a key injection after each group. */
  for (int g = 0; g < 5; g++) {
    for (int j = 0; j < 4; j++) {
      x0 += x1;
      x1 = rotl32(x1, rot[(g % 2) * 4 + j]);
      x1 ^= x0;
    }
    x0 += ks[(g + 1) % 3];
    x1 += ks[(g + 2) % 3] + (uint32_t)(g + 1);
  }
  out[0] = x0;
  out[1] = x1;
}

void chk_philox4x32(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t x0 = ctr[0], x1 = ctr[1], x2 = ctr[2], x3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * x0, p1 = (uint64_t)0xCD9E8D57u * x2;
    uint32_t y0 = (uint32_t)(p1 >> 32) ^ x1 ^ k0, y2 = (uint32_t)(p0 >> 32) ^ x3 ^ k1;
    x0 = y0;
    x1 = (uint32_t)p1;
    x2 = y2;
    x3 = (uint32_t)p0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
}

/* ---- XLA's streams -------------------------------------------------------- */

static void store(void *out, int bits, int64_t i, uint64_t x) {
  switch (bits) {
  case 8: ((uint8_t *)out)[i] = (uint8_t)x; break;
  case 16: ((uint16_t *)out)[i] = (uint16_t)x; break;
  case 32: ((uint32_t *)out)[i] = (uint32_t)x; break;
  default: ((uint64_t *)out)[i] = x; break;
  }
}

static void split64(uint64_t x, uint32_t w[2]) {
  w[0] = (uint32_t)x;
  w[1] = (uint32_t)(x >> 32);
}

static int64_t three_fry(const uint64_t *state, int bits, int64_t n, void *out) {
  uint32_t key[2], c[2], o[2];
  split64(state[0], key);
  if (bits == 64) {
    for (int64_t i = 0; i < n; i++) {
      split64(state[1] + (uint64_t)i, c);
      chk_threefry2x32(c, key, o);
      store(out, 64, i, (uint64_t)o[0] | (uint64_t)o[1] << 32);
    }
    return n;
  }
  int64_t half = n / 2 + n % 2;
  for (int64_t i = 0; i < half; i++) {
    split64(state[1] + (uint64_t)i, c);
    chk_threefry2x32(c, key, o);
    store(out, bits, i, o[0]);
    if (half + i < n)
      store(out, bits, half + i, o[1]);
  }
  return half;
}

static int64_t philox(const uint64_t *state, int nstate, int bits, int64_t n, void *out, uint64_t *lo,
                      uint64_t *hi) {
  uint32_t key[2], c[4], o[4];
  split64(state[0], key);
  *lo = state[1];
  *hi = nstate == 3 ? state[2] : 0;
  int per = bits == 64 ? 2 : 4;
  int64_t blocks = n / per + (n % per != 0);
  for (int64_t j = 0; j < blocks; j++) {
    uint64_t l = *lo + (uint64_t)j, h = *hi + (l < *lo); /* 128-bit add */
    split64(l, c);
    split64(h, c + 2);
    chk_philox4x32(c, key, o);
    for (int w = 0; w < per; w++) {
      int64_t i = j * per + w;
      if (i >= n)
        break;
      store(out, bits, i, bits == 64 ? (uint64_t)o[2 * w] | (uint64_t)o[2 * w + 1] << 32 : o[w]);
    }
  }
  return blocks;
}

int chk_rng_bits(chk_rng_alg alg, const uint64_t *state, int nstate, int bits, int64_t n, void *out,
                 uint64_t *new_state) {
  if (bits != 8 && bits != 16 && bits != 32 && bits != 64)
    return -1;
  if (alg == CHK_RNG_THREE_FRY) {
    if (nstate != 2)
      return -1;
    int64_t blocks = three_fry(state, bits, n, out);
    new_state[0] = state[0];
    new_state[1] = state[1] + (uint64_t)blocks;
    return 0;
  }
  if (nstate != 2 && nstate != 3)
    return -1;
  uint64_t lo, hi;
  int64_t blocks = philox(state, nstate, bits, n, out, &lo, &hi);
  uint64_t l = lo + (uint64_t)blocks;
  new_state[0] = state[0];
  new_state[1] = l;
  if (nstate == 3)
    new_state[2] = hi + (l < lo);
  return 0;
}

/* ---- the ops ------------------------------------------------------------- */

static const char *raw_value(const hlo_instr *ins, const char *name) {
  for (int i = 0; i < ins->nraw; i++)
    if (strcmp(ins->raw[i].name, name) == 0)
      return ins->raw[i].value;
  return NULL;
}

static hlo_value *rng_bit_generator(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  const char *alg = raw_value(ins, "algorithm");
  chk_rng_alg a;
  if (alg && strcmp(alg, "rng_three_fry") == 0)
    a = CHK_RNG_THREE_FRY;
  else if (!alg || strcmp(alg, "rng_philox") == 0 || strcmp(alg, "rng_default") == 0)
    a = CHK_RNG_PHILOX;
  else
    return chk_fail(ev, ins, "algorithm %s: only rng_three_fry, rng_philox and rng_default (as philox) "
                    "have defined bits", alg);
  const hlo_shape *s = &ins->shape;
  const hlo_value *st = ops[0];
  if (s->type != HLO_TUPLE || s->ntuple != 2 || s->elems[1].type == HLO_TUPLE || !chk_is_array(st) ||
      st->type != HLO_U64 || st->rank != 1 || !hlo_value_matches(st, &s->elems[0]))
    return chk_fail(ev, ins, "rng-bit-generator takes a u64[N] state and returns (state, data)");
  int bits = (int)hlo_etype_host_size(s->elems[1].type) * 8;
  if (s->elems[1].type == HLO_PRED || hlo_etype_bits(s->elems[1].type) != bits ||
      hlo_etype_class(s->elems[1].type) == HLO_CLASS_COMPLEX)
    return chk_fail(ev, ins, "rng-bit-generator cannot fill %s", hlo_etype_name(s->elems[1].type));
  hlo_value *ns = hlo_value_from_shape(&s->elems[0]);
  hlo_value *data = hlo_value_from_shape(&s->elems[1]);
  if (!ns || !data) {
    hlo_value_unref(ns);
    hlo_value_unref(data);
    return chk_fail(ev, ins, "out of memory");
  }
  if (chk_rng_bits(a, st->data, (int)st->count, bits, data->count, data->data, ns->data) != 0) {
    hlo_value_unref(ns);
    hlo_value_unref(data);
    return chk_fail(ev, ins, "%s needs a state of %s u64 words, got %lld", alg,
                    a == CHK_RNG_THREE_FRY ? "2" : "2 or 3", (long long)st->count);
  }
  hlo_value *e[2] = {ns, data};
  hlo_value *t = hlo_value_tuple(2, e);
  if (!t) {
    hlo_value_unref(ns);
    hlo_value_unref(data);
    return chk_fail(ev, ins, "out of memory");
  }
  return t;
}

static uint64_t fnv1a(const char *s) { return hlo_fnv1a_str(HLO_FNV_BASIS, s); }

static hlo_value *rng(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->noperands != 2 || !chk_is_array(ops[0]) || !chk_is_array(ops[1]) || ops[0]->count != 1 ||
      ops[1]->count != 1)
    return chk_fail(ev, ins, "rng takes two scalar operands");
  hlo_eclass cls = hlo_etype_class(ins->shape.type);
  bool normal = ins->attrs.distribution == HLO_RNG_NORMAL;
  if (!(cls == HLO_CLASS_FLOAT || ((cls == HLO_CLASS_SINT || cls == HLO_CLASS_UINT) && !normal)))
    return chk_fail(ev, ins, "rng %s of %s is not defined", normal ? "normal" : "uniform",
                    hlo_etype_name(ins->shape.type));
  if (ins->attrs.distribution != HLO_RNG_UNIFORM && !normal)
    return chk_fail(ev, ins, "rng needs distribution=rng_uniform or rng_normal");
  hlo_value *r = chk_result_uninit(ev, ins);
  if (!r)
    return NULL;
  uint32_t key[2], c[4], o[4];
  split64(ev->o.rng_seed, key);
  split64(fnv1a(ins->name), c + 2);
  bool is_float = cls == HLO_CLASS_FLOAT;
  double fa = is_float ? hlo_value_get_f64(ops[0], 0) : 0, fb = is_float ? hlo_value_get_f64(ops[1], 0) : 0;
  int64_t ia = is_float ? 0 : hlo_value_get_i64(ops[0], 0), ib = is_float ? 0 : hlo_value_get_i64(ops[1], 0);
  for (int64_t i = 0; i < r->count; i++) {
    split64((uint64_t)i, c);
    chk_philox4x32(c, key, o);
    double u = o[0] * 0x1p-32 + o[1] * 0x1p-64;
    if (!is_float) {
      uint64_t span = (uint64_t)ib - (uint64_t)ia, bits = (uint64_t)o[0] << 32 | o[1];
      hlo_value_set_i64(r, i, ib > ia ? (int64_t)((uint64_t)ia + bits % span) : ia);
    } else if (normal) {
      double u2 = o[2] * 0x1p-32 + o[3] * 0x1p-64;
      hlo_value_set_f64(r, i, fa + fb * sqrt(-2 * log(1 - u)) * cos(6.283185307179586 * u2));
    } else {
      hlo_value_set_f64(r, i, fa + (fb - fa) * u);
      if (fb > fa && hlo_value_get_f64(r, i) >= fb)
        hlo_value_set_f64(r, i, fa);
    }
  }
  return r;
}

bool chk_rng_algorithm_known(const hlo_instr *ins) {
  const char *alg = raw_value(ins, "algorithm");
  return !alg || strcmp(alg, "rng_three_fry") == 0 || strcmp(alg, "rng_philox") == 0 ||
         strcmp(alg, "rng_default") == 0;
}

hlo_value *chk_op_rng(chk_eval *ev, const hlo_instr *ins, hlo_value *const *ops) {
  if (ins->op == HLO_OP_RNG_BIT_GENERATOR) {
    if (ins->noperands != 1)
      return chk_fail(ev, ins, "rng-bit-generator takes one operand");
    return rng_bit_generator(ev, ins, ops);
  }
  return rng(ev, ins, ops);
}
