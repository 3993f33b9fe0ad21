! A Fortran MPI-IO writer (BT-IO and FLASH-IO are Fortran codes): proves the C wrappers see Fortran calls.
! Usage: fortran_write FILE ; each rank writes 1024 integers at its own offset, collectively.
program fortran_write
  use mpi
  implicit none
  integer :: ierr, rank, fh, i
  integer(kind=MPI_OFFSET_KIND) :: offset
  integer :: buf(1024)
  character(len=256) :: path

  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call get_command_argument(1, path)
  do i = 1, 1024
    buf(i) = rank * 1024 + i
  end do
  call MPI_File_open(MPI_COMM_WORLD, trim(path), MPI_MODE_CREATE + MPI_MODE_WRONLY, MPI_INFO_NULL, fh, ierr)
  offset = int(rank, MPI_OFFSET_KIND) * 4096
  call MPI_File_write_at_all(fh, offset, buf, 1024, MPI_INTEGER, MPI_STATUS_IGNORE, ierr)
  call MPI_File_close(fh, ierr)
  call MPI_Finalize(ierr)
end program fortran_write
