/* replay: a job's I/O replayed from a replay spec (docs/kernels.md "replay"; the spec comes from `iotame replay spec`
 * on a Darshan log or an iotame statistics file with a request trace, or is written by hand).
 *
 * Rank 0 reads --from (converting it first when it is not a spec) and broadcasts it; every rank parses and validates
 * it. Setup (untimed): a communicator per distinct procs set of the MPIIO files, --dir and the files created afresh,
 * the preload ranges written with the pattern. One timed phase "replay": every rank processes its files in spec
 * order (open, its calls, close); its bytes are what the rank read and wrote. Then every rank reads back (POSIX)
 * what it wrote and checks the pattern, and the files are removed unless --keep. The content is the common pattern
 * of writer rank 0 at each offset, so every read and every written byte is verifiable whoever wrote it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/textfile.h"
#include "kernels.h"
#include "replay/budget.h"
#include "replay/convert.h"
#include "replay/io.h"
#include "replay/spec.h"

typedef struct {
    const char *from, *dir;
    double scale;
    int64_t seed, replay_bytes;
    bool compute, keep;
} replay_opts_t;

static int replay_parse(iotame_run_t *run, int argc, char **argv, replay_opts_t *o)
{
    const iotame_option_t opts[] = {
        {.name = "from", .type = IOTAME_OPT_STRING, .value = &o->from,
         .help = "the replay spec (JSON), or a Darshan log or iotame statistics file to convert into one"},
        {.name = "dir", .type = IOTAME_OPT_STRING, .value = &o->dir, .def = ".",
         .help = "directory the spec's files are created in"},
        {.name = "scale", .type = IOTAME_OPT_DOUBLE, .value = &o->scale, .def = "1", .max = "1",
         .help = "fraction (0 < F <= 1) of each process's calls per file to replay, the first ones"},
        {.name = "replay-bytes", .type = IOTAME_OPT_SIZE, .value = &o->replay_bytes, .def = "0", .min = "0",
         .help = "most bytes the replay may write, preload included (0: no limit but the free space of --dir); "
                 "the scale is lowered until they fit"},
        {.name = "compute", .type = IOTAME_OPT_FLAG, .value = &o->compute,
         .help = "sleep each call's gap (the job's computation) before it; not counted as I/O time"},
        {.name = "seed", .type = IOTAME_OPT_INT, .value = &o->seed, .def = "42", .min = "0",
         .help = "seed of the data pattern"},
        {.name = "keep", .type = IOTAME_OPT_FLAG, .value = &o->keep, .help = "keep the files at the end"},
        {0}};
    int rc = iotame_options_parse(run, opts, argc, argv);
    if (rc) return rc;
    if (!o->from || !*o->from)
        return iotame_usage_error("option --from: expected a replay spec (or a file to convert)");
    if (!(o->scale > 0)) return iotame_usage_error("option --scale: expected a number > 0 and <= 1, got %g", o->scale);
    if (!*o->dir) return iotame_usage_error("option --dir: expected a directory");
    return 0;
}

/* The spec's text on every rank (rank 0 reads --from, converted when it is not a spec), or NULL everywhere.
 * *converted tells every rank whether the converter made it. */
static char *replay_load(iotame_run_t *run, const char *from, size_t *len, bool *converted)
{
    char *text = NULL;
    int conv = 0;
    if (run->rank == 0) {
        text = iotame_text_read(from, len);
        if (text && !replay_is_spec(text, *len)) {
            free(text);
            text = replay_convert(from, len);
            conv = 1;
        }
    }
    MPI_Bcast(&conv, 1, MPI_INT, 0, run->comm);
    *converted = conv;
    if (!iotame_text_bcast(run, &text, len)) return NULL;
    return text;
}

/* mkdir -p of path's directories (path itself too when it ends the directory). Returns 0 or -1 after a message. */
static int replay_mkdirs(const char *path, bool last)
{
    char *p = strdup(path);
    int rc = 0;
    for (char *s = p + 1; rc == 0; s++) {
        bool end = *s == '\0';
        if (*s != '/' && !end) continue;
        if (end && !last) break;
        *s = '\0';
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            iotame_error("cannot create directory %s: %s", p, strerror(errno));
            rc = -1;
        }
        if (end) break;
        *s = '/';
    }
    free(p);
    return rc;
}

