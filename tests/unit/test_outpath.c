/* test_outpath.c — where outputs may go (outpath.h) and how strings reach
 * a shell script (shquote.h): links, inputs named twice, temporaries, and
 * quoting checked by the shell itself. */
#define _DEFAULT_SOURCE /* symlink, link, popen */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "cli/outpath.h"
#include "triage/shquote.h"
#include "tmpdir_fixture.h"

static void put(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static int group_setup(void **state) {
  (void)state;
  return tdf_make("test_outpath");
}

static void same_file_follows_links_and_names(void **state) {
  (void)state;
  char a[512], b[512], l[512], h[512], sub[512];
  snprintf(a, sizeof a, "%s", tdf_path("a.h5"));
  snprintf(b, sizeof b, "%s", tdf_path("b.h5"));
  snprintf(l, sizeof l, "%s", tdf_path("link.h5"));
  snprintf(h, sizeof h, "%s", tdf_path("hard.h5"));
  put(a, "a");
  put(b, "b");
  assert_int_equal(symlink("a.h5", l), 0);
  assert_int_equal(link(a, h), 0);
  assert_int_equal(tn_out_same_file(a, a), 1);
  assert_int_equal(tn_out_same_file(a, b), 0);
  assert_int_equal(tn_out_same_file(l, a), 1);
  assert_int_equal(tn_out_same_file(h, a), 1);
  /* Not there yet: the same name however it is spelled, folders too. */
  snprintf(sub, sizeof sub, "%s/new/../new.h5", tdf_dir());
  assert_int_equal(mkdir(tdf_path("new"), 0777), 0);
  assert_int_equal(tn_out_same_file(sub, tdf_path("./new.h5")), 1);
  assert_int_equal(tn_out_same_file(tdf_path("x/y.h5"), tdf_path("x/./y.h5")), 1);
  assert_int_equal(tn_out_same_file(tdf_path("x/y.h5"), tdf_path("x/z.h5")), 0);
  hlo_error err = {0};
  const char *inputs[3] = {b, NULL, l};
  assert_int_equal(tn_out_refuse_input(a, 3, inputs, &err), -1);
  assert_non_null(strstr(err.msg, "also an input"));
  assert_non_null(strstr(err.msg, "link.h5"));
  assert_int_equal(tn_out_refuse_input(tdf_path("c.h5"), 3, inputs, &err), 0);
}

static void resolve_writes_into_the_target(void **state) {
  (void)state;
  hlo_error err = {0};
  char *r = tn_out_resolve(tdf_path("plain.h5"), &err); /* absent: itself */
  assert_non_null(r);
  assert_string_equal(r, tdf_path("plain.h5"));
  free(r);
  put(tdf_path("target.h5"), "t");
  assert_int_equal(symlink("target.h5", tdf_path("cur.h5")), 0);
  r = tn_out_resolve(tdf_path("cur.h5"), &err);
  assert_non_null(r);
  assert_int_equal(tn_out_same_file(r, tdf_path("target.h5")), 1);
  struct stat st;
  assert_int_equal(lstat(r, &st), 0);
  assert_true(S_ISREG(st.st_mode));
  free(r);
  /* A link to nothing is refused rather than followed into a new file. */
  assert_int_equal(symlink("nowhere.h5", tdf_path("dangling.h5")), 0);
  assert_null(tn_out_resolve(tdf_path("dangling.h5"), &err));
  assert_non_null(strstr(err.msg, "dangling.h5"));
}

static void temporaries_honour_the_umask_and_skip_links(void **state) {
  (void)state;
  hlo_error err = {0};
  const char *path = tdf_path("t.h5");
  /* Plant a link where the first temporary name would be. */
  char *first = tn_out_temp_name(path, 0);
  assert_non_null(first);
  put(tdf_path("victim"), "precious");
  assert_int_equal(symlink("victim", first), 0);
  mode_t old = umask(027);
  char *tmp = NULL;
  int fd = tn_out_open_temp(path, &tmp, &err);
  umask(old);
  assert_true(fd >= 0);
  assert_string_not_equal(tmp, first);
  struct stat st;
  assert_int_equal(fstat(fd, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0640);
  close(fd);
  FILE *f = fopen(tdf_path("victim"), "r");
  char buf[16] = "";
  assert_non_null(fgets(buf, sizeof buf, f));
  fclose(f);
  assert_string_equal(buf, "precious");
  free(tmp);
  free(first);
}

/* What `printf '%s' WORD` prints when sh reads WORD. */
static void sh_reads_back(const char *word, const char *want) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "printf '%%s' %s", word);
  FILE *p = popen(cmd, "r");
  assert_non_null(p);
  char got[128] = "";
  size_t n = fread(got, 1, sizeof got - 1, p);
  got[n] = '\0';
  assert_int_equal(pclose(p), 0);
  assert_string_equal(got, want);
}

static const char *const hard_words[] = {"plain", "", "it's", "$(touch PWNED)", "`id`", "a b\tc",
                                         "*", "'''", "\\\"$x\"", "-n", "~root", "a=b;c", "x#y"};

/* The shell reads the quoted word back as exactly the original string. */
static void quoting_round_trips_through_sh(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof hard_words / sizeof *hard_words; i++) {
    char *word = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&word, &len);
    assert_non_null(m);
    tn_sh_quote(m, hard_words[i]);
    fclose(m);
    sh_reads_back(word, hard_words[i]);
    free(word);
  }
  assert_false(tn_sh_has_control("stable-2026 $(x) 'q'"));
  assert_true(tn_sh_has_control("x\ntouch y"));
  assert_true(tn_sh_has_control("tab\there"));
  assert_true(tn_sh_has_control("del\x7f"));
}

/* The buffer form: plain words stay bare, the rest read back through sh,
 * and a short buffer is cut and terminated while the length is the
 * whole word's, as snprintf counts. */
static void buffer_words_round_trip_and_cut(void **state) {
  (void)state;
  char buf[128];
  for (size_t i = 0; i < sizeof hard_words / sizeof *hard_words; i++) {
    size_t w = tn_sh_word(buf, sizeof buf, hard_words[i]);
    assert_int_equal(w, strlen(buf));
    sh_reads_back(buf, hard_words[i]);
  }
  assert_int_equal(tn_sh_word(buf, sizeof buf, "datasets/a-b_c.hlo"), 18);
  assert_string_equal(buf, "datasets/a-b_c.hlo");
  assert_int_equal(tn_sh_word(buf, sizeof buf, "tile=8 k=4"), 12);
  assert_string_equal(buf, "'tile=8 k=4'");
  assert_int_equal(tn_sh_word(buf, sizeof buf, "it's"), 9); /* 'it'\''s' */
  assert_string_equal(buf, "'it'\\''s'");
  char small[5];
  memset(small, 'x', sizeof small);
  assert_int_equal(tn_sh_word(small, sizeof small, "it's"), 9);
  assert_string_equal(small, "'it'");
  assert_int_equal(tn_sh_word(NULL, 0, "a b"), 5);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(same_file_follows_links_and_names),
      cmocka_unit_test(resolve_writes_into_the_target),
      cmocka_unit_test(temporaries_honour_the_umask_and_skip_links),
      cmocka_unit_test(quoting_round_trips_through_sh),
      cmocka_unit_test(buffer_words_round_trip_and_cut),
  };
  return cmocka_run_group_tests(tests, group_setup, tdf_teardown);
}
