/* fuzz_parse.c — libFuzzer target for the HLO front end.
 *
 * Every input must either be refused with an error value or parse; what
 * parses must verify or be refused, and must print to text that parses
 * again and prints the same.  Any crash, leak or sanitizer report is a bug.
 * See tests/fuzz/run.sh for the command.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "hlo/hlo_parse.h"
#include "hlo/hlo_print.h"
#include "hlo/hlo_verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hlo_error err;
  hlo_module *m = hlo_parse((const char *)data, size, &err);
  if (!m)
    return 0;
  (void)hlo_verify(m, &err);
  size_t n1 = 0;
  char *t1 = hlo_print_module(m, &n1);
  if (t1) {
    hlo_module *m2 = hlo_parse(t1, n1, &err);
    if (!m2)
      abort(); /* printed text must parse */
    size_t n2 = 0;
    char *t2 = hlo_print_module(m2, &n2);
    if (!t2 || n1 != n2 || memcmp(t1, t2, n1) != 0)
      abort(); /* print must be a fixed point */
    if (!hlo_module_equal(m, m2, NULL, 0))
      abort();
    free(t2);
    hlo_module_free(m2);
    free(t1);
  }
  hlo_module_free(m);
  return 0;
}
