/* pull_retry.h - the hub client's waits between tries (private to
 * pull_hub.c and pull_retry.c). */
#ifndef COLI_PULL_RETRY_H
#define COLI_PULL_RETRY_H

#include <stddef.h>

#include "pull_hub.h"

/* A number of seconds in [lo, hi] from the environment variable name into
 * *out; unset or empty leaves *out alone. */
int hub_env_seconds(const char *name, double lo, double hi, double *out, coli_err *err);
/* The wait after failed try `attempt` (1-based; see the definition). */
double hub_backoff(hub_client *h, int attempt, long retry_after);
/* Retry-After from one raw header line in seconds, -1 when it is not one. */
long hub_parse_retry_after(const char *data, size_t n);
/* "6 tries" or "3 tries in 1.2 s (retry deadline 1 s)". */
void hub_tries_text(char *buf, size_t cap, int tries, int late, double secs, double deadline);
void hub_sleep_s(double s);

#endif
