/* json_util: jansson helpers for hostile text. jansson accepts only valid UTF-8, and process
 * names and command lines are anything: repair them (U+FFFD) instead of dropping the field. */
#pragma once
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The version of every JSON document ghostvram writes (docs/json.md): one number for all
 * commands, bumped when a field changes meaning or name. */
#define GV_SCHEMA_VERSION 2

/* A JSON string from arbitrary bytes (repaired); json null for NULL. Never returns NULL
 * except on ENOMEM. */
json_t *json_text(const char *s);
json_t *json_textn(const char *s, size_t len);
/* An integer, or null when !known. */
json_t *json_u64_or_null(uint64_t v, int known);
/* json_object_set_new that tolerates a NULL value (sets null). */
int json_set(json_t *obj, const char *key, json_t *v);
/* A time, the one way every document writes it: KEY as RFC 3339 UTC text to the second
 * ("2026-12-01T16:02:49Z", what jq's fromdate reads) and KEY_epoch as seconds since 1970 with
 * the fraction; both null when !known. 0, or -ENOMEM. */
int json_set_time(json_t *obj, const char *key, double epoch, int known);
/* Read helpers for bundles: a missing/mistyped field yields the default. */
const char *json_get_str(const json_t *obj, const char *key, const char *def);
uint64_t json_get_u64(const json_t *obj, const char *key, uint64_t def);
int64_t json_get_i64(const json_t *obj, const char *key, int64_t def);
double json_get_real(const json_t *obj, const char *key, double def);
int json_get_bool(const json_t *obj, const char *key, int def);
