/* The C header compiles as C99 and the library links from C: loads a table
 * given on the command line and prints init target median p95 of each
 * measured pair, for the CLI test to compare with `latest analyze`. */
#include <latest/latency_table.h>

#include <stdio.h>

int main(int argc, char **argv) {
  char err[512];
  latest_table *t = NULL;
  size_t n = 0, i, j;
  unsigned clocks[512];
  if (argc != 2) return 2;
  if (latest_table_load(argv[1], &t, err, sizeof err) != LATEST_OK) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  if (latest_table_clocks(t, clocks, sizeof clocks / sizeof clocks[0], &n) != LATEST_OK) return 1;
  for (i = 0; i < n; ++i)
    for (j = 0; j < n; ++j) {
      double median, p95;
      if (i == j) continue;
      if (latest_table_latency_ms(t, clocks[i], clocks[j], "median", &median) != LATEST_OK) continue;
      if (latest_table_latency_ms(t, clocks[i], clocks[j], "p95", &p95) != LATEST_OK) return 1;
      printf("%u %u %.6f %.6f\n", clocks[i], clocks[j], median, p95);
    }
  latest_table_free(t);
  return 0;
}
