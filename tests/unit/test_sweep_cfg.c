/* test_sweep_cfg.c — sweep files (sweep_cfg.h): the shipped daily.cfg
 * loads, every key lands where it belongs, defaults apply to optional
 * keys, and each kind of mistake is refused with file, line and key; also
 * the date patterns, the sweep identity and the shard function. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "sweep/sweep_cfg.h"

#ifndef TUNE_SRC_CONFIGS
#define TUNE_SRC_CONFIGS "configs"
#endif

static char path[64];

/* Writes text to a fresh temporary file named in `path`. */
static void write_cfg(const char *text) {
  snprintf(path, sizeof path, "/tmp/test_sweep_cfg.XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
}

/* Loads text, expecting failure with a message containing want. */
static void refused(const char *text, const char *want) {
  tn_sweep_cfg c;
  hlo_error err = {0};
  write_cfg(text);
  int rc = tn_sweep_cfg_load(path, &c, &err);
  unlink(path);
  if (rc == 0 || !strstr(err.msg, want))
    fail_msg("wanted an error with \"%s\", got rc %d \"%s\"", want, rc, err.msg);
  /* Every message starts with the file name and the line. */
  assert_true(strncmp(err.msg, path, strlen(path)) == 0);
}

static void daily_cfg_loads(void **state) {
  (void)state;
  tn_sweep_cfg c;
  hlo_error err = {0};
  int rc = tn_sweep_cfg_load(TUNE_SRC_CONFIGS "/daily.cfg", &c, &err);
  if (rc != 0)
    fail_msg("%s", err.msg);
  assert_int_equal(c.ncorpus, 1);
  assert_string_equal(c.corpus[0], "datasets/*.hlo");
  assert_int_equal(c.nmachines, 1);
  assert_string_equal(c.machines[0], "tpu-v5e");
  assert_string_equal(c.compiler, "nightly");
  assert_int_equal(c.ninputs, 2);
  assert_string_equal(c.inputs[0], "constrained");
  assert_string_equal(c.inputs[1], "oob-indices");
  assert_true(strstr(c.output, "%Y") != NULL);
  assert_true(c.nreports >= 1);
}

static const char *full =
    "sweep: {\n"
    "  corpus = [ \"a/*.hlo\", \"b/x.hlo\" ];\n"
    "  machines = [ \"tpu-v4\", \"tpu-v6e\" ];\n"
    "  compiler = \"stable\";\n"
    "  inputs = \"constrained\";\n"
    "  budget = 16;\n"
    "  time_budget = 2.5;\n"
    "  threads = 3;\n"
    "  seed = 7;\n"
    "  output = \"r/%Y-%m-%d.h5\";\n"
    "  run_id = \"nightly-%Y%m%d\";\n"
    "  slowdown_threshold = 0.25;\n"
    "  reports = ( { format = \"junit\"; output = \"r/%F.xml\"; }, { format = \"md\"; output = \"r/x.md\"; } );\n"
    "};\n";

static void every_key_is_read(void **state) {
  (void)state;
  tn_sweep_cfg c;
  hlo_error err = {0};
  write_cfg(full);
  int rc = tn_sweep_cfg_load(path, &c, &err);
  unlink(path);
  if (rc != 0)
    fail_msg("%s", err.msg);
  assert_int_equal(c.ncorpus, 2);
  assert_string_equal(c.corpus[1], "b/x.hlo");
  assert_int_equal(c.nmachines, 2);
  assert_string_equal(c.machines[1], "tpu-v6e");
  assert_string_equal(c.compiler, "stable");
  assert_int_equal(c.ninputs, 1);
  assert_string_equal(c.inputs[0], "constrained");
  assert_int_equal(c.budget, 16);
  assert_true(c.time_budget == 2.5);
  assert_int_equal(c.threads, 3);
  assert_int_equal(c.seed, 7);
  assert_string_equal(c.output, "r/%Y-%m-%d.h5");
  assert_string_equal(c.run_id, "nightly-%Y%m%d");
  assert_true(c.slowdown_threshold == 0.25);
  assert_int_equal(c.nreports, 2);
  assert_string_equal(c.reports[0].format, "junit");
  assert_string_equal(c.reports[1].output, "r/x.md");
}

static void optional_keys_default(void **state) {
  (void)state;
  tn_sweep_cfg c;
  hlo_error err = {0};
  write_cfg("sweep: { corpus = [\"*.hlo\"]; machines = [\"tpu-v5e\"]; compiler = \"nightly\";\n"
            "  inputs = \"naive\"; output = \"o.h5\"; };\n");
  int rc = tn_sweep_cfg_load(path, &c, &err);
  unlink(path);
  if (rc != 0)
    fail_msg("%s", err.msg);
  assert_int_equal(c.budget, 0);
  assert_true(c.time_budget == 0);
  assert_int_equal(c.threads, 0);
  assert_string_equal(c.run_id, "%Y%m%d");
  assert_true(c.slowdown_threshold == 0.10);
  assert_int_equal(c.nreports, 0);
}

static void mistakes_name_file_line_and_key(void **state) {
  (void)state;
  const char *base = "sweep: {\n corpus = [\"*.hlo\"];\n machines = [\"tpu-v5e\"];\n compiler = \"nightly\";\n"
                     " inputs = \"naive\";\n output = \"o.h5\";\n";
  char text[1024];
  snprintf(text, sizeof text, "%s bogus = 1;\n};\n", base);
  refused(text, ":7: unknown key 'sweep.bogus'");
  snprintf(text, sizeof text, "%s budget = \"many\";\n};\n", base);
  refused(text, ":7: 'sweep.budget' must be a non-negative integer");
  snprintf(text, sizeof text, "%s budget = -1;\n};\n", base);
  refused(text, ":7: 'sweep.budget' must be an integer from 0");
  snprintf(text, sizeof text, "%s time_budget = \"1s\";\n};\n", base);
  refused(text, ":7: 'sweep.time_budget' must be a number");
  snprintf(text, sizeof text, "%s reports = ( { format = \"pdf\"; output = \"x\"; } );\n};\n", base);
  refused(text, ":7: 'sweep.reports.format' must be html, md, json or junit");
  snprintf(text, sizeof text, "%s reports = ( { format = \"md\"; } );\n};\n", base);
  refused(text, ":7: missing key 'sweep.reports.output'");
  snprintf(text, sizeof text, "%s reports = ( { format = \"md\"; output = \"x\"; where = 1; } );\n};\n", base);
  refused(text, ":7: unknown key 'sweep.reports.where'");
  snprintf(text, sizeof text, "%s run_id = \"a/b\";\n};\n", base);
  refused(text, ":7: 'sweep.run_id' must not contain '/'");
  refused("sweep: {\n corpus = [\"*.hlo\"];\n};\n", ":1: missing key 'sweep.machines'");
  refused("sweep: {\n corpus = [];\n machines = [\"m\"];\n compiler = \"c\";\n inputs = \"naive\";\n output = \"o\";\n};\n",
          ":2: 'sweep.corpus' must not be empty");
  refused("sweep: {\n corpus = \"*.hlo\";\n machines = [\"m\"];\n compiler = \"c\";\n inputs = \"naive\";\n output = \"o\";\n};\n",
          ":2: 'sweep.corpus' must be an array of strings");
  refused("sweep: {\n corpus = [\"*\"];\n machines = [\"m\"];\n compiler = \"c\";\n inputs = \"wild\";\n output = \"o\";\n};\n",
          ":5: 'sweep.inputs' must be an input profile");
  refused("sweep: {\n corpus = [\"*\"];\n machines = [\"m\"];\n compiler = \"c\";\n inputs = [\"naive\",\n"
          "   \"wild\"];\n output = \"o\";\n};\n",
          ":6: 'sweep.inputs' must be an input profile (naive, constrained, edge, oob-indices, special), not 'wild'");
  refused("sweep: {\n corpus = [\"*\"];\n machines = [\"m\"];\n compiler = \"c\";\n inputs = [];\n output = \"o\";\n};\n",
          ":5: 'sweep.inputs' must not be empty");
  refused("sweep: {\n corpus = ;\n};\n", ":2: syntax error");
  refused("other = 1;\nsweep: {};\n", ":1: unknown key 'other'");
  refused("sweep = 1;\n", ":1: missing group 'sweep'");
  /* A file that cannot be read is named as the sweep file. */
  tn_sweep_cfg c;
  hlo_error err = {0};
  assert_int_equal(tn_sweep_cfg_load("/nonexistent/daily.cfg", &c, &err), -1);
  assert_string_equal(err.msg, "/nonexistent/daily.cfg: cannot read the sweep file");
}

static void dates_expand_in_utc(void **state) {
  (void)state;
  char buf[64];
  hlo_error err = {0};
  time_t t = 1796000000; /* 2026-11-30T00:53:20Z */
  assert_int_equal(tn_sweep_expand("r/tune-%Y-%m-%d.h5", t, buf, sizeof buf, &err), 0);
  assert_string_equal(buf, "r/tune-2026-11-30.h5");
  assert_int_equal(tn_sweep_expand("", t, buf, sizeof buf, &err), -1);
  assert_int_equal(tn_sweep_expand("%Y%Y%Y%Y%Y%Y%Y%Y%Y%Y%Y%Y%Y%Y%Y%Y%Y", t, buf, 16, &err), -1);
  /* strftime's %n is a newline and %t a tab: never part of a file name. */
  assert_int_equal(tn_sweep_expand("r/tune-%n.h5", t, buf, sizeof buf, &err), -1);
  assert_non_null(strstr(err.msg, "control character"));
  assert_int_equal(tn_sweep_expand("%Y%t.md", t, buf, sizeof buf, &err), -1);
}

/* A list of input profiles rotates by UTC day.  2026-12-01 is day 20,788
 * since 1970-01-01 (Python's datetime.date subtraction), 1 mod 3, and its
 * midnight is 1,796,083,200 s since the epoch. */
static void inputs_rotate_by_day(void **state) {
  (void)state;
  tn_sweep_cfg c;
  memset(&c, 0, sizeof c);
  c.ninputs = 3;
  snprintf(c.inputs[0], sizeof c.inputs[0], "constrained");
  snprintf(c.inputs[1], sizeof c.inputs[1], "oob-indices");
  snprintf(c.inputs[2], sizeof c.inputs[2], "edge");
  time_t midnight = (time_t)1796083200;
  assert_string_equal(tn_sweep_inputs_of_day(&c, midnight), "oob-indices");
  assert_string_equal(tn_sweep_inputs_of_day(&c, midnight + 86399), "oob-indices"); /* 23:59:59 */
  assert_string_equal(tn_sweep_inputs_of_day(&c, midnight + 86400), "edge");
  assert_string_equal(tn_sweep_inputs_of_day(&c, midnight - 1), "constrained");
  assert_string_equal(tn_sweep_inputs_of_day(&c, 0), "constrained");  /* day 0 */
  assert_string_equal(tn_sweep_inputs_of_day(&c, -1), "edge");        /* day -1 */
  char text[128], a[32], b[32];
  tn_sweep_inputs_text(&c, text, sizeof text);
  assert_string_equal(text, "constrained,oob-indices,edge");
  /* The list of profiles is part of the sweep's identity. */
  tn_sweep_identity(&c, "tpu-v5e", 0, 0, a, sizeof a);
  c.ninputs = 1;
  tn_sweep_inputs_text(&c, text, sizeof text);
  assert_string_equal(text, "constrained");
  assert_string_equal(tn_sweep_inputs_of_day(&c, midnight), "constrained");
  tn_sweep_identity(&c, "tpu-v5e", 0, 0, b, sizeof b);
  assert_string_not_equal(a, b);
}

static void identity_and_shards(void **state) {
  (void)state;
  tn_sweep_cfg c;
  memset(&c, 0, sizeof c);
  c.ncorpus = 1;
  snprintf(c.corpus[0], sizeof c.corpus[0], "datasets/*.hlo");
  snprintf(c.compiler, sizeof c.compiler, "nightly");
  snprintf(c.inputs[0], sizeof c.inputs[0], "naive");
  c.ninputs = 1;
  char a[32], b[32], d[32];
  tn_sweep_identity(&c, "tpu-v5e", 0, 0, a, sizeof a);
  tn_sweep_identity(&c, "tpu-v5e", 0, 0, b, sizeof b);
  assert_string_equal(a, b);
  assert_int_equal(strlen(a), 16);
  tn_sweep_identity(&c, "tpu-v5e", 1, 2, d, sizeof d);
  assert_string_not_equal(a, d); /* a shard is another sweep */
  c.budget = 8;
  tn_sweep_identity(&c, "tpu-v5e", 0, 0, b, sizeof b);
  assert_string_not_equal(a, b);
  tn_sweep_identity(&c, "tpu-v4", 0, 0, d, sizeof d);
  assert_string_not_equal(b, d);

  /* Shards partition: each path in exactly one shard 1..n, stably. */
  int count[4] = {0};
  for (int i = 0; i < 400; i++) {
    char p[32];
    snprintf(p, sizeof p, "datasets/f%d.hlo", i);
    int s = tn_sweep_shard_of(p, 4);
    assert_true(s >= 1 && s <= 4);
    assert_int_equal(s, tn_sweep_shard_of(p, 4));
    count[s - 1]++;
  }
  for (int k = 0; k < 4; k++)
    assert_true(count[k] > 50); /* roughly balanced */
  assert_int_equal(tn_sweep_shard_of("anything", 1), 1);
}

static void corpus_globs_sort_and_dedupe(void **state) {
  (void)state;
  tn_sweep_cfg c;
  memset(&c, 0, sizeof c);
  c.ncorpus = 2;
  snprintf(c.corpus[0], sizeof c.corpus[0], "%s/compilers/*.cfg", TUNE_SRC_CONFIGS);
  snprintf(c.corpus[1], sizeof c.corpus[1], "%s/compilers/stable.cfg", TUNE_SRC_CONFIGS);
  char **files = NULL;
  int n = 0;
  hlo_error err = {0};
  assert_int_equal(tn_sweep_corpus(&c, &files, &n, &err), 0);
  assert_int_equal(n, 2); /* nightly, stable: stable once */
  assert_true(strstr(files[0], "nightly.cfg") != NULL);
  assert_true(strstr(files[1], "stable.cfg") != NULL);
  tn_sweep_files_free(files, n);
  snprintf(c.corpus[1], sizeof c.corpus[1], "%s/no-such-*.hlo", TUNE_SRC_CONFIGS);
  assert_int_equal(tn_sweep_corpus(&c, &files, &n, &err), -1);
  assert_true(strstr(err.msg, "matches no file") != NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(daily_cfg_loads),
      cmocka_unit_test(every_key_is_read),
      cmocka_unit_test(optional_keys_default),
      cmocka_unit_test(mistakes_name_file_line_and_key),
      cmocka_unit_test(dates_expand_in_utc),
      cmocka_unit_test(inputs_rotate_by_day),
      cmocka_unit_test(identity_and_shards),
      cmocka_unit_test(corpus_globs_sort_and_dedupe),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
