/* profile/unread.c: the profile's text without what the runtime never reads. A version 2 profile keeps calibrate's
 * measured rows (strategies.measured, most of its bytes); the runtime reads only their fit, and parsing the rows
 * is most of the profile's cost at an application's first open. The rows' value is replaced by null before the
 * parse. The rows are calibrate's, checked by `iotame-config profile` and by the Python side, which read the
 * whole text. The scan is of JSON's syntax only, as far as it needs it: anything it does not follow leaves the
 * text whole, and the parser says what is wrong. */
#include <stdlib.h>
#include <string.h>

#include "profile.h"

static const char *unread_space(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n')) p++;
    return p;
}

/* p at a string's opening quote: just after its closing quote, or NULL. */
static const char *unread_string(const char *p, const char *end)
{
    for (p++; p < end; p++) {
        if (*p == '\\') p++;
        else if (*p == '"') return p + 1;
    }
    return NULL;
}

/* p at a value: just after it, or NULL (objects and arrays by their depth, scalars up to a delimiter). */
static const char *unread_value(const char *p, const char *end)
{
    if (p >= end) return NULL;
    if (*p == '"') return unread_string(p, end);
    if (*p != '{' && *p != '[') {
        const char *q = p;
        while (q < end && !strchr(",:}] \t\r\n\"{[", *q)) q++;
        return q > p ? q : NULL;
    }
    int depth = 0;
    while (p < end) {
        if (*p == '"') {
            if (!(p = unread_string(p, end))) return NULL;
            continue;
        }
        if (*p == '{' || *p == '[') depth++;
        else if ((*p == '}' || *p == ']') && --depth == 0) return p + 1;
        p++;
    }
    return NULL;
}

/* The value of member `name` of the object at p: 1 and [*from, *to), else 0 (absent, or not followed). */
static int unread_member(const char *p, const char *end, const char *name, const char **from, const char **to)
{
    const size_t n = strlen(name);
    p = unread_space(p, end);
    if (p >= end || *p != '{') return 0;
    for (p = unread_space(p + 1, end); p < end && *p == '"'; p = unread_space(p + 1, end)) {
        const char *key = p + 1, *after = unread_string(p, end);
        if (!after || (p = unread_space(after, end)) >= end || *p != ':') return 0;
        const char *v = unread_space(p + 1, end), *ve = unread_value(v, end);
        if (!ve) return 0;
        if ((size_t)(after - 1 - key) == n && memcmp(key, name, n) == 0) {
            *from = v, *to = ve;
            return 1;
        }
        if ((p = unread_space(ve, end)) >= end || *p != ',') return 0;
    }
    return 0;
}

char *iotame__profile_unread(const char *text, size_t len, size_t *out_len)
{
    const char *end = text + len, *s0, *s1, *m0, *m1;
    if (!unread_member(text, end, "strategies", &s0, &s1) || !unread_member(s0, s1, "measured", &m0, &m1)) return NULL;
    const size_t head = (size_t)(m0 - text), tail = (size_t)(end - m1);
    char *out = malloc(head + 4 + tail + 1);
    if (!out) return NULL;
    memcpy(out, text, head);
    memcpy(out + head, "null", 4);
    memcpy(out + head + 4, m1, tail);
    out[head + 4 + tail] = '\0';
    *out_len = head + 4 + tail;
    return out;
}
