/* Shared files through MPI-IO file views: agreed open/remove, checked view transfers, memory-hole check. */
#include <stdio.h>
#include <string.h>

#include "lifecycle.h"
#include "view.h"

int iotame_view_open(iotame_run_t *run, iotame_file_t *f, const char *path, bool write)
{
    int mode = write ? IOTAME_FILE_WRITE | IOTAME_FILE_CREATE : IOTAME_FILE_READ;
    int rc = iotame_file_open(f, IOTAME_API_MPIIO, run->comm, path, mode, MPI_INFO_NULL);
    if (iotame_all_ok(run, rc == 0)) return IOTAME_EXIT_OK;
    if (rc == 0) iotame_file_close(f);
    return IOTAME_EXIT_IO;
}

int iotame_view_remove(iotame_run_t *run, const char *path)
{
    return iotame_file_remove_agreed(run, IOTAME_API_MPIIO, path, run->rank == 0);
}

void iotame_view_set(iotame_file_t *f, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype)
{
    iotame_mpi_check(MPI_File_set_view(f->fh, disp, etype, filetype, "native", MPI_INFO_NULL), "MPI_File_set_view",
                     f->path);
}

static void transfer(iotame_file_t *f, MPI_Offset offset, void *buf, int count, MPI_Datatype memtype, bool write,
                     bool collective)
{
    MPI_Status st;
    const char *what;
    int err;
    if (write) {
        what = collective ? "MPI_File_write_at_all" : "MPI_File_write_at";
        err = collective ? MPI_File_write_at_all(f->fh, offset, buf, count, memtype, &st)
                         : MPI_File_write_at(f->fh, offset, buf, count, memtype, &st);
    } else {
        what = collective ? "MPI_File_read_at_all" : "MPI_File_read_at";
        err = collective ? MPI_File_read_at_all(f->fh, offset, buf, count, memtype, &st)
                         : MPI_File_read_at(f->fh, offset, buf, count, memtype, &st);
    }
    iotame_mpi_check(err, what, f->path);
    /* RATIONALE: MPI_Get_count with the call's own datatype is the standard way; it gives MPI_UNDEFINED for a
     * partial item. */
    int done = 0;
    MPI_Count size = 0;
    MPI_Get_count(&st, memtype, &done);
    if (done != count) {
        MPI_Type_size_x(memtype, &size);
        char got[32] = "part";
        if (done != MPI_UNDEFINED) snprintf(got, sizeof got, "%d", done);
        iotame_fatal("%s %s: %s %s of %d items of %lld bytes at view offset %lld%s", what, f->path,
                     write ? "wrote" : "read", got, count, (long long)size, (long long)offset,
                     write ? "" : " (file shorter than expected?)");
    }
}

void iotame_view_write(iotame_file_t *f, MPI_Offset offset, const void *buf, int count, MPI_Datatype memtype,
                       bool collective)
{
    transfer(f, offset, (void *)buf, count, memtype, true, collective);
}

void iotame_view_read(iotame_file_t *f, MPI_Offset offset, void *buf, int count, MPI_Datatype memtype,
                      bool collective)
{
    transfer(f, offset, buf, count, memtype, false, collective);
}

void iotame_view_commit(MPI_Datatype *type)
{
    iotame_mpi_check(MPI_Type_commit(type), "MPI_Type_commit", "");
}

void iotame_view_clear(iotame_run_t *run, void *buf, size_t len, int byte)
{
    double t = MPI_Wtime();
    memset(buf, byte, len);
    iotame_phase_exclude(run, MPI_Wtime() - t);
}

void iotame_view_holes_check(iotame_run_t *run, const void *buf, size_t len, const char *path)
{
    double t = MPI_Wtime();
    const unsigned char *p = buf;
    for (size_t i = 0; i < len; i++) {
        if (p[i] != IOTAME_VIEW_HOLE)
            iotame_fatal("reading %s wrote byte %zu of the memory buffer, outside the memory datatype "
                         "(0x%02x instead of 0x%02x)", path, i, p[i], IOTAME_VIEW_HOLE);
    }
    iotame_phase_exclude(run, MPI_Wtime() - t);
}