/* A communicator per MPIIO file: MPI_COMM_SELF for one proc, MPI_COMM_NULL for a file this rank is not in; one
 * MPI_Comm_split per distinct procs set (files with the same set share it). Collective on run->comm. */
static MPI_Comm *replay_comms(iotame_run_t *run, const replay_spec_t *spec)
{
    MPI_Comm *comms = calloc(spec->nfiles ? spec->nfiles : 1, sizeof *comms);
    for (size_t i = 0; i < spec->nfiles; i++) {
        const replay_file_t *f = &spec->files[i];
        comms[i] = MPI_COMM_NULL;
        if (f->api != IOTAME_API_MPIIO) continue;
        if (f->nprocs == 1) {
            if (f->me >= 0) comms[i] = MPI_COMM_SELF;
            continue;
        }
        size_t same = i;
        for (size_t j = 0; j < i && same == i; j++) {
            const replay_file_t *g = &spec->files[j];
            if (g->api == IOTAME_API_MPIIO && g->nprocs == f->nprocs &&
                memcmp(g->procs, f->procs, f->nprocs * sizeof *f->procs) == 0)
                same = j;
        }
        if (same != i) comms[i] = comms[same];
        else MPI_Comm_split(run->comm, f->me >= 0 ? 0 : MPI_UNDEFINED, f->me, &comms[i]);
    }
    return comms;
}

/* Frees each communicator replay_comms made once: files of the same procs set share one handle, so every copy of
 * a handle is cleared before it is freed (MPI_Comm_free nulls only the variable it is given). */
static void replay_comms_free(const replay_spec_t *spec, MPI_Comm *comms)
{
    for (size_t i = 0; i < spec->nfiles; i++) {
        MPI_Comm c = comms[i];
        if (c == MPI_COMM_NULL || c == MPI_COMM_SELF) continue;
        for (size_t k = i; k < spec->nfiles; k++)
            if (comms[k] == c) comms[k] = MPI_COMM_NULL;
        MPI_Comm_free(&c);
    }
    free(comms);
}

/* Untimed: each file removed and created afresh by its first proc, sized to the end of every rank's share of its
 * preload (replay_budget_preload); then every rank writes its share. Returns IOTAME_EXIT_OK or IOTAME_EXIT_IO on
 * every rank. */
static int replay_setup(iotame_run_t *run, const replay_spec_t *spec, replay_io_t *io)
{
    size_t nf = spec->nfiles;
    uint64_t (**pre)[2] = calloc(nf ? nf : 1, sizeof *pre);
    size_t *npre = calloc(nf ? nf : 1, sizeof *npre);
    uint64_t *end = calloc(nf ? nf : 1, sizeof *end);
    bool *whole = replay_budget_whole(run, spec);
    for (size_t i = 0; i < nf; i++) {
        npre[i] = replay_budget_preload(&spec->files[i], whole[i], &pre[i]);
        for (size_t k = 0; k < npre[i]; k++)
            if (pre[i][k][0] + pre[i][k][1] > end[i]) end[i] = pre[i][k][0] + pre[i][k][1];
    }
    MPI_Allreduce(MPI_IN_PLACE, end, (int)nf, MPI_UINT64_T, MPI_MAX, run->comm);
    bool ok = true;
    for (size_t i = 0; i < nf && ok; i++) {
        const replay_file_t *f = &spec->files[i];
        if (f->me != 0) continue;
        ok = replay_mkdirs(f->path, false) == 0 && iotame_file_remove(IOTAME_API_POSIX, f->path) == 0;
        if (ok && end[i]) replay_io_create(io, f->path, end[i]);
    }
    if (iotame_all_ok(run, ok)) {   /* every file exists at its size before any rank maps it */
        for (size_t i = 0; i < nf; i++)
            for (size_t k = 0; k < npre[i]; k++) replay_io_preload(io, spec->files[i].path, pre[i][k][0], pre[i][k][1]);
    }
    for (size_t i = 0; i < nf; i++) free(pre[i]);
    free(pre);
    free(npre);
    free(end);
    free(whole);
    return iotame_all_ok(run, ok) ? IOTAME_EXIT_OK : IOTAME_EXIT_IO;
}

