/* The advisor through the C API: answers each line of a query file
 * (advisor_queries.txt) in the format advisor_agreement.py compares with
 * the C++ and Python calls. */
#include <latest/latency_table.h>

#include <stdio.h>
#include <string.h>

static void print_route(const latest_route *r) {
  size_t h;
  printf(" hops %u", (unsigned)r->hops);
  for (h = 0; h < r->hops; ++h) printf(" %u/%.6f", r->clocks_mhz[h], r->wait_ms[h]);
  printf(" latency %.6f band %.6f %.6f direct %.6f", r->latency_ms, r->low_ms, r->high_ms, r->direct_ms);
}

int main(int argc, char **argv) {
  char err[512], kind[16], statistic[16], rule[16];
  latest_table *t = NULL;
  FILE *queries;
  unsigned from, to;
  double phase, gain, penalty, margin;
  if (argc != 3) return 2;
  if (latest_table_load(argv[1], &t, err, sizeof err) != LATEST_OK) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  queries = fopen(argv[2], "r");
  if (!queries) return 1;
  while (fscanf(queries, "%15s", kind) == 1) {
    int rc;
    if (strcmp(kind, "route") == 0) {
      latest_route r;
      if (fscanf(queries, "%u %u %15s %lf", &from, &to, statistic, &margin) != 4) return 1;
      rc = latest_table_route(t, from, to, statistic, margin, &r);
      printf("route %u %u %s %.6f: status %d", from, to, statistic, margin, rc);
      if (rc == LATEST_OK) print_route(&r);
    } else {
      latest_advice a;
      latest_cost_model model;
      if (fscanf(queries, "%u %u %lf %15s %15s %lf %lf %lf", &from, &to, &phase, statistic, rule, &gain, &penalty,
                 &margin) != 8)
        return 1;
      model.gain = gain;
      model.penalty = penalty;
      rc = latest_table_advise(t, from, to, phase, statistic,
                               strcmp(rule, "3x") == 0 ? LATEST_RULE_THREE_X : LATEST_RULE_BREAK_EVEN, &model, margin, &a);
      printf("advise %u %u %.6f %s %s: status %d", from, to, phase, statistic, rule, rc);
      if (rc == LATEST_OK) {
        printf(" %s %s latency %.6f lost %.6f interval %.6f route", a.decision == LATEST_SWITCH ? "switch" : "stay",
               a.rule == LATEST_RULE_THREE_X ? "3x" : "break-even", a.latency_ms, a.time_lost_ms, a.min_interval_ms);
        print_route(&a.route);
        printf(" back");
        print_route(&a.back);
      }
    }
    printf("\n");
  }
  fclose(queries);
  latest_table_free(t);
  return 0;
}
