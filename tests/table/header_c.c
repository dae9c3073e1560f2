/* The C header on its own, as C99. */
#include <latest/latency_table.h>
