/* test_cover.c — the budget's pairwise cover (cover.h) on a space small
 * enough to count by hand: rank 1, three two-valued knobs (tile 128|256,
 * buf 1|2, pack 1|2), every other knob fixed, all 8 combinations present.
 *
 * Knobs: k, buf, order, pack, prec, 4 flags, tile[0] = 10 knobs; 3 vary.
 * Values: 3 x 2 + 7 x 1 = 13.  Pairs: among the varying knobs 3 x 2 x 2 =
 * 12, varying with fixed 3 x 7 x 2 = 42, fixed with fixed C(7,2) = 21:
 * 75 in all.  The default (128, 1, 1) holds 3 of the 12 varying pairs, 21
 * of the 42 and all 21 fixed ones; its complement holds the other 3 + 21.
 * (No shape is given, so there is no `loops` knob.) */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "run/cover.h"

static void make_space(dev_config *list) {
  int n = 0;
  for (int t = 0; t < 2; t++)
    for (int b = 0; b < 2; b++)
      for (int p = 0; p < 2; p++) {
        hlo_error err;
        char text[DEV_CONFIG_TEXT_MAX];
        snprintf(text, sizeof text, "tile=%d k=256 buf=%d order=0k pack=%d prec=default flags=none",
                 t ? 256 : 128, b + 1, p + 1);
        assert_int_equal(dev_config_parse(text, &list[n++], &err), 0);
      }
}

static void text_of(const dev_config *c, char *buf) { dev_config_print(c, buf, DEV_CONFIG_TEXT_MAX); }

static void second_pick_is_the_complement_of_the_default(void **state) {
  (void)state;
  dev_config list[8];
  make_space(list);
  tn_cover c;
  hlo_error err;
  assert_int_equal(tn_cover_select(list, 8, 2, 7, NULL, NULL, &c, &err), 0);
  char t[DEV_CONFIG_TEXT_MAX];
  text_of(&list[0], t);
  assert_string_equal(t, "tile=128 k=256 buf=1 order=0k pack=1 prec=default flags=none");
  /* (256, 2, 2) is the only config adding 3 values (and 3 + 21 pairs). */
  text_of(&list[1], t);
  assert_string_equal(t, "tile=256 k=256 buf=2 order=0k pack=2 prec=default flags=none");
  assert_int_equal(c.values, 13);
  assert_int_equal(c.values_covered, 13);
  assert_int_equal(c.pairs, 75);
  assert_int_equal(c.pairs_covered, 63 + 6);
  assert_non_null(strstr(c.pairs_text, "buf=2 pack=2\n"));
  assert_null(strstr(c.pairs_text, "buf=1 pack=2\n"));
  tn_cover_free(&c);
}

/* After the first two picks the 6 missing varying pairs are t0b1, t1b0,
 * t0p1, t1p0, b0p1, b1p0, and each of the 6 other configs holds exactly 2
 * of them: the third pick adds 2, and (by the cube's symmetry, whichever
 * it was) so does the fourth, leaving 2 open.  Whether one config holds
 * both depends on the tie breaks, so five picks may leave one open; six
 * always cover all 75. */
static void six_picks_cover_every_pair(void **state) {
  (void)state;
  for (uint64_t seed = 0; seed < 8; seed++) {
    dev_config list[8];
    make_space(list);
    tn_cover c;
    hlo_error err;
    assert_int_equal(tn_cover_select(list, 8, 4, seed, NULL, NULL, &c, &err), 0);
    assert_int_equal(c.pairs_covered, 75 - 2);
    tn_cover_free(&c);
    make_space(list);
    assert_int_equal(tn_cover_select(list, 8, 6, seed, NULL, NULL, &c, &err), 0);
    assert_int_equal(c.pairs_covered, 75);
    tn_cover_free(&c);
  }
}

/* The choice is a function of the seed; every config appears once. */
static void choice_is_a_permutation_fixed_by_the_seed(void **state) {
  (void)state;
  for (uint64_t seed = 0; seed < 20; seed++) {
    dev_config a[8], b[8], orig[8];
    make_space(a);
    make_space(b);
    make_space(orig);
    tn_cover ca, cb;
    hlo_error err;
    assert_int_equal(tn_cover_select(a, 8, 6, seed, NULL, NULL, &ca, &err), 0);
    assert_int_equal(tn_cover_select(b, 8, 6, seed, NULL, NULL, &cb, &err), 0);
    assert_int_equal(ca.seed, seed);
    for (int i = 0; i < 8; i++) {
      assert_true(dev_config_equal(&a[i], &b[i]));
      int seen = 0;
      for (int j = 0; j < 8; j++)
        seen += dev_config_equal(&orig[i], &a[j]);
      assert_int_equal(seen, 1);
    }
    assert_true(dev_config_equal(&a[0], &orig[0]));
    tn_cover_free(&ca);
    tn_cover_free(&cb);
  }
}

