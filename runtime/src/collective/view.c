/* The file view of a routed handle as the router keeps it (MPI_File_set_view): displacement, etype and filetype
 * (duplicated, so that the application may free its own), flattened on first use into the sorted runs that map the
 * data stream to file offsets (flatten/). */
#include <errno.h>

#include "strategy.h"

static int is_named(MPI_Datatype t)
{
    int ni, na, nd, combiner;
    return PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) == MPI_SUCCESS && combiner == MPI_COMBINER_NAMED;
}

static void release_type(MPI_Datatype *t)
{
    if (*t != MPI_DATATYPE_NULL && !is_named(*t)) PMPI_Type_free(t);
    *t = MPI_DATATYPE_NULL;
}

static MPI_Datatype keep_type(MPI_Datatype t)
{
    if (is_named(t)) return t;
    MPI_Datatype copy = MPI_DATATYPE_NULL;
    return PMPI_Type_dup(t, &copy) == MPI_SUCCESS ? copy : MPI_DATATYPE_NULL;
}

void iotame__coll_view_release(iotame_coll_view_t *v)
{
    release_type(&v->etype);
    release_type(&v->filetype);
    iotame_flatten_free(v->flat);
    v->flat = NULL;
}

void iotame__coll_view_set(iotame_coll_view_t *v, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype filetype,
                           int native)
{
    iotame__coll_view_release(v);
    v->generation++;
    v->flat_rc = 1;
    v->disp = disp;
    v->etype = keep_type(etype);
    v->filetype = keep_type(filetype);
    MPI_Count size = 0;
    PMPI_Type_size_x(etype, &size);
    v->etype_size = (int64_t)size;
    v->native_rep = native;
}

const char *iotame__coll_view_map(iotame_coll_view_t *v, int64_t start, int64_t nbytes, iotame_extents_t *ext)
{
    if (v->flat_rc == 1) v->flat_rc = v->filetype == MPI_DATATYPE_NULL ? -ENOMEM : iotame_flatten_type(v->filetype, &v->flat);
    if (v->flat_rc != 0) return "filetype cannot be flattened";
    iotame_view_t view = {.disp = v->disp, .etype_size = v->etype_size, .filetype = v->flat};
    if (!iotame_flatten_view_ok(&view)) return "file view not monotonic";
    if (iotame_flatten_view_map(&view, start, nbytes, ext) != 0) return "file view cannot be mapped";
    return NULL;
}
