/* A collective job whose access pattern changes from phase to phase, for the selector's dynamic experiment
 * (bench/collective.py; Orthrus, section 2.1: a new call signature starts a new examination).
 *
 * The ranks interleave chunks of CHUNK bytes through a vector file view, as ROMIO's noncontig benchmark does: chunk
 * j of rank r in call i of a phase is at base + ((i * veclen + j) * nprocs + r) * CHUNK, veclen = BYTES / CHUNK. Each
 * MPI_File_write_at_all (read_at_all) moves BYTES per rank from a contiguous buffer; phase k makes CALLS calls on
 * its own region of the file, so a later phase with the chunk size of an earlier one repeats its call signature.
 * Writes end every phase with MPI_File_sync, timed in the phase; reads verify every byte (a pattern of the file
 * offset). Filling and checking buffers is not timed. A call's time is the slowest rank's.
 *
 * Prints one JSON object: {"mode", "nprocs", "bytes_per_call", "phases": [{"chunk", "calls", "bytes", "seconds",
 * "mbs", "call_seconds": [...]}], "verified", "errors"}. Exit 1 when a read does not verify.
 * Usage: collective_phases FILE write|read BYTES CHUNK:CALLS [CHUNK:CALLS ...] */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static unsigned char pattern(int64_t off)
{
    uint64_t z = (uint64_t)off * 0x9E3779B97F4A7C15ull;
    return (unsigned char)(z >> 56);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    if (argc < 5 || (strcmp(argv[2], "write") && strcmp(argv[2], "read"))) {
        if (rank == 0) fprintf(stderr, "usage: collective_phases FILE write|read BYTES CHUNK:CALLS [CHUNK:CALLS ...]\n");
        MPI_Finalize();
        return 2;
    }
    const int write = strcmp(argv[2], "write") == 0;
    const int64_t bytes = atoll(argv[3]);
    const int nph = argc - 4;
    int64_t *chunk = calloc((size_t)nph, sizeof *chunk), *calls = calloc((size_t)nph, sizeof *calls);
    for (int k = 0; k < nph; k++) {
        long long c = 0, n = 0;
        if (sscanf(argv[4 + k], "%lld:%lld", &c, &n) != 2 || c < 1 || n < 1 || bytes < c || bytes % c || bytes > INT32_MAX) {
            if (rank == 0) fprintf(stderr, "collective_phases: bad phase %s (CHUNK must divide BYTES)\n", argv[4 + k]);
            MPI_Finalize();
            return 2;
        }
        chunk[k] = c;
        calls[k] = n;
    }
    unsigned char *buf = malloc((size_t)bytes);
    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_WORLD, argv[1], write ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY,
                           MPI_INFO_NULL, &fh);
    if (rc != MPI_SUCCESS) {
        if (rank == 0) fprintf(stderr, "collective_phases: cannot open %s\n", argv[1]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    long long errors = 0;
    int64_t base = 0;
    if (rank == 0) printf("{\"mode\": \"%s\", \"nprocs\": %d, \"bytes_per_call\": %lld, \"phases\": [", argv[2], np, (long long)bytes);
    for (int k = 0; k < nph; k++) {
        const int64_t c = chunk[k], veclen = bytes / c, n = calls[k];
        MPI_Datatype vec, ftype;
        MPI_Type_vector((int)veclen, (int)c, (int)(np * c), MPI_BYTE, &vec);
        MPI_Type_create_resized(vec, 0, (MPI_Aint)(np * c * veclen), &ftype);
        MPI_Type_commit(&ftype);
        MPI_Type_free(&vec);
        MPI_File_set_view(fh, base + rank * c, MPI_BYTE, ftype, "native", MPI_INFO_NULL);
        double *t = calloc((size_t)n + 1, sizeof *t), *tmax = calloc((size_t)n + 1, sizeof *tmax);
        for (int64_t i = 0; i < n; i++) {
            /* file offset of byte b of this call's buffer: chunk j = b / c, byte b % c */
            if (write)
                for (int64_t b = 0; b < bytes; b++)
                    buf[b] = pattern(base + ((i * veclen + b / c) * np + rank) * c + b % c);
            else
                memset(buf, 0, (size_t)bytes);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            rc = write ? MPI_File_write_at_all(fh, (MPI_Offset)(i * bytes), buf, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE)
                       : MPI_File_read_at_all(fh, (MPI_Offset)(i * bytes), buf, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE);
            t[i] = MPI_Wtime() - t0;
            if (rc != MPI_SUCCESS) MPI_Abort(MPI_COMM_WORLD, 1);
            if (!write)
                for (int64_t b = 0; b < bytes; b++) {
                    int64_t off = base + ((i * veclen + b / c) * np + rank) * c + b % c;
                    if (buf[b] != pattern(off) && errors++ < 3)
                        fprintf(stderr, "rank %d: byte at offset %lld: got %d, expected %d\n", rank, (long long)off,
                                buf[b], pattern(off));
                }
        }
        if (write) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_File_sync(fh);
            t[n] = MPI_Wtime() - t0;
        }
        MPI_Reduce(t, tmax, (int)n + 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (rank == 0) {
            double sum = 0;
            for (int64_t i = 0; i <= n; i++) sum += tmax[i];
            int64_t moved = bytes * np * n;
            printf("%s{\"chunk\": %lld, \"calls\": %lld, \"bytes\": %lld, \"seconds\": %.6f, \"mbs\": %.3f, "
                   "\"sync_seconds\": %.6f, \"call_seconds\": [", k ? ", " : "", (long long)c, (long long)n,
                   (long long)moved, sum, sum > 0 ? moved / sum / 1e6 : 0.0, tmax[n]);
            for (int64_t i = 0; i < n; i++) printf("%s%.6f", i ? ", " : "", tmax[i]);
            printf("]}");
        }
        free(t);
        free(tmax);
        MPI_Type_free(&ftype);
        base += bytes * np * n;
    }
    MPI_File_close(&fh);
    long long all = 0;
    MPI_Reduce(&errors, &all, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) printf("], \"verified\": %s, \"errors\": %lld}\n", all ? "false" : "true", all);
    free(buf);
    free(chunk);
    free(calls);
    MPI_Finalize();
    return all ? 1 : 0;
}