/* A budget of the whole space changes nothing of its order. */
static void whole_space_keeps_its_order(void **state) {
  (void)state;
  dev_config list[8], orig[8];
  make_space(list);
  make_space(orig);
  tn_cover c;
  hlo_error err;
  assert_int_equal(tn_cover_select(list, 8, 8, 3, NULL, NULL, &c, &err), 0);
  for (int i = 0; i < 8; i++)
    assert_true(dev_config_equal(&list[i], &orig[i]));
  assert_int_equal(c.pairs_covered, 75);
  tn_cover_free(&c);
}

/* A flag that some candidate sets is a knob: two configs differing only in
 * four-step have the 10 knobs above plus four-step, 11 + 1 values (four-step
 * on and off), and C(11,2) = 55 pairs plus the 10 of four-step=on with the
 * others, 65; both picks hold all of them. */
static void a_set_flag_is_a_knob(void **state) {
  (void)state;
  dev_config list[2];
  hlo_error err;
  assert_int_equal(dev_config_parse("tile=128 k=256 buf=1 order=0k pack=1 prec=default flags=none", &list[0], &err), 0);
  assert_int_equal(dev_config_parse("tile=128 k=256 buf=1 order=0k pack=1 prec=default flags=four-step", &list[1], &err),
                   0);
  tn_cover c;
  assert_int_equal(tn_cover_select(list, 2, 2, 0, NULL, NULL, &c, &err), 0);
  assert_int_equal(c.values, 12);
  assert_int_equal(c.pairs, 65);
  assert_int_equal(c.pairs_covered, 65);
  assert_non_null(strstr(c.pairs_text, "four-step=on tile[0]=128\n"));
  tn_cover_free(&c);
}

/* A candidate that does not compile runs nothing.  Of the default
 * (128, 1, 1), A = (256, 2, 2) and B = (256, 1, 1), A alone would add
 * three values, but it does not compile: B is the second pick.  With a
 * budget of the whole space nothing is reordered.  Either way the totals
 * count the default and B:
 * the 10 knobs with two tile values, 11 values, and 9 x 2 pairs with the
 * tile plus C(9,2) = 36 others, 54. */
static void a_candidate_that_does_not_compile_comes_last(void **state) {
  (void)state;
  for (int budget = 2; budget <= 3; budget++) {
    dev_config list[3];
    hlo_error err;
    assert_int_equal(dev_config_parse("tile=128 k=256 buf=1 order=0k pack=1 prec=default flags=none", &list[0], &err), 0);
    assert_int_equal(dev_config_parse("tile=256 k=256 buf=2 order=0k pack=2 prec=default flags=none", &list[1], &err), 0);
    assert_int_equal(dev_config_parse("tile=256 k=256 buf=1 order=0k pack=1 prec=default flags=none", &list[2], &err), 0);
    const bool compiles[3] = {true, false, true};
    tn_cover c;
    assert_int_equal(tn_cover_select(list, 3, budget, 5, NULL, compiles, &c, &err), 0);
    char t[DEV_CONFIG_TEXT_MAX];
    text_of(&list[1], t); /* the whole space (budget 3) keeps its order */
    assert_string_equal(t, budget == 2 ? "tile=256 k=256 buf=1 order=0k pack=1 prec=default flags=none"
                                       : "tile=256 k=256 buf=2 order=0k pack=2 prec=default flags=none");
    assert_int_equal(c.values, 11);
    assert_int_equal(c.values_covered, 11);
    assert_int_equal(c.pairs, 54);
    assert_int_equal(c.pairs_covered, 54);
    assert_null(strstr(c.pairs_text, "buf=2"));
    tn_cover_free(&c);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(second_pick_is_the_complement_of_the_default),
      cmocka_unit_test(six_picks_cover_every_pair),
      cmocka_unit_test(choice_is_a_permutation_fixed_by_the_seed),
      cmocka_unit_test(whole_space_keeps_its_order),
      cmocka_unit_test(a_set_flag_is_a_knob),
      cmocka_unit_test(a_candidate_that_does_not_compile_comes_last),
  };
  return cmocka_run_group_tests_name("cover", tests, NULL, NULL);
}
