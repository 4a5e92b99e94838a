/* One checked MPI_Allreduce: the smallest program test_params.sh runs
 * under MPICH with libtacos-pmpi preloaded, for the parameters it reads. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int n, sum = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("mpi_hello: %d failure(s)\n", sum != n);
    MPI_Finalize();
    return sum != n;
}