static int replay_remove(iotame_run_t *run, const replay_spec_t *spec)
{
    MPI_Barrier(run->comm);
    bool ok = true;
    for (size_t i = 0; i < spec->nfiles; i++)
        if (spec->files[i].me == 0) ok &= iotame_file_remove(IOTAME_API_POSIX, spec->files[i].path) == 0;
    return iotame_all_ok(run, ok) ? IOTAME_EXIT_OK : IOTAME_EXIT_IO;
}

/* params: the spec's source, files, and calls and bytes summed over ranks. */
static void replay_params(iotame_run_t *run, const replay_spec_t *spec, const replay_io_t *io)
{
    uint64_t n[3] = {io->calls, io->read_bytes, io->write_bytes};
    MPI_Allreduce(MPI_IN_PLACE, n, 3, MPI_UINT64_T, MPI_SUM, run->comm);
    json_object_set(run->params, "source", spec->source ? spec->source : json_null());
    iotame_param_int(run, "files", (int64_t)spec->nfiles);
    iotame_param_int(run, "calls", (int64_t)n[0]);
    iotame_param_int(run, "read_bytes", (int64_t)n[1]);
    iotame_param_int(run, "write_bytes", (int64_t)n[2]);
}

static int replay_run(iotame_run_t *run, int argc, char **argv)
{
    replay_opts_t o;
    int rc = replay_parse(run, argc, argv, &o);
    if (rc) return rc;
    run->seed = (uint64_t)o.seed;
    size_t len = 0;
    bool converted;
    char *text = replay_load(run, o.from, &len, &converted);
    if (!text) return IOTAME_EXIT_USAGE;
    char what[4096];
    snprintf(what, sizeof what, converted ? "converted from %s" : "%s", o.from);
    replay_spec_t spec;
    rc = replay_spec_parse(run, text, len, what, o.dir, &spec);
    free(text);
    if (rc) return rc;
    if (!iotame_all_ok(run, run->rank != 0 || replay_mkdirs(o.dir, true) == 0)) {
        replay_spec_free(&spec);
        return IOTAME_EXIT_IO;
    }
    double scale;
    uint64_t created;
    rc = replay_budget_fit(run, &spec, o.scale, (uint64_t)o.replay_bytes, o.dir, &scale, &created);
    if (rc) {
        replay_spec_free(&spec);
        return rc;
    }
    json_object_set_new(run->params, "scale_applied", json_real(scale));
    iotame_param_int(run, "created_bytes", (int64_t)created);

    replay_io_t io = {.run = run, .compute = o.compute};
    MPI_Comm *comms = replay_comms(run, &spec);
    rc = replay_setup(run, &spec, &io);
    if (rc == IOTAME_EXIT_OK) {
        iotame_phase_begin(run, "replay");
        for (size_t i = 0; i < spec.nfiles; i++)
            if (spec.files[i].me >= 0) replay_io_file(&io, &spec.files[i], comms[i]);
        iotame_phase_end(run, io.read_bytes + io.write_bytes);
        MPI_Barrier(run->comm); /* every file closed everywhere before the read-back */
        for (size_t i = 0; i < spec.nfiles; i++)
            if (spec.files[i].me >= 0) replay_io_verify(&io, &spec.files[i]);
        replay_params(run, &spec, &io);
        if (!o.keep) rc = replay_remove(run, &spec);
    }
    free(io.buf);
    replay_comms_free(&spec, comms);
    replay_spec_free(&spec);
    return rc;
}

const iotame_kernel_t iotame_kernel_replay = {
    .name = "replay",
    .summary = "a job's I/O replayed from a replay spec (--from SPEC.json, or a Darshan log / statistics file)",
    .run = replay_run,
};
