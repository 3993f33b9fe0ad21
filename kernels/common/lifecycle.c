/* File life cycle: agreed removal, and write-then-read of one shared file. */
#include "lifecycle.h"

int iotame_file_remove_agreed(iotame_run_t *run, iotame_api_t api, const char *path, bool mine)
{
    MPI_Barrier(run->comm); /* nobody still has it open */
    int rc = mine ? iotame_file_remove(api, path) : 0;
    return iotame_all_ok(run, rc == 0) ? IOTAME_EXIT_OK : IOTAME_EXIT_IO;
}

static int remove_shared(iotame_run_t *run, const char *path)
{
    return iotame_file_remove_agreed(run, IOTAME_API_MPIIO, path, run->rank == 0);
}

int iotame_write_then_read(iotame_run_t *run, const iotame_standard_options_t *std, uint64_t my_bytes,
                           iotame_pass_fn *pass, void *ctx)
{
    int rc = IOTAME_EXIT_OK;
    if (!std->skip_write) {
        rc = remove_shared(run, std->file);
        if (rc == IOTAME_EXIT_OK) {
            iotame_phase_begin(run, "write");
            rc = pass(run, ctx, true);
            if (rc == IOTAME_EXIT_OK) iotame_phase_end(run, my_bytes);
        }
    }
    if (rc == IOTAME_EXIT_OK) {
        iotame_phase_begin(run, "read");
        rc = pass(run, ctx, false);
        if (rc == IOTAME_EXIT_OK) iotame_phase_end(run, my_bytes);
    }
    /* RATIONALE: remove only what this run wrote; a --skip-write run leaves its input in place. */
    if (rc == IOTAME_EXIT_OK && !std->keep && !std->skip_write) rc = remove_shared(run, std->file);
    return rc;
}
