/* parse: checked number parsing (no atoi/strtol without checks). All return 0 or -EINVAL /
 * -ERANGE and write the output only on success. */
#pragma once
#include <stdint.h>
#include <stddef.h>

/* A whole decimal number, optional leading '+', nothing after it. */
int parse_u64(const char *s, uint64_t *ret);
int parse_i64(const char *s, int64_t *ret);
/* The same, limited to [min, max]. */
int parse_uint_range(const char *s, unsigned min, unsigned max, unsigned *ret);
/* A number at the start of s (base 10 or 16 with base=16); *ret_end is set past it. */
int parse_u64_prefix(const char *s, int base, uint64_t *ret, const char **ret_end);
/* A duration: "250ms", "5s", "1.5s", "2m", "1h", "3d"; a bare number means seconds.
 * Result in milliseconds. Negative durations are rejected. */
int parse_duration_ms(const char *s, uint64_t *ret_ms);
/* A size in MiB: "512", "2GiB", "2G", "512MiB", "512M". Result in MiB. */
int parse_size_mib(const char *s, uint64_t *ret_mib);
