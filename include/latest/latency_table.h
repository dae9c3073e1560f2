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

/* A short English text for a status code. */
LATEST_TABLE_API const char *latest_status_text(int status);

#ifdef __cplusplus
}
#endif

#endif /* LATEST_LATENCY_TABLE_H */
