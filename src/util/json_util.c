#include "util/json_util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "util/buf.h"
#include "util/escape.h"
#include "util/timefmt.h"

json_t *json_textn(const char *s, size_t len)
{
        if (!s)
                return json_null();
        if (utf8_valid_all(s, len))
                return json_stringn_nocheck(s, len);
        json_t *v;
        struct buf b = BUF_INIT(0);
        if (esc_utf8_repair(&b, s, len) < 0) {
                buf_free(&b);
                return NULL;
        }
        v = json_stringn(buf_str(&b), b.len);
        buf_free(&b);
        return v;
}

json_t *json_text(const char *s)
{
        return s ? json_textn(s, strlen(s)) : json_null();
}

json_t *json_u64_or_null(uint64_t v, int known)
{
        return known ? json_integer((json_int_t)v) : json_null();
}

int json_set(json_t *obj, const char *key, json_t *v)
{
        return json_object_set_new(obj, key, v ? v : json_null());
}

int json_set_time(json_t *obj, const char *key, double epoch, int known)
{
        char text[40], ekey[64];
        if (snprintf(ekey, sizeof(ekey), "%s_epoch", key) >= (int)sizeof(ekey))
                return -ENAMETOOLONG;
        bool ok = known && rfc3339_format(epoch, false, text, sizeof(text)) == 0;
        int r = json_set(obj, key, ok ? json_string(text) : json_null());
        r |= json_set(obj, ekey, ok ? json_real(epoch) : json_null());
        return r ? -ENOMEM : 0;
}

const char *json_get_str(const json_t *obj, const char *key, const char *def)
{
        const json_t *v = json_object_get(obj, key);
        return json_is_string(v) ? json_string_value(v) : def;
}

uint64_t json_get_u64(const json_t *obj, const char *key, uint64_t def)
{
        const json_t *v = json_object_get(obj, key);
        return json_is_integer(v) && json_integer_value(v) >= 0 ? (uint64_t)json_integer_value(v) : def;
}

int64_t json_get_i64(const json_t *obj, const char *key, int64_t def)
{
        const json_t *v = json_object_get(obj, key);
        return json_is_integer(v) ? (int64_t)json_integer_value(v) : def;
}

double json_get_real(const json_t *obj, const char *key, double def)
{
        const json_t *v = json_object_get(obj, key);
        return json_is_number(v) ? json_number_value(v) : def;
}

int json_get_bool(const json_t *obj, const char *key, int def)
{
        const json_t *v = json_object_get(obj, key);
        return json_is_boolean(v) ? json_is_true(v) : def;
}
