/* json_util: jansson helpers for hostile text. jansson accepts only valid UTF-8, and process
 * names and command lines are anything: repair them (U+FFFD) instead of dropping the field. */
#pragma once
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* A JSON string from arbitrary bytes (repaired); json null for NULL. Never returns NULL
 * except on ENOMEM. */
json_t *json_text(const char *s);
json_t *json_textn(const char *s, size_t len);
/* An integer, or null when !known. */
json_t *json_u64_or_null(uint64_t v, int known);
/* json_object_set_new that tolerates a NULL value (sets null). */
int json_set(json_t *obj, const char *key, json_t *v);
/* Read helpers for bundles: a missing/mistyped field yields the default. */
const char *json_get_str(const json_t *obj, const char *key, const char *def);
uint64_t json_get_u64(const json_t *obj, const char *key, uint64_t def);
int64_t json_get_i64(const json_t *obj, const char *key, int64_t def);
double json_get_real(const json_t *obj, const char *key, double def);
int json_get_bool(const json_t *obj, const char *key, int def);
