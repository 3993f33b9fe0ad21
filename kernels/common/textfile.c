/* Whole small files read on one rank and broadcast. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textfile.h"

char *iotame_text_read(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        iotame_error("cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        if (cap >= IOTAME_TEXT_MAX) {
            iotame_error("%s: larger than %zu bytes", path, IOTAME_TEXT_MAX);
            free(buf);
            fclose(f);
            return NULL;
        }
        cap *= 2;
        buf = realloc(buf, cap + 1);
    }
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        iotame_error("cannot read %s", path);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    *len = n;
    return buf;
}

bool iotame_text_bcast(const iotame_run_t *run, char **text, size_t *len)
{
    long long n = run->rank == 0 ? (*text ? (long long)*len : -1) : 0;
    MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, run->comm);
    if (n < 0) return false;
    if (run->rank != 0) *text = malloc((size_t)n + 1);
    MPI_Bcast(*text, (int)n, MPI_CHAR, 0, run->comm);
    (*text)[n] = '\0';
    *len = (size_t)n;
    return true;
}
