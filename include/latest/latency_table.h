/* The latency table of a GPU model, as `latest table` writes it
 * (docs/table.md): how long each change of the SM clock takes, per ordered
 * pair of clocks, at the statistic a runtime system picks. C99 and C++.
 * Link with -llatest_table. */
#ifndef LATEST_LATENCY_TABLE_H
#define LATEST_LATENCY_TABLE_H

#include <stddef.h>

#if defined(__GNUC__) || defined(__clang__)
#define LATEST_TABLE_API __attribute__((visibility("default")))
#else
#define LATEST_TABLE_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Every call returns one of these; err texts name the file and the problem. */
typedef enum latest_status {
  LATEST_OK = 0,
  LATEST_ERR_UNREADABLE = 1,      /* the file cannot be opened or read */
  LATEST_ERR_INVALID_JSON = 2,    /* not JSON */
  LATEST_ERR_SCHEMA_VERSION = 3,  /* a table of a schema version this library does not read */
  LATEST_ERR_INVALID_TABLE = 4,   /* JSON, but not a valid latency table (a field missing or of the wrong type) */
  LATEST_ERR_UNKNOWN_PAIR = 5,    /* a clock the table does not list */
  LATEST_ERR_NOT_MEASURED = 6,    /* the pair is listed as skipped or missing: no latency */
  LATEST_ERR_BAD_ARGUMENT = 7     /* a null pointer, an unknown statistic, a buffer too small */
} latest_status;

/* The schema version this library reads. */
#define LATEST_TABLE_SCHEMA_VERSION 1

typedef struct latest_table latest_table;

/* Loads a table. On success *out owns it (free with latest_table_free);
 * on failure *out is NULL and err (if not NULL) holds a message. */
LATEST_TABLE_API int latest_table_load(const char *path, latest_table **out, char *err, size_t err_len);
LATEST_TABLE_API void latest_table_free(latest_table *t);

/* The switching latency (request to every SM at the target) of init -> target,
 * in ms, without outliers. statistic: "min", "p05", "median", "mean", "p95",
 * "p99" or "max". */
LATEST_TABLE_API int latest_table_latency_ms(const latest_table *t, unsigned init_mhz, unsigned target_mhz, const char *statistic,
                            double *out_ms);
/* The transition latency (departure to arrival), the same way. */
LATEST_TABLE_API int latest_table_transition_ms(const latest_table *t, unsigned init_mhz, unsigned target_mhz, const char *statistic,
                               double *out_ms);

/* Why a measured pair's numbers need a look: bits of *out_flags, 0 when
 * none. A runtime system may prefer a neighbouring pair, or a safety margin. */
#define LATEST_FLAG_NOISY 1u              /* more than 10 % of its measurements are outliers */
#define LATEST_FLAG_TARGET_NOT_REACHED 2u /* the card ran nearer another clock than the target */
LATEST_TABLE_API int latest_table_flags(const latest_table *t, unsigned init_mhz, unsigned target_mhz, unsigned *out_flags);

/* The table's clocks in MHz, ascending: writes up to capacity of them and
 * sets *count to how many there are (call with capacity 0 to ask). Returns
 * LATEST_ERR_BAD_ARGUMENT when capacity is too small. */
LATEST_TABLE_API int latest_table_clocks(const latest_table *t, unsigned *out, size_t capacity, size_t *count);

/* Whether the table holds for a device: device is its model name (as NVML
 * reports it) or one of the UUIDs the table merges; memory_mhz its memory
 * clock, or 0 to leave it out. *matches is 1 or 0. */
LATEST_TABLE_API int latest_table_matches_device(const latest_table *t, const char *device, unsigned memory_mhz, int *matches);

/* The GPU model the table describes (valid while t is). */
LATEST_TABLE_API const char *latest_table_model(const latest_table *t);

/* The advisor and routes (docs/table.md, "Advisor"). */

/* The most requests a route holds, the target's included. */
#define LATEST_ROUTE_MAX_HOPS 8

/* How to reach a clock: the clocks to request in order (the last is the
 * target) and, after each, how long to wait before the next request: the
 * hop's latency at the statistic. */
typedef struct latest_route {
  size_t hops;                                  /* 1: the direct change; 0: from == to */
  unsigned clocks_mhz[LATEST_ROUTE_MAX_HOPS];
  double wait_ms[LATEST_ROUTE_MAX_HOPS];
  double latency_ms;  /* predicted end to end at the statistic: the sum of the waits */
  /* The predicted band: every wait but the last, plus the last hop's p05
   * (low) and p95 (high). */
  double low_ms, high_ms;
  double direct_ms;   /* the direct change at the statistic */
} latest_route;

/* The fastest route from -> to at a statistic, searched over every measured
 * pair of the table (at most LATEST_ROUTE_MAX_HOPS requests). A detour is
 * returned only when it beats the direct change by more than margin_ms (at
 * least 0); otherwise, ties included, the direct change. The direct change
 * must be measured (else LATEST_ERR_NOT_MEASURED): a pair skipped as
 * indistinguishable is no reason for a detour. */
LATEST_TABLE_API int latest_table_route(const latest_table *t, unsigned from_mhz, unsigned to_mhz, const char *statistic,
                                        double margin_ms, latest_route *out);

typedef enum latest_rule {
  /* The phase must repay the change there and the change back (default). */
  LATEST_RULE_BREAK_EVEN = 0,
  /* The phase must last more than 3x the change's latency at the statistic
   * (the rule of the paper's summary, there with the worst case: "max"). */
  LATEST_RULE_THREE_X = 1
} latest_rule;

typedef enum latest_decision { LATEST_STAY = 0, LATEST_SWITCH = 1 } latest_decision;

/* The caller's model, as ratios in any one unit (only their ratio counts):
 * what a ms of the phase at the wanted clock gains over the current one
 * (time or energy), and what a ms at a clock nobody wants costs after the
 * phase, while the clock changes back. NULL: 1 and 1. */
typedef struct latest_cost_model {
  double gain;
  double penalty;
} latest_cost_model;

typedef struct latest_advice {
  latest_decision decision;
  latest_rule rule;              /* the rule that decided */
  latest_route route;            /* the way there (and the one to take on "switch") */
  latest_route back;             /* the way back after the phase */
  double latency_ms;             /* the route's, at the statistic */
  double time_lost_ms;           /* switch: the way there and back; stay: the whole phase */
  double min_interval_ms;        /* the shortest phase for which this rule switches */
} latest_advice;

/* Whether to change from -> to for a phase of phase_ms (at least 0). Stays
 * unless the phase lasts more than the rule's minimum interval. from == to:
 * stay, with a route of 0 hops. */
LATEST_TABLE_API int latest_table_advise(const latest_table *t, unsigned from_mhz, unsigned to_mhz, double phase_ms,
                                         const char *statistic, latest_rule rule, const latest_cost_model *model,
                                         double margin_ms, latest_advice *out);

/* A short English text for a status code. */
LATEST_TABLE_API const char *latest_status_text(int status);

#ifdef __cplusplus
}
#endif

#endif /* LATEST_LATENCY_TABLE_H */
